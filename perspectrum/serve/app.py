"""`perspectrum serve`: an HTTP API and a web page over one loaded pipeline.

One :class:`~perspectrum.pipeline.pipeline.Pipeline` answers every request. It loads on a thread
of its own as the server starts, so the port answers at once and ``GET /health`` says
``loading`` (503) until every index and model is in memory. Model work never runs on
the event loop: it goes to a bounded pool of threads (``workers``), and at most
``queue`` more requests may wait for one; past that a request is answered 503 with a
``Retry-After`` estimated from recent request times, instead of piling up.

Requests and responses are pydantic models, so ``/openapi.json`` and ``/docs`` are
generated from the code. ``/discover`` answers with exactly the JSON of ``discover
--json`` (:meth:`~perspectrum.pipeline.results.Discovery.to_dict`), and claims are refused by
the CLI's rules (:func:`~perspectrum.pipeline.pipeline.check_claim`).

Off loopback a bearer token is required (:func:`check_bind`): every request but
``/health`` must carry it, as an ``Authorization: Bearer`` header or as the cookie the
page's sign-in form sets (``POST /login``). Cross-origin requests are refused unless
origins are named.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import math
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from perspectrum.errors import PerspectrumError, missing_extra

try:  # the serve extra; without it `perspectrum serve` says so in one line (MissingExtra)
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
    from fastapi.staticfiles import StaticFiles
    from fastapi_offline import FastAPIOffline
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
    from pydantic import BaseModel, ConfigDict, Field, model_validator
    import uvicorn  # noqa: F401 - the CLI serves this app with it; checked here with the rest of the extra
except ModuleNotFoundError as exc:
    raise missing_extra("perspectrum serve", "serve", exc) from None

from perspectrum._version import __version__
from perspectrum.data import Dataset, Pool
from perspectrum.pipeline.pipeline import MAX_CLAIM_CHARS, STAGE_NAMES, ClaimError, Pipeline, check_claim
from perspectrum.index.search import MAX_QUERY_CHARS, HybridSearcher, check_query

#: Claims in one ``POST /discover`` (a batch runs as one ``discover_many`` call).
MAX_BATCH = 32
#: Largest request body read, in bytes: 32 claims of 1,000 characters with room to spare.
MAX_BODY_BYTES = 256 * 1024
#: Perspectives a request may ask for (``top``); what ``discover`` returns is far fewer.
MAX_TOP = 100
#: Name of the cookie the page's sign-in form sets (the token's SHA-256, never the token).
COOKIE = "perspectrum_session"
#: Shortest token accepted: a guessable one would make serving off loopback unsafe.
MIN_TOKEN_CHARS = 16
#: Where the page and its script and style live (package data).
WEB = Path(__file__).with_name("web")
#: Paths served without a token: the readiness probe and the sign-in that takes one.
OPEN_PATHS = frozenset({"/health", "/login"})


# ------------------------------------------------------------------ the API's shapes
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
    stance: Literal["support", "undermine"]
    support_probability: float
    stance_confidence: float = Field(description="0.5 at the dev-tuned threshold, 1.0 at 0 or 1")
    relevance: float
    phrasings: list[PhrasingOut]
    evidence: list[EvidenceOut]


class DiscoveryOut(BaseModel):
    """What ``discover --json`` prints (schema 1, in the README)."""

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
    system: str | None = Field(description="which models answer: trained, light, light + trained stance")
    version: str
    workers: int
    queue: int
    error: str | None = None


class Problem(BaseModel):
    detail: str = Field(description="what is wrong, in one line")


class Token(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: str = Field(max_length=1000)


# ------------------------------------------------------------------ serving settings
@dataclass(frozen=True)
class ServeSettings:
    """How the app serves; the CLI's options.

    Attributes:
        workers: threads that run model work (one loaded pipeline; each model's forward
            pass is locked, so more threads overlap stages, not passes).
        queue: requests that may wait for a worker before the next is answered 503.
        token: the bearer token every request but ``/health`` must carry (``None``: none).
        cors_origins: origins allowed to call the API from a browser (none by default).
        examples: claims the page offers to try (the dev split's, from the CLI).
    """

    workers: int = 2
    queue: int = 16
    token: str | None = None
    cors_origins: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.workers < 1 or self.queue < 0:
            raise PerspectrumError("--workers must be at least 1 and --queue at least 0")
        if self.token is not None and len(self.token) < MIN_TOKEN_CHARS:
            raise PerspectrumError(f"the token is {len(self.token)} characters long; use at least {MIN_TOKEN_CHARS} "
                                   "(`python -c 'import secrets; print(secrets.token_urlsafe())'` makes one)")


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve off loopback without a token: the API runs models for anyone who reaches it."""
    if not is_loopback(host) and token is None:
        raise PerspectrumError(f"serving on {host} (not loopback) needs --token or $PERSPECTRUM_TOKEN: "
                               "every request but /health must then carry it")


# ------------------------------------------------------------------ the moving parts
class Busy(Exception):
    """Every worker is busy and the queue is full."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(retry_after)
        self.retry_after = retry_after


class WorkPool:
    """Runs blocking model work on ``workers`` threads; refuses work past ``workers + queue``.

    The count of accepted requests lives on the event loop's thread, so it needs no lock.
    ``Retry-After`` is the time the requests ahead would take at the recent pace (a
    moving average of each request's run time), at least one second.
    """

    def __init__(self, workers: int, queue: int) -> None:
        self.workers = workers
        self.limit = workers + queue
        self.accepted = 0
        self.seconds = 1.0  # moving average of a request's run time
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="perspectrum-work")

    def retry_after(self) -> int:
        return max(1, math.ceil(self.seconds * self.accepted / self.workers))

    async def run(self, work: Callable[..., Any], *args: Any) -> Any:
        if self.accepted >= self.limit:
            raise Busy(self.retry_after())
        self.accepted += 1
        started = time.perf_counter()
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, work, *args)
        finally:
            self.accepted -= 1
            self.seconds = 0.8 * self.seconds + 0.2 * (time.perf_counter() - started)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


class Metrics:
    """The Prometheus series of one app (its own registry, so two apps never share counts)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("perspectrum_requests", "HTTP requests answered", ["method", "path", "status"],
                                registry=self.registry)
        self.latency = Histogram("perspectrum_request_seconds", "Time to answer an HTTP request", ["path"],
                                 buckets=(.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60),
                                 registry=self.registry)
        self.stages = Histogram("perspectrum_stage_seconds", "Time per pipeline stage per claim", ["stage"],
                                buckets=(.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5), registry=self.registry)
        self.rejected = Counter("perspectrum_rejected", "Requests answered 503 because every worker and "
                                "queue place was taken", registry=self.registry)
        self.accepted = Gauge("perspectrum_accepted_requests", "Requests running or waiting for a worker",
                              registry=self.registry)
        self.ready = Gauge("perspectrum_ready", "1 once every index and model is loaded", registry=self.registry)


@dataclass
class _Loader:
    """Loads the pipeline once, off the event loop, and opens search indexes on first use."""

    pipeline: Pipeline
    status: str = "loading"
    error: str | None = None
    system: str | None = None
    _pools: dict[str, tuple[Pool, dict[Any, str]]] = field(default_factory=dict)
    _indexes: dict[tuple[str, str], Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def load(self) -> None:
        try:
            self.pipeline.warm_up()
            self.system = self.pipeline.system
            self.status = "ready"
        except Exception as exc:  # noqa: BLE001 - any failure is reported by /health, not lost in a thread
            self.error = str(exc) if isinstance(exc, PerspectrumError) else f"{type(exc).__name__}: {exc}"
            self.status = "failed"

    def searcher(self, pool: str, method: str) -> tuple[Any, dict[Any, str]]:
        """The searcher of one pool and method, with the pool's texts by id. Indexes are
        opened once and never built here: a missing one is an error naming `perspectrum
        index build` (a build takes minutes; a request should not)."""
        with self._lock:
            if pool not in self._pools:
                pipe = self.pipeline
                docs = pipe.perspectives if pool == "perspectives" else pipe.evidence_pool
                if pool == "sentences":
                    docs = pipe.store.sentences(pipe.evidence_pool)
                self._pools[pool] = docs, dict(zip(docs.ids, docs.texts))
            docs, text = self._pools[pool]
            kinds = ("bm25", "dense") if method == "hybrid" else (method,)
            for kind in kinds:
                if (pool, kind) not in self._indexes:
                    self._indexes[pool, kind] = self.pipeline.store.open(docs, kind, build_missing=False)
            found = [self._indexes[pool, kind] for kind in kinds]
        return (HybridSearcher(*found) if method == "hybrid" else found[0]), text


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def _problem(status: int, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


def _one_line(exc: RequestValidationError) -> str:
    """A validation failure as one line: where, and what pydantic says is wrong."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
        message = str(error.get("msg", "")).removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts) or "the request is not valid"


class _BodyLimit:
    """Answers 413 to a request body over ``limit`` bytes before the app reads any of it
    (declared length), or as soon as a chunked body passes it."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: dict, receive: Callable[[], Awaitable[dict]], send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            return await self._refuse(scope, receive, send)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None  # the client left
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.limit:
                return await self._refuse(scope, receive, send)
            if not message.get("more_body", False):
                break
        sent = False

        async def replay() -> dict:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)

    async def _refuse(self, scope: dict, receive: Callable, send: Callable) -> None:
        response = _problem(413, f"the request body is over {self.limit:,} bytes")
        await response(scope, receive, send)


def create_app(pipeline: Pipeline, settings: ServeSettings = ServeSettings()) -> FastAPI:
    """The FastAPI app serving ``pipeline``; it starts loading when the app starts."""
    loader = _Loader(pipeline)
    metrics = Metrics()
    work = WorkPool(settings.workers, settings.queue)
    expected = None if settings.token is None else _digest(settings.token)

    # read when scraped, from the state they describe
    metrics.accepted.set_function(lambda: work.accepted)
    metrics.ready.set_function(lambda: 1 if loader.status == "ready" else 0)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> Any:
        threading.Thread(target=loader.load, name="perspectrum-load", daemon=True).start()
        yield
        work.close()

    # FastAPIOffline: /docs and /redoc from files in the package, not from a CDN
    app = FastAPIOffline(title="perspectrum", version=__version__, lifespan=lifespan,
                         description="Substantiated perspective discovery: the perspectives people take on a "
                                     "claim, clustered, stanced and backed by evidence.")
    app.state.loader = loader
    app.state.work = work

    def signed_in(request: Request) -> bool:
        if expected is None:
            return True
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and given and hmac.compare_digest(_digest(given.strip()), expected):
            return True
        cookie = request.cookies.get(COOKIE, "")
        return bool(cookie) and hmac.compare_digest(cookie.encode("ascii", "replace"), expected.hex().encode())

    @app.middleware("http")
    async def guard_and_count(request: Request, call_next: Callable) -> Response:
        started = time.perf_counter()
        if request.url.path not in OPEN_PATHS and not signed_in(request):
            if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
                response: Response = HTMLResponse((WEB / "signin.html").read_text(encoding="utf-8"), 401)
            else:
                response = _problem(401, "this server needs a bearer token: send `Authorization: Bearer <token>`",
                                    {"WWW-Authenticate": "Bearer"})
        else:
            response = await call_next(request)
        route = request.scope.get("route")
        path = getattr(route, "path", "other")
        metrics.requests.labels(request.method, path, str(response.status_code)).inc()
        metrics.latency.labels(path).observe(time.perf_counter() - started)
        return response

    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors_origins), allow_methods=["GET", "POST"],
                           allow_headers=["Authorization", "Content-Type"])
    app.add_middleware(_BodyLimit, limit=MAX_BODY_BYTES)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _problem(422, _one_line(exc))

    async def run(work_fn: Callable[..., Any], *args: Any) -> Any:
        """Model work off the loop, or the 503 that says why not now."""
        if loader.status != "ready":
            detail = ("the models are still loading; GET /health says when they are ready"
                      if loader.status == "loading" else f"the pipeline failed to load: {loader.error}")
            return _problem(503, detail, {"Retry-After": "5"})
        try:
            return await work.run(work_fn, *args)
        except Busy as busy:
            metrics.rejected.inc()
            return _problem(503, f"all {work.workers} workers are busy and {work.limit - work.workers} requests "
                                 "wait; retry later", {"Retry-After": str(busy.retry_after)})
        except PerspectrumError as exc:  # claims are checked before they get here: an index not built
            return _problem(503, str(exc))

    answers = {200: {}, 400: {"model": Problem, "description": "the body is not UTF-8 JSON"}, 401: {"model": Problem},
               413: {"model": Problem}, 422: {"model": Problem},
               503: {"model": Problem, "description": "loading, busy (see `Retry-After`), or an index not built"}}

    @app.post("/discover", response_model=DiscoveryOut | list[DiscoveryOut], responses=answers,
              summary="The perspectives on one claim (`claim`) or several (`claims`), as `discover --json`")
    async def discover(body: DiscoverRequest) -> Response:
        claims = [body.claim] if body.claims is None else body.claims
        texts = []
        for number, claim in enumerate(claims):
            try:
                texts.append(check_claim(claim))
            except ClaimError as exc:
                where = "claim" if body.claims is None else f"claims[{number}]"
                return _problem(422, f"{where}: {exc}")

        def answer() -> list[Any]:
            return pipeline.discover_many(texts, batch_size=MAX_BATCH, top=body.top, evidence=body.evidence,
                                          explain=body.explain)

        found = await run(answer)
        if isinstance(found, Response):
            return found
        for result in found:
            for stage in STAGE_NAMES:
                if stage in result.timings:
                    metrics.stages.labels(stage).observe(result.timings[stage])
        text = found[0].to_json(indent=None) if body.claims is None else \
            "[" + ",".join(r.to_json(indent=None) for r in found) + "]"
        return Response(text, media_type="application/json")

    @app.post("/search", response_model=list[HitOut], responses=answers,
              summary="Search one pool with BM25, dense or hybrid retrieval")
    async def search(body: SearchRequest) -> Any:
        try:
            query = check_query(body.query)
        except PerspectrumError as exc:
            return _problem(422, f"query: {exc}")

        def answer() -> list[dict[str, Any]]:
            searcher, text = loader.searcher(body.pool, body.method)
            return [{"id": h.doc_id, "score": h.score, "text": text[h.doc_id]} for h in searcher.search(query, body.k)]

        return await run(answer)

    @app.get("/health", response_model=Health, responses={503: {"model": Health, "description": "not ready"}},
             summary="Ready only when every index and model is loaded; which system answers")
    async def health() -> JSONResponse:
        state = Health(status=loader.status, system=loader.system, version=__version__, workers=work.workers,
                       queue=work.limit - work.workers, error=loader.error)
        return JSONResponse(state.model_dump(), status_code=200 if loader.status == "ready" else 503)

    @app.get("/metrics", summary="Request counts and latencies, per stage times (Prometheus text format)",
             response_class=Response)
    async def prometheus() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/examples", response_model=list[str], summary="Claims the page offers to try (dev split)")
    async def examples() -> list[str]:
        return list(settings.examples)

    @app.post("/login", status_code=204, response_class=Response,
              responses={400: answers[400], 401: {"model": Problem}, 422: {"model": Problem}},
              summary="The page's sign-in: a right token sets a session cookie (HttpOnly, SameSite=Strict)")
    async def login(body: Token) -> Response:
        if expected is None:
            return Response(status_code=204)
        if not hmac.compare_digest(_digest(body.token), expected):
            return _problem(401, "wrong token")
        response = Response(status_code=204)
        response.set_cookie(COOKIE, expected.hex(), httponly=True, samesite="strict", path="/")
        return response

    @app.get("/", response_class=FileResponse, include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(WEB / "index.html", headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=WEB), name="static")
    return app


def example_claims(dataset: Dataset, count: int = 8) -> tuple[str, ...]:
    """``count`` claims spread evenly over the dev split, for the page to offer (never test's)."""
    dev = dataset.split("dev")
    return tuple(claim.text for claim in dev[::max(1, len(dev) // count)][:count])
