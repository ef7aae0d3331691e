"""Claim in, substantiated perspectives out: :class:`Pipeline`, its stages and its results."""

from perspectrum.pipeline.pipeline import Pipeline, PipelineConfig
from perspectrum.pipeline.results import Discovery

__all__ = ["Discovery", "Pipeline", "PipelineConfig"]
