"""The server's Prometheus series (``GET /metrics``): requests, their latency, the time each
pipeline stage takes per claim, requests refused as busy or left by their clients, and what
is running or loaded. Every answer is counted (:class:`Counted`), those refused before any
route runs too (400 for another ``Host``, 401, 408, 413)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from perspectrum.errors import missing_extra

try:  # the serve extra; without it `perspectrum serve` says so in one line (MissingExtra)
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
except ModuleNotFoundError as exc:
    raise missing_extra("perspectrum serve", "serve", exc) from None

from perspectrum.pipeline.pipeline import STAGE_NAMES
from perspectrum.pipeline.results import Discovery


class Metrics:
    """The Prometheus series of one app (its own registry, so two apps never share counts)."""

    #: The media type of :meth:`text`.
    content_type = CONTENT_TYPE_LATEST

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
        self.abandoned = Counter("perspectrum_abandoned", "Requests whose client left before their model work "
                                 "was done (the work cancelled, or stopped at its next document)",
                                 registry=self.registry)
        self.accepted = Gauge("perspectrum_accepted_requests", "Requests running or waiting for a worker",
                              registry=self.registry)
        self.ready = Gauge("perspectrum_ready", "1 once every index and model is loaded", registry=self.registry)

    def answered(self, method: str, path: str, status: int, seconds: float) -> None:
        """Count one answered request (``path``: its route's template) and its time."""
        self.requests.labels(method, path, str(status)).inc()
        self.latency.labels(path).observe(seconds)

    def stage_times(self, found: Iterable[Discovery]) -> None:
        """Record the seconds each pipeline stage took for each result."""
        for result in found:
            for stage in STAGE_NAMES:
                if stage in result.timings:
                    self.stages.labels(stage).observe(result.timings[stage])

    def text(self) -> bytes:
        """Every series, in Prometheus's text format."""
        return generate_latest(self.registry)


class Counted:
    """Counts every HTTP answer of ``app`` in ``metrics`` with its time, under its route's path;
    a request answered before it was routed (refused by a middleware) under its path if
    ``paths`` names it, else ``other``, so made-up paths cannot grow the series."""

    def __init__(self, app: Any, metrics: Metrics, paths: Callable[[], set[str]],
                 app_path: Callable[[dict], str]) -> None:
        self.app, self.metrics, self.paths, self.app_path = app, metrics, paths, app_path

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        status = 500  # what the server answers if the app fails before it starts a response

        async def noted(message: dict) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, noted)
        finally:
            route = getattr(scope.get("route"), "path", None)
            if route is None:
                path = self.app_path(scope)
                route = path if path in self.paths() else "other"
            self.metrics.answered(scope["method"], route, status, time.perf_counter() - started)
