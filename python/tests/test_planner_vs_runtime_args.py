"""bench/planner_vs_runtime/run.py names bad options and bad --measured
files before measuring anything (no traceback, no "skipped" on every plan).
The checks run before the build is looked up: no build needed, a second."""

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, fake_tool, terminate_when_fake_runs

RUN = os.path.join(REPO_ROOT, "bench", "planner_vs_runtime", "run.py")


def _run(*args):
    return subprocess.run([sys.executable, RUN, *args], capture_output=True,
                          text=True, timeout=60)


def _rows(tmp_path, rounds):
    path = tmp_path / "m.json"
    path.write_text(json.dumps([{"model": "nanogpt", "plan": "dp=1",
                                 "measured_s": 0.05, "rounds_s": rounds}]))
    return str(path)


@pytest.mark.parametrize("rounds, shown", [
    ("abc", "'abc'"), ([], "[]"), ([0.05, 0], "[0.05, 0]"),
    ([0.05, True], "[0.05, True]")])
def test_measured_rounds_must_be_seconds(tmp_path, rounds, shown):
    path = _rows(tmp_path, rounds)
    proc = _run("--measured", path)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (
        f"--measured {path}: row 0 (nanogpt dp=1): rounds_s must be a "
        f"non-empty list of positive numbers of seconds, got {shown}")


@pytest.mark.parametrize("rows, message", [
    # An infinite time (json reads Infinity) was taken: a -100 % error and
    # a "nanx" spread in the table.
    ('[{"model": "nanogpt", "plan": "dp=1", "measured_s": Infinity}]',
     "row 0 (nanogpt dp=1): measured_s must be a positive number of "
     "seconds or null, got inf"),
    ('[{"model": "nanogpt", "plan": "dp=1", "measured_s": 0.05, '
     '"rounds_s": [0.05, Infinity]}]',
     "row 0 (nanogpt dp=1): rounds_s must be a non-empty list of positive "
     "numbers of seconds, got [0.05, inf]"),
    # A plan that is not a string ended in a TypeError traceback.
    ('[{"model": "nanogpt", "plan": ["dp=1"], "measured_s": 0.05}]',
     "row 0: plan must be a string, got ['dp=1']"),
    ('[{"model": 7, "plan": "dp=1", "measured_s": 0.05}]',
     "row 0: model must be a string, got 7"),
    # The later of two rows of one plan was kept silently.
    ('[{"model": "nanogpt", "plan": "dp=1", "measured_s": 0.05}, '
     '{"model": "nanogpt", "plan": "dp=2", "measured_s": 0.03}, '
     '{"model": "nanogpt", "plan": "dp=1", "measured_s": 0.09}]',
     "rows 0 and 2 are both nanogpt dp=1 (one row per plan, as --json "
     "writes them)"),
], ids=["infinite", "infinite-round", "plan-list", "model-int", "twice"])
def test_measured_rows_are_checked(tmp_path, rows, message):
    path = tmp_path / "m.json"
    path.write_text(rows)
    proc = _run("--measured", str(path), "--build", str(tmp_path / "no-build"))
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip() == f"--measured {path}: {message}"


@pytest.mark.parametrize("args, message", [
    (["--warmup", "-1"], "--warmup must be at least 0, got -1"),
    (["--check-choice", "-0.5"],
     "--check-choice must be a fraction >= 0 (e.g. 0.05), got -0.5"),
    # Accepted and ignored before (it only acts with --calibrate).
    (["--track-drift"], "--track-drift needs --calibrate (it chooses "
     "between that option's calibrations)"),
    (["--no-track-drift"], "--no-track-drift needs --calibrate (it chooses "
     "between that option's calibrations)"),
    (["--cluster", "/nonexistent/c.json"],
     "--cluster /nonexistent/c.json: cannot read it: No such file or "
     "directory"),
])
def test_bad_options_are_named(args, message):
    proc = _run(*args)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip() == message


def test_calibrate_with_measured_needs_no_cluster_file(tmp_path):
    # --calibrate replaces --cluster for every prediction here: a missing
    # --cluster is not an error (the run stops at the missing build).
    path = _rows(tmp_path, [0.05])
    proc = _run("--calibrate", "--measured", path, "--cluster",
                "/nonexistent/c.json", "--build", str(tmp_path / "no-build"))
    assert proc.returncode == 1
    assert "not found: build first" in proc.stderr, proc.stderr


@pytest.mark.parametrize("where, why", [
    ("missing", "no folder {tmp}/missing"), ("folder", "it is a folder")])
def test_json_is_checked_before_the_runs(tmp_path, where, why):
    # Before the fix the rows were written only after every run (minutes)
    # and a bad --json ended the run with a traceback, the rows lost.
    (tmp_path / "folder").mkdir()
    path = (str(tmp_path / "missing" / "rows.json") if where == "missing"
            else str(tmp_path / "folder"))
    proc = _run("--json", path, "--build", str(tmp_path / "no-build"))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip() == (
        f"--json {path}: cannot write the rows: "
        + why.format(tmp=tmp_path))



def test_signal_stops_the_running_step(tmp_path):
    """A TERM to run.py reaches the tool it waits for (here the planner's
    shard-opt; shard-calibrate's mpirun and shard-run end their ranks on
    it) and removes its temporary folder; before, Python's default ended
    run.py at once and left the child running without it."""
    build = tmp_path / "build"
    (build / "bin").mkdir(parents=True)
    for tool in ("shard-opt", "shard-run", "shard-calibrate"):
        fake_tool(build / "bin" / tool, tmp_path)
    (build / "venv" / "bin").mkdir(parents=True)
    (build / "venv" / "bin" / "python").symlink_to(sys.executable)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    proc = subprocess.Popen(
        [sys.executable, RUN, "--build", str(build), "--calibrate",
         "--only", "^nanogpt dp=2$", "--rounds", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, TMPDIR=str(scratch)))
    err, alive = terminate_when_fake_runs(proc, tmp_path)
    assert proc.returncode == 143, err
    assert err.strip() == "run.py: stopped by SIGTERM"
    assert (tmp_path / "signal").read_text().strip() == "TERM"
    assert not alive
    assert list(scratch.iterdir()) == []


def test_rho_needs_three_plans(tmp_path):
    """With one or two plans Spearman's rho says why it is not given; it
    was printed as "nan" for one plan (e.g. --only 'nanogpt dp=8$'), as a
    meaningless +-1 for two. The planner is a stand-in printing a fixed
    step time: only the summary's wording is checked."""
    build = _fake_planner_build(tmp_path, "exit 1")
    rows = tmp_path / "m.json"
    rows.write_text(json.dumps([{"model": "nanogpt", "plan": "dp=1",
                                 "measured_s": 0.05}]))
    proc = subprocess.run(
        [sys.executable, RUN, "--build", str(build), "--measured", str(rows),
         "--only", "^nanogpt dp=1$"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "rho all plans: nan" not in proc.stdout, proc.stdout
    assert ("Spearman rho: not computed for 1 plan (it needs 3 or more)"
            in proc.stdout), proc.stdout


def _fake_planner_build(tmp_path, search):
    """A build whose shard-opt scores every evaluated plan 30 ms and runs
    the search as the shell snippet ``search`` (it prints the JSON report
    or fails)."""
    build = tmp_path / "build"
    (build / "bin").mkdir(parents=True)
    shard_opt = build / "bin" / "shard-opt"
    shard_opt.write_text(
        "#!/bin/bash\n"
        "if [[ $* == *evaluate=* ]]; then\n"
        "  echo '{\"plans\": [{\"step_s\": 0.03}]}'\n"
        f"else\n  {search}\nfi\n")
    shard_opt.chmod(0o755)
    (build / "bin" / "shard-run").symlink_to(shard_opt)
    (build / "venv" / "bin").mkdir(parents=True)
    (build / "venv" / "bin" / "python").symlink_to(sys.executable)
    return build


CHOOSES = ("echo '{\"plans\": [{\"apply_plan\": \"dp=2,zero=1\", "
           "\"step_s\": 0.03}]}'")
LISTED_2 = ["dp=2", "dp=2,zero=1,recompute=full", "dp=1,tp=2",
            "dp=1,tp=2,sp=1", "pp=2,dp=1,mb=4"]


@pytest.mark.parametrize("search, measured, message", [
    # The choice's own run failed (here: absent from --measured): the
    # plan predicted fastest of the list (dp=2, the measured best) was
    # checked instead and the check passed.
    (CHOOSES, {p: 0.04 if p == "dp=2" else 0.05 for p in LISTED_2},
     "nanogpt 2 ranks: the search's choice dp=2,zero=1 has no measured time "
     "(not measured in {rows})"),
    # The search failed: the same stand-in, without a word.
    ("echo 'model.mlir:3:1: error: boom' >&2; exit 1",
     {p: 0.04 if p == "dp=2" else 0.05 for p in LISTED_2},
     "nanogpt 2 ranks: the search failed: model.mlir:3:1: error: boom"),
    # Only the choice was measured: no group to compare it in, and no
    # shortfall, so the check passed.
    (CHOOSES, {"dp=2,zero=1": 0.04},
     "nanogpt 2 ranks: 1 of its plans measured, none to compare the choice "
     "with"),
], ids=["choice-not-measured", "search-failed", "nothing-to-compare"])
def test_check_choice_fails_when_the_choice_is_not_checked(
        tmp_path, search, measured, message):
    build = _fake_planner_build(tmp_path, search)
    rows = tmp_path / "m.json"
    rows.write_text(json.dumps([{"model": "nanogpt", "plan": p,
                                 "measured_s": t} for p, t in measured.items()]))
    proc = subprocess.run(
        [sys.executable, RUN, "--build", str(build), "--measured", str(rows),
         "--only", "^nanogpt ", "--ranks", "2", "--with-choice",
         "--check-choice", "0.05"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (
        "cannot check the search's first choice of "
        + message.format(rows=rows))


def _replay_rows(tmp_path, replay, calibrations):
    path = tmp_path / "m.json"
    path.write_text(json.dumps([{"model": "nanogpt", "plan": "dp=2",
                                 "measured_s": 0.05, "rounds_s": [0.05],
                                 "replay": replay}]))
    if calibrations is not None:
        (tmp_path / "m.calibrations.json").write_text(
            calibrations if isinstance(calibrations, str) else json.dumps(calibrations))
    return str(path)


@pytest.mark.parametrize("replay, calibrations, message", [
    ([{"calibration": "2/1", "weight": 0.5}], None,
     "--replay: cannot read {side}, the calibrations of --measured {rows} "
     "(No such file or directory; --json with --calibrate writes it)"),
    ([{"calibration": "2/1", "weight": 0.5}], "{oops",
     "--replay: {side} is not JSON"),
    ([{"calibration": "2/1", "weight": 0.5}], {"2/1": 3},
     "--replay: {side}: expected an object of calibrations"),
    # A row whose rounds name no recorded calibration (an older --json).
    ([], {"2/1": {"before": {}}},
     "--replay: {rows}: row nanogpt dp=2 does not name a recorded "
     "calibration for each of its rounds"),
    ([{"calibration": "8/1", "weight": None}], {"2/1": {"before": {}}},
     "--replay: {rows}: row nanogpt dp=2 does not name a recorded "
     "calibration for each of its rounds"),
])
def test_replay_needs_the_recorded_calibrations(tmp_path, replay, calibrations,
                                                message):
    rows = _replay_rows(tmp_path, replay, calibrations)
    side = str(tmp_path / "m.calibrations.json")
    proc = _run("--measured", rows, "--replay", "--build",
                str(tmp_path / "no-build"))
    assert proc.returncode != 0
    assert message.format(side=side, rows=rows) in proc.stderr, proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--replay"], "--replay needs --measured FILE"),
    (["--replay", "--measured", "m.json", "--calibrate"],
     "--replay predicts from the recorded calibrations: it does not take "
     "--calibrate"),
    (["--replay", "--measured", "m.json", "--bind-cores", "auto"],
     "--bind-cores applies to the runs and calibrations of a run; a replay "
     "runs nothing"),
    (["--measured", "m.json", "--set", "8:host.wakeup_latency_us=0"],
     "--set changes the recorded calibrations: it needs --replay"),
    (["--replay", "--measured", "m.json", "--set", "host.x=1"],
     "--set 'host.x=1': expected R:KEY=NUMBER"),
    (["--replay", "--measured", "m.json", "--set", "8:host.x=fast"],
     "--set '8:host.x=fast': expected R:KEY=NUMBER"),
])
def test_replay_options(args, message):
    proc = _run(*args)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr


def test_replay_set_changes_the_recorded_calibrations(shard_opt):
    """--set R:KEY=V reaches the planner through the recorded calibrations
    of R ranks only: without the node's sharing (speedup_half_waiting 1)
    the committed run's 8-rank ZB-V row pays its wake-ups in full."""
    latest = os.path.join(REPO_ROOT, "bench", "planner_vs_runtime",
                          "latest.json")
    build = os.path.dirname(os.path.dirname(shard_opt))

    def predicted(*extra):
        proc = subprocess.run(
            [sys.executable, RUN, "--measured", latest, "--replay", "--build",
             build, "--only", "nanogpt pp=2,dp=4,zero=1,mb=4,schedule=zb-v",
             *extra], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        row = [line for line in proc.stdout.splitlines()
               if line.startswith("nanogpt      8 pp=2")]
        assert len(row) == 1, proc.stdout
        return float(row[0].split()[3])

    base = predicted()
    # Another rank count's calibrations: this row untouched.
    assert predicted("--set", "4:host.speedup_half_waiting=1") == base
    assert predicted("--set", "8:host.speedup_half_waiting=1") > 1.2 * base


def test_replay_with_choice_searches_again_on_the_recorded_calibration(
        shard_opt):
    """--replay --with-choice searches with each rank count's recorded
    round-0 calibration and checks its choice against the run's measured
    rows, the search's choices included (they are not in the list):
    the committed run's 4-rank nanoGPT choice, the GPipe plan measured
    11 % over dp=4, comes back as the search's choice with that figure."""
    rows = os.path.join(REPO_ROOT, "bench", "planner_vs_runtime",
                        "with-choice.json")
    build = os.path.dirname(os.path.dirname(shard_opt))
    proc = subprocess.run(
        [sys.executable, RUN, "--measured", rows, "--replay", "--with-choice",
         "--build", build, "--ranks", "4", "--only", "^nanogpt"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert ("nanogpt      4 pp=2,dp=2,mb=2,schedule=gpipe" in proc.stdout), \
        proc.stdout
    assert ("first choice nanogpt 4 ranks: pp=2,dp=2,mb=2,schedule=gpipe "
            "measures +11.0% over the measured best dp=4") in proc.stdout, \
        proc.stdout
    # Without the round-0 calibrations (latest.json's run had no
    # --with-choice) the search has nothing to search with, and says so.
    latest = os.path.join(REPO_ROOT, "bench", "planner_vs_runtime",
                          "latest.json")
    proc = subprocess.run(
        [sys.executable, RUN, "--measured", latest, "--replay", "--with-choice",
         "--build", build, "--only", "^nanogpt dp=8"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "has no calibration 8/0 to search with" in proc.stdout, proc.stdout


def test_replay_first_choice_is_labelled_the_lists_best(shard_opt):
    """A replay scores the list only (no search): each group's first choice
    is its best-predicted plan, and the line says so."""
    latest = os.path.join(REPO_ROOT, "bench", "planner_vs_runtime",
                          "latest.json")
    build = os.path.dirname(os.path.dirname(shard_opt))
    proc = subprocess.run(
        [sys.executable, RUN, "--measured", latest, "--replay", "--build",
         build, "--only", "^nanogpt dp=8"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines()
             if line.startswith("first choice")]
    assert lines and lines[0].startswith(
        "first choice (best predicted of the list) nanogpt 8 ranks: "), \
        proc.stdout
