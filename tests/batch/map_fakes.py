"""Stand-in models and pipeline for `perspectrum map` fault tests: a map in milliseconds, with
no trained models, through the real reading, units file and grouping code.

:class:`FakePipeline` answers as much of :class:`perspectrum.Pipeline` as ``map`` uses
(``map_pile`` with word-reading models, as ``tests/text/test_mining.py``'s). Set
``PERSPECTRUM_TEST_KILL`` to kill the process (SIGKILL) at one moment of a run:
``mined:N`` (the N-th document mined, its units not yet written), ``written:N`` (after its
units are on disk), ``torn:N`` (half of its line written, as a crash inside a write leaves it)
or ``grouping`` (while units are being grouped).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from perspectrum.pipeline.map import map_pile
from perspectrum.pipeline.stages import ClusterStage, Stance

KILL = "PERSPECTRUM_TEST_KILL"
UNITS = "PERSPECTRUM_TEST_UNITS"


def _die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


class WordScorers:
    """Relevant when a unit says "animal" or "zoo", supporting when it says "protect";
    equivalent when two texts share half their words."""

    kind = "fake"
    settings: dict = {}

    def relevance(self, pairs):
        return np.array([0.9 if any(w in p.lower() for w in ("animal", "zoo")) else 0.1 for _, p in pairs])

    def stance(self, pairs):
        return np.array([0.8 if "protect" in p else 0.2 for _, p in pairs])

    def equivalence(self, triples):
        if os.environ.get(KILL) == "grouping":
            _die()

        def share(a: str, b: str) -> float:
            x, y = set(a.lower().split()), set(b.lower().split())
            return len(x & y) / max(1, min(len(x), len(y)))
        return np.array([share(a, b) for _, a, b in triples])


class WordEncoder:
    """Unit bag-of-words vectors (cosine = shared words)."""

    identity = "word-encoder"
    VOCAB = ("zoos", "protect", "animals", "suffer", "captivity", "species", "small", "breeding", "cages")

    def encode(self, texts):
        rows = np.array([[float(w in t.lower()) for w in self.VOCAB] + [1e-3] for t in texts])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


class FakePipeline:
    """What ``map_documents``, ``perspectrum map`` and ``perspectrum serve``'s ``POST /map`` use
    of a pipeline; calling it returns it (so it is also its own factory)."""

    system = "fake"
    models_dir = None
    settings: dict = {}
    show_progress = False

    def __init__(self) -> None:
        self.store = SimpleNamespace(encoder=WordEncoder())

    def __call__(self, *args, **kwargs) -> "FakePipeline":
        return self

    def warm_up(self) -> None:
        """Nothing to load (the server calls it as it starts)."""

    def map(self, texts, claim, settings=None, skipped=(), mined=None, on_mined=None):
        kill = os.environ.get(KILL, "")
        done = [0]

        def kept(doc_id, found):
            done[0] += 1
            moment, _, n = kill.partition(":")
            if n == str(done[0]) and moment == "mined":
                _die()
            if n == str(done[0]) and moment == "torn":
                from perspectrum.batch.map_files import units_line

                line = units_line(doc_id, texts[doc_id], found).encode()
                with open(os.environ[UNITS], "ab") as handle:
                    handle.write(line[:len(line) // 2])
                _die()
            if on_mined is not None:
                on_mined(doc_id, found)
            if n == str(done[0]) and moment == "written":
                _die()

        return map_pile(dict(texts), claim, WordScorers(), WordEncoder(),
                        Stance(threshold=0.5, margin=0.2, scale=1.0, unclear=0.0),
                        ClusterStage(weight=0.5, threshold=0.5), settings, skipped, mined, kept)


#: Texts of a tiny pile: zoo arguments on both sides, several documents making each.
TEXTS = [
    "Zoos protect endangered species from extinction. Many visitors enjoy a day out.",
    "Breeding programmes matter. Zoos protect endangered species through breeding.",
    "Animals suffer in captivity; their cages are far too small.",
    "Zoo animals suffer in small cages. Captivity is cruel.",
    "Zoos protect species. The weather was fine that day.",
    "Animals in zoos suffer from captivity and boredom.",
]


def write_pile(folder: Path) -> Path:
    """The tiny pile as text files in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for n, text in enumerate(TEXTS, 1):
        (folder / f"doc{n}.txt").write_text(text, encoding="utf-8")
    return folder


def run_cli(argv: list[str]) -> None:
    """`perspectrum map ARGV…` with the stand-in pipeline in place of the loaded one."""
    import perspectrum.cli.map as cli_map
    from perspectrum.cli.app import main

    cli_map.load_pipeline = lambda *a, **k: FakePipeline()
    sys.argv = ["perspectrum", "map", *argv]
    main()


if __name__ == "__main__":
    run_cli(sys.argv[1:])
