"""The HTTP API of `perspectrum serve`, through FastAPI's test client: every endpoint,
every refusal (4xx), back-pressure (503 with Retry-After), the token, its session cookie and
throttle, the Host check and security headers, and the CLI's refusals before it serves; and
through a real uvicorn server on a free loopback port, the deadlines that close idle and slow
connections. ``/map`` is checked over short texts written for these tests (``tests.pipeline.test_map``'s).

The app serves the ``--quick`` models of the ``trained_dir`` fixture over the ten-claim
fixture; what they answer is compared with the same pipeline called directly.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import uvicorn
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from perspectrum import Pipeline
from perspectrum.cli.app import app as cli
from perspectrum.data import load_dataset
from perspectrum.errors import PerspectrumError
from perspectrum.serve.app import (
    COOKIE,
    LOOPBACK_HOSTS,
    MAX_BATCH,
    MAX_BODY_BYTES,
    MAX_MAP_BODY_BYTES,
    MAX_MAP_DOCUMENTS,
    DiscoveryOut,
    HitOut,
    MapOut,
    ServeSettings,
    check_bind,
    create_app,
    example_claims,
)
from perspectrum.serve.connections import uvicorn_config
from perspectrum.serve.guard import SESSION_SECONDS, TRIES, TRY_WINDOW, Throttle
from perspectrum.text.document import MAX_DOCUMENT_CHARS
from perspectrum.train import prepare
from tests.pipeline.test_map import CAGES, ZOOS, ZOOS_TOO

CLAIM = "Animals should have legal rights"
TOKEN = "a-token-of-twenty-chars"
METHODS = ("bm25", "dense", "hybrid")


@pytest.fixture(scope="module")
def pipe(trained_dir) -> Pipeline:
    data, indexes, models = trained_dir
    return Pipeline.load(data, indexes, models, verify=False)


def wait_ready(client: TestClient, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = client.get("/health")
        if answer.status_code == 200:
            return answer.json()
        assert answer.json()["status"] == "loading", answer.text
        time.sleep(0.05)
    raise AssertionError("the server never became ready")


@contextmanager
def serving(pipe: Pipeline, settings: ServeSettings = ServeSettings(), ready: bool = True) -> Iterator[TestClient]:
    with TestClient(create_app(pipe, settings), base_url="http://127.0.0.1:8000") as client:
        if ready:
            wait_ready(client)
        yield client


def without_timings(answer: dict) -> dict:
    return {k: v for k, v in answer.items() if k != "timings"}


def test_health_says_loading_until_every_model_is_in(pipe, monkeypatch) -> None:
    release = threading.Event()
    warm_up = pipe.warm_up
    monkeypatch.setattr(pipe, "warm_up", lambda: (release.wait(30), warm_up()))
    with serving(pipe, ready=False) as client:
        loading = client.get("/health")
        assert loading.status_code == 503 and loading.json()["status"] == "loading"
        refused = client.post("/discover", json={"claim": CLAIM})
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "5"
        assert "loading" in refused.json()["detail"]
        release.set()
        health = wait_ready(client)
    assert health["status"] == "ready" and health["system"] == "trained" and health["error"] is None


def test_health_reports_a_pipeline_that_failed_to_load(pipe, monkeypatch) -> None:
    def broken() -> None:
        raise PerspectrumError("the stance model in models/stance is corrupt")

    monkeypatch.setattr(pipe, "warm_up", broken)
    with serving(pipe, ready=False) as client:
        for _ in range(200):
            health = client.get("/health")
            if health.json()["status"] != "loading":
                break
            time.sleep(0.01)
        assert health.status_code == 503 and health.json()["status"] == "failed"
        assert health.json()["error"] == "the stance model in models/stance is corrupt"
        refused = client.post("/discover", json={"claim": CLAIM})
        assert refused.status_code == 503 and "corrupt" in refused.json()["detail"]


def test_discover_answers_what_the_pipeline_answers_in_the_cli_schema(pipe) -> None:
    with serving(pipe) as client:
        answer = client.post("/discover", json={"claim": f"  {CLAIM} ", "top": 3})
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    body = answer.json()
    DiscoveryOut.model_validate(body)  # the documented response model matches what is sent
    expected = json.loads(pipe.discover(CLAIM, top=3).to_json())
    assert without_timings(body) == without_timings(expected)
    assert body["schema"] == 2 and body["perspectives"] and "trace" not in body
    assert set(body["timings"]) == set(expected["timings"])


def test_a_batch_answers_in_order_as_discover_many_does(pipe) -> None:
    """A batch is one ``discover_many`` call (padded batches move scores in the fourth
    decimal, so it is compared with that call, not with single claims)."""
    claims = [CLAIM, "Fast food should be taxed", "Zoos should be banned"]
    with serving(pipe) as client:
        batch = client.post("/discover", json={"claims": claims, "evidence": False})
        explained = client.post("/discover", json={"claim": CLAIM, "explain": True}).json()
    assert batch.status_code == 200 and [r["claim"] for r in batch.json()] == claims
    expected = [json.loads(r.to_json()) for r in pipe.discover_many(claims, evidence=False)]
    assert [without_timings(r) for r in batch.json()] == [without_timings(r) for r in expected]
    shown = [p for r in batch.json() for p in r["perspectives"]]
    assert shown and all(not p["evidence"] for p in shown)
    assert {"settings", "candidates"} <= set(explained["trace"])


@pytest.mark.parametrize(("body", "detail"), [
    ({"claim": ""}, "claim: the claim is empty"),
    ({"claim": "x" * 1001}, "claim: the claim is 1,001 characters long; the limit is 1,000"),
    ({"claim": "2019 \x00"}, "claim: the claim contains control characters"),
    ({"claims": [CLAIM, "   "]}, "claims[1]: the claim is empty"),
    ({"claims": [CLAIM] * (MAX_BATCH + 1)}, f"claims: List should have at most {MAX_BATCH} items"),
    ({"claims": []}, "claims: List should have at least 1 item"),
    ({"claim": CLAIM, "claims": [CLAIM]}, "give either `claim` or `claims`, not both or neither"),
    ({}, "give either `claim` or `claims`"),
    ({"claim": CLAIM, "top": 0}, "top: Input should be greater than or equal to 1"),
    ({"claim": CLAIM, "colour": "red"}, "colour: Extra inputs are not permitted"),
    ({"claim": 7}, "claim: Input should be a valid string"),
])
def test_bad_discover_requests_get_422_saying_what_is_wrong(pipe, body, detail) -> None:
    with serving(pipe) as client:
        answer = client.post("/discover", json=body)
    assert answer.status_code == 422 and answer.json()["detail"].startswith(detail), answer.text


def test_a_body_that_is_not_json_or_too_large_is_refused(pipe) -> None:
    with serving(pipe) as client:
        garbled = client.post("/discover", content=b"{not json", headers={"Content-Type": "application/json"})
        declared = client.post("/discover", content=b"x" * (MAX_BODY_BYTES + 1))
        chunked = client.post("/discover", content=iter([b"x" * 65536] * 5))  # no Content-Length
        wrong_length = client.post("/discover", content=b"{}", headers={"Content-Length": "-1"})
    assert garbled.status_code == 422 and "JSON" in garbled.json()["detail"]
    assert declared.status_code == 413 and chunked.status_code == 413
    assert declared.json()["detail"] == f"the request body is over {MAX_BODY_BYTES:,} bytes"
    assert wrong_length.status_code in (400, 413)


PILE = [{"id": "a.txt", "text": ZOOS}, {"id": "b.md", "text": f"# Notes\n\n{ZOOS_TOO}\n"},
        {"id": "survey:r1", "text": CAGES}, {"id": "d <i>.txt", "text": f"{ZOOS} {CAGES}"}]


def test_map_answers_a_pile_as_map_json_with_quotes_that_index_its_documents(pipe) -> None:
    with serving(pipe) as client:
        answer = client.post("/map", json={"claim": "  Zoos should exist ", "documents": PILE})
        everything = client.post("/map", json={"claim": "Zoos should exist", "documents": PILE, "min_documents": 1})
        metrics = client.get("/metrics").text
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json", answer.text
    body = answer.json()
    MapOut.model_validate(body)  # the documented response model matches what is sent
    expected = pipe.map({d["id"]: d["text"] for d in PILE}, "Zoos should exist").to_dict()
    assert {**body, "seconds": 0} == {**expected, "seconds": 0}
    assert body["claim"] == "Zoos should exist" and body["documents"] == len(PILE) and body["skipped"] == []
    texts = {d["id"]: d["text"] for d in PILE}
    shown = body["perspectives"] + body["also_mentioned"]
    assert shown and sum(p["units"] for p in shown) == body["units"]
    for found in shown:
        assert found["documents"] == len({q["document"] for q in found["quotes"]}) and found["units"] == len(
            found["quotes"])
        assert found["share"] == round(found["documents"] / body["documents"], 4)
        assert found["key_point"] == found["quotes"][0]["text"]
        for quote in found["quotes"]:
            assert texts[quote["document"]][quote["start"]:quote["end"]] == quote["text"]
    prevalence = [(p["documents"], p["units"]) for p in body["perspectives"]]
    assert prevalence == sorted(prevalence, reverse=True)
    assert body["perspectives"] and all(p["documents"] >= 2 for p in body["perspectives"])
    assert body["also_mentioned"] and all(p["documents"] == 1 for p in body["also_mentioned"])
    assert body["settings"]["min_documents"] == 2
    assert everything.status_code == 200 and not everything.json()["also_mentioned"]
    assert len(everything.json()["perspectives"]) == len(shown)
    assert 'perspectrum_requests_total{method="POST",path="/map",status="200"} 2.0' in metrics
    assert 'perspectrum_request_seconds_count{path="/map"} 2.0' in metrics


@pytest.mark.parametrize(("body", "detail"), [
    ({"claim": "Zoos should exist", "documents": []}, "documents: List should have at least 1 item"),
    ({"claim": "Zoos should exist"}, "documents: Field required"),
    ({"claim": "Zoos should exist", "documents": [PILE[0], {"id": "b", "text": " \n "}]},
     "documents[1] (b): the document is empty"),
    ({"claim": "Zoos should exist", "documents": [PILE[0], {"id": "a.txt", "text": CAGES}]},
     "documents[1] (a.txt): the id is also documents[0]'s; give each document its own"),
    ({"claim": "Zoos should exist", "documents": [{"id": " ", "text": ZOOS}]}, "documents[0]: the id is blank"),
    ({"claim": "Zoos should exist", "documents": [{"id": "", "text": ZOOS}]},
     "documents.0.id: String should have at least 1 character"),
    ({"claim": "Zoos should exist", "documents": [{"id": "x\ny", "text": "1234 5678"}]},
     "documents[0] (x\\ny): the document has no words in it"),
    ({"claim": "Zoos should exist", "documents": [{"id": "long", "text": "zoos " * (MAX_DOCUMENT_CHARS // 5) + "!"}]},
     f"documents[0] (long): the document is {MAX_DOCUMENT_CHARS + 1:,} characters long; "
     f"the limit is {MAX_DOCUMENT_CHARS:,}"),
    ({"claim": "Zoos should exist", "documents": [{"id": str(n), "text": ZOOS} for n in range(MAX_MAP_DOCUMENTS + 1)]},
     f"documents: List should have at most {MAX_MAP_DOCUMENTS} items"),
    ({"claim": "x" * 1001, "documents": PILE}, "claim: the claim is 1,001 characters long; the limit is 1,000"),
    ({"claim": "  ", "documents": PILE}, "claim: the claim is empty"),
    ({"claim": "Zoos should exist", "documents": PILE, "min_documents": 0},
     "min_documents: Input should be greater than or equal to 1"),
    ({"claim": "Zoos should exist", "documents": PILE, "top": 3}, "top: Extra inputs are not permitted"),
])
def test_bad_map_requests_get_422_saying_what_is_wrong_in_one_line(pipe, body, detail) -> None:
    with serving(pipe, ready=False) as client:  # refused before any model work: no need to wait for the models
        answer = client.post("/map", json=body)
    assert answer.status_code == 422 and answer.json()["detail"].startswith(detail), answer.text
    assert "\n" not in answer.json()["detail"]


def test_map_takes_a_larger_body_than_the_other_routes_but_not_without_bound(pipe) -> None:
    """A pile of 50 op-eds of about 6,000 characters is over the other routes' cap and within /map's."""
    op_eds = [{"id": f"op-ed {n}.txt", "text": f"Opinion {n}. " + "Zoos protect endangered species. " * 190}
              for n in range(50)]
    op_eds[-1]["id"] = "op-ed 0.txt"  # refused once read whole, so no model work is done
    pile = json.dumps({"claim": "Zoos should exist", "documents": op_eds}).encode()
    assert MAX_BODY_BYTES < len(pile) < MAX_MAP_BODY_BYTES
    with serving(pipe, ready=False) as client:
        elsewhere = client.post("/discover", content=pile, headers={"Content-Type": "application/json"})
        read = client.post("/map", content=pile, headers={"Content-Type": "application/json"})
        declared = client.post("/map", content=b"x" * (MAX_MAP_BODY_BYTES + 1))
        chunked = client.post("/map", content=iter([b"x" * 65536] * 33))  # no Content-Length
    assert elsewhere.status_code == 413
    assert read.status_code == 422 and read.json()["detail"].startswith("documents[49] (op-ed 0.txt): the id is also")
    assert declared.status_code == chunked.status_code == 413
    assert declared.json()["detail"] == f"the request body is over {MAX_MAP_BODY_BYTES:,} bytes"


def test_search_each_pool_and_method_and_its_refusals(pipe) -> None:
    with serving(pipe) as client:
        pairs = [(pool, method) for pool in ("perspectives", "evidence") for method in METHODS]
        for pool, method in pairs:
            answer = client.post("/search", json={"query": "zoos and endangered species", "pool": pool,
                                                  "method": method, "k": 3})
            assert answer.status_code == 200, answer.text
            hits = [HitOut.model_validate(h) for h in answer.json()]
            assert 1 <= len(hits) <= 3 and all(h.text for h in hits)
        # `train all` builds the indexes its models read, not the sentences' (`setup` builds their
        # BM25, `setup --full` their dense index too); a server never builds one at request
        # time, and names the command that does
        unbuilt = client.post("/search", json={"query": "zoos", "pool": "sentences", "method": "bm25"})
        undense = client.post("/search", json={"query": "zoos", "pool": "sentences", "method": "dense"})
        top = client.post("/search", json={"query": "zoos breeding programmes", "method": "bm25", "k": 1}).json()
        empty = client.post("/search", json={"query": "  "})
        long = client.post("/search", json={"query": "x" * 1001})
        pool = client.post("/search", json={"query": "zoos", "pool": "claims"})
        k = client.post("/search", json={"query": "zoos", "k": 0})
    assert unbuilt.status_code == 503 and unbuilt.json()["detail"].startswith("no bm25 index for the sentences pool")
    assert "build it with `perspectrum index build --pool sentences --kind bm25`" in unbuilt.json()["detail"]
    assert undense.status_code == 503 and "`perspectrum setup --full` builds every index" in undense.json()["detail"]
    assert top[0]["id"] in (1, 2)
    assert empty.status_code == 422 and empty.json()["detail"] == "query: the query is empty"
    assert long.status_code == 422 and "limit is 1,000" in long.json()["detail"]
    assert pool.status_code == 422 and pool.json()["detail"].startswith("pool: Input should be")
    assert k.status_code == 422


def test_a_full_queue_is_answered_503_with_retry_after(pipe, monkeypatch) -> None:
    """One worker, one queue place: the third request at once gets 503, the first two their answers."""
    release = threading.Event()
    discover_many = pipe.discover_many

    def slow(*args, **kwargs):
        release.wait(30)
        return discover_many(*args, **kwargs)

    with serving(pipe, ServeSettings(workers=1, queue=1)) as client:
        monkeypatch.setattr(pipe, "discover_many", slow)
        answers: list = [None, None]

        def ask(slot: int) -> None:
            answers[slot] = client.post("/discover", json={"claim": CLAIM, "evidence": False})

        threads = [threading.Thread(target=ask, args=(slot,)) for slot in (0, 1)]
        for thread in threads:
            thread.start()
        work = client.app.state.work
        for _ in range(500):
            if work.accepted == 2:
                break
            time.sleep(0.01)
        assert work.accepted == 2
        busy = client.post("/discover", json={"claim": CLAIM})
        health = client.get("/health")  # the probe never waits behind model work
        release.set()
        for thread in threads:
            thread.join(30)
        metrics = client.get("/metrics").text
    assert busy.status_code == 503 and int(busy.headers["Retry-After"]) >= 1
    assert "busy" in busy.json()["detail"] and health.status_code == 200
    assert [a.status_code for a in answers] == [200, 200]
    assert "perspectrum_rejected_total 1.0" in metrics


def test_metrics_count_requests_and_stage_times_in_prometheus_text(pipe) -> None:
    with serving(pipe) as client:
        client.post("/discover", json={"claim": CLAIM})
        client.post("/discover", json={"claim": ""})
        answer = client.get("/metrics")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    text = answer.text
    assert 'perspectrum_requests_total{method="POST",path="/discover",status="200"} 1.0' in text
    assert 'perspectrum_requests_total{method="POST",path="/discover",status="422"} 1.0' in text
    assert 'perspectrum_request_seconds_count{path="/discover"} 2.0' in text
    assert 'perspectrum_stage_seconds_count{stage="relevance"} 1.0' in text
    assert "perspectrum_ready 1.0" in text


def test_openapi_docs_page_and_examples_are_served_from_the_app(pipe, dataset) -> None:
    examples = example_claims(dataset)
    with serving(pipe, ServeSettings(examples=examples)) as client:
        spec = client.get("/openapi.json").json()
        docs = client.get("/docs").text
        script = client.get(docs.split('src="')[1].split('"')[0])
        page = client.get("/")
        code = client.get("/static/app.js")
        offered = client.get("/examples").json()
        cors = client.options("/discover", headers={"Origin": "https://elsewhere.example",
                                                    "Access-Control-Request-Method": "POST"})
    assert {"/discover", "/map", "/search", "/health", "/metrics", "/examples"} <= set(spec["paths"])
    request = spec["components"]["schemas"]["DiscoverRequest"]["properties"]
    assert request["claims"]["anyOf"][0]["maxItems"] == MAX_BATCH
    assert set(spec["paths"]["/map"]) == {"post"}  # the page at GET /map is not part of the API
    answered = spec["paths"]["/map"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert answered == {"$ref": "#/components/schemas/MapOut"}
    assert spec["components"]["schemas"]["MapRequest"]["properties"]["documents"]["maxItems"] == MAX_MAP_DOCUMENTS
    quote = spec["components"]["schemas"]["QuoteOut"]["properties"]
    assert {"document", "start", "end", "text", "support_probability"} == set(quote)
    assert "https://" not in docs and script.status_code == 200  # Swagger UI's files are local
    assert page.status_code == 200 and 'id="support"' in page.text and 'id="undermine"' in page.text
    assert code.status_code == 200 and "/discover" in code.text
    assert offered == list(examples) == [c.text for c in dataset.split("dev")]
    assert "access-control-allow-origin" not in cors.headers


def test_cors_only_for_the_origins_named(pipe) -> None:
    with serving(pipe, ServeSettings(cors_origins=("https://debate.example",))) as client:
        allowed = client.options("/discover", headers={"Origin": "https://debate.example",
                                                       "Access-Control-Request-Method": "POST"})
        other = client.options("/discover", headers={"Origin": "https://elsewhere.example",
                                                     "Access-Control-Request-Method": "POST"})
    assert allowed.headers["access-control-allow-origin"] == "https://debate.example"
    assert "access-control-allow-origin" not in other.headers


def test_the_token_guards_every_request_but_health(pipe) -> None:
    with serving(pipe, ServeSettings(token=TOKEN)) as client:
        health = client.get("/health")
        bare = client.post("/discover", json={"claim": CLAIM})
        wrong = client.post("/discover", json={"claim": CLAIM}, headers={"Authorization": "Bearer not-the-token"})
        right = client.post("/discover", json={"claim": CLAIM}, headers={"Authorization": f"Bearer {TOKEN}"})
        guarded = {path: client.get(path).status_code for path in ("/metrics", "/openapi.json", "/docs", "/examples",
                                                                  "/static/app.js", "/map", "/static/map.js")}
        mapped = client.post("/map", json={"claim": "Zoos should exist", "documents": PILE})
        signin = client.get("/", headers={"Accept": "text/html"})
        refused = client.post("/login", json={"token": "not-the-token"})
        assert COOKIE not in client.cookies
        accepted = client.post("/login", json={"token": TOKEN})
        page = client.get("/", headers={"Accept": "text/html"})  # the cookie now rides along
        by_cookie = client.post("/search", json={"query": "zoos"})
    assert health.status_code == 200
    assert bare.status_code == wrong.status_code == mapped.status_code == 401
    assert bare.headers["WWW-Authenticate"] == "Bearer"
    assert right.status_code == 200
    assert set(guarded.values()) == {401}
    assert signin.status_code == 401 and 'id="token"' in signin.text
    assert refused.status_code == 401 and accepted.status_code == 204
    assert TOKEN not in accepted.headers["set-cookie"] and "HttpOnly" in accepted.headers["set-cookie"]
    assert "SameSite=strict" in accepted.headers["set-cookie"]
    assert page.status_code == 200 and by_cookie.status_code == 200


def test_binding_off_loopback_needs_a_token_of_some_length() -> None:
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        check_bind(host, None)
    for host in ("0.0.0.0", "::", "192.168.1.20", "example.org"):
        with pytest.raises(PerspectrumError, match="needs --token"):
            check_bind(host, None)
        check_bind(host, TOKEN)
    with pytest.raises(PerspectrumError, match="at least 16"):
        ServeSettings(token="short")


def test_serve_refuses_bad_options_in_one_line(data_dir, tmp_path) -> None:
    runner = CliRunner()
    common = ["--data-dir", str(data_dir), "--no-verify", "--index-dir", str(tmp_path / "i"),
              "--models-dir", str(tmp_path / "m")]
    exposed = runner.invoke(cli, ["serve", "--host", "0.0.0.0", *common], env={"PERSPECTRUM_TOKEN": None})
    assert exposed.exit_code == 1 and exposed.output.count("\n") == 1
    assert exposed.output.startswith("error: serving on 0.0.0.0 (not loopback) needs --token")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = runner.invoke(cli, ["serve", "--port", str(port), *common])
    assert busy.exit_code == 1 and busy.output.startswith(f"error: cannot listen on 127.0.0.1:{port}: ")
    assert busy.output.count("\n") == 1
    short = runner.invoke(cli, ["serve", "--token", "short", *common])
    assert short.exit_code == 1 and "at least 16" in short.output
    ported = runner.invoke(cli, ["serve", "--allowed-host", "perspectrum.lan:8000", *common])
    assert ported.exit_code == 1 and ported.output.count("\n") == 1
    assert ported.output.startswith("error: --allowed-host 'perspectrum.lan:8000': give the host without a port")


def test_example_claims_come_from_dev_only(data_dir) -> None:
    dataset = load_dataset(data_dir, verify=False)
    assert set(example_claims(dataset, count=1)) <= {c.text for c in dataset.split("dev")}


def test_only_requests_that_name_this_server_in_host_are_answered(pipe) -> None:
    """DNS rebinding: a page on evil.example points its name at 127.0.0.1, and the browser
    then sends its requests to this server with ``Host: evil.example``."""
    hosts = ("localhost", "localhost:8000", "127.0.0.1:8000", "[::1]:8000", "[::1]", "LocalHost")
    with serving(pipe, ready=False) as client:
        evil = client.get("/examples", headers={"Host": "evil.example"})
        evil_port = client.post("/search", json={"query": "zoos"}, headers={"Host": "evil.example:8000"})
        suffix = client.get("/examples", headers={"Host": "localhost.evil.example"})
        loopback = {host: client.get("/examples", headers={"Host": host}).status_code for host in hosts}
    assert evil.status_code == evil_port.status_code == suffix.status_code == 400
    assert evil.text == "Invalid host header"
    assert set(loopback.values()) == {200}, loopback
    # as `serve --host 192.168.1.20 --allowed-host perspectrum.lan --allowed-host fe80::1` builds them
    named = ServeSettings(token=TOKEN, allowed_hosts=("192.168.1.20", *LOOPBACK_HOSTS, "perspectrum.lan", "fe80::1"))
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    with serving(pipe, named, ready=False) as client:
        answered = {host: client.get("/examples", headers={**bearer, "Host": host}).status_code
                    for host in ("192.168.1.20:8000", "perspectrum.lan", "PERSPECTRUM.LAN:80", "[fe80::1]:8000",
                                 "127.0.0.1:8000")}
        other = client.get("/examples", headers={**bearer, "Host": "192.168.1.21:8000"})
    assert set(answered.values()) == {200}, answered
    assert other.status_code == 400
    with serving(pipe, ServeSettings(allowed_hosts=("*",)), ready=False) as client:  # behind a proxy
        assert client.get("/examples", headers={"Host": "anything.example"}).status_code == 200
    with pytest.raises(PerspectrumError, match="not a host name"):
        ServeSettings(allowed_hosts=("exa*mple.org",))


def _policy(response) -> dict[str, list[str]]:
    """A Content-Security-Policy header as {directive: sources}."""
    directives = [part.split() for part in response.headers["content-security-policy"].split(";") if part.strip()]
    return {words[0]: words[1:] for words in directives}


def _inline_sources(html: str, tag: str) -> list[str]:
    """The CSP hash sources of ``html``'s inline ``tag`` blocks (script or style, without src)."""
    blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", html, re.DOTALL)
    return [f"'sha256-{base64.b64encode(hashlib.sha256(b.encode()).digest()).decode()}'" for b in blocks]


def test_every_response_carries_security_headers_and_a_policy_that_fits_what_it_loads(pipe) -> None:
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    with serving(pipe, ServeSettings(token=TOKEN), ready=False) as client:
        page = client.get("/", headers=bearer)
        map_page = client.get("/map", headers=bearer)
        files = [client.get(f"/static/{name}", headers=bearer) for name in ("common.js", "app.js", "map.js", "style.css")]
        signin = client.get("/", headers={"Accept": "text/html"})
        answer = client.get("/examples", headers=bearer)
        refused = client.post("/discover", json={"claim": CLAIM})
        docs, redoc = client.get("/docs", headers=bearer), client.get("/redoc", headers=bearer)
        loaded = re.findall(r'(?:src|href)="([^"]+)"', docs.text + redoc.text)
        docs_files = [client.get(path, headers=bearer) for path in loaded]
    for response in (page, map_page, *files, signin, answer, refused, docs, redoc, *docs_files):
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["referrer-policy"] == "no-referrer"
        assert _policy(response)["frame-ancestors"] == ["'none'"]
    # the page: its own files only (scripts, styles, icon), no inline script, style or style attribute
    assert page.status_code == 200 and signin.status_code == 401
    assert "<script>" not in page.text and "<style" not in page.text and "style=" not in page.text
    assert re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"', page.text) == \
        ["data:,", "/static/style.css", "/static/common.js", "/static/app.js"]
    assert map_page.status_code == 200 and _policy(map_page) == _policy(page)
    assert "<script>" not in map_page.text and "<style" not in map_page.text and "style=" not in map_page.text
    assert re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"', map_page.text) == \
        ["data:,", "/static/style.css", "/static/common.js", "/static/map.js"]
    assert 'href="/map"' in page.text and 'href="/"' in map_page.text  # each view links to the other
    policy = _policy(page)
    assert policy["default-src"] == ["'none'"] and policy["connect-src"] == ["'self'"]
    assert "data:" in policy["img-src"] and "'unsafe-inline'" not in str(policy) and "'unsafe-eval'" not in str(policy)
    # the sign-in page's inline script and style run by their hashes, and nothing else inline
    assert _policy(signin) == policy
    assert policy["script-src"] == ["'self'", *_inline_sources(signin.text, "script")]
    assert policy["style-src"] == ["'self'", *_inline_sources(signin.text, "style")]
    # the API docs (Swagger UI, ReDoc): their files are this server's, their inline scripts allowed by hash
    assert docs.status_code == redoc.status_code == 200 and all(r.status_code == 200 for r in docs_files)
    assert all(path.startswith("/") for path in loaded)
    for html, response in ((docs.text, docs), (redoc.text, redoc)):
        allowed = _policy(response)
        assert allowed["script-src"] == ["'self'", *_inline_sources(html, "script")]
        assert "'self'" in allowed["style-src"] and "'self'" in allowed["connect-src"]  # /openapi.json
        assert "data:" in allowed["img-src"] and "'unsafe-eval'" not in allowed["script-src"]
    assert len(_inline_sources(docs.text, "script")) == 1
    assert _policy(docs)["style-src"] == ["'self'"]  # Swagger UI needs no inline style
    assert _policy(redoc)["style-src"] == ["'self'", "'unsafe-inline'"]  # ReDoc writes its styles at run time


@contextmanager
def uvicorn_serving(app, keep_alive: float, head: float) -> Iterator[int]:
    """``app`` served by uvicorn as `perspectrum serve` configures it, on a free loopback port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    server = uvicorn.Server(uvicorn_config(app, keep_alive_seconds=keep_alive, head_seconds=head))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        for _ in range(500):
            if server.started:
                break
            time.sleep(0.01)
        assert server.started
        yield listener.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
        listener.close()


def seconds_until_closed(port: int, first: bytes, trickle: bytes = b"", limit: float = 5.0) -> tuple[float, bytes]:
    """Send ``first``, then ``trickle`` every 0.1 s: the seconds until the server closes the
    connection (``inf``: not within ``limit``) and what it sent before."""
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.settimeout(0.1)
        started = time.monotonic()
        conn.sendall(first)
        received = b""
        while time.monotonic() - started < limit:
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                try:
                    conn.sendall(trickle)
                except OSError:
                    return time.monotonic() - started, received
                continue
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                return time.monotonic() - started, received
            received += chunk
    return math.inf, received


def test_idle_and_slow_connections_are_closed_at_their_deadlines(pipe) -> None:
    """Slowloris: every connection that holds back its request is closed, at deadlines made
    short here (a default server: 5 s keep-alive, 10 s for a head, 30 s for a body)."""
    app = create_app(pipe, ServeSettings(body_seconds=0.5))
    head = b"POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n"
    with uvicorn_serving(app, keep_alive=0.5, head=0.5) as port:
        silent = seconds_until_closed(port, b"", limit=60)
        half_head = seconds_until_closed(port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n", trickle=b"X: y\r\n",
                                         limit=60)
        slow_body = seconds_until_closed(port, head + b'{"token": ', trickle=b" ", limit=60)
        kept = seconds_until_closed(port, b"GET /examples HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", limit=60)
        answered = seconds_until_closed(port, head + b'{"token": "x"}'.ljust(40), limit=0.5)
    for seconds, _ in (silent, half_head, slow_body, kept):
        # closed by the server (inf: still open when the client gave up), and not before its deadline
        assert 0.4 < seconds < math.inf, (silent, half_head, slow_body, kept)
    assert silent[1] == half_head[1] == b""
    assert slow_body[1].startswith(b"HTTP/1.1 408 ") and b"did not arrive within 0.5 s" in slow_body[1]
    assert kept[1].startswith(b"HTTP/1.1 200 ")
    assert answered[1].startswith(b"HTTP/1.1 204 ")  # a request in time is answered


def test_wrong_tokens_are_throttled_per_client_and_the_right_one_waits_too(pipe) -> None:
    with serving(pipe, ServeSettings(token=TOKEN), ready=False) as client:
        now = [1_800_000_000.0]
        client.app.state.guard.clock = lambda: now[0]
        wrong = [client.post("/login", json={"token": f"wrong-token-number-{i}"}) for i in range(TRIES)]
        throttled = client.post("/login", json={"token": TOKEN})  # even the right one: it is a guess too
        by_header = client.get("/examples", headers={"Authorization": f"Bearer {TOKEN}"})
        elsewhere = TestClient(client.app, base_url="http://127.0.0.1", client=("10.0.0.2", 40000))
        other_client = elsewhere.post("/login", json={"token": TOKEN})
        now[0] += TRY_WINDOW
        later = client.post("/login", json={"token": TOKEN})
    assert [r.status_code for r in wrong] == [401] * TRIES
    assert throttled.status_code == by_header.status_code == 429
    assert 1 <= int(throttled.headers["Retry-After"]) <= TRY_WINDOW
    assert throttled.json()["detail"].startswith("too many wrong tokens from this client; try again in ")
    assert COOKIE not in throttled.headers.get("set-cookie", "")
    assert other_client.status_code == 204 and later.status_code == 204


def test_the_throttle_forgets_old_failures_and_keeps_a_bounded_table() -> None:
    now = [0.0]
    throttle = Throttle(tries=2, window=10, clients=3, clock=lambda: now[0])
    throttle.failed("a")
    now[0] = 5
    throttle.failed("a")
    assert throttle.wait("a") == 5 and throttle.wait("b") is None
    now[0] = 10.5
    assert throttle.wait("a") is None  # the first failure left the window
    for client in "bcde":
        throttle.failed(client)
        throttle.failed(client)
    # three clients remembered (clients=3): the longest quiet, a and b, forgotten
    assert [throttle.wait(client) is None for client in "bcde"] == [True, False, False, False]
    throttle.failed("a")
    assert throttle.wait("a") is None  # its failure at 5 went with it


def test_the_session_cookie_is_signed_expires_and_is_not_the_tokens_digest(pipe) -> None:
    with serving(pipe, ServeSettings(token=TOKEN), ready=False) as client:
        now = [1_800_000_000.0]
        client.app.state.guard.clock = lambda: now[0]
        accepted = client.post("/login", json={"token": TOKEN})
        session = client.cookies[COOKIE]
        signed_in = client.get("/examples")
        now[0] += SESSION_SECONDS - 1
        still = client.get("/examples")
        now[0] += 2
        expired = client.get("/examples")
        client.cookies.clear()
        expires, signature = session.split(".")
        forged = {"digest": hashlib.sha256(TOKEN.encode()).hexdigest(),  # what the cookie used to be
                  "later": f"{int(expires) + 10 * SESSION_SECONDS}.{signature}",
                  "unsigned": f"{int(now[0]) + 60}.{'0' * 64}",
                  "garbled": "x.y"}
        refused = {}
        for name, value in forged.items():
            client.cookies.clear()
            client.cookies.set(COOKIE, value)
            refused[name] = client.get("/examples").status_code
    set_cookie = accepted.headers["set-cookie"]
    assert accepted.status_code == 204 and TOKEN not in set_cookie
    assert f"Max-Age={SESSION_SECONDS}" in set_cookie and "HttpOnly" in set_cookie and "SameSite=strict" in set_cookie
    assert int(expires) == 1_800_000_000 + SESSION_SECONDS
    assert signed_in.status_code == still.status_code == 200 and expired.status_code == 401
    assert set(refused.values()) == {401}, refused


def test_search_answers_every_pool_and_method_once_setup_has_run(trained_dir, tmp_path) -> None:
    """`perspectrum setup --full` (``prepare(full=True)``) builds every index /search offers, the
    sentences' BM25 and dense index included, the latter from every evidence sentence's vector,
    encoded once; run here over a copy of the trained fixture's indexes, which lack both."""
    data, indexes, models = trained_dir
    shutil.copytree(indexes, tmp_path / "indexes", symlinks=True)
    shutil.rmtree(tmp_path / "indexes" / "sentences" / "vectors", ignore_errors=True)  # what training encoded
    done = prepare(data, tmp_path / "indexes", models, verify=False, full=True)
    assert [(i["pool"], i["kind"]) for i in done["indexes"] if i["status"] == "built"] == [
        ("sentences", "bm25"), ("sentences", "dense")]
    assert done["sentence_vectors"]["encoded"] == next(i["documents"] for i in done["indexes"] if i["pool"] == "sentences")
    again = prepare(data, tmp_path / "indexes", models, verify=False, full=True)
    assert {i["status"] for i in again["indexes"]} == {"reused"} and "sentence_vectors" not in again
    pipe = Pipeline.load(data, tmp_path / "indexes", models, verify=False)
    with serving(pipe) as client:
        answers = {(pool, method): client.post("/search", json={"query": "zoos and endangered species",
                                                                "pool": pool, "method": method, "k": 2})
                   for pool in ("perspectives", "evidence", "sentences") for method in METHODS}
    assert {key: a.status_code for key, a in answers.items()} == dict.fromkeys(answers, 200)
    assert all(a.json() and all(h["text"] for h in a.json()) for a in answers.values())
