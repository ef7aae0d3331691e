#!/usr/bin/env bash
# From a fresh clone: install what `discover` needs, check the data, prepare the machine and
# discover the perspectives on a claim. `perspectrum setup` builds the indexes and unpacks the
# trained models that ship with perspectrum onto their base encoders (once; seconds when
# already done). Nothing is trained: the models and their dev-chosen settings ship.
# Needs PERSPECTRUM_DATA (or ../shared/data/perspectrum-v1.0 beside the clone).
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${EXTRAS-}" bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export PERSPECTRUM_DATA="${PERSPECTRUM_DATA:-../shared/data/perspectrum-v1.0}"
claim="${1:-Animals should have lawful rights}"
.venv/bin/perspectrum data check
.venv/bin/perspectrum setup
.venv/bin/perspectrum discover "$claim"
