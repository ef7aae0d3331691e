"""The ``perspectrum`` command: thin wrappers that parse options and call the library.

Every :class:`~perspectrum.errors.PerspectrumError` raised underneath is printed as one
line on stderr with exit code 1; Typer's own usage errors exit with code 2. Whatever
comes from outside (claims, queries, pool texts and ids, paths, bundle fields) is printed
literally, never as rich markup, with control characters made visible
(:func:`perspectrum.cli.display.printable`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from perspectrum import config as folders
from perspectrum.config import DEFAULT_INDEX_DIR, DEFAULT_MODELS_DIR, INDEX_ENV, LIGHT_FOLDER, MODELS_ENV
from perspectrum._progress import literal, printable
from perspectrum.errors import PerspectrumError


def _error(exc: Exception, code: int) -> typer.Exit:
    """Print ``exc`` as the one ``error:`` line on stderr (escapes and newlines in a named
    file or value made visible, so it stays one line) and return the exit to raise."""
    typer.echo(f"error: {printable(str(exc), one_line=True)}", err=True)
    return typer.Exit(code)


class _Group(TyperGroup):
    """Turns user-facing errors into one line and exit code 1, never a traceback."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except PerspectrumError as exc:
            raise _error(exc, 1) from None


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
app.add_typer(data_app, name="data")
app.add_typer(index_app, name="index")
app.add_typer(models_app, name="models")
pool_app = typer.Typer(help="Add documents to your own pool file, or remove them, updating its indexes in place.",
                       no_args_is_help=True)
app.add_typer(pool_app, name="pool")
console = Console()


def _say(message: str) -> None:
    """One line of ours that names things from outside (paths, bundle fields): shown
    literally, not parsed as markup, escapes made visible."""
    console.print(printable(message), markup=False, emoji=False)


DataDir = Annotated[
    Optional[Path],
    typer.Option("--data-dir", help="Folder with the five PERSPECTRUM v1.0 files [default: $PERSPECTRUM_DATA]."),
]
NoVerify = Annotated[
    bool, typer.Option("--no-verify", help="Skip the SHA-256 check (modified data or test fixtures only).")
]
IndexDir = Annotated[
    Optional[Path],
    typer.Option("--index-dir", help=f"Where indexes live [default: ${INDEX_ENV} or ./{DEFAULT_INDEX_DIR}]."),
]

class BackendChoice(str, Enum):
    embedded = "embedded"
    lucene = "lucene"
    milvus = "milvus"


BackendOpt = Annotated[BackendChoice, typer.Option(
    "--backend", help="Search engines: embedded (bm25s + faiss, in this process), lucene (BM25 in Lucene via "
    "pyserini) or milvus (dense search in Milvus; milvus-lite unless --milvus-uri).")]
MilvusUri = Annotated[Optional[str], typer.Option(
    "--milvus-uri", help="The milvus backend's server, e.g. http://host:19530 [default: $PERSPECTRUM_MILVUS_URI "
    "or milvus-lite's <index-dir>/milvus.db].")]

ModelsDir = Annotated[
    Optional[Path],
    typer.Option("--models-dir", help=f"Where trained models live [default: ${MODELS_ENV} or ./{DEFAULT_MODELS_DIR}]."),
]

JsonOut = Annotated[Optional[Path], typer.Option("--json", help="Write the full result as JSON here.")]


class PoolChoice(str, Enum):
    perspectives = "perspectives"
    evidence = "evidence"
    sentences = "sentences"
    all = "all"


class KindChoice(str, Enum):
    bm25 = "bm25"
    dense = "dense"
    all = "all"


class Method(str, Enum):
    bm25 = "bm25"
    dense = "dense"
    hybrid = "hybrid"


class System(str, Enum):
    """The built-in systems of `evaluate --system`; any other is named package.module:Class."""

    ir = "ir"
    trained = "trained"
    light = "light"
    pipeline = "pipeline"


class TaskChoice(str, Enum):
    relevance = "relevance"
    stance = "stance"
    equivalence = "equivalence"
    evidence = "evidence"
    all = "all"


class Split(str, Enum):
    train = "train"
    dev = "dev"
    test = "test"


def _store(index_dir: Path | None, backend: BackendChoice = BackendChoice.embedded,
           milvus_uri: str | None = None) -> Any:
    from perspectrum.index.store import IndexStore

    return IndexStore(folders.index_dir(index_dir), backend=backend.value, milvus_uri=milvus_uri)


def _models_dir(models_dir: Path | None) -> Path:
    return folders.models_dir(models_dir)


def _pool(dataset: Any, store: Any, name: str) -> Any:
    """A dataset pool; the sentence split comes from the store's cache (~35 s to redo)."""
    from perspectrum.data import Pool

    if name == "sentences":
        return store.sentences(Pool.from_dataset(dataset, "evidence"))
    return Pool.from_dataset(dataset, name)


@data_app.command("check")
def data_check(
    data_dir: DataDir = None,
    no_verify: NoVerify = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Verify the checksums and report claims, splits, clusters and pool sizes."""
    from perspectrum.data import load_dataset

    counts = load_dataset(data_dir, verify=not no_verify).counts()
    if as_json:
        typer.echo(json.dumps(counts, indent=2))
        return
    table = Table(title="PERSPECTRUM v1.0" + (" (checksums not verified)" if no_verify else " (checksums OK)"))
    table.add_column("what")
    table.add_column("count", justify="right")
    for key, value in counts.items():
        table.add_row(key.replace("_", " "), f"{value:,}")
    console.print(table)


@data_app.command("download")
def data_download(
    to: Annotated[Path, typer.Option("--to", help="Folder to write the five files into.")],
    url: Annotated[Optional[str], typer.Option(help="Base URL [default: the CogComp/perspectrum repository].")] = None,
) -> None:
    """Fetch the five release files from GitHub and verify their checksums."""
    from perspectrum.data import DOWNLOAD_URL, download

    for path in download(to, url or DOWNLOAD_URL):
        console.print(Text("✓ ", style="green") + literal(path))
    _say(f"export PERSPECTRUM_DATA={to.resolve()}")


OwnPerspectives = Annotated[Optional[Path], typer.Option(
    "--perspectives", help="Your own perspective sentences: JSONL with \"id\" and \"text\" (with --evidence).")]
OwnEvidence = Annotated[Optional[Path], typer.Option(
    "--evidence", help="Your own evidence paragraphs: JSONL with \"id\" and \"text\" (with --perspectives).")]


def _own_pools(perspectives: Path | None, evidence: Path | None) -> tuple[Any, Any] | None:
    """Both own pools, read and checked, or ``None`` when neither is given."""
    from perspectrum.data import Pool

    if perspectives is None and evidence is None:
        return None
    if perspectives is None or evidence is None:
        raise PerspectrumError("give both --perspectives and --evidence (JSONL files with \"id\" and \"text\")")
    return Pool.from_jsonl(perspectives, "perspectives"), Pool.from_jsonl(evidence, "evidence")


def _pipeline(data_dir: Path | None, index_dir: Path | None, models_dir: Path | None, no_verify: bool,
              perspectives: Path | None, evidence: Path | None, backend: BackendChoice = BackendChoice.embedded,
              milvus_uri: str | None = None) -> Any:
    """The pipeline over PERSPECTRUM's pools, or over both own pools when given."""
    from perspectrum.pipeline.pipeline import Pipeline

    own = _own_pools(perspectives, evidence)
    root = _store(index_dir).root
    engines = {"backend": backend.value, "milvus_uri": milvus_uri}
    if own is None:
        return Pipeline.load(data_dir, root, models_dir, verify=not no_verify, show_progress=True, **engines)
    return Pipeline.from_pools(*own, index_dir=root, models_dir=models_dir, data_dir=data_dir, show_progress=True,
                               **engines)


@index_app.command("build")
def index_build(
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    pool: Annotated[PoolChoice, typer.Option(help="Which pool to index.")] = PoolChoice.all,
    kind: Annotated[KindChoice, typer.Option(help="Which kind of index.")] = KindChoice.all,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even when the stored index is sound.")] = False,
    no_verify: NoVerify = False,
    perspectives: OwnPerspectives = None,
    evidence: OwnEvidence = None,
    backend: BackendOpt = BackendChoice.embedded,
    milvus_uri: MilvusUri = None,
) -> None:
    """Build missing or stale indexes; reuse sound ones (a second run takes seconds).

    With --perspectives and --evidence, index your own pools instead (under
    <index-dir>/own/, where `perspectrum discover` with the same files finds them).
    """
    from perspectrum.data import POOL_NAMES, load_dataset
    from perspectrum.index.store import KINDS
    from perspectrum.pipeline.pipeline import own_store

    own = _own_pools(perspectives, evidence)
    store = _store(index_dir, backend, milvus_uri)
    if own is None:
        dataset = load_dataset(data_dir, verify=not no_verify)
        pools = {name: (lambda name=name: _pool(dataset, store, name)) for name in POOL_NAMES}
    else:
        store = own_store(store, *own, (perspectives, evidence))
        pools = {"perspectives": lambda: own[0], "evidence": lambda: own[1],
                 "sentences": lambda: store.sentences(own[1])}
    table = Table(title=literal(f"indexes in {store.root} ({store.backend} backend)", "table.title"))
    for column in ("pool", "kind", "documents", "status", "seconds"):
        table.add_column(column)
    for pool_name in POOL_NAMES if pool is PoolChoice.all else (pool.value,):
        docs = pools[pool_name]()
        for kind_name in KINDS if kind is KindChoice.all else (kind.value,):
            problem = None if force else store.check(docs, kind_name)
            if not force and problem is None:
                table.add_row(pool_name, kind_name, f"{len(docs):,}", "reused", "-")
                continue
            if problem:
                _say(f"{problem}: building it")
            _, seconds = store.build(docs, kind_name, show_progress=True)
            table.add_row(pool_name, kind_name, f"{len(docs):,}", "built", f"{seconds:.1f}")
    console.print(table)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to search for.")],
    pool: Annotated[PoolChoice, typer.Option(help="perspectives, evidence, or sentences (of evidence).")] = PoolChoice.perspectives,
    method: Annotated[Method, typer.Option(help="Retriever.")] = Method.hybrid,
    k: Annotated[int, typer.Option("-k", min=1, max=1000, help="How many hits.")] = 10,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    no_verify: NoVerify = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print hits as JSON.")] = False,
    backend: BackendOpt = BackendChoice.embedded,
    milvus_uri: MilvusUri = None,
) -> None:
    """Search one pool with BM25, dense or hybrid retrieval (indexes built if missing)."""
    from perspectrum.data import load_dataset
    from perspectrum.index.search import HybridSearcher, check_query

    query = check_query(query)
    if pool is PoolChoice.all:
        raise PerspectrumError("search one pool at a time: --pool perspectives, evidence or sentences")
    dataset = load_dataset(data_dir, verify=not no_verify)
    store = _store(index_dir, backend, milvus_uri)
    docs = _pool(dataset, store, pool.value)
    if method is Method.hybrid:
        searcher: Any = HybridSearcher(store.open(docs, "bm25", show_progress=True),
                                       store.open(docs, "dense", show_progress=True))
    else:
        searcher = store.open(docs, method.value, show_progress=True)
    hits = searcher.search(query, k)
    text = dict(zip(docs.ids, docs.texts))
    if as_json:
        hits_json = [{"id": h.doc_id, "score": h.score, "text": text[h.doc_id]} for h in hits]
        typer.echo(json.dumps(hits_json, indent=2, ensure_ascii=True))  # every control character escaped
        return
    table = Table(title=literal(f"{method.value} · {pool.value} · “{query}”", "table.title"))
    for column in ("#", "id", "score", "text"):
        table.add_column(column, overflow="fold")
    for rank, hit in enumerate(hits, 1):
        table.add_row(str(rank), literal(hit.doc_id), f"{hit.score:.3f}", literal(text[hit.doc_id]))
    console.print(table)


@app.command()
def discover(
    claim: Annotated[str, typer.Argument(help="The claim to find perspectives on (≤ 1,000 characters).")],
    top: Annotated[Optional[int], typer.Option("--top", min=1, help="Show at most N perspectives.")] = None,
    no_evidence: Annotated[bool, typer.Option("--no-evidence", help="Skip evidence retrieval (faster).")] = False,
    explain: Annotated[bool, typer.Option("--explain", help="Also show per-stage timings and scores.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON (schema in the README).")] = False,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    no_verify: NoVerify = False,
    perspectives: OwnPerspectives = None,
    evidence: OwnEvidence = None,
    backend: BackendOpt = BackendChoice.embedded,
    milvus_uri: MilvusUri = None,
) -> None:
    """Find the perspectives on a claim: clustered, stanced, and backed by evidence.

    The first run builds missing indexes; without all four fine-tuned models it trains
    light heads (a few minutes, once) and says so. A fine-tuned stance model (`train stance
    --fast`) answers in place of the light stance head.
    """
    from perspectrum.pipeline.pipeline import ClaimError, check_claim

    try:
        check_claim(claim)
    except ClaimError as exc:
        raise _error(exc, 2) from None
    pipe = _pipeline(data_dir, index_dir, models_dir, no_verify, perspectives, evidence, backend, milvus_uri)
    if explain:  # so the stage timings are the steady state, not the models' loading
        pipe.warm_up()
    result = pipe.discover(claim, top=top, evidence=not no_evidence, explain=explain)
    if as_json:
        typer.echo(result.to_json())
        return
    from perspectrum.cli.display import debate, explain as explained

    if result.notice:
        console.print(literal(result.notice), soft_wrap=True)  # one line, as promised
    else:
        console.print(debate(result))
    if explain:
        for part in explained(result):
            console.print(part)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on; anything but loopback needs --token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: any free one, printed).")] = 8000,
    workers: Annotated[int, typer.Option(min=1, max=64, help="Threads that run model work.")] = 2,
    queue: Annotated[int, typer.Option(min=0, max=10_000, help="Requests that may wait for a worker; "
                                       "past that, 503 with Retry-After.")] = 16,
    token: Annotated[Optional[str], typer.Option(envvar="PERSPECTRUM_TOKEN", show_envvar=True,
                                                 help="Bearer token every request but /health must carry.")] = None,
    cors_origin: Annotated[Optional[list[str]], typer.Option(
        "--cors-origin", help="An origin whose pages may call the API (repeatable; none by default).")] = None,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    no_verify: NoVerify = False,
    perspectives: OwnPerspectives = None,
    evidence: OwnEvidence = None,
) -> None:
    """Serve the web page and the HTTP API (/discover, /search, /health, /metrics, /docs).

    The port answers at once; /health says `ready` once every index and model is loaded.
    """
    import socket

    import uvicorn

    from perspectrum.serve.app import ServeSettings, check_bind, create_app, example_claims

    token = token or None  # an empty $PERSPECTRUM_TOKEN is no token
    check_bind(host, token)
    settings = ServeSettings(workers, queue, token, tuple(cors_origin or ()))
    pipe = _pipeline(data_dir, index_dir, models_dir, no_verify, perspectives, evidence)
    if perspectives is None:  # PERSPECTRUM's pools: offer its dev claims (read again, already verified)
        from perspectrum.data import load_dataset

        settings = replace(settings, examples=example_claims(load_dataset(data_dir, verify=False)))
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
        listener.listen(2048)  # connections wait in the backlog until uvicorn accepts them
    except (OSError, OverflowError) as exc:
        listener.close()
        raise PerspectrumError(f"cannot listen on {host}:{port}: {getattr(exc, 'strerror', None) or exc}") from None
    bound = listener.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    # plain and unwrapped: scripts and tests read the address (and a --port 0's port) from this line
    typer.echo(f"serving http://{shown}:{bound}/ (API docs at /docs); loading the models, /health says when ready")
    server = uvicorn.Server(uvicorn.Config(create_app(pipe, settings), log_level="warning", access_log=False))
    server.run(sockets=[listener])


@app.command()
def train(
    task: Annotated[TaskChoice, typer.Argument(help="Which cross-encoder to train (all: the four in turn).")],
    seed: Annotated[int, typer.Option(help="Seed for the head, example order and sampling.")] = 13,
    quick: Annotated[bool, typer.Option("--quick", help="Train on a tiny slice (tests, smoke runs).")] = False,
    tune_only: Annotated[bool, typer.Option("--tune-only", help="Keep the trained weights; re-choose the "
                                            "thresholds on dev (evidence, a ranker with no weights to keep, is fitted again).")] = False,
    fast: Annotated[bool, typer.Option("--fast", help="stance only: a shorter recipe (one epoch over 70 % of "
                                       "the pairs, lower layers frozen; ~7 min on 2 cores, dev accuracy 78.5 % "
                                       "against 87.8 %) that "
                                       "answers in place of the light stance head until `train all`.")] = False,
    json_path: JsonOut = None,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    no_verify: NoVerify = False,
) -> None:
    """Fine-tune the cross-encoders and fit the evidence ranker, tune their cut-offs on dev, save models/<task>/."""
    from perspectrum._io import write_json
    from perspectrum.data import data_checksum, load_dataset
    from perspectrum.models.settings import MODELS as TASKS
    from perspectrum.train.tasks import FAST, retune_task, train_task

    if fast and (task.value not in FAST or tune_only):
        raise PerspectrumError(f"--fast is a recipe for {', '.join(FAST)} only, and trains (no --tune-only)")
    dataset = load_dataset(data_dir, verify=not no_verify)
    checksum = data_checksum(data_dir)
    target = _models_dir(models_dir)
    table = Table(title=literal(f"trained models in {target}" + (" (quick)" if quick else ""), "table.title"))
    for column in ("task", "examples", "train s", "dev metric", "thresholds (dev)"):
        table.add_column(column, overflow="fold")
    summary = {}
    for name in TASKS if task is TaskChoice.all else (task.value,):
        if tune_only:
            meta = retune_task(name, dataset, _store(index_dir), target, show_progress=True)
        else:
            meta = train_task(name, dataset, _store(index_dir), target, seed=seed, is_quick=quick,
                              show_progress=True, data_checksum=checksum, config=FAST[name] if fast else None)
        summary[name] = meta
        dev = meta["dev"]
        shown = f"F1 {dev['f1']:.1f}" + (f", acc {dev['accuracy']:.1f}" if "accuracy" in dev else "")
        table.add_row(name, f"{meta['examples']['examples']:,}", f"{meta['train_seconds']:.0f}", shown,
                      json.dumps(meta["thresholds"]))
    console.print(table)
    if task is TaskChoice.all:
        from perspectrum.train.tune_pipeline import tune_pipeline
        from perspectrum.pipeline.pipeline import Pipeline

        pipe = Pipeline.load(data_dir, _store(index_dir).root, target, verify=not no_verify, show_progress=True)
        record = tune_pipeline(dataset, pipe, show_progress=True)
        summary["pipeline"] = record
        console.print(f"pipeline settings chosen on dev: {json.dumps(record['settings'])}")
    if json_path:
        _say(f"wrote {write_json(json_path, summary)}")


@app.command()
def evaluate(
    system: Annotated[str, typer.Option(
        metavar="NAME|package.module:Class",
        help="ir, trained, light, pipeline, or any system of the harness's protocol (perspectrum.eval.harness), "
             "imported from the current folder or the Python path.")] = System.ir.value,
    split: Annotated[Split, typer.Option(help="Split to score; thresholds are always tuned on dev.")] = Split.test,
    oracle: Annotated[Optional[list[str]], typer.Option(
        "--oracle", metavar="STAGE", help="Give STAGE gold input (relevance, stance, equivalence, evidence; repeat "
        "or comma-separate): each task is reported on the system's own input and on gold input.")] = None,
    harness: Annotated[bool, typer.Option("--harness", help="Score ir, trained or pipeline through the harness, "
                                          "as any system is, instead of their detailed reports.")] = False,
    json_path: JsonOut = None,
    plot: Annotated[Optional[Path], typer.Option(help="Write curves as PNG here (IR: recall@k; trained: PR).")] = None,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    no_verify: NoVerify = False,
    backend: BackendOpt = BackendChoice.embedded,
    milvus_uri: MilvusUri = None,
) -> None:
    """Score a system with T1–T5: ours beside the paper's numbers, or any system through the harness.

    ir, trained and pipeline give their detailed reports; a package.module:Class system,
    light, --oracle or --harness go through the harness, which scores every system alike.
    """
    from perspectrum._io import write_json
    from perspectrum.data import load_dataset
    from perspectrum.eval.harness import SpecError, evaluate_system, load_system, oracle_stages

    builtin = system in {s.value for s in System}
    if backend is not BackendChoice.embedded and (system not in (System.ir.value, System.pipeline.value)
                                                   or oracle or harness):
        raise _error(PerspectrumError("--backend applies to the ir and pipeline reports (not the harness)"), 2)
    try:
        gold_stages = oracle_stages(oracle or ())
        chosen = None if builtin else load_system(system)
    except SpecError as exc:
        raise _error(exc, 2) from None
    dataset = load_dataset(data_dir, verify=not no_verify)
    if chosen is not None or gold_stages or harness or system == System.light.value:
        from perspectrum.eval.report import harness_summary, harness_table
        from perspectrum.eval.systems import builtin_system

        if plot:
            raise PerspectrumError("--plot draws the ir and trained systems' curves; the harness has none")
        if chosen is None:
            chosen = builtin_system(system, data_dir, index_dir, models_dir, verify=not no_verify)
        result = evaluate_system(chosen, dataset, split.value, gold_stages, spec=system, show_progress=True)
        console.print(harness_table(result))
        for line in harness_summary(result):
            _say(line)
        draw: Any = None  # the harness has no curves
    elif system == System.pipeline.value:
        from perspectrum.eval.pipeline import evaluate_pipeline
        from perspectrum.eval.report import pipeline_summary, pipeline_table
        from perspectrum.pipeline.pipeline import Pipeline

        if plot:
            raise PerspectrumError("--plot draws the ir and trained systems' curves; the pipeline has none")
        pipe = Pipeline.load(data_dir, _store(index_dir).root, _models_dir(models_dir), verify=not no_verify,
                             show_progress=True, backend=backend.value, milvus_uri=milvus_uri)
        result = evaluate_pipeline(dataset, pipe, split=split.value, show_progress=True)
        console.print(pipeline_table(result))
        for line in pipeline_summary(result):
            console.print(line)
        stages = ", ".join(f"{k} {v / result['claims'] * 1000:.0f}" for k, v in result["stage_seconds"].items())
        console.print(f"ms per claim (batches of {result['batch_size']}): {stages}")
        draw = None  # the pipeline has no curves
    elif system == System.trained.value:
        from perspectrum.eval.report import plot_pr_curves, trained_table
        from perspectrum.eval.trained import evaluate_trained

        result = evaluate_trained(dataset, _store(index_dir), _models_dir(models_dir), split=split.value,
                                  show_progress=True)
        console.print(trained_table(result))
        for key, scores in result["tasks"].items():
            console.print(f"{key} setting (tuned on dev): {json.dumps(scores['setting'])}")
        rates = ", ".join(f"{task} {rate:.0f}" for task, rate in result["pairs_per_second"].items())
        console.print(f"pairs/s on this machine: {rates}")
        draw = plot_pr_curves
    else:
        from perspectrum.eval.ir import evaluate_ir
        from perspectrum.eval.report import ir_table, ir_tuning, plot_recall_curves

        result = evaluate_ir(dataset, _store(index_dir, backend, milvus_uri), split=split.value, show_progress=True)
        console.print(ir_table(result))
        for line in ir_tuning(result):
            console.print(f"tuned on {result['tuned_on']}: {line}")
        for pool, methods in result["latency"].items():
            line = ", ".join(f"{m} {v['p50_ms']:.1f}/{v['p95_ms']:.1f}" for m, v in methods.items())
            console.print(f"latency p50/p95 ms per query ({pool}, k=100): {line}")
        draw = plot_recall_curves
    console.print(f"finished in {result['seconds']:.0f} s")
    if json_path:
        _say(f"wrote {write_json(json_path, result)}")
    if plot and draw is not None:
        _say(f"wrote {draw(result, plot)}")


@app.command()
def tune(
    json_path: JsonOut = None,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    no_verify: NoVerify = False,
) -> None:
    """Choose the pipeline's relevance floor, stance margin, clustering cut and expansion on dev; store them beside the models.

    Runs `discover` end to end over the dev claims (and off-topic claims for the
    floor) once per setting tried; model scores are computed once and reused.
    """
    from perspectrum._io import write_json
    from perspectrum.data import load_dataset
    from perspectrum.train.tune_pipeline import tune_pipeline
    from perspectrum.pipeline.pipeline import Pipeline

    dataset = load_dataset(data_dir, verify=not no_verify)
    pipe = Pipeline.load(data_dir, _store(index_dir).root, models_dir, verify=not no_verify, show_progress=True)
    record = tune_pipeline(dataset, pipe, show_progress=True)
    table = Table(title=f"pipeline settings tried on dev ({record['system']} models), %")
    columns = ("floor", "margin", "cut", "neighbours", "T1", "T2 found", "T3", "T4 found", "T4 all", "T5 found",
               "T5 strict", "mixed", "wrong stance", "s")
    for column in columns:
        table.add_column(column, justify="right")
    for row in record["runs"]:
        chosen = "→ " if row is record["chosen"] or row == record["chosen"] else ""
        settings = row["settings"]
        table.add_row(chosen + f"{settings['relevance']['floor']:.3f}", str(settings["stance"]["margin"]),
                      str(settings["cluster"]["threshold"]), str(settings["expand"]["neighbours"]),
                      *(f"{row[k]:.1f}" for k in ("t1", "t2", "t3", "t4", "t4_all", "t5", "t5_all", "mixed",
                                                   "wrong_stance")), f"{row['seconds']:.0f}")
    console.print(table)
    floor = record["floor"]
    console.print(f"floor {floor['value']:.3f}: empties {floor['tune']['real_emptied']:.1%} of real dev claims, "
                  f"answers {floor['tune']['offtopic_answered']:.1%} of {floor['offtopic_tune']} off-topic ones "
                  f"(held-out off-topic answered: {floor['held_out']['offtopic_answered']:.1%})")
    console.print(f"chosen: {json.dumps(record['settings'])} ({record['rule']}); {record['seconds']:.0f} s")
    if json_path:
        _say(f"wrote {write_json(json_path, record)}")


def _metric(values: Any) -> str:
    """A model's headline metric for the models table: F1 (and accuracy), or '-'."""
    if not isinstance(values, dict) or "f1" not in values:
        return "-"
    return f"F1 {values['f1']:.1f}" + (f", acc {values['accuracy']:.1f}" if "accuracy" in values else "")


@models_app.command("list")
def models_list(
    models_dir: ModelsDir = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the inventory as JSON.")] = False,
) -> None:
    """What is installed, which system `discover` will use, and how good each model is."""
    from perspectrum.models.bundle import inventory

    found = inventory(_models_dir(models_dir))
    if as_json:
        typer.echo(json.dumps(found, indent=2))
        return
    table = Table(title=literal(f"models in {found['models_dir']}", "table.title"))
    for column in ("name", "kind", "base", "data checksum", "dev", "test", "MB"):
        table.add_column(column, overflow="fold")
    for entry in found["entries"]:
        dev = entry["dev"] if entry["name"] != LIGHT_FOLDER else None
        table.add_row(literal(entry["name"]), literal(entry["kind"]),
                      literal(str(entry["base_model"] or "-").split("/")[-1]),
                      literal((entry["data_checksum"] or "-")[:12]), _metric(dev), _metric(entry["test"]),
                      f"{entry['size_bytes'] / 1e6:.1f}")
    console.print(table)
    console.print(literal(f"discover uses: {found['system']}"))


@models_app.command("export")
def models_export(
    out: Annotated[Path, typer.Argument(help="The archive to write (e.g. perspectrum-models.tar.gz).")],
    models_dir: ModelsDir = None,
    data_dir: DataDir = None,
) -> None:
    """Pack every model folder, the light heads and pipeline.json with a manifest of SHA-256 sums."""
    from perspectrum.models.bundle import export_models
    from perspectrum.data import data_checksum, resolve_data_dir

    manifest = export_models(_models_dir(models_dir), out, data_checksum(resolve_data_dir(data_dir)),
                             show_progress=True)
    _say(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB): {', '.join(manifest['entries'])}; "
         f"{len(manifest['files'])} files, data {manifest['data_checksum'][:12]}…")


@models_app.command("install")
def models_install(
    source: Annotated[str, typer.Argument(help="A bundle from `perspectrum models export`: a path, or a "
                                          "file://, http:// or https:// URL.")],
    models_dir: ModelsDir = None,
    data_dir: DataDir = None,
) -> None:
    """Verify a bundle (every sum, the version, the data checksum) and swap it in whole."""
    from perspectrum.models.bundle import install_models
    from perspectrum.data import data_checksum, resolve_data_dir

    target = _models_dir(models_dir)
    manifest = install_models(source, target, data_checksum(resolve_data_dir(data_dir)), show_progress=True)
    _say(f"installed {', '.join(manifest['entries'])} into {target} ({len(manifest['files'])} files "
         f"verified; made by perspectrum {manifest['perspectrum_version']} on {manifest['created']})")


DocumentFile = Annotated[Path, typer.Argument(
    help="A UTF-8 text file: an essay, a web page's text, a transcript (at most 300,000 characters).",
    show_default=False)]
ClaimOption = Annotated[Optional[str], typer.Option("--claim", help="The claim the text argues about.",
                                                    show_default=False)]


PoolFile = Annotated[Path, typer.Argument(help="Your pool file: JSONL with \"id\" and \"text\", as given to "
                                                 "--perspectives or --evidence.")]


def _pool_changes(verb: str, count: int, pool_file: Path, changes: list[Any], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps({verb: count, "pool": str(pool_file), "indexes": [c.to_dict() for c in changes]},
                              indent=2, ensure_ascii=True))
        return
    _say(f"{verb} {count:,} record(s) {'to' if verb == 'added' else 'from'} {pool_file}")
    if not changes:
        _say("no index of this file was found; its indexes are built when it is first used")
        return
    table = Table(title="indexes")
    for column in ("folder", "pool", "kind", "engine", "how", "seconds"):
        table.add_column(column, overflow="fold")
    for change in changes:
        table.add_row(literal(change.folder), change.pool, change.kind, change.engine, change.how,
                      f"{change.seconds:.2f}")
    console.print(table)


@pool_app.command("add")
def pool_add(
    pool_file: PoolFile,
    source: Annotated[Path, typer.Option("--from", help="The records to add: JSONL with \"id\" and \"text\".")],
    index_dir: IndexDir = None,
    milvus_uri: MilvusUri = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print what was done as JSON.")] = False,
) -> None:
    """Add records to a pool file and update every index of it (all backends') in place.

    faiss and Milvus encode only the new texts, Lucene adds documents to its segments,
    bm25s indexes the pool again; each index is swapped in whole, the file rewritten last.
    """
    from perspectrum.index.pools import add

    count, changes = add(pool_file, source, folders.index_dir(index_dir), milvus_uri, show_progress=not as_json)
    _pool_changes("added", count, pool_file, changes, as_json)


@pool_app.command("remove")
def pool_remove(
    pool_file: PoolFile,
    ids: Annotated[Optional[list[str]], typer.Option("--ids", help="Ids to remove, comma-separated (repeatable).")]
    = None,
    source: Annotated[Optional[Path], typer.Option("--from", help="A file of ids to remove, one per line.")] = None,
    index_dir: IndexDir = None,
    milvus_uri: MilvusUri = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print what was done as JSON.")] = False,
) -> None:
    """Remove records from a pool file and update every index of it (all backends') in place."""
    from perspectrum.index.pools import read_ids, remove

    count, changes = remove(pool_file, read_ids(ids, source), folders.index_dir(index_dir), milvus_uri,
                            show_progress=not as_json)
    _pool_changes("removed", count, pool_file, changes, as_json)


def _document_and_claim(file: Path, claim: str | None) -> tuple[str, str]:
    """The file's text and the claim, checked; a missing or bad claim exits 2 as in `discover`."""
    from perspectrum.text.document import read_document
    from perspectrum.pipeline.pipeline import ClaimError, check_claim

    if claim is None:
        raise _error(PerspectrumError('give the claim the text argues about: --claim "…"'), 2)
    try:
        claim = check_claim(claim)
    except ClaimError as exc:
        raise _error(exc, 2) from None
    return read_document(file), claim


def _append_units(pool: Path, source: Path, units: list[Any]) -> int:
    """Add ``units`` to the JSONL pool at ``pool`` (made if missing) as {"id", "text"}
    records, skipping texts it already holds; the file is rewritten whole and renamed into
    place, so an interrupted run leaves it as it was. Returns how many were added."""
    from perspectrum._io import atomic_write
    from perspectrum.data import Pool

    existing = Pool.from_jsonl(pool, "perspectives") if pool.exists() else None
    held = set(existing.texts) if existing else set()
    ids = {str(i) for i in existing.ids} if existing else set()
    rows = [u for u in units if u.text not in held]
    before = pool.read_bytes() if existing else b""
    if before and not before.endswith(b"\n"):
        before += b"\n"
    lines = []
    for unit in rows:
        doc_id = f"{source.name}:{unit.start}-{unit.end}"
        n = 1
        while doc_id in ids:
            n += 1
            doc_id = f"{source.name}:{unit.start}-{unit.end}#{n}"
        ids.add(doc_id)
        lines.append(json.dumps({"id": doc_id, "text": unit.text, "stance": unit.stance}, ensure_ascii=False))
    atomic_write(pool, lambda tmp: tmp.write_bytes(before + "".join(f"{line}\n" for line in lines).encode()))
    return len(lines)


@app.command()
def mine(
    file: DocumentFile,
    claim: ClaimOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the units as JSON (offsets into the file's text).")] = False,
    add_to: Annotated[Optional[Path], typer.Option(
        "--add-to", help="Append the units to this perspectives pool (JSONL) for `discover --perspectives`.")] = None,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    no_verify: NoVerify = False,
) -> None:
    """Find the argument units of a text for a claim: spans (some shorter than a sentence)
    with their stance, highlighted in the text."""
    text, claim_text = _document_and_claim(file, claim)
    pipe = _pipeline(data_dir, index_dir, models_dir, no_verify, None, None)
    units = pipe.mine(text, claim_text)
    if as_json:
        typer.echo(json.dumps({"claim": claim_text, "file": str(file), "characters": len(text),
                               "units": [u.to_dict() for u in units]}, indent=2, ensure_ascii=True))
    else:
        from perspectrum.cli.display import mined

        console.print(mined(text, units))
    if add_to is not None:
        added = _append_units(add_to, file, units)
        typer.echo(f"added {added} of {len(units)} units to {printable(str(add_to))}", err=True)


@app.command()
def match(
    file: DocumentFile,
    claim: ClaimOption = None,
    arguments: Annotated[Optional[Path], typer.Option(
        "--arguments", help="The arguments to look for, one per line [default: the claim's perspectives, "
                            "as `discover` finds them].")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the answers as JSON.")] = False,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    no_verify: NoVerify = False,
) -> None:
    """Tell which arguments a speech, essay or transcript makes, each with the sentence that makes it."""
    from perspectrum.text.document import read_document
    from perspectrum.text.matching import check_arguments

    text, claim_text = _document_and_claim(file, claim)
    listed = None
    if arguments is not None:
        lines = read_document(arguments, what="argument list").splitlines()
        try:
            listed = check_arguments(lines)
        except PerspectrumError as exc:
            raise PerspectrumError(f"{arguments}: {exc}") from None
    pipe = _pipeline(data_dir, index_dir, models_dir, no_verify, None, None)
    results = pipe.match(text, claim_text, listed)
    if as_json:
        typer.echo(json.dumps({"claim": claim_text, "file": str(file), "arguments": [r.to_dict() for r in results]},
                              indent=2, ensure_ascii=True))
        return
    from perspectrum.cli.display import matched

    console.print(matched(results))
    made = sum(r.made for r in results)
    console.print(f"the text makes {made} of {len(results)} arguments")


class Engine(str, Enum):
    local = "local"
    ray = "ray"


@app.command("discover-batch")
def discover_batch(
    claims: Annotated[Path, typer.Argument(help='JSONL: one {"claim": ..., "id": ...} per line (id: the line '
                                                "number if left out).")],
    out: Annotated[Path, typer.Option("--out", help="Results JSONL, one line per claim; an existing one is "
                                                    "resumed (its claims skipped).")],
    engine: Annotated[Engine, typer.Option(help="local: this process; ray: an actor pool per model stage.")]
    = Engine.local,
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, help="Ray actors per model stage, one "
                                                                            "CPU each (1 if left out).")] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Claims per model call.")] = 16,
    top: Annotated[Optional[int], typer.Option("--top", min=1, help="At most N perspectives per claim.")] = None,
    no_evidence: Annotated[bool, typer.Option("--no-evidence", help="Skip evidence retrieval (faster).")] = False,
    address: Annotated[Optional[str], typer.Option(
        "--address", help="Join this Ray cluster (auto: the one `ray start` runs here) instead of starting one; "
                          "its nodes must see the same folders.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    no_verify: NoVerify = False,
    perspectives: OwnPerspectives = None,
    evidence: OwnEvidence = None,
    backend: BackendOpt = BackendChoice.embedded,
    milvus_uri: MilvusUri = None,
) -> None:
    """Discover the perspectives on every claim of a JSONL file, one result line each.

    Each result line is {"id", "claim", "result"}, with result what `discover --json`
    prints. Lines are written as claims finish and flushed to disk one by one, so an
    interrupted run is resumed by running the same command again: claims already in
    --out are skipped, and a partial last line is cut off.
    """
    from functools import partial

    from perspectrum.serve.batch import discover_batch as run

    if engine is Engine.local and (workers is not None or address is not None):
        raise PerspectrumError("--workers and --address are for --engine ray")
    # a factory the ray engine can send to its actors; folders made absolute for them
    given = {name: None if path is None else path.expanduser().resolve() for name, path in
             (("data_dir", data_dir), ("index_dir", index_dir), ("models_dir", models_dir),
              ("perspectives", perspectives), ("evidence", evidence))}
    factory = partial(_pipeline, no_verify=no_verify, backend=backend, milvus_uri=milvus_uri, **given)
    summary = run(factory, claims, out, engine=engine.value, workers=workers or 1, batch_size=batch_size, top=top,
                  evidence=not no_evidence, address=address, show_progress=True)
    if as_json:
        typer.echo(json.dumps(summary.to_dict(), indent=2, ensure_ascii=True))
        return
    _say(f"{summary.done} claims discovered, {summary.skipped} already in {summary.out}, in "
         f"{summary.seconds:.1f} s ({summary.claims_per_second:.2f} claims/s)")


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
