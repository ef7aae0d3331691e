"""What every command of the ``perspectrum`` CLI shares, each defined once: the Typer app and
its sub-apps, the console, the error and output helpers, the option aliases and choices
used by more than one command, and the helpers that open stores, pools and pipelines.

A command's module registers it on :data:`app` (or a sub-app): one function, as spaCy's
``cli/`` has them, whose annotated parameters are the command's options (Typer reads
them) and whose body does the work, so Python and the tests call the very function the
command line runs. :mod:`perspectrum.cli.app` imports every such module. Nothing here
imports a model, an index engine or a web framework at import time: ``perspectrum --help``
stays fast.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from typer.core import TyperGroup

from perspectrum import folders
from perspectrum.folders import DEFAULT_INDEX_DIR, DEFAULT_MODELS_DIR, INDEX_ENV, MODELS_ENV
from perspectrum._progress import printable
from perspectrum.errors import PerspectrumError

#: The order ``perspectrum --help`` lists the commands in; a command not named here is
#: listed after these, in the order its module registered it.
HELP_ORDER = ("setup", "search", "discover", "serve", "train", "evaluate", "tune", "mine", "match", "score",
              "discover-batch", "data", "index", "models", "pool")


def error_exit(exc: Exception, code: int) -> typer.Exit:
    """Print ``exc`` as the one ``error:`` line on stderr (escapes and newlines in a named
    file or value made visible, so it stays one line) and return the exit to raise."""
    typer.echo(f"error: {printable(str(exc), one_line=True)}", err=True)
    return typer.Exit(code)


class _Group(TyperGroup):
    """Turns user-facing errors into one line and exit code 1, never a traceback, and lists
    the commands in :data:`HELP_ORDER` whichever module registered them first."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except PerspectrumError as exc:
            raise error_exit(exc, 1) from None

    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)
        return sorted(names, key=lambda name: HELP_ORDER.index(name) if name in HELP_ORDER else len(HELP_ORDER))


app = typer.Typer(
    cls=_Group,
    help="Substantiated perspective discovery over PERSPECTRUM.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
data_app = typer.Typer(help="Check or download the PERSPECTRUM v1.0 files.", no_args_is_help=True)
index_app = typer.Typer(help="Build the BM25 and dense indexes.", no_args_is_help=True)
models_app = typer.Typer(help="List, export and install trained models (train once, share everywhere).",
                         no_args_is_help=True)
pool_app = typer.Typer(help="Add documents to your own pool file, or remove them, updating its indexes in place.",
                       no_args_is_help=True)
app.add_typer(data_app, name="data")
app.add_typer(index_app, name="index")
app.add_typer(models_app, name="models")
app.add_typer(pool_app, name="pool")
console = Console()


def say(message: str) -> None:
    """One line of ours that names things from outside (paths, bundle fields): shown
    literally, not parsed as markup, escapes made visible."""
    console.print(printable(message), markup=False, emoji=False)


def echo_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout, every non-ASCII and control character escaped."""
    typer.echo(json.dumps(value, indent=2, ensure_ascii=True))


def save_json(path: Path | None, value: Any) -> None:
    """Write ``value`` to ``path`` (a command's ``--json``) and say so; nothing without a path."""
    if path:
        from perspectrum._io import write_json

        say(f"wrote {write_json(path, value)}")


def metric(values: Any) -> str:
    """A model's headline metric for a table: F1 (and accuracy), or '-'."""
    if not isinstance(values, dict) or "f1" not in values:
        return "-"
    return f"F1 {values['f1']:.1f}" + (f", acc {values['accuracy']:.1f}" if "accuracy" in values else "")


# ----------------------------------------------------------------- shared options
DataDir = Annotated[
    Optional[Path],
    typer.Option("--data-dir", help="Folder with the five PERSPECTRUM v1.0 files (default: $PERSPECTRUM_DATA)."),
]
NoVerify = Annotated[
    bool, typer.Option("--no-verify", help="Skip the SHA-256 check (modified data or test fixtures only).")
]
IndexDir = Annotated[
    Optional[Path],
    typer.Option("--index-dir", help=f"Where indexes live (default: ${INDEX_ENV} or ./{DEFAULT_INDEX_DIR})."),
]


class BackendChoice(str, Enum):
    embedded = "embedded"
    lucene = "lucene"
    milvus = "milvus"


BackendOpt = Annotated[BackendChoice, typer.Option(
    "--backend", help="Search engines: embedded (bm25s + faiss, in this process), lucene (BM25 in Lucene via "
    "pyserini) or milvus (dense search in Milvus; milvus-lite unless --milvus-uri).")]
MilvusUri = Annotated[Optional[str], typer.Option(
    "--milvus-uri", help="The milvus backend's server, e.g. http://host:19530 (default: $PERSPECTRUM_MILVUS_URI "
    "or milvus-lite's <index-dir>/milvus.db).")]

ModelsDir = Annotated[
    Optional[Path],
    typer.Option("--models-dir", help=f"Where trained models live (default: ${MODELS_ENV} or ./{DEFAULT_MODELS_DIR})."),
]


def _use_device(name: str | None) -> str | None:
    """``--device``'s callback: checked and made the process's device before the command runs
    (a command called from Python leaves the device as it is:
    :func:`perspectrum.encoders.device.use` sets it)."""
    if name is not None:
        from perspectrum.encoders.device import use

        use(name)
    return name


DeviceOpt = Annotated[Optional[str], typer.Option(
    "--device", callback=_use_device, help="Where the models run: cpu, cuda or cuda:N (default: "
    "$PERSPECTRUM_DEVICE, else cuda when torch sees a GPU, else cpu).")]

JsonOut = Annotated[Optional[Path], typer.Option("--json", help="Write the full result as JSON here.")]

OwnPerspectives = Annotated[Optional[Path], typer.Option(
    "--perspectives", help="Your own perspective sentences: JSONL with \"id\" and \"text\" (with --evidence).")]
OwnEvidence = Annotated[Optional[Path], typer.Option(
    "--evidence", help="Your own evidence paragraphs: JSONL with \"id\" and \"text\" (with --perspectives).")]


class PoolChoice(str, Enum):
    perspectives = "perspectives"
    evidence = "evidence"
    sentences = "sentences"
    all = "all"


class Engine(str, Enum):
    """Where `discover-batch` and `map` run their model work."""

    local = "local"
    ray = "ray"


RayAddress = Annotated[Optional[str], typer.Option(
    "--address", help="Join this Ray cluster (auto: the one `ray start` runs here) instead of starting one; "
                      "its nodes must see the same folders.")]



# ----------------------------------------------------------------- shared helpers
def open_store(index_dir: Path | None, backend: str = "embedded", milvus_uri: str | None = None) -> Any:
    from perspectrum.index.store import IndexStore

    return IndexStore(folders.index_dir(index_dir), backend=backend, milvus_uri=milvus_uri)


def models_folder(models_dir: Path | None) -> Path:
    return folders.models_dir(models_dir)


def dataset_pool(dataset: Any, store: Any, name: str) -> Any:
    """A dataset pool; the sentence split comes from the store's cache (~35 s to redo)."""
    from perspectrum.data import Pool

    if name == "sentences":
        return store.sentences(Pool.from_dataset(dataset, "evidence"))
    return Pool.from_dataset(dataset, name)


def own_pools(perspectives: Path | None, evidence: Path | None) -> tuple[Any, Any] | None:
    """Both own pools, read and checked, or ``None`` when neither is given."""
    from perspectrum.data import Pool

    if perspectives is None and evidence is None:
        return None
    if perspectives is None or evidence is None:
        raise PerspectrumError("give both --perspectives and --evidence (JSONL files with \"id\" and \"text\")")
    return Pool.from_jsonl(perspectives, "perspectives"), Pool.from_jsonl(evidence, "evidence")


def load_pipeline(data_dir: Path | None, index_dir: Path | None, models_dir: Path | None, verify: bool = True,
              perspectives: Path | None = None, evidence: Path | None = None, backend: str = "embedded",
              milvus_uri: str | None = None, prepare_first: bool = False) -> Any:
    """The pipeline over PERSPECTRUM's pools (checksums verified unless ``verify=False``), or
    over both own pools when given. An unprepared machine is a one-line error naming
    `perspectrum setup`, or, with ``prepare_first`` (the commands that answer claims), is
    prepared first, saying so in one line on stderr (stdout may be JSON)."""
    from perspectrum.pipeline.pipeline import NotPrepared, Pipeline

    own = own_pools(perspectives, evidence)
    root = open_store(index_dir).root
    engines = {"backend": backend, "milvus_uri": milvus_uri}

    def load() -> Any:
        if own is None:
            return Pipeline.load(data_dir, root, models_dir, verify=verify, show_progress=True, **engines)
        return Pipeline.from_pools(*own, index_dir=root, models_dir=models_dir, data_dir=data_dir,
                                   show_progress=True, **engines)

    try:
        return load()
    except NotPrepared as exc:
        if not prepare_first:
            raise
        from perspectrum._progress import say as on_stderr
        from perspectrum.train.prepare import prepare

        on_stderr(f"{exc.problem}: running `perspectrum setup` first")
        prepare(data_dir, root, models_dir, verify=verify, show_progress=True, **engines)
        return load()


def checked_claim(claim: str) -> str:
    """``claim`` checked and stripped (:func:`~perspectrum.pipeline.pipeline.check_claim`);
    a bad one exits 2, as a usage error does."""
    from perspectrum.pipeline.pipeline import ClaimError, check_claim

    try:
        return check_claim(claim)
    except ClaimError as exc:
        raise error_exit(exc, 2) from None
