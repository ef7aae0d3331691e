"""Training and tuning: fine-tuning the cross-encoders, fitting light heads and the evidence
ranker, and choosing every cut-off on dev. The runtime (everything below :mod:`perspectrum.eval`)
never imports this package."""

from perspectrum.train.prepare import prepare

__all__ = ["prepare"]
