"""Does `perspectrum serve`'s memory level off? Its resident set size over many requests.

    python -m benchmarks.serve_memory [--requests 1000] [--every 50] [--size auto|fixture|real]
                                      [--mix memory|soak] [--json eval/results/serve_memory_fixture_nosplit.json]

A fault run saw the server grow from 1,146 to 1,283 MB over 200 requests; growth that goes
on is a leak, growth that stops is caches and allocators filling. This starts a real
`perspectrum serve --port 0`, waits for ``/health``, then sends ``--requests`` requests one
at a time: every second one a ``POST /discover`` of a claim made unique by a counter (so a
cache keyed by claim would grow with each), the others ``POST /search`` (pools and methods
in turn) or ``GET /health``; the server's RSS (``/proc/<pid>/status``) is read before the
first and after every ``--every``.

``--mix soak`` is the soak: every fourth request a ``POST /discover``, every twentieth a
``POST /map`` of three short documents (made unique by the counter), every fifth a bad body
(not JSON, a blank claim, a claim of 5,000 characters, a map without documents, in turn), the
rest ``POST /search``; each kind's answers are counted by status, and the run says whether
any request got an answer other than the one it should (200, or 4xx for a bad body).

``--size real`` serves PERSPECTRUM (``$PERSPECTRUM_DATA``) with this machine's prepared
indexes and models; ``fixture`` the tests' ten-claim fixture, prepared in a temporary folder
(`perspectrum setup`'s light heads, seconds). ``auto``: real when ``$PERSPECTRUM_DATA`` is
set and the machine is prepared, else the fixture, saying why. Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from perspectrum import folders
from perspectrum._io import write_json

ROOT = Path(__file__).resolve().parents[1]
POOLS = ("perspectives", "evidence", "sentences")
METHODS = ("bm25", "dense", "hybrid")


def rss_mb(pid: int) -> float:
    """The resident set size of process ``pid``, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise SystemExit(f"no VmRSS for process {pid}")


def why_not_real() -> str | None:
    """Why the real data cannot be served here, or ``None``: it can."""
    from perspectrum.pipeline.pipeline import NotPrepared, check_prepared

    if not os.environ.get("PERSPECTRUM_DATA"):
        return "$PERSPECTRUM_DATA is not set"
    try:
        check_prepared(folders.models_dir())
    except NotPrepared as exc:
        return exc.problem
    if not folders.index_dir().is_dir():
        return f"no indexes in {folders.index_dir()} (run `perspectrum setup`)"
    return None


def fixture(root: Path) -> list[str]:
    """The ten-claim fixture, prepared under ``root``: the serve options that read it."""
    from perspectrum.train import prepare
    from tests.conftest import write_dataset  # the fixture the tests serve

    data = write_dataset(root / "data")
    prepare(data, root / "indexes", root / "models", verify=False)
    return ["--data-dir", str(data), "--no-verify", "--index-dir", str(root / "indexes"),
            "--models-dir", str(root / "models")]


def start_server(options: list[str]) -> tuple[subprocess.Popen, str]:
    """`perspectrum serve --port 0 <options>` once ``/health`` says ready: the process and its URL."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("PERSPECTRUM_TOKEN", None)
    process = subprocess.Popen([sys.executable, "-m", "perspectrum", "serve", "--port", "0", *options], cwd=ROOT,
                               env=env, stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline() if process.stdout else ""
    if not line.startswith("serving http://"):
        process.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    base = line.split()[1].rstrip("/")
    for _ in range(6000):
        try:
            health = httpx.get(f"{base}/health", timeout=5)
            if health.status_code == 200:
                return process, base
            if health.json()["status"] == "failed":
                raise SystemExit(f"the server failed to load: {health.json()['error']}")
        except httpx.TransportError:
            pass
        if process.poll() is not None:
            raise SystemExit("the server exited while loading")
        time.sleep(0.1)
    process.kill()
    raise SystemExit("the server was not ready within 10 minutes")


def claims_of(options: list[str]) -> list[str]:
    """The claims asked about: the dev split's (the fixture's: all ten)."""
    from perspectrum.data import load_dataset

    data = options[options.index("--data-dir") + 1] if "--data-dir" in options else None
    dataset = load_dataset(data, verify=False)
    return [c.text for c in dataset.split("dev")] or [c.text for c in dataset.claims.values()]


#: The bad bodies the soak sends in turn: (path, raw body), each to be refused with a 4xx.
BAD = (("/discover", b"{not json"), ("/discover", b'{"claim": "   "}'),
       ("/discover", ('{"claim": "' + "word " * 1000 + '"}').encode()), ("/map", b'{"claim": "Zoos", "documents": []}'))
#: The documents of the soak's map requests (the counter makes each request's own).
LETTERS = ("Zoos protect species that would otherwise die out, so they should stay open.",
           "Keeping animals in cages is cruel; zoos should be closed.",
           "Zoos teach children about animals they would never see otherwise.")


def ask(client: httpx.Client, number: int, claims: list[str], mix: str) -> tuple[str, httpx.Response]:
    """Request ``number`` of the mix: its kind and the server's answer."""
    claim = f"{claims[number % len(claims)]} (variant {number})"
    if mix == "soak" and number % 20 == 0:
        documents = [{"id": f"letter-{n}", "text": f"{text} (letter {number})"} for n, text in enumerate(LETTERS)]
        return "map", client.post("/map", json={"claim": claim, "documents": documents})
    if mix == "soak" and number % 5 == 0:
        path, body = BAD[number // 5 % len(BAD)]
        return "bad", client.post(path, content=body, headers={"content-type": "application/json"})
    if number % (4 if mix == "soak" else 2) == 1:
        return "discover", client.post("/discover", json={"claim": claim})
    if mix == "memory" and number % 10 == 0:
        return "health", client.get("/health")
    turn = number // 2
    return "search", client.post("/search", json={"query": claims[turn % len(claims)], "k": 10,
                                                    "pool": POOLS[turn % 3], "method": METHODS[turn // 3 % 3]})


def run(base: str, pid: int, claims: list[str], requests: int, every: int,
        mix: str = "memory") -> list[dict[str, Any]]:
    """Send the requests; the RSS before the first and after every ``every``th, with the
    answers so far counted by kind and status."""
    samples = [{"requests": 0, "rss_mb": rss_mb(pid)}]
    statuses: dict[str, int] = {}
    with httpx.Client(base_url=base, timeout=600) as client:
        for number in range(1, requests + 1):
            kind, answer = ask(client, number, claims, mix)
            key = str(answer.status_code) if mix == "memory" else f"{kind} {answer.status_code}"
            statuses[key] = statuses.get(key, 0) + 1
            if number % every == 0 or number == requests:
                samples.append({"requests": number, "rss_mb": rss_mb(pid), "statuses": dict(statuses)})
                print(samples[-1], flush=True)
    return samples


def unexpected(statuses: dict[str, int]) -> dict[str, int]:
    """The answers a soak should not give: anything but 200, or for a bad body anything but a 4xx."""
    out = {}
    for key, count in statuses.items():
        kind, _, status = key.rpartition(" ")
        wanted = status.startswith("4") if kind == "bad" else status == "200"
        if not wanted:
            out[key] = count
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--every", type=int, default=50, help="read the RSS after every this many requests")
    parser.add_argument("--size", choices=("auto", "fixture", "real"), default="auto")
    parser.add_argument("--mix", choices=("memory", "soak"), default="memory",
                        help="memory: discover, search and health; soak: also map and bad bodies")
    parser.add_argument("--json", type=Path, default=ROOT / "eval" / "results" / "serve_memory_fixture_nosplit.json")
    args = parser.parse_args()
    size, why = args.size, why_not_real() if args.size != "fixture" else None
    if size == "real" and why:
        raise SystemExit(f"cannot serve the real data: {why}")
    if size == "auto":
        size = "fixture" if why else "real"
        if why:
            print(f"serving the ten-claim fixture: {why}", flush=True)
    with tempfile.TemporaryDirectory(prefix="serve-memory-") as tmp:
        options = fixture(Path(tmp)) if size == "fixture" else []
        claims = claims_of(options)
        started = time.perf_counter()
        process, base = start_server(options)
        try:
            samples = run(base, process.pid, claims, args.requests, args.every, args.mix)
        finally:
            process.terminate()
            process.wait(30)
    wall = time.perf_counter() - started
    half = [s for s in samples if s["requests"] >= args.requests // 2]
    result = {
        "command": " ".join(["python -m benchmarks.serve_memory", *sys.argv[1:]]),
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        or "not recorded",
        "machine": f"{os.cpu_count()} CPU cores ({platform.machine()}, {platform.processor() or 'cpu'})",
        "date": time.strftime("%Y-%m-%d"), "size": size, "mix": args.mix,
        "why_fixture": why if size == "fixture" else None, "requests": args.requests,
        "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()}, {platform.processor() or 'cpu'})",
        "seconds": round(wall, 1), "samples": samples,
        "growth_mb": {"first_half": round(half[0]["rss_mb"] - samples[0]["rss_mb"], 1),
                      "second_half": round(samples[-1]["rss_mb"] - half[0]["rss_mb"], 1)},
    }
    if args.mix == "soak":
        result["answers"] = samples[-1]["statuses"]
        result["unexpected"] = unexpected(samples[-1]["statuses"])
    print(f"wrote {write_json(args.json, result)}")
    print(f"RSS {samples[0]['rss_mb']} MB at ready, {half[0]['rss_mb']} MB after {half[0]['requests']} requests, "
          f"{samples[-1]['rss_mb']} MB after {samples[-1]['requests']}")


if __name__ == "__main__":
    main()
