"""Claim in, substantiated perspectives out: the discovery pipeline.

:class:`Pipeline` composes the stages of :mod:`perspectrum.pipeline.stages`, each batched over
every claim of a call (so :meth:`Pipeline.discover_many` makes one model call per stage
for a whole batch):

1. **retrieve** — hybrid (BM25 + dense, RRF) top-``candidates`` of the perspective pool.
2. **relevance** — the relevance model blended with the dense cosine, cut as tuned on
   dev, at most ``max_perspectives``; nothing under an absolute floor (an off-topic
   claim gets an empty answer and a notice).
3. **stance** — P(support) of every kept perspective.
4. **cluster** — equivalence model blended with cosine, average linkage, never joining
   perspectives of confidently opposite stance.
5. **expand** — each cluster's paraphrases from the pool (when tuned on).
6. **evidence** — the evidence ranker per cluster, against its siblings.
7. **verify** — the best 3-sentence window of each cluster's top paragraph.

Which models answer is decided once, lazily: a :class:`~perspectrum.models.scorers.Scorers`
handed in, else the models that ship with perspectrum, with any model the user trained or
installed in ``models/`` answering in its shipped namesake's place
(:mod:`perspectrum.models.shipped`). The pipeline never trains or tunes: a machine where the
shipped models are not unpacked (and the user's four are not there) is refused at once
(:class:`NotPrepared`) until ``perspectrum setup`` (:func:`perspectrum.train.prepare.prepare`)
has unpacked them.

Raw text is read by modules of its own over the same models: :mod:`perspectrum.pipeline.mine`
(argument units), :mod:`perspectrum.pipeline.match` (which arguments a text makes) and
:mod:`perspectrum.pipeline.map` (a pile of documents grouped into perspectives);
:meth:`Pipeline.mine`, :meth:`Pipeline.match` and :meth:`Pipeline.map` check their input and
call them with the loaded models and the dev-tuned settings.
"""

from __future__ import annotations

import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from perspectrum import folders
from perspectrum._checks import is_whole, whole
from perspectrum.data import Pool
from perspectrum.errors import PerspectrumError
from perspectrum.text.document import check_document
from perspectrum.index.store import DEFAULT_BACKEND, IndexStore
from perspectrum.text.matching import ArgumentMatch, MatchSettings, check_arguments
from perspectrum.text.mining import MinedUnit, MineSettings
from perspectrum.pipeline.results import (
    SCHEMA_VERSION,
    DiscoveredPerspective,
    Discovery,
    EvidenceHit,
    Phrasing,
    headed,
)
from perspectrum.models.scorers import Scorers
from perspectrum.pipeline.settings import check_settings, configure, stage_settings
from perspectrum.encoders.bi_encoder import Encoder
from perspectrum.index.dense import lend_vectors
from perspectrum.index.search import HybridSearcher
from perspectrum.pipeline.stages import (EVIDENCE_STAGES, ORDER, ClaimState, ClusterStage, Context, EvidenceStage,
                                         Retrieve, Stage, Stance, Verify)
from perspectrum.text.sentences import checked
from perspectrum.pipeline.map import MapSettings, PerspectiveMap, check_documents, map_pile, mined_in_batches
from perspectrum.pipeline.match import match_arguments
from perspectrum.pipeline.mine import mine

__all__ = ["SCHEMA_VERSION", "ClaimError", "DiscoveredPerspective", "Discovery", "EvidenceHit", "NotPrepared",
           "Phrasing", "Pipeline", "PipelineConfig", "check_claim", "check_prepared", "own_store"]

#: Longest claim accepted, in characters (claims in PERSPECTRUM are under 300).
MAX_CLAIM_CHARS = 1000
S = TypeVar("S", bound=Stage)
#: Stage names, in running order (the keys of settings, overrides and timings).
STAGE_NAMES = tuple(stage.name for stage in ORDER)


class ClaimError(PerspectrumError):
    """A claim that cannot be searched for (empty, too long, not text). The CLI exits 2."""


class NotPrepared(PerspectrumError):
    """No models to answer with: neither the user's four models nor this version's shipped
    models unpacked. ``perspectrum setup`` prepares the machine (the CLI's ``discover`` and ``serve``
    run it first, saying so). ``problem`` says what is missing, in a few words."""

    def __init__(self, problem: str) -> None:
        super().__init__(f"this machine is not prepared ({problem}); {SETUP_HINT}")
        self.problem = f"this machine is not prepared ({problem})"


#: How a machine gets its models, named in every :class:`NotPrepared` message.
SETUP_HINT = "run `perspectrum setup` (builds the indexes and unpacks the shipped models, once)"


def check_prepared(models_dir: str | Path) -> None:
    """Refuse, in one line naming ``perspectrum setup``, a models folder that cannot answer."""
    from perspectrum.models.shipped import unprepared

    problem = unprepared(models_dir)
    if problem is not None:
        raise NotPrepared(problem)


def check_claim(claim: Any) -> str:
    """The claim, stripped, or a :class:`ClaimError` saying what is wrong with it."""
    if not isinstance(claim, str):
        raise ClaimError(f"a claim must be text, not {type(claim).__name__}")
    text = checked(claim, "claim", MAX_CLAIM_CHARS, ClaimError)
    if any(unicodedata.category(ch) == "Cc" and not ch.isspace() for ch in text):
        raise ClaimError("the claim contains control characters; is it binary data?")
    if not any(ch.isalpha() for ch in text):
        raise ClaimError("the claim has no words in it")
    return " ".join(text.split())


@dataclass(frozen=True)
class PipelineConfig:
    """The structural settings, and per-stage changes to the dev-tuned ones.

    Cut-offs default to the values tuned on dev for the loaded models and stored beside
    them (``models/<task>/perspectrum.json`` and ``models/pipeline.json``, or the shipped
    models' own); ``overrides`` changes any stage's setting by name, e.g.
    ``{"relevance": {"threshold": 0.8}, "expand": {"neighbours": 0}}``. Unknown stages,
    unknown keys and values of the wrong type are one-line errors, here. Every setting,
    its type and its default is declared by its stage (:mod:`perspectrum.pipeline.stages`).

    Attributes:
        candidates: perspectives retrieved per claim and read by the relevance model.
        max_perspectives: at most this many kept per claim, whatever the relevance cut
            allows (clustering reads every pair among them).
        evidence_depth: paragraphs retrieved per cluster for the evidence ranker (20,
            the depth it was trained at).
        verify_top: kept paragraphs per cluster whose windows the window verifier reads.
        overrides: per-stage changes, keyed by stage name (:data:`STAGE_NAMES`).
    """

    candidates: int = Retrieve.candidates
    max_perspectives: int = 30
    evidence_depth: int = EvidenceStage.depth
    verify_top: int = Verify.top
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        numbers = (self.candidates, self.max_perspectives, self.evidence_depth, self.verify_top)
        if not all(is_whole(n) for n in numbers):
            raise PerspectrumError("candidates, max_perspectives, evidence_depth and verify_top must be whole numbers")
        if min(self.candidates, self.max_perspectives, self.evidence_depth) < 1 or self.verify_top < 0:
            raise PerspectrumError("candidates, max_perspectives and evidence_depth must be ≥ 1, verify_top ≥ 0")
        check_settings(self.overrides, "overrides")

    def settings(self, scorers: Scorers) -> dict[str, dict[str, Any]]:
        """Every stage's settings with these models: what was tuned on dev for them
        (``scorers.settings``, each value checked against its stage and, in an error, named
        by its file), the structural ones, then the overrides
        (:func:`~perspectrum.pipeline.settings.stage_settings`); the relevance cap is never
        above ``max_perspectives``."""
        structural = {"retrieve": {"candidates": self.candidates}, "evidence": {"depth": self.evidence_depth},
                      "verify": {"top": self.verify_top}}
        return stage_settings(scorers.settings, getattr(scorers, "sources", {}), structural, self.overrides,
                              self.max_perspectives)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "overrides": {k: dict(v) for k, v in self.overrides.items()}}


@dataclass(frozen=True)
class _Ready:
    """What the first call loads: the stages (with their settings) and what they read."""

    stages: tuple[Stage, ...]
    context: Context
    settings: dict[str, dict[str, Any]]

    def stage(self, kind: type[S]) -> S:
        """The configured stage of type ``kind`` (its settings, typed)."""
        return next(stage for stage in self.stages if isinstance(stage, kind))


class Pipeline:
    """Discovers the perspectives on a claim, clustered, stanced and backed by evidence.

    Build one with :meth:`load` (PERSPECTRUM's pools) or :meth:`from_pools` (your own).
    Nothing heavy happens until the first call (or :meth:`warm_up`): indexes are opened
    (built if missing) and models loaded once, under a lock, so one pipeline serves
    concurrent calls from many threads. ``scorers`` replaces the models with any object
    of the :class:`~perspectrum.models.scorers.Scorers` protocol (the fine-tuned set, or your own).

    Example:
        >>> pipe = Pipeline.load()
        >>> found = pipe.discover("Animals should have lawful rights")
        >>> [p.text for p in found.supporting][:2]
    """

    def __init__(self, perspectives: Pool, evidence: Pool, store: IndexStore, models_dir: str | Path | None = None,
                 config: PipelineConfig | None = None, data_dir: str | Path | None = None,
                 show_progress: bool = False, scorers: Scorers | None = None) -> None:
        self.perspectives = perspectives
        self.evidence_pool = evidence
        self.store = store
        self.models_dir = folders.models_dir(models_dir)
        self.config = config or PipelineConfig()
        self.data_dir = data_dir
        self.show_progress = show_progress
        self._scorers_given = scorers
        self._lock = threading.Lock()
        self._ready: _Ready | None = None

    @classmethod
    def load(cls, data_dir: str | Path | None = None, index_dir: str | Path | None = None,
             models_dir: str | Path | None = None, config: PipelineConfig | None = None, verify: bool = True,
             show_progress: bool = False, scorers: Scorers | None = None, backend: str = DEFAULT_BACKEND,
             milvus_uri: str | None = None) -> Pipeline:
        """A pipeline over PERSPECTRUM's perspective and evidence pools (read from
        ``data_dir`` or ``$PERSPECTRUM_DATA``, checksums verified unless ``verify=False``).

        Folders resolve as the CLI's do: ``index_dir`` or ``$PERSPECTRUM_INDEXES`` or
        ``./indexes``; ``models_dir`` or ``$PERSPECTRUM_MODELS`` or ``./models``.
        ``backend`` picks the search engines (:data:`perspectrum.index.store.BACKENDS`); models
        trained with one backend's indexes serve with any other's. Without ``scorers``, a
        machine whose models cannot answer (the shipped ones not unpacked) is refused
        at once with :class:`NotPrepared`, naming ``perspectrum setup``.
        """
        from perspectrum.data import load_dataset

        if scorers is None:
            check_prepared(folders.models_dir(models_dir))
        dataset = load_dataset(data_dir, verify=verify)
        store = IndexStore(folders.index_dir(index_dir), backend=backend, milvus_uri=milvus_uri)
        return cls(Pool.from_dataset(dataset, "perspectives"), Pool.from_dataset(dataset, "evidence"),
                   store, models_dir, config, data_dir, show_progress, scorers=scorers)

    @classmethod
    def from_pools(cls, perspectives: Pool | str | Path, evidence: Pool | str | Path,
                   index_dir: str | Path | None = None, models_dir: str | Path | None = None,
                   config: PipelineConfig | None = None, data_dir: str | Path | None = None,
                   show_progress: bool = False, scorers: Scorers | None = None, backend: str = DEFAULT_BACKEND,
                   milvus_uri: str | None = None) -> Pipeline:
        """A pipeline over your own sentences and paragraphs (pools or JSONL files of
        ``{"id", "text"}``), searched by ``backend``'s engines.

        Their indexes live under ``<index_dir>/own/<key>/``, one folder per pair of pool
        files (or, for pools given as objects, of pool contents), so they never replace
        PERSPECTRUM's; ``perspectrum pool add|remove`` updates them in place, and a missing one is
        built on first use. The models are the ones trained on PERSPECTRUM (shipped, or your own).
        """
        if scorers is None:
            check_prepared(folders.models_dir(models_dir))
        pools = [p if isinstance(p, Pool) else Pool.from_jsonl(p, name)
                 for p, name in ((perspectives, "perspectives"), (evidence, "evidence"))]
        pools = [Pool(name, p.ids, p.texts) for p, name in zip(pools, ("perspectives", "evidence"))]
        store = IndexStore(folders.index_dir(index_dir), backend=backend, milvus_uri=milvus_uri)
        files = None if isinstance(perspectives, Pool) or isinstance(evidence, Pool) else \
            (Path(perspectives).expanduser(), Path(evidence).expanduser())
        return cls(*pools, own_store(store, *pools, files), models_dir, config, data_dir, show_progress,
                   scorers=scorers)

    # --------------------------------------------------------------- loading
    def _scorers(self) -> Scorers:
        from perspectrum.models.shipped import open_scorers

        if self._scorers_given is not None:
            return self._scorers_given
        check_prepared(self.models_dir)
        return open_scorers(self.models_dir, self.store, self.evidence_pool)

    def _get(self) -> _Ready:
        with self._lock:
            if self._ready is None:
                bm25 = self.store.open(self.perspectives, "bm25", show_progress=self.show_progress)
                dense = self.store.open(self.perspectives, "dense", show_progress=self.show_progress)
                lend_vectors(dense, self.perspectives)
                scorers = self._scorers()
                settings = self.config.settings(scorers)
                stages = tuple(configure(stage, settings[stage.name]) for stage in ORDER)
                context = Context(scorers, HybridSearcher(bm25, dense), dense,
                                  dict(zip(self.perspectives.ids, self.perspectives.texts)),
                                  dict(zip(self.evidence_pool.ids, self.evidence_pool.texts)),
                                  next(stage for stage in stages if isinstance(stage, Stance)))
                self._ready = _Ready(stages, context, settings)
            return self._ready

    def warm_up(self) -> None:
        """Open every index and load every model now, not on the first call (for servers)."""
        ready = self._get()
        ready.context.dense.encoder.encode(["warm up"])
        if hasattr(ready.context.scorers, "load_all"):
            ready.context.scorers.load_all()

    @property
    def system(self) -> str:
        """``"shipped"``, ``"trained"`` or your scorers' ``kind``: which models answer (loads them if needed)."""
        return self._get().context.scorers.kind

    @property
    def scorers(self) -> Scorers:
        """The models that answer (loads them if needed)."""
        return self._get().context.scorers

    def _encoder(self) -> Encoder:
        """The sentence encoder behind the dense index (loads it if needed)."""
        return self._get().context.dense.encoder

    def with_config(self, config: PipelineConfig, scorers: Scorers | None = None) -> Pipeline:
        """A pipeline over the same pools and indexes with other settings (and, optionally,
        other scorers); this one's loaded models are shared unless ``scorers`` is given."""
        return Pipeline(self.perspectives, self.evidence_pool, self.store, self.models_dir, config, self.data_dir,
                        self.show_progress, scorers if scorers is not None else self.scorers)

    def stage(self, kind: type[S]) -> S:
        """The stage of type ``kind`` as this pipeline runs it: its settings, typed, e.g.
        ``pipe.stage(Stance).threshold`` (loads the models if needed)."""
        return self._get().stage(kind)

    @property
    def settings(self) -> dict[str, dict[str, Any]]:
        """Every stage's settings in use: dev-tuned, with the config's overrides."""
        return self._get().settings

    # --------------------------------------------------------------- discovery
    def discover(self, claim: str, top: int | None = None, evidence: bool = True,
                 explain: bool = False) -> Discovery:
        """The perspectives on ``claim``: clustered, stanced and (unless ``evidence=False``)
        backed by evidence, most relevant first; at most ``top`` clusters."""
        return self.discover_many([claim], top=top, evidence=evidence, explain=explain)[0]

    def discover_many(self, claims: Sequence[str], batch_size: int = 16, top: int | None = None,
                      evidence: bool = True, explain: bool = False) -> list[Discovery]:
        """:meth:`discover` for many claims, each model called once per stage per batch.

        Results are in input order. Every claim is checked before any work starts, so
        one bad claim fails the call without wasting the others' time.
        """
        if isinstance(claims, str) or not isinstance(claims, Iterable):
            raise ClaimError(f"discover_many takes a list of claims, not {type(claims).__name__}")
        batch_size = whole("batch_size", batch_size)
        top = None if top is None else whole("top", top)
        texts = [check_claim(c) for c in claims]
        out: list[Discovery] = []
        for start in range(0, len(texts), batch_size):
            out += self._batch(texts[start:start + batch_size], top, evidence, explain)
        return out

    # --------------------------------------------------------------- raw text
    def mine(self, text: str, claim: str, settings: MineSettings | None = None) -> list[MinedUnit]:
        """The argument units of ``text`` (an essay, a web page's text, a transcript) for
        ``claim``: spans with character offsets into ``text``, possibly shorter than a
        sentence, each with a stance and a score, in text order; non-argumentative text is
        left out (:func:`perspectrum.pipeline.mine.mine`, with this pipeline's models and stance
        cut). ``settings`` default to the dev-tuned ones."""
        text, claim = check_document(text), check_claim(claim)
        return mine(text, claim, self.scorers, self._encoder(), self.stage(Stance).threshold,
                    settings or MineSettings())

    def mine_pile(self, texts: Sequence[str], claim: str) -> list[list[MinedUnit]]:
        """Each of ``texts``' argument units for ``claim``, as :meth:`map` mines a pile:
        :func:`perspectrum.pipeline.map.mined_in_batches`. Texts and claim are expected checked."""
        return [units for found in mined_in_batches(list(texts), claim, self.scorers, self._encoder(),
                                                    self.stage(Stance).threshold) for units in found]

    def map(self, documents: Mapping[str, str] | Sequence[str], claim: str, settings: MapSettings | None = None,
            skipped: Sequence[Any] = (), mined: Mapping[str, Sequence[MinedUnit]] | None = None,
            on_mined: Callable[[str, list[MinedUnit]], None] | None = None) -> PerspectiveMap:
        """The perspectives a pile of ``documents`` takes on ``claim``
        (:func:`perspectrum.pipeline.map.map_pile`, with this pipeline's models and its stance
        and clustering settings): every document's argument units grouped across documents,
        each perspective named by its key point, counted (documents, units, share), stanced and
        quoted with document ids and character offsets. ``documents`` maps ids to texts (a list
        of texts is numbered from 1); every text is checked before any work starts. ``skipped``
        (what a reader could not read, :class:`perspectrum.text.reading.Skipped`) is carried
        into the answer.

        ``mined`` holds units already mined for some documents (by id: a resumed run's, or
        another machine's); those documents are not mined again. ``on_mined(id, units)`` is
        called as each other document's units are ready (a run that keeps them to resume)."""
        started = time.perf_counter()
        claim = check_claim(claim)
        texts = check_documents(documents)
        found = map_pile(texts, claim, self.scorers, self._encoder(), self.stage(Stance), self.stage(ClusterStage),
                         settings, skipped, mined, on_mined, self.show_progress)
        found.seconds = time.perf_counter() - started  # the whole call, loading the models included
        return found

    def match(self, text: str | Sequence[str], claim: str | None = None, arguments: Sequence[str] | None = None,
              settings: MatchSettings | None = None) -> list[ArgumentMatch] | list[list[ArgumentMatch]]:
        """Which ``arguments`` ``text`` makes, in the order given, each with its best
        sentence (:func:`perspectrum.pipeline.match.match_arguments`, with this pipeline's
        encoder). Without ``arguments``, the claim's perspectives as :meth:`discover` finds them
        (each cluster's first phrasing); with them, no claim is needed. ``text`` may be a list
        of texts: the answer is then one list per text, every text checked before any work starts."""
        many = not isinstance(text, str)
        if many and (isinstance(text, bytes) or not isinstance(text, Iterable)):
            raise PerspectrumError(f"match takes a text or a list of texts, not {type(text).__name__}")
        texts = [check_document(t) for t in (text if many else [text])]
        if arguments is None:
            if claim is None:
                raise PerspectrumError("give the arguments to look for, or a claim whose perspectives are the arguments")
            arguments = [found.text for found in self.discover(check_claim(claim), evidence=False).perspectives]
            if not arguments:
                raise PerspectrumError("no perspectives were found for the claim to match against; "
                                       "give the arguments to look for")
        elif claim is not None:
            check_claim(claim)
        arguments, encoder = check_arguments(arguments), self._encoder()
        found = [match_arguments(t, arguments, encoder, settings or MatchSettings()) for t in texts]
        return found if many else found[0]

    def run_stages(self, claims: Sequence[str], until: str = STAGE_NAMES[-1]) -> list[ClaimState]:
        """Every claim's state after the stages up to and including ``until``, unrounded
        (what :meth:`discover` builds its results from; for tuning and inspection)."""
        if until not in STAGE_NAMES:
            raise PerspectrumError(f"unknown stage {until!r} (stages: {', '.join(STAGE_NAMES)})")
        states = [ClaimState(check_claim(c)) for c in claims]
        self.advance(states, STAGE_NAMES[:STAGE_NAMES.index(until) + 1])
        return states

    def advance(self, states: list[ClaimState], names: Sequence[str]) -> dict[str, float]:
        """Run the stages named in ``names`` (in running order) on ``states``; seconds per stage.

        :meth:`discover_many` is this over every stage, then :meth:`discovery` for each claim.
        Every stage reads only its claims' states, so an engine that runs a batch's stages in
        different processes, a group of stages each (:mod:`perspectrum.batch.ray_engine`),
        gets the results :meth:`discover_many` returns.
        """
        unknown = [name for name in names if name not in STAGE_NAMES]
        if unknown:
            raise PerspectrumError(f"unknown stage(s) {', '.join(map(repr, unknown))} "
                                   f"(stages: {', '.join(STAGE_NAMES)})")
        ready = self._get()
        timings: dict[str, float] = {}
        for stage in ready.stages:
            if stage.name in names:
                started = time.perf_counter()
                stage.run(states, ready.context)
                timings[stage.name] = time.perf_counter() - started
        return timings

    def discovery(self, state: ClaimState, timings: dict[str, float], top: int | None = None,
                  evidence: bool = True, explain: bool = False) -> Discovery:
        """What :meth:`discover` returns for a claim whose stages have run (by :meth:`advance`),
        with ``timings`` as its seconds per stage."""
        return self._result(state, self._get(), timings, top, evidence, explain)

    def _batch(self, claims: list[str], top: int | None, with_evidence: bool, explain: bool) -> list[Discovery]:
        states = [ClaimState(c) for c in claims]
        timings = self.advance(states, [n for n in STAGE_NAMES if with_evidence or n not in EVIDENCE_STAGES])
        timings["total"] = sum(timings.values())
        share = {k: round(v / len(claims), 4) for k, v in timings.items()}
        return [self.discovery(s, share, top, with_evidence, explain) for s in states]

    def _result(self, state: ClaimState, ready: _Ready, timings: dict[str, float], top: int | None,
                with_evidence: bool, explain: bool) -> Discovery:
        stance = ready.stage(Stance)
        text = ready.context.perspective_text
        found = []
        for group in state.groups:
            phrasings = tuple(Phrasing(m.id, text[m.id], round(m.relevance, 4),
                                       None if m.support is None else round(m.support, 4))
                              for m in (state.kept[i] for i in group.members))
            p = group.support
            q = stance.confidence(p)
            phrasings, shown = headed(phrasings, q, stance.unclear)
            found.append(DiscoveredPerspective(
                text=phrasings[0].text, id=phrasings[0].id, stance=shown,
                support_probability=round(p, 4), stance_confidence=round(max(q, 1.0 - q), 4),
                relevance=phrasings[0].relevance, phrasings=phrasings,
                evidence=tuple(group.evidence) if with_evidence else (), support_calibrated=round(q, 4)))
        found.sort(key=lambda f: -f.relevance)
        trace = None
        if explain:
            kept = {m.id for m in state.kept if not m.added}
            trace = {"settings": {k: dict(v) for k, v in ready.settings.items()}, "config": self.config.to_dict(),
                     "candidates": [{"id": c.id, "model": round(c.model, 4), "cosine": round(c.cosine, 4),
                                     "score": round(c.score, 4), "kept": c.id in kept} for c in state.candidates],
                     "pairs": state.pairs,
                     "evidence": [{"perspective": state.kept[g.members[0]].id, "id": hit.id,
                                   "probability": hit.probability, "rival": g.rivals.get(hit.id)}
                                  for g in state.groups for hit in g.evidence]}
        return Discovery(state.claim, ready.context.scorers.kind, tuple(found[:top] if top else found), timings,
                         trace, state.notice)


def own_store(store: IndexStore, perspectives: Pool, evidence: Pool,
              files: tuple[Path, Path] | None = None) -> IndexStore:
    """Where the indexes of a pair of own pools live, with ``store``'s settings and backend:
    ``<store root>/own/<key>/``, the key made from the two pool ``files`` when they are
    known (so an edited file's indexes are updated or rebuilt in place, and
    :mod:`perspectrum.index.pools` can find them), else from the two pools' contents."""
    import hashlib

    from perspectrum.index.pools import record_files

    named = f"files:{files[0].resolve()}\n{files[1].resolve()}" if files else \
        f"{perspectives.fingerprint}:{evidence.fingerprint}"
    own = store.like(store.root / "own" / hashlib.sha256(named.encode()).hexdigest()[:16])
    if files:
        record_files(own.root, *files)
    return own
