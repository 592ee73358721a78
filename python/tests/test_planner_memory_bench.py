"""bench/planner_memory/run.py's command line: bad filters are named and
exit 2 before anything compiles, and `--list` into a closed pipe ends
without a traceback."""

import os
import subprocess
import sys

from conftest import REPO_ROOT

RUN = os.path.join(REPO_ROOT, "bench", "planner_memory", "run.py")


def _run(*args):
    return subprocess.run([sys.executable, RUN, *args], capture_output=True,
                          text=True, timeout=60)


def test_a_filter_that_selects_nothing_is_an_error():
    proc = _run("--filter", "zzz")
    assert proc.returncode == 2
    assert "no plan matches --filter 'zzz'" in proc.stderr


def test_a_bad_regular_expression_is_named():
    proc = _run("--filter", "pp=2,(dp")
    assert proc.returncode == 2
    assert "is not a regular expression" in proc.stderr


def test_list_filters_and_keeps_the_mb_suffix():
    proc = _run("--list", "--filter", r"^pp=2,dp=2,zero=3,schedule=zb-v")
    assert proc.returncode == 0, proc.stderr
    names = proc.stdout.split()
    assert names and all(n.startswith("pp=2,dp=2,zero=3,schedule=zb-v")
                         and ",mb=" in n for n in names)


def test_list_into_a_closed_pipe_has_no_traceback():
    # `run.py --list | head -1`: the reader leaves after one line.
    proc = subprocess.Popen([sys.executable, RUN, "--list"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err
