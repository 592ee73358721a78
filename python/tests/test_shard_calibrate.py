"""shard-calibrate (issue 21, item 3) writes a cluster description of this
machine that the planner reads: one rank, one repeat (a few seconds)."""

import json
import os
import subprocess

import pytest

from conftest import REPO_ROOT


def _calibrate():
    path = os.path.join(REPO_ROOT, "build", "bin", "shard-calibrate")
    if not os.access(path, os.X_OK):
        pytest.skip("shard-calibrate not built")
    return path


def test_writes_a_cluster_the_planner_reads(tmp_path, shard_opt):
    out = tmp_path / "cluster.json"
    proc = subprocess.run([_calibrate(), "--repeats", "1", "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    cluster = json.loads(out.read_text())
    assert cluster["gpus_per_node"] == 1
    gpu = cluster["gpu"]
    # Measured, positive, rounded to 2 significant digits.
    for key in ("peak_bf16_tflops", "hbm_tb_per_s", "hbm_gib"):
        assert gpu[key] > 0, key
        assert float(f"{gpu[key]:.2g}") == gpu[key], (key, gpu[key])
    assert 0 < cluster["efficiency"]["gemm"] <= 1
    assert 0 < cluster["efficiency"]["attention"] <= 1
    assert len(cluster["measured"]["gemm"]) == 18
    assert cluster["memory"]["grad_buffer"] == "frame"
    assert gpu["shares_node"] is True
    # The planner scores a plan on it.
    model = tmp_path / "model.mlir"
    subprocess.run(
        [shard_opt, os.path.join(REPO_ROOT, "test", "Inputs", "tiny-gpt2-model.mlir"),
         "-o", str(model)], check=True)
    report = subprocess.run(
        [shard_opt, str(model),
         f"--dist-auto-plan=cluster={out} gpus=1 evaluate=dp=1 format=json",
         "-o", "/dev/null"], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    plans = json.loads(report.stdout)["plans"]
    assert plans and plans[0]["step_s"] > 0


def test_bad_arguments_are_named():
    proc = subprocess.run([_calibrate(), "--repeats", "0"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0
    assert "option '--repeats' needs an integer in [1, 1000], got '0'" in proc.stderr
    proc = subprocess.run([_calibrate(), "--frobnicate"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0
    assert "unknown argument '--frobnicate'" in proc.stderr
