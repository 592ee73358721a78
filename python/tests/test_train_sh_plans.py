"""scripts/train.sh refuses a plan its global batch cannot serve before it
compiles anything: one line naming the batch and the degrees, exit 2.

Needs the build (train.sh runs setup without one); skipped without it.
"""

import os
import subprocess

import pytest

from conftest import REPO_ROOT, find_shard_opt


def _train_sh(*args):
    opt = find_shard_opt()
    if opt is None:
        pytest.skip("shard-opt not built (set SHARD_OPT or build build/bin/shard-opt)")
    env = dict(os.environ, BUILD_DIR=os.path.dirname(os.path.dirname(opt)))
    return subprocess.run([os.path.join(REPO_ROOT, "scripts", "train.sh"), *args],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=env, timeout=120)


def test_a_dp_that_divides_neither_12_nor_16_is_refused(tmp_path):
    p = _train_sh("--plan", "dp=5", "-n", "5", "--steps", "2", "--out", str(tmp_path))
    assert p.returncode == 2, p.stdout
    assert ("global batch 16 is not divisible by dp x mb = 5 either: "
            "pass --batch with a multiple of 5") in p.stdout
    assert not (tmp_path / "model.json").exists()


def test_a_world_size_mismatch_is_refused(tmp_path):
    p = _train_sh("--plan", "dp=3,tp=2", "-n", "4", "--steps", "2", "--out", str(tmp_path))
    assert p.returncode == 2, p.stdout
    assert "-n 4 does not match the plan's world size 6" in p.stdout
