#!/usr/bin/env bash
# Main job until the training driver lands: build a real model's tfm IR from
# its HF-style config and compile it with shard-opt (verify + op statistics).
#
#   scripts/compile_model.sh [CONFIG.json] [--batch B] [--seq S] [-o OUT.mlir]
#
# Defaults: the nanoGPT Tiny Shakespeare CPU model, batch 12, seq 64.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
CONFIG=$ROOT/../shared/configs/models/nanogpt-shakespeare-char-cpu.json
if [[ $# -gt 0 && $1 != -* ]]; then CONFIG=$1; shift; fi
BATCH=12 SEQ=64 OUT=$BUILD_DIR/model.mlir
while [[ $# -gt 0 ]]; do
  case $1 in
    --batch) BATCH=$2; shift 2 ;;
    --seq) SEQ=$2; shift 2 ;;
    -o) OUT=$2; shift 2 ;;
    *) echo "compile_model.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -x $BUILD_DIR/bin/shard-opt && -x $BUILD_DIR/venv/bin/python ]] || "$ROOT/scripts/setup.sh"
PYTHONPATH=$ROOT/python "$BUILD_DIR/venv/bin/python" -m autoshard.models "$CONFIG" \
  --batch "$BATCH" --seq "$SEQ" -o "$OUT"
echo "model IR: $OUT"
"$BUILD_DIR/bin/shard-opt" "$OUT" --print-op-stats -o /dev/null
