"""Training and tuning: fine-tuning the cross-encoders, fitting the evidence ranker, choosing
every cut-off on dev, and packing the models small to ship them. The runtime (everything below :mod:`perspectrum.eval`)
never imports this package."""

from perspectrum.train.prepare import prepare

__all__ = ["prepare"]
