#!/usr/bin/env bash
# One-time (idempotent) setup of a fresh Debian 12 machine for autoshard:
# installs the system packages, a Python venv under build/venv, then
# configures and builds everything into build/ (ccache when present).
#
#   scripts/setup.sh            # install + configure + build
#   scripts/setup.sh --jax      # also the JAX venv of bench/cpu_peers
#   BUILD_DIR=build-x scripts/setup.sh
#
# Environment: BUILD_DIR (default build), JOBS (default 2),
# AUTOSHARD_SKIP_APT=1 to skip package installation, AUTOSHARD_JAX_VENV
# (default ~/.cache/autoshard-jax-venv).
set -euo pipefail

WANT_JAX=0
for arg in "$@"; do
  case $arg in
    --jax) WANT_JAX=1 ;;
    *) echo "setup.sh: error: unknown argument '$arg' (expected --jax)" >&2; exit 2 ;;
  esac
done

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
JOBS=${JOBS:-2}

log() { printf '[setup] %s\n' "$*"; }

# --- System packages (Debian) ------------------------------------------------
APT_PACKAGES=(
  # Compiler: LLVM/MLIR 22 (pinned in CMakeLists.txt), FileCheck/lit/not.
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # Build tools.
  cmake ninja-build ccache g++ clang-format
  # Runtime: MPI for CPU collectives, OpenBLAS for CPU GEMMs, JSON.
  openmpi-bin libopenmpi-dev libopenblas-dev nlohmann-json3-dev
  # CPU kernels: OpenBLAS's OpenMP build (one thread pool with our OpenMP
  # kernels), SLEEF's vector math, oneDNN's eltwise GELU.
  libopenblas-openmp-dev libsleef-dev libdnnl-dev
  # Checkpoint checksums (header-only use).
  libxxhash-dev
  # Tests; the HTML reports' browser test (python/tests/test_report_browser.py)
  # opens them in headless Chromium, with a font for its screenshots.
  libgtest-dev libgmock-dev chromium fonts-dejavu-core
  # Fuzzing (scripts/fuzz.sh): clang with libFuzzer and the sanitizers'
  # runtime, the same release as Debian's LLVM/MLIR (clang 14 cannot build
  # the compiler: C++20 captures of structured bindings).
  clang-22 libclang-rt-22-dev
  # Python for the model builder and pytest (venv created below).
  python3 python3-venv
)

if [[ "${AUTOSHARD_SKIP_APT:-0}" != 1 ]]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  if ((${#missing[@]})); then
    log "installing: ${missing[*]}"
    SUDO=""
    [[ $(id -u) -ne 0 ]] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
  else
    log "system packages present"
  fi
fi

# --- Python venv (Debian's python3; the machine's pyenv python lacks venv deps)
PY=/usr/bin/python3
VENV=$BUILD_DIR/venv
mkdir -p "$BUILD_DIR"
if [[ ! -x $VENV/bin/python ]]; then
  log "creating Python venv in $VENV"
  "$PY" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import pytest, numpy, safetensors, xxhash, tokenizers, tqdm' 2>/dev/null; then
  log "installing Python packages"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$ROOT/python/requirements.txt"
fi

# --- Peer venv: torch + transformers for the Hugging Face check -------------
# Outside the clone (about 5 GB: PyPI's torch brings its CUDA wheels) so that
# CI and later sessions on this machine reuse it. AUTOSHARD_SKIP_PEER=1 skips
# it (python/tests/test_hf_peer.py then skips, saying so).
PEER_VENV=${AUTOSHARD_PEER_VENV:-$HOME/.cache/autoshard-peer-venv}
if [[ "${AUTOSHARD_SKIP_PEER:-0}" != 1 ]]; then
  peer_want=$(grep -E '^(torch|transformers)==' "$ROOT/python/requirements-peer.txt" | sort | tr '\n' ' ')
  peer_have=$("$PEER_VENV/bin/python" -c 'import torch, transformers, safetensors, numpy
print("torch==" + torch.__version__.split("+")[0] + " transformers==" + transformers.__version__ + " ")' \
    2>/dev/null || true)
  if [[ "$peer_have" != "$peer_want" ]]; then
    log "installing the peer venv (torch, transformers) in $PEER_VENV"
    [[ -x $PEER_VENV/bin/python ]] || "$PY" -m venv "$PEER_VENV"
    "$PEER_VENV/bin/pip" install -q --disable-pip-version-check -r "$ROOT/python/requirements-peer.txt"
  else
    log "peer venv present ($PEER_VENV: $peer_have)"
  fi
fi

# --- JAX venv of the CPU peer benchmark (bench/cpu_peers/jax_peer.py) --------
if [[ $WANT_JAX == 1 ]]; then
  JAX_VENV=${AUTOSHARD_JAX_VENV:-$HOME/.cache/autoshard-jax-venv}
  jax_want=$(grep -E '^(jax|optax)==' "$ROOT/python/requirements-jax.txt" | sort | tr '\n' ' ')
  jax_have=$("$JAX_VENV/bin/python" -c 'import jax, optax
print("jax==" + jax.__version__ + " optax==" + optax.__version__ + " ")' 2>/dev/null || true)
  if [[ "$jax_have" != "$jax_want" ]]; then
    log "installing the JAX venv in $JAX_VENV"
    [[ -x $JAX_VENV/bin/python ]] || "$PY" -m venv "$JAX_VENV"
    "$JAX_VENV/bin/pip" install -q --disable-pip-version-check -r "$ROOT/python/requirements-jax.txt"
  else
    log "JAX venv present ($JAX_VENV: $jax_have)"
  fi
fi

# --- Configure and build --------------------------------------------------------
LAUNCHER=()
if command -v ccache >/dev/null; then
  # Keep the cache outside the clone so CI and later sessions reuse it.
  export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/autoshard-ccache}
  # Relative paths in the hash let clones in other folders share the cache.
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
            -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
if [[ ! -f $BUILD_DIR/build.ninja ]]; then
  log "configuring $BUILD_DIR"
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
    -DPython3_EXECUTABLE="$VENV/bin/python" "${LAUNCHER[@]}" >/dev/null
fi
log "building (-j$JOBS)"
ninja -C "$BUILD_DIR" -j"$JOBS"
log "done: tools in $BUILD_DIR/bin"
