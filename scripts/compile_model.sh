#!/usr/bin/env bash
# Compile only: build a real model's tfm IR from
# its HF-style config and compile it with shard-opt (verify + op statistics).
#
#   scripts/compile_model.sh [CONFIG.json] [--batch B] [--seq S] [-o OUT.mlir]
#                            [MODEL BUILDER OPTIONS...]
#
# Defaults: the nanoGPT Tiny Shakespeare CPU model, batch 12, seq 64.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
CONFIG=$ROOT/../shared/configs/models/nanogpt-shakespeare-char-cpu.json
PROG=compile_model.sh

usage() {
  cat <<EOF
Usage: scripts/$PROG [CONFIG.json] [--batch B] [--seq S] [-o OUT.mlir]
                         [MODEL BUILDER OPTIONS...]

Builds the tfm IR of the model described by CONFIG.json (an HF-style
config.json; default: $CONFIG)
with \`python3 -m autoshard.models\` and compiles it with shard-opt (verify and
print op statistics).

Options:
  -b, --batch B      global batch size (default 12)
  -s, --seq S        sequence length (default 64)
  -o, --output FILE  where to write the IR (default \$BUILD_DIR/model.mlir)
  -h, --help         print this help and exit

Any other option is passed to the model builder, e.g. --dtype bf16,
--vocab-multiple 64, --capacity-factor 1.25, --dropout 0.1, --name NAME,
--quiet (see \`python3 -m autoshard.models --help\`).

Environment: BUILD_DIR (default <repo>/build) holds bin/shard-opt and the
venv; scripts/setup.sh is run first if either is missing.
EOF
}

die() {
  echo "$PROG: $*" >&2
  echo "Try '$PROG --help'." >&2
  exit 2
}

# The value of option $1, which must be given as $2 (not absent, not another
# option).
value_of() {
  if [[ $# -lt 2 || ( $2 == -* && $2 != - ) ]]; then
    die "option '$1' needs a value"
  fi
  printf '%s' "$2"
}

if [[ $# -gt 0 && $1 != -* ]]; then CONFIG=$1; shift; fi
BATCH=12 SEQ=64 OUT=$BUILD_DIR/model.mlir
BUILDER_ARGS=()
while [[ $# -gt 0 ]]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    -b | --batch) BATCH=$(value_of "$@"); shift 2 ;;
    -s | --seq) SEQ=$(value_of "$@"); shift 2 ;;
    -o | --output) OUT=$(value_of "$@"); shift 2 ;;
    --batch=*) BATCH=${1#*=}; shift ;;
    --seq=*) SEQ=${1#*=}; shift ;;
    --output=*) OUT=${1#*=}; shift ;;
    --) shift; BUILDER_ARGS+=("$@"); break ;;
    *) BUILDER_ARGS+=("$1"); shift ;;
  esac
done
[[ -n $BATCH ]] || die "option '--batch' needs a value"
[[ -n $SEQ ]] || die "option '--seq' needs a value"
[[ -n $OUT && $OUT != - ]] || die "option '-o' needs a file name (the IR is compiled from it)"

[[ -x $BUILD_DIR/bin/shard-opt && -x $BUILD_DIR/venv/bin/python ]] || "$ROOT/scripts/setup.sh"
PYTHONPATH=$ROOT/python "$BUILD_DIR/venv/bin/python" -m autoshard.models "$CONFIG" \
  --batch "$BATCH" --seq "$SEQ" -o "$OUT" ${BUILDER_ARGS[@]+"${BUILDER_ARGS[@]}"}
echo "model IR: $OUT"
"$BUILD_DIR/bin/shard-opt" "$OUT" --print-op-stats -o /dev/null
