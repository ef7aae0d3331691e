"""How long the server keeps a connection that is not sending a request.

Uvicorn closes a connection that stays idle :data:`KEEP_ALIVE_SECONDS` after a response,
but it has no deadline for the request itself: a client that connects and sends nothing, or
sends half a request head and then a byte now and then, holds its connection (and a file
descriptor) for as long as it likes, so a few hundred such clients take the server down
(slowloris). :class:`HeadDeadline` closes a connection whose request head is not complete
:data:`HEAD_SECONDS` after its first byte (or after the connection opened, for the first
request). The body has its own deadline in the app (:class:`perspectrum.serve.guard.BodyLimit`,
408), so a request never waits on a slow client once it is in.

The server speaks HTTP/1.1 through uvicorn's h11 implementation (pure Python, always
installed with uvicorn), which this subclasses; :func:`uvicorn_config` is the one place the
CLI and the tests configure uvicorn.
"""

from __future__ import annotations

import asyncio
from typing import Any

from perspectrum.errors import missing_extra

try:  # the serve extra; without it `perspectrum serve` says so in one line (MissingExtra)
    import h11
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol
except ModuleNotFoundError as exc:
    raise missing_extra("perspectrum serve", "serve", exc) from None

#: Seconds an idle connection stays open after a response (uvicorn's own timer).
KEEP_ALIVE_SECONDS = 5.0
#: Seconds a request head (request line and headers) may take to arrive, from the connection
#: or from its first byte; a browser sends one in a single packet.
HEAD_SECONDS = 10.0


class HeadDeadline(H11Protocol):
    """Uvicorn's h11 protocol, closing a connection whose request head is late.

    The deadline is armed when the connection opens and again when the first byte of a
    later request arrives (uvicorn's keep-alive timer covers the silence between them), and
    disarmed once h11 has parsed the head. It does not move while bytes trickle in.
    """

    #: The deadline, in seconds (:func:`uvicorn_config` makes a subclass with its own).
    head_seconds: float = HEAD_SECONDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.transport.is_closing():
            self._disarm()
        elif self.conn.their_state is h11.IDLE:  # part of a head: the clock runs from its first byte
            if self._head_timer is None:
                self._arm()
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._head_timer = self.loop.call_later(self.head_seconds, self._late)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _late(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        try:
            self.conn.send(h11.ConnectionClosed())
        except h11.LocalProtocolError:  # mid-response: h11 has no clean close to send
            pass
        self.transport.close()


def uvicorn_config(app: Any, keep_alive_seconds: float = KEEP_ALIVE_SECONDS,
                   head_seconds: float = HEAD_SECONDS) -> uvicorn.Config:
    """Uvicorn's configuration for ``app``: the deadlines above and quiet logs (the app counts
    requests in ``/metrics``). Uvicorn's own proxy headers are off (it would believe any
    process on this machine): the app believes ``X-Forwarded-*`` from the proxies it is given
    (``ServeSettings.trusted_proxies``, ``--trusted-proxy``) and from no one else."""
    protocol = type("HeadDeadline", (HeadDeadline,), {"head_seconds": head_seconds})
    # timeout_keep_alive is typed int but used as a float (loop.call_later)
    return uvicorn.Config(app, http=protocol, timeout_keep_alive=keep_alive_seconds,  # type: ignore[arg-type]
                          log_level="warning", access_log=False, proxy_headers=False)
