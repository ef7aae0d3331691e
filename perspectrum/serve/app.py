"""`perspectrum serve`: an HTTP API and a web page over one loaded pipeline.

One :class:`~perspectrum.pipeline.pipeline.Pipeline` answers every request. It loads on a thread
of its own as the server starts (:class:`~perspectrum.serve.loader.Loader`), so the port
answers at once and ``GET /health`` says ``loading`` (503) until every index and model is in
memory. Model work never runs on the event loop: it goes to a bounded pool of threads
(``workers``), and at most ``queue`` more requests may wait for one; past that a request is
answered 503 with a ``Retry-After`` estimated from recent request times, instead of piling
up (:class:`~perspectrum.serve.work.WorkPool`), and before its body is read. A client that
leaves gives its place back: work not started is dropped, and a map stops at its next document.

Requests and responses are pydantic models (:mod:`perspectrum.serve.schemas`), so
``/openapi.json`` and ``/docs`` are generated from the code. ``/discover`` answers with
exactly the JSON of ``discover --json`` (:meth:`~perspectrum.pipeline.results.Discovery.to_dict`),
and claims are refused by the CLI's rules (:func:`~perspectrum.pipeline.pipeline.check_claim`).
``/map`` answers with exactly the JSON of ``map --json``
(:meth:`~perspectrum.pipeline.map.PerspectiveMap.to_dict`) for a pile of documents sent in
the body, each checked as ``mine`` checks one (``encodings`` from what the sender says each file
was read in); ``/map`` (GET) is the page that sends them.

Off loopback a bearer token is required (:func:`~perspectrum.serve.guard.check_bind`): every
request but ``/health`` must carry it, as an ``Authorization: Bearer`` header or as the session
cookie the page's sign-in form gets (``POST /login``; :mod:`perspectrum.serve.guard`). Requests
must name this server in their ``Host`` header (DNS rebinding), every response carries security
headers (:mod:`perspectrum.serve.headers`), and cross-origin requests are refused unless origins
are named. ``X-Forwarded-For`` and ``X-Forwarded-Proto`` are believed only from the proxies
named (``trusted_proxies``). Request counts and times are Prometheus series
(:mod:`perspectrum.serve.prometheus`), refusals made before any route runs included.

This module builds the app and its routes; the names the CLI and the tests import from it
(:func:`check_bind`, :data:`COOKIE`, :data:`MAX_BATCH`, ...) are still importable from here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perspectrum.errors import PerspectrumError, missing_extra

try:  # the serve extra; without it `perspectrum serve` says so in one line (MissingExtra)
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import FileResponse, JSONResponse, Response
    from fastapi.staticfiles import StaticFiles
    from fastapi_offline import FastAPIOffline
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    import uvicorn  # noqa: F401 - the CLI serves this app with it; checked here with the rest of the extra
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware
except ModuleNotFoundError as exc:
    raise missing_extra("perspectrum serve", "serve", exc) from None

from perspectrum._version import __version__
from perspectrum.data import Dataset
from perspectrum.index.search import check_query
from perspectrum.pipeline.map import MapSettings
from perspectrum.pipeline.pipeline import ClaimError, Pipeline
from perspectrum.serve.guard import (
    BODY_LIMITS,
    BODY_SECONDS,
    COOKIE,
    LOOPBACK_HOSTS,
    MAX_BODY_BYTES,
    MAX_MAP_BODY_BYTES,
    SESSION_SECONDS,
    BodyLimit,
    Gate,
    TokenGuard,
    app_path,
    check_bind,
    host_patterns,
    trusted_proxies,
)
from perspectrum.serve.headers import SecurityHeaders, page_policy
from perspectrum.serve.loader import Loader
from perspectrum.serve.prometheus import Counted, Metrics
from perspectrum.serve.schemas import (
    MAX_BATCH,
    MAX_MAP_DOCUMENTS,
    DiscoverRequest,
    DiscoveryOut,
    Health,
    HitOut,
    MapOut,
    MapRequest,
    Problem,
    SearchRequest,
    Token,
    discoveries,
    one_line,
    problem,
)
from perspectrum.serve.work import Busy, Left, WorkPool
from perspectrum.text.document import DocumentError

# this module's own names, and those the CLI and the tests import from here
__all__ = ["COOKIE", "LOOPBACK_HOSTS", "MAX_BATCH", "MAX_BODY_BYTES", "MAX_MAP_BODY_BYTES", "MAX_MAP_DOCUMENTS",
           "MIN_TOKEN_CHARS", "WEB", "DiscoveryOut", "HitOut", "MapOut", "ServeSettings", "check_bind", "create_app",
           "example_claims"]

#: Shortest token accepted: a guessable one would make serving off loopback unsafe.
MIN_TOKEN_CHARS = 16
#: Where the page and its script and style live (package data).
WEB = Path(__file__).with_name("web")
#: The routes that run model work: refused 503 before their body is read while the pool is full.
MODEL_ROUTES = frozenset({"/discover", "/map", "/search"})


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
        allowed_hosts: the names a request's ``Host`` header may give (port aside; ``*``:
            any, behind a proxy that checks it); others get 400. The CLI adds the address
            it is bound to.
        body_seconds: how long a request body may take to arrive (then 408).
        trusted_proxies: the addresses or networks of the proxies whose ``X-Forwarded-For``
            (the client) and ``X-Forwarded-Proto`` (``https``: the session cookie is
            ``Secure``) are believed; from anyone else they are ignored (none by default).
    """

    workers: int = 2
    queue: int = 16
    token: str | None = None
    cors_origins: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS
    body_seconds: float = BODY_SECONDS
    trusted_proxies: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.workers < 1 or self.queue < 0:
            raise PerspectrumError("--workers must be at least 1 and --queue at least 0")
        if self.token is not None and len(self.token) < MIN_TOKEN_CHARS:
            raise PerspectrumError(f"the token is {len(self.token)} characters long; use at least {MIN_TOKEN_CHARS} "
                                   "(`python -c 'import secrets; print(secrets.token_urlsafe())'` makes one)")
        host_patterns(self.allowed_hosts)  # a bad --allowed-host is refused before anything loads
        trusted_proxies(self.trusted_proxies)  # and a bad --trusted-proxy


def create_app(pipeline: Pipeline, settings: ServeSettings = ServeSettings()) -> FastAPI:
    """The FastAPI app serving ``pipeline``; it starts loading when the app starts."""
    loader = Loader(pipeline)
    metrics = Metrics()
    work = WorkPool(settings.workers, settings.queue)
    guard = TokenGuard(settings.token, signin=WEB / "signin.html")

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
    app.state.guard = guard

    def busy() -> Response:
        metrics.rejected.inc()
        return problem(503, f"all {work.workers} workers are busy and {work.queue} requests wait; retry later",
                       {"Retry-After": str(work.retry_after())})

    def admit(request: Request) -> Response | None:
        """The token, then room in the pool for model work: both before the body is read."""
        refused = guard.check(request)
        if (refused is None and request.method == "POST" and app_path(request.scope) in MODEL_ROUTES
                and loader.status == "ready" and work.full()):
            return busy()
        return refused

    def routes() -> set[str]:
        return {route.path for route in app.routes if hasattr(route, "methods")}

    # Each added outside the last, so run in the reverse order: the proxy's headers read,
    # every answer counted, another Host refused, CORS, the token and the pool's room checked
    # (no body read yet), then the body read within its limits.
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES, seconds=settings.body_seconds, limits=BODY_LIMITS)
    app.add_middleware(Gate, check=admit)
    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors_origins), allow_methods=["GET", "POST"],
                           allow_headers=["Authorization", "Content-Type"])
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=host_patterns(settings.allowed_hosts), www_redirect=False)
    app.add_middleware(Counted, metrics=metrics, paths=routes, app_path=app_path)
    if settings.trusted_proxies:
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=trusted_proxies(settings.trusted_proxies))
    app.add_middleware(SecurityHeaders, policy=page_policy(guard.signin.read_text(encoding="utf-8")))

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return problem(422, one_line(exc))

    async def run(work_fn: Callable[..., Any], *args: Any, request: Request | None = None,
                  stop: threading.Event | None = None) -> Any:
        """Model work off the loop, or the 503 that says why not now. With ``request``, the
        work is dropped (or ``stop`` set, for work that checks it) if its client leaves."""
        unready = loader.unready()
        if unready is not None:
            return problem(503, unready, {"Retry-After": "5"})

        async def gone() -> None:  # the body is read: what the server receives next is the client leaving
            while (await request.receive())["type"] != "http.disconnect":  # type: ignore[union-attr]
                pass

        try:
            return await work.run(work_fn, *args, gone=None if request is None else gone, stop=stop)
        except Busy:
            return busy()
        except Left:
            metrics.abandoned.inc()
            return problem(499, "the client left before its answer was ready")
        except PerspectrumError as exc:  # claims are checked before they get here: an index not built
            return problem(503, str(exc))

    answers = {200: {}, 400: {"model": Problem, "description": "the body is not UTF-8 JSON"}, 401: {"model": Problem},
               408: {"model": Problem, "description": "the body came too slowly"},
               413: {"model": Problem}, 422: {"model": Problem}, 429: {"model": Problem},
               503: {"model": Problem, "description": "loading, busy (see `Retry-After`), or an index not built"}}

    @app.post("/discover", response_model=DiscoveryOut | list[DiscoveryOut], responses=answers,
              summary="The perspectives on one claim (`claim`) or several (`claims`), as `discover --json`")
    async def discover(body: DiscoverRequest, request: Request) -> Response:
        try:
            texts = body.checked_claims()
        except ClaimError as exc:
            return problem(422, str(exc))
        found = await run(lambda: pipeline.discover_many(texts, batch_size=MAX_BATCH, top=body.top,
                                                         evidence=body.evidence, explain=body.explain),
                          request=request)
        if isinstance(found, Response):
            return found
        metrics.stage_times(found)
        return discoveries(found, batch=body.claims is not None)

    @app.post("/map", response_model=MapOut, responses=answers,
              summary=f"The perspectives a pile of documents (at most {MAX_MAP_DOCUMENTS}, a body of at most "
                      f"{MAX_MAP_BODY_BYTES // 2**20} MiB) takes on a claim, as `map --json`")
    async def map_documents(body: MapRequest, request: Request) -> Response:
        try:
            claim, texts = body.checked()
        except (ClaimError, DocumentError) as exc:
            return problem(422, str(exc))
        stop = threading.Event()  # set when the client leaves: the map stops at its next document

        def stopped(_: str, __: Any) -> None:
            if stop.is_set():
                raise Left()

        found = await run(lambda: pipeline.map(texts, claim, MapSettings(min_documents=body.min_documents),
                                               on_mined=stopped), request=request, stop=stop)
        if isinstance(found, Response):
            return found
        found.encodings = body.encodings()  # as `map --json` names them
        return JSONResponse(found.to_dict())

    @app.post("/search", response_model=list[HitOut], responses=answers,
              summary="Search one pool with BM25, dense or hybrid retrieval")
    async def search(body: SearchRequest, request: Request) -> Any:
        try:
            query = check_query(body.query)
        except PerspectrumError as exc:
            return problem(422, f"query: {exc}")
        return await run(loader.search, query, body.pool, body.method, body.k, request=request)

    @app.get("/health", response_model=Health, responses={503: {"model": Health, "description": "not ready"}},
             summary="Ready only when every index and model is loaded; which system answers")
    async def health() -> JSONResponse:
        state = Health(status=loader.status, system=loader.system, version=__version__, workers=work.workers,
                       queue=work.queue, error=loader.error)
        return JSONResponse(state.model_dump(), status_code=200 if loader.status == "ready" else 503)

    @app.get("/metrics", summary="Request counts and latencies, per stage times (Prometheus text format)",
             response_class=Response)
    async def prometheus() -> Response:
        return Response(metrics.text(), media_type=metrics.content_type)

    @app.get("/examples", response_model=list[str], summary="Claims the page offers to try (dev split)")
    async def examples() -> list[str]:
        return list(settings.examples)

    @app.post("/login", status_code=204, response_class=Response,
              responses={400: answers[400], 401: {"model": Problem}, 422: {"model": Problem},
                         429: {"model": Problem, "description": "too many wrong tokens: wait `Retry-After` seconds"}},
              summary="The page's sign-in: a right token sets a session cookie (HttpOnly, SameSite=Strict; it "
                      f"ends after {SESSION_SECONDS // 3600} hours or when the server restarts)")
    async def login(body: Token, request: Request) -> Response:
        return guard.login(body.token, request)

    @app.get("/", response_class=FileResponse, include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(WEB / "index.html", headers={"Cache-Control": "no-cache"})

    @app.get("/map", response_class=FileResponse, include_in_schema=False)
    async def map_view() -> FileResponse:
        return FileResponse(WEB / "map.html", headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=WEB), name="static")
    return app


def example_claims(dataset: Dataset, count: int = 8) -> tuple[str, ...]:
    """``count`` claims spread evenly over the dev split, for the page to offer (never test's)."""
    dev = dataset.split("dev")
    return tuple(claim.text for claim in dev[::max(1, len(dev) // count)][:count])
