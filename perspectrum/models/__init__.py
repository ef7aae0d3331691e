"""The judgements: cross-encoders and light heads behind one :class:`~perspectrum.models.scorers.Scorers`
surface, the evidence ranker, the rules that cut and cluster scores, and the models folder
(``store``) with its bundles. Nothing here trains or tunes (that is :mod:`perspectrum.train`)."""

from perspectrum.models.pair_scorer import PairScorer

__all__ = ["PairScorer"]
