"""The planner's data-parallel collectives are the compiled program's
(issue 21, planner fidelity).

For each plan the nanoGPT CPU model (4 blocks) is compiled with the plan
(``--autoshard-train``, as scripts/train.sh does) and its train_step's
collectives are read with ``dist-explain format=json`` (per op and mesh
axes, calls expanded); the planner scores the same plan with
``dist-auto-plan evaluate=... compilable=true`` and lists the collectives
it charges (``dp_collectives``: kind, mesh axes, buckets). The gradient
synchronisation's collectives over the data axis (all-reduces,
reduce-scatters and all-gathers of more than one element: the scalar loss
and gradient-norm sums are not) must match the planner's per (kind, axes):

* dp: 5 all-reduces over dp (4 blocks + the final norm);
* tp (with or without SP): the norm weights' (and the position
  embedding's) gradients are partial over tp: 4 over dp + 5 over dp x tp;
* cp: 5 over dp x cp + 1 over dp (the position embedding's gradient,
  whose output gradient is gathered over cp first);
* ZeRO-1: reduce-scatters over the optimizer shards' axes (dp, x cp where
  the gradient is partial over cp), all-gathers over dp x cp.

At dp = 1 the tp-partial gradients are all-reduced over tp alone, beside
the loss's vocabulary statistics and the loss: the train_step's own
all-reduces over tp at dp=1,tp=2,sp=1 less those at dp=2,tp=2,sp=1 (where
the gradients' are over dp x tp) are the planner's all-reduces over tp.
"""

import json
import os

import pytest

from conftest import REPO_ROOT, build_nanogpt_cpu, run_tool

CLUSTER = os.path.join(REPO_ROOT, "configs", "clusters", "cpu-2core.json")
GLOBAL_BATCH = 8

PLANS = [
    "dp=2",
    "dp=2,tp=2",
    "dp=2,tp=2,sp=1",
    "dp=2,tp=2,sp=1,zero=1",
    "dp=2,cp=2,cp_layout=zigzag",
    "dp=2,cp=2,cp_attention=ulysses",
    "dp=2,cp=2,zero=1",
    "dp=2,cp=2,tp=2,sp=1",
]


def _degrees(plan):
    d = {"pp": 1, "dp": 1, "cp": 1, "tp": 1}
    for item in plan.split(","):
        key, value = item.split("=")
        if key in d:
            d[key] = int(value)
    return d


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("planner-buckets") / "model.mlir"
    build_nanogpt_cpu(GLOBAL_BATCH, path)
    return path


def compiled_collectives(shard_opt, model, plan, tmp_path):
    """{(op, axes): count} of the compiled train_step's gradient
    synchronisation (see the module comment)."""
    lowered = tmp_path / "lowered.mlir"
    run_tool([shard_opt, str(model),
          f"--autoshard-train=plan={plan} output={tmp_path / 'model.json'}",
          "-o", str(lowered)])
    explain = json.loads(run_tool([shard_opt, str(lowered),
                               "--dist-explain=format=json", "-o",
                               "/dev/null"]))
    sizes = dict(zip(explain["mesh"]["axes"], explain["mesh"]["sizes"]))
    rows = {}
    for row in explain["collectives"]:
        axes = tuple(a for a in row["axes"] if sizes.get(a, 1) > 1)
        if row["op"] not in ("all_reduce", "reduce_scatter", "all_gather"):
            continue
        if "dp" not in axes or row["strategy"] == "loss/grad norm":
            continue
        rows[(row["op"], axes)] = rows.get((row["op"], axes), 0) + row["count"]
    return rows, explain["functions"]["train_step"]["per_call"]


def planned_collectives(shard_opt, model, plan):
    """{(kind, axes): buckets} the planner charges for ``plan``."""
    d = _degrees(plan)
    world = d["pp"] * d["dp"] * d["cp"] * d["tp"]
    report = json.loads(run_tool([
        shard_opt, str(model),
        f"--dist-auto-plan=cluster={CLUSTER} gpus={world} "
        f"evaluate={plan},mbs={GLOBAL_BATCH // d['dp']} compilable=true "
        "format=json", "-o", "/dev/null"]))
    assert report["plans"], f"the planner rejected {plan}: {report['rejected']}"
    return {(c["kind"], tuple(c["axes"])): c["buckets"]
            for c in report["plans"][0]["dp_collectives"]}


@pytest.mark.parametrize("plan", PLANS)
def test_planner_counts_the_compiled_gradient_collectives(shard_opt, tmp_path,
                                                          model, plan):
    compiled, _ = compiled_collectives(shard_opt, model, plan, tmp_path)
    planned = {key: n for key, n in
               planned_collectives(shard_opt, model, plan).items()
               if "dp" in key[1]}
    print(f"\n{plan}: compiled {sorted(compiled.items())}, "
          f"planned {sorted(planned.items())}")
    assert planned == compiled


def test_planner_counts_the_tensor_parallel_gradient_reductions(
        shard_opt, tmp_path, model):
    _, with_dp = compiled_collectives(shard_opt, model, "dp=2,tp=2,sp=1",
                                      tmp_path)
    _, tp_only = compiled_collectives(shard_opt, model, "dp=1,tp=2,sp=1",
                                      tmp_path)
    compiled = tp_only.get("all_reduce[tp]", 0) - \
        with_dp.get("all_reduce[tp]", 0)
    planned = planned_collectives(shard_opt, model, "dp=1,tp=2,sp=1")
    print(f"\ndp=1,tp=2,sp=1: compiled {compiled} gradient all-reduces over "
          f"tp, planned {planned}")
    assert planned == {("all_reduce", ("tp",)): compiled}
