"""Who may use the server, and how much they may send.

Off loopback a bearer token is required (:func:`check_bind`): every request but those to
:data:`OPEN_PATHS` must carry it, as an ``Authorization: Bearer`` header or as the cookie
the page's sign-in form sets (``POST /login``, :meth:`TokenGuard.login`). The server keeps
only the token's SHA-256, and compares digests in constant time.

Requests must name this server in their ``Host`` header (:func:`host_patterns`): a page on
any site can make the browser send requests to a loopback server through DNS rebinding,
and only the ``Host`` header tells them apart. A request body over :data:`MAX_BODY_BYTES`
is refused before the app reads it (:class:`BodyLimit`).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from perspectrum.errors import PerspectrumError, missing_extra

try:  # the serve extra; without it `perspectrum serve` says so in one line (MissingExtra)
    from fastapi import Request
    from fastapi.responses import HTMLResponse, Response
except ModuleNotFoundError as exc:
    raise missing_extra("perspectrum serve", "serve", exc) from None

from perspectrum.serve.schemas import problem

#: Largest request body read, in bytes: 32 claims of 1,000 characters with room to spare.
MAX_BODY_BYTES = 256 * 1024
#: Name of the cookie the page's sign-in form sets (the token's SHA-256, never the token).
COOKIE = "perspectrum_session"
#: Paths served without a token: the readiness probe and the sign-in that takes one.
OPEN_PATHS = frozenset({"/health", "/login"})
#: Host names every server answers to, whatever address it is bound to.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


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


def host_patterns(hosts: Iterable[str]) -> list[str]:
    """``hosts`` as Starlette's ``TrustedHostMiddleware`` matches them: lower case, IPv6
    addresses in brackets (as the ``Host`` header writes them), ``*`` for any host and
    ``*.example.org`` for its subdomains; a host with a port or a bad wildcard is refused."""
    patterns = []
    for given in hosts:
        host = given.strip().lower()
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        wildcard = host == "*" or (host.startswith("*.") and "*" not in host[2:])
        if not host or ("*" in host and not wildcard) or "/" in host:
            raise PerspectrumError(f"--allowed-host {given!r} is not a host name, `*` or `*.example.org`")
        if ":" in host:
            try:
                host = f"[{ipaddress.IPv6Address(host)}]"
            except ValueError:
                raise PerspectrumError(f"--allowed-host {given!r}: give the host without a port") from None
        patterns.append(host)
    return patterns


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class TokenGuard:
    """The token check of one app (``token=None``: every request is let in).

    Args:
        token: the bearer token requests must carry, or ``None``.
        signin: the page a browser that is not signed in is shown instead (401).
    """

    def __init__(self, token: str | None, signin: Path) -> None:
        self.expected = None if token is None else _digest(token)
        self.signin = signin

    def lets_in(self, request: Request) -> bool:
        """Whether ``request`` goes to an open path or carries the token (header or cookie)."""
        if self.expected is None or request.url.path in OPEN_PATHS:
            return True
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and given and hmac.compare_digest(_digest(given.strip()), self.expected):
            return True
        cookie = request.cookies.get(COOKIE, "")
        return bool(cookie) and hmac.compare_digest(cookie.encode("ascii", "replace"), self.expected.hex().encode())

    def refusal(self, request: Request) -> Response:
        """The 401 of a request without the token: the sign-in page for a browser, else a problem."""
        if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
            return HTMLResponse(self.signin.read_text(encoding="utf-8"), 401)
        return problem(401, "this server needs a bearer token: send `Authorization: Bearer <token>`",
                       {"WWW-Authenticate": "Bearer"})

    def login(self, token: str) -> Response:
        """The answer to ``POST /login``: 204 with the session cookie (HttpOnly, SameSite=Strict)
        for the right token, 401 for a wrong one; 204 alone when the server needs none."""
        if self.expected is None:
            return Response(status_code=204)
        if not hmac.compare_digest(_digest(token), self.expected):
            return problem(401, "wrong token")
        response = Response(status_code=204)
        response.set_cookie(COOKIE, self.expected.hex(), httponly=True, samesite="strict", path="/")
        return response


class BodyLimit:
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
        response = problem(413, f"the request body is over {self.limit:,} bytes")
        await response(scope, receive, send)
