"""Where perspectrum keeps its indexes and models: one answer for the CLI, the Python API,
evaluation and training alike."""

from __future__ import annotations

from pathlib import Path

DEFAULT_INDEX_DIR = Path("indexes")
DEFAULT_MODELS_DIR = Path("models")
#: Environment variables that move the two folders (the CLI's and the API's defaults alike).
INDEX_ENV = "PERSPECTRUM_INDEXES"
MODELS_ENV = "PERSPECTRUM_MODELS"


def index_dir(given: str | Path | None = None) -> Path:
    """Where indexes live: ``given``, else ``$PERSPECTRUM_INDEXES``, else ``./indexes``.

    The CLI and :meth:`perspectrum.Pipeline.load` both resolve through here, so a
    script and a command in the same shell open the same indexes.
    """
    import os

    return Path(given) if given is not None else Path(os.environ.get(INDEX_ENV, DEFAULT_INDEX_DIR))


def models_dir(given: str | Path | None = None) -> Path:
    """Where models live: ``given``, else ``$PERSPECTRUM_MODELS``, else ``./models``.

    Every reader and writer of the models folder resolves it here (the CLI, the pipeline,
    the scorers, evaluation, training), so this is where a folder that an interrupted
    ``perspectrum models install`` left moved aside is put back: they find the old models,
    never none, and a writer cannot start a fresh folder over them.
    """
    import os

    from perspectrum._io import restore

    folder = Path(given) if given is not None else Path(os.environ.get(MODELS_ENV, DEFAULT_MODELS_DIR))
    restore(folder)
    return folder
