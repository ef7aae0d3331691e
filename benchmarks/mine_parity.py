"""Does mining a pile in batches, the encoder in bfloat16, keep `mine`'s dev figures?

    python -m benchmarks.mine_parity --models-dir MODELS

`mine`'s dev documents (every dev claim's evidence paragraphs, :func:`perspectrum.eval.mine_quality.mine_documents`)
are mined three ways: one document at a time in float32 (what ``perspectrum mine`` does); in
batches of :data:`perspectrum.pipeline.map.MINE_BATCH` documents (one call of each model per
batch, as ``map`` mines); and in batches with the encoder in bfloat16 (where this CPU has it natively, else
it is said and skipped). Each way's units are compared with the first (documents whose units differ, units
gained and lost) and judged as ``mine``'s evaluation judges them (cluster hit share, unit
precision, F2, stance accuracy).

Rule: map mines in bfloat16 where the CPU has it natively
(:data:`perspectrum.pipeline.map.MINE_PRECISION` = ``"auto"``) if that keeps every figure within
0.5 points of float32 in the same batches; else in float32. (As first written, the rule compared
with float32 one document at a time. The first run showed that batching alone moves the figures,
up by as much as 1.2 points: the relevance model's int8 arithmetic scales each batch by its own
range, so a candidate's score depends a little on the others read with it. That compares
batching, not arithmetic, so the rule compares like with like; both comparisons are stored.)
Writes ``eval/results/mine_parity_shipped_dev.json``.
"""

from __future__ import annotations

import os
import platform
import time
from typing import Any

from benchmarks.pipeline_args import pipeline_parser, provenance
from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.encoders.bi_encoder import native_bfloat16
from perspectrum.eval.metrics import percent
from perspectrum.eval.mine_quality import SHARES, Judge, judged, mine_documents, score_units
from perspectrum.pipeline.map import MINE_BATCH
from perspectrum.pipeline.mine import mine, mine_many
from perspectrum.pipeline.pipeline import Pipeline
from perspectrum.pipeline.stages import Stance
from perspectrum.text.mining import MinedUnit, MineSettings


def main() -> None:
    parser = pipeline_parser(__doc__)
    args = parser.parse_args()
    dataset = load_dataset()
    pipe = Pipeline.load(index_dir=args.index_dir, models_dir=args.models_dir)
    pipe.warm_up()
    docs = mine_documents(dataset, "dev")
    threshold, encoder = pipe.stage(Stance).threshold, pipe.store.encoder
    judge = Judge(pipe.scorers, encoder)

    def one_at_a_time() -> list[list[MinedUnit]]:
        return [mine(doc.text, doc.claim, pipe.scorers, encoder, threshold) for doc in docs]

    def batched(precision: str) -> list[list[MinedUnit]]:
        out: list[list[MinedUnit]] = []
        for start in range(0, len(docs), MINE_BATCH):  # a batch holds one claim's documents, as a pile does
            batch = docs[start:start + MINE_BATCH]
            for claim in dict.fromkeys(doc.claim for doc in batch):
                mine_of = [doc for doc in batch if doc.claim == claim]
                found = mine_many([doc.text for doc in mine_of], claim, pipe.scorers, encoder, threshold,
                                  MineSettings(), precision)
                out += found
        return out

    ways = {"float32, one document at a time": one_at_a_time, "float32, batched": lambda: batched("float32")}
    if native_bfloat16():
        ways["bfloat16, batched"] = lambda: batched("bfloat16")
    record: dict[str, Any] = {**provenance("python -m benchmarks.mine_parity --models-dir MODELS"), "system": pipe.system,
                              "split": "dev", "documents": len(docs), "batch": MINE_BATCH,
                              "native_bfloat16": native_bfloat16(), "ways": {}}
    reference: list[list[MinedUnit]] | None = None
    for name, way in ways.items():
        started = time.perf_counter()
        units = way()
        seconds = time.perf_counter() - started
        verdicts = judged(dataset, docs, [[u.text for u in du] for du in units], judge)
        figures = percent(score_units(dataset, docs, verdicts, [[u.stance for u in du] for du in units]), (), SHARES)
        row: dict[str, Any] = {"seconds_mining": round(seconds, 1), **figures}
        if reference is None:
            reference = units
        else:
            keys = [({(u.start, u.end, u.stance) for u in a}, {(u.start, u.end, u.stance) for u in b})
                    for a, b in zip(units, reference)]
            row.update({"documents_differing": sum(a != b for a, b in keys),
                        "units_gained": sum(len(a - b) for a, b in keys), "units_lost": sum(len(b - a) for a, b in keys)})
        record["ways"][name] = row
        print(name, row, flush=True)
    alone = record["ways"]["float32, one document at a time"]
    base = record["ways"]["float32, batched"]
    figures = ("cluster_hit_share", "unit_precision", "f2", "stance_accuracy")
    bf16 = record["ways"].get("bfloat16, batched")
    record["rule"] = "bfloat16 where native if every figure is within 0.5 points of float32 in the same batches"
    record["bfloat16_keeps_figures"] = bool(bf16) and all(abs(bf16[f] - base[f]) <= 0.5 for f in figures)
    record["batching_moves_figures_by"] = {f: round(base[f] - alone[f], 2) for f in figures}
    record["hardware"] = f"{os.cpu_count()} CPU cores ({platform.machine()})"
    print(write_json(args.out / "mine_parity_shipped_dev.json", record))


if __name__ == "__main__":
    main()
