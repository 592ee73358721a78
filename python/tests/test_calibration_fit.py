"""autoshard.calibration fits host.sync_slowdown and host.sync_latency_us
to measured reference steps (issue 21, item 4): it recovers known values
from steps the planner itself predicted with them, clamps at 0, and names
bad input."""

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, config_path

from autoshard.calibration import (CalibrationError, fit_host_sync,
                                   predict_step_s, reference_plans,
                                   pinned_cores, with_sync_terms)

CLUSTER = os.path.join(REPO_ROOT, "configs", "clusters", "cpu-2core.json")
BATCH = 16


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    out = tmp_path_factory.mktemp("fit") / "nanogpt.mlir"
    subprocess.run(
        [sys.executable, "-m", "autoshard.models",
         config_path("nanogpt-shakespeare-char-cpu"), "--batch", str(BATCH),
         "--seq", "64", "--vocab-multiple", "64", "-q", "-o", str(out)],
        check=True, env=dict(os.environ, PYTHONPATH=os.path.join(
            REPO_ROOT, "python")))
    return str(out)


def _cluster(slowdown, latency_us):
    """cpu-2core.json with the knobs set at the top level and in every
    profile of more than one rank (each profile has its own), as
    shard-calibrate writes it: without the records of earlier fits."""
    with open(CLUSTER) as f:
        cluster = json.load(f)
    for where in [cluster] + [
            p for r, p in cluster["by_ranks_per_node"].items() if r != "1"]:
        host = where.setdefault("host", {})
        host["sync_slowdown"] = slowdown
        host["sync_latency_us"] = latency_us
        where.get("measured", {}).pop("sync_fit", None)
    return cluster


def _steps(shard_opt, model, tmp_path, cluster, ranks):
    path = tmp_path / "truth.json"
    path.write_text(json.dumps(cluster))
    return {plan: predict_step_s(shard_opt, model, str(path), ranks, BATCH,
                                 plan) for plan in reference_plans(ranks)}


@pytest.mark.parametrize("ranks,slowdown,latency_us",
                         [(8, 0.5, 250.0), (4, 0.12, 40.0), (2, 0.0, 0.0)])
def test_recovers_the_knobs_that_made_the_steps(shard_opt, model, tmp_path,
                                                ranks, slowdown, latency_us):
    measured = _steps(shard_opt, model, tmp_path,
                      _cluster(slowdown, latency_us), ranks)
    # Start from other values: the fit must not keep the file's.
    fitted, record = fit_host_sync(shard_opt, model, _cluster(0.03, 0.0),
                                   ranks, BATCH, measured)
    host = fitted["by_ranks_per_node"].get(str(ranks), fitted)["host"]
    assert host["sync_slowdown"] == pytest.approx(slowdown, abs=0.01)
    assert host["sync_latency_us"] == pytest.approx(latency_us, abs=3)
    assert record["sweeps_sync_slowdown"] == 0.03
    # Fitted again, the record keeps the sweeps' value, not the first fit's.
    refitted, again = fit_host_sync(shard_opt, model, fitted, ranks, BATCH,
                                    measured)
    assert again["sweeps_sync_slowdown"] == 0.03
    # Written where the planner reads it for this many ranks: the profile.
    if str(ranks) in fitted["by_ranks_per_node"]:
        assert fitted["host"]["sync_slowdown"] == 0.03
    for plan, t in measured.items():
        assert record["plans"][plan]["predicted_step_s"] == pytest.approx(
            t, rel=0.01)
    assert "note" not in record
    # The record beside the knobs: the top level's is the 8-rank fit's.
    where = fitted["by_ranks_per_node"].get(str(ranks), fitted)
    assert where["measured"]["sync_fit"] == record
    if where is not fitted:
        assert fitted["measured"].get("sync_fit") != record


def test_one_plan_fits_the_slowdown_alone(shard_opt, model, tmp_path):
    measured = _steps(shard_opt, model, tmp_path, _cluster(0.4, 0.0), 8)
    fitted, _ = fit_host_sync(shard_opt, model, _cluster(0.0, 0.0), 8, BATCH,
                              {"dp=8": measured["dp=8"]})
    assert fitted["host"]["sync_slowdown"] == pytest.approx(0.4, abs=0.01)
    assert fitted["host"]["sync_latency_us"] == 0


def test_a_step_below_the_kernels_is_clamped_at_zero(shard_opt, model,
                                                     tmp_path):
    measured = _steps(shard_opt, model, tmp_path, _cluster(0.0, 0.0), 8)
    faster = {plan: 0.5 * t for plan, t in measured.items()}
    fitted, record = fit_host_sync(shard_opt, model, _cluster(0.2, 10.0), 8,
                                   BATCH, faster)
    assert fitted["host"]["sync_slowdown"] == 0
    assert fitted["host"]["sync_latency_us"] == 0
    assert "cannot reach every measured step" in record["note"]


@pytest.mark.parametrize("ranks,measured,message", [
    (1, {"dp=1": 0.04}, "2 or more ranks, got 1"),
    (8, {}, "one or two plans"),
    (8, {"dp=8": -1.0}, "dp=8 must be a positive finite number of seconds, got -1.0"),
    (8, {"dp=8": True}, "got True"),
    (8, {"dp=8,tp=3": 0.05}, "could not score dp=8,tp=3 on the cluster"),
    (8, {"dp=8": float("inf")}, "positive finite number of seconds, got inf"),
    (8, {"dp=x": 0.05}, "plan 'dp=x': dp must be a positive integer, got 'x'"),
    (8, {"dp=0": 0.05}, "plan 'dp=0': dp must be a positive integer, got '0'"),
    (8, {"dp=8,tp=1,ep=2": 0.05}, "could not score dp=8,tp=1,ep=2 on the "
     "cluster description: .*evaluate=dp=8,tp=1,ep=2,mbs=2 is invalid: "
     "ep>1 on a model without"),
    (8, {"pp=2,dp=4,mb=3": 0.05}, "plan 'pp=2,dp=4,mb=3': the global batch 16 "
     "is not a multiple of dp\\*mb = 12"),
])
def test_bad_input_is_named(shard_opt, model, ranks, measured, message):
    with pytest.raises(CalibrationError, match=message.replace("(", r"\(")
                       .replace(")", r"\)")):
        fit_host_sync(shard_opt, model, _cluster(0.0, 0.0), ranks, BATCH,
                      measured)


def test_a_pipeline_plan_with_microbatches_is_scored(shard_opt, model):
    """mbs = batch / (dp * mb): batch / dp disagreed with mb."""
    plan = "pp=2,dp=4,mb=2"
    measured = {plan: predict_step_s(shard_opt, model, CLUSTER, 8, BATCH,
                                     plan)}
    _, record = fit_host_sync(shard_opt, model, _cluster(0.0, 0.0), 8,
                              BATCH, measured)
    assert record["plans"][plan]["measured_step_s"] == measured[plan]


def test_errors_name_the_users_file_and_tools(shard_opt, model):
    with pytest.raises(CalibrationError, match="could not score dp=8,tp=3 on "
                       "mine.json: .*error:"):
        fit_host_sync(shard_opt, model, _cluster(0.0, 0.0), 8, BATCH,
                      {"dp=8,tp=3": 0.05}, "mine.json")
    # A field the planner rejects is named in the user's file, not in the
    # fit's temporary copy (before: "/tmp/autoshard-fit-.../cluster.json:
    # missing required field 'gpus_per_node'").
    broken = _cluster(0.0, 0.0)
    del broken["gpus_per_node"]
    with pytest.raises(CalibrationError, match="could not score dp=8 on "
                       "mine.json: .*error: dist-auto-plan: mine.json: "
                       "missing required field 'gpus_per_node'$"):
        fit_host_sync(shard_opt, model, broken, 8, BATCH, {"dp=8": 0.05},
                      "mine.json")
    with pytest.raises(CalibrationError, match="cannot run shard-opt "
                       "'/nonexistent/shard-opt': No such file"):
        fit_host_sync("/nonexistent/shard-opt", model, _cluster(0.0, 0.0), 8,
                      BATCH, {"dp=8": 0.05})


@pytest.mark.parametrize("edit,message", [
    # The planner scales profile 4 to 3 ranks: its knobs are 4 ranks'.
    (lambda c: None, "jobs of 3 ranks are planned with the profile "
     "by_ranks_per_node.4 scaled to 3 ranks"),
    (lambda c: c.update(host="fast"), "field 'host' must be an object, got "
     "'fast'"),
    (lambda c: c.update(measured=[1]), "field 'measured' must be an object, "
     "got \\[1\\]"),
    (lambda c: c.update(by_ranks_per_node=[]), "field 'by_ranks_per_node' "
     "must be an object, got \\[\\]"),
])
def test_a_host_the_planner_does_not_read_is_named(shard_opt, model, edit,
                                                   message):
    cluster = _cluster(0.0, 0.0)
    del cluster["by_ranks_per_node"]["2"]
    edit(cluster)
    ranks = 3 if "ranks are planned" in message else 8
    with pytest.raises(CalibrationError, match="mine.json: " + message):
        fit_host_sync(shard_opt, model, cluster, ranks, BATCH,
                      {f"dp={ranks}": 0.05}, "mine.json")


@pytest.mark.parametrize("ranks, message", [
    # Above every profile (1, 2, 4) and below the node's 8 ranks: the 8-rank
    # figures scaled. The fit wrote the top level, the 8-rank jobs' knobs.
    (6, "jobs of 6 ranks are planned with the file's own 8-rank figures "
     "scaled to 6 ranks, whose synchronisation terms are those of 8 ranks: "
     "fit 8 ranks"),
    # shard-calibrate -n 3 is refused: no such profile to suggest.
    (3, "jobs of 3 ranks are planned with the profile by_ranks_per_node.4 "
     "scaled to 3 ranks, whose synchronisation terms are those of 4 ranks: "
     "fit 4 ranks"),
])
def test_a_fit_never_sets_another_rank_counts_knobs(shard_opt, model, ranks,
                                                    message):
    with pytest.raises(CalibrationError) as e:
        fit_host_sync(shard_opt, model, _cluster(0.0, 0.0), ranks, BATCH,
                      {f"dp={ranks}": 0.05}, "mine.json")
    assert str(e.value) == "mine.json: " + message
    # A GPU file's ranks do not share the cores: its one set of knobs is
    # fitted at any rank count (nothing is scaled).
    gpu = _cluster(0.0, 0.0)
    gpu["gpu"]["shares_node"] = False
    del gpu["by_ranks_per_node"]
    assert with_sync_terms(gpu, 6, 0.5, 10.0)["host"]["sync_slowdown"] == 0.5


def test_odd_rank_counts_have_one_reference_plan_of_all_ranks():
    assert reference_plans(3) == ["dp=3"]
    assert reference_plans(6) == ["dp=6", "dp=3,tp=2,sp=1"]


def test_command_line_writes_the_fitted_file(shard_opt, model, tmp_path):
    measured = _steps(shard_opt, model, tmp_path, _cluster(0.3, 100.0), 8)
    src = tmp_path / "in.json"
    src.write_text(json.dumps(_cluster(0.0, 0.0)))
    out = tmp_path / "out.json"
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO_ROOT, "python"))
    cmd = [sys.executable, "-m", "autoshard.calibration", "--shard-opt",
           shard_opt, "--model", model, "--cluster", str(src), "--ranks", "8",
           "--batch", str(BATCH), "--out", str(out)]
    proc = subprocess.run(cmd + [f"--measured={p}={t}"
                                 for p, t in measured.items()],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "host.sync_slowdown 0.3" in proc.stdout
    fitted = json.loads(out.read_text())
    assert fitted["host"]["sync_latency_us"] == pytest.approx(100, abs=3)
    # The planner reads the written file.
    assert predict_step_s(shard_opt, model, str(out), 8, BATCH, "dp=8") == \
        pytest.approx(measured["dp=8"], rel=0.01)
    bad = subprocess.run(cmd + ["--measured", "dp=8=fast"],
                         capture_output=True, text=True, env=env)
    assert bad.returncode != 0
    assert "--measured 'dp=8=fast': expected PLAN=SECONDS" in bad.stderr
    # Not the last of the two, silently.
    twice = subprocess.run(cmd + ["--measured", "dp=8=0.05", "--measured",
                                  "dp=8=0.06"],
                           capture_output=True, text=True, env=env)
    assert twice.returncode != 0
    assert twice.stderr.strip() == ("--measured 'dp=8=0.06': dp=8 is given "
                                    "twice (one measured step per plan)")


def test_command_line_needs_one_source_of_steps(shard_opt, model, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO_ROOT, "python"))
    cmd = [sys.executable, "-m", "autoshard.calibration", "--shard-opt",
           shard_opt, "--model", model, "--cluster", CLUSTER, "--ranks", "2",
           "--batch", str(BATCH), "--out", str(tmp_path / "out.json")]
    for extra in ([], ["--measured", "dp=2=0.05", "--train", "x.json"]):
        proc = subprocess.run(cmd + extra, capture_output=True, text=True,
                              env=env)
        assert proc.returncode != 0
        assert "give either --train CONFIG" in proc.stderr
    assert not (tmp_path / "out.json").exists()
    # The seconds left out: read as plan 'dp' and 2 s before ("plan 'dp':
    # dp must be a positive integer, got ''").
    proc = subprocess.run(cmd + ["--measured", "dp=2"], capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        "--measured 'dp=2': expected PLAN=SECONDS, e.g. dp=8=0.0515: 'dp' in "
        "the plan 'dp' is not key=value (no seconds after the plan?)")


@pytest.mark.parametrize("extra,message", [
    (["--ranks", "1"], "fitted for 2 or more ranks, got 1"),
    (["--ranks", "2", "--out", "/nonexistent/f.json"],
     "--out /nonexistent/f.json: cannot write the fitted file: no folder "
     "/nonexistent"),
    (["--ranks", "2", "--out", "/"], "--out /: cannot write the fitted "
     "file: it is a folder"),
    (["--ranks", "2", "--model", "/nonexistent/m.mlir"],
     "--model /nonexistent/m.mlir: no such file"),
    (["--ranks", "2", "--shard-opt", "/nonexistent/shard-opt"],
     "--shard-opt /nonexistent/shard-opt: not an executable file"),
])
def test_bad_arguments_stop_before_the_reference_runs(shard_opt, model,
                                                      tmp_path, extra,
                                                      message):
    """Checked before training (minutes): --train of a config that does
    not exist would fail later with another message."""
    proc = subprocess.run(
        [sys.executable, "-m", "autoshard.calibration", "--shard-opt",
         shard_opt, "--model", model, "--cluster", CLUSTER, "--batch",
         str(BATCH), "--train", str(tmp_path / "none.json")] + extra,
        capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=os.path.join(REPO_ROOT, "python")))
    assert proc.returncode != 0
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_train_measures_the_references_and_fits(shard_opt, model, tmp_path):
    """Two short 2-rank runs of each reference plan; the fitted file then
    predicts the dp=2 step it measured (within the fit's rounding)."""
    if not os.access(os.path.join(REPO_ROOT, "build", "bin", "shard-run"),
                     os.X_OK):
        pytest.skip("shard-run not built")
    out = tmp_path / "fitted.json"
    proc = subprocess.run(
        [sys.executable, "-m", "autoshard.calibration", "--shard-opt",
         shard_opt, "--model", model, "--cluster", CLUSTER, "--ranks", "2",
         "--batch", str(BATCH), "--out", str(out), "--train",
         config_path("nanogpt-shakespeare-char-cpu"), "--steps", "4",
         "--warmup", "1"],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYTHONPATH=os.path.join(REPO_ROOT, "python")))
    assert proc.returncode == 0, proc.stderr
    fitted = json.loads(out.read_text())
    # The 2-rank fit is the profile's; the top level keeps the 8-rank one.
    record = fitted["by_ranks_per_node"]["2"]["measured"]["sync_fit"]
    assert set(record["plans"]) == set(reference_plans(2))
    with open(CLUSTER) as f:
        assert fitted["measured"] == json.load(f)["measured"]
    for r in record["plans"].values():
        assert r["measured_step_s"] > 0
    assert "dp=2 predicted" in proc.stdout


def test_sync_terms_are_read_and_set_where_the_planner_reads_them():
    # The bench's after-calibration keeps the fitted knobs of the one
    # before: they are read from, and written to, the profile of the rank
    # count where there is one, else the top level.
    from autoshard.calibration import sync_terms, with_sync_terms
    with open(CLUSTER) as f:
        cluster = json.load(f)
    profiled = with_sync_terms(cluster, 4, 0.25, 120)
    assert sync_terms(profiled, 4) == (0.25, 120)
    assert profiled["by_ranks_per_node"]["4"]["host"]["sync_latency_us"] == 120
    assert sync_terms(profiled, 8) == sync_terms(cluster, 8)
    assert sync_terms(cluster, 4) != (0.25, 120)  # the input is not changed
    top = with_sync_terms(cluster, 8, 0.5, 7)  # 8 ranks: the top level
    assert top["host"]["sync_slowdown"] == 0.5 and sync_terms(top, 8) == (0.5, 7)
    flat = {"name": "flat", "host": {}}
    assert sync_terms(flat, 2) == (0, 0)
    assert with_sync_terms(flat, 2, 0.1, 5)["host"] == {
        "sync_slowdown": 0.1, "sync_latency_us": 5}
    with pytest.raises(CalibrationError, match="host"):
        sync_terms({"host": 3}, 2)


def test_pinned_cores_follows_the_profile_the_planner_reads():
    """pinned_cores: the smallest profile of at least R ranks, else the
    file's own field (a profile without it inherits it); 0 when none."""
    top = {"host": {"pinned_cores": 2},
           "by_ranks_per_node": {"4": {"host": {"pinned_cores": 1}},
                                 "2": {"host": {}}}}
    assert pinned_cores(top, 4) == 1
    assert pinned_cores(top, 3) == 1
    assert pinned_cores(top, 2) == 2  # inherits
    assert pinned_cores(top, 8) == 2
    assert pinned_cores({"host": {}}, 4) == 0
    assert pinned_cores({"host": {"pinned_cores": 0}}, 4) == 0
    assert pinned_cores({}, 4) == 0
