"""The judgements: cross-encoders and the evidence ranker behind one
:class:`~perspectrum.models.scorers.Scorers` surface, the rules that cut and cluster scores, the
models folder (``store``) with its bundles, and the models that ship with perspectrum (``shipped``). Nothing here trains or tunes (that is :mod:`perspectrum.train`)."""

from perspectrum.models.pair_scorer import PairScorer

__all__ = ["PairScorer"]
