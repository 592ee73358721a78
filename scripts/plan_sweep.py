"""Plan sweep: every plan must train like the 1-rank run (DESIGN.md §6, §12).

Called by scripts/plan_sweep.sh (see its header for the options).  Builds one
small nanoGPT-like model (global batch 16, vocabulary padded to a fixed
multiple for every plan), differentiates it once, runs the 1-rank reference
for K steps, then compiles and runs each plan with `shard-run -n N` and
compares, step by step, train_loss and grad_norm, and the final val_loss
(relative error <= tolerance, default 1e-5).  A sample of invalid plans must
fail with a clear message.  Prints a table and `N passed, N failed`; writes
a JUnit XML report with --junit.
"""

from __future__ import annotations

import argparse
import array
import json
import os
import re
import math
import signal
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple
from xml.sax.saxutils import quoteattr

# The schedule names of --schedules all, in the order the plans list them.
ALL_SCHEDULES = "gpipe,1f1b,zb-h1,interleaved,looped-bfs,zb-v"

# Plan lists (scripts/plan_lists/*.txt): one plan per line, '#' starts a
# comment; a plan whose comment says check-memory runs under --check-memory.
PLAN_LISTS = Path(__file__).resolve().parent / "plan_lists"
# CI's covering set (the default): every pair of {dp, tp, sp, zero1, zero2,
# zero3} on 1, 2, 4 and 8 ranks.
COVERING = PLAN_LISTS / "covering.txt"


def read_plan_list(path: Path) -> List[Tuple[str, bool]]:
    """(plan, check_memory) per plan line of a plan-list file."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        sys.exit(f"plan_sweep: cannot read the plan list '{path}': {e.strerror}")
    plans = []
    for line in text.splitlines():
        plan, _, comment = line.partition("#")
        if plan.strip():
            plans.append((plan.strip(), "check-memory" in comment))
    return plans


@dataclass
class Result:
    name: str
    ranks: int
    ok: bool
    err: Optional[float] = None  # max relative error over compared metrics
    seconds: float = 0.0
    message: str = ""
    kind: str = "plan"  # plan | invalid | reference
    param_err: Optional[float] = None  # max per-tensor relative L2 error of the final params
    peak_bytes: Optional[int] = None  # allocated bytes per rank (= the memory plan's peak)


@dataclass
class Ctx:
    root: Path
    build: Path
    py: str
    out: Path
    data: Path
    steps: int
    tol: float
    timeout: int
    verbose: bool
    env: Dict[str, str] = field(default_factory=dict)
    # Where rt-fuse-epilogues runs: all (reference and plans, as train.sh),
    # plans (the reference without it: fusion's rounding shows in the
    # errors), none.
    fuse_epilogues: str = "all"
    # Train steps by microbatch count (built on first use, see build()).
    train_step: Optional[object] = None

    @property
    def shard_opt(self) -> str:
        return str(self.build / "bin" / "shard-opt")

    @property
    def shard_run(self) -> str:
        return str(self.build / "bin" / "shard-run")


def run(ctx: Ctx, cmd: List[str], timeout: Optional[int] = None) -> Tuple[int, str]:
    """Runs cmd in its own process group (an MPI job is killed whole on timeout)."""
    if ctx.verbose:
        print("  $ " + " ".join(cmd), flush=True)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True, env=ctx.env)
    try:
        out, _ = p.communicate(timeout=timeout or ctx.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return 124, out + f"\n[timed out after {timeout or ctx.timeout}s]"
    return p.returncode, out


def last_error(out: str) -> str:
    lines = [l for l in out.splitlines() if "error" in l.lower()]
    line = (lines[0] if lines else (out.strip().splitlines() or ["(no output)"])[-1]).strip()
    line = re.sub(r"^\S+\.mlir:\d+:\d+: ", "", line)  # the file:line:col of the sweep's IR
    return line[:300]


def compile_plan(ctx: Ctx, ts: Path, plan: Optional[str], art: Path, mb: int = 1,
                 recompute: str = "none") -> Tuple[int, str]:
    """Compiles the train step for `plan`, whose keys mb and recompute (as
    the compiler reads them, see check_plans) choose the step."""
    if mb > 1 or recompute != "none":
        ts = ctx.train_step(mb, recompute)
    fuse = ctx.fuse_epilogues == "all" or (ctx.fuse_epilogues == "plans" and plan)
    # shard-opt's registered pipeline (lib/Pipelines), as scripts/train.sh runs it.
    options = f"autodiff=false fuse-epilogues={'true' if fuse else 'false'}"
    if plan:
        options += f" plan={plan}"
    cmd = [ctx.shard_opt, str(ts), f"--autoshard-train={options} output={art}",
           "-o", str(art.with_suffix(".lowered.mlir"))]
    return run(ctx, cmd)


def list_plans(ctx: Ctx, ts: Path, options: str, name: str) -> dict:
    """shard-opt's dist-list-plans report (JSON) on the train step ts: the
    model's tfm.model integers and, per plan, its text, validity (the
    compiler's first error as `reason`), world size and keys."""
    report = ctx.out / f"{name}.plans.json"
    rc, out = run(ctx, [ctx.shard_opt, str(ts),
                        f"--dist-list-plans={options} format=json output={report}",
                        "-o", os.devnull])
    if rc:
        sys.exit(f"plan_sweep: dist-list-plans failed:\n{out}")
    return json.loads(report.read_text())


def check_plans(ctx: Ctx, ts: Path, plans: List[str]) -> Tuple[dict, List[dict]]:
    """tfm.model's integers and the compiler's reading of each plan (keys,
    world size; a plan it cannot parse has only `plan` and `reason`)."""
    listed = ctx.out / "plans.checked.txt"
    listed.write_text("".join(p + "\n" for p in plans))
    report = list_plans(ctx, ts, f"plans-file={listed}", "checked")
    return report["model"], report["plans"]


def train(ctx: Ctx, art: Path, ranks: int, log: Path, check_memory: bool) -> Tuple[int, str]:
    """Runs K steps; writes the JSONL log and the final parameters (log + .safetensors).

    Fails if the copies of a replicated state differ between ranks
    (shard-run --check-replicas)."""
    for f in (log, log.with_suffix(".safetensors")):
        if f.exists():
            f.unlink()
    cmd = [ctx.shard_run, str(art), "--data", str(ctx.data), "--steps", str(ctx.steps),
           "--eval-interval", "0", "--eval-iters", "1", "--sample", "0", "--log", str(log),
           "--save-params", str(log.with_suffix(".safetensors")),
           # Every copy of a state held by several ranks or stages must be
           # identical (issue 14: a stage's stale tied embedding hid behind
           # matching losses).
           "--check-replicas"]
    if ranks > 1:
        cmd[1:1] = ["-n", str(ranks)]
    if check_memory:
        cmd.append("--check-memory")
    return run(ctx, cmd)


def read_log(log: Path) -> Tuple[List[dict], Optional[float]]:
    steps, val = [], None
    for line in log.read_text().splitlines():
        o = json.loads(line)
        if "train_loss" in o:
            steps.append(o)
        if "val_loss" in o:
            val = o["val_loss"]
    return steps, val


def read_safetensors(path: Path) -> Dict[str, array.array]:
    """Tensors of a safetensors file (F32/F64) as flat arrays, by name."""
    blob = path.read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        a = array.array({"F32": "f", "F64": "d"}[t["dtype"]])
        a.frombytes(blob[8 + n + begin:8 + n + end])
        out[name] = a
    return out


def compare_params(ref: Path, got: Path) -> Tuple[float, str]:
    """Max over parameters of ||got - ref||_2 / ||ref||_2 (per tensor).

    A norm, not an element-wise ratio: Adam normalises each element's update
    to about lr, so an element whose gradient is at rounding level may move
    by +-lr in one plan and not the other without the training differing.
    """
    r, g = read_safetensors(ref), read_safetensors(got)
    if set(r) != set(g):
        return float("inf"), f"parameter names differ: {sorted(set(r) ^ set(g))[:4]}"
    worst, where = 0.0, ""
    for name, a in r.items():
        b = g[name]
        if len(a) != len(b):
            return float("inf"), f"parameter {name}: {len(b)} elements vs {len(a)}"
        diff = math.sqrt(math.fsum((x - y) ** 2 for x, y in zip(a, b)))
        norm = math.sqrt(math.fsum(x * x for x in a))
        e = diff / norm if norm else diff
        if e > worst or e != e:
            worst, where = e, f"parameter {name}: relative L2 error {e:.3g}"
    return worst, where


def peak_bytes(out: str) -> Optional[int]:
    """Bytes rank 0 allocated, from shard-run's summary line."""
    m = re.search(r"peak \S+ \S+ \((\d+) bytes", out)
    return int(m.group(1)) if m else None


def compare(ref: Tuple[List[dict], Optional[float]], got: Tuple[List[dict], Optional[float]],
            steps: int) -> Tuple[float, str]:
    """Max relative error of train_loss/grad_norm per step and the final val_loss."""
    (rs, rv), (gs, gv) = ref, got
    if len(gs) != steps:
        return float("inf"), f"logged {len(gs)} steps, expected {steps}"
    worst, where = 0.0, ""
    for r, g in zip(rs, gs):
        for k in ("train_loss", "grad_norm"):
            e = abs(g[k] - r[k]) / max(abs(r[k]), 1e-30)
            if e > worst or e != e:
                worst, where = e, f"{k} step {r['step']}: {g[k]:.9g} vs {r[k]:.9g}"
    if rv is not None:
        if gv is None:
            return float("inf"), "no final val_loss"
        e = abs(gv - rv) / max(abs(rv), 1e-30)
        if e > worst or e != e:
            worst, where = e, f"val_loss: {gv:.9g} vs {rv:.9g}"
    return worst, where


def run_plan(ctx: Ctx, ts: Path, ref, ref_params: Path, plan: str, info: dict,
             check_memory: bool) -> Result:
    """Compiles and runs `plan` (`info`: its keys, from check_plans)."""
    t0 = time.time()
    ranks = info.get("world", 0)
    tag = re.sub(r"[^A-Za-z0-9]+", "_", plan)
    name = plan + (" +check-memory" if check_memory else "")
    art = ctx.out / f"{tag}.json"
    rc, out = compile_plan(ctx, ts, plan, art, info.get("mb", 1), info.get("recompute", "none"))
    if rc:
        return Result(name, ranks, False, None, time.time() - t0, "compile: " + last_error(out))
    log = ctx.out / f"{tag}.jsonl"
    rc, out = train(ctx, art, ranks, log, check_memory)
    (ctx.out / f"{tag}.out").write_text(out)
    if rc:
        return Result(name, ranks, False, None, time.time() - t0, "run: " + last_error(out))
    err, where = compare(ref, read_log(log), ctx.steps)
    perr, pwhere = compare_params(ref_params, log.with_suffix(".safetensors"))
    ok = err <= ctx.tol and perr <= ctx.tol
    why = "" if ok else (where if err > ctx.tol else pwhere)
    return Result(name, ranks, ok, err, time.time() - t0, why, param_err=perr,
                  peak_bytes=peak_bytes(out))


def run_invalid(ctx: Ctx, ts: Path, good_art: Path, name: str, cmd: List[str],
                pattern: str) -> Result:
    """An invalid plan/launch must exit non-zero with a message matching pattern."""
    t0 = time.time()
    rc, out = run(ctx, cmd)
    if rc == 0:
        return Result(name, 0, False, None, time.time() - t0, "accepted (expected an error)",
                      kind="invalid")
    if rc == 124 or not re.search(pattern, out):
        return Result(name, 0, False, None, time.time() - t0,
                      f"rc {rc}, message did not match /{pattern}/: " + last_error(out),
                      kind="invalid")
    return Result(name, 0, True, None, time.time() - t0, last_error(out), kind="invalid")


def invalid_cases(ctx: Ctx, ts: Path, good_art: Path, good_ranks: int,
                  model: dict) -> List[Tuple[str, List[str], str]]:
    def opt(plan: str) -> List[str]:
        # The compile users run (scripts/train.sh's pipeline), on the train step.
        return [ctx.shard_opt, str(ts), f"--autoshard-train=autodiff=false plan={plan}",
                "-o", os.devnull]
    heads = model["num_heads"]
    bad_tp = next(t for t in (3, 5, 6, 7, 8, 16) if heads % t)
    bad_dp = next(d for d in (3, 5, 6, 7) if model["batch"] % d)
    bad_cp = next(c for c in (3, 5, 6, 7) if model["seq_len"] % c)
    wrong_n = good_ranks * 2
    cases = [
        ("foo=1", opt("dp=2,foo=1"), r"unknown key 'foo'"),
        ("dp=x", opt("dp=x"), r"dp expects an integer, found 'x'"),
        ("dp=0", opt("dp=0"), r"dp must be >= 1, found 0"),
        (f"tp={bad_tp}", opt(f"tp={bad_tp}"), rf"num_heads = {heads} is not divisible by tp"),
        (f"dp={bad_dp}", opt(f"dp={bad_dp}"), r"is not divisible by dp"),
        (f"cp={bad_cp}", opt(f"cp={bad_cp}"),
         rf"plan cp={bad_cp}: the sequence dim of input 'tokens' \(size {model['seq_len']}\) "
         r"is not divisible by cp"),
        ("cp=0", opt("cp=0"), r"cp must be >= 1, found 0"),
        (f"cp={2 * heads},cp_attention=ulysses",
         opt(f"cp={2 * heads},cp_attention=ulysses"),
         rf"cp_attention=ulysses: (the sequence length|the attention's query has {heads} heads)"),
        ("tp=2,cp_attention=ulysses", opt("tp=2,cp_attention=ulysses"),
         r"cp_attention=ulysses needs cp > 1"),
        ("dp=2,sp=1", opt("dp=2,sp=1"), r"sp=1 needs tp > 1"),
        ("tp=2,sp=2", opt("tp=2,sp=2"), r"sp must be 0 or 1, found 2"),
        ("dp=2,zero=4", opt("dp=2,zero=4"), r"zero must be in 0\.\.3, found 4"),
        (f"pp={2 * model['num_layers']}", opt(f"pp={2 * model['num_layers']}"),
         rf"pp={2 * model['num_layers']} needs at least {2 * model['num_layers']} block calls"),
        ("pp=2,schedule=interleaved (no vpp)", opt("pp=2,schedule=interleaved"),
         r"schedule=interleaved needs vpp >= 2 model chunks per rank, found vpp=1"),
        ("pp=2,vpp=2 with 1f1b", opt("pp=2,vpp=2"),
         r"vpp=2 needs schedule=interleaved, looped-bfs or zb-v"),
        ("dp=2,mb=2 on a step without microbatches", opt("dp=2,mb=2"),
         r"plan mb=2, but the train step was differentiated for 1 microbatch"),
        (f"shard-run -n {wrong_n} on a {good_ranks}-rank artifact",
         [ctx.shard_run, "-n", str(wrong_n), str(good_art), "--data", str(ctx.data),
          "--steps", "1", "--sample", "0"],
         rf"compiled for {good_ranks} ranks, but -n is {wrong_n}"),
        (f"train.sh --plan dp=2 -n {wrong_n}",
         ["bash", str(ctx.root / "scripts" / "train.sh"), "--plan", "dp=2", "-n", str(wrong_n),
          "--out", str(ctx.out / "train-invalid")],
         rf"-n {wrong_n} does not match the plan's world size 2"),
        (f"train.sh --plan cp=2 -n {wrong_n}",
         ["bash", str(ctx.root / "scripts" / "train.sh"), "--plan", "cp=2", "-n", str(wrong_n),
          "--out", str(ctx.out / "train-invalid")],
         rf"-n {wrong_n} does not match the plan's world size 2"),
        ("train.sh --schedule-file missing",
         ["bash", str(ctx.root / "scripts" / "train.sh"), "--plan", "pp=2",
          "--schedule-file", str(ctx.out / "no-such-schedule.txt"),
          "--out", str(ctx.out / "train-invalid")],
         r"schedule file '.*no-such-schedule\.txt' not found \(--schedule-file\)"),
    ]
    # Expert parallelism: ep folds over the tp x cp x dp ranks of an MoE model.
    experts = model.get("num_experts", 0)
    cases += [
        ("dp=2,ep=4 (ep does not divide dp)", opt("dp=2,ep=4"),
         r"ep=4 must divide dp=2 \(expert parallelism folds over the data-parallel ranks, never over pp\)"),
        ("dp=2,cp=4,ep=2 (ep not a multiple of cp)", opt("dp=2,cp=4,ep=2"),
         r"ep=2 must be 4 times a divisor of dp=2: the ep group takes every cp rank \(cp=4\)"),
    ]
    if experts:
        bad_ep = 2 * experts
        cases.append((f"dp={bad_ep},ep={bad_ep} ({experts} experts)",
                      opt(f"dp={bad_ep},ep={bad_ep}"),
                      rf"plan ep={bad_ep}: the model's num_experts = {experts} is not divisible "
                      r"by ep"))
    else:
        cases.append(("dp=2,ep=2 on a dense model", opt("dp=2,ep=2"),
                      r"plan ep=2: the model has no experts \(no tfm\.moe_dispatch\)"))
    return cases


def builder_options(args) -> List[str]:
    """The model builder's options that the sweep passes through."""
    opts: List[str] = []
    if args.dropout is not None:
        opts += ["--dropout", str(args.dropout)]
    if args.capacity_factor is not None:
        opts += ["--capacity-factor", str(args.capacity_factor)]
    if args.max_tokens_per_expert is not None:
        opts += ["--max-tokens-per-expert", str(args.max_tokens_per_expert)]
    return opts


def build_microbatched(ctx: Ctx, args, cfg_path: Path, mb: int, recompute: str,
                      cache: Dict[Tuple[int, str], Path]) -> Path:
    """The train step with mb microbatches of batch/mb rows (gradient accumulation),
    and activation recomputation `recompute` (tfm-recompute mode) unless none."""
    if (mb, recompute) in cache:
        return cache[(mb, recompute)]
    if args.batch % mb:
        sys.exit(f"plan_sweep: batch {args.batch} is not divisible by mb={mb}")
    model = ctx.out / f"model.mb{mb}.mlir"
    env = dict(ctx.env, PYTHONPATH=str(ctx.root / "python"))
    cmd = [ctx.py, "-m", "autoshard.models", str(cfg_path), "--batch", str(args.batch // mb),
           "--seq", str(args.seq), "--vocab-multiple", str(args.vocab_multiple), "-q",
           "-o", str(model)]
    cmd += builder_options(args)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode:
        sys.exit(f"plan_sweep: model builder failed:\n{p.stdout}")
    ts = ctx.out / f"ts.mb{mb}.{recompute}.mlir"
    passes = [f"--tfm-autodiff=microbatches={mb}"]
    if recompute != "none":
        passes.append(f"--tfm-recompute=mode={recompute}")
    rc, out = run(ctx, [ctx.shard_opt, str(model), *passes, "-o", str(ts)])
    if rc:
        sys.exit(f"plan_sweep: {' '.join(passes)} failed:\n{out}")
    cache[(mb, recompute)] = ts
    return ts


def build(ctx: Ctx, args) -> Tuple[Path, dict]:
    """Model IR (padded vocabulary) and its train step; returns (ts.mlir, tfm.model)."""
    cfg = json.loads(Path(args.config).read_text())
    if args.layers:
        cfg["n_layer"] = args.layers
    if args.experts:
        if "num_local_experts" not in cfg:
            sys.exit("plan_sweep: --experts needs an MoE config (num_local_experts)")
        cfg["num_local_experts"] = args.experts
    cfg_path = ctx.out / "config.json"
    cfg_path.write_text(json.dumps(cfg, indent=1))
    cache: Dict[Tuple[int, str], Path] = {}
    ctx.train_step = lambda mb, recompute="none": build_microbatched(
        ctx, args, cfg_path, mb, recompute, cache)
    model = ctx.out / "model.mlir"
    env = dict(ctx.env, PYTHONPATH=str(ctx.root / "python"))
    for mult, dst in ((args.vocab_multiple, model), (1, ctx.out / "model.unpadded.mlir")):
        cmd = [ctx.py, "-m", "autoshard.models", str(cfg_path), "--batch", str(args.batch),
               "--seq", str(args.seq), "--vocab-multiple", str(mult), "-q", "-o", str(dst)]
        cmd += builder_options(args)
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        if p.returncode:
            sys.exit(f"plan_sweep: model builder failed:\n{p.stdout}")
    for src, dst in ((model, ctx.out / "ts.mlir"),
                     (ctx.out / "model.unpadded.mlir", ctx.out / "ts.unpadded.mlir")):
        rc, out = run(ctx, [ctx.shard_opt, str(src), "--tfm-autodiff", "-o", str(dst)])
        if rc:
            sys.exit(f"plan_sweep: tfm-autodiff failed:\n{out}")
    # tfm.model's integers, as the compiler reads them.
    attrs, _ = check_plans(ctx, ctx.out / "ts.mlir", [])
    if not attrs:
        sys.exit("plan_sweep: no tfm.model attribute in the train step")
    return ctx.out / "ts.mlir", attrs


def write_junit(path: Path, results: List[Result], seconds: float) -> None:
    fails = sum(not r.ok for r in results)
    cases = []
    for r in results:
        cls = "plan_sweep." + r.kind
        body = ""
        if not r.ok:
            body = f"<failure message={quoteattr(r.message)}/>"
        elif r.message:
            body = f"<system-out>{quoteattr(r.message)[1:-1]}</system-out>"
        cases.append(f'<testcase classname="{cls}" name={quoteattr(r.name)} '
                     f'time="{r.seconds:.2f}">{body}</testcase>')
    path.write_text(f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="plan_sweep" '
                    f'tests="{len(results)}" failures="{fails}" time="{seconds:.1f}">'
                    + "".join(cases) + "</testsuite>\n")


def main() -> int:
    ap = argparse.ArgumentParser(prog="plan_sweep.sh")
    ap.add_argument("-n", "--ranks", default=None, metavar="N[,N...]",
                    help="every valid plan for these world sizes (default: the covering set)")
    ap.add_argument("--mb", default="1", metavar="M[,M...]",
                    help="microbatch counts of the -n/--full plans (gradient accumulation; 1)")
    ap.add_argument("--pp", default="1", metavar="P[,P...]",
                    help="pipeline degrees of the -n/--full plans (1; --full: 1,2,4)")
    ap.add_argument("--cp", default="1", metavar="C[,C...]",
                    help="context-parallel degrees of the -n/--full plans (1; --full: 1,2,4)")
    ap.add_argument("--schedules", default="1f1b,gpipe",
                    help="pipeline schedules of the -n/--full plans with pp > 1 "
                    f"(or 'all' = {ALL_SCHEDULES}; interleaved, looped-bfs and zb-v "
                    "with vpp=2)")
    ap.add_argument("--full", action="store_true",
                    help="every valid plan for world sizes 1, 2, 4, 8 (= -n 1,2,4,8), "
                    "pp 1,2,4, mb 1,2,4,8 and every schedule")
    ap.add_argument("--plans", default=None,
                    help="';'-separated explicit plans instead of the covering set")
    ap.add_argument("--plans-file", default=None, metavar="FILE",
                    help="the plans listed in FILE instead of the covering set (one per "
                    "line, '#' comments, 'check-memory' in a plan's comment marks it; "
                    "CI's lists: scripts/plan_lists/)")
    ap.add_argument("--list", action="store_true",
                    help="print the plans (and their world sizes) and exit without running")
    ap.add_argument("--filter", default=None, help="only plans matching this regex")
    ap.add_argument("--exclude", default=None, help="skip plans matching this regex")
    ap.add_argument("--no-invalid", action="store_true", help="skip the invalid-plan checks")
    ap.add_argument("--check-memory", choices=("some", "all", "none"), default="some",
                    help="which plans run under --check-memory (some: the marked covering ones)")
    ap.add_argument("--steps", type=int, default=20,
                    help="steps compared (DESIGN.md §6: the first 20)")
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--fuse-epilogues", choices=("all", "plans", "none"), default="all",
                    help="compile with rt-fuse-epilogues: reference and plans (default, as "
                         "train.sh), plans only (compared with an unfused reference), none")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--layers", type=int, default=0, help="override the config's n_layer")
    ap.add_argument("--vocab-multiple", type=int, default=64)
    ap.add_argument("--dropout", type=float, default=None, help="override the config's dropout")
    ap.add_argument("--experts", type=int, default=0,
                    help="override an MoE config's num_local_experts")
    ap.add_argument("--capacity-factor", type=float, default=None,
                    help="MoE expert capacity factor (default dropless: capacity = seq)")
    ap.add_argument("--max-tokens-per-expert", type=int, default=None,
                    help="MoE, dropless: bound each expert's buffer at N tokens per sequence")
    ap.add_argument("--config", default=None)
    ap.add_argument("--data", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--junit", default=None)
    ap.add_argument("--timeout", type=int, default=600, help="seconds per command")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--root", required=True, help=argparse.SUPPRESS)
    ap.add_argument("--build", required=True, help=argparse.SUPPRESS)
    ap.add_argument("--py", required=True, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.plans and args.plans_file:
        sys.exit("plan_sweep: give --plans or --plans-file, not both")
    root, bld = Path(args.root), Path(args.build)
    shared = root.parent / "shared"
    args.config = args.config or str(shared / "configs/models/nanogpt-shakespeare-char-cpu.json")
    out = Path(args.out or bld / "plan-sweep")
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, BUILD_DIR=str(bld))
    ctx = Ctx(root, bld, args.py, out, Path(args.data or shared / "data/tinyshakespeare.txt"),
              args.steps, args.tol, args.timeout, args.verbose, env,
              fuse_epilogues=args.fuse_epilogues)
    for tool in (ctx.shard_opt, ctx.shard_run):
        if not os.access(tool, os.X_OK):
            sys.exit(f"plan_sweep: {tool} not found (build first, or set BUILD_DIR)")

    t_all = time.time()
    ts, model = build(ctx, args)
    # (plan, check_memory) and, per plan, the compiler's reading of it (keys
    # and world size; dist-list-plans).
    if args.plans or args.plans_file or not (args.full or args.ranks):
        if args.plans:
            plans = [(p.strip(), False) for p in args.plans.split(";") if p.strip()]
        else:
            plans = read_plan_list(Path(args.plans_file) if args.plans_file else COVERING)
        infos = check_plans(ctx, ts, [p for p, _ in plans])[1]
    else:
        try:
            worlds = [int(w) for w in (args.ranks or "1,2,4,8").split(",")]
        except ValueError:
            sys.exit(f"plan_sweep: -n expects N[,N...], found '{args.ranks}'")
        if any(w < 1 for w in worlds):
            sys.exit(f"plan_sweep: -n: world sizes must be >= 1, found '{args.ranks}'")
        try:
            mbs = [int(m) for m in args.mb.split(",")]
        except ValueError:
            sys.exit(f"plan_sweep: --mb expects M[,M...], found '{args.mb}'")
        if any(m < 1 for m in mbs):
            sys.exit(f"plan_sweep: --mb: counts must be >= 1, found '{args.mb}'")
        try:
            pps = [int(x) for x in (args.pp if args.pp != "1" or not args.full
                                    else "1,2,4").split(",")]
        except ValueError:
            sys.exit(f"plan_sweep: --pp expects P[,P...], found '{args.pp}'")
        try:
            cps = [int(x) for x in (args.cp if args.cp != "1" or not args.full
                                    else "1,2,4").split(",")]
        except ValueError:
            sys.exit(f"plan_sweep: --cp expects C[,C...], found '{args.cp}'")
        if any(c < 1 for c in cps):
            sys.exit(f"plan_sweep: --cp: degrees must be >= 1, found '{args.cp}'")
        if args.full and args.mb == "1":
            mbs = [1, 2, 4, 8]
        if args.full and args.schedules == "1f1b,gpipe":
            args.schedules = "all"
        schedules = (ALL_SCHEDULES if args.schedules == "all" else args.schedules).split(",")
        unknown = [x for x in schedules if x not in ALL_SCHEDULES.split(",")]
        if unknown:
            sys.exit(f"plan_sweep: --schedules: unknown schedule '{unknown[0]}' "
                     f"(known: {ALL_SCHEDULES}, all)")
        # The compiler lists the valid plans of each mb's train step (no
        # plan has an mb that does not divide the batch); merged in the
        # order world, pp, cp, tp, then mb.
        options = (f"world={','.join(map(str, worlds))} pp={','.join(map(str, pps))} "
                   f"cp={','.join(map(str, cps))} schedules={','.join(schedules)}")
        infos = []
        for mb in mbs:
            if args.batch % mb == 0:
                step = ts if mb == 1 else ctx.train_step(mb)
                infos += list_plans(ctx, step, options, f"mb{mb}")["plans"]
        infos.sort(key=lambda i: (worlds.index(i["world"]), pps.index(i["pp"]),
                                  cps.index(i["cp"]), i["tp"]))
        marked = {p for p, c in read_plan_list(COVERING) if c}
        plans = [(i["plan"], i["plan"] in marked) for i in infos]
    info_of = {p: i for (p, _), i in zip(plans, infos)}
    if args.filter:
        plans = [(p, c) for p, c in plans if re.search(args.filter, p)]
    if args.exclude:
        plans = [(p, c) for p, c in plans if not re.search(args.exclude, p)]
    if args.check_memory != "some":
        plans = [(p, args.check_memory == "all") for p, _ in plans]
    if args.list:
        for p, c in plans:
            print(f"{p}\t{info_of[p].get('world', '-')}" + ("\tcheck-memory" if c else ""))
        return 0

    print(f"plan sweep: {model.get('num_layers')} layers, hidden {model.get('hidden_size')}, "
          f"{model.get('num_heads')} heads, vocab {model.get('vocab_size')} padded to "
          f"{model.get('padded_vocab_size')}, batch {model.get('batch')}, seq "
          f"{model.get('seq_len')}; {args.steps} steps; {len(plans)} plans; tolerance "
          f"{args.tol:g}; out {out}", flush=True)

    results: List[Result] = []
    # 1-rank reference: no plan at all (the plain single-device pipeline).
    t0 = time.time()
    ref_art = out / "reference.json"
    rc, o = compile_plan(ctx, ts, None, ref_art)
    if rc == 0:
        rc, o = train(ctx, ref_art, 1, out / "reference.jsonl", False)
    if rc:
        print(f"plan_sweep: the 1-rank reference failed:\n{o}", file=sys.stderr)
        return 1
    ref = read_log(out / "reference.jsonl")
    ref_params = out / "reference.safetensors"
    if len(ref[0]) != args.steps:
        print("plan_sweep: the reference logged the wrong number of steps", file=sys.stderr)
        return 1
    results.append(Result("reference (no plan)", 1, True, 0.0, time.time() - t0,
                          param_err=0.0, peak_bytes=peak_bytes(o), kind="reference"))

    def show(r: Result) -> None:
        err = "-" if r.err is None else f"{r.err:.2e}"
        perr = "-" if r.param_err is None else f"{r.param_err:.2e}"
        peak = "-" if r.peak_bytes is None else f"{r.peak_bytes / 2**20:.2f}"
        ranks = "-" if r.kind == "invalid" else str(r.ranks)
        status = "pass" if r.ok else "FAIL"
        print(f"{r.name:42s} {ranks:>5s} {err:>10s} {perr:>10s} {peak:>9s} {status:>6s} "
              f"{r.seconds:7.1f}"
              + (f"  {r.message}" if r.message and (not r.ok or r.kind == "invalid") else ""),
              flush=True)

    print(f"\nmax rel: largest relative error of a step's train loss or grad norm, or the "
          f"final val loss;\nparams: largest relative L2 error of a final parameter; "
          f"peak MiB: allocated per rank")
    print(f"\n{'plan':42s} {'ranks':>5s} {'max rel':>10s} {'params':>10s} {'peak MiB':>9s} "
          f"{'status':>6s} {'seconds':>7s}")
    show(results[0])
    # The padded model is the unpadded one (DESIGN.md §6): same losses and norms.
    if args.vocab_multiple > 1 and model["padded_vocab_size"] != model["vocab_size"]:
        t0 = time.time()
        art = out / "unpadded.json"
        rc, o = compile_plan(ctx, out / "ts.unpadded.mlir", None, art)
        if rc == 0:
            rc, o = train(ctx, art, 1, out / "unpadded.jsonl", False)
        if rc:
            r = Result("unpadded vocab (no plan)", 1, False, None, time.time() - t0,
                       last_error(o), kind="reference")
        else:
            err, where = compare(ref, read_log(out / "unpadded.jsonl"), args.steps)
            r = Result("unpadded vocab (no plan)", 1, err <= args.tol, err, time.time() - t0,
                       "" if err <= args.tol else where, kind="reference")
        results.append(r)
        show(r)

    # With dropout, microbatch j keys its masks on its own layer keys
    # (tfm-autodiff), so a plan with mb=M trains like the 1-rank run with
    # mb=M, not like the one without microbatches: one reference per M.
    refs = {1: (ref, ref_params)}

    def reference_for(mb: int):
        if not args.dropout:
            return refs[1]
        if mb in refs:
            return refs[mb]
        t0 = time.time()
        art = out / f"reference.mb{mb}.json"
        rc, o = compile_plan(ctx, ts, f"mb={mb}", art, mb)
        if rc == 0:
            rc, o = train(ctx, art, 1, out / f"reference.mb{mb}.jsonl", False)
        r = Result(f"reference mb={mb} (1 rank)", 1, rc == 0, 0.0 if rc == 0 else None,
                   time.time() - t0, "" if rc == 0 else last_error(o), param_err=0.0,
                   kind="reference")
        results.append(r)
        show(r)
        refs[mb] = (read_log(out / f"reference.mb{mb}.jsonl"),
                    out / f"reference.mb{mb}.safetensors") if rc == 0 else None
        return refs[mb]

    for plan, cm in plans:
        info = info_of[plan]
        plan_ref = reference_for(info.get("mb", 1))
        if plan_ref is None:
            r = Result(plan, info.get("world", 0), False, None, 0.0,
                       "the 1-rank reference with this mb failed")
            results.append(r)
            show(r)
            continue
        r = run_plan(ctx, ts, plan_ref[0], plan_ref[1], plan, info, cm)
        results.append(r)
        show(r)

    if not args.no_invalid:
        good = "dp=2"
        good_art = out / "invalid-good.json"
        compile_plan(ctx, ts, good, good_art)
        good_ranks = check_plans(ctx, ts, [good])[1][0]["world"]
        for name, cmd, pat in invalid_cases(ctx, ts, good_art, good_ranks, model):
            r = run_invalid(ctx, ts, good_art, "invalid: " + name, cmd, pat)
            results.append(r)
            show(r)

    total = time.time() - t_all
    npass = sum(r.ok for r in results)
    nfail = len(results) - npass
    if args.junit:
        write_junit(Path(args.junit), results, total)
    print(f"\nplan sweep took {total:.0f}s")
    print(f"{npass} passed, {nfail} failed")
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
