#!/usr/bin/env bash
# Set up (if needed) and run the test suite. Tests use their own fixtures, never the data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m pytest -q "$@"
