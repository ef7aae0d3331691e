"""How long a newcomer waits: from `git clone` to the quickstart's answer, on this machine.

    python -m benchmarks.first_answer [--claim "..."] [--json eval/results/first_answer_shipped_nosplit.json]

Clones this repository's HEAD into a fresh folder and runs ``scripts/quickstart.sh`` there under
``/usr/bin/time -v``, as a new user would: a new virtual environment (packages from pip's cache:
warm), no indexes, no unpacked models, an empty cache of traced model copies. Stores the time
to the answer and to the script's end, the peak memory (the largest process), each step's
seconds as the script reports them,
the index build times ``perspectrum setup`` printed, and the answer's first lines. Needs
``$PERSPECTRUM_DATA`` (or ``../shared/data/perspectrum-v1.0``) and git. ``--cold-install`` also
times the install step alone with pip's cache off (every package fetched from the index).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_batch import cpu_model
from perspectrum._io import write_json

ROOT = Path(__file__).resolve().parents[1]
CLAIM = "Social media does more harm than good"


def _time_v(report: str, field: str) -> str:
    found = re.search(rf"^\s*{re.escape(field)}: (.+)$", report, re.M)
    return found.group(1).strip() if found else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claim", default=CLAIM)
    parser.add_argument("--json", type=Path, default=ROOT / "eval" / "results" / "first_answer_shipped_nosplit.json")
    parser.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    parser.add_argument("--cold-install", action="store_true",
                        help="also time the install step alone in a second clone with pip's cache off")
    args = parser.parse_args()
    data = Path(os.environ.get("PERSPECTRUM_DATA", ROOT.parent / "shared" / "data" / "perspectrum-v1.0")).resolve()
    work = Path(tempfile.mkdtemp(prefix="first-answer-"))
    clone = work / "perspectrum"
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PERSPECTRUM_", "VIRTUAL_ENV"))}
    env.update(PERSPECTRUM_DATA=str(data), PERSPECTRUM_CACHE=str(work / "cache"),
               PATH=":".join(p for p in env.get("PATH", "").split(":") if ".venv" not in p))
    started = time.perf_counter()
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    cloned = time.perf_counter() - started
    run = subprocess.run(["/usr/bin/time", "-v", "bash", "scripts/quickstart.sh", args.claim], cwd=clone, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # one stream, in order
    wall = time.perf_counter() - started
    out = run.stdout
    if run.returncode != 0:
        raise SystemExit(f"the quickstart failed ({run.returncode}):\n{out[-3000:]}")
    steps = {m.group(1): int(m.group(2)) for m in re.finditer(r"^==> (.+): done in (\d+) s$", out, re.M)}
    answered = re.search(r"^==> answered in (\d+) s", out, re.M)
    if answered is None:
        raise SystemExit("the quickstart did not say when it answered")

    def between(start: str, end: str) -> str:
        return out[out.index(start):out.index(end)] if start in out and end in out else ""

    def built(text: str) -> dict[str, float]:
        return {f"{m.group(1)}/{m.group(2)}": float(m.group(3)) for m in
                re.finditer(r"^│\s*(\w+)\s*│\s*(\w+)\s*│\s*[\d,]+\s*│\s*built\s*│\s*([\d.]+)\s*│", text, re.M)}

    answer = between("==> discovering the perspectives (", "==> discovering the perspectives: done")
    peak_kb = int(_time_v(out, "Maximum resident set size (kbytes)") or 0)
    record: dict[str, Any] = {
        "command": "python -m benchmarks.first_answer",
        "commit": commit,
        "claim": args.claim,
        "machine": f"{os.cpu_count()} CPU cores ({platform.machine()}, {cpu_model()}); pip cache warm",
        "answer_seconds": round(cloned + int(answered.group(1)), 1),
        "answer_seconds_means": "from the start of `git clone` to the answer printed",
        "wall_seconds": round(wall, 1),
        "wall_seconds_means": "to the end of the script, the remaining evidence sentences encoded after the answer",
        "clone_seconds": round(cloned, 1),
        "peak_rss_gb": round(peak_kb / 1024 ** 2, 2),
        "steps_seconds": steps,
        "index_build_seconds": built(between("==> preparing this machine", "==> discovering the perspectives (")),
        "after_the_answer_seconds": built(between("==> finishing", "\tCommand being timed")),
        "answer": [line.rstrip().replace(str(work), "<fresh folder>") for line in answer.splitlines()[1:]
                   if line.strip()][:40],
    }
    if args.cold_install:
        second = work / "cold"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(second)], check=True)
        begun = time.perf_counter()
        subprocess.run(["bash", "scripts/setup.sh"], cwd=second, env={**env, "EXTRAS": "", "PIP_NO_CACHE_DIR": "1"},
                       check=True, capture_output=True)
        record["install_seconds_pip_cache_off"] = round(time.perf_counter() - begun, 1)
    write_json(args.json, record)
    print(f"answered {record['answer_seconds']:.0f} s after git clone, finished in {wall:.0f} s "
          f"(peak {record['peak_rss_gb']} GB): {steps}")
    if args.keep:
        print(f"the clone is in {clone}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
