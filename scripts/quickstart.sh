#!/usr/bin/env bash
# From a fresh clone: install, check the data, and discover the perspectives on a claim.
# The first discover builds the missing indexes and, without fine-tuned models in models/,
# trains light heads on frozen MiniLM embeddings (a few minutes, once).
# Needs PERSPECTRUM_DATA (or ../shared/data/perspectrum-v1.0 beside the clone).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export PERSPECTRUM_DATA="${PERSPECTRUM_DATA:-../shared/data/perspectrum-v1.0}"
claim="${1:-Animals should have lawful rights}"
.venv/bin/perspectrum data check
.venv/bin/perspectrum discover "$claim"
