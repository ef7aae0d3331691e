#!/usr/bin/env bash
# From a fresh clone: install what `discover` needs, check the data, prepare the machine and
# discover the perspectives on a claim. `perspectrum setup` builds the indexes and unpacks the
# trained models that ship with perspectrum onto their base encoders (once; seconds when
# already done). Nothing is trained: the models and their dev-chosen settings ship. After the
# answer, `perspectrum setup --full` encodes the rest of the evidence sentences for later answers.
# Needs PERSPECTRUM_DATA (or ../shared/data/perspectrum-v1.0 beside the clone).
# Each step says what it does and how long it usually takes, and ends with its time.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
step() {  # step NAME ESTIMATE COMMAND...: one line before, one after with the seconds it took
    local name="$1" estimate="$2" begun=$SECONDS
    shift 2
    echo "==> ${name} (${estimate})" >&2
    "$@"
    echo "==> ${name}: done in $((SECONDS - begun)) s" >&2
}
step "installing what discover needs" "about a minute with a warm pip cache" env EXTRAS="${EXTRAS-}" bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export PERSPECTRUM_DATA="${PERSPECTRUM_DATA:-../shared/data/perspectrum-v1.0}"
claim="${1:-Animals should have lawful rights}"
step "checking the data" "seconds" .venv/bin/perspectrum data check
step "preparing this machine: indexes and the shipped models" "about 3 minutes the first time, seconds after" \
    .venv/bin/perspectrum setup
step "discovering the perspectives" "seconds" .venv/bin/perspectrum discover "$claim"
echo "==> answered in $((SECONDS - started)) s from the start of this script" >&2
# The answer encoded only the evidence sentences it read; the rest now, so that no later answer
# waits for its own. Interrupting keeps what is done; answers encode what they need meanwhile.
step "finishing: encoding the other evidence sentences for later answers" "1 to 3 minutes, once" \
    .venv/bin/perspectrum setup --full
