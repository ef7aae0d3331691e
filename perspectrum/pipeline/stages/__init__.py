"""The pipeline's stages, one job each, in the order :class:`perspectrum.Pipeline` runs them.

retrieve → relevance → stance → cluster → expand → evidence → verify. Each is a frozen
dataclass whose fields are its settings, declared in its own module with their types,
defaults and who chooses them (:mod:`perspectrum.pipeline.stages.base`), with
``run(states, context)`` added; a new stage is a new module here and one entry in
:data:`ORDER`.
"""

from perspectrum.pipeline.stages.base import Candidate, ClaimState, Context, Group, Member, Stage
from perspectrum.pipeline.stages.cluster import ClusterStage
from perspectrum.pipeline.stages.evidence import EvidenceStage
from perspectrum.pipeline.stages.expand import Expand
from perspectrum.pipeline.stages.relevance import Relevance
from perspectrum.pipeline.stages.retrieve import Retrieve
from perspectrum.pipeline.stages.stance import Stance
from perspectrum.pipeline.stages.verify import Verify

#: Every stage, in running order: the one list of them.
ORDER: tuple[type[Stage], ...] = (Retrieve, Relevance, Stance, ClusterStage, Expand, EvidenceStage, Verify)
#: Stages that need evidence (skipped by ``discover(..., evidence=False)``).
EVIDENCE_STAGES = ("evidence", "verify")

__all__ = ["ORDER", "EVIDENCE_STAGES", "Candidate", "ClaimState", "ClusterStage", "Context", "EvidenceStage",
           "Expand", "Group", "Member", "Relevance", "Retrieve", "Stage", "Stance", "Verify"]
