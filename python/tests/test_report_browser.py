"""The HTML reports in a real browser: headless Chromium (Debian's
``chromium``, installed by scripts/setup.sh) opens dist-explain's page of a
pp=2, vpp=2 plan, dist-auto-plan's page of a pp=2 plan and the measured
timeline of python -m autoshard.report (next to the first plan's predicted
ones),
runs their script, and lays them out. The page must load without console
messages, the DOM Chromium dumps must have one lane per pipeline rank and
one box per scheduled unit, each box laid out with a non-zero size (the
page's script counts them after layout), and a screenshot is kept as a test
artifact (``$AUTOSHARD_TEST_ARTIFACTS/report-browser/``, scripts/test.sh
sets it to build/test-reports; else pytest's tmp dir)."""

import os
import shutil
import subprocess
import sys

import pytest

from autoshard.report import summarize, trace_report

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)


def _chromium():
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.skip("chromium not installed (scripts/setup.sh installs Debian's chromium; "
                    "or set CHROMIUM)")
    return path


def _artifacts(tmp_path):
    base = os.environ.get("AUTOSHARD_TEST_ARTIFACTS")
    out = os.path.join(base, "report-browser") if base else str(tmp_path)
    os.makedirs(out, exist_ok=True)
    return out


def _open(chromium, page, tmp_path, *args):
    """Runs headless Chromium on ``page`` with ``args``; (stdout, console
    lines of stderr)."""
    p = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--enable-logging=stderr", "--v=0", *args, "file://" + str(page)],
        capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"chromium exited {p.returncode}: {p.stderr[-2000:]}"
    console = [l for l in p.stderr.splitlines() if ":CONSOLE" in l]
    return p.stdout, console


def _check_page(chromium, page, tmp_path, shot, size):
    dom, console = _open(chromium, page, tmp_path, "--dump-dom")
    assert console == [], "console messages while loading:\n" + "\n".join(console)
    _, console = _open(chromium, page, tmp_path, f"--screenshot={shot}", f"--window-size={size}")
    assert console == []
    with open(shot, "rb") as f:
        png = f.read()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000, f"{shot}: {len(png)} bytes"
    return summarize(dom)


@pytest.fixture(scope="module")
def pp_report(tmp_path_factory, shard_opt):
    from conftest import config_path
    cfg = config_path("nanogpt-shakespeare-char-cpu")
    d = tmp_path_factory.mktemp("explain")
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    model = subprocess.run([sys.executable, "-m", "autoshard.models", cfg, "--batch", "4", "--seq", "8",
                            "--vocab-multiple", "8", "-q"], capture_output=True, text=True, env=env,
                           check=True, timeout=120).stdout
    ts = d / "ts.mlir"
    subprocess.run([shard_opt, "--tfm-autodiff=microbatches=2", "-o", str(ts)], input=model,
                   capture_output=True, text=True, check=True, timeout=120)
    page = d / "pp.html"
    subprocess.run([shard_opt, str(ts), "--plan", "pp=2,dp=2,mb=2,schedule=interleaved,vpp=2",
                    "--dist-propagate", "--dist-partition", "--dist-pipeline-split",
                    f"--dist-explain=format=html output={page}", "-o", os.devnull],
                   capture_output=True, text=True, check=True, timeout=120)
    return page


def test_explain_report_in_chromium(pp_report, tmp_path):
    chromium = _chromium()
    shot = os.path.join(_artifacts(tmp_path), "explain-pp2-vpp2.png")
    lines = _check_page(chromium, pp_report, tmp_path, shot, "1300,1900")
    # pp=2 ranks; 2 ranks x 2 virtual stages x 2 microbatches x (F, B).
    ranks, units = 2, 2 * 2 * 2 * 2
    timelines = [l for l in lines if l.startswith("timeline ")]
    assert [t.split()[1] for t in timelines] == ["timeline-unit", "timeline-flops"]
    for t in timelines:
        assert f" lanes={ranks} units={units} " in t, t
        assert " arrows=12" in t, t
    for lane in range(ranks):
        assert lines.count(f"  lane {lane}: {units // ranks} units (B=4 F=4)") == 2, lines
    # The script ran after layout and every box has a size.
    assert f"body data-drawn-units={2 * units}" in lines, lines
    assert "mesh 4 ranks" in lines
    assert lines[0] == "sections strategies mesh pipeline memory collectives text"


def test_measured_timeline_in_chromium(pp_report, tmp_path):
    chromium = _chromium()
    events = lambda origin: {"traceEvents": [
        {"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "compute"}},
        {"name": "train_step 1", "cat": "step", "ph": "X", "pid": 0, "tid": 0, "ts": origin, "dur": 900},
        {"name": "gpt2_block_fwd", "cat": "train_step", "ph": "X", "pid": 0, "tid": 0, "ts": origin, "dur": 300},
        {"name": "dist.send_start", "cat": "train_step", "ph": "X", "pid": 0, "tid": 0,
         "ts": origin + 300, "dur": 100},
        {"name": "gpt2_block_bwd", "cat": "train_step", "ph": "X", "pid": 0, "tid": 0,
         "ts": origin + 500, "dur": 400}]}
    import json
    paths = []
    for rank, name in enumerate(["trace.json", "trace.rank1.json"]):
        (tmp_path / name).write_text(json.dumps(events(1000.0 * (rank + 1))))
        paths.append(str(tmp_path / name))
    page = tmp_path / "timeline.html"
    # Next to the plan's predicted timelines (16 units each).
    page.write_text(trace_report(paths, predicted=pp_report.read_text()))
    shot = os.path.join(_artifacts(tmp_path), "measured.png")
    lines = _check_page(chromium, page, tmp_path, shot, "1300,700")
    assert "timeline timeline-measured kind=measured lanes=2 units=6 bubbles=2 arrows=0" in lines, lines
    assert [l.split()[1] for l in lines if l.startswith("timeline ")] == [
        "timeline-unit", "timeline-flops", "timeline-measured"]
    assert f"body data-drawn-units={6 + 2 * 16}" in lines, lines


def test_auto_plan_report_in_chromium(shard_opt, tmp_path):
    chromium = _chromium()
    from conftest import REPO_ROOT, config_path
    cfg = config_path("nanogpt-shakespeare-char-cpu")
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    model = tmp_path / "model.mlir"
    subprocess.run([sys.executable, "-m", "autoshard.models", cfg, "--batch", "8", "--seq", "64",
                    "--vocab-multiple", "8", "-q", "-o", str(model)], env=env, check=True, timeout=120)
    page = tmp_path / "auto-plan.html"
    cluster = os.path.join(REPO_ROOT, "configs", "clusters", "cpu-2core.json")
    subprocess.run([shard_opt, str(model),
                    f"--dist-auto-plan=cluster={cluster} gpus=4 evaluate=pp=2,dp=2,mbs=1,schedule=1f1b "
                    f"format=html report={page}", "-o", os.devnull],
                   capture_output=True, text=True, check=True, timeout=120)
    shot = os.path.join(_artifacts(tmp_path), "auto-plan-pp2.png")
    lines = _check_page(chromium, page, tmp_path, shot, "1300,1000")
    # The predicted step: 2 pipeline ranks, 4 microbatches x (F, B), then the
    # gradient sync, the pipeline tail syncs and the optimizer on each.
    assert any(l.startswith("timeline timeline-predicted kind=predicted lanes=2 units=22 ")
               for l in lines), lines
    assert "body data-drawn-units=22" in lines, lines
    assert "bars candidate-time kind=time bars=1" in lines
