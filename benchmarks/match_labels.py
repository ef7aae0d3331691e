"""How clean are the `match` benchmark's "not made" labels? A dev-only study.

    python -m benchmarks.match_labels  # → eval/results/match_labels_trained_dev.json

The benchmark (:mod:`perspectrum.eval.match_quality`) labels every retrieved perspective outside
the claim's gold clusters "not made". PERSPECTRUM repeats topics across debates, so some of
those are paraphrases of a gold perspective that the speech does make, and no reader can
both say "made" for the gold one and "not made" for its paraphrase. This counts them: a
wrong candidate is *ambiguous* when our equivalence judge (the model blended with the
cosine and cut as the clustering stage does, as `mine` is judged) finds it equivalent to a
perspective of a gold cluster of the same claim whose evidence is in the speech. It then
scores the shipped setting and the embedding baseline (``match_trained_dev.json``'s settings) on
every candidate and with the ambiguous ones left out, to show how much of the gap between
them the label noise hides. Dev only: nothing here chooses a setting.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.eval.match_quality import (COUNTS, MatchDocument, decide, match_documents, perspective_searcher,
                                            score_decisions, score_documents)
from perspectrum.eval.metrics import percent
from perspectrum.eval.mine_quality import Judge
from perspectrum.text.matching import MatchSettings
from perspectrum.pipeline.pipeline import Pipeline

RESULTS = Path(__file__).resolve().parents[1] / "eval" / "results"
SYSTEMS = ("competitive_sentence_max", "embedding_sentence_max")


def main() -> None:
    started = time.perf_counter()
    dataset = load_dataset(verify=False)
    pipe = Pipeline.load(verify=False, show_progress=True)
    tuned = json.loads((RESULTS / "match_trained_dev.json").read_text())
    docs = match_documents(dataset, "dev", perspective_searcher(pipe))
    triples, where, wrong = [], [], 0
    for d, doc in enumerate(docs):
        claim = dataset.claims[doc.cid]
        made = [k for k in claim.clusters if k.evidence]
        for a, pid in enumerate(doc.pids):
            if pid in claim.gold_pids:
                continue
            wrong += 1
            for cluster in made:
                triples += [(doc.claim, doc.arguments[a], dataset.perspectives[p].text) for p in cluster.pids]
                where += [(d, a)] * len(cluster.pids)
    judge = Judge(pipe.scorers, pipe.store.encoder)
    ambiguous = {key for key, score in zip(where, judge.scores(triples)) if score >= judge.threshold}
    scored = score_documents(docs, pipe.scorers, pipe.store.encoder, show_progress=True, max_depth=0)
    keep = [[(d, a) not in ambiguous for a in range(len(doc.pids))] for d, doc in enumerate(docs)]
    clean = [MatchDocument(doc.cid, doc.claim, doc.text, *(tuple(x for x, k in zip(column, kept) if k)
                                                          for column in (doc.arguments, doc.pids, doc.made)))
             for doc, kept in zip(docs, keep)]
    systems = {}
    for name in SYSTEMS:
        decisions = decide(scored, MatchSettings(**tuned["systems"][name]["setting"]))
        kept = [[s for s, k in zip(said, kept) if k] for said, kept in zip(decisions, keep)]
        systems[name] = {"setting": tuned["systems"][name]["setting"],
                         "all_candidates": percent(score_decisions(docs, decisions), COUNTS),
                         "ambiguous_left_out": percent(score_decisions(clean, kept), COUNTS)}
    result = {"split": "dev", "judge": {"weight": judge.weight, "threshold": judge.threshold},
              "documents": len(docs), "wrong_candidates": wrong, "ambiguous": len(ambiguous),
              "ambiguous_share_of_wrong": round(100 * len(ambiguous) / max(1, wrong), 2),
              "documents_with_ambiguous": len({d for d, _ in ambiguous}), "systems": systems,
              "margin_over_embedding": {view: round(systems[SYSTEMS[0]][view]["accuracy"]
                                                    - systems[SYSTEMS[1]][view]["accuracy"], 2)
                                        for view in ("all_candidates", "ambiguous_left_out")},
              "seconds": round(time.perf_counter() - started, 1)}
    path = write_json(RESULTS / "match_labels_trained_dev.json", result)
    print(json.dumps(result, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
