"""The planner's per-GPU memory breakdown equals the compiled static memory
plan (issue 21, item 5).

For each plan, the nanoGPT CPU model is compiled with the plan
(``--autoshard-train``, as scripts/train.sh does) and read with
``dist-explain format=json`` (states by kind, the live bytes per category at
the memory plan's peak); the planner scores the same plan with
``dist-auto-plan evaluate=`` on configs/clusters/cpu-2core.json (fp32, no
master copy, gradients in the static frame: ``memory.grad_buffer`` =
"frame"). Both are printed; each category must agree to within
``TOLERANCE`` bytes (the 64-byte alignment of the frame's buffers and the
affine fit of the one-block programs):

* parameters: planner ``params`` = ``state_param``;
* optimizer states: planner ``optimizer`` = ``state_opt_m + state_opt_v``;
* gradients live at the peak: planner ``grads`` (parameter gradients of the
  other layers or accumulated over earlier microbatches) +
  ``activation_grads`` (the gradient bytes of the one-block step's phase
  where the peak is) = ``peak_grad``;
* activations at the peak: planner ``activations`` = ``peak_activation``.

The planner composes the compiled step's peak from the one-block step's
memory plan per phase (embedding, block forward, head, block backward,
tail; docs/planner.md, "memory"), so the plans cover where the peak lands:
the end of the forward (dp, tp, ZeRO-1/2), the first backward call (tp
with SP, ZeRO-3: the next block's prefetched gathers; the first pipeline
stage of 1F1B, the heaviest, with two microbatches in flight, its
unwaited send and the received loss gradient), the last backward call
(full recomputation: every other layer's parameter gradients) and the
recomputation in the backward (selective).

A pipeline stage holds the non-block parameters its part of the step
reads (the first stage the embedding's, the last the head's). Under full
recomputation the last stage is the heavier, at a later microbatch's
bottom backward call: the earlier microbatches' input gradients and tied
head shares sent back and not yet waited for are live there (with m <= p
all of them, waited at the end of the step; pp=4 mb=8: the shares). Under
GPipe the last stage is the heavier: at its first backward the other
microbatches' head values (last block output, final norm output, logits,
labels) are live. Under ZB-H1 the last stage's peak is at a deferred
weight-gradient pass (W): the inputs of the W passes still pending (the
block output gradients and what I saved for W) are live there. With SP
and several microbatches the position embedding's gradient is summed as
the rank's slice of the positions. With full recomputation, tp with SP and
two microbatches the first stage is the heavier, at its second
microbatch's backward: one microbatch in flight and the first one's sums.
The zero-bubble schedules' peaks are
at a deferred W, where the planner reads what the rank holds off the
simulated schedule (docs/planner.md: the unwaited sends, the tied
embedding's head shares, the token slices, the sums; under full
recomputation the residuals its re-run restored for each pending W); ZB-V's
first rank
runs both ends, its other rank only blocks (ALL_ACTIVATION below).
ZeRO-3 with full recomputation: a backward call prefetches the next
layer's re-run (not the parameters only the discarded block output
needs), and the block above's reduce-scatter is waited before it, so with
one microbatch the second-to-last backward call is the peak; with three
or more microbatches a middle one holds the non-block parameters gathered
once, and its bottom backward the next microbatch's first forward gather.
ZeRO-1/2 with several microbatches: after the last microbatch's backward of
a block its sum is reduce-scattered (waited one call later) and its shard
kept, so at small microbatches the last microbatch's second backward call
is the peak.
Selective recomputation under the zero-bubble schedules: a split W
recomputes the norms and activations only it reads, its own frame at each
W.
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, config_path

CLUSTER = os.path.join(REPO_ROOT, "configs", "clusters", "cpu-2core.json")
GLOBAL_BATCH = 8
TOLERANCE = 1024  # bytes per category

# (plan as --plan takes it without mb, microbatches)
PLANS = [
    ("dp=1", 1),
    ("dp=1", 2),
    ("dp=2,zero=1", 2),
    ("dp=2,tp=2", 1),
    ("dp=2,zero=2", 1),
    ("pp=2", 2),
    ("pp=4", 4),
    ("pp=2,schedule=interleaved,vpp=2", 4),
    ("pp=2,recompute=full", 2),
    ("pp=2,recompute=full", 4),
    ("dp=2,tp=2,sp=1", 1),
    ("dp=2,recompute=full", 1),
    ("dp=2,recompute=selective", 1),
    ("dp=2,tp=2,sp=1,recompute=selective", 1),
    ("dp=2,zero=3", 1),
    ("dp=2,zero=3", 2),
    ("dp=2,tp=2,sp=1,recompute=full", 2),
    ("pp=2,schedule=zb-h1", 4),
    ("pp=2,schedule=gpipe", 2),
    ("pp=2,schedule=zb-h1", 2),
    ("pp=2,schedule=zb-h1", 8),
    ("pp=4,schedule=zb-h1", 4),
    ("pp=4,schedule=zb-h1", 8),
    ("pp=2,schedule=zb-v,vpp=2", 4),
    ("pp=2,schedule=zb-v,vpp=2", 8),
    ("pp=2,schedule=zb-v,vpp=2", 2),
    ("pp=2,tp=2,sp=1,recompute=full", 2),
    ("pp=2,schedule=zb-h1,recompute=full", 4),
    ("pp=2,dp=2,schedule=zb-v,vpp=2", 2),
    ("pp=4,recompute=full", 8),
    ("dp=2,zero=3,recompute=full", 1),
    ("dp=2,zero=3,recompute=full", 2),
    ("dp=2,zero=3", 4),
    ("dp=2,tp=2,zero=3,recompute=full", 4),
    ("pp=2,recompute=selective,schedule=zb-h1", 4),
    ("pp=4,dp=2,recompute=selective,schedule=zb-h1", 2),
    ("pp=2,recompute=selective,schedule=zb-v,vpp=2", 4),
    ("dp=2,zero=1,recompute=selective", 4),
    ("dp=2,tp=2,sp=1,zero=1,recompute=selective", 4),
]

# Plans whose compiled heavier rank files every live buffer as an
# activation: ZB-V's middle rank at two microbatches runs its block
# backward only as split I / W calls (tfm func kinds input_grad /
# weight_grad), which rt-lower does not count as backward functions, and
# it has no loss whose gradient would mark them. There the planner's
# gradients and activations are compared as one sum with the compiled
# activations, and the compiled gradients must be 0 (when rt-lower files
# them as gradients this fails, and the plan is compared by category).
ALL_ACTIVATION = {("pp=2,schedule=zb-v,vpp=2", 2)}


def _model(batch, out):
    subprocess.run(
        [sys.executable, "-m", "autoshard.models",
         config_path("nanogpt-shakespeare-char-cpu"), "--batch", str(batch),
         "--seq", "64", "--vocab-multiple", "64", "-q", "-o", str(out)],
        check=True, env=dict(os.environ, PYTHONPATH=os.path.dirname(
            os.path.dirname(os.path.abspath(__file__)))))


def _degree(plan, key):
    for item in plan.split(","):
        name, value = item.split("=")
        if name == key:
            return int(value)
    return 1


def _run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def global_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("planner-memory") / "global.mlir"
    _model(GLOBAL_BATCH, path)
    return path


@pytest.mark.parametrize("plan,mb", PLANS, ids=[f"{p},mb={m}" for p, m in PLANS])
def test_planner_memory_equals_static_plan(shard_opt, tmp_path, global_model,
                                           plan, mb):
    world = 1
    for key in ("pp", "dp", "cp", "tp"):
        world *= _degree(plan, key)
    dp = _degree(plan, "dp")
    mbs = GLOBAL_BATCH // (dp * mb)

    # Compiled: the model at the microbatch's batch, mb microbatches.
    model = tmp_path / "model.mlir"
    _model(GLOBAL_BATCH // mb, model)
    full = plan + (f",mb={mb}" if mb > 1 else "")
    lowered = tmp_path / "lowered.mlir"
    _run([shard_opt, str(model),
          f"--autoshard-train=plan={full} output={tmp_path / 'model.json'}",
          "-o", str(lowered)])
    explain = json.loads(_run([shard_opt, str(lowered),
                               "--dist-explain=format=json", "-o", "/dev/null"]))
    compiled = {k: v["with"] for k, v in explain["memory"].items()
                if isinstance(v, dict)}

    # Planned: the same plan scored by dist-auto-plan.
    report = json.loads(_run([
        shard_opt, str(global_model),
        f"--dist-auto-plan=cluster={CLUSTER} gpus={world} "
        f"evaluate={plan},mbs={mbs} format=json", "-o", "/dev/null"]))
    assert report["plans"], f"the planner rejected {plan}: {report['rejected']}"
    planned = report["plans"][0]["memory"]

    rows = [
        ("params", planned["params"], compiled["state_param"]),
        ("optimizer", planned["optimizer"],
         compiled["state_opt_m"] + compiled["state_opt_v"]),
    ]
    planned_grads = planned["grads"] + planned["activation_grads"]
    if (plan, mb) in ALL_ACTIVATION:
        rows += [
            ("grads at peak (0)", 0, compiled["peak_grad"]),
            ("grads + activations", planned_grads + planned["activations"],
             compiled["peak_activation"]),
        ]
    else:
        rows += [
            ("grads at peak", planned_grads, compiled["peak_grad"]),
            ("activations at peak", planned["activations"],
             compiled["peak_activation"]),
        ]
    print(f"\n{full} (mbs={mbs}): planner vs compiled static memory plan, bytes")
    for name, p, c in rows:
        print(f"  {name:20s} {p:12.0f} {c:12d} {p - c:+8.0f}")
    for name, p, c in rows:
        assert abs(p - c) <= TOLERANCE, (
            f"{full}: planner {name} {p:.0f} B vs compiled {c} B "
            f"(difference {p - c:+.0f} B > {TOLERANCE} B)")
