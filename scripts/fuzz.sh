#!/usr/bin/env bash
# Builds and runs the libFuzzer targets (tools/fuzz):
#   shard-opt-fuzz  shard-opt's parse + verify + the user pipelines
#                   (tfm-autodiff, autoshard-train on one device and under
#                   dp, dp+tp+sp, pp, cp and ZeRO-3 plans, dist-verify-comm,
#                   the rt lowering); seeds: every -split-input-file chunk
#                   of test/**/*.mlir
#   artifact-fuzz   the runtime's artifact loader (parseArtifact: JSON parse
#                   and every check); seeds: the artifacts shard-opt writes
#                   for test/Inputs/tiny-gpt2-model.mlir under several plans
# in an instrumented build of their own (clang, -fsanitize=fuzzer,address,
# assertions on; default build-fuzz/), each for --time seconds. Crashes land
# in BUILD/fuzz/crashes/ (reproduce: BUILD/bin/<target> <file>); the corpus
# grows in BUILD/fuzz/corpus/<target>/ from run to run.
#
#   scripts/fuzz.sh [--time S] [--target shard-opt|artifact|all] [--jobs N]
#                   [--junit FILE]
#
# scripts/test.sh runs it with --time 60. Without a clang (16 or later)
# that links -fsanitize=fuzzer (Debian: clang-22 + libclang-rt-22-dev, as
# scripts/setup.sh installs; FUZZ_CXX names another) it prints why and
# exits 0 with the JUnit case skipped; FUZZ=0 skips as well.
# Environment: FUZZ_BUILD_DIR (default build-fuzz), BUILD_DIR (the normal
# build, whose shard-opt writes the artifact seeds; default build),
# FUZZ_CXX, JOBS (build jobs, default 2).
# Exit status: 0 no crash (or skipped), 1 a crash or a target failed to
# build or run, 2 bad arguments.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
JOBS=${JOBS:-2}
TIME=60
TARGET=all
FUZZ_JOBS=1
JUNIT=""
while (($#)); do
  case $1 in
    --time) TIME=${2:-}; shift 2 ;;
    --target) TARGET=${2:-}; shift 2 ;;
    --jobs) FUZZ_JOBS=${2:-}; shift 2 ;;
    --junit) JUNIT=${2:-}; shift 2 ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) echo "fuzz.sh: error: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ $TIME =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: error: --time must be a positive number of seconds, found '$TIME'" >&2; exit 2; }
[[ $FUZZ_JOBS =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: error: --jobs must be a positive integer, found '$FUZZ_JOBS'" >&2; exit 2; }
case $TARGET in
  all) TARGETS=(shard-opt-fuzz artifact-fuzz) ;;
  shard-opt) TARGETS=(shard-opt-fuzz) ;;
  artifact) TARGETS=(artifact-fuzz) ;;
  *) echo "fuzz.sh: error: --target must be shard-opt, artifact or all, found '$TARGET'" >&2; exit 2 ;;
esac

log() { printf '[fuzz] %s\n' "$*"; }
cases=""
add_case() { # add_case NAME STATUS(pass|fail|skip) MESSAGE
  local body=""
  case $2 in
    fail) body="<failure message=\"$(printf '%s' "$3" | sed 's/&/\&amp;/g; s/"/\&quot;/g; s/</\&lt;/g')\"/>" ;;
    skip) body="<skipped message=\"$(printf '%s' "$3" | sed 's/&/\&amp;/g; s/"/\&quot;/g; s/</\&lt;/g')\"/>" ;;
  esac
  cases+="<testcase classname=\"fuzz\" name=\"$1\">$body</testcase>"
}
write_junit() {
  [[ -n $JUNIT ]] || return 0
  local n f s
  n=$(grep -o '<testcase ' <<<"$cases" | wc -l)
  f=$(grep -o '<failure ' <<<"$cases" | wc -l)
  s=$(grep -o '<skipped ' <<<"$cases" | wc -l)
  echo "<testsuite name=\"fuzz\" tests=\"$n\" failures=\"$f\" skipped=\"$s\">$cases</testsuite>" >"$JUNIT"
}
skip() {
  log "skipped: $1"
  for t in "${TARGETS[@]}"; do add_case "$t" skip "$1"; done
  write_junit
  exit 0
}

[[ ${FUZZ:-1} == 0 ]] && skip "FUZZ=0"

# --- A clang that links libFuzzer --------------------------------------------
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
# (The lambda: the compiler's sources capture structured bindings, which
# clang accepts from release 16.)
cat >"$probe/p.cpp" <<'EOF'
#include <cstddef>
#include <cstdint>
#include <utility>
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto [a, b] = std::pair<size_t, size_t>(size, size);
  return [&] { return int(a - b); }();
}
EOF
CXX=""
for c in ${FUZZ_CXX:-} clang++-22 clang++; do
  command -v "$c" >/dev/null 2>&1 || continue
  if "$c" -fsanitize=fuzzer,address "$probe/p.cpp" -o "$probe/p" >/dev/null 2>&1; then
    CXX=$(command -v "$c")
    break
  fi
done
[[ -n $CXX ]] || skip "no clang (16 or later) that links -fsanitize=fuzzer (tried ${FUZZ_CXX:+$FUZZ_CXX, }clang++-22, clang++; install clang-22 and libclang-rt-22-dev, as scripts/setup.sh does)"
CC=${CXX/clang++/clang}
[[ -x $CC ]] || CC=$CXX
log "compiler: $CXX ($("$CXX" --version | head -1))"

# --- Instrumented build ------------------------------------------------------
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/autoshard-ccache} CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
if [[ ! -f $FUZZ_BUILD_DIR/build.ninja ]]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # -O1 without NDEBUG: assertions (llvm::cast, ours) count as crashes.
  if ! cmake -S "$ROOT" -B "$FUZZ_BUILD_DIR" -G Ninja \
      -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" "${launcher[@]}" \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_FLAGS_RELEASE="-O1 -gline-tables-only" \
      -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only" \
      -DAUTOSHARD_FUZZ=ON -DAUTOSHARD_ENABLE_CUDA=OFF -DAUTOSHARD_RUNTIME_CPU=OFF \
      -DAUTOSHARD_RUNTIME_MPI=OFF -DAUTOSHARD_RUNTIME_TESTS=OFF \
      >"$probe/cmake.log" 2>&1; then
    cat "$probe/cmake.log" >&2
    for t in "${TARGETS[@]}"; do add_case "$t" fail "cmake failed"; done
    write_junit
    exit 1
  fi
fi
log "building ${TARGETS[*]} in $FUZZ_BUILD_DIR"
if ! nice -n 5 ninja -C "$FUZZ_BUILD_DIR" -j"$JOBS" "${TARGETS[@]}" >"$probe/build.log" 2>&1; then
  tail -40 "$probe/build.log" >&2
  for t in "${TARGETS[@]}"; do add_case "$t" fail "build failed"; done
  write_junit
  exit 1
fi

# --- Seed corpora --------------------------------------------------------------
FUZZ_DIR=$FUZZ_BUILD_DIR/fuzz
mkdir -p "$FUZZ_DIR/crashes"
seeds_shard_opt() { # writes selector byte + chunk files into $1
  python3 - "$ROOT/test" "$1" <<'EOF'
import hashlib, os, re, sys
root, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
# Selectors of ShardOptFuzz.cpp's Stage enum.
VERIFY, AUTODIFF, ONE, DP, DPTP, PP, CP, ZERO3, STEP_DP, COMM, RT = range(11)
n = 0
for dirpath, _, files in os.walk(root):
    for f in sorted(files):
        if not f.endswith(".mlir"):
            continue
        text = open(os.path.join(dirpath, f), encoding="utf-8", errors="replace").read()
        for chunk in re.split(r"(?m)^// -----\s*$", text):
            if not chunk.strip() or len(chunk) > 60000:
                continue
            sel = {VERIFY}
            if "@forward" in chunk:
                sel |= {AUTODIFF, ONE, DP, DPTP, PP, CP, ZERO3}
            if "@train_step" in chunk and "rt.func" not in chunk:
                sel |= {STEP_DP, RT}
            if "dist.mesh" in chunk:
                sel.add(COMM)
            for s in sorted(sel):
                data = bytes([s]) + chunk.encode()
                name = hashlib.sha1(data).hexdigest()
                with open(os.path.join(out, name), "wb") as fh:
                    fh.write(data)
                n += 1
print(n)
EOF
}
seeds_artifact() { # writes artifacts into $1 (needs the normal build's shard-opt)
  local out=$1 n=0 plan
  mkdir -p "$out"
  local opt=$BUILD_DIR/bin/shard-opt
  if [[ -x $opt ]]; then
    for plan in "" dp=2 tp=2 pp=2,mb=2 dp=2,zero=3 cp=2; do
      if "$opt" "$ROOT/test/Inputs/tiny-gpt2-model.mlir" \
          --autoshard-train="plan=$plan output=$out/tiny-${plan:-1dev}.json" \
          -o /dev/null 2>/dev/null; then
        n=$((n + 1))
      fi
    done
  fi
  # JSON the runtime tests keep, if any.
  while IFS= read -r f; do cp "$f" "$out/" && n=$((n + 1)); done \
    < <(find "$ROOT/runtime/test" -name '*.json' -size -512k 2>/dev/null)
  echo "$n"
}

# --- Runs ----------------------------------------------------------------------
status=0
for t in "${TARGETS[@]}"; do
  seeds=$FUZZ_DIR/seeds/$t corpus=$FUZZ_DIR/corpus/$t
  rm -rf "$seeds"
  mkdir -p "$seeds" "$corpus"
  # Inputs as long as the seeds (longer ones are truncated, which would
  # leave broken JSON): MLIR chunks up to 64 KB, artifacts up to 512 KB.
  if [[ $t == shard-opt-fuzz ]]; then
    n=$(seeds_shard_opt "$seeds") max_len=65536
  else
    n=$(seeds_artifact "$seeds") max_len=524288
  fi
  # Inputs that crashed once (tools/fuzz/regressions/<target>/): every run
  # replays them first.
  for f in "$ROOT/tools/fuzz/regressions/$t"/*; do
    [[ -f $f ]] && cp "$f" "$seeds/regression-$(basename "$f")" && n=$((n + 1))
  done
  log "$t: $n seeds, $(find "$corpus" -type f | wc -l) corpus entries; running ${TIME}s"
  # Crash, timeout, leak and OOM inputs count; libFuzzer's slow units
  # (over 10 s, which a loaded machine produces) are listed, not failures.
  failures() { find "$FUZZ_DIR/crashes" -type f -name "$t-*" ! -name "$t-slow-unit-*" | wc -l; }
  slow_before=$(find "$FUZZ_DIR/crashes" -type f -name "$t-slow-unit-*" | wc -l)
  before=$(failures)
  # -timeout: one input may compile for a while (a pipeline on a model);
  # beyond 60 s it is a hang. -rss_limit_mb: an input that needs 4 GB is
  # a bug too.
  parallel=()
  ((FUZZ_JOBS > 1)) && parallel=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS")
  (cd "$FUZZ_DIR" && rm -f fuzz-*.log &&
    "$FUZZ_BUILD_DIR/bin/$t" "$corpus" "$seeds" "${parallel[@]}" \
      -max_total_time="$TIME" -timeout=60 -rss_limit_mb=4096 -max_len="$max_len" \
      -artifact_prefix="$FUZZ_DIR/crashes/$t-" -print_final_stats=1 \
      >"$FUZZ_DIR/$t.log" 2>&1)
  rc=$?
  ((FUZZ_JOBS > 1)) && cat "$FUZZ_DIR"/fuzz-*.log >>"$FUZZ_DIR/$t.log" 2>/dev/null
  # Executions: the final stats of each worker, or (after a crash, which
  # prints none) the last "#N" status line.
  execs=$(awk '/stat::number_of_executed_units:/ { n += $2; s = 1 }
               /^#[0-9]+/ { sub(/^#/, "", $1); last = $1 }
               END { print (s ? n : last + 0) }' "$FUZZ_DIR/$t.log")
  after=$(failures)
  new=$((after - before))
  slow=$(($(find "$FUZZ_DIR/crashes" -type f -name "$t-slow-unit-*" | wc -l) - slow_before))
  ((slow > 0)) && log "$t: $slow input(s) took over 10 s (slow units in $FUZZ_DIR/crashes; not failures)"
  if ((rc != 0 || new > 0)); then
    status=1
    log "$t: FAILED (exit $rc, $new new crash files, $execs executions); log $FUZZ_DIR/$t.log"
    grep -m5 -E "ERROR: (AddressSanitizer|libFuzzer)|^SUMMARY|Test unit written" "$FUZZ_DIR/$t.log" | sed 's/^/[fuzz]   /'
    add_case "$t" fail "exit $rc, $new crash files in $FUZZ_DIR/crashes after $execs executions"
  else
    log "$t: $execs executions in ${TIME}s, no crash"
    add_case "$t" pass ""
  fi
done
write_junit
exit $status
