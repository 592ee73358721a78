#!/usr/bin/env bash
# Scale of the compiler's own checks (issue 19, item 8): prints the time
# shard-opt spends in dist-verify-comm for plans of 16,384 and 1,048,576
# ranks (the whole compile's time beside it), and in tfm-autodiff for 100
# and 1,000 microbatches. Times come from shard-opt's -mlir-timing; each
# case runs --repeat times (default 3) and the best is printed. Goals: at
# most 1 s for each verifier case and for autodiff at 1,000 microbatches.
#
#   bench/verify_scale.sh [--repeat N] [--keep DIR]
#
# Environment: BUILD_DIR (default build; uses BUILD_DIR/bin/shard-opt and
# BUILD_DIR/venv/bin/python for the model builder). Exit status 0 when
# every case compiled (whether or not a goal was met: the table says), 1 if
# a compile failed, 2 on a bad argument.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
SHARD_OPT=$BUILD_DIR/bin/shard-opt
PY=$BUILD_DIR/venv/bin/python
[[ -x $PY ]] || PY=python3
REPEAT=3
KEEP=""
while (($#)); do
  case $1 in
    --repeat) REPEAT=${2:?--repeat needs a count}; shift 2 ;;
    --keep) KEEP=${2:?--keep needs a folder}; shift 2 ;;
    *) echo "verify_scale.sh: error: unknown argument '$1' (expected --repeat N or --keep DIR)" >&2; exit 2 ;;
  esac
done
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { echo "verify_scale.sh: error: --repeat must be a positive integer, found '$REPEAT'" >&2; exit 2; }
[[ -x $SHARD_OPT ]] || { echo "verify_scale.sh: error: $SHARD_OPT not found (build first: ninja -C $BUILD_DIR shard-opt)" >&2; exit 1; }

if [[ -n $KEEP ]]; then
  WORK=$KEEP
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
fi

# A small GPT-2 (8 layers so that pp=8 has a layer per stage, width 16):
# the compiler's checks scale with ranks and microbatches, not widths.
cat >"$WORK/tiny.json" <<'EOF'
{"model_type": "gpt2", "vocab_size": 16, "n_positions": 8, "n_embd": 16,
 "n_layer": 8, "n_head": 2, "n_inner": 32, "activation_function": "gelu",
 "layer_norm_epsilon": 1e-5, "bias": false, "tie_word_embeddings": true,
 "dropout": 0.0, "initializer_range": 0.02}
EOF

model() { # model BATCH -> path of the model with that global batch
  local out=$WORK/model-b$1.mlir
  [[ -f $out ]] || PYTHONPATH=$ROOT/python "$PY" -m autoshard.models "$WORK/tiny.json" \
    --batch "$1" --seq 8 -q -o "$out"
  echo "$out"
}

# seconds PASS LOG: the wall time -mlir-timing reports for PASS (0 if absent).
seconds() {
  awk -v pass="$1" '$0 ~ pass && $1 ~ /^[0-9.]+$/ { t += $1 } END { printf "%.4f", t + 0 }' "$2"
}
total() {
  awk '/Total Execution Time:/ { print $4; exit }' "$1"
}

# best CMD...: runs CMD REPEAT times with -mlir-timing; leaves the log of the
# fastest run of the timed pass in $WORK/best.log.
best() {
  local pass=$1 best="" i t
  shift
  for ((i = 0; i < REPEAT; i++)); do
    if ! "$SHARD_OPT" "$@" -mlir-timing -mlir-timing-display=list -o /dev/null \
        2>"$WORK/run.log"; then
      echo "verify_scale.sh: error: shard-opt $* failed:" >&2
      cat "$WORK/run.log" >&2
      return 1
    fi
    t=$(seconds "$pass" "$WORK/run.log")
    if [[ -z $best ]] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then
      best=$t
      cp "$WORK/run.log" "$WORK/best.log"
    fi
  done
}

verdict() { awk -v t="$1" 'BEGIN { print (t <= 1.0 ? "met" : "MISSED") }'; }

echo "dist-verify-comm (goal: <= 1 s), autoshard-train compiles of an 8-layer GPT-2, width 16"
printf '%-30s %10s %14s %14s  %s\n' plan ranks "verify (s)" "compile (s)" goal
status=0
while read -r plan batch ranks; do
  file=$(model "$batch")
  if ! best DistVerifyComm "$file" --autoshard-train="plan=$plan"; then
    status=1
    continue
  fi
  v=$(seconds DistVerifyComm "$WORK/best.log")
  printf '%-30s %10s %14s %14s  %s\n' "$plan" "$ranks" "$v" "$(total "$WORK/best.log")" "$(verdict "$v")"
done <<'EOF'
dp=16384 16384 16384
dp=1024,tp=2,pp=8,mb=8 8192 16384
dp=1048576 1048576 1048576
dp=65536,tp=2,pp=8,mb=8 524288 1048576
EOF

echo
echo "tfm-autodiff microbatches=N (goal at 1,000: <= 1 s), same model, microbatch of 4"
printf '%-30s %14s  %s\n' microbatches "autodiff (s)" goal
file=$(model 4)
for n in 100 1000; do
  if ! best TfmAutodiff "$file" --tfm-autodiff="microbatches=$n"; then
    status=1
    continue
  fi
  a=$(seconds TfmAutodiff "$WORK/best.log")
  goal=""
  [[ $n == 1000 ]] && goal=$(verdict "$a")
  printf '%-30s %14s  %s\n' "$n" "$a" "$goal"
done
exit $status
