#!/usr/bin/env python3
"""Planner memory vs the compiled static memory plan over the plan space
(issue 21, item 5).

For every plan of the nanoGPT CPU model on 1-8 ranks that the generator
below lists (pp 1/2/4 with each schedule, dp 1/2, cp 1/2, tp 1/2 with and
without SP, ZeRO 0-3, no/selective/full recomputation, 1/2/4/8
microbatches; global batch 8, seq 64, as python/tests/test_planner_memory.py),
the model is compiled with the plan (``shard-opt --autoshard-train``, as
scripts/train.sh does) and read with ``--dist-explain=format=json`` (a
rank's states and live bytes per category at its memory plan's peak; with
pp every pipeline rank's), and the planner scores the same plan
(``--dist-auto-plan evaluate=... format=json`` on
configs/clusters/cpu-2core.json; with pp the first and the last pipeline
rank, under 1F1B and GPipe every rank, reporting the heaviest:
autoshard.plan_memory.compare_plan compares its breakdown with the same
rank's compiled plan). Per plan it prints
planner - compiled in bytes for parameters, optimizer states, gradients
live at the peak (planner grads + activation_grads) and activations at the
peak, and a verdict:

* ``ok``: every category within --tolerance bytes (default 1024);
* ``sum``: the categories differ but their sum is within --tolerance (the
  two sides file a buffer under different categories);
* ``rank``: the breakdown agrees (``ok`` or ``sum``), but another compiled
  pipeline rank holds more (states + live bytes at its peak) than the one
  the planner reports as the heaviest, by more than --tolerance;
* ``OFF``: the totals differ;
* ``invalid``: the compiler rejects the plan (the reason is printed; the
  generator lists every combination, e.g. interleaved with fewer
  microbatches than stages).

It ends with ``N ok, N sum, N rank, N OFF, N invalid`` and exits 1 when a
plan is OFF or rank (or, with --strict, also ``sum``). Plans the compiler rejects are not
counted against the planner.

Usage:
  bench/planner_memory/run.py [--build build] [--filter RE] [--exclude RE]
                              [--limit N] [--json FILE] [--tolerance B]
                              [--strict] [--list]

Errors: a missing shard-opt or model config, a --filter or --exclude that
is not a regular expression, filters that select no plan, or a --json file
that cannot be written (a folder, a missing folder, no permission: checked
before the sweep) exits 2 with a message naming it.
"""

import argparse
import atexit
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
from autoshard.calibration import first_error  # noqa: E402
from autoshard.plan_memory import (PlanMemoryError, compare_plan,  # noqa: E402
                                   rank_totals)

CONFIG = os.path.join(ROOT, "..", "shared", "configs", "models",
                      "nanogpt-shakespeare-char-cpu.json")
CLUSTER = os.path.join(ROOT, "configs", "clusters", "cpu-2core.json")
GLOBAL_BATCH = 8
SEQ = 64
SCHEDULES = ["1f1b", "gpipe", "interleaved", "zb-h1", "zb-v"]


def plans():
    """Every (plan, microbatches) of at most 8 ranks the sweep scores, in a
    fixed order: plan in --plan syntax without mb."""
    out = []
    for pp, sched, dp, cp, tp, sp, zero, rc, mb in itertools.product(
            [1, 2, 4], SCHEDULES, [1, 2], [1, 2], [1, 2], [0, 1],
            [0, 1, 2, 3], ["none", "selective", "full"], [1, 2, 4, 8]):
        if (pp == 1 and sched != "1f1b") or (tp == 1 and sp) or \
                (dp == 1 and zero) or pp * dp * cp * tp > 8 or \
                GLOBAL_BATCH % (dp * mb):
            continue
        items = [f"pp={pp}"] if pp > 1 else []
        items.append(f"dp={dp}")
        items += [f"cp={cp}"] if cp > 1 else []
        items += [f"tp={tp}"] if tp > 1 else []
        items += ["sp=1"] if sp else []
        items += [f"zero={zero}"] if zero else []
        items += [f"recompute={rc}"] if rc != "none" else []
        if pp > 1 and sched != "1f1b":
            items.append(f"schedule={sched}")
            if sched in ("interleaved", "zb-v"):
                items.append("vpp=2")
        out.append((",".join(items), mb))
    return out


def degree(plan, key):
    for item in plan.split(","):
        name, _, value = item.partition("=")
        if name == key:
            return int(value)
    return 1


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--filter", default="", help="keep plans matching RE "
                    "(on the plan with ',mb=M' appended)")
    ap.add_argument("--exclude", default="", help="drop plans matching RE")
    ap.add_argument("--limit", type=int, default=0,
                    help="score at most N plans (0: all)")
    ap.add_argument("--tolerance", type=int, default=1024,
                    help="bytes per category (default 1024: the frame's "
                         "64-byte alignment and the one-block fit)")
    ap.add_argument("--strict", action="store_true",
                    help="also fail on plans whose categories differ but "
                         "whose sums agree")
    ap.add_argument("--json", help="write the rows to FILE")
    ap.add_argument("--list", action="store_true",
                    help="print the plans and exit")
    args = ap.parse_args()

    def keep(name):
        return (not args.filter or re.search(args.filter, name)) and \
               (not args.exclude or not re.search(args.exclude, name))

    for opt in ("filter", "exclude"):
        try:
            re.compile(getattr(args, opt))
        except re.error as e:
            print(f"--{opt} '{getattr(args, opt)}' is not a regular "
                  f"expression: {e}", file=sys.stderr)
            return 2
    selected = [(p, m) for p, m in plans() if keep(f"{p},mb={m}")]
    if args.limit > 0:
        selected = selected[:args.limit]
    if not selected:
        print(f"no plan matches --filter '{args.filter}'"
              + (f" --exclude '{args.exclude}'" if args.exclude else "")
              + " (see --list for the names)", file=sys.stderr)
        return 2
    if args.list:
        for p, m in selected:
            print(f"{p},mb={m}")
        return 0
    shard_opt = os.path.join(os.path.abspath(args.build), "bin", "shard-opt")
    py = os.path.join(os.path.abspath(args.build), "venv", "bin", "python")
    for path, what in ((shard_opt, "shard-opt"), (py, "the venv's python")):
        if not os.access(path, os.X_OK):
            print(f"{what} not found at {path}: build first (scripts/setup.sh)",
                  file=sys.stderr)
            return 2
    if not os.path.isfile(CONFIG):
        print(f"model config {CONFIG} not found", file=sys.stderr)
        return 2
    if args.json:
        json_dir = os.path.dirname(os.path.abspath(args.json))
        if not os.path.isdir(json_dir):
            print(f"--json {args.json}: folder {json_dir} does not exist",
                  file=sys.stderr)
            return 2
        # Before the sweep's minutes, not after them: a folder or a file
        # that cannot be created (probed beside it, then removed).
        if os.path.isdir(args.json):
            print(f"--json {args.json}: is a folder (give a file name)",
                  file=sys.stderr)
            return 2
        probe = f"{os.path.abspath(args.json)}.tmp-{os.getpid()}"
        try:
            open(probe, "w").close()
            os.remove(probe)
        except OSError as e:
            print(f"--json {args.json}: cannot write there: {e.strerror}",
                  file=sys.stderr)
            return 2

    tmp = tempfile.mkdtemp(prefix="planner-memory-")
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))

    def model(batch):
        path = os.path.join(tmp, f"model-b{batch}.mlir")
        if not os.path.exists(path):
            proc = subprocess.run(
                [py, "-m", "autoshard.models", CONFIG, "--batch", str(batch),
                 "--seq", str(SEQ), "--vocab-multiple", "64", "-q", "-o", path],
                capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                raise SystemExit(f"building the model at batch {batch} "
                                 f"failed: {first_error(proc.stderr)}")
        return path

    rows, counts = [], {"ok": 0, "sum": 0, "rank": 0, "OFF": 0, "invalid": 0}
    print(f"{'plan':70s} {'params':>9s} {'optim':>9s} {'grads':>9s} "
          f"{'acts':>9s} {'compiled':>10s} verdict")
    for plan, mb in selected:
        world = 1
        for key in ("pp", "dp", "cp", "tp"):
            world *= degree(plan, key)
        mbs = GLOBAL_BATCH // (degree(plan, "dp") * mb)
        full = plan + (f",mb={mb}" if mb > 1 else "")
        lowered = os.path.join(tmp, "lowered.mlir")
        proc = run([shard_opt, model(GLOBAL_BATCH // mb),
                    f"--autoshard-train=plan={full} "
                    f"output={os.path.join(tmp, 'artifact.json')}",
                    "-o", lowered])
        row = {"plan": full}
        if proc.returncode != 0:
            row.update(verdict="invalid", why=first_error(proc.stderr))
        else:
            proc = run([shard_opt, lowered, "--dist-explain=format=json",
                        "-o", "/dev/null"])
            explain = json.loads(proc.stdout)
            proc = run([shard_opt, model(GLOBAL_BATCH),
                        f"--dist-auto-plan=cluster={CLUSTER} gpus={world} "
                        f"evaluate={plan},mbs={mbs} format=json",
                        "-o", "/dev/null"])
            report = json.loads(proc.stdout) if proc.returncode == 0 else {}
            if not report.get("plans"):
                row.update(verdict="OFF", why="the planner rejected it: " + (
                    str(report.get("rejected")) if report
                    else first_error(proc.stderr)))
            else:
                try:
                    pp_rank, rows_cmp = compare_plan(report["plans"][0],
                                                     explain)
                    totals = rank_totals(explain)
                except PlanMemoryError as e:
                    row.update(verdict="OFF", why=str(e))
                else:
                    diff = [p - c for _, p, c in rows_cmp]
                    heaviest = max(totals, key=totals.get)
                    verdict = ("ok" if all(abs(d) <= args.tolerance for d in diff)
                               else "sum" if abs(sum(diff)) <= args.tolerance
                               else "OFF")
                    if verdict != "OFF" and \
                            totals[heaviest] - totals[pp_rank] > args.tolerance:
                        verdict = "rank"
                    row.update(verdict=verdict, diff=[round(d) for d in diff],
                               compiled_total=sum(c for _, _, c in rows_cmp),
                               pp_rank=pp_rank, heaviest=heaviest,
                               ranks=len(totals))
        counts[row["verdict"]] += 1
        rows.append(row)
        if "diff" in row:
            d = row["diff"]
            where = (f" (pp rank {row['pp_rank']}; compiled heaviest "
                     f"{row['heaviest']})" if row["ranks"] > 1 else "")
            print(f"{full:70s} {d[0]:+9d} {d[1]:+9d} {d[2]:+9d} {d[3]:+9d} "
                  f"{row['compiled_total']:10d} {row['verdict']}{where}",
                  flush=True)
        else:
            print(f"{full:70s} {row['verdict']}: {row['why']}", flush=True)
    if args.json:
        # Whole or not at all: a temporary beside it, renamed onto it.
        tmp_json = f"{os.path.abspath(args.json)}.tmp-{os.getpid()}"
        with open(tmp_json, "w") as f:
            json.dump(rows, f, indent=1)
        os.replace(tmp_json, args.json)
    print(f"{counts['ok']} ok, {counts['sum']} sum, {counts['rank']} rank, "
          f"{counts['OFF']} OFF, "
          f"{counts['invalid']} invalid (of {len(rows)} plans; planner - "
          f"compiled, bytes, tolerance {args.tolerance} B per category)")
    failed = counts["OFF"] + counts["rank"] + (counts["sum"] if args.strict
                                               else 0)
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        # `run.py --list | head`: the reader left; no traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
