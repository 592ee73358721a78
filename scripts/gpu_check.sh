#!/usr/bin/env bash
# The CUDA backend's check on a lent GPU machine (an H200: CUDA toolkit,
# NCCL, cmake, ninja, PyTorch; no MLIR, MPI, OpenBLAS, GoogleTest or package
# registry), in one run of at most ~10 minutes:
#   1. builds the runtime with CUDA only (-DAUTOSHARD_BUILD_COMPILER=OFF),
#   2. runs the CUDA conformance tests (every kernel vs the CPU kernels, a
#      whole nanoGPT step vs the CPU run),
#   3. times one training step of a ~1.3B GPT (h 2048, 24 layers, 16 heads,
#      seq 2048) compiled with tfm-mixed-precision (bf16 compute, f32 master
#      weights, gradients and AdamW states): tokens/s, TFLOP/s, MFU vs 989
#      TFLOP/s and vs a cuBLAS bf16 GEMM peak measured on the spot,
#   4. measures the GPU with `shard-calibrate --backend cuda` (the runtime's
#      CUDA kernels in bf16: GEMM grid, memory-bound kernels, attention; ~60 s
#      at most, 3 repeats) and writes its planner cluster description, the
#      link fields copied from the matching configs/clusters file (one GPU:
#      no NCCL group to measure); prints the fitted peak and efficiencies,
#   5. times the same model's step in PyTorch (eager and torch.compile) and
#      prints the ratios.
#
# The GPU machine cannot compile MLIR, so the artifacts are compiled here
# first (with the passes scripts/train.sh runs, rt-fuse-epilogues included:
# GEMMs with a beta = 1 residual epilogue), with the files the CUDA-only build needs (nlohmann/json.hpp, xxhash.h and a
# googletest source tree), into a folder the device run carries:
#
#   scripts/gpu_check.sh --prepare            # here (needs build/bin/shard-opt)
#   scripts/gpu_check.sh                      # on the GPU machine
#       (carry: build-gpu-carry; e.g. the device tool's carry=["build-gpu-carry"])
#
# Options:
#   --prepare         compile artifacts and fill the carry folder, then exit
#   --dry-run         print what would run, run nothing
#   --carry DIR       the carried folder (default build-gpu-carry)
#   --build DIR       the CUDA build folder (default build-gpu)
#   --batch B         benchmark batch (default 8; sequences of 2048)
#   --steps N         timed steps (default 5; 2 warm-up steps first)
#   --skip-tests | --skip-bench | --skip-calibrate | --skip-torch
#   --calibrate-out F the cluster description written by step 4 (default
#                     BUILD/cluster-cuda.json; e.g. $OUT/cluster-cuda.json)
#   --calibrate-base F the cluster file whose link fields it copies (default:
#                     configs/clusters/hgx-h200.json on an H200,
#                     dgx-h100.json on an H100, dgx-a100-80gb.json on an A100)
#   --torch-modes M   comma list of eager,compile (default both)
#   --budget S        wall seconds for the whole check (default 560, under the
#                     device tool's 600 s per command): each phase's timeout
#                     is cut to what is left (less 15 s for the summary) and
#                     a phase with under 20 s left is skipped, so the summary
#                     always prints
#   -j N              build jobs (default: all cores)
#   -h, --help
# Environment: PYTHON (default python3) runs the PyTorch reference;
# BUILD_DIR (default build) holds shard-opt and the venv for --prepare.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=gpu_check.sh
MODE=check DRY=0 CARRY=build-gpu-carry GBUILD=build-gpu BATCH=8 STEPS=5
SKIP_TESTS=0 SKIP_BENCH=0 SKIP_CALIBRATE=0 SKIP_TORCH=0 CAL_OUT= CAL_BASE= TORCH_MODES=eager,compile BUDGET=560
JOBS=$(nproc 2>/dev/null || echo 4)
SEQ=2048 LAYERS=24 HIDDEN=2048
CONFIG=$ROOT/bench/gpu/gpt-1.3b.json

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "$PROG: $*" >&2; echo "Try '$PROG --help'." >&2; exit 2; }
need() { [[ $# -ge 2 && $2 != -* ]] || die "option '$1' needs a value"; }
posint() { [[ $2 =~ ^[1-9][0-9]*$ ]] || die "option '$1' expects a positive integer, found '$2'"; }

while [[ $# -gt 0 ]]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --prepare) MODE=prepare ;;
    --dry-run) DRY=1 ;;
    --carry) need "$@"; CARRY=$2; shift ;;
    --build) need "$@"; GBUILD=$2; shift ;;
    --batch) need "$@"; posint "$1" "$2"; BATCH=$2; shift ;;
    --steps) need "$@"; posint "$1" "$2"; STEPS=$2; shift ;;
    --budget) need "$@"; posint "$1" "$2"; BUDGET=$2; shift ;;
    -j) need "$@"; posint "$1" "$2"; JOBS=$2; shift ;;
    --skip-tests) SKIP_TESTS=1 ;;
    --skip-bench) SKIP_BENCH=1 ;;
    --skip-calibrate) SKIP_CALIBRATE=1 ;;
    --calibrate-out) need "$@"; CAL_OUT=$2; shift ;;
    --calibrate-base) need "$@"; CAL_BASE=$2; shift ;;
    --skip-torch) SKIP_TORCH=1 ;;
    --torch-modes) need "$@"; TORCH_MODES=$2; shift ;;
    *) die "unknown option '$1'" ;;
  esac
  shift
done
[[ $CARRY = /* ]] || CARRY=$ROOT/$CARRY
[[ $GBUILD = /* ]] || GBUILD=$ROOT/$GBUILD
ARTIFACT=$CARRY/artifacts/gpt-1.3b-mixed-bf16-b$BATCH.json
CAL_OUT=${CAL_OUT:-$GBUILD/cluster-cuda.json}

run() { # run CMD...: prints it; runs it unless --dry-run
  printf '+ %s\n' "$*"
  [[ $DRY == 1 ]] || "$@"
}
T0=$SECONDS
phase() { printf '\n=== %s (t=%ds) ===\n' "$1" $((SECONDS - T0)); }
# limit CAP: the timeout of the next phase, CAP seconds at most and what the
# budget leaves (15 s kept for the summary); prints 0 when under 20 s are left.
limit() {
  local left=$((BUDGET - (SECONDS - T0) - 15))
  ((left > $1)) && left=$1
  ((left < 20)) && left=0
  echo "$left"
}
skipped() { echo "skipped: the --budget of $BUDGET s is spent (t=$((SECONDS - T0)) s)"; fails=$((fails + 1)); }

# --- Prepare (CPU machine) -----------------------------------------------------
if [[ $MODE == prepare ]]; then
  BUILD_DIR=${BUILD_DIR:-$ROOT/build}
  OPT=$BUILD_DIR/bin/shard-opt PY=$BUILD_DIR/venv/bin/python
  [[ -x $OPT || $DRY == 1 ]] || die "no $OPT: run scripts/setup.sh first"
  [[ -x $PY ]] || PY=python3
  JSON_HPP=$(for d in /usr/include /usr/local/include; do
    [[ -f $d/nlohmann/json.hpp ]] && echo "$d/nlohmann/json.hpp" && break; done)
  GTEST_SRC=$(for d in /usr/src/googletest; do
    [[ -f $d/CMakeLists.txt ]] && echo "$d" && break; done)
  [[ -n $JSON_HPP || $DRY == 1 ]] || die "nlohmann/json.hpp not found (apt-get install nlohmann-json3-dev)"
  [[ -n $GTEST_SRC || $DRY == 1 ]] || die "/usr/src/googletest not found (apt-get install googletest)"
  phase "prepare $CARRY"
  run mkdir -p "$CARRY/artifacts" "$CARRY/include/nlohmann"
  run rm -f "$CARRY"/artifacts/gpt-1.3b-bf16-b*.json # earlier all-bf16 ones
  run cp "$JSON_HPP" "$CARRY/include/nlohmann/json.hpp"
  # Checkpoint checksums (runtime/train, header-only xxHash).
  [[ -f /usr/include/xxhash.h || $DRY == 1 ]] || die "xxhash.h not found (apt-get install libxxhash-dev)"
  run cp /usr/include/xxhash.h "$CARRY/include/xxhash.h"
  run rm -rf "$CARRY/googletest"
  run cp -r "$GTEST_SRC" "$CARRY/googletest"
  TMP=$(mktemp -d)
  trap 'rm -rf "$TMP"' EXIT
  run env PYTHONPATH="$ROOT/python" "$PY" -m autoshard.models "$CONFIG" \
    --batch "$BATCH" --seq "$SEQ" --vocab-multiple 64 --quiet \
    -o "$TMP/model.mlir" || exit 1
  # Mixed precision (bf16 compute; f32 master weights, gradients and AdamW
  # states), as the PyTorch reference's autocast trains.
  run "$OPT" "$TMP/model.mlir" \
    --autoshard-train="precision=bf16 output=$ARTIFACT" -o /dev/null || exit 1
  [[ $DRY == 1 ]] || du -sh "$CARRY"
  echo "prepared; on the GPU machine run: scripts/gpu_check.sh --batch $BATCH (carry: ${CARRY#$ROOT/})"
  exit 0
fi

# --- Check (GPU machine) ---------------------------------------------------------
fails=0
GPU_NAME=
if [[ $DRY == 0 ]]; then
  [[ -f $CARRY/include/nlohmann/json.hpp ]] || die "no $CARRY: run '$PROG --prepare --batch $BATCH' on the CPU machine and carry it"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  command -v nvidia-smi >/dev/null && GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
fi
if [[ -z $CAL_BASE ]]; then
  case $GPU_NAME in
    *A100*) CAL_BASE=$ROOT/configs/clusters/dgx-a100-80gb.json ;;
    *H100*) CAL_BASE=$ROOT/configs/clusters/dgx-h100.json ;;
    *) CAL_BASE=$ROOT/configs/clusters/hgx-h200.json ;; # the lent H200
  esac
fi

phase "configure + build (CUDA only, -j$JOBS)"
CMAKE_ARGS=(-G Ninja -S "$ROOT" -B "$GBUILD" -DCMAKE_BUILD_TYPE=Release
  -DAUTOSHARD_BUILD_COMPILER=OFF -DAUTOSHARD_ENABLE_CUDA=ON
  -DAUTOSHARD_RUNTIME_CPU=OFF -DAUTOSHARD_RUNTIME_MPI=OFF
  -DAUTOSHARD_NLOHMANN_JSON_INCLUDE_DIR="$CARRY/include"
  -DAUTOSHARD_XXHASH_INCLUDE_DIR="$CARRY/include"
  -DAUTOSHARD_GTEST_SOURCE_DIR="$CARRY/googletest")
if [[ ! -f $GBUILD/build.ninja ]] || [[ $DRY == 1 ]]; then
  run cmake "${CMAKE_ARGS[@]}" || { echo "configure failed"; exit 1; }
fi
run ninja -C "$GBUILD" -j"$JOBS" autoshard_runtime_cuda_tests shard-bench-gpu shard-run \
  shard-calibrate ||
  { echo "build failed"; exit 1; }

if [[ $SKIP_TESTS == 0 ]]; then
  phase "CUDA conformance tests"
  T=$(limit 240)
  if ((T > 0)); then
    run timeout "$T" "$GBUILD/runtime/test/cuda/autoshard_runtime_cuda_tests" \
      --gtest_brief=0 || fails=$((fails + 1))
  else
    skipped
  fi
fi

OURS=$GBUILD/bench-ours.json
if [[ $SKIP_BENCH == 0 ]]; then
  phase "autoshard step: GPT 1.3B, batch $BATCH x $SEQ, mixed-precision artifact (bf16 compute, f32 master weights)"
  [[ -f $ARTIFACT || $DRY == 1 ]] || die "no $ARTIFACT: prepare with --batch $BATCH"
  T=$(limit 240)
  if ((T > 0)); then
    run timeout "$T" "$GBUILD/bin/shard-bench-gpu" "$ARTIFACT" --layers $LAYERS \
      --hidden $HIDDEN --steps "$STEPS" --warmup 2 --json "$OURS" || fails=$((fails + 1))
  else
    skipped
  fi
fi

if [[ $SKIP_CALIBRATE == 0 ]]; then
  phase "shard-calibrate --backend cuda (this GPU's cluster description, links from ${CAL_BASE#$ROOT/})"
  [[ $DRY == 1 ]] || rm -f "$CAL_OUT"
  T=$(limit 60)
  if ((T > 0)); then
    run timeout "$T" "$GBUILD/bin/shard-calibrate" --backend cuda --repeats 3 \
      --base "$CAL_BASE" --out "$CAL_OUT" || fails=$((fails + 1))
  else
    skipped
  fi
fi

TORCH=$GBUILD/bench-torch.jsonl
if [[ $SKIP_TORCH == 0 ]]; then
  phase "PyTorch reference ($TORCH_MODES)"
  [[ $DRY == 1 ]] || : >"$TORCH"
  if [[ $DRY == 1 ]]; then
    run "${PYTHON:-python3}" "$ROOT/bench/gpu/torch_gpt.py" "$CONFIG" --batch "$BATCH" \
      --seq $SEQ --steps "$STEPS" --modes "$TORCH_MODES"
  elif T=$(limit 300) && ((T > 0)); then
    printf '+ %s\n' "timeout $T ${PYTHON:-python3} bench/gpu/torch_gpt.py ... --modes $TORCH_MODES"
    timeout "$T" "${PYTHON:-python3}" "$ROOT/bench/gpu/torch_gpt.py" "$CONFIG" \
      --batch "$BATCH" --seq $SEQ --steps "$STEPS" --modes "$TORCH_MODES" |
      tee "$TORCH" || fails=$((fails + 1))
  else
    skipped
  fi
fi

phase "summary"
if [[ $DRY == 0 && -s $OURS ]]; then
  "${PYTHON:-python3}" - "$OURS" "$TORCH" <<'PYEOF'
import json, sys
ours = json.load(open(sys.argv[1]))
print(f"autoshard: {ours['tokens_per_s']:.0f} tokens/s, {ours['tflops']:.1f} TFLOP/s, "
      f"MFU {100*ours['mfu_989']:.1f}% of 989, {100*ours['mfu_gemm_peak']:.1f}% of the "
      f"measured cuBLAS bf16 peak ({ours['gemm_peak_tflops']:.0f} TFLOP/s)")
try:
    for line in open(sys.argv[2]):
        t = json.loads(line)
        print(f"torch {t['mode']}: {t['tokens_per_s']:.0f} tokens/s; autoshard / torch = "
              f"{ours['tokens_per_s'] / t['tokens_per_s']:.2f}")
except FileNotFoundError:
    pass
PYEOF
fi
if [[ $DRY == 0 && -s $CAL_OUT ]]; then
  "${PYTHON:-python3}" - "$CAL_OUT" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1]))
g, e, m = c["gpu"], c["efficiency"], c["measured"]
print(f"shard-calibrate ({sys.argv[1]}): {g['name']}: bf16 GEMM peak "
      f"{g['peak_bf16_tflops']} TFLOP/s, efficiency gemm {e['gemm']} (k0 {e['gemm_k0']}, "
      f"fit error {m['gemm_fit_mean_abs_log_error']:.3f}), attention {e['attention']}, "
      f"memory {e['memory']} of {g['hbm_tb_per_s']} TB/s; kernel fixed "
      f"{g['kernel_fixed_us']} us, host issue {c['host']['op_overhead_us']} us per kernel")
print("  copied from the base file: " + ", ".join(m["fields"].get("copied_from_base", [])))
PYEOF
fi
echo "gpu_check: $fails failed phase(s), $((SECONDS - T0)) s"
exit $((fails > 0))
