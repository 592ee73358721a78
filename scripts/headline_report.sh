#!/usr/bin/env bash
# The README's headline plan (nanoGPT Tiny Shakespeare, global batch 16 of 64
# characters, pp=2,dp=2,tp=2,sp=1,zero=1,mb=4, 1F1B), compiled as
# scripts/train.sh compiles it, explained as one HTML page (dist-explain
# format=html, with the one-rank artifact of the same model as the "one
# device" baseline) and photographed by headless Chromium.
#
#   scripts/headline_report.sh [OUT_DIR]    (default: docs)
#
# Writes OUT_DIR/headline-report.html and OUT_DIR/headline-report.png.
# Environment: BUILD_DIR (default <repo>/build) holds bin/shard-opt and the
# venv; CHROMIUM (default: chromium on PATH).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
OUT=${1:-$ROOT/docs}
CONFIG=$ROOT/../shared/configs/models/nanogpt-shakespeare-char-cpu.json
OPT=$BUILD_DIR/bin/shard-opt
PY=$BUILD_DIR/venv/bin/python
CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}
PLAN=pp=2,dp=2,tp=2,sp=1,zero=1,mb=4,schedule=1f1b

die() { echo "headline_report.sh: error: $*" >&2; exit 1; }
[[ -x $OPT ]] || die "$OPT not built (run scripts/setup.sh)"
[[ -x $PY ]] || die "$PY missing (run scripts/setup.sh)"
[[ -f $CONFIG ]] || die "model config $CONFIG not found"
[[ -n $CHROMIUM ]] || die "chromium not found (scripts/setup.sh installs it; or set CHROMIUM)"
OUT=$(mkdir -p "$OUT" && cd "$OUT" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

build() { # BATCH: the model's tfm IR at that batch
  PYTHONPATH=$ROOT/python "$PY" -m autoshard.models "$CONFIG" --batch "$1" --seq 64 \
    --vocab-multiple 64 -q
}
# The one-rank artifact: the "one device" bars.
build 16 | "$OPT" --tfm-autodiff --rt-lower --rt-fuse-epilogues --rt-plan-memory \
  --rt-export="output=$TMP/one-rank.json" -o /dev/null
# The plan, mb=4 microbatches of 4 (scripts/train.sh's passes).
build 4 | "$OPT" --tfm-autodiff=microbatches=4 \
  --dist-apply-plan="plan=$PLAN" --dist-propagate --dist-partition \
  --dist-pipeline-split --dist-hoist-argument-gathers --dist-bucket-collectives \
  --dist-overlap-collectives --dist-verify-comm \
  --dist-explain="format=html output=$OUT/headline-report.html baseline=$TMP/one-rank.json" \
  -o /dev/null
"$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
  --user-data-dir="$TMP/profile" --window-size=1300,1500 \
  --screenshot="$OUT/headline-report.png" "file://$OUT/headline-report.html" 2>/dev/null
echo "wrote $OUT/headline-report.html and $OUT/headline-report.png"
