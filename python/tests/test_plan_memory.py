"""Issue 21, item 5 asks to print the planner's memory breakdown beside the
compiled static memory plan where both exist. ``scripts/train.sh --plan
auto`` has both (the planner's report and the compiled chosen plan): it
prints them side by side through ``python -m autoshard.plan_memory``. Before,
the planner's breakdown was printed alone, and the two were put side by
side only by test_planner_memory.py.

The train.sh case needs the build (skipped without it); the rest is the
standard library."""

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, find_shard_opt

from autoshard import plan_memory

PLANNED = {"params": 3248640, "grads": 0, "optimizer": 3248640,
           "activations": 17858560, "activation_grads": 2688516,
           "fragmentation": 0, "fixed": 268435456}
COMPILED = {"state_param": {"with": 3248640, "without": 3248640},
            "state_opt_m": {"with": 1624320, "without": 3248640},
            "state_opt_v": {"with": 1624320, "without": 3248640},
            "peak_grad": {"with": 2688768, "without": None},
            "peak_activation": {"with": 17858564, "without": None}}


def test_categories_pair_as_the_memory_test_compares_them():
    assert plan_memory.compare(PLANNED, COMPILED) == [
        ("params", 3248640, 3248640),
        ("optimizer", 3248640, 1624320 + 1624320),
        ("grads at peak", 0 + 2688516, 2688768),
        ("activations at peak", 17858560, 17858564),
    ]
    table = plan_memory.format_table(plan_memory.compare(PLANNED, COMPILED))
    assert "grads at peak" in table and "-252" in table


def _cli(tmp_path, report, explain):
    (tmp_path / "r.json").write_text(json.dumps(report))
    (tmp_path / "e.json").write_text(json.dumps(explain))
    return subprocess.run(
        [sys.executable, "-m", "autoshard.plan_memory", str(tmp_path / "r.json"),
         str(tmp_path / "e.json")], capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=os.path.join(REPO_ROOT, "python")))


def test_cli_prints_both(tmp_path):
    proc = _cli(tmp_path, {"plans": [{"plan": "dp=2", "memory": PLANNED}]},
                {"memory": COMPILED})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(
        "memory per rank of dp=2: the planner's breakdown vs the compiled "
        "static memory plan, bytes\n")
    assert "  activations at peak      17858560     17858564         -4" in proc.stdout
    assert ("  difference: planner - compiled; every category within 1024 B"
            in proc.stdout), proc.stdout


def test_cli_names_the_categories_over_the_tolerance(tmp_path):
    planned = dict(PLANNED, activations=PLANNED[
        "activations"] + 5000)
    proc = _cli(tmp_path, {"plans": [{"plan": "dp=2", "memory": planned}]},
                {"memory": COMPILED})
    assert proc.returncode == 0, proc.stderr
    assert "over 1024 B in: activations at peak" in proc.stdout, proc.stdout


def test_cli_says_when_the_reports_are_swapped(tmp_path):
    proc = _cli(tmp_path, {"memory": COMPILED},
                {"plans": [{"plan": "dp=2", "memory": PLANNED}]})
    assert proc.returncode != 0
    assert "give the planner's report first" in proc.stderr, proc.stderr


def _rank(pp_rank, param, opt, grad, activation):
    return {"pp_rank": pp_rank, "function": f"train_step__pp{pp_rank}",
            "state": {"param": param, "opt_m": opt, "opt_v": opt},
            "frame": grad + activation + 4096,
            "peak": {"activation": activation, "grad": grad, "io": 16,
                     "workspace": 0}}


PIPELINE_EXPLAIN = {"memory": COMPILED, "pipeline_ranks": [
    _rank(0, 1000, 1000, 500, 9000), _rank(1, 2000, 2000, 700, 7000)]}


def test_pipeline_plan_compares_the_planners_rank():
    # With pp the breakdown is the rank the planner reports (memory.pp_rank),
    # against that rank's compiled plan, not dist-explain's `memory`.
    planned = {"params": 2000, "grads": 100, "optimizer": 4000,
               "activations": 7004, "activation_grads": 600, "pp_rank": 1}
    pp_rank, rows = plan_memory.compare_plan({"memory": planned},
                                             PIPELINE_EXPLAIN)
    assert pp_rank == 1
    assert rows == [("params", 2000, 2000), ("optimizer", 4000, 4000),
                    ("grads at peak", 700, 700),
                    ("activations at peak", 7004, 7000)]
    # States + live at the peak: rank 0 3000 + 9516, rank 1 6000 + 7716.
    assert plan_memory.rank_totals(PIPELINE_EXPLAIN) == {0: 12516, 1: 13716}


def test_cli_names_the_heaviest_compiled_rank(tmp_path):
    planned = {"params": 1000, "grads": 0, "optimizer": 2000,
               "activations": 9000, "activation_grads": 500, "pp_rank": 0}
    proc = _cli(tmp_path, {"plans": [{"plan": "pp=2", "memory": planned}]},
                PIPELINE_EXPLAIN)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("memory per rank of pp=2, pipeline rank 0:")
    assert "per pipeline rank: 0: 12516, 1: 13716\n" in proc.stdout
    assert ("the planner reports rank 0 as the heaviest, but compiled rank 1 "
            "holds +1200 B more") in proc.stdout, proc.stdout


@pytest.mark.parametrize("report, explain, message", [
    ({"plans": [{"memory": dict(PLANNED, pp_rank=3)}]}, PIPELINE_EXPLAIN,
     "the dist-explain report has no pipeline rank 3 (ranks: [0, 1])"),
    ({"plans": []}, {"memory": COMPILED}, "has no plan"),
    ({"plans": [{"memory": {}}]}, {"memory": COMPILED},
     "the planner's memory breakdown has no number 'params' (got None)"),
    ({"plans": [{"memory": []}]}, {"memory": COMPILED},
     "the planner's memory breakdown is not a JSON object (got a list)"),
    ({"plans": {"a": 1}}, {"memory": COMPILED},
     "has no plan (its 'plans' is an object)"),
    ({"plans": [{"memory": PLANNED}]}, {},
     "has no 'memory' object (is it dist-explain format=json output?)"),
    ({"plans": [{"memory": dict(PLANNED, pp_rank="0")}]}, PIPELINE_EXPLAIN,
     "the planner's memory breakdown has no integer 'pp_rank' (got '0')"),
    ({"plans": [{"memory": dict(PLANNED, pp_rank=0)}]},
     dict(PIPELINE_EXPLAIN, pipeline_ranks=5),
     "the dist-explain report's 'pipeline_ranks' is not a list (got 5)"),
    ({"plans": [{"memory": dict(PLANNED, pp_rank=0)}]},
     dict(PIPELINE_EXPLAIN, pipeline_ranks=[{"state": {}}]),
     "pipeline_ranks[0] has no integer 'pp_rank' (got None)"),
    ({"plans": [{"memory": dict(PLANNED, pp_rank=0)}]},
     dict(PIPELINE_EXPLAIN, pipeline_ranks=[dict(_rank(0, 1, 1, 1, 1),
                                                 state=[])]),
     "pipeline rank 0 state is not a JSON object (got a list)"),
    ({"plans": [{"memory": dict(PLANNED, pp_rank=0)}]},
     dict(PIPELINE_EXPLAIN, pipeline_ranks=[dict(_rank(0, 1, 1, 1, 1),
                                                 state={})]),
     "pipeline rank 0 state has no number 'param' (got None)"),
    # Reports of two different plans.
    ({"plans": [{"plan": "pp=2,dp=1,mb=2,schedule=1f1b", "memory": PLANNED}]},
     dict(PIPELINE_EXPLAIN, plan={"pp": 4, "dp": 1, "mb": 2,
                                  "schedule": "gpipe"}),
     "the two reports are of different plans (planner vs compiled: pp 2 vs "
     "4, schedule 1f1b vs gpipe)"),
    ({"plans": [{"memory": PLANNED}]}, {"memory": {}},
     "the dist-explain report's 'memory' has no entry 'state_param' (got "
     "None)"),
])
def test_cli_names_what_is_missing(tmp_path, report, explain, message):
    proc = _cli(tmp_path, report, explain)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("autoshard.plan_memory: ")
    assert message in proc.stderr, proc.stderr


def test_train_sh_auto_prints_both(tmp_path):
    opt = find_shard_opt()
    if opt is None:
        pytest.skip("shard-opt not built (set SHARD_OPT or build build/bin/shard-opt)")
    build = os.path.dirname(os.path.dirname(opt))
    if not os.access(os.path.join(build, "bin", "shard-run"), os.X_OK):
        pytest.skip("shard-run not built")
    proc = subprocess.run(
        [os.path.join(REPO_ROOT, "scripts", "train.sh"), "--plan", "auto",
         "-n", "1", "--steps", "1", "--eval-interval", "100", "--eval-iters",
         "1", "--sample", "0", "--out", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=dict(os.environ, BUILD_DIR=build), timeout=300)
    assert proc.returncode == 0, proc.stdout
    assert ("the planner's breakdown vs the compiled static memory plan, "
            "bytes") in proc.stdout, proc.stdout
    # Both columns hold the same plan's figures: its parameters agree.
    report = json.loads((tmp_path / "auto_plan.json").read_text())
    explain = json.loads((tmp_path / "explain.json").read_text())
    rows = dict((name, (p, c)) for name, p, c in plan_memory.compare(
        report["plans"][0]["memory"], explain["memory"]))
    assert rows["params"][0] == rows["params"][1] > 0
    line = next(l for l in proc.stdout.splitlines()
                if l.strip().startswith("params"))
    assert line.split()[1:3] == [str(rows["params"][0])] * 2
