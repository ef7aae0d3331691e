"""One task's model on its own: score pairs without the pipeline, its pools or any index.

An application that has its own candidates (a search backend's hits, a moderation queue)
often needs one judgement, not a whole discovery: is this sentence on the claim's side? are
these two saying the same thing? :class:`PairScorer` loads the model that answers one task on
this machine — the user's fine-tuned cross-encoder in ``models/<task>/`` when there is one,
else the shipped one that ``perspectrum setup`` unpacked — and scores what it is given. ``perspectrum score TASK PAIRS.jsonl`` is the same from the command line.

==============  ====================================  ==========================================
task            items                                 score
==============  ====================================  ==========================================
``relevance``   ``(claim, perspective)``              P(the perspective is relevant to the claim)
``stance``      ``(claim, perspective)``              P(the perspective supports the claim)
``equivalence`` ``(claim, perspective, perspective)`` P(the two say the same thing about the claim)
==============  ====================================  ==========================================

The evidence task ranks paragraphs of the evidence pool against a claim's other clusters,
so it needs that pool's indexes: use :class:`perspectrum.Pipeline` for it.
"""

from __future__ import annotations

import reprlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum import folders
from perspectrum.errors import PerspectrumError
from perspectrum.models.scorers import fine_tuned, model_scores, stored_settings

#: How many texts each task's item holds.
ARITY = {"relevance": 2, "stance": 2, "equivalence": 3}


class PairScorer:
    """Scores (claim, perspective) pairs, or (claim, perspective, perspective) triples for
    equivalence, with the one model that answers ``task`` on this machine.

    Build it with :meth:`load`. ``kind`` says which model answers (``"trained"``: the
    user's own, or ``"shipped"``) and ``settings`` holds the cut-offs chosen on dev for its scores (for
    stance, ``threshold``: at or above it the perspective supports the claim).

    Example:
        >>> stance = PairScorer.load("stance")
        >>> p = stance.score([("Animals should have lawful rights", "Animals feel pain")])
        >>> p[0] >= stance.settings["threshold"]  # True: the perspective supports the claim
    """

    def __init__(self, task: str, answer: Any, kind: str, settings: dict[str, Any]) -> None:
        self.task = task
        self.kind = kind
        self.settings = settings
        self._answer = answer

    @classmethod
    def load(cls, task: str, models_dir: str | Path | None = None) -> PairScorer:
        """The model that answers ``task`` in ``models_dir`` (or ``$PERSPECTRUM_MODELS`` or
        ``./models``): the user's fine-tuned one, else the shipped one. Opens no index; a
        machine where the shipped models are not unpacked is a one-line error naming
        ``perspectrum setup``."""
        if task not in ARITY:
            hint = (" (evidence ranks the evidence pool's paragraphs through its indexes: use Pipeline)"
                    if task == "evidence" else "")
            raise PerspectrumError(f"cannot score task {task!r}: choose one of {', '.join(ARITY)}{hint}")
        from perspectrum.models.shipped import SETUP, current, unpacked
        from perspectrum.models.store import load_task, read_meta

        models = folders.models_dir(models_dir)
        home, kind = models, "trained"
        if task not in fine_tuned(models):
            problem = current(models)
            if problem is not None:
                raise PerspectrumError(f"no {task} model in {models} ({problem}): {SETUP}")
            home, kind = unpacked(models), "shipped"
        members = load_task(home, task)
        settings = stored_settings(home, task, read_meta(home, task))
        return cls(task, lambda items: model_scores(members, task, items), kind, settings)

    def score(self, items: Sequence[Sequence[str]]) -> np.ndarray:
        """One score in [0, 1] per item, in order (see the module's table for what each item holds)."""
        if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
            raise PerspectrumError(f"score takes a list of {self._shape()}, not {type(items).__name__}")
        checked = [check_item(item, self.task, n) for n, item in enumerate(items)]
        return np.asarray(self._answer(checked), dtype=np.float32).reshape(len(checked))

    def _shape(self) -> str:
        return "(claim, perspective, perspective) triples" if ARITY[self.task] == 3 else "(claim, perspective) pairs"


def check_item(item: Any, task: str, position: int) -> tuple[str, ...]:
    """``item`` as a tuple of texts, or a one-line error naming its ``position``."""
    wanted = ARITY[task]
    if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != wanted or \
            not all(isinstance(t, str) and t.strip() for t in item):
        shape = "claim, perspective, perspective" if wanted == 3 else "claim, perspective"
        raise PerspectrumError(f"item {position} must be {wanted} non-empty texts ({shape}) for {task}, "
                               f"not {reprlib.repr(item)}")
    return tuple(item)
