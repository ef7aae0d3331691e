#!/usr/bin/env bash
# Create .venv (once) and install perspectrum with its test extras into it.
# torch is installed first and pinned: an unpinned torch would pull GBs of CUDA wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[test]"
