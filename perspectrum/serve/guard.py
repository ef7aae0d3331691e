"""Who may use the server, and how much they may send.

Off loopback a bearer token is required (:func:`check_bind`): every request but those to
:data:`OPEN_PATHS` must carry it, as an ``Authorization: Bearer`` header or as the session
cookie the page's sign-in form gets (``POST /login``, :meth:`TokenGuard.login`). The server
keeps only the token's SHA-256 and compares digests in constant time. The cookie is not the
token nor anything derived from it alone: it is an expiry time signed with a key made when
the process starts (:data:`SESSION_SECONDS`), so it ends by itself, a restart ends every
session, and it cannot be computed from the token. A client that sends wrong tokens is
slowed down (:class:`Throttle`: 429 after :data:`TRIES` in :data:`TRY_WINDOW` seconds). The
token is checked before a request's body is read (:class:`Gate`), so a client without it
cannot make the server hold its body. The cookie is ``Secure`` when the request came over
TLS, or through a proxy named with ``--trusted-proxy`` that says so (``X-Forwarded-Proto``);
``X-Forwarded-For`` too is believed from those proxies only (:func:`trusted_proxies`), so a
client cannot dodge the throttle by writing a new address into it.

Requests must name this server in their ``Host`` header (:func:`host_patterns`): a page on
any site can make the browser send requests to a loopback server through DNS rebinding,
and only the ``Host`` header tells them apart. A request body over :data:`MAX_BODY_BYTES`
(:data:`MAX_MAP_BODY_BYTES` for ``POST /map``), or one that takes longer than its deadline
to arrive, is refused before the app reads it (:class:`BodyLimit`).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import math
import secrets
import time
from collections import OrderedDict, deque
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
#: Largest body of ``POST /map``, in bytes: a pile of documents. 50 op-eds of 1,000 words
#: (about 6,000 characters each) are 300 KB, over :data:`MAX_BODY_BYTES`; 2 MiB holds them
#: seven times over, or one document of the longest a document may be (300,000 characters).
MAX_MAP_BODY_BYTES = 2 * 1024 * 1024
#: Paths whose body may be larger than :data:`MAX_BODY_BYTES`, and how large.
BODY_LIMITS = {"/map": MAX_MAP_BODY_BYTES}
#: Seconds the whole request body may take to arrive once its head is in (then 408): a slow
#: client must not hold a connection and a body buffer for as long as it likes.
BODY_SECONDS = 30.0
#: Name of the session cookie the page's sign-in form gets (a signed expiry time, never the token).
COOKIE = "perspectrum_session"
#: How long a sign-in lasts, in seconds; then the page asks for the token again.
SESSION_SECONDS = 12 * 3600
#: Wrong tokens a client may send within :data:`TRY_WINDOW` seconds before it is answered 429.
TRIES = 5
TRY_WINDOW = 60.0
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


def trusted_proxies(proxies: Iterable[str]) -> list[str]:
    """``proxies`` (addresses or networks, ``10.0.0.0/8``) as uvicorn's proxy-headers
    middleware matches them, or one line saying which is not one."""
    found = []
    for given in proxies:
        text = given.strip()
        try:
            found.append(str(ipaddress.ip_network(text, strict=False)) if "/" in text
                         else str(ipaddress.ip_address(text.strip("[]"))))
        except ValueError:
            raise PerspectrumError(f"--trusted-proxy {given!r} is not an IP address or network "
                                   "(`10.0.0.2`, `10.0.0.0/8`)") from None
    return found


def app_path(scope: dict) -> str:
    """A request's path as the app routes it (a proxy's root path aside)."""
    path, root = scope.get("path", ""), scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root):]
    return path


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class Throttle:
    """Wrong tokens per client: after ``tries`` within ``window`` seconds, the client waits
    until the oldest of them is out of the window. Without it a 16-character token is still
    out of reach, but a weak one given with ``--token`` is not, and each try costs a hash.

    At most ``clients`` clients are remembered (the longest quiet first forgotten), so many
    addresses cannot grow the table without bound. Behind a proxy every client is the
    proxy's address and shares one allowance, unless the proxy is named (``--trusted-proxy``):
    then each client is the address the proxy gives for it.
    """

    def __init__(self, tries: int = TRIES, window: float = TRY_WINDOW, clients: int = 10_000,
                 clock: Callable[[], float] = time.time) -> None:
        self.tries, self.window, self.clients, self.clock = tries, window, clients, clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def _recent(self, client: str) -> deque[float]:
        failures = self._failures.get(client, deque())
        while failures and failures[0] <= self.clock() - self.window:
            failures.popleft()
        return failures

    def wait(self, client: str) -> int | None:
        """Seconds ``client`` must wait before its next try, or ``None``: it may try now."""
        failures = self._recent(client)
        if len(failures) < self.tries:
            return None
        return max(1, math.ceil(failures[0] + self.window - self.clock()))

    def failed(self, client: str) -> None:
        failures = self._recent(client)
        failures.append(self.clock())
        self._failures[client] = failures
        self._failures.move_to_end(client)
        while len(self._failures) > self.clients:
            self._failures.popitem(last=False)

    def forgive(self, client: str) -> None:
        self._failures.pop(client, None)


class TokenGuard:
    """The token check of one app (``token=None``: every request is let in).

    Args:
        token: the bearer token requests must carry, or ``None``.
        signin: the page a browser that is not signed in is shown instead (401).
        session_seconds: how long a sign-in's cookie lasts.
        clock: the time now (seconds since the epoch); tests move it.
    """

    def __init__(self, token: str | None, signin: Path, session_seconds: int = SESSION_SECONDS,
                 clock: Callable[[], float] = time.time) -> None:
        self.expected = None if token is None else _digest(token)
        self.signin = signin
        self.session_seconds = session_seconds
        self.clock = clock
        self.throttle = Throttle(clock=lambda: self.clock())
        self._key = secrets.token_bytes(32)  # this process's sessions only

    def _signature(self, expires: int) -> str:
        return hmac.new(self._key, f"session:{expires}".encode(), hashlib.sha256).hexdigest()

    def session(self) -> str:
        """A new session cookie's value: its expiry time and this process's signature of it."""
        expires = int(self.clock()) + self.session_seconds
        return f"{expires}.{self._signature(expires)}"

    def _signed_in(self, cookie: str) -> bool:
        expires, _, signature = cookie.partition(".")
        if not (expires.isascii() and expires.isdigit() and len(expires) <= 12):
            return False
        return (hmac.compare_digest(signature.encode("ascii", "replace"), self._signature(int(expires)).encode())
                and int(expires) > self.clock())

    def check(self, request: Request) -> Response | None:
        """``None`` for a request that goes to an open path or carries the token (header or
        session cookie); else its refusal: 401, or 429 for a client sending wrong tokens."""
        if self.expected is None or request.url.path in OPEN_PATHS:
            return None
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and given:
            return self._try(given.strip(), _client(request))
        if self._signed_in(request.cookies.get(COOKIE, "")):
            return None
        if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
            return HTMLResponse(self.signin.read_text(encoding="utf-8"), 401)
        return problem(401, "this server needs a bearer token: send `Authorization: Bearer <token>`",
                       {"WWW-Authenticate": "Bearer"})

    def _try(self, token: str, client: str) -> Response | None:
        """``None`` for the right token; 401 for a wrong one, 429 once the client has sent too many."""
        wait = self.throttle.wait(client)
        if wait is not None:
            return problem(429, f"too many wrong tokens from this client; try again in {wait} s",
                           {"Retry-After": str(wait)})
        if not hmac.compare_digest(_digest(token), self.expected or b""):
            self.throttle.failed(client)
            return problem(401, "wrong token", {"WWW-Authenticate": "Bearer"})
        self.throttle.forgive(client)
        return None

    def login(self, token: str, request: Request) -> Response:
        """The answer to ``POST /login``: 204 with a session cookie (HttpOnly, SameSite=Strict,
        Secure over TLS, ending after ``session_seconds``) for the right token, 401 for a wrong one, 429 while
        the client is throttled; 204 alone when the server needs no token."""
        if self.expected is None:
            return Response(status_code=204)
        refused = self._try(token, _client(request))
        if refused is not None:
            return refused
        signed_in = Response(status_code=204)
        # Secure over TLS (the scheme a named proxy gives, behind one): a browser then never
        # sends the cookie in the clear
        signed_in.set_cookie(COOKIE, self.session(), max_age=self.session_seconds, httponly=True,
                             samesite="strict", path="/", secure=request.url.scheme == "https")
        return signed_in


def _client(request: Request) -> str:
    """The address a request came from, as the throttle counts it."""
    return request.client.host if request.client else "unknown"


class Gate:
    """Answers a request that ``check`` refuses (its :class:`Response`; ``None`` lets it in)
    before anything reads its body. A refused request that declares a body is answered with
    ``Connection: close``, so the server does not read the rest of it either."""

    def __init__(self, app: Any, check: Callable[[Request], Response | None]) -> None:
        self.app = app
        self.check = check

    async def __call__(self, scope: dict, receive: Callable[[], Awaitable[dict]], send: Callable) -> None:
        if scope["type"] == "http":
            refused = self.check(Request(scope))
            if refused is not None:
                headers = dict(scope.get("headers") or ())
                if headers.get(b"content-length", b"0") != b"0" or b"transfer-encoding" in headers:
                    refused.headers["Connection"] = "close"
                return await refused(scope, receive, send)
        return await self.app(scope, receive, send)


class BodyLimit:
    """Answers 413 to a request body over ``limit`` bytes (``limits[path]`` for a path named
    there) before the app reads any of it (declared length), or as soon as a chunked body
    passes it; and 408, closing the connection, to a body that has not all arrived
    ``seconds`` after the request's head."""

    def __init__(self, app: Any, limit: int, seconds: float = BODY_SECONDS,
                 limits: dict[str, int] | None = None) -> None:
        self.app = app
        self.limit = limit
        self.seconds = seconds
        self.limits = dict(limits or {})

    def limit_for(self, scope: dict) -> int:
        """The body limit of the request's path (as the app routes it, a proxy's root path aside)."""
        return self.limits.get(app_path(scope), self.limit)

    async def __call__(self, scope: dict, receive: Callable[[], Awaitable[dict]], send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.limit_for(scope)
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            return await self._refuse(problem(413, f"the request body is over {limit:,} bytes"),
                                      scope, receive, send)
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.seconds):
                while True:
                    message = await receive()
                    if message["type"] != "http.request":
                        return None  # the client left
                    chunks.append(message.get("body", b""))
                    size += len(chunks[-1])
                    if size > limit:
                        return await self._refuse(problem(413, f"the request body is over {limit:,} bytes"),
                                                  scope, receive, send)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            late = problem(408, f"the request body did not arrive within {self.seconds:g} s",
                           {"Connection": "close"})
            return await self._refuse(late, scope, receive, send)
        sent = False

        async def replay() -> dict:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)

    @staticmethod
    async def _refuse(response: Response, scope: dict, receive: Callable, send: Callable) -> None:
        await response(scope, receive, send)
