"""Would a reader trained on PERSPECTRUM's evidence links lift `match`'s recall? A dev-only study.

    python -m benchmarks.match_trained  # → eval/results/match_reader_trained_dev.json (31 min on 2 cores)

`match` misses about a third of the arguments a speech makes (``match_trained_dev.json``), and
``match_labels_trained_dev.json`` showed that this recall, not the noisy "not made" labels, keeps it
from the issue's +10 points over the embedding baseline. A sentence-level reader cannot see
a paragraph that backs a perspective without stating it in any one sentence, so this study
trains one that reads whole paragraphs: a MiniLM cross-encoder on (argument, paragraph)
pairs of the training split's speeches (built as :func:`perspectrum.eval.match_quality.match_documents`
builds dev's). A pair is positive when the argument's gold cluster cites the paragraph as
evidence; its negatives are the same paragraph with the speech's other candidates (gold
clusters that do not cite it and retrieved-but-wrong perspectives), a seeded sample as
many as the positives. It then scores every (argument, paragraph) pair of the dev speeches
and reports, each with its best dev threshold:

- the model alone (each argument's best paragraph), and with its margin over the best rival
  argument at that paragraph, as ``match`` sharpens the cosine;
- the shipped score (``MatchSettings``' defaults) plus ``weight`` × that model score.

Dev only: nothing here is shipped or read on test; the model is not kept.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from perspectrum._io import write_json
from perspectrum.encoders.cross_encoder import CrossEncoderModel
from perspectrum.train.fine_tune import TrainParams, fine_tune
from perspectrum.data import Dataset, load_dataset
from perspectrum.eval.ir import best_of
from perspectrum.eval.match_quality import (COUNTS, MatchDocument, Scored, match_documents, perspective_searcher,
                                            score_decisions, score_documents)
from perspectrum.eval.metrics import percent
from perspectrum.text.matching import MatchSettings, margins
from perspectrum.pipeline.pipeline import Pipeline

RESULTS = Path(__file__).resolve().parents[1] / "eval" / "results"
PARAMS = TrainParams(epochs=1, max_length=256, length_batches=True, seed=13)
NEGATIVES_PER_POSITIVE = 1.0
THRESHOLDS = tuple(round(float(t), 2) for t in np.arange(0.0, 3.0, 0.01))
WEIGHTS = (0.25, 0.5, 1.0, 2.0)
RIVAL_MARGINS = (0.0, 0.5, 1.0)


def cited(dataset: Dataset, doc: MatchDocument) -> tuple[list[str], np.ndarray]:
    """The speech's paragraphs (in the order the text joins them) and, per argument, which
    of them its gold cluster cites (arguments past the claim's clusters are retrieved-but-wrong)."""
    claim = dataset.claims[doc.cid]
    ids = list(dict.fromkeys(e for k in claim.clusters for e in k.evidence))
    cites = [set(k.evidence) for k in claim.clusters] + [set()] * (len(doc.arguments) - len(claim.clusters))
    return [dataset.evidence[e].text for e in ids], np.array([[e in c for e in ids] for c in cites])


def training_pairs(dataset: Dataset, docs: Sequence[MatchDocument]) -> tuple[list[tuple[str, str]], list[float]]:
    """Every cited (argument, paragraph) pair, and a seeded sample of as many uncited ones."""
    positives, negatives = [], []
    for doc in docs:
        texts, labels = cited(dataset, doc)
        for j, text in enumerate(texts):
            for a, argument in enumerate(doc.arguments):
                (positives if labels[a, j] else negatives).append((argument, text))
    sampled = random.Random(PARAMS.seed).sample(negatives, min(len(negatives),
                                                               int(NEGATIVES_PER_POSITIVE * len(positives))))
    return positives + sampled, [1.0] * len(positives) + [0.0] * len(sampled)


def paragraph_scores(model: CrossEncoderModel, dataset: Dataset, docs: Sequence[MatchDocument]) -> list[np.ndarray]:
    """Per document, the model's P(cited) for every (argument, paragraph) pair."""
    pairs, shapes = [], []
    for doc in docs:
        texts, _ = cited(dataset, doc)
        pairs += [(argument, text) for argument in doc.arguments for text in texts]
        shapes.append((len(doc.arguments), len(texts)))
    scores = model.score(pairs, show_progress=True, description="score dev pairs")
    out, start = [], 0
    for rows, columns in shapes:
        out.append(scores[start:start + rows * columns].reshape(rows, columns).astype(np.float64))
        start += rows * columns
    return out


def best_threshold(docs: Sequence[MatchDocument], scores: Sequence[np.ndarray]) -> dict[str, float]:
    """The dev threshold with the best per-document accuracy, and the figures at it."""
    def figures(t: float) -> dict[str, float]:
        return score_decisions(docs, [[bool(v >= t) for v in s] for s in scores])

    threshold, _ = best_of(list(THRESHOLDS), lambda t: figures(t)["accuracy"])
    return {"threshold": threshold, **percent(figures(threshold), COUNTS)}


def main() -> None:
    started = time.perf_counter()
    dataset = load_dataset(verify=False)
    pipe = Pipeline.load(verify=False, show_progress=True)
    searcher = perspective_searcher(pipe)
    train_docs, dev_docs = (match_documents(dataset, split, searcher) for split in ("train", "dev"))
    pairs, targets = training_pairs(dataset, train_docs)
    weights, tokenizer, stats = fine_tune(pairs, targets, PARAMS, show_progress=True, description="train matcher")
    model = CrossEncoderModel(weights, tokenizer, {"params": PARAMS.to_dict()}, quantize=True)
    scoring = time.perf_counter()
    matrices = paragraph_scores(model, dataset, dev_docs)
    scored: list[Scored] = score_documents(dev_docs, None, pipe.store.encoder, show_progress=True, max_depth=0)
    scoring_seconds = time.perf_counter() - scoring
    shipped = MatchSettings()

    def ours(s: Scored) -> np.ndarray:
        return shipped.score(s.top, s.sentence_margin, s.paragraph_margin)

    def model_score(m: np.ndarray, rival: float) -> np.ndarray:
        _, top, margin = margins(m)
        return top + rival * margin

    variants: dict[str, Callable[[Scored, np.ndarray], np.ndarray]] = {
        "embedding_sentence_max": lambda s, m: s.top,
        "competitive_sentence_max": lambda s, m: ours(s),
        **{f"model rival={c}": (lambda s, m, c=c: model_score(m, c)) for c in RIVAL_MARGINS},
        **{f"competitive + {w} x model rival={c}": (lambda s, m, w=w, c=c: ours(s) + w * model_score(m, c))
           for w in WEIGHTS for c in RIVAL_MARGINS},
    }
    systems = {name: best_threshold(dev_docs, [fn(s, m) for s, m in zip(scored, matrices)])
               for name, fn in variants.items()}
    baseline = systems["embedding_sentence_max"]["accuracy"]
    best_name = max(systems, key=lambda n: systems[n]["accuracy"])
    result = {
        "split": "dev",
        "model": {"base": "sentence-transformers/all-MiniLM-L6-v2", "params": PARAMS.to_dict(),
                  "negatives_per_positive": NEGATIVES_PER_POSITIVE, "train_documents": len(train_docs),
                  "training": stats},
        "dev_documents": len(dev_docs), "dev_pairs": int(sum(m.size for m in matrices)),
        "systems": systems,
        "best": {"system": best_name, "accuracy": systems[best_name]["accuracy"],
                 "margin_over_embedding": round(systems[best_name]["accuracy"] - baseline, 2)},
        "scoring_seconds": round(scoring_seconds, 1),
        "seconds": round(time.perf_counter() - started, 1),
    }
    path = write_json(RESULTS / "match_reader_trained_dev.json", result)
    print(json.dumps({k: v for k, v in result.items() if k != "systems"}, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
