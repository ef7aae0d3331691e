"""What each task's model reads: the one place a model input is written.

Training (:mod:`perspectrum.train.examples`) and inference (:mod:`perspectrum.models.scorers`)
both call these, so the two can never drift apart.
"""

from __future__ import annotations

from perspectrum.encoders.cross_encoder import SEP, Pair


def claim_perspective_input(claim: str, perspective: str) -> Pair:
    """Relevance and stance read the claim, then the perspective."""
    return claim, perspective


def equivalence_input(claim: str, first: str, second: str) -> Pair:
    """Claim-conditioned equivalence, as in the paper: ``claim [SEP] p1`` against ``p2``."""
    return f"{claim} {SEP} {first}", second
