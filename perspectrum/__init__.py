"""perspectrum: substantiated perspective discovery.

Find the perspectives people take on a claim, group the equivalent ones, label each
as supporting or undermining, and back each with evidence paragraphs.
"""

from perspectrum.data import Dataset, Pool, load_dataset
from perspectrum.errors import PerspectrumError
from perspectrum._version import __version__
from perspectrum.index import BM25Index, DenseIndex, Hit, HybridSearcher, IndexStore
from perspectrum.pipeline import Discovery, Pipeline, PipelineConfig

__all__ = [
    "BM25Index",
    "Dataset",
    "DenseIndex",
    "Discovery",
    "Hit",
    "HybridSearcher",
    "IndexStore",
    "PerspectrumError",
    "Pipeline",
    "PipelineConfig",
    "Pool",
    "__version__",
    "load_dataset",
]
