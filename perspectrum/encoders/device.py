"""Where the models run: a CUDA GPU when torch sees one, else the CPU.

The choice, first that applies: the ``--device`` option (:func:`use`), the
``PERSPECTRUM_DEVICE`` environment variable, ``cuda`` when
``torch.cuda.is_available()``, else ``cpu``. Asking for a GPU torch cannot see (the CPU
wheel, no driver, a device number past the last) is a one-line error, never a silent
fall back to the CPU.

Each device runs in the form that suits it (:class:`Device`): on the CPU, float32
encoders and int8 cross-encoders from their cached TorchScript copies, 64 inputs a batch;
on a GPU, the transformers models themselves in half precision (bfloat16 for training
where the GPU has it), 256 inputs a batch. Training keeps each recipe's batch size, so a
model trained on either has learnt from the same steps.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from perspectrum.errors import PerspectrumError

#: The environment variable that picks the device when ``--device`` is not given.
ENV = "PERSPECTRUM_DEVICE"
_NAME = re.compile(r"cpu|cuda(?::\d+)?")


@dataclass(frozen=True)
class Device:
    """A device and how the models run on it.

    Attributes:
        name: ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (what ``torch.device`` takes).
        batch_size: texts or pairs encoded or scored per batch.
        quantize: cross-encoders run their linear layers in int8 (CPU only).
        half: inference in float16 (GPU only).
    """

    name: str

    @property
    def gpu(self) -> bool:
        return self.name != "cpu"

    @property
    def batch_size(self) -> int:
        return 256 if self.gpu else 64

    @property
    def quantize(self) -> bool:
        return not self.gpu

    @property
    def half(self) -> bool:
        return self.gpu


CPU = Device("cpu")


def check_name(name: str) -> str:
    """``name`` lower-cased and stripped if it names a device, else a one-line error."""
    cleaned = name.strip().lower()
    if not _NAME.fullmatch(cleaned):
        raise PerspectrumError(f"unknown device {name!r}: use cpu, cuda or cuda:N")
    return cleaned


def use(name: str) -> None:
    """Make ``name`` the device of this process and of those it starts (``--device``: it sets
    ``$PERSPECTRUM_DEVICE``). Checked at once, so a bad option fails before any work."""
    os.environ[ENV] = choose(name).name


def _cuda_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def choose(requested: str | None = None, cuda_count: Callable[[], int] | None = None) -> Device:
    """The device to run on: ``requested``, else ``$PERSPECTRUM_DEVICE`` (which :func:`use`
    sets), else ``cuda`` when ``cuda_count()`` (the GPUs torch sees; by default asked of torch
    when called) is at least one, else the CPU."""
    cuda_count = cuda_count or _cuda_count
    name = requested or os.environ.get(ENV, "").strip()
    if not name:
        return Device("cuda") if cuda_count() > 0 else CPU
    name = check_name(name)
    if name == "cpu":
        return CPU
    count = cuda_count()
    number = int(name.partition(":")[2] or 0)
    if number >= count:
        seen = "torch sees no CUDA GPU here" if count == 0 else f"torch sees {count} CUDA GPU(s)"
        raise PerspectrumError(f"device {name!r} was asked for but {seen} (install a CUDA build of torch, "
                               f"or use --device cpu)")
    return Device(name)
