"""The HTTP API's shapes: its requests and responses as pydantic models, so ``/openapi.json``
and ``/docs`` are generated from the code, and the one-line problem every refusal answers with.

``/discover`` answers with exactly the JSON of ``discover --json``
(:meth:`~perspectrum.pipeline.results.Discovery.to_dict`; :class:`DiscoveryOut` documents it),
and claims are refused by the CLI's rules (:func:`~perspectrum.pipeline.pipeline.check_claim`).
``/map`` answers with exactly the JSON of ``map --json``
(:meth:`~perspectrum.pipeline.map.PerspectiveMap.to_dict`; :class:`MapOut` documents it),
and its documents are refused by the rules ``mine`` and ``map`` read a text by
(:func:`~perspectrum.text.document.check_document`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from perspectrum._progress import printable
from perspectrum.errors import missing_extra

try:  # the serve extra; without it `perspectrum serve` says so in one line (MissingExtra)
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response
    from pydantic import BaseModel, ConfigDict, Field, model_validator
except ModuleNotFoundError as exc:
    raise missing_extra("perspectrum serve", "serve", exc) from None

from perspectrum.index.search import MAX_QUERY_CHARS
from perspectrum.pipeline.pipeline import MAX_CLAIM_CHARS, ClaimError, check_claim
from perspectrum.pipeline.results import Discovery
from perspectrum.text.document import MAX_DOCUMENT_CHARS, DocumentError, check_document

#: Claims in one ``POST /discover`` (a batch runs as one ``discover_many`` call).
MAX_BATCH = 32
#: Perspectives a request may ask for (``top``); what ``discover`` returns is far fewer.
MAX_TOP = 100
#: Documents in one ``POST /map``: a pile pasted or picked in the page. Larger piles are the
#: CLI's (``perspectrum map``), which reads folders and JSONL and shows its progress.
MAX_MAP_DOCUMENTS = 200
#: Longest document id in ``POST /map`` (a file name, a respondent's number).
MAX_DOCUMENT_ID_CHARS = 200
#: The encodings a ``POST /map`` document may say it was read in: those ``perspectrum map``
#: reads files in (:data:`perspectrum.text.reading.ENCODINGS`).
Encoding = Literal["UTF-8", "UTF-16", "UTF-32", "Windows-1252"]


class DiscoverRequest(BaseModel):
    """One claim (``claim``) or a batch (``claims``), with the CLI's options."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "examples": [{"claim": "Animals should have lawful rights", "top": 5}]})

    # the length bounds are documented, not enforced here: check_claim refuses with the CLI's words
    claim: str | None = Field(None, description=f"One claim (at most {MAX_CLAIM_CHARS:,} characters, with words).",
                              json_schema_extra={"minLength": 1, "maxLength": MAX_CLAIM_CHARS})
    claims: list[str] | None = Field(None, min_length=1, max_length=MAX_BATCH,
                                     description=f"Several claims, answered in order (at most {MAX_BATCH}).")
    top: int | None = Field(None, ge=1, le=MAX_TOP, description="At most this many perspectives per claim.")
    evidence: bool = Field(True, description="Rank and highlight evidence (false is faster).")
    explain: bool = Field(False, description="Add every candidate's scores and the settings used (`trace`).")

    @model_validator(mode="after")
    def _one_of(self) -> DiscoverRequest:
        if (self.claim is None) == (self.claims is None):
            raise ValueError("give either `claim` or `claims`, not both or neither")
        return self

    def checked_claims(self) -> list[str]:
        """The claims as ``discover`` searches for them, or a :class:`ClaimError` that starts
        with the one refused (``claim``, or ``claims[i]``)."""
        claims = [self.claim] if self.claims is None else self.claims
        texts = []
        for number, claim in enumerate(claims):
            try:
                texts.append(check_claim(claim))
            except ClaimError as exc:
                where = "claim" if self.claims is None else f"claims[{number}]"
                raise ClaimError(f"{where}: {exc}") from None
        return texts


class MapDocument(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=MAX_DOCUMENT_ID_CHARS,
                    description="Names the document in the answer's quotes; unique within the request.")
    # the length bound is documented, not enforced here: check_document refuses with mine's words
    text: str = Field(description=f"The document (at most {MAX_DOCUMENT_CHARS:,} characters, with words); "
                                  "quotes' offsets index it as sent.",
                      json_schema_extra={"minLength": 1, "maxLength": MAX_DOCUMENT_CHARS})
    encoding: Encoding | None = Field(None, description="The encoding of the file the text was read from, when "
                                                        "the sender read one (the page says it for the files it "
                                                        "reads); one not UTF-8 is named in the answer's "
                                                        "`encodings`, as `map --json` names it.")


class MapRequest(BaseModel):
    """A claim and a pile of documents, with ``map``'s option."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "examples": [{"claim": "Animals should have lawful rights",
                      "documents": [{"id": "letter-1", "text": "Animals feel pain, so the law should protect them."},
                                    {"id": "letter-2", "text": "Rights come with duties that animals cannot bear."}]}]})

    claim: str = Field(description=f"The claim the documents argue about (at most {MAX_CLAIM_CHARS:,} characters).",
                       json_schema_extra={"minLength": 1, "maxLength": MAX_CLAIM_CHARS})
    documents: list[MapDocument] = Field(min_length=1, max_length=MAX_MAP_DOCUMENTS,
                                         description=f"The pile (at most {MAX_MAP_DOCUMENTS}).")
    min_documents: int = Field(2, ge=1, le=MAX_MAP_DOCUMENTS,
                               description="Perspectives fewer documents make are listed as `also_mentioned`.")

    def checked(self) -> tuple[str, dict[str, str]]:
        """The claim as ``map`` reads it and the documents by id, or the one-line reason one is
        refused: a :class:`ClaimError` (``claim: ...``), or a :class:`DocumentError` that starts
        with the document refused (``documents[i]: ...``)."""
        try:
            claim = check_claim(self.claim)
        except ClaimError as exc:
            raise ClaimError(f"claim: {exc}") from None
        texts: dict[str, str] = {}
        first: dict[str, int] = {}
        for number, document in enumerate(self.documents):
            if not document.id.strip():
                raise DocumentError(f"documents[{number}]: the id is blank")
            where = f"documents[{number}] ({printable(document.id, one_line=True)})"
            if document.id in first:
                raise DocumentError(f"{where}: the id is also documents[{first[document.id]}]'s; "
                                    "give each document its own")
            try:
                texts[document.id] = check_document(document.text)
            except DocumentError as exc:
                raise DocumentError(f"{where}: {exc}") from None
            first[document.id] = number
        return claim, texts

    def encodings(self) -> dict[str, str]:
        """The encoding of each document read from a file not in UTF-8, by id (the answer's
        ``encodings``, as ``map --json`` has them)."""
        return {d.id: d.encoding for d in self.documents if d.encoding is not None and d.encoding != "UTF-8"}


class QuoteOut(BaseModel):
    document: str = Field(description="the id of the document quoted")
    start: int = Field(description="character offset in the document's text: `text == documents[document][start:end]`")
    end: int
    text: str
    support_probability: float


class MappedPerspectiveOut(BaseModel):
    key_point: str = Field(description="the unit that names the perspective (also `quotes[0]`)")
    side: Literal["support", "undermine", "unclear"]
    confidence: float = Field(description="calibrated probability of the side shown (of support when unclear)")
    documents: int = Field(description="how many documents make it (a document that makes it twice counts once)")
    units: int
    share: float = Field(description="`documents` of the distinct documents read")
    quotes: list[QuoteOut]
    made_by: list[str] = Field(description="the ids of the documents that make it, in the quotes' order")


class SkippedOut(BaseModel):
    source: str
    why: str


class MapOut(BaseModel):
    """What ``map --json`` prints (docs/map.md)."""

    claim: str
    documents: int = Field(description="documents read")
    units: int = Field(description="argument units mined from them")
    skipped: list[SkippedOut] = Field(description="what could not be read (always empty here: a request with an "
                                                   "unreadable document is refused)")
    duplicates: dict[str, list[str]] = Field(description="near-copies (the same text pasted or templated): the first "
                                                         "document's id → its copies' ids; a copy is not mined and "
                                                         "never counts twice")
    perspectives: list[MappedPerspectiveOut] = Field(description="made by at least `min_documents` documents, "
                                                                 "most prevalent first")
    also_mentioned: list[MappedPerspectiveOut] = Field(description="made by fewer documents")
    settings: dict[str, Any]
    seconds: float
    encodings: dict[str, Encoding] | None = Field(None, description="document id → the encoding its file was read "
                                                                    "in, for each not in UTF-8; left out when all "
                                                                    "were")


class PhrasingOut(BaseModel):
    id: int | str
    text: str
    relevance: float
    support_probability: float | None = Field(description="null: a pool paraphrase added unread")


class EvidenceOut(BaseModel):
    id: int | str
    text: str
    probability: float
    window: str | None = Field(description="the 3-sentence window that states the perspective")
    window_score: float | None
    window_start: int | None = Field(description="character offset of the window in `text`")
    window_end: int | None


class PerspectiveOut(BaseModel):
    text: str
    id: int | str
    stance: Literal["support", "undermine", "unclear"] = Field(
        description="unclear: the calibrated P(support) is too close to 0.5 to show a side")
    support_probability: float = Field(description="the models' P(support) for the cluster")
    stance_confidence: float = Field(description="calibrated on dev: how likely the side it leans to is right (≥ 0.5)")
    relevance: float
    phrasings: list[PhrasingOut]
    evidence: list[EvidenceOut]
    support_calibrated: float = Field(description="P(support) calibrated on dev; ≥ 0.5 leans to support")


class DiscoveryOut(BaseModel):
    """What ``discover --json`` prints (schema 2, in docs/discover.md)."""

    model_config = ConfigDict(populate_by_name=True)

    schema_version: int = Field(alias="schema")
    claim: str
    system: str
    perspectives: list[PerspectiveOut]
    timings: dict[str, float]
    notice: str | None
    trace: dict[str, Any] | None = Field(None, description="only with `explain`")


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(description=f"What to search for (at most {MAX_QUERY_CHARS:,} characters).",
                       json_schema_extra={"minLength": 1, "maxLength": MAX_QUERY_CHARS})
    pool: Literal["perspectives", "evidence", "sentences"] = "perspectives"
    method: Literal["bm25", "dense", "hybrid"] = "hybrid"
    k: int = Field(10, ge=1, le=1000)


class HitOut(BaseModel):
    id: int | str
    score: float
    text: str


class Health(BaseModel):
    status: Literal["loading", "ready", "failed"]
    system: str | None = Field(description="which models answer: shipped, trained (your own), shipped + your stance")
    version: str
    workers: int
    queue: int
    error: str | None = None


class Problem(BaseModel):
    detail: str = Field(description="what is wrong, in one line")


class Token(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: str = Field(max_length=1000)


def discoveries(found: Sequence[Discovery], batch: bool) -> Response:
    """The answer to ``/discover``: one result's ``discover --json`` text, or a list of a batch's."""
    text = "[" + ",".join(r.to_json(indent=None) for r in found) + "]" if batch else found[0].to_json(indent=None)
    return Response(text, media_type="application/json")


def problem(status: int, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """A refusal: ``status`` with a :class:`Problem` body."""
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


def one_line(exc: RequestValidationError) -> str:
    """A validation failure as one line: where, and what pydantic says is wrong."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
        message = str(error.get("msg", "")).removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts) or "the request is not valid"
