"""shard-calibrate (issue 21, item 3) writes a cluster description of this
machine that the planner reads: one rank, one repeat (a few seconds)."""

import json
import os
import re
import subprocess

import pytest

from conftest import REPO_ROOT

from autoshard import calibration


def _calibrate():
    path = os.path.join(REPO_ROOT, "build", "bin", "shard-calibrate")
    if not os.access(path, os.X_OK):
        pytest.skip("shard-calibrate not built")
    return path


# The memory-bound kernels shard-calibrate probes one by one (CpuProbes.cpp):
# every one the planner costs as Memory kind that the models of
# configs/models run.
MEMORY_OPS = [
    "add", "sub", "mul", "scale", "reduce_sum", "broadcast",
    "layer_norm", "layer_norm_grad", "rms_norm", "rms_norm_grad",
    "gelu", "gelu_grad", "silu", "silu_grad", "swiglu", "swiglu_grad",
    "rope", "rope_grad", "dropout", "dropout_grad",
    "embedding", "embedding_grad", "position_embedding",
    "position_embedding_grad", "cross_entropy", "cross_entropy_grad",
    "moe_router", "moe_router_grad", "moe_aux_loss", "moe_aux_loss_grad",
    "moe_dispatch", "moe_dispatch_grad", "moe_combine", "moe_combine_grad",
    "sum_squares", "adamw",
    # Parallel plans: microbatch slices, vocab-parallel embedding and loss,
    # context-parallel blocks and ring attention's merge.
    "microbatch", "vocab_embedding", "vocab_embedding_grad", "vocab_ce_max",
    "vocab_ce_stats", "vocab_ce_loss", "vocab_ce_grad", "rope_local",
    "rope_local_grad", "dropout_local", "dropout_local_grad",
    "attention_merge",
]


def _step_s(shard_opt, model, cluster_path, ranks=1):
    return _plan(shard_opt, model, cluster_path, ranks)["step_s"]


def _plan(shard_opt, model, cluster_path, ranks=1):
    """The planner's JSON entry of dp=ranks on the cluster file."""
    report = subprocess.run(
        [shard_opt, str(model),
         f"--dist-auto-plan=cluster={cluster_path} gpus={ranks} "
         f"evaluate=dp={ranks} format=json",
         "-o", "/dev/null"], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    plans = json.loads(report.stdout)["plans"]
    assert plans
    return plans[0]


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
    # m in {64, 256, 1024} x n in {32, 128, 512} x k in {32, 128, 512}.
    assert len(cluster["measured"]["gemm"]) == 27
    assert cluster["efficiency"]["gemm_overhead_us"] >= 0
    # Attention at head dims 16, 32, 64, each at sequence 64 (batch 2) and
    # 32 (batch 8), both directions, and the fitted seconds per score
    # element and per tile of each, with the kernel's tile.
    assert [(a["seq"], a["batch"], a["head_dim"])
            for a in cluster["measured"]["attention"]] == [
        (64, 2, 16), (64, 2, 32), (64, 2, 64),
        (32, 8, 16), (32, 8, 32), (32, 8, 64)]
    assert all(a["forward_s"] > 0 and a["backward_s"] > 0
               for a in cluster["measured"]["attention"])
    for key in ("attention_score_ns", "attention_grad_score_ns",
                "attention_tile_us", "attention_grad_tile_us"):
        assert cluster["efficiency"][key] >= 0, key
    assert cluster["efficiency"]["attention_query_block"] == 64
    assert cluster["efficiency"]["attention_key_block"] == 512
    assert cluster["memory"]["grad_buffer"] == "frame"
    assert gpu["shares_node"] is True
    # Interleaved repeats: the drift of the bandwidth probe (one repeat: 1),
    # and the summary line on stderr.
    assert cluster["measured"]["drift"] >= 1
    assert "drift" in proc.stderr and "GB/s" in proc.stderr, proc.stderr
    # The planner scores a plan on it.
    model = tmp_path / "model.mlir"
    subprocess.run(
        [shard_opt, os.path.join(REPO_ROOT, "test", "Inputs", "tiny-gpt2-model.mlir"),
         "-o", str(model)], check=True)
    step = _step_s(shard_opt, model, out)
    assert step > 0

    # Every probed memory-bound kernel has its own efficiency (positive, 2
    # significant digits) and its raw time and bytes under "measured".
    ops = cluster["efficiency"]["memory_ops"]
    assert sorted(ops) == sorted(MEMORY_OPS)
    measured = cluster["measured"]["memory_ops"]
    for name in MEMORY_OPS:
        assert ops[name] > 0, name
        assert float(f"{ops[name]:.2g}") == ops[name], (name, ops[name])
        assert measured[name]["s"] > 0 and measured[name]["bytes"] > 0, name
    # The bytes are TfmCost's: operands read and results written once
    # (add on [16, 64, 128] f32: 3 x 512 KiB), embedding ids + 2 x out,
    # moe_dispatch 2 x x x top-k.
    assert measured["add"]["bytes"] == 3 * 16 * 64 * 128 * 4
    assert measured["embedding"]["bytes"] == 16 * 64 * 4 + 2 * 16 * 64 * 128 * 4
    assert measured["moe_dispatch"]["bytes"] == 2 * 16 * 64 * 128 * 4 * 2
    assert 0 < cluster["efficiency"]["memory"] <= 1

    # The planner uses the entry of a kernel the model runs (GPT-2's
    # layer_norm: slower) and only that: an entry for a kernel the model
    # does not run (MoE routing) changes nothing.
    def with_ops(name, **changes):
        edited = json.loads(out.read_text())
        edited["efficiency"]["memory_ops"].update(changes)
        path = tmp_path / name
        path.write_text(json.dumps(edited))
        return path
    assert _step_s(shard_opt, model, with_ops("moe.json", moe_router=1e-6)) == step
    slower = _step_s(shard_opt, model,
                     with_ops("ln.json", layer_norm=ops["layer_norm"] / 100))
    assert slower > step


def test_profiles_of_fewer_ranks(tmp_path, shard_opt):
    """--profile writes an earlier, fewer-rank output as by_ranks_per_node.R,
    and the planner scores a job of R ranks with it (not the N-rank share
    scaled by N / R)."""
    one = tmp_path / "one.json"
    proc = subprocess.run([_calibrate(), "--repeats", "1", "--out", str(one)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "sync slowdown" not in proc.stderr
    two = tmp_path / "two.json"
    proc = subprocess.run(
        [_calibrate(), "-n", "2", "--repeats", "1", "--profile", str(one),
         "--out", str(two)], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    cluster = json.loads(two.read_text())
    assert cluster["gpus_per_node"] == 2
    # Two ranks synchronise: the sweeps of the one group size, and the
    # slowdown the planner reads; one rank has neither.
    sweeps = cluster["measured"]["sync_sweeps"]
    assert [s["group"] for s in sweeps] == [2]
    assert sweeps[0]["syncs"] == 20 and sweeps[0]["base_s"] > 0
    assert cluster["host"]["sync_slowdown"] >= 0
    assert "sync_slowdown" not in json.loads(one.read_text())["host"]
    # Pipeline hand-offs between the two ranks: every receiver's wake-ups
    # (20 per repeat) and the relay and lone sweeps, as the fields the
    # planner reads; one rank has none.
    sharing = cluster["measured"]["pipeline_sharing"]
    assert sharing["handoffs"] == 20
    assert 0 < sharing["wakeup_median_s"] and 0 < sharing["wakeup_mean_s"]
    assert sharing["sweep_all_running_s"] > 0
    host = cluster["host"]
    assert host["wakeup_latency_us"] == pytest.approx(
        sharing["wakeup_mean_s"] * 1e6, rel=0.05)
    assert host["speedup_half_waiting"] >= 1
    assert host["speedup_others_waiting"] >= 1
    assert "wakeup_latency_us" not in json.loads(one.read_text())["host"]
    # The one-line summary on stderr names the written figure.
    summary = re.search(r", sync slowdown ([0-9.e+-]+), drift ", proc.stderr)
    assert summary, proc.stderr
    assert float(summary.group(1)) == cluster["host"]["sync_slowdown"]
    profile = cluster["by_ranks_per_node"]["1"]
    assert profile["gpu"] == json.loads(one.read_text())["gpu"]
    assert "gpus_per_node" not in profile
    model = tmp_path / "model.mlir"
    subprocess.run(
        [shard_opt, os.path.join(REPO_ROOT, "test", "Inputs", "tiny-gpt2-model.mlir"),
         "-o", str(model)], check=True)
    # One rank on the two-rank file: the profile's figures, as one.json.
    assert _step_s(shard_opt, model, two) == _step_s(shard_opt, model, one)
    # Every kernel of a 2-rank job takes (1 + sync_slowdown) of its time; a
    # 1-rank job (its profile inherits the node's field) never pays it.
    def with_slowdown(name, value):
        path = tmp_path / name
        path.write_text(json.dumps(
            dict(cluster, host=dict(cluster["host"], sync_slowdown=value))))
        return path
    free, synced = with_slowdown("s0.json", 0), with_slowdown("s1.json", 1)
    # The compute (kernels; a few terms of it are not kernels) nearly
    # doubles, and the step grows by it. A ratio of whole steps is no
    # property of the planner: the collectives' share of the step depends
    # on how loaded the machine was while it calibrated (CI once measured
    # 1.2x where an idle machine gives > 1.5x).
    slow, fast = _plan(shard_opt, model, synced, 2), _plan(shard_opt, model,
                                                          free, 2)
    assert slow["compute_s"] > 1.8 * fast["compute_s"]
    assert slow["step_s"] - fast["step_s"] >= \
        slow["compute_s"] - fast["compute_s"] - 1e-12
    assert _step_s(shard_opt, model, synced) == _step_s(shard_opt, model, free)
    # Without the profile the 2-rank share is doubled instead: another time.
    del cluster["by_ranks_per_node"]
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(cluster))
    assert _step_s(shard_opt, model, bare) != _step_s(shard_opt, model, one)


def test_bind_cores_pins_ranks_that_outnumber_the_cores(tmp_path, shard_opt):
    """--bind-cores auto pins 4 ranks to the cores when they outnumber them
    (as shard-run --bind-cores auto does) and writes host.pinned_cores,
    which the planner reads; the default leaves the ranks to the
    scheduler and writes no such field."""
    cores = len(os.sched_getaffinity(0))
    out = tmp_path / "pinned.json"
    proc = subprocess.run(
        [_calibrate(), "-n", "4", "--repeats", "1", "--bind-cores", "auto",
         "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    cluster = json.loads(out.read_text())
    placement = cluster["measured"]["placement"]
    if cores < 4:
        assert cluster["host"]["pinned_cores"] == cores
        assert placement == (f"pinned to core 0 (4 ranks on {cores} "
                             f"core{'s' if cores > 1 else ''}: --bind-cores "
                             f"auto)")
    else:
        assert "pinned_cores" not in cluster["host"]
        assert placement == f"not pinned (4 ranks on {cores} cores)"
    # The planner simulates a pipeline on it, per core where pinned.
    model = os.path.join(REPO_ROOT, "test", "Inputs", "tiny-gpt2-model.mlir")

    def pipeline_step(path):
        report = subprocess.run(
            [shard_opt, model, f"--dist-auto-plan=cluster={path} gpus=4 "
             "batch=4 evaluate=pp=2,dp=2,mb=2 format=json", "-o", "/dev/null"],
            capture_output=True, text=True, timeout=120)
        assert report.returncode == 0, report.stderr
        plan = json.loads(report.stdout)["plans"][0]
        assert plan["simulated"]
        return plan["step_s"]
    pinned = pipeline_step(out)
    assert pinned > 0
    report = subprocess.run(
        [shard_opt, model, f"--dist-auto-plan=cluster={out} gpus=4 batch=4 "
         "evaluate=pp=2,dp=2,mb=2", "-o", "/dev/null"],
        capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    assert (f"cores: 4 ranks on the node pinned to {cores} cores "
            f"(host.pinned_cores; run them with shard-run --bind-cores auto): "
            f"pipelines simulated per core") in report.stdout or cores >= 4, \
        report.stdout
    # What a run meant to match the file passes (train.sh --plan auto,
    # autoshard.calibration --train).
    assert calibration.pinned_cores(cluster, 4) == (cores if cores < 4 else 0)
    if cores < 4:
        del cluster["host"]["pinned_cores"]
        fluid = tmp_path / "fluid.json"
        fluid.write_text(json.dumps(cluster))
        assert pipeline_step(fluid) != pinned
    proc = subprocess.run([_calibrate(), "--bind-cores", "always"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert ("option '--bind-cores' expects 'auto' or 'none', got 'always'"
            in proc.stderr)
    proc = subprocess.run(
        [_calibrate(), "--backend", "cuda", "--bind-cores", "auto"],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert ("option '--bind-cores auto' is for the cpu backend, got "
            "--backend cuda") in proc.stderr, proc.stderr


def test_bad_arguments_are_named():
    proc = subprocess.run([_calibrate(), "--repeats", "0"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0
    assert "option '--repeats' needs an integer in [1, 1000], got '0'" in proc.stderr
    proc = subprocess.run([_calibrate(), "--frobnicate"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0
    assert "unknown argument '--frobnicate'" in proc.stderr
    # An empty --out (an unset variable) is not standard output.
    proc = subprocess.run([_calibrate(), "--out", ""], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == ("shard-calibrate: error: option '--out' needs a "
                           "file name, got '' (leave --out out for standard "
                           "output)\n")


def _descendants(pid):
    """The pids of ``pid``'s descendants (read from /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, frontier = [], [pid]
    while frontier:
        for child in children.get(frontier.pop(), []):
            found.append(child)
            frontier.append(child)
    return found


def test_a_killed_rank_ends_the_run_and_is_named(tmp_path):
    """kill -9 of one rank while the others measure (issue 21's check of
    the tool): the job ends instead of waiting for the rank in a
    collective, the exit status is not 0, stderr names the signal (mpirun's
    report) and --out is not written."""
    import signal
    import time
    out = tmp_path / "cluster.json"
    # Enough repeats to be still measuring when the rank is killed.
    proc = subprocess.Popen([_calibrate(), "-n", "2", "--repeats", "100",
                             "--out", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        ranks = []
        while len(ranks) < 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the ranks never started"
            time.sleep(0.2)
            ranks = []
            for pid in _descendants(proc.pid):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        if b"shard-calibrate" in f.read():
                            ranks.append(pid)
                except OSError:
                    pass
        time.sleep(1)  # measuring by now
        os.kill(ranks[-1], signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            for pid in _descendants(proc.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0, err
    assert re.search(r"signal 9|Killed", err), err
    assert not out.exists()


def test_a_failed_write_leaves_the_previous_out_whole(tmp_path):
    """--out often names the description the run replaces
    (scripts/calibrate_cpu.sh, configs/clusters/cpu-2core.json). A write
    that fails halfway (a full disk: AtomicFile's test hook) is named, exits
    1, and leaves the previous file as it was, with no temporary beside it
    (before, --out was opened in place, truncated first)."""
    out = tmp_path / "cluster.json"
    out.write_text('{"name": "the previous description"}\n')
    proc = subprocess.run(
        [_calibrate(), "-n", "1", "--repeats", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
        env=dict(os.environ, OPENBLAS_NUM_THREADS="1",
                 AUTOSHARD_TEST_WRITE_FAULT="fail:cluster.json"))
    assert proc.returncode == 1, proc.stderr
    assert re.search(r"^shard-calibrate: error: .*cluster\.json", proc.stderr,
                     re.M), proc.stderr
    assert out.read_text() == '{"name": "the previous description"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cluster.json"]
    # Without the fault the same run replaces it.
    proc = subprocess.run(
        [_calibrate(), "-n", "1", "--repeats", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
        env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["gpus_per_node"] == 1


def test_sigterm_is_named_and_writes_nothing(tmp_path):
    """SIGTERM while measuring: the tool says so on stderr (it ended without
    a word before), ends by the signal, and --out is not written."""
    import signal
    import time
    out = tmp_path / "cluster.json"
    proc = subprocess.Popen([_calibrate(), "-n", "1", "--repeats", "100",
                             "--out", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    time.sleep(2)  # past the re-execution, measuring
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM, err
    assert err.endswith("shard-calibrate: stopped by SIGTERM before it "
                        "finished; nothing was written\n"), err
    assert not out.exists()
