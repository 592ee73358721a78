"""Shared fixtures for the autoshard Python tests.

* ``python/`` is put on ``sys.path`` so the tests run from a source checkout.
* Model configs come from ``$AUTOSHARD_CONFIGS`` or ``<repo>/../shared/configs/models``.
* ``shard-opt`` comes from ``$SHARD_OPT``, ``<repo>/build/bin/shard-opt`` or ``PATH``;
  tests that need it are skipped when it is not found.
"""

import os
import shutil
import subprocess
import functools
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
REPO_ROOT = os.path.dirname(PYTHON_DIR)
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

CONFIG_DIR = os.environ.get("AUTOSHARD_CONFIGS") or os.path.normpath(
    os.path.join(REPO_ROOT, "..", "shared", "configs", "models"))


def config_names():
    """Stems of every ``*.json`` in the model config dir (empty if absent)."""
    if not os.path.isdir(CONFIG_DIR):
        return []
    return sorted(f[:-5] for f in os.listdir(CONFIG_DIR) if f.endswith(".json"))


def config_path(name):
    path = os.path.join(CONFIG_DIR, name + ".json")
    if not os.path.isfile(path):
        pytest.skip(f"model config {path} not found (set AUTOSHARD_CONFIGS)")
    return path


def find_shard_opt():
    """Path of shard-opt, or None."""
    env = os.environ.get("SHARD_OPT")
    if env:
        return env if os.path.isfile(env) and os.access(env, os.X_OK) else None
    cand = os.path.join(REPO_ROOT, "build", "bin", "shard-opt")
    if os.path.isfile(cand) and os.access(cand, os.X_OK):
        return cand
    return shutil.which("shard-opt")


def build_nanogpt_cpu(batch, out):
    """Writes the nanoGPT CPU model (seq 64, vocabulary padded to 64) at
    global batch ``batch`` to ``out`` (``python -m autoshard.models``)."""
    subprocess.run(
        [sys.executable, "-m", "autoshard.models",
         config_path("nanogpt-shakespeare-char-cpu"), "--batch", str(batch),
         "--seq", "64", "--vocab-multiple", "64", "-q", "-o", str(out)],
        check=True, env=dict(os.environ, PYTHONPATH=PYTHON_DIR))


def run_tool(cmd):
    """stdout of ``cmd``; fails the test with its stderr when it fails."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="session")
def shard_opt():
    path = find_shard_opt()
    if path is None:
        pytest.skip("shard-opt not built (set SHARD_OPT or build build/bin/shard-opt)")
    return path


@pytest.fixture
def cfg_path():
    return config_path


@functools.lru_cache(maxsize=None)
def peer_python():
    """(python, "") of the peer venv with torch, transformers and safetensors
    (AUTOSHARD_PEER_PYTHON, else ~/.cache/autoshard-peer-venv, which
    scripts/setup.sh installs), or (None, why) when it is missing."""
    py = os.environ.get("AUTOSHARD_PEER_PYTHON") or os.path.expanduser(
        "~/.cache/autoshard-peer-venv/bin/python")
    if not os.access(py, os.X_OK):
        return None, f"no peer Python at {py} (scripts/setup.sh installs torch + " \
                     "transformers there; or set AUTOSHARD_PEER_PYTHON)"
    p = subprocess.run([py, "-c", "import torch, transformers, safetensors"],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        return None, f"{py} cannot import torch, transformers and safetensors: " \
                     f"{p.stderr.strip()[-300:]}"
    return py, ""


def fake_tool(path, marker_dir):
    """Writes an executable at ``path`` that stands for a tool measuring
    for a long time (20 s): it writes its pid to ``marker_dir/pid`` and, when
    a TERM stops it, ``TERM`` to ``marker_dir/signal``."""
    path.write_text(
        "#!/usr/bin/env bash\n"
        f"trap 'echo TERM > {marker_dir}/signal; exit 143' TERM\n"
        f"echo $$ > {marker_dir}/pid\n"
        "for i in $(seq 200); do sleep 0.1; done\n")
    path.chmod(0o755)


def terminate_when_fake_runs(proc, marker_dir):
    """Sends ``proc`` (a Popen with pipes) SIGTERM once the fake_tool it
    runs has started; returns ``(its stderr, whether the fake tool was still
    alive right after proc ended)``. Kills whatever is left."""
    import time
    pid_file = marker_dir / "pid"
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text().strip():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the fake tool never started"
            time.sleep(0.05)
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    fake_pid = int(pid_file.read_text())
    alive = os.path.exists(f"/proc/{fake_pid}")
    if alive:
        os.kill(fake_pid, 9)
    return err, alive
