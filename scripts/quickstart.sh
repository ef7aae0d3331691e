#!/usr/bin/env bash
# From a fresh clone: install, check the data, prepare the machine and discover the
# perspectives on a claim. Without a stance model in models/, it first trains one with the
# fast recipe (about 7 min on 2 cores: `perspectrum train stance --fast`). `perspectrum setup`
# then builds the indexes and, without the other fine-tuned models, fits light heads on
# frozen MiniLM embeddings (a few minutes, once; seconds when already done); the stance
# model answers in place of the light stance head.
# Needs PERSPECTRUM_DATA (or ../shared/data/perspectrum-v1.0 beside the clone).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export PERSPECTRUM_DATA="${PERSPECTRUM_DATA:-../shared/data/perspectrum-v1.0}"
claim="${1:-Animals should have lawful rights}"
.venv/bin/perspectrum data check
if [ ! -f "${PERSPECTRUM_MODELS:-models}/stance/perspectrum.json" ]; then
    .venv/bin/perspectrum train stance --fast
fi
.venv/bin/perspectrum setup
.venv/bin/perspectrum discover "$claim"
