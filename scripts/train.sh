#!/usr/bin/env bash
# Main job: build a model's tfm IR from its config, compile it with
# shard-opt (autodiff, lowering, memory plan, export) and train it with
# shard-run. Defaults: nanoGPT's Tiny Shakespeare CPU recipe.
#
#   scripts/train.sh [--plan PLAN|auto] [-n N] [--cluster FILE] [--schedule-file FILE]
#                    [--config FILE] [--batch 12]
#                    [--seq 64] [--steps 2000]
#                    [--lr 1e-3] [--min-lr 1e-4] [--warmup min(100,STEPS)] [--decay-steps STEPS]
#                    [--beta1 0.9] [--beta2 0.99] [--weight-decay 0.1] [--grad-clip 1.0]
#                    [--dropout 0] [--eval-interval 250] [--eval-iters 20]
#                    [--seed 1337] [--data FILE|DIR] [--out DIR] [--sample 300]
#                    [--vocab-multiple 64] [--fuse-epilogues 1]
#                    [--save-dir DIR] [--save-interval N] [--keep K] [--async-save] [--resume DIR|latest]
#                    [--init-from HF_DIR] [--save-hf DIR]
#                    [-- extra shard-run flags...]
#
# --plan "dp=2,tp=2,sp=1,zero=1" compiles the step for that plan (after autodiff:
# dist-apply-plan, -propagate, -partition, -pipeline-split, -bucket-collectives,
# -overlap-collectives, -verify-comm), trains it on N ranks with
# `shard-run -n N`; N defaults to the plan's world size (pp*dp*cp*tp) and any
# other -n is an error.
# --plan auto lets the planner choose: the model is built at the global batch
# (--batch, default 16 for auto) and `shard-opt --dist-auto-plan` searches the
# plans the compiler builds today (compilable=true) for N ranks (-n, default
# 8) on the cluster description --cluster (default
# configs/clusters/cpu-2core.json, docs/cluster-format.md); the chosen plan is
# printed (report in OUT/auto_plan.json) and the run continues exactly as with
# --plan <chosen plan>. Once it is compiled, a cluster whose gradients are
# frame buffers (memory.grad_buffer "frame", as cpu-2core.json) has the
# planner's memory breakdown of the plan printed beside the compiled static
# memory plan (dist-explain, OUT/explain.json; python -m
# autoshard.plan_memory). No plan fitting in memory is an error. Without --plan, one rank. With a plan whose dp x mb does
# not divide the default batch 12, the batch becomes 16 (DESIGN.md section 12)
# unless --batch is given. mb=M (gradient accumulation): the model is built at
# the microbatch's batch (--batch / M) and tfm-autodiff runs M microbatches per
# step (microbatches=M), so the step still sees --batch rows. recompute=X (none,
# selective, full) runs tfm-recompute with mode=X right after tfm-autodiff.
# --schedule-file FILE (a plan with pp > 1): the pipeline runs the per-rank
# order in FILE (algorithms.md section 1.5 text, e.g. "rank0: 0F0 0F1 0B0 0B1")
# instead of the plan's schedule; dist-schedule checks it (sizes, well-formed,
# no deadlock) before dist-pipeline-split follows it.
# The vocabulary is padded to a multiple of --vocab-multiple (default 64, which
# every tp degree up to 64 divides; Megatron's make-vocab-size-divisible-by) for
# every run, one rank included, so that all plans compile the same model
# (nanoGPT's 65 characters -> 128 rows). Padded logits are masked in the loss
# and in sampling; with nanoGPT's tied LM head the padded rows never get a
# gradient and the run trains like the unpadded model (checked by plan_sweep.sh).
#
# --data FILE trains on a text file tokenised by character; --data DIR on a
# directory prepared by `python -m autoshard.data prepare` (BPE or any
# tokenizer.json; docs/data-format.md), whose meta.json vocab_size replaces
# the config's.
# Checkpoints (docs/running.md, "Checkpoints"): --save-dir DIR writes a sharded
# checkpoint DIR/step-N/ every --save-interval steps, after the last step and
# when a SIGTERM, SIGINT or SIGUSR1 arrives (then exits 0); --keep K keeps the
# newest K; --async-save writes them on a thread while training goes on;
# --resume DIR|latest continues from one, saved under any plan of
# the same model (e.g. 8 ranks -> --plan dp=4,zero=3 -> 1 rank). Passed to shard-run.
# Hugging Face weights (docs/hf-checkpoints.md): --init-from HF_DIR starts from
# a transformers checkpoint directory (GPT-2, Llama, Mixtral); the model is
# built from HF_DIR/config.json unless --config is given, at the checkpoint's
# vocabulary (a --data DIR's vocabulary must fit in it). --save-hf DIR writes
# the trained model as a directory transformers loads (at the end and with
# every checkpoint). Passed to shard-run.
# --fuse-epilogues 1 (the default) runs rt-fuse-epilogues after rt-lower: the
# add that consumes a GEMM (residual, backward gradient sum, bias) becomes the
# GEMM's beta = 1 epilogue, a gelu or gelu_grad after it the GEMM's
# activation epilogue (one kernel and one buffer fewer); 0 keeps them apart.
# Outputs go to --out (default build/train): model.mlir, lowered.mlir (the
# rt program), model.json (the artifact), metrics.jsonl, trace.json.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
SHARED=$ROOT/../shared

CONFIG=$SHARED/configs/models/nanogpt-shakespeare-char-cpu.json
DATA=$SHARED/data/tinyshakespeare.txt
BATCH=12 SEQ=64 STEPS=2000 LR=1e-3 MIN_LR=1e-4 WARMUP="" DECAY=""
BETA1=0.9 BETA2=0.99 WD=0.1 CLIP=1.0 DROPOUT="" EVAL_INTERVAL=250 EVAL_ITERS=20
SEED=1337 OUT=$BUILD_DIR/train SAMPLE=300 PLAN="" NRANKS="" VOCAB_MULTIPLE=64 BATCH_SET=""
CLUSTER="" SCHEDULE_FILE="" FUSE=1 AUTO_REPORT=""
EXTRA=() CKPT=() BIND=() INIT_FROM="" CONFIG_SET=""
die() { echo "train.sh: $*" >&2; exit 2; }
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
while [[ $# -gt 0 ]]; do
  [[ $1 == -- ]] && { shift; EXTRA=("$@"); break; }
  [[ $1 == -h || $1 == --help ]] && { usage; exit 0; }
  [[ $1 == --async-save ]] && { CKPT+=("$1"); shift; continue; }
  case $1 in
    --config | --batch | --seq | --steps | --lr | --min-lr | --warmup | --decay-steps | \
      --beta1 | --beta2 | --weight-decay | --grad-clip | --dropout | --eval-interval | \
      --eval-iters | --seed | --data | --out | --sample | --plan | -n | --vocab-multiple | \
      --cluster | --schedule-file | --fuse-epilogues | --save-dir | --save-interval | \
      --keep | --resume | --init-from | --save-hf) ;;
    *) die "unknown option '$1' (see scripts/train.sh --help)" ;;
  esac
  [[ $# -ge 2 ]] || die "option '$1' needs a value"
  case $1 in
    --plan) PLAN=$2 ;; -n) NRANKS=$2 ;; --vocab-multiple) VOCAB_MULTIPLE=$2 ;;
    --cluster) CLUSTER=$2 ;; --schedule-file) SCHEDULE_FILE=$2 ;;
    --fuse-epilogues) FUSE=$2 ;;
    --save-dir | --save-interval | --keep | --resume | --save-hf) CKPT+=("$1" "$2") ;;
    --init-from) INIT_FROM=$2 CKPT+=("$1" "$2") ;;
    --config) CONFIG=$2 CONFIG_SET=1 ;; --batch) BATCH=$2 BATCH_SET=1 ;; --seq) SEQ=$2 ;;
    --steps) STEPS=$2 ;; --lr) LR=$2 ;; --min-lr) MIN_LR=$2 ;;
    --warmup) WARMUP=$2 ;; --decay-steps) DECAY=$2 ;; --beta1) BETA1=$2 ;;
    --beta2) BETA2=$2 ;; --weight-decay) WD=$2 ;; --grad-clip) CLIP=$2 ;;
    --dropout) DROPOUT=$2 ;; --eval-interval) EVAL_INTERVAL=$2 ;;
    --eval-iters) EVAL_ITERS=$2 ;; --seed) SEED=$2 ;; --data) DATA=$2 ;;
    --out) OUT=$2 ;; --sample) SAMPLE=$2 ;;
  esac
  shift 2
done
DECAY=${DECAY:-$STEPS}
if [[ -n $INIT_FROM ]]; then
  [[ -d $INIT_FROM ]] || die "--init-from '$INIT_FROM' is not a directory"
  [[ -n $CONFIG_SET ]] || CONFIG=$INIT_FROM/config.json
fi
[[ -f $CONFIG ]] || die "model config '$CONFIG' not found"
if [[ -d $DATA ]]; then
  [[ -f $DATA/meta.json ]] ||
    die "data directory '$DATA' has no meta.json (python -m autoshard.data prepare ... -o '$DATA')"
  # A prepared token directory: the model's vocabulary is the tokenizer's
  # (with --init-from, the checkpoint's; shard-run checks that it covers the data).
  [[ -n $INIT_FROM ]] || DATA_VOCAB=$(python3 -c \
    'import json,sys; print(int(json.load(open(sys.argv[1]))["vocab_size"]))' "$DATA/meta.json") ||
    die "cannot read vocab_size from '$DATA/meta.json'"
else
  [[ -f $DATA ]] || die "data file '$DATA' not found"
fi
[[ $VOCAB_MULTIPLE =~ ^[1-9][0-9]*$ ]] || die "--vocab-multiple must be a positive integer, found '$VOCAB_MULTIPLE'"
[[ -z $CLUSTER || $PLAN == auto ]] || die "--cluster is only used with --plan auto"
[[ $FUSE == 0 || $FUSE == 1 ]] || die "--fuse-epilogues must be 0 or 1, found '$FUSE'"
if [[ -n ${SCHEDULE_FILE:-} ]]; then
  [[ -n $PLAN ]] || die "--schedule-file needs a --plan with pp > 1"
  [[ -f $SCHEDULE_FILE ]] || die "schedule file '$SCHEDULE_FILE' not found (--schedule-file)"
  SCHEDULE_FILE=$(cd "$(dirname "$SCHEDULE_FILE")" && pwd)/$(basename "$SCHEDULE_FILE")
fi
# The model builder's flags but the batch (the same for every plan).
BUILDER_COMMON=(--seq "$SEQ" --vocab-multiple "$VOCAB_MULTIPLE")
[[ -n ${DATA_VOCAB:-} ]] && BUILDER_COMMON+=(--vocab-size "$DATA_VOCAB")
[[ -n $DROPOUT ]] && BUILDER_COMMON+=(--dropout "$DROPOUT")
build_model() { # build_model BATCH OUTPUT
  PYTHONPATH=$ROOT/python "$BUILD_DIR/venv/bin/python" -m autoshard.models "$CONFIG" \
    --batch "$1" "${BUILDER_COMMON[@]}" -o "$2"
}
ensure_build() {
  [[ -x $BUILD_DIR/bin/shard-opt && -x $BUILD_DIR/bin/shard-run && -x $BUILD_DIR/venv/bin/python ]] ||
    "$ROOT/scripts/setup.sh"
}

# --plan auto: dist-auto-plan chooses the plan for N ranks on the model built
# at the global batch; then the run goes on as with --plan <chosen>.
if [[ $PLAN == auto ]]; then
  NRANKS=${NRANKS:-8}
  [[ $NRANKS =~ ^[1-9][0-9]*$ ]] || die "-n must be a positive integer, found '$NRANKS'"
  CLUSTER=${CLUSTER:-$ROOT/configs/clusters/cpu-2core.json}
  [[ -f $CLUSTER ]] || die "cluster file '$CLUSTER' not found (--cluster; examples in configs/clusters/)"
  [[ -n $BATCH_SET ]] || BATCH=16
  BATCH_SET=1
  [[ $BATCH =~ ^[1-9][0-9]*$ ]] || die "--batch must be a positive integer, found '$BATCH'"
  ensure_build
  mkdir -p "$OUT"
  build_model "$BATCH" "$OUT/model.global.mlir"
  PLAN=$(BUILD_DIR=$BUILD_DIR "$ROOT/scripts/auto_plan.sh" "$OUT/model.global.mlir" -n "$NRANKS" \
    --batch "$BATCH" --cluster "$CLUSTER" --report "$OUT/auto_plan.json") || exit 2
  echo "auto plan for $NRANKS ranks on $(basename "$CLUSTER"), global batch $BATCH: --plan $PLAN"
  AUTO_REPORT=$OUT/auto_plan.json
  # A file calibrated with pinned ranks (host.pinned_cores) planned for
  # pinned ranks: run them so (a later -- --bind-cores of the user's wins).
  PINNED=$(PYTHONPATH=$ROOT/python "$BUILD_DIR/venv/bin/python" -c '
import json, sys
from autoshard.calibration import pinned_cores
print(pinned_cores(json.load(open(sys.argv[1])), int(sys.argv[2])))' "$CLUSTER" "$NRANKS" 2>/dev/null) || PINNED=0
  if [[ $PINNED =~ ^[1-9][0-9]*$ ]]; then
    BIND=(--bind-cores auto)
    echo "cores: $(basename "$CLUSTER") was calibrated with its ranks pinned to $PINNED cores (host.pinned_cores): --bind-cores auto"
  fi
fi

# World size of the plan: the product of the degrees that are mesh axes
# (pp, dp, cp, tp; ep folds over them). Malformed plans are left to
# dist-apply-plan, whose errors name the key and value.
WORLD=1
MB=1
declare -A DEGREE=()
if [[ -n $PLAN ]]; then
  # Spaces around keys and values are not part of the plan.
  PLAN=${PLAN// /}
  IFS=, read -ra kvs <<<"$PLAN"
  for kv in "${kvs[@]}"; do
    k=${kv%%=*} v=${kv#*=}
    [[ -n $k ]] || die "--plan: empty key in '$PLAN' (expected key=value[,key=value...], e.g. dp=2,tp=2)"
    case $k in
      pp | dp | cp | tp)
        [[ $v =~ ^[0-9]+$ ]] && WORLD=$((WORLD * v)) ;;
    esac
    [[ $k == mb && $v =~ ^[1-9][0-9]*$ ]] && MB=$v
    DEGREE[$k]=$v
  done
  # The global batch must split into mb microbatches whose rows every dp
  # rank divides; 12 does not always (DESIGN.md section 12): then 16.
  DP=${DEGREE[dp]:-1}
  if [[ -z $BATCH_SET && $DP =~ ^[1-9][0-9]*$ && $((BATCH % (DP * MB))) -ne 0 ]]; then
    echo "train.sh: global batch $BATCH is not divisible by dp x mb = $((DP * MB)); using 16 (DESIGN.md section 12; pass --batch to choose)"
    BATCH=16
    (( BATCH % (DP * MB) == 0 )) ||
      die "global batch 16 is not divisible by dp x mb = $((DP * MB)) either: pass --batch with a multiple of $((DP * MB))"
  fi
  if [[ $((BATCH % MB)) -ne 0 ]]; then
    [[ -n $BATCH_SET ]] && die "--batch $BATCH is not divisible by the plan's mb=$MB"
    die "the global batch $BATCH is not divisible by the plan's mb=$MB (pass --batch with a multiple of dp x mb = $((DP * MB)))"
  fi
fi
if [[ -n $NRANKS ]]; then
  [[ $NRANKS =~ ^[1-9][0-9]*$ ]] || die "-n must be a positive integer, found '$NRANKS'"
  if [[ -z $PLAN && $NRANKS -ne 1 ]]; then
    die "-n $NRANKS needs a --plan whose world size is $NRANKS (e.g. --plan dp=$NRANKS)"
  fi
  [[ $NRANKS -eq $WORLD ]] ||
    die "-n $NRANKS does not match the plan's world size $WORLD (plan '$PLAN': pp*dp*cp*tp = $WORLD)"
fi
NRANKS=$WORLD

ensure_build
mkdir -p "$OUT"

t0=$SECONDS
# With mb microbatches the model is built at the microbatch's batch and
# tfm-autodiff accumulates the gradients of mb of them per step. The whole
# compile is shard-opt's registered pipeline (lib/Pipelines): tfm-autodiff
# (microbatches and tfm-recompute's mode from the plan's mb= and
# recompute=), the dist passes of the plan, rt-lower, rt-fuse-epilogues,
# rt-plan-memory, rt-export. Its errors point at lines of model.mlir.
build_model "$((BATCH / MB))" "$OUT/model.mlir"
TRAIN_OPTIONS="beta1=$BETA1 beta2=$BETA2 weight-decay=$WD max-grad-norm=$CLIP"
TRAIN_OPTIONS+=" fuse-epilogues=$([[ $FUSE == 1 ]] && echo true || echo false)"
[[ -n $PLAN ]] && TRAIN_OPTIONS+=" plan=$PLAN"
[[ -n $SCHEDULE_FILE ]] && TRAIN_OPTIONS+=" schedule-file=$SCHEDULE_FILE"
"$BUILD_DIR/bin/shard-opt" "$OUT/model.mlir" \
  --autoshard-train="$TRAIN_OPTIONS output=$OUT/model.json" -o "$OUT/lowered.mlir"
echo "compiled $OUT/model.json${PLAN:+ for plan $PLAN on $NRANKS ranks} in $((SECONDS - t0))s"
# Issue 21 item 5, where both exist: the planner's memory breakdown of the
# chosen plan beside the compiled program's static memory plan. Only on a
# cluster with frame gradients, whose peak the planner composes from the
# compiled one-block programs; a "persistent" one (the GPU files) counts
# gradient buffers that the compiled program does not have. Informational:
# a failure here is named and the run goes on.
if [[ -n $AUTO_REPORT ]]; then
  GRAD_BUFFER=$("$BUILD_DIR/venv/bin/python" -c 'import json, sys
m = json.load(open(sys.argv[1])).get("memory")
print(m.get("grad_buffer", "persistent") if isinstance(m, dict) else "persistent")' "$CLUSTER" 2>/dev/null) || GRAD_BUFFER=""
  if [[ $GRAD_BUFFER != frame ]]; then
    echo "memory: $(basename "$CLUSTER") keeps gradients in ${GRAD_BUFFER:-unreadable} buffers, not the static memory plan's frame: the planner's breakdown ($AUTO_REPORT) is not compared with the compiled plan"
  elif ! "$BUILD_DIR/bin/shard-opt" "$OUT/lowered.mlir" --dist-explain=format=json -o /dev/null >"$OUT/explain.json" ||
    ! PYTHONPATH=$ROOT/python "$BUILD_DIR/venv/bin/python" -m autoshard.plan_memory "$AUTO_REPORT" "$OUT/explain.json"; then
    echo "train.sh: warning: could not print the planner's memory beside the compiled memory plan (above); training goes on" >&2
  fi
fi

RUN_RANKS=()
[[ $NRANKS -gt 1 ]] && RUN_RANKS=(-n "$NRANKS")
# exec: a SIGTERM or Ctrl-C to train.sh reaches shard-run (checkpoint, then stop).
exec "$BUILD_DIR/bin/shard-run" "${RUN_RANKS[@]}" "$OUT/model.json" --data "$DATA" --steps "$STEPS" \
  --lr "$LR" --min-lr "$MIN_LR" ${WARMUP:+--warmup "$WARMUP"} --decay-steps "$DECAY" \
  --eval-interval "$EVAL_INTERVAL" --eval-iters "$EVAL_ITERS" --seed "$SEED" \
  --log "$OUT/metrics.jsonl" --trace "$OUT/trace.json" --sample "$SAMPLE" \
  "${CKPT[@]}" "${BIND[@]}" "${EXTRA[@]}"
