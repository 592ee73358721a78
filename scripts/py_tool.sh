# Sourced by the wrappers of the Python test drivers (plan_sweep.sh,
# checkpoint_check.sh): `run_py_tool NAME.py ARGS...` prints the wrapper's
# header comment for -h/--help, else execs scripts/NAME.py with the
# project's venv python (or $PYTHON), --root, --build $BUILD_DIR and --py.
run_py_tool() {
  local script=$1 p
  shift
  ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  BUILD_DIR=$(cd "${BUILD_DIR:-$ROOT/build}" && pwd)
  [[ " $* " == *" -h "* || " $* " == *" --help "* ]] && { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0; }
  PY=${PYTHON:-}
  for p in "$BUILD_DIR/venv/bin/python" "$ROOT/build/venv/bin/python" python3; do
    [[ -n $PY ]] && break
    command -v "$p" >/dev/null 2>&1 && PY=$p
  done
  exec "$PY" "$ROOT/scripts/$script" --root "$ROOT" --build "$BUILD_DIR" --py "$PY" "$@"
}
