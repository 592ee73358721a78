#!/usr/bin/env bash
# Regenerates configs/clusters/cpu-2core.json, the planner's description of
# this CPU machine, with shard-calibrate (issue 21): micro-benchmarks of the
# runtime's own kernels and MPI communicator with N ranks (default 8, as
# scripts/auto_plan_check.sh plans for) running at once on this node, and
# with every power of two below N (1, 2, 4), each written as the profile
# `by_ranks_per_node.R` that the planner uses for jobs of R ranks (threads
# per rank, cache share and MPI transport change with R; scaling the
# 8-rank figures by 8 / R was up to 30% off). After each rank count R from
# 2 it trains the nanoGPT CPU model's reference plans (dp=R and, for even R,
# dp=R/2,tp=2,sp=1; 30 steps each with scripts/train.sh, so shard-run must
# be built) and fits host.sync_slowdown and host.sync_latency_us of that
# count to them (python -m autoshard.calibration; the record in
# measured.sync_fit). A failed run stops the script before --out is written;
# so does a TERM, HUP or Ctrl-C, passed on to the running step (which ends
# its ranks) as a TERM.
#
#   scripts/calibrate_cpu.sh [-n 8] [--out configs/clusters/cpu-2core.json] [--repeats 7]
#                            [--bind-cores auto|none]
#
# --bind-cores auto measures ranks pinned to cores as shard-run --bind-cores
# auto runs them (the file then says host.pinned_cores, and the fits run
# their reference steps pinned); the default none leaves them to the
# scheduler, as the committed file was measured.
#
# Run it on an otherwise idle machine (about 5 minutes): every rank's figure
# is its share of the cores while all R run. The file says what was
# measured ("measured"); docs/planner.md ("Calibrating this machine") has
# the figures.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
die() { echo "calibrate_cpu.sh: $*" >&2; exit 2; }
[[ " $* " == *" -h "* || " $* " == *" --help "* ]] && { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0; }
N=8 OUT=$ROOT/configs/clusters/cpu-2core.json REPEATS=7 BIND=none
while [[ $# -gt 0 ]]; do
  # An unknown option is named as such, also as the last argument.
  case $1 in
    -n | --out | --repeats | --bind-cores) [[ $# -ge 2 ]] || die "option '$1' needs a value" ;;
    *) die "unknown option '$1' (see scripts/calibrate_cpu.sh --help)" ;;
  esac
  case $1 in
    -n) N=$2 ;; --out) OUT=$2 ;; --repeats) REPEATS=$2 ;; --bind-cores) BIND=$2 ;;
  esac
  shift 2
done
[[ -x $BUILD_DIR/bin/shard-calibrate ]] || die "$BUILD_DIR/bin/shard-calibrate not built (ninja -C $BUILD_DIR shard-calibrate)"
[[ $N =~ ^[1-9][0-9]*$ ]] || die "-n needs a positive rank count, got '$N'"
# shard-calibrate's own rule, checked before the runs of fewer ranks.
(((N & (N - 1)) == 0)) || die "-n needs a power of two (1, 2, 4, 8, ...: shard-calibrate probes the collectives over groups of 2, 4, ... N ranks), got '$N'"
[[ $REPEATS =~ ^[1-9][0-9]*$ ]] || die "--repeats needs a positive count, got '$REPEATS'"
[[ $BIND == auto || $BIND == none ]] || die "--bind-cores needs 'auto' or 'none', got '$BIND'"
# --out is checked before the runs of fewer ranks (a minute or two), not
# only by the last run: a missing directory, a directory, no write access.
OUT_DIR=$(dirname -- "$OUT")
[[ -n $OUT && $OUT != */ ]] || die "--out needs a file name, got '$OUT'"
[[ ! -d $OUT ]] || die "cannot write '$OUT': Is a directory"
[[ -d $OUT_DIR ]] || die "cannot write '$OUT': no directory '$OUT_DIR'"
[[ -w $OUT_DIR && ( ! -e $OUT || -w $OUT ) ]] || die "cannot write '$OUT': Permission denied"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# Each step runs as a background job that this script waits for, so that a
# TERM, INT or HUP to it (bash defers its traps until a foreground command
# ends) reaches the step at once as a TERM: shard-calibrate's mpirun, or
# autoshard.calibration, which stops its reference run's ranks. Without
# that, the script ended and removed $TMP while the step ran on.
CHILD=""
stop() { # signal name, number
  trap '' TERM INT HUP
  if [[ -n $CHILD ]]; then kill -TERM "$CHILD" 2>/dev/null; wait "$CHILD" || true; fi
  echo "calibrate_cpu.sh: stopped by SIG$1; $OUT not written" >&2
  exit $((128 + $2))
}
trap 'stop TERM 15' TERM
trap 'stop INT 2' INT
trap 'stop HUP 1' HUP
step() { # what it is, then the command
  local what=$1 rc=0
  shift
  "$@" & CHILD=$!
  wait "$CHILD" || rc=$?
  CHILD=""
  ((rc == 0)) || echo "calibrate_cpu.sh: $what failed (exit $rc); $OUT not written" >&2
  return "$rc"
}
# The synchronisation terms (host.sync_slowdown, host.sync_latency_us) of
# each rank count from 2 are fitted to the nanoGPT CPU model's reference
# plans (dp=R, dp=R/2,tp=2,sp=1) trained right after that count's
# calibration, at the batch and sequence the planner checks use
# (scripts/auto_plan_check.sh, bench/planner_vs_runtime): python -m
# autoshard.calibration --help.
CONFIG=$ROOT/../shared/configs/models/nanogpt-shakespeare-char-cpu.json
[[ -f $CONFIG ]] || die "model config '$CONFIG' not found"
PY=$BUILD_DIR/venv/bin/python
PYTHONPATH=$ROOT/python "$PY" -m autoshard.models "$CONFIG" --batch 16 --seq 64 \
  --vocab-multiple 64 -q -o "$TMP/model.mlir"
fit() { # rank count, cluster file
  PYTHONPATH=$ROOT/python step "the $1-rank fit (autoshard.calibration)" "$PY" -m autoshard.calibration --shard-opt "$BUILD_DIR/bin/shard-opt" \
    --build "$BUILD_DIR" --model "$TMP/model.mlir" --cluster "$2" --ranks "$1" \
    --batch 16 --seq 64 --train "$CONFIG"
}
PROFILES=()
for ((r = 1; r < N; r *= 2)); do
  step "shard-calibrate -n $r" "$BUILD_DIR/bin/shard-calibrate" -n "$r" --repeats "$REPEATS" --bind-cores "$BIND" --out "$TMP/r$r.json"
  ((r < 2)) || fit "$r" "$TMP/r$r.json"
  PROFILES+=(--profile "$TMP/r$r.json")
done
step "shard-calibrate -n $N" "$BUILD_DIR/bin/shard-calibrate" -n "$N" --repeats "$REPEATS" --bind-cores "$BIND" \
  --name "CPU 2-core (this development machine)" "${PROFILES[@]}" --out "$TMP/out.json"
((N < 2)) || fit "$N" "$TMP/out.json"
trap '' TERM INT HUP # written whole: not "stopped ... not written" after it
# Through a temporary beside $OUT, renamed onto it: a full disk leaves the
# description it replaces whole.
if ! cp "$TMP/out.json" "$OUT.tmp-$$" || ! mv -f "$OUT.tmp-$$" "$OUT"; then
  rm -f "$OUT.tmp-$$"
  die "cannot write $OUT (the previous file, if any, is unchanged)"
fi
echo "wrote $OUT"
