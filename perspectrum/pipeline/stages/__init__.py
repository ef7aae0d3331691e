"""The pipeline's stages, one job each, in the order :class:`perspectrum.Pipeline` runs them.

retrieve → relevance → stance → cluster → expand → evidence → verify. Each is the frozen
dataclass of its settings (:mod:`perspectrum.models.settings`, the one place they and
their defaults are written) with ``run(states, context)`` added; a new stage is a new
module here, its settings class there, and one entry in :data:`ORDER` and in
:data:`perspectrum.models.settings.SETTINGS`.
"""

from perspectrum.pipeline.stages.base import Candidate, ClaimState, Context, Group, Member, Stage, configure
from perspectrum.pipeline.stages.cluster import ClusterStage
from perspectrum.pipeline.stages.evidence import EvidenceStage
from perspectrum.pipeline.stages.expand import Expand
from perspectrum.pipeline.stages.relevance import Relevance
from perspectrum.pipeline.stages.retrieve import Retrieve
from perspectrum.pipeline.stages.stance import Stance
from perspectrum.pipeline.stages.verify import Verify

#: Every stage, in running order.
ORDER: tuple[type, ...] = (Retrieve, Relevance, Stance, ClusterStage, Expand, EvidenceStage, Verify)
#: Stages that need evidence (skipped by ``discover(..., evidence=False)``).
EVIDENCE_STAGES = ("evidence", "verify")

__all__ = ["ORDER", "EVIDENCE_STAGES", "Candidate", "ClaimState", "ClusterStage", "Context", "EvidenceStage",
           "Expand", "Group", "Member", "Relevance", "Retrieve", "Stage", "Stance", "Verify", "configure"]
