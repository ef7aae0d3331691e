"""TorchScript copies of the loaded transformers, cached so later processes skip transformers.

Why: in a `discover` process, importing ``transformers`` and building five models from
their folders costs ~2.5 s of a ~5.5 s cold start, while ``torch`` alone costs ~1 s. A
traced copy of each model, in the form that actually runs (int8 where the model is
quantised), loads with ``torch.jit.load`` in ~0.1 s and, on this torch, computes the
same numbers: every copy is checked against the model it came from before it is kept,
and the check is repeated on the copy read back from disk. Tokenisation goes through
the ``tokenizers`` library directly with the settings transformers would use.

The first load of a model pays for transformers once and writes its copy to the cache
(``$PERSPECTRUM_CACHE``, default ``~/.cache/perspectrum``). A copy is found again by a key
made of the model folder, the SHA-256 of its files as recorded when they were written
(their names, sizes and modification times for a folder without such a record), the
torch version and the int8 flag: retraining a model (new files) or upgrading torch makes
a new copy, and the superseded one for the same folder is deleted. Each copy's own
SHA-256 is kept beside it (``<copy>.json``) and checked, while torch reads the copy, before
it is used: a damaged copy is deleted and made again from the model, which compares the
new copy's scores with its own once more. Anything that fails (tracing, a mismatch, an
unreadable copy) falls back to the transformers model.

TorchScript is deprecated in favour of ``torch.export``, but reading an exported program
imports another ~1 s of torch (sympy, dynamo), half of what this saves. torch is pinned,
and a torch that can no longer read or trace a copy only costs the fallback's speed.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from perspectrum import integrity
from perspectrum._io import atomic_write, write_json
from perspectrum._progress import say

#: Bumped when what a cached copy holds changes, so old copies are not reused.
FORMAT = 1
#: Largest difference in output allowed between a copy and its model (float32 noise).
TOLERANCE = 1e-4
#: Sentences the copies are traced and checked on: two batches of different sizes and
#: lengths, both padded, so a copy that baked in a shape or a mask would fail.
_TRACE_TEXTS = [("Animals should have lawful rights", "Animals feel pain just as we do."),
                ("Zoos should be banned", "Breeding programmes in zoos save endangered species from dying out."),
                ("Tax", "Money")]
_CHECK_TEXTS = [("Voting should be compulsory", "When everyone must vote, the result reflects the whole "
                 "population rather than those with the time and the motivation to turn up."),
                ("Homework should be abolished", "Children lose play time."),
                ("Social media does more harm than good", "It spreads misinformation quickly [SEP] and widely."),
                ("a", "b"), ("Nuclear power", "Waste stays dangerous for thousands of years.")]

#: Whether this process has said that it is making copies (said once, not per model).
_announced = False


def cache_dir() -> Path:
    """Where traced copies are kept: ``$PERSPECTRUM_CACHE`` or ``~/.cache/perspectrum``."""
    return Path(os.environ.get("PERSPECTRUM_CACHE") or Path.home() / ".cache" / "perspectrum") / "traced"


def token_types(config: dict[str, Any]) -> bool:
    """Whether a model (its ``config.json``) reads segment ids: BERT does, MPNet does not."""
    return int(config.get("type_vocab_size", 0)) > 1


class Tokens:
    """A ``tokenizers`` tokenizer set up as transformers' fast tokenizer runs for
    ``tokenizer(a, b, truncation=True, max_length=n, padding=True)``.

    Importing transformers for its tokenizer would cost most of what the copies save.
    """

    def __init__(self, tokenizer: Any, pad_token: str, max_length: int, token_types: bool) -> None:
        pad_id = tokenizer.token_to_id(pad_token)
        if pad_id is None:
            raise ValueError(f"the padding token {pad_token!r} is not in the vocabulary")
        tokenizer.enable_truncation(max_length, strategy="longest_first")
        tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token)
        self.tokenizer = tokenizer
        self.token_types = token_types

    @classmethod
    def from_folder(cls, folder: Path, max_length: int, token_types: bool) -> Tokens:
        """From a model folder's ``tokenizer.json`` and ``tokenizer_config.json``."""
        from tokenizers import Tokenizer

        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        pad_token = config.get("pad_token")
        pad_token = pad_token.get("content") if isinstance(pad_token, dict) else pad_token
        return cls(Tokenizer.from_file(str(folder / "tokenizer.json")), str(pad_token), max_length, token_types)

    @classmethod
    def of(cls, tokenizer: Any, max_length: int, token_types: bool) -> Tokens:
        """From a loaded transformers fast tokenizer (its rules copied, it is not changed)."""
        from tokenizers import Tokenizer

        return cls(Tokenizer.from_str(tokenizer.backend_tokenizer.to_str()), tokenizer.pad_token, max_length,
                   token_types)

    def __call__(self, first: Sequence[str], second: Sequence[str] | None = None) -> dict[str, Any]:
        """``input_ids``, ``attention_mask`` (and ``token_type_ids``) as int64 tensors."""
        import torch

        inputs = list(zip(first, second)) if second is not None else list(first)
        encodings = self.tokenizer.encode_batch(inputs)
        out = {"input_ids": torch.tensor([e.ids for e in encodings], dtype=torch.long),
               "attention_mask": torch.tensor([e.attention_mask for e in encodings], dtype=torch.long)}
        if self.token_types:
            out["token_type_ids"] = torch.tensor([e.type_ids for e in encodings], dtype=torch.long)
        return out


def _key(folder: Path, quantize: bool, files: Mapping[str, str] | None) -> Path:
    """Where the copy of ``folder``'s model lives; see the module docstring for the key.

    ``folder`` is taken as named, not resolved: a model folder is a link to its current
    version (:func:`perspectrum._io.atomic_folder`), and its copies share one prefix so
    a new version's copy replaces the old one's.
    """
    import torch  # imported anyway to read or make the copy

    content = hashlib.sha256(f"{FORMAT}:{torch.__version__}:{quantize}".encode())
    if files is not None:
        content.update(json.dumps(sorted(files.items())).encode())
    else:
        for file in sorted(p for p in folder.resolve().iterdir() if p.is_file()):
            stat = file.stat()
            content.update(f"{file.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    folder_part = hashlib.sha256(str(folder.absolute()).encode()).hexdigest()[:12]
    return cache_dir() / f"{folder_part}-{content.hexdigest()[:12]}.pt"


def _sum_file(path: Path) -> Path:
    """Where the SHA-256 of the copy at ``path`` is kept."""
    return path.with_suffix(".json")


def _quiet_jit_load(path: Path) -> Any:
    """``torch.jit.load``, quietly: no deprecation warning for TorchScript (torch is
    pinned, and a failing load falls back to transformers), and torch's once-per-process
    warning about int8 tensors spent.

    Reading an int8 copy triggers that deprecation warning from C++, where Python's
    filters cannot reach it; raised once from Python first, it is filtered there and
    not printed again.
    """
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.quantize_per_tensor(torch.zeros(1), 1.0, 0, torch.qint8)
        return torch.jit.load(str(path)).eval()


def load(folder: Path, quantize: bool, files: Mapping[str, str] | None) -> Any | None:
    """The cached copy of the model in ``folder`` (whose files have the recorded sums
    ``files``, if known), or ``None`` if there is none, it has no recorded sum, or it
    cannot be read or does not match its sum (it is then deleted, to be made again).

    The copy is hashed on a second thread while torch reads it, so checking a 440 MB
    copy costs little more than reading it.
    """
    path = _key(folder, quantize, files)
    try:
        expected = json.loads(_sum_file(path).read_text(encoding="utf-8"))["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not path.is_file():
        return None
    try:
        digest = integrity.Pending(path)
        copy = _quiet_jit_load(path)
        sound = digest.result() == expected
    except Exception:  # noqa: BLE001 - a bad cache entry must never stop scoring
        copy, sound = None, False
    if copy is None or not sound:
        say(f"the traced copy {path} of {folder} is damaged: making it again")
        path.unlink(missing_ok=True)
        _sum_file(path).unlink(missing_ok=True)
        return None
    return copy


def forward(copy: Any, model: Any, output: str, device: str = "cpu") -> Callable[[dict[str, Any]], Any]:
    """The forward pass to run on tokenised inputs: the copy where there is one (it takes
    the tensors by position), else the model's ``output`` field (by keyword), the inputs
    moved to ``device`` first where that is not the CPU."""
    if copy is not None:
        return lambda encoded: copy(*encoded.values())
    if device != "cpu":
        return lambda encoded: getattr(model(**{k: v.to(device) for k, v in encoded.items()}), output)
    return lambda encoded: getattr(model(**encoded), output)


def trace(folder: Path, quantize: bool, files: Mapping[str, str] | None, model: Any, tokens: Tokens, output: str,
          pairs: bool) -> Any | None:
    """Trace ``model`` (as it runs: int8 if quantised) into a copy, check it against the
    model, cache it and return it as read back from disk; ``None`` if any step fails or
    the copy disagrees with the model by more than :data:`TOLERANCE`.

    ``output`` names the field of the model's output to keep (``logits``,
    ``last_hidden_state``); ``pairs`` says whether it reads text pairs or single texts.
    """
    import torch

    class Positional(torch.nn.Module):
        """The model called with positional tensors, returning one output field: the
        form ``torch.jit.trace`` records."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return getattr(self.model(**dict(zip(names, inputs))), output)

    names = ["input_ids", "attention_mask", *(["token_type_ids"] if tokens.token_types else [])]

    def inputs(texts: list[tuple[str, str]]) -> tuple[Any, ...]:
        encoded = tokens([a for a, _ in texts], [b for _, b in texts]) if pairs else tokens(
            [f"{a} {b}" for a, b in texts])
        return tuple(encoded[name] for name in names)

    path = _key(folder, quantize, files)
    global _announced
    if not _announced:
        say(f"making traced copies of the models in {cache_dir()} for fast starts (once per model, seconds each)")
        _announced = True
    wrapper = Positional().eval()
    try:
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = torch.jit.trace(wrapper, inputs(_TRACE_TEXTS), check_trace=False)
            atomic_write(path, lambda tmp: torch.jit.save(module, str(tmp)))
            copy = _quiet_jit_load(path)
            check = inputs(_CHECK_TEXTS)
            if float((copy(*check) - wrapper(*check)).abs().max()) > TOLERANCE:
                raise ValueError("the traced copy disagrees with the model")
            write_json(_sum_file(path), {"sha256": integrity.sha256_file(path), "model": str(folder.absolute())})
    except Exception:  # noqa: BLE001 - the transformers model still works
        path.unlink(missing_ok=True)
        return None
    for old in path.parent.glob(f"{path.name.split('-')[0]}-*"):
        if old.stem != path.stem:
            old.unlink(missing_ok=True)
    return copy
