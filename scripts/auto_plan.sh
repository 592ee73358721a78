#!/usr/bin/env bash
# Runs the planner (dist-auto-plan) on a model IR and prints the chosen plan
# in the syntax of `--plan` / dist-apply-plan (e.g. "dp=4,tp=2,sp=1,zero=2")
# on stdout; a one-line summary goes to stderr.
#
#   scripts/auto_plan.sh MODEL.mlir [-n 8] [--batch B] [--cluster FILE] [--report FILE]
#
# MODEL.mlir: the model builder's output (python -m autoshard.models), built
# at the global batch. -n: ranks (default 8). --batch: global batch in
# sequences (default: the IR's batch). --cluster: cluster description
# (default configs/clusters/cpu-2core.json; docs/cluster-format.md).
# --report: where the JSON report goes (default: a temporary file).
# Searches only what the compiler builds today (compilable=true).
# Exit status 2 with a message naming the problem when the model or cluster
# file is missing, dist-auto-plan fails, or no plan fits in memory.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
die() { echo "auto_plan.sh: $*" >&2; exit 2; }
[[ " $* " == *" -h "* || " $* " == *" --help "* ]] && { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0; }
MODEL="" NRANKS=8 BATCH="" CLUSTER=$ROOT/configs/clusters/cpu-2core.json REPORT=""
while [[ $# -gt 0 ]]; do
  case $1 in
    -n | --batch | --cluster | --report)
      [[ $# -ge 2 ]] || die "option '$1' needs a value"
      case $1 in -n) NRANKS=$2 ;; --batch) BATCH=$2 ;; --cluster) CLUSTER=$2 ;; --report) REPORT=$2 ;; esac
      shift 2 ;;
    -*) die "unknown option '$1' (see scripts/auto_plan.sh --help)" ;;
    *) [[ -z $MODEL ]] || die "more than one model given ('$MODEL', '$1')"; MODEL=$1; shift ;;
  esac
done
[[ -n $MODEL ]] || die "no model IR given (scripts/auto_plan.sh MODEL.mlir ...)"
[[ -f $MODEL ]] || die "model IR '$MODEL' not found"
[[ -f $CLUSTER ]] || die "cluster file '$CLUSTER' not found (examples in configs/clusters/)"
[[ $NRANKS =~ ^[1-9][0-9]*$ ]] || die "-n must be a positive integer, found '$NRANKS'"
[[ -z $BATCH || $BATCH =~ ^[1-9][0-9]*$ ]] || die "--batch must be a positive integer, found '$BATCH'"
if [[ -z $REPORT ]]; then
  REPORT=$(mktemp)
  trap 'rm -f "$REPORT"' EXIT
fi
if ! err=$("$BUILD_DIR/bin/shard-opt" "$MODEL" \
  --dist-auto-plan="cluster=$CLUSTER gpus=$NRANKS ${BATCH:+batch=$BATCH }compilable=true format=json report=$REPORT" \
  -o /dev/null 2>&1); then
  err=$(grep -m1 'error:' <<<"$err" || echo "$err")
  die "dist-auto-plan failed for $NRANKS ranks: ${err#*error: }"
fi
PY=$BUILD_DIR/venv/bin/python
[[ -x $PY ]] || PY=python3
"$PY" - "$REPORT" <<'PYEOF' || exit 2
import json, sys
report = json.load(open(sys.argv[1]))
if not report["plans"]:
    rejected = sorted(report["rejected"].items())
    why = "; ".join(f"{fam}: {reason}" for fam, reason in rejected[:4])
    why += f"; ... {len(rejected) - 4} families more" if len(rejected) > 4 else ""
    if not rejected:
        sys.exit(f"auto_plan.sh: no candidate plan for {report['gpus']} ranks: {report['gpus']} "
                 f"does not factor into tp x cp x pp x dp with tp dividing the heads, pp the layers "
                 f"and dp the global batch {report['global_batch']} (try another -n or --batch)")
    sys.exit(f"auto_plan.sh: no plan for {report['gpus']} ranks fits in memory (global batch "
             f"{report['global_batch']}, cluster {report['cluster']}): {why}")
best = report["plans"][0]
# peak_bytes includes the cluster file's fixed reserve (gpu.reserved_gib),
# fragmentation and communication buffers (docs/planner.md, memory model).
print(f"auto plan: {best['plan']} (predicted step {best['step_s']:.4g} s, "
      f"peak {best['peak_bytes'] / 2**20:.1f} MiB per rank including the cluster's "
      f"reserve and communication buffers)", file=sys.stderr)
print(best["apply_plan"])
PYEOF
