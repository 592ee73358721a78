#!/usr/bin/env bash
# Main job: build a model's tfm IR from its config, compile it with
# shard-opt (autodiff, lowering, memory plan, export) and train it with
# shard-run. Defaults: nanoGPT's Tiny Shakespeare CPU recipe.
#
#   scripts/train.sh [--config FILE] [--batch 12] [--seq 64] [--steps 2000]
#                    [--lr 1e-3] [--min-lr 1e-4] [--warmup 100] [--decay-steps STEPS]
#                    [--beta1 0.9] [--beta2 0.99] [--weight-decay 0.1] [--grad-clip 1.0]
#                    [--dropout 0] [--eval-interval 250] [--eval-iters 20]
#                    [--seed 1337] [--data FILE] [--out DIR] [--sample 300]
#                    [-- extra shard-run flags...]
#
# Outputs go to --out (default build/train): model.mlir, train_step.mlir
# (after autodiff), model.json (the artifact), metrics.jsonl, trace.json.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
SHARED=$ROOT/../shared

CONFIG=$SHARED/configs/models/nanogpt-shakespeare-char-cpu.json
DATA=$SHARED/data/tinyshakespeare.txt
BATCH=12 SEQ=64 STEPS=2000 LR=1e-3 MIN_LR=1e-4 WARMUP=100 DECAY=""
BETA1=0.9 BETA2=0.99 WD=0.1 CLIP=1.0 DROPOUT="" EVAL_INTERVAL=250 EVAL_ITERS=20
SEED=1337 OUT=$BUILD_DIR/train SAMPLE=300
EXTRA=()
die() { echo "train.sh: $*" >&2; exit 2; }
usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  [[ $1 == -- ]] && { shift; EXTRA=("$@"); break; }
  [[ $1 == -h || $1 == --help ]] && { usage; exit 0; }
  [[ $# -ge 2 ]] || die "option '$1' needs a value"
  case $1 in
    --config) CONFIG=$2 ;; --batch) BATCH=$2 ;; --seq) SEQ=$2 ;;
    --steps) STEPS=$2 ;; --lr) LR=$2 ;; --min-lr) MIN_LR=$2 ;;
    --warmup) WARMUP=$2 ;; --decay-steps) DECAY=$2 ;; --beta1) BETA1=$2 ;;
    --beta2) BETA2=$2 ;; --weight-decay) WD=$2 ;; --grad-clip) CLIP=$2 ;;
    --dropout) DROPOUT=$2 ;; --eval-interval) EVAL_INTERVAL=$2 ;;
    --eval-iters) EVAL_ITERS=$2 ;; --seed) SEED=$2 ;; --data) DATA=$2 ;;
    --out) OUT=$2 ;; --sample) SAMPLE=$2 ;;
    *) die "unknown option '$1' (see the header of $0)" ;;
  esac
  shift 2
done
DECAY=${DECAY:-$STEPS}
[[ -f $CONFIG ]] || die "model config '$CONFIG' not found"
[[ -f $DATA ]] || die "data file '$DATA' not found"

[[ -x $BUILD_DIR/bin/shard-opt && -x $BUILD_DIR/bin/shard-run && -x $BUILD_DIR/venv/bin/python ]] ||
  "$ROOT/scripts/setup.sh"
mkdir -p "$OUT"

t0=$SECONDS
BUILDER_FLAGS=(--batch "$BATCH" --seq "$SEQ")
[[ -n $DROPOUT ]] && BUILDER_FLAGS+=(--dropout "$DROPOUT")
PYTHONPATH=$ROOT/python "$BUILD_DIR/venv/bin/python" -m autoshard.models "$CONFIG" \
  "${BUILDER_FLAGS[@]}" -o "$OUT/model.mlir"
"$BUILD_DIR/bin/shard-opt" "$OUT/model.mlir" \
  --tfm-autodiff="beta1=$BETA1 beta2=$BETA2 weight-decay=$WD max-grad-norm=$CLIP" \
  -o "$OUT/train_step.mlir"
"$BUILD_DIR/bin/shard-opt" "$OUT/train_step.mlir" --rt-lower --rt-plan-memory \
  --rt-export="output=$OUT/model.json" -o "$OUT/lowered.mlir"
echo "compiled $OUT/model.json in $((SECONDS - t0))s"

"$BUILD_DIR/bin/shard-run" "$OUT/model.json" --data "$DATA" --steps "$STEPS" \
  --lr "$LR" --min-lr "$MIN_LR" --warmup "$WARMUP" --decay-steps "$DECAY" \
  --eval-interval "$EVAL_INTERVAL" --eval-iters "$EVAL_ITERS" --seed "$SEED" \
  --log "$OUT/metrics.jsonl" --trace "$OUT/trace.json" --sample "$SAMPLE" \
  "${EXTRA[@]}"
