#!/usr/bin/env bash
# Set up (if needed) and run the test suite, the slow tests too (--slow; a plain `pytest` skips
# them). Tests use their own fixtures, never the data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# Tests that start Lucene's JVM in the test process run in a process of their own: once, in
# the full suite, the process crashed (SIGSEGV, no trace) in a JVM test some 200 tests after
# the JVM had started, and never with the JVM tests alone (README, Test). Pytest's "no tests" (5)
# is fine for either half when arguments select tests of one kind only.
status=0
for selection in "not jvm" "jvm"; do
    .venv/bin/python -m pytest -q --slow -m "$selection" "$@" || { code=$?; [ "$code" -eq 5 ] || status=$code; }
done
exit $status
