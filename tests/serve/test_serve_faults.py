"""`perspectrum serve` at its edges: ``POST /map`` at its limits from many clients at once, a
client that leaves mid-map, a token checked before a body is read, refusals counted in
``/metrics``, the session cookie over TLS, and which proxies ``X-Forwarded-*`` is believed from.

No model is loaded: the app serves a fake pipeline whose ``map`` waits for the test to let it
go, so each case is a count of requests, slots and calls, never a time.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from perspectrum.cli.app import app as cli
from perspectrum.errors import PerspectrumError
from perspectrum.pipeline.map import PerspectiveMap
from perspectrum.serve.app import (
    COOKIE,
    MAX_MAP_BODY_BYTES,
    MAX_MAP_DOCUMENTS,
    ServeSettings,
    create_app,
)
from perspectrum.serve.connections import uvicorn_config
from perspectrum.serve.guard import TRIES
from tests.serve.test_serve import uvicorn_serving

TOKEN = "a-token-of-twenty-chars"
CLAIM = "Zoos should exist"


class SlowPipeline:
    """Stands in for a loaded pipeline: ``map`` waits at ``gate`` before each document (after
    calling ``on_mined`` for the one before, as the real map does as each is mined)."""

    system = "fake"

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.started = threading.Semaphore(0)
        self.calls = 0
        self.mined = 0
        self.finished = 0

    def warm_up(self) -> None:
        pass

    def map(self, texts, claim, settings=None, skipped=(), mined=None, on_mined=None) -> PerspectiveMap:
        self.calls += 1
        self.started.release()
        for doc_id in texts:
            self.gate.wait(30)
            self.mined += 1
            if on_mined is not None:
                on_mined(doc_id, [])
        self.finished += 1
        return PerspectiveMap(claim, len(texts), 0, [], [], [], {}, 0.0)


def wait_for(condition, what: str, tries: int = 1000) -> None:
    """Poll ``condition`` (a bounded number of times, 10 ms apart) until it holds."""
    for _ in range(tries):
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError(f"never: {what}")


@contextmanager
def serving(pipe, settings: ServeSettings = ServeSettings(), **kwargs) -> Iterator[TestClient]:
    with TestClient(create_app(pipe, settings), base_url=kwargs.pop("base_url", "http://127.0.0.1:8000"),
                    **kwargs) as client:
        wait_for(lambda: client.get("/health").status_code == 200, "ready")
        yield client


def pile_at_the_limits() -> bytes:
    """A ``POST /map`` body of :data:`MAX_MAP_DOCUMENTS` documents, just under :data:`MAX_MAP_BODY_BYTES`."""
    def body(chars: int) -> bytes:
        documents = [{"id": f"letter {n}.txt", "text": ("Zoos protect endangered species. " * 400)[:chars]}
                     for n in range(MAX_MAP_DOCUMENTS)]
        return json.dumps({"claim": CLAIM, "documents": documents}).encode()

    chars = (MAX_MAP_BODY_BYTES - len(body(0))) // MAX_MAP_DOCUMENTS
    pile = body(chars)
    assert MAX_MAP_BODY_BYTES - MAX_MAP_DOCUMENTS <= len(pile) <= MAX_MAP_BODY_BYTES
    return pile


JSON = {"Content-Type": "application/json"}


def test_eight_clients_at_the_map_limits_on_one_worker_get_a_bounded_queue_and_503s() -> None:
    """1 worker and 2 queue places: of 8 piles at the limits sent at once, 3 are taken and 5
    answered 503 with a Retry-After; once the work is let go the 3 are answered and no slot
    or worker is left taken (a ninth pile is mapped)."""
    pipe, pile = SlowPipeline(), pile_at_the_limits()
    with serving(pipe, ServeSettings(workers=1, queue=2)) as client:
        work = client.app.state.work
        answers: list = [None] * 8

        def ask(slot: int) -> None:
            answers[slot] = client.post("/map", content=pile, headers=JSON)

        threads = [threading.Thread(target=ask, args=(slot,)) for slot in range(8)]
        for thread in threads:
            thread.start()
        wait_for(lambda: sum(a is not None for a in answers) == 5, "five answered while three are held")
        wait_for(lambda: pipe.calls == 1, "the first pile on the worker")
        assert work.accepted == 3 and pipe.calls == 1  # one runs, two wait: the queue is bounded
        busy = [a for a in answers if a is not None]
        pipe.gate.set()
        for thread in threads:
            thread.join(30)
        wait_for(lambda: work.accepted == 0, "every slot given back")
        ninth = client.post("/map", content=pile, headers=JSON)
        metrics = client.get("/metrics").text
    assert all(a.status_code == 503 and int(a.headers["Retry-After"]) >= 1 for a in busy), [a.text for a in busy]
    assert all("busy" in a.json()["detail"] for a in busy)
    assert sorted(a.status_code for a in answers) == [200] * 3 + [503] * 5
    assert ninth.status_code == 200 and ninth.json()["documents"] == MAX_MAP_DOCUMENTS
    assert pipe.calls == pipe.finished == 4 and pipe.mined == 4 * MAX_MAP_DOCUMENTS
    assert "perspectrum_rejected_total 5.0" in metrics


def test_a_full_pool_refuses_a_pile_before_reading_its_body() -> None:
    """With every worker and queue place taken, a pile is answered 503 without its 2 MiB being
    read into memory: memory held by piles is bounded by the requests the pool takes."""
    pipe = SlowPipeline()
    with serving(pipe, ServeSettings(workers=1, queue=0)) as client:
        holder = threading.Thread(target=client.post, args=("/map",),
                                  kwargs={"json": {"claim": CLAIM, "documents": [{"id": "a", "text": "Zoos help."}]}})
        holder.start()
        wait_for(lambda: pipe.calls == 1, "the one worker taken")
        refused, read = asgi_post(client.app, "/map", b"{" + b" " * 1000 + b"}", {})
        pipe.gate.set()
        holder.join(30)
    assert refused == 503 and read == 0


def asgi_post(app, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, int]:
    """POST ``body`` to ``app`` straight through ASGI: (the status, how many times the app asked
    for the body)."""
    asked = 0

    async def receive() -> dict:
        nonlocal asked
        asked += 1
        return {"type": "http.request", "body": body, "more_body": False}

    status = []

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    raw = [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
           (b"content-length", str(len(body)).encode())]
    raw += [(name.lower().encode(), value.encode()) for name, value in headers.items()]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"", "headers": raw,
             "client": ("10.0.0.9", 5000), "server": ("127.0.0.1", 8000)}
    asyncio.run(app(scope, receive, send))
    return status[0], asked


def test_a_request_without_the_token_is_refused_before_its_body_is_read() -> None:
    app = create_app(SlowPipeline(), ServeSettings(token=TOKEN))
    pile = pile_at_the_limits()
    without = asgi_post(app, "/map", pile, {})
    wrong = asgi_post(app, "/map", pile, {"Authorization": "Bearer wrong-token-of-twenty"})
    forged = asgi_post(app, "/discover", b"{}", {"Cookie": f"{COOKIE}=99999999999.{'0' * 64}"})
    right = asgi_post(app, "/map", b"{}", {"Authorization": f"Bearer {TOKEN}"})
    assert without == (401, 0) and wrong == (401, 0) and forged == (401, 0)
    assert right == (422, 1)  # with the token the body is read (and this one is refused for what it holds)


def test_a_refused_body_is_not_waited_for_over_a_real_connection() -> None:
    """A client that declares 2 MiB and sends none of it gets its 401 at once, not a 408 when
    the body's deadline passes, and the connection is closed rather than drained."""
    app = create_app(SlowPipeline(), ServeSettings(token=TOKEN))
    head = (f"POST /map HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {MAX_MAP_BODY_BYTES}\r\n\r\n").encode()
    with uvicorn_serving(app, keep_alive=5, head=5) as port, socket.create_connection(("127.0.0.1", port)) as conn:
        conn.settimeout(10)  # the body's deadline is 30 s: an answer within 10 s did not wait for it
        conn.sendall(head)
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    assert received.startswith(b"HTTP/1.1 401 "), received[:200]
    assert b"connection: close" in received.lower()


def test_refusals_before_the_app_are_counted_in_metrics() -> None:
    """413 (too large), 408 (too slow) and 400 (another Host) are answered before any route
    runs; each is counted under its path like every other answer."""
    with serving(SlowPipeline(), ServeSettings(body_seconds=0.5)) as client:
        large = client.post("/map", content=b"x" * (MAX_MAP_BODY_BYTES + 1))
        chunked = client.post("/discover", content=iter([b"x" * 65536] * 5))
        rebound = client.get("/examples", headers={"Host": "evil.example"})
        late = slow_body_status(client.app)
        metrics = client.get("/metrics").text
    assert large.status_code == chunked.status_code == 413 and rebound.status_code == 400 and late == 408
    assert 'perspectrum_requests_total{method="POST",path="/map",status="413"} 1.0' in metrics
    assert 'perspectrum_requests_total{method="POST",path="/discover",status="413"} 1.0' in metrics
    assert 'perspectrum_requests_total{method="GET",path="/examples",status="400"} 1.0' in metrics
    assert 'perspectrum_requests_total{method="POST",path="/map",status="408"} 1.0' in metrics


def slow_body_status(app) -> int:
    """POST /map to ``app`` with a body that never comes: the status it answers."""
    async def receive() -> dict:
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    status = []

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/map", "raw_path": b"/map", "root_path": "", "query_string": b"",
             "headers": [(b"host", b"127.0.0.1"), (b"content-length", b"10")], "client": ("127.0.0.1", 5000),
             "server": ("127.0.0.1", 8000)}
    asyncio.run(app(scope, receive, send))
    return status[0]


@pytest.mark.parametrize(("base_url", "headers", "proxies", "secure"), [
    ("http://127.0.0.1:8000", {}, (), False),
    ("https://127.0.0.1:8000", {}, (), True),  # served over TLS
    ("http://127.0.0.1:8000", {"X-Forwarded-Proto": "https"}, ("10.0.0.1",), True),  # a named proxy says so
    ("http://127.0.0.1:8000", {"X-Forwarded-Proto": "https"}, (), False),  # anyone else may say anything
    ("http://127.0.0.1:8000", {"X-Forwarded-Proto": "https"}, ("10.9.0.0/16",), False),
])
def test_the_session_cookie_is_secure_over_tls_or_behind_a_proxy_that_says_so(base_url, headers, proxies,
                                                                              secure) -> None:
    settings = ServeSettings(token=TOKEN, trusted_proxies=proxies)
    with serving(SlowPipeline(), settings, base_url=base_url, client=("10.0.0.1", 4000)) as client:
        signed_in = client.post("/login", json={"token": TOKEN}, headers=headers)
    assert signed_in.status_code == 204
    attributes = [part.strip().lower() for part in signed_in.headers["set-cookie"].split(";")]
    assert ("secure" in attributes) is secure, attributes
    assert "httponly" in attributes and "samesite=strict" in attributes


def wrong_logins(client, forwarded: list[str]) -> list[int]:
    return [client.post("/login", json={"token": f"wrong-token-number-{n}"},
                        headers={"X-Forwarded-For": address}).status_code for n, address in enumerate(forwarded)]


def test_x_forwarded_for_is_believed_only_from_a_named_proxy() -> None:
    """Without --trusted-proxy a client that makes up a new X-Forwarded-For for each wrong token
    is throttled all the same; from a named proxy each client behind it has its own allowance,
    and a client cannot dodge it by writing addresses in front of the one the proxy adds."""
    spoofed = [f"203.0.113.{n}" for n in range(TRIES + 1)]
    with serving(SlowPipeline(), ServeSettings(token=TOKEN), client=("10.0.0.1", 4000)) as client:
        direct = wrong_logins(client, spoofed)
    settings = ServeSettings(token=TOKEN, trusted_proxies=("10.0.0.0/24",))
    with serving(SlowPipeline(), settings, client=("10.0.0.1", 4000)) as client:
        behind = wrong_logins(client, spoofed)
        prepended = wrong_logins(client, [f"198.51.100.{n}, 192.0.2.7" for n in range(TRIES + 1)])
    assert direct == [401] * TRIES + [429]
    assert behind == [401] * (TRIES + 1)  # six clients, one wrong token each
    assert prepended == [401] * TRIES + [429]  # one client, 192.0.2.7, whatever it wrote before


def test_uvicorn_believes_no_forwarded_header_unless_a_proxy_is_named() -> None:
    """Over a real connection from loopback (uvicorn's own default trusts loopback), made-up
    X-Forwarded-For addresses do not dodge the throttle."""
    app = create_app(SlowPipeline(), ServeSettings(token=TOKEN))
    assert uvicorn_config(app).proxy_headers is False
    with uvicorn_serving(app, keep_alive=5, head=5) as port:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            statuses = wrong_logins(client, [f"203.0.113.{n}" for n in range(TRIES + 1)])
    assert statuses == [401] * TRIES + [429]


@pytest.mark.parametrize("proxy", ["*", "proxy.example", "10.0.0.300", "10.0.0.0/33", ""])
def test_a_trusted_proxy_must_be_an_address_or_network(proxy) -> None:
    with pytest.raises(PerspectrumError, match="--trusted-proxy"):
        ServeSettings(trusted_proxies=(proxy,))


def test_serve_refuses_a_bad_trusted_proxy_in_one_line(tmp_path) -> None:
    """Refused before the port is bound or anything loads (the folders given do not exist)."""
    result = CliRunner().invoke(cli, ["serve", "--trusted-proxy", "proxy.example", "--port", "0",
                                      "--data-dir", str(tmp_path / "d"), "--index-dir", str(tmp_path / "i"),
                                      "--models-dir", str(tmp_path / "m")])
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert result.output.startswith("error: --trusted-proxy 'proxy.example' is not an IP address or network")


def raw_map_request(pile: bytes) -> bytes:
    return (f"POST /map HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(pile)}\r\n\r\n").encode() + pile


def test_a_client_that_leaves_mid_map_frees_its_work() -> None:
    """Over real connections, 1 worker and 1 queue place: a client that leaves while waiting
    gives its place back at once and its pile is never mapped; one that leaves while its pile
    is mapped stops the map at the next document and gives the worker back."""
    pipe = SlowPipeline()
    app = create_app(pipe, ServeSettings(workers=1, queue=1))
    work = app.state.work
    pile = json.dumps({"claim": CLAIM, "documents": [{"id": f"d{n}", "text": "Zoos help species survive."}
                                                     for n in range(50)]}).encode()
    with uvicorn_serving(app, keep_alive=5, head=5) as port:
        try:
            wait_for(lambda: app.state.loader.status == "ready", "ready")
            running = socket.create_connection(("127.0.0.1", port))
            running.sendall(raw_map_request(pile))
            assert pipe.started.acquire(timeout=30)
            waiting = socket.create_connection(("127.0.0.1", port))
            waiting.sendall(raw_map_request(pile))
            wait_for(lambda: work.accepted == 2, "one pile mapped, one waiting")
            waiting.close()
            wait_for(lambda: work.accepted == 1, "the waiting place given back")
            running.close()
            wait_for(lambda: work.left == 2, "the server saw the mapping client leave")
            pipe.gate.set()  # the map goes on to its next document, and stops there
            wait_for(lambda: work.accepted == 0, "the worker given back")
            with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
                after = client.post("/map", content=pile, headers=JSON)
                metrics = client.get("/metrics").text
        finally:
            pipe.gate.set()  # never leave a worker waiting, whatever failed
    assert pipe.calls == 2 and pipe.finished == 1  # the waiting pile never ran; the left one stopped
    assert pipe.mined == 1 + 50  # one document of the pile whose client left, then the whole next pile
    assert after.status_code == 200
    assert "perspectrum_abandoned_total 2.0" in metrics
