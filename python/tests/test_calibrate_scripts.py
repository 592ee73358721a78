"""scripts/calibrate_cpu.sh and scripts/auto_plan_check.sh name a bad
--out / --measure at once, before minutes of calibrating or training (they
were found only by the last shard-calibrate run, after the 1-, 2- and 4-rank
runs, and after the plan sweep)."""

import os
import subprocess
import time

import pytest

from conftest import REPO_ROOT, fake_tool, terminate_when_fake_runs

SCRIPTS = os.path.join(REPO_ROOT, "scripts")


def _run(script, *args, env=None):
    start = time.monotonic()
    proc = subprocess.run([os.path.join(SCRIPTS, script), *args],
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, **(env or {})))
    return proc, time.monotonic() - start


@pytest.fixture
def calibrate_build():
    build = os.environ.get("BUILD_DIR", os.path.join(REPO_ROOT, "build"))
    if not os.access(os.path.join(build, "bin", "shard-calibrate"), os.X_OK):
        pytest.skip("shard-calibrate not built")
    return build


@pytest.mark.parametrize("out, message", [
    ("/nonexistent/dir/x.json",
     "cannot write '/nonexistent/dir/x.json': no directory '/nonexistent/dir'"),
    ("{tmp}", "cannot write '{tmp}': Is a directory"),
    ("{tmp}/", "--out needs a file name, got '{tmp}/'"),
    ("", "--out needs a file name, got ''"),
])
def test_calibrate_cpu_out_checked_first(tmp_path, calibrate_build, out,
                                         message):
    out = out.format(tmp=tmp_path)
    proc, seconds = _run("calibrate_cpu.sh", "--out", out,
                         env={"BUILD_DIR": calibrate_build})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == "calibrate_cpu.sh: " + message.format(
        tmp=tmp_path)
    assert seconds < 10  # nothing was measured
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option, value, message", [
    ("--repeats", "0", "--repeats needs a positive count, got '0'"),
    ("--bind-cores", "always",
     "--bind-cores needs 'auto' or 'none', got 'always'"),
])
def test_calibrate_cpu_option_values_checked(calibrate_build, option, value,
                                             message):
    proc, _ = _run("calibrate_cpu.sh", option, value,
                   env={"BUILD_DIR": calibrate_build})
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"calibrate_cpu.sh: {message}"


@pytest.mark.parametrize("n", ["3", "6", "12"])
def test_calibrate_cpu_ranks_checked_first(tmp_path, calibrate_build, n):
    """Not found by the last shard-calibrate run, after the runs of fewer
    ranks and their reference trainings (a minute and more)."""
    out = tmp_path / "x.json"
    proc, seconds = _run("calibrate_cpu.sh", "-n", n, "--out", str(out),
                         env={"BUILD_DIR": calibrate_build})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        "calibrate_cpu.sh: -n needs a power of two (1, 2, 4, 8, ...: "
        "shard-calibrate probes the collectives over groups of 2, 4, ... N "
        f"ranks), got '{n}'")
    assert seconds < 10
    assert not out.exists()


@pytest.mark.parametrize("script", ["calibrate_cpu.sh", "auto_plan_check.sh"])
@pytest.mark.parametrize("args, message", [
    # As the last argument an unknown option was said to need a value.
    (["--bogus"], "unknown option '--bogus' (see scripts/{script} --help)"),
    (["--bogus", "1"], "unknown option '--bogus' (see scripts/{script} --help)"),
    (["-n"], "option '-n' needs a value"),
])
def test_unknown_options_are_named(script, args, message):
    proc, seconds = _run(script, *args)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == f"{script}: " + message.format(script=script)
    assert seconds < 10


@pytest.mark.parametrize("value", ["2", "x", "-1"])
def test_auto_plan_check_measure_checked_first(tmp_path, value):
    out = tmp_path / "out"
    proc, seconds = _run("auto_plan_check.sh", "--measure", value, "--out",
                         str(out), env={"BUILD_DIR": str(tmp_path / "none")})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        f"auto_plan_check.sh: --measure needs a step count >= 3, got '{value}'")
    assert seconds < 10
    assert not out.exists()  # before the model, the choice and the sweep



def test_calibrate_cpu_signal_stops_the_running_step(tmp_path, calibrate_build):
    """A TERM to calibrate_cpu.sh reaches the step it runs (before: the
    script ended at once and removed its folder while shard-calibrate, or
    the fit's reference run and its ranks, ran on without it)."""
    build = tmp_path / "build"
    (build / "bin").mkdir(parents=True)
    fake_tool(build / "bin" / "shard-calibrate", tmp_path)
    (build / "venv").symlink_to(os.path.join(calibrate_build, "venv"))
    scratch = tmp_path / "scratch"  # the script's mktemp -d
    scratch.mkdir()
    out = tmp_path / "x.json"
    proc = subprocess.Popen(
        [os.path.join(SCRIPTS, "calibrate_cpu.sh"), "-n", "1", "--out",
         str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, BUILD_DIR=str(build), TMPDIR=str(scratch)))
    err, alive = terminate_when_fake_runs(proc, tmp_path)
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == (
        f"calibrate_cpu.sh: stopped by SIGTERM; {out} not written")
    assert (tmp_path / "signal").read_text().strip() == "TERM"
    assert not alive
    assert not out.exists()
    assert list(scratch.iterdir()) == []


def test_calibrate_cpu_names_the_step_that_failed(tmp_path, calibrate_build):
    """A failed step ends the script with a line naming it and its exit
    status (before: only the step's own output, e.g. mpirun's report of a
    killed rank, and exit 137)."""
    build = tmp_path / "build"
    (build / "bin").mkdir(parents=True)
    fake = build / "bin" / "shard-calibrate"
    fake.write_text("#!/usr/bin/env bash\nexit 3\n")
    fake.chmod(0o755)
    (build / "venv").symlink_to(os.path.join(calibrate_build, "venv"))
    out = tmp_path / "x.json"
    proc, _ = _run("calibrate_cpu.sh", "-n", "1", "--out", str(out),
                   env={"BUILD_DIR": str(build)})
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"calibrate_cpu.sh: shard-calibrate -n 1 failed (exit 3); {out} not "
        "written")
    assert not out.exists()
