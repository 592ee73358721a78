#!/usr/bin/env python3
"""Planner vs runtime: predicted vs measured step time on this machine.

Issue 21, item 4. For every plan of PLANS (nanoGPT CPU and Mixtral tiny,
1-8 ranks, dp / tp / sp / ZeRO / pp schedules / recomputation / cp / ep):

* predicted: `shard-opt --dist-auto-plan="cluster=CLUSTER gpus=N
  evaluate=PLAN,mbs=M compilable=true format=json"` on the model built at
  the global batch (the step time of the plan's JSON entry; compilable:
  scored as the compiler builds it, e.g. a pipeline's gradient reduction in
  the stage's tail);
* measured: `scripts/train.sh --plan PLAN` (compiled as every run is, then
  `shard-run -n N`) for STEPS steps; the step time of step i is
  global batch x seq / tokens_per_s of metrics.jsonl, and the plan's time is
  the median over the steps after the first WARMUP.

Prints one row per plan (predicted, measured, error = predicted / measured
- 1) and the summary the issue asks for: the median and the worst |error|,
Spearman's rho of the predicted and measured times per model, and per
(model, ranks) group of at least two plans the measured time of the plan
the planner ranks first over the measured best. Goals (issue 21): median
|error| <= 10 %, rho >= 0.8, first choice within 5 % of the measured best.

Every rank of every run shares this machine's cores (8 ranks oversubscribe
2 cores), other jobs running at the same time slow some plans more than
others, and a cloud host's speed itself drifts (up to 1.6x within minutes
on this one). So the plans are measured in --rounds rounds (default 3),
the whole list each round, in alternating order (forward, then reversed:
a steady drift falls on every plan alike), and a plan's measured time is
the median of its rounds; the spread (slowest / fastest round) is
printed. Without --calibrate no knob is fitted here.

--calibrate predicts with shard-calibrate's output instead of --cluster,
measured in every round right before that round's plans of each rank count
(`shard-calibrate -n R` for the plans of R ranks: the figures of R ranks
sharing this machine's cores, not 8 ranks' figures scaled by 8 / R), and a
plan's prediction is the median of its rounds' predictions (self-
calibration). From 2 ranks the calibration's synchronisation terms
(host.sync_slowdown, host.sync_latency_us) are fitted to the reference
plans of autoshard.calibration (nanoGPT dp=R and dp=R/2,tp=2,sp=1,
trained right after it, dp=R before and after the other, the geometric
mean of the two kept): those rows are marked "(fit)" and left out of the median and
worst |error|. A plan's error is then paired by round: the median over
its rounds of that round's prediction over that round's measurement (the
same minutes of the host, whose speed moved 1.5-2x between rounds and
+-20 % between two runs of one job seconds apart); the unpaired error
(the median prediction over the median measurement) is printed beside.
A first choice's shortfall is paired by round the same way. With
--track-drift (the default) shard-calibrate -n R runs again after the
round's plans of R ranks (keeping the fitted synchronisation terms), and
each plan's prediction of the round is taken between the two calibrations'
predictions, geometrically, by when its run took place: the plans of 8
ranks take minutes, over which the host's speed moves as much as between
rounds.

--measured FILE takes the measured times from an earlier --json output
instead of running the plans (the predictions are made again): for
checking a change to the cost model against the same measurements.
With --calibrate, --json FILE also writes FILE's calibrations beside it
(FILE with .calibrations.json for .json: per rank count and round the
shard-calibrate output before and after the round's plans and the
reference steps the synchronisation terms were fitted to), and each row
says which calibration and weight each of its rounds used; --replay
(with --measured FILE) then predicts every round again from those
calibrations, fitting the synchronisation terms again with the current
planner, so a change to the cost model is checked against the same
minutes of the host as the run itself, in seconds and without a quiet
machine.

With --with-choice the plan the search chooses (compilable=true) for each
(model, ranks) group is measured too and is that group's first choice;
--check-choice F makes the run fail when a first choice measures more than
F (e.g. 0.05) over its group's best (scripts/auto_plan_check.sh --measure).

Usage: bench/planner_vs_runtime/run.py [--build build] [--steps 12]
       [--warmup 4] [--cluster configs/clusters/cpu-2core.json]
       [--only REGEX] [--ranks N] [--with-choice] [--check-choice F]
       [--bind-cores auto|none]
       [--rounds 3] [--calibrate [--no-track-drift]] [--json FILE]
       [--measured FILE [--replay]]
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
from autoshard import calibration  # noqa: E402
NANOGPT = os.path.join(ROOT, "..", "shared", "configs", "models",
                       "nanogpt-shakespeare-char-cpu.json")
MIXTRAL = os.path.join(ROOT, "configs", "models", "mixtral-tiny-cpu.json")
BATCH, SEQ = 16, 64

# (model, plan as --plan / dist-apply-plan takes it)
PLANS = [
    ("nanogpt", "dp=1"),
    ("nanogpt", "dp=1,mb=2"),
    ("nanogpt", "dp=2"),
    ("nanogpt", "dp=2,zero=1,recompute=full"),
    ("nanogpt", "dp=1,tp=2"),
    ("nanogpt", "dp=1,tp=2,sp=1"),
    ("nanogpt", "pp=2,dp=1,mb=4"),
    ("nanogpt", "dp=4"),
    ("nanogpt", "dp=2,tp=2,sp=1"),
    ("nanogpt", "dp=4,zero=2"),
    ("nanogpt", "pp=2,dp=2,mb=4,schedule=zb-h1"),
    ("nanogpt", "dp=2,cp=2,cp_layout=zigzag"),
    ("nanogpt", "dp=8"),
    ("nanogpt", "dp=8,zero=1"),
    ("nanogpt", "dp=4,tp=2,sp=1"),
    ("nanogpt", "pp=2,dp=4,zero=1,mb=4,schedule=zb-v,vpp=2"),
    ("nanogpt", "pp=2,dp=4,mb=4,schedule=interleaved,vpp=2"),
    ("nanogpt", "dp=4,cp=2,cp_layout=zigzag"),
    ("nanogpt", "dp=4,cp=2,cp_attention=ulysses"),
    ("nanogpt", "dp=8,recompute=selective"),
    ("mixtral", "dp=1"),
    ("mixtral", "dp=2,ep=2"),
    ("mixtral", "dp=1,tp=2"),
    ("mixtral", "dp=4,zero=1,ep=4"),
    ("mixtral", "dp=4,ep=2"),
    ("mixtral", "dp=8,zero=1,ep=4"),
    ("mixtral", "dp=4,cp=2,zero=1,ep=4,cp_attention=ulysses"),
]


def calibrations_path(rows_path):
    """Where --json ROWS writes the run's calibrations (--replay reads
    them): ROWS with `.calibrations` before its extension."""
    stem, ext = os.path.splitext(rows_path)
    return stem + ".calibrations" + (ext or ".json")


def write_json_atomically(path, value, indent=None):
    """Writes `value` as JSON to `path` whole or not at all (a file
    beside it, then renamed), readable as the umask allows; raises
    OSError."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),
                               prefix=".rows-", suffix=".json")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w") as f:
            json.dump(value, f, indent=indent)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def build_model(py, config, batch, out):
    subprocess.run([py, "-m", "autoshard.models", config, "--batch", str(batch),
                    "--seq", str(SEQ), "--vocab-multiple", "64", "-q", "-o", out],
                   check=True, env=dict(os.environ,
                                        PYTHONPATH=os.path.join(ROOT, "python")))


def predict(shard_opt, model_ir, cluster, plan):
    """(the planner's step time of ``plan``, "") or (None, why)."""
    try:
        return calibration.predict_step_s(
            shard_opt, model_ir, cluster, calibration.plan_ranks(plan), BATCH,
            plan), ""
    except calibration.CalibrationError as e:
        return None, str(e)


def measure(build, config, plan, steps, warmup, out, bind_cores):
    return calibration.measure_step_s(build, config, plan, BATCH, SEQ, steps,
                                      warmup, out, bind_cores)


DEFAULTS = {"pp": "1", "cp": "1", "tp": "1", "ep": "1", "etp": "1", "mb": "1",
            "vpp": "1", "zero": "0", "sp": "0", "recompute": "none",
            "schedule": "1f1b", "cp_attention": "ring"}


def canonical(plan):
    """The plan's keys that differ from their defaults, sorted."""
    items = dict(item.split("=") for item in plan.split(","))
    return ",".join(f"{k}={v}" for k, v in sorted(items.items())
                    if DEFAULTS.get(k) != v)


def chosen_plan(shard_opt, model_ir, cluster, world):
    """(the plan the search picks for `world` ranks (compilable=true), in
    the syntax of --plan, "") or (None, why)."""
    proc = calibration.run_child(
        [shard_opt, model_ir,
         f"--dist-auto-plan=cluster={cluster} gpus={world} batch={BATCH} "
         "compilable=true format=json", "-o", "/dev/null"])
    if proc.returncode != 0:
        return None, ("the search failed: "
                      + calibration.first_error(proc.stderr)[:300])
    try:
        plans = json.loads(proc.stdout)["plans"]
    except (ValueError, KeyError, TypeError):
        return None, "the search printed no JSON plan list"
    if not plans:
        return None, "no plan fits"
    return plans[0]["apply_plan"], ""


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.mean(ra), statistics.mean(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return num / den if den else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--cluster", default=os.path.join(ROOT, "configs", "clusters",
                                                      "cpu-2core.json"))
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=4)
    ap.add_argument("--only", default="", help="regex on 'model plan'")
    ap.add_argument("--rounds", type=int, default=3,
                    help="measure every plan this many times, the list in "
                         "alternating order; a plan's time is the median")
    ap.add_argument("--calibrate", action="store_true",
                    help="in every round, run shard-calibrate -n R before "
                         "the plans of R ranks and predict them with its "
                         "output instead of --cluster (median over rounds)")
    ap.add_argument("--track-drift", action=argparse.BooleanOptionalAction,
                    default=None,
                    help="with --calibrate, calibrate again after each "
                         "round's plans of R ranks and predict each plan "
                         "with the machine's speed at its run, between the "
                         "two calibrations (default on)")
    ap.add_argument("--json", default="", help="write the rows to this file")
    ap.add_argument("--measured", default="",
                    help="take the measured times from this earlier --json "
                         "output instead of running the plans")
    ap.add_argument("--replay", action="store_true",
                    help="with --measured FILE: predict every round again "
                         "from the calibrations the run recorded beside "
                         "FILE (FILE.calibrations.json), not from --cluster")
    ap.add_argument("--set", action="append", default=[], metavar="R:KEY=V",
                    help="with --replay: set cluster field KEY (dotted, e.g. "
                         "host.wakeup_latency_us) to the number V in the "
                         "recorded R-rank calibrations before predicting "
                         "(R: a rank count or '*'); repeatable. To try a "
                         "cost term offline")
    ap.add_argument("--bind-cores", choices=("auto", "none"), default=None,
                    help="shard-run's and shard-calibrate's --bind-cores "
                         "for every run and calibration (auto: ranks that "
                         "outnumber the cores are pinned to them; default "
                         "none)")
    ap.add_argument("--ranks", type=int, default=0,
                    help="only the plans of this many ranks")
    ap.add_argument("--with-choice", action="store_true",
                    help="also measure the plan the search chooses for each "
                         "(model, ranks) group; it is then the group's first "
                         "choice. With --replay: search again with the "
                         "recorded round-0 calibrations and check that "
                         "choice against the measured rows")
    ap.add_argument("--check-choice", type=float, default=None,
                    help="exit 1 when a group's first choice measures more "
                         "than this fraction slower than its measured best "
                         "(e.g. 0.05), or, with --with-choice, when a "
                         "group's choice has no measured time to check")
    args = ap.parse_args()
    calibration.exit_on_signals("run.py")
    if args.warmup < 0:
        sys.exit(f"--warmup must be at least 0, got {args.warmup}")
    if args.steps <= args.warmup:
        sys.exit(f"--steps {args.steps} must exceed --warmup {args.warmup}")
    if args.track_drift is not None and not args.calibrate:
        sys.exit(f"--{'' if args.track_drift else 'no-'}track-drift needs "
                 f"--calibrate (it chooses between that option's "
                 f"calibrations)")
    args.track_drift = args.track_drift is not False
    if args.replay and not args.measured:
        sys.exit("--replay needs --measured FILE (it predicts that run's "
                 "rounds again from the calibrations recorded beside FILE)")
    if args.replay and args.bind_cores is not None:
        sys.exit("--bind-cores applies to the runs and calibrations of a "
                 "run; a replay runs nothing (the recorded calibrations say "
                 "how theirs ran: host.pinned_cores)")
    args.bind_cores = args.bind_cores or "none"
    if args.replay and args.calibrate:
        sys.exit("--replay predicts from the recorded calibrations: it does "
                 "not take --calibrate")
    overrides = []  # (ranks or None, [keys], value, as given)
    for item in args.set:
        try:
            where, assignment = item.split(":", 1)
            key, value = assignment.split("=", 1)
            path = key.strip().split(".")
            if not all(path):
                raise ValueError
            overrides.append((None if where.strip() == "*"
                              else int(where), path, float(value), item))
        except ValueError:
            sys.exit(f"--set {item!r}: expected R:KEY=NUMBER, e.g. "
                     f"8:host.wakeup_latency_us=2000")
    if overrides and not args.replay:
        sys.exit("--set changes the recorded calibrations: it needs --replay")
    if args.check_choice is not None and not args.check_choice >= 0:
        sys.exit(f"--check-choice must be a fraction >= 0 (e.g. 0.05), got "
                 f"{args.check_choice}")
    # Read by every prediction unless --calibrate replaces it everywhere:
    # named once here, not as every plan's "skipped" note.
    if not args.replay and not (args.calibrate and (args.with_choice or
                                                     args.measured)):
        try:
            with open(args.cluster) as f:
                f.read(1)
        except OSError as e:
            sys.exit(f"--cluster {args.cluster}: cannot read it: {e.strerror}")
    if args.rounds < 1:
        sys.exit(f"--rounds must be at least 1, got {args.rounds}")
    # Checked before the runs (minutes), not when the rows are written.
    if args.json:
        json_dir = os.path.dirname(os.path.abspath(args.json))
        why = ("it is a folder" if os.path.isdir(args.json) else
               f"no folder {json_dir}" if not os.path.isdir(json_dir) else
               f"no write access to {json_dir}" if not os.access(
                   json_dir, os.W_OK | os.X_OK) else "")
        if why:
            sys.exit(f"--json {args.json}: cannot write the rows: {why}")
    if args.only:
        try:
            re.compile(args.only)
        except re.error as e:
            sys.exit(f"--only '{args.only}' is not a regular expression: {e}")
    earlier = {}
    if args.measured:
        try:
            with open(args.measured) as f:
                rows_in = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"--measured {args.measured}: cannot read an earlier "
                     f"--json output: {e}")
        if not isinstance(rows_in, list) or not all(
                isinstance(r, dict) and {"model", "plan", "measured_s"} <= r.keys()
                for r in rows_in):
            sys.exit(f"--measured {args.measured}: expected the list of rows "
                     f"that --json writes (objects with model, plan and "
                     f"measured_s), got {type(rows_in).__name__}"
                     + (f" of {len(rows_in)}" if isinstance(rows_in, list) else ""))
        def seconds(v):
            # json.load reads Infinity and NaN: an infinite time printed
            # as a -100 % error and a "nanx" spread.
            return (not isinstance(v, bool) and isinstance(v, (int, float))
                    and 0 < v < math.inf)
        for i, r in enumerate(rows_in):
            # A list as the plan was a TypeError traceback (the rows are
            # looked up by (model, plan)).
            for key in ("model", "plan"):
                if not isinstance(r[key], str):
                    sys.exit(f"--measured {args.measured}: row {i}: {key} "
                             f"must be a string, got {r[key]!r}")
            m = r["measured_s"]
            if m is not None and not seconds(m):
                sys.exit(f"--measured {args.measured}: row {i} ({r['model']} "
                         f"{r['plan']}): measured_s must be a positive number "
                         f"of seconds or null, got {m!r}")
            rounds = r.get("rounds_s")
            if m is not None and rounds is not None and not (
                    isinstance(rounds, list) and rounds and
                    all(seconds(v) for v in rounds)):
                sys.exit(f"--measured {args.measured}: row {i} ({r['model']} "
                         f"{r['plan']}): rounds_s must be a non-empty list of "
                         f"positive numbers of seconds, got {rounds!r}")
            # Two measurements of one plan: the later one was kept silently.
            first = next(j for j, e in enumerate(rows_in)
                         if (e["model"], e["plan"]) == (r["model"], r["plan"]))
            if first != i:
                sys.exit(f"--measured {args.measured}: rows {first} and {i} "
                         f"are both {r['model']} {r['plan']} (one row per "
                         f"plan, as --json writes them)")
        earlier = {(r["model"], r["plan"]): r for r in rows_in}
    recorded = {}  # "R/k" -> calibration R ranks, round k (see --replay)
    if args.replay:
        side = calibrations_path(args.measured)
        try:
            with open(side) as f:
                recorded = json.load(f)
        except OSError as e:
            sys.exit(f"--replay: cannot read {side}, the calibrations of "
                     f"--measured {args.measured} ({e.strerror}; --json with "
                     f"--calibrate writes it)")
        except ValueError as e:
            sys.exit(f"--replay: {side} is not JSON: {e}")
        if not isinstance(recorded, dict) or not all(
                isinstance(v, dict) and isinstance(v.get("before"), dict)
                for v in recorded.values()):
            sys.exit(f"--replay: {side}: expected an object of calibrations "
                     f"(\"R/k\": {{\"before\": cluster, ...}}), as --json "
                     f"writes it")
        for (model, plan), r in earlier.items():
            used = r.get("replay")
            if r.get("measured_s") is None:
                continue
            if not isinstance(used, list) or len(used) != len(
                    r.get("rounds_s") or []) or not all(
                    isinstance(u, dict) and u.get("calibration") in recorded
                    for u in used):
                sys.exit(f"--replay: {args.measured}: row {model} {plan} "
                         f"does not name a recorded calibration for each of "
                         f"its rounds (its 'replay' list)")
    build = os.path.abspath(args.build)
    shard_opt = os.path.join(build, "bin", "shard-opt")
    py = os.path.join(build, "venv", "bin", "python")
    for tool in (shard_opt, py, os.path.join(build, "bin", "shard-run")):
        if not os.access(tool, os.X_OK):
            sys.exit(f"{tool} not found: build first (scripts/setup.sh)")
    configs = {"nanogpt": NANOGPT, "mixtral": MIXTRAL}
    world_of = calibration.plan_ranks
    plans = [(m, p) for m, p in PLANS
             if (not args.only or re.search(args.only, f"{m} {p}"))
             and (not args.ranks or world_of(p) == args.ranks)]
    if args.replay:
        # Only the rank counts the run calibrated (a run of --ranks 8 has
        # nothing to predict the others with).
        recorded_worlds = {int(k.split("/")[0]) for k in recorded
                           if k.split("/")[0].isdigit()}
        plans = [(m, p) for m, p in plans if world_of(p) in recorded_worlds]
        # The earlier run's other measured rows too (the search's choices
        # of a --with-choice run), so that a change to the cost model is
        # checked against the plans the search picked.
        listed = {(m, canonical(p)) for m, p in plans}
        for (m, p), r in earlier.items():
            if r.get("measured_s") is None or (m, canonical(p)) in listed \
                    or (args.only and not re.search(args.only, f"{m} {p}")) \
                    or (args.ranks and world_of(p) != args.ranks):
                continue
            if m not in configs:
                sys.exit(f"--measured {args.measured}: row {m} {p}: no "
                         f"model {m!r} in this benchmark "
                         f"({', '.join(configs)})")
            plans.append((m, p))
            listed.add((m, canonical(p)))
    if not plans:
        sys.exit(f"no plan of the list matches --only '{args.only}'"
                 + (f" and --ranks {args.ranks}" if args.ranks else "")
                 + " (the list: PLANS in this file)")
    rows = []
    choices = {}
    no_choice = {}  # (model, ranks) -> why the search chose nothing
    chosen_as = {}  # (model, ranks) -> the search's choice as it printed it
    with tempfile.TemporaryDirectory(prefix="planner-vs-runtime-") as tmp:
        irs = {}
        for model, config in configs.items():
            irs[model] = os.path.join(tmp, model + ".mlir")
            build_model(py, config, BATCH, irs[model])
        def probe(world, out):
            """shard-calibrate -n world into the file out; returns the
            cluster it wrote."""
            proc = calibration.run_child(
                [os.path.join(build, "bin", "shard-calibrate"), "-n", str(world),
                 "--bind-cores", args.bind_cores,
                 "--name", f"this machine, {world} ranks, calibrated by run.py "
                 f"--calibrate", "--out", out])
            if proc.returncode != 0:
                sys.exit(f"shard-calibrate -n {world} failed: "
                         f"{calibration.first_error(proc.stderr or proc.stdout)}")
            with open(out) as f:
                return json.load(f)

        def recalibrate(world, round_index, before):
            """shard-calibrate -n world again after the round's plans of
            world ranks, with the synchronisation terms of the calibration
            `before` (fitted to reference runs before the plans): the
            machine's speed at the end of the plans; returns the file."""
            out = os.path.join(tmp, f"cluster-{world}-{round_index}-after.json")
            after = probe(world, out)
            recorded.setdefault(f"{world}/{round_index}", {})["after"] = after
            if world < 2:
                return out
            try:
                with open(before) as f:
                    slowdown, latency_us = calibration.sync_terms(
                        json.load(f), world, before)
                after = calibration.with_sync_terms(after, world, slowdown,
                                                    latency_us)
            except calibration.CalibrationError as e:
                sys.exit(f"the {world}-rank calibration after round "
                         f"{round_index}: {e}")
            with open(out, "w") as f:
                json.dump(after, f)
            return out

        def calibrate(world, round_index):
            """shard-calibrate -n world into tmp and, from 2 ranks, the
            synchronisation terms fitted to the reference plans trained
            right after it (autoshard.calibration, as calibrate_cpu.sh
            does); returns the file."""
            out = os.path.join(tmp, f"cluster-{world}-{round_index}.json")
            cluster = probe(world, out)
            record_as = recorded.setdefault(f"{world}/{round_index}", {})
            record_as["before"] = cluster
            if world < 2:
                return out
            try:
                measured = calibration.measure_references(
                    build, NANOGPT, world, BATCH, SEQ, args.steps, args.warmup,
                    os.path.join(tmp, "run"), args.bind_cores)
                fitted, record = calibration.fit_host_sync(
                    shard_opt, irs["nanogpt"], cluster, world, BATCH, measured)
            except calibration.CalibrationError as e:
                sys.exit(f"fitting the {world}-rank calibration: {e}")
            record_as["references"] = measured
            fits.setdefault(world, []).append(fitted["host"])
            if "note" in record:
                notes.append(f"the {world}-rank fit, calibration "
                             f"{round_index}: {record['note']}")
            with open(out, "w") as f:
                json.dump(fitted, f)
            return out
        fits = {}  # rank count -> each calibration's fitted host fields
        notes = []  # the fits' notes (a knob clamped at 0)
        calibrated = {}  # rank count -> the first round's calibration
        if args.calibrate and (args.with_choice or args.measured):
            for world in sorted({world_of(p) for _, p in plans}):
                calibrated[world] = calibrate(world, 0)
        def cluster_for(world):
            return calibrated.get(world, args.cluster)
        if args.with_choice and not args.replay:
            for model, world in sorted({(m, world_of(p)) for m, p in plans}):
                choice, why = chosen_plan(shard_opt, irs[model],
                                          cluster_for(world), world)
                if choice is None:
                    no_choice[(model, world)] = why
                    continue
                choices[(model, world)] = canonical(choice)
                chosen_as[(model, world)] = choice
                if all(canonical(p) != canonical(choice)
                       for m, p in plans if m == model):
                    plans.append((model, choice))
        source = (f"measured times from {args.measured}" if args.measured else
                  f"{args.steps} steps (median after {args.warmup}), "
                  f"{args.rounds} round{'s' if args.rounds != 1 else ''}")
        cluster_name = ("shard-calibrate -n R before each round's plans of R ranks (--calibrate)" if args.calibrate
                        else f"the calibrations recorded in {calibrations_path(args.measured)} (--replay)"
                        if args.replay
                        else os.path.relpath(args.cluster, ROOT)
                        if os.path.abspath(args.cluster).startswith(ROOT + os.sep)
                        else os.path.abspath(args.cluster))
        if args.bind_cores == "auto":
            cluster_name += " (ranks pinned: --bind-cores auto)"
        print(f"cluster {cluster_name}, global batch {BATCH}, "
              f"seq {SEQ}, {source}; "
              f"load average {os.getloadavg()[0]:.1f} at the start, "
              f"{time.strftime('%H:%M:%S', time.gmtime())} UTC", flush=True)
        for model, plan in plans:
            pred, why = predict(shard_opt, irs[model],
                                cluster_for(world_of(plan)), plan)
            rows.append({"model": model, "ranks": world_of(plan), "plan": plan,
                         "predicted_s": pred, "measured_s": None,
                         "rounds_s": [], "predicted_rounds_s": [],
                         "predicted_before_after_s": [], "replay": [],
                         "note": why})
        if args.measured:
            for row in rows:
                old = earlier.get((row["model"], row["plan"]))
                if old is None or old.get("measured_s") is None:
                    row["note"] = row["note"] or f"not measured in {args.measured}"
                    continue
                row["measured_s"] = old["measured_s"]
                row["rounds_s"] = old.get("rounds_s", [old["measured_s"]])
        else:
            # With --calibrate the rounds go by rank count (a calibration
            # before each count's plans), in alternating order as the plans.
            worlds = sorted({row["ranks"] for row in rows})
            for k in range(args.rounds):
                order = rows if k % 2 == 0 else rows[::-1]
                if args.calibrate:
                    order = [row for world in (worlds if k % 2 == 0 else
                                               worlds[::-1])
                             for row in order if row["ranks"] == world]
                # With --calibrate: per rank count, the calibration
                # before its plans, their runs (and when each ran), and
                # with --track-drift the calibration after them.
                pending = []  # (row, prediction before, run midpoint)
                span = {}  # rank count -> (calibration, start of the runs)

                def close(world):
                    """Ends the round's plans of `world` ranks: each one's
                    prediction of this round, the machine's speed at its
                    run taken between the calibrations before and after
                    the plans (geometric, by when it ran)."""
                    before, start = span.pop(world)
                    rows_w = [p for p in pending if p[0]["ranks"] == world]
                    pending[:] = [p for p in pending if p[0]["ranks"] != world]
                    end = time.time()
                    after = (recalibrate(world, k + 1, before)
                             if args.track_drift and rows_w else None)
                    for row, pred, mid in rows_w:
                        weight = None
                        if after is not None:
                            late, why = predict(shard_opt, irs[row["model"]],
                                                after, row["plan"])
                            if late is not None:
                                w = min(1.0, max(0.0, (mid - start) /
                                                 max(end - start, 1e-9)))
                                row["predicted_before_after_s"].append(
                                    [pred, late])
                                pred = pred ** (1 - w) * late ** w
                                weight = w
                        row["predicted_rounds_s"].append(pred)
                        row["replay"].append({"calibration": f"{world}/{k + 1}",
                                              "weight": weight})

                for row in order:
                    if row["predicted_s"] is None or (k and not row["rounds_s"]):
                        continue
                    world = row["ranks"]
                    if args.calibrate:
                        for other in [w for w in span if w != world]:
                            close(other)
                        if world not in span:
                            span[world] = (calibrate(world, k + 1), time.time())
                        pred, why = predict(shard_opt, irs[row["model"]],
                                            span[world][0], row["plan"])
                        if pred is None:
                            row["note"] = why
                            row["rounds_s"] = []
                            continue
                    started = time.time()
                    meas, why = measure(build, configs[row["model"]], row["plan"],
                                        args.steps, args.warmup,
                                        os.path.join(tmp, "run"),
                                        args.bind_cores)
                    if meas is None:
                        row["note"] = why
                        row["rounds_s"] = []
                        continue
                    row["rounds_s"].append(meas)
                    if args.calibrate:
                        pending.append((row, pred, (started + time.time()) / 2))
                for world in list(span):
                    close(world)
                print(f"round {k + 1} of {args.rounds} done, "
                      f"{time.strftime('%H:%M:%S', time.gmtime())} UTC", flush=True)
            for row in rows:
                if row["rounds_s"]:
                    row["measured_s"] = statistics.median(row["rounds_s"])
                if row["rounds_s"] and row["predicted_rounds_s"]:
                    row["predicted_s"] = statistics.median(
                        row["predicted_rounds_s"])
        if args.replay:
            replay_files = {}  # "R/k" -> (fitted file, file after or None)

            def replayed(key):
                """The recorded calibration `key` as the run used it: its
                synchronisation terms fitted again (this planner) to its
                reference steps, and the calibration after the plans with
                the same terms; the two files."""
                if key in replay_files:
                    return replay_files[key]
                world = int(key.split("/")[0])
                rec = recorded[key]
                cluster = rec["before"]
                if world >= 2:
                    try:
                        cluster, record = calibration.fit_host_sync(
                            shard_opt, irs["nanogpt"], cluster, world, BATCH,
                            rec.get("references"))
                    except calibration.CalibrationError as e:
                        sys.exit(f"--replay: the {world}-rank calibration "
                                 f"{key}: {e}")
                    fits.setdefault(world, []).append(dict(cluster["host"]))
                    if "note" in record:
                        notes.append(f"the {world}-rank fit, calibration "
                                     f"{key}: {record['note']}")
                for ranks_at, path, value, item in overrides:
                    if ranks_at not in (None, world):
                        continue
                    for c in (cluster,) + ((rec["after"],) if isinstance(
                            rec.get("after"), dict) else ()):
                        node = c
                        for depth, part in enumerate(path[:-1]):
                            node = node.setdefault(part, {})
                            if not isinstance(node, dict):
                                sys.exit(f"--set {item!r}: "
                                         f"{'.'.join(path[:depth + 1])} is "
                                         f"not an object in the {key} "
                                         f"calibration")
                        node[path[-1]] = value
                name = key.replace("/", "-")
                before = os.path.join(tmp, f"replay-{name}.json")
                with open(before, "w") as f:
                    json.dump(cluster, f)
                after = None
                if isinstance(rec.get("after"), dict):
                    later = rec["after"]
                    if world >= 2:
                        try:
                            later = calibration.with_sync_terms(
                                later, world, *calibration.sync_terms(
                                    cluster, world, before))
                        except calibration.CalibrationError as e:
                            sys.exit(f"--replay: the {world}-rank "
                                     f"calibration {key} after its plans: "
                                     f"{e}")
                    after = os.path.join(tmp, f"replay-{name}-after.json")
                    with open(after, "w") as f:
                        json.dump(later, f)
                replay_files[key] = (before, after)
                return replay_files[key]

            worlds = sorted({int(k.split("/")[0]) for k in recorded})
            for ranks_at, _, _, item in overrides:
                if ranks_at is not None and ranks_at not in worlds:
                    sys.exit(f"--set {item!r}: {args.measured} recorded no "
                             f"calibration of {ranks_at} ranks (it has "
                             f"{', '.join(map(str, worlds))})")
            for row in rows:
                old = earlier.get((row["model"], row["plan"]))
                if row["measured_s"] is None or old is None:
                    continue
                for used in old["replay"]:
                    before, after = replayed(used["calibration"])
                    pred, why = predict(shard_opt, irs[row["model"]], before,
                                        row["plan"])
                    if pred is None and any(
                            r in (None, row["ranks"])
                            for r, _, _, _ in overrides):
                        # Once, not as every row's note: the change broke
                        # the calibration, not the plan.
                        sys.exit(f"--replay --set: the {used['calibration']} "
                                 f"calibration with --set no longer scores "
                                 f"{row['model']} {row['plan']}: {why}")
                    if pred is None:
                        row["note"], row["measured_s"] = why, None
                        break
                    w = used.get("weight")
                    if after is not None and isinstance(w, (int, float)):
                        late, _ = predict(shard_opt, irs[row["model"]], after,
                                          row["plan"])
                        if late is not None:
                            row["predicted_before_after_s"].append([pred, late])
                            pred = pred ** (1 - w) * late ** w
                    row["predicted_rounds_s"].append(pred)
                    row["replay"].append(used)
                if row["measured_s"] is not None and row["predicted_rounds_s"]:
                    row["predicted_s"] = statistics.median(
                        row["predicted_rounds_s"])
            # --with-choice: the search again, on the calibration the run
            # chose with (round 0's, refitted), so a change to the cost
            # model shows whether the search would now pick a measured
            # plan, and how that plan measured.
            if args.with_choice:
                for model, world in sorted({(r["model"], r["ranks"])
                                            for r in rows}):
                    if f"{world}/0" not in recorded:
                        no_choice[(model, world)] = (
                            f"{calibrations_path(args.measured)} has no "
                            f"calibration {world}/0 to search with (a run "
                            f"with --with-choice records it)")
                        continue
                    choice, why = chosen_plan(shard_opt, irs[model],
                                              replayed(f"{world}/0")[0], world)
                    if choice is None:
                        no_choice[(model, world)] = why
                        continue
                    choices[(model, world)] = canonical(choice)
                    chosen_as[(model, world)] = choice
        # With --measured too: the calibration of round 0 was fitted here.
        for world, hosts in sorted(fits.items()):
            print(f"fitted at {world} ranks: sync_slowdown " + ", ".join(
                f"{h['sync_slowdown']:g}" for h in hosts)
                  + "; sync_latency_us " + ", ".join(
                f"{h['sync_latency_us']:g}" for h in hosts))
        for note in notes:
            print(f"note: {note}")
        print(f"{'model':8s} {'ranks':>5s} {'plan':48s} {'pred. ms':>9s} "
              f"{'meas. ms':>9s} {'error':>7s} {'spread':>7s}")
        for row in rows:
            model, world, plan = row["model"], row["ranks"], row["plan"]
            pred, meas = row["predicted_s"], row["measured_s"]
            if pred is None or meas is None:
                print(f"{model:8s} {world:5d} {plan:48s} skipped: {row['note']}")
                continue
            # Paired by round where each round has its own calibration: the
            # prediction and the measurement of the same minutes, the
            # median of the rounds' ratios.
            pairs = list(zip(row["predicted_rounds_s"], row["rounds_s"]))
            row["error"] = (statistics.median(p / m for p, m in pairs) - 1
                            if pairs else pred / meas - 1)
            # A reference plan's measured step fixed the fitted knobs of
            # its rounds' calibrations: not held out.
            row["fit"] = bool((args.calibrate or args.replay)
                              and model == "nanogpt"
                              and world >= 2 and canonical(plan) in {
                                  canonical(p) for p in
                                  calibration.reference_plans(world)})
            spread = max(row["rounds_s"]) / min(row["rounds_s"])
            print(f"{model:8s} {world:5d} {plan:48s} {1e3 * pred:9.1f} "
                  f"{1e3 * meas:9.1f} {100 * row['error']:+6.1f}% {spread:6.2f}x"
                  + (" (fit)" if row["fit"] else ""))
    print(f"load average {os.getloadavg()[0]:.1f} at the end, "
          f"{time.strftime('%H:%M:%S', time.gmtime())} UTC")
    done = [r for r in rows if "error" in r]
    if not done:
        sys.exit("no plan was both predicted and measured")
    held = [r for r in done if not r["fit"]] or done
    errs = [abs(r["error"]) for r in held]
    worst = max(held, key=lambda r: abs(r["error"]))
    fits = len(done) - len(held)
    print(f"\nplans: {len(done)} of {len(rows)}"
          + (f", {len(held)} held out ({fits} fixed the fitted "
             f"synchronisation terms)" if fits else "")
          + f"; median |error| {100 * statistics.median(errs):.1f}% (goal "
          f"<= 10%), worst {100 * abs(worst['error']):.1f}% "
          f"({worst['model']} {worst['plan']})")
    if fits:
        print(f"all {len(done)} plans: median |error| "
              f"{100 * statistics.median(abs(r['error']) for r in done):.1f}%")
    if args.calibrate or args.replay:
        medians = [abs(r["predicted_s"] / r["measured_s"] - 1) for r in held]
        print(f"unpaired (the median prediction over the median measurement): "
              f"median |error| {100 * statistics.median(medians):.1f}%, "
              f"worst {100 * max(medians):.1f}%")
    for model in configs:
        sel = [r for r in done if r["model"] == model]
        if len(sel) >= 3:
            rho = spearman([r["predicted_s"] for r in sel],
                           [r["measured_s"] for r in sel])
            print(f"Spearman rho {model}: {rho:.2f} over {len(sel)} plans (goal >= 0.8)")
    if len(done) >= 3:
        rho_all = spearman([r["predicted_s"] for r in done],
                           [r["measured_s"] for r in done])
        print(f"Spearman rho all plans: {rho_all:.2f}")
    else:
        # Two plans' rho is +-1 whatever the error, one plan's undefined
        # (it was printed as "nan").
        print(f"Spearman rho: not computed for {len(done)} plan"
              f"{'s' if len(done) != 1 else ''} (it needs 3 or more)")
    shortfalls = []
    # With --with-choice: groups whose search choice has no measured time
    # (the search failed, or the choice's run did); the best-predicted plan
    # of the list stood in for it silently, also for --check-choice.
    unchecked = []
    for model in configs:
        for world in sorted({r["ranks"] for r in rows if r["model"] == model}):
            group = [r for r in done if r["model"] == model and r["ranks"] == world]
            if len(group) < 2:
                if (model, world) in choices or (model, world) in no_choice:
                    unchecked.append(f"{model} {world} ranks: {len(group)} of "
                                     f"its plans measured, none to compare "
                                     f"the choice with")
                continue
            first = min(group, key=lambda r: r["predicted_s"])
            # Without --with-choice (and in a replay) the list's
            # best-predicted plan is the group's first choice; say so.
            label = "first choice"
            if (model, world) not in choices and \
                    (model, world) not in no_choice:
                label = "first choice (best predicted of the list)"
            why = no_choice.get((model, world))
            if (model, world) in choices:
                choice = choices[(model, world)]
                chosen = next((r for r in group
                               if canonical(r["plan"]) == choice), None)
                if chosen is None:
                    row = next((r for r in rows if r["model"] == model and
                                canonical(r["plan"]) == choice), {})
                    why = (f"the search's choice {chosen_as[(model, world)]} "
                           f"has no measured time"
                           f" ({row.get('note') or 'not measured'})")
                first = chosen or first
            if why:
                unchecked.append(f"{model} {world} ranks: {why}")
                print(f"first choice {model} {world} ranks: {why}; the plan "
                      f"predicted fastest of the list stands in")
            best = min(group, key=lambda r: r["measured_s"])
            # Paired by round (the two measured in the same minutes), the
            # median of the rounds' ratios.
            short = statistics.median(
                f / b for f, b in zip(first["rounds_s"], best["rounds_s"])) - 1
            shortfalls.append(short)
            print(f"{label} {model} {world} ranks: {first['plan']} measures "
                  f"{100 * short:+.1f}% over the measured best {best['plan']} "
                  f"(goal <= 5%)")
    if shortfalls:
        print(f"first choice over measured best: median "
              f"{100 * statistics.median(shortfalls):+.1f}%, worst "
              f"{100 * max(shortfalls):+.1f}% over {len(shortfalls)} "
              f"group{'' if len(shortfalls) == 1 else 's'}")
    if args.json:
        try:
            write_json_atomically(args.json, rows, indent=1)
            if args.calibrate and recorded:
                write_json_atomically(calibrations_path(args.json), recorded)
        except OSError as e:
            sys.exit(f"--json {args.json}: cannot write the rows: {e}")
    if args.check_choice is not None and unchecked:
        sys.exit("cannot check the search's first choice of "
                 + "; ".join(unchecked))
    if args.check_choice is not None and shortfalls and \
            max(shortfalls) > args.check_choice:
        sys.exit(f"a first choice measures {100 * max(shortfalls):.1f}% over "
                 f"its group's measured best (allowed "
                 f"{100 * args.check_choice:.1f}%)")


if __name__ == "__main__":
    main()
