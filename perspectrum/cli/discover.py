"""``perspectrum discover`` (one claim) and ``perspectrum discover-batch`` (a JSONL file of them)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from perspectrum._progress import literal
from perspectrum.cli.common import (BackendChoice, BackendOpt, DataDir, DeviceOpt, Engine, IndexDir, MilvusUri,
                                    ModelsDir, NoVerify, OwnEvidence, OwnPerspectives, RayAddress, app,
                                    checked_claim, console, echo_json, load_pipeline, say)
from perspectrum.errors import PerspectrumError

NoEvidence = Annotated[bool, typer.Option("--no-evidence", help="Skip evidence retrieval (faster).")]


@app.command("discover")
def discover(
    claim: Annotated[str, typer.Argument(help="The claim to find perspectives on (≤ 1,000 characters).")],
    top: Annotated[Optional[int], typer.Option("--top", min=1, help="Show at most N perspectives.")] = None,
    no_evidence: NoEvidence = False,
    explain: Annotated[bool, typer.Option("--explain", help="Also show ids, scores and per-stage timings.")] = False,
    full: Annotated[bool, typer.Option("--full", help="Show each evidence paragraph whole, not only the window "
                                                      "that states the perspective.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON (schema in docs/discover.md).")] = False,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    device: DeviceOpt = None,
    no_verify: NoVerify = False,
    perspectives: OwnPerspectives = None,
    evidence: OwnEvidence = None,
    backend: BackendOpt = BackendChoice.embedded,
    milvus_uri: MilvusUri = None,
) -> None:
    """Find the perspectives on a claim: clustered, stanced, and backed by evidence.

    On a machine that is not prepared it runs `perspectrum setup` first (a few minutes, once)
    and says so. The models that ship with perspectrum answer, or your own where you trained
    or installed them (`perspectrum models list`).
    """
    # printed as a debate (or JSON), with the stages' timings and scores after it when explain
    checked_claim(claim)  # a bad claim exits 2 before anything loads
    pipe = load_pipeline(data_dir, index_dir, models_dir, not no_verify, perspectives, evidence,
                         BackendChoice(backend).value, milvus_uri, prepare_first=True)
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
        console.print(debate(result, full=full, internals=explain))
    if explain:
        for part in explained(result):
            console.print(part)


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
    no_evidence: NoEvidence = False,
    address: RayAddress = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    device: DeviceOpt = None,
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

    from perspectrum.batch.discover_run import discover_batch as run

    if engine == Engine.local and (workers is not None or address is not None):
        raise PerspectrumError("--workers and --address are for --engine ray")
    # a factory the ray engine can send to its actors; folders made absolute for them
    given = {name: None if path is None else path.expanduser().resolve() for name, path in
             (("data_dir", data_dir), ("index_dir", index_dir), ("models_dir", models_dir),
              ("perspectives", perspectives), ("evidence", evidence))}
    # built once here after every check (the driver's), so an unprepared machine is prepared once
    factory = partial(load_pipeline, verify=not no_verify, backend=BackendChoice(backend).value,
                      milvus_uri=milvus_uri, prepare_first=True, **given)
    summary = run(factory, claims, out, engine=Engine(engine).value, workers=workers or 1, batch_size=batch_size,
                  top=top, evidence=not no_evidence, address=address, show_progress=True)
    if as_json:
        echo_json(summary.to_dict())
        return
    say(f"{summary.done} claims discovered, {summary.skipped} already in {summary.out}, in "
        f"{summary.seconds:.1f} s ({summary.claims_per_second:.2f} claims/s)")
