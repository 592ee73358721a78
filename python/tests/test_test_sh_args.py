"""scripts/test.sh takes no arguments: --help prints its header, anything
else is refused at once instead of starting the whole suite (a user's
`scripts/test.sh --help` used to run it for 20 minutes)."""

import os
import subprocess

from conftest import REPO_ROOT

SCRIPT = os.path.join(REPO_ROOT, "scripts", "test.sh")


def test_help_prints_the_header_and_runs_nothing():
    proc = subprocess.run([SCRIPT, "--help"], capture_output=True, text=True,
                          timeout=10)
    assert proc.returncode == 0, proc.stderr
    assert "N passed, N failed, N skipped" in proc.stdout
    assert "=== " not in proc.stdout  # no phase started


def test_an_argument_is_refused_before_any_phase():
    proc = subprocess.run([SCRIPT, "--bogus"], capture_output=True, text=True,
                          timeout=10)
    assert proc.returncode == 2
    assert "takes no arguments, got '--bogus'" in proc.stderr
    assert proc.stdout == ""
