"""The security headers on every response of `perspectrum serve`.

The page shows text from claims, perspectives and evidence (anyone's words, with
``--perspectives`` and ``--evidence``). ``app.js`` sets them as text, never as markup; the
Content-Security-Policy is the second line of defence should that ever slip: only scripts
and styles from this server run, nothing is fetched from elsewhere, and no other site may
frame the page (``frame-ancestors 'none'`` and, for older browsers, ``X-Frame-Options``),
which stops clickjacking of the sign-in form. ``nosniff`` keeps a browser from reading a
JSON answer as a script, and ``no-referrer`` keeps a claim in the page's address out of the
requests its links make.

The pages load only their own files (``/static/common.js``, ``app.js``, ``map.js`` and ``style.css``, no
inline script or style). The sign-in page is one file with an inline script and style: they are allowed
by their SHA-256, read from the file when the app is built, so an edit cannot go stale.
The API docs (``/docs``, ``/redoc``: FastAPI's pages, served offline) start Swagger UI and
ReDoc with inline scripts, allowed the same way per response. ReDoc styles itself with
styles it writes at run time, which only ``'unsafe-inline'`` allows (for styles, on
``/redoc`` alone: no script runs from a style); Swagger UI needs no inline style. Checked in
headless Chromium: the page, the sign-in and both docs pages draw with no CSP report but
ReDoc's logo from its CDN, which is blocked as it should be.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Iterable
from typing import Any

from perspectrum.errors import missing_extra

try:  # the serve extra; without it `perspectrum serve` says so in one line (MissingExtra)
    from starlette.datastructures import MutableHeaders
except ModuleNotFoundError as exc:
    raise missing_extra("perspectrum serve", "serve", exc) from None

#: Sent with every response.
COMMON = {"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"}
#: The page, its files, the sign-in page and every API answer (``{scripts}`` and
#: ``{styles}``: the sign-in page's inline blocks, by hash). ``data:`` images: the page's
#: empty ``<link rel="icon" href="data:,">``, which keeps browsers from asking for /favicon.ico.
PAGE_POLICY = ("default-src 'none'; script-src 'self'{scripts}; style-src 'self'{styles}; img-src 'self' data:; "
               "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
#: FastAPI's docs pages (``{scripts}``, ``{styles}``: their inline blocks, by hash): Swagger
#: UI draws ``data:`` icons and reads ``/openapi.json``; ReDoc runs its search in a ``blob:`` worker.
DOCS_POLICY = ("default-src 'none'; script-src 'self'{scripts}; style-src 'self'{styles}; img-src 'self' data:; "
               "font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; form-action 'self'; "
               "base-uri 'none'; frame-ancestors 'none'")
#: The paths of FastAPI's docs pages (as FastAPIOffline serves them).
DOCS_PAGES = frozenset({"/docs", "/docs/oauth2-redirect", "/redoc"})
#: The docs page whose styles are written at run time (a hash beside 'unsafe-inline' would
#: make browsers ignore it, so that page gets no style hashes).
INLINE_STYLED = "/redoc"

_INLINE = re.compile(r"<(script|style)\b(?![^>]*\bsrc\s*=)[^>]*>(.*?)</\1\s*>", re.IGNORECASE | re.DOTALL)


def inline_hashes(html: str) -> tuple[list[str], list[str]]:
    """The CSP sources (``'sha256-...'``) of the inline scripts and styles in ``html``."""
    found: dict[str, list[str]] = {"script": [], "style": []}
    for match in _INLINE.finditer(html):
        digest = base64.b64encode(hashlib.sha256(match.group(2).encode("utf-8")).digest()).decode("ascii")
        found[match.group(1).lower()].append(f"'sha256-{digest}'")
    return found["script"], found["style"]


def _sources(hashes: Iterable[str]) -> str:
    return "".join(f" {h}" for h in dict.fromkeys(hashes))


def page_policy(*pages: str) -> str:
    """:data:`PAGE_POLICY`, allowing the inline scripts and styles of ``pages`` (their HTML)."""
    scripts, styles = [], []
    for html in pages:
        more_scripts, more_styles = inline_hashes(html)
        scripts += more_scripts
        styles += more_styles
    return PAGE_POLICY.format(scripts=_sources(scripts), styles=_sources(styles))


class SecurityHeaders:
    """Adds :data:`COMMON` and a Content-Security-Policy to every HTTP response: ``policy``,
    or on :data:`DOCS_PAGES` :data:`DOCS_POLICY` with the hashes of the page's own inline
    blocks (read from the response, which is small: FastAPI writes it per request, with the
    ``root_path`` a proxy gives)."""

    def __init__(self, app: Any, policy: str) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):]
        if path not in DOCS_PAGES:
            async def with_headers(message: dict) -> None:
                if message["type"] == "http.response.start":
                    _add(message, self.policy)
                await send(message)

            return await self.app(scope, receive, with_headers)
        held: list[dict] = []

        async def hold(message: dict) -> None:
            held.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                html = b"".join(m.get("body", b"") for m in held[1:]).decode("utf-8", "replace")
                scripts, styles = inline_hashes(html)
                inline = " 'unsafe-inline'" if path == INLINE_STYLED else _sources(styles)
                _add(held[0], DOCS_POLICY.format(scripts=_sources(scripts), styles=inline))
                for each in held:
                    await send(each)

        return await self.app(scope, receive, hold)


def _add(start: dict, policy: str) -> None:
    headers = MutableHeaders(scope=start)
    for name, value in COMMON.items():
        headers[name] = value
    headers["Content-Security-Policy"] = policy
