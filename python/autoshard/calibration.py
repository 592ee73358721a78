"""Fits the planner's synchronisation terms to measured training steps.

``shard-calibrate -n R`` times every kernel and collective with the R ranks
running it at once, all of them ready. A real training step of R ranks
that time-share a node's cores runs slower than the sum of those: the
scheduler runs the ranks in turns, so a rank that reaches a collective
waits for peers it has not run yet, and the ranks' working sets evict each
other at every switch. With 8 ranks on 2 cores, data parallelism (5
collectives per step) measured about 35 % above the kernels' and
collectives' sum, and tensor parallelism with SP (50 per step) a further
0.25 ms or so per collective; the calibration's synchronisation sweeps
gave 0.04-0.1.

This module fits two knobs of the cluster description to two reference
steps measured with ``shard-run`` right after the calibration
(reference_plans: ``dp=R`` and ``dp=R/2,tp=2,sp=1`` of the model):
``host.sync_slowdown`` (every kernel of a job of more than one rank takes
``1 +`` this of its time; kernelTime) and ``host.sync_latency_us`` (added to
every collective and send/receive; collectiveTime). The planner's step is
affine in both, so three evaluations per plan give the fit (least squares,
both non-negative) and one more checks it. Every other plan is then
predicted with the fitted values (held out: bench/planner_vs_runtime
reports the reference rows apart). The calibration's own sweep value is
kept in ``measured.sync_fit``.

Usage::

    python -m autoshard.calibration --shard-opt build/bin/shard-opt \\
        --model model.mlir --cluster cluster.json --ranks 8 --batch 16 \\
        --measured dp=8=0.0515 --measured dp=4,tp=2,sp=1=0.061 [--out F]
    # or measure the reference plans now (scripts/train.sh, 30 steps each):
    python -m autoshard.calibration ... --train nanogpt-config.json

Errors (``CalibrationError``): a failing ``shard-opt`` (its first error
line), a cluster file that is not a JSON object, a non-positive step time,
fewer than 2 ranks (a one-rank job has no synchronisation), none or more
than two plans, and a fit above the planner's bounds. Steps the
non-negative knobs cannot reach (faster than the kernels' sum) are fitted
as close as they allow and said in the record's ``note``.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

# lib/Planner: kMaxSyncSlowdown (include/autoshard/Planner/Cluster.h).
MAX_SYNC_SLOWDOWN = 10.0
MAX_SYNC_LATENCY_US = 1e5  # kMaxSyncLatencyUs


class CalibrationError(Exception):
    """A fit that cannot be made; the message names the input and value."""


def predict_step_s(shard_opt, model_ir, cluster_path, ranks, batch, plan):
    """The planner's step time in seconds for ``plan`` (``--plan`` syntax
    without ``mb``) of the model ``model_ir`` (built at the global ``batch``)
    on ``ranks`` ranks of the cluster file ``cluster_path``, scored as the
    compiler builds it (``compilable=true``)."""
    dp = 1
    for item in plan.split(","):
        key, _, value = item.partition("=")
        if key == "dp":
            dp = int(value)
    proc = subprocess.run(
        [shard_opt, model_ir,
         f"--dist-auto-plan=cluster={cluster_path} gpus={ranks} batch={batch} "
         f"evaluate={plan},mbs={batch // dp} compilable=true format=json",
         "-o", os.devnull], capture_output=True, text=True)
    if proc.returncode != 0:
        raise CalibrationError(f"shard-opt could not score {plan} on "
                               f"{cluster_path}: "
                               f"{_first_error(proc.stderr)[:400]}")
    plans = json.loads(proc.stdout)["plans"]
    if not plans:
        raise CalibrationError(f"the planner rejected {plan} on {ranks} ranks "
                               f"of {cluster_path}")
    return plans[0]["step_s"]


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


def _first_error(text):
    lines = text.strip().splitlines() or ["(no output)"]
    return next((l for l in lines if "error:" in l), lines[-1])


def plan_ranks(plan):
    """The rank count of ``plan`` (``--plan`` syntax): pp x dp x cp x tp."""
    d = {"pp": 1, "dp": 1, "cp": 1, "tp": 1}
    for item in plan.split(","):
        key, _, value = item.partition("=")
        if key in d:
            d[key] = int(value)
    return d["pp"] * d["dp"] * d["cp"] * d["tp"]


def measure_step_s(build, config, plan, batch, seq, steps, warmup, out):
    """Trains ``plan`` of the model ``config`` (a JSON config) with
    ``scripts/train.sh`` (built in ``build``; results in the folder
    ``out``) for ``steps`` steps at the global ``batch`` and ``seq``, and
    returns ``(seconds, "")``: the median step time after the first
    ``warmup`` steps (global batch x seq / metrics.jsonl's tokens_per_s),
    or ``(None, why)`` when the run failed or timed no step."""
    cmd = [os.path.join(ROOT, "scripts", "train.sh"), "--config", config,
           "--plan", plan, "-n", str(plan_ranks(plan)), "--batch", str(batch),
           "--seq", str(seq), "--steps", str(steps), "--eval-interval", "0",
           "--eval-iters", "1", "--sample", "0", "--out", out]
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          env=dict(os.environ, BUILD_DIR=build))
    if proc.returncode != 0:
        return None, _first_error(proc.stderr or proc.stdout)
    times = []
    with open(os.path.join(out, "metrics.jsonl")) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("tokens_per_s"):
                times.append(batch * seq / rec["tokens_per_s"])
    times = times[warmup:]
    if not times:
        return None, "no timed steps in metrics.jsonl"
    return statistics.median(times), ""


def measure_references(build, config, ranks, batch, seq, steps, warmup, out):
    """The measured step of each of reference_plans(ranks), seconds: dp=R
    before and after the others, its time the geometric mean of the two
    (the host's speed drifts within minutes). Raises CalibrationError when
    a run fails."""
    def one(plan):
        t, why = measure_step_s(build, config, plan, batch, seq, steps,
                                warmup, out)
        if t is None:
            raise CalibrationError(f"the reference run of {plan} on {ranks} "
                                   f"ranks failed: {why}")
        return t
    first, *others = reference_plans(ranks)
    before = one(first)
    measured = {p: one(p) for p in others}
    return {first: (before * one(first)) ** 0.5, **measured}


def reference_plans(ranks):
    """The reference plans of ``ranks`` ranks the fit measures, in
    ``--plan`` syntax: plain data parallelism (few collectives: it fixes
    the slowdown) and, from 2 ranks, tensor parallelism of 2 with sequence
    parallelism over the rest (a collective or two per layer and pass: it
    fixes the latency per collective)."""
    plans = [f"dp={ranks}"]
    if ranks >= 2:
        plans.append(f"dp={ranks // 2},tp=2,sp=1")
    return plans


def _host_of(cluster, ranks):
    """The ``host`` object the planner reads for a job of ``ranks`` ranks
    (created where missing): ``by_ranks_per_node.<ranks>.host`` where the
    file has that profile, else the top level's."""
    profile = cluster.get("by_ranks_per_node", {}).get(str(ranks))
    return (profile if isinstance(profile, dict) else cluster).setdefault(
        "host", {})


def _with_host(cluster, ranks, slowdown, latency_us):
    """A copy of ``cluster`` with the knobs set where the planner reads them
    for a job of ``ranks`` ranks: the profile ``by_ranks_per_node.<ranks>``
    where the file has one, else the top level."""
    fitted = json.loads(json.dumps(cluster))
    host = _host_of(fitted, ranks)
    host["sync_slowdown"] = slowdown
    host["sync_latency_us"] = latency_us
    return fitted


def _two_significant(x):
    return float(f"{x:.2g}")


def fit_host_sync(shard_opt, model_ir, cluster, ranks, batch, measured):
    """Returns ``(fitted cluster dict, record)``: ``cluster`` (a parsed
    cluster file, not modified) with ``host.sync_slowdown`` (fraction) and
    ``host.sync_latency_us`` set so that the planner predicts the measured
    step times ``measured`` ({plan: seconds}, the plans of
    reference_plans(ranks) or any one or two plans of ``ranks`` ranks), and
    the record written under ``measured.sync_fit`` (each plan's measured and
    predicted step, the sweeps' slowdown it replaced, a note when a value
    was clamped at 0). Both knobs are non-negative: a step below the
    kernels' sum fits them as 0 and says so. One plan fits the slowdown
    alone. Raises CalibrationError (see the module's doc)."""
    if not isinstance(cluster, dict):
        raise CalibrationError(f"the cluster description must be a JSON "
                               f"object, got {type(cluster).__name__}")
    if not isinstance(ranks, int) or isinstance(ranks, bool) or ranks < 2:
        raise CalibrationError(f"the synchronisation terms are fitted for "
                               f"2 or more ranks, got {ranks!r}")
    if not isinstance(measured, dict) or not 1 <= len(measured) <= 2:
        raise CalibrationError(f"the fit needs the measured step of one or "
                               f"two plans, got {measured!r}")
    for plan, t in measured.items():
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0:
            raise CalibrationError(f"the measured step time of {plan} must "
                                   f"be a positive number of seconds, got "
                                   f"{t!r}")
    plans = list(measured)
    with tempfile.TemporaryDirectory(prefix="autoshard-fit-") as tmp:
        def predict(plan, slowdown, latency_us):
            path = os.path.join(tmp, "cluster.json")
            with open(path, "w") as f:
                json.dump(_with_host(cluster, ranks, slowdown, latency_us), f)
            return predict_step_s(shard_opt, model_ir, path, ranks, batch, plan)
        # The step is affine in both knobs: base + slowdown * a + latency * b.
        rows = []
        for plan in plans:
            base = predict(plan, 0.0, 0.0)
            rows.append((base, predict(plan, 1.0, 0.0) - base,
                         (predict(plan, 0.0, 1000.0) - base) / 1000.0,
                         measured[plan]))
        for plan, (base, a, b, _) in zip(plans, rows):
            if not a > 0:
                raise CalibrationError(
                    f"the predicted step of {plan} does not grow with "
                    f"host.sync_slowdown ({base:.6g} s at 0): nothing to fit")

        def residual(sl, lat):
            return sum((base + sl * a + lat * b - t) ** 2
                       for base, a, b, t in rows)
        candidates = []
        if len(rows) == 2:
            (b0, a0, l0, t0), (b1, a1, l1, t1) = rows
            det = a0 * l1 - a1 * l0
            if det != 0:
                sl = ((t0 - b0) * l1 - (t1 - b1) * l0) / det
                lat = (a0 * (t1 - b1) - a1 * (t0 - b0)) / det
                if sl >= 0 and lat >= 0:
                    candidates.append((sl, lat))
            # The latency alone (least squares), where a plan has
            # collectives to carry it.
            den = sum(b * b for _, _, b, _ in rows)
            if den > 0:
                lat = sum(b * (t - base) for base, _, b, t in rows) / den
                if lat >= 0:
                    candidates.append((0.0, lat))
        # The slowdown alone (least squares).
        sl = (sum(a * (t - base) for base, a, _, t in rows) /
              sum(a * a for _, a, _, _ in rows))
        if sl >= 0:
            candidates.append((sl, 0.0))
        candidates.append((0.0, 0.0))
        slowdown, latency_us = min(candidates, key=lambda c: residual(*c))
        if slowdown > MAX_SYNC_SLOWDOWN or latency_us > MAX_SYNC_LATENCY_US:
            raise CalibrationError(
                f"the measured steps {measured} need a synchronisation "
                f"slowdown of {slowdown:.3g} and {latency_us:.3g} us per "
                f"collective, above the planner's bounds "
                f"({MAX_SYNC_SLOWDOWN:g}, {MAX_SYNC_LATENCY_US:g} us): a "
                f"broken measurement?")
        slowdown = _two_significant(slowdown)
        latency_us = _two_significant(latency_us)
        predicted = {plan: predict(plan, slowdown, latency_us)
                     for plan in plans}
    fitted = _with_host(cluster, ranks, slowdown, latency_us)
    record = {"ranks": ranks, "global_batch": batch,
              "plans": {plan: {"measured_step_s": measured[plan],
                               "predicted_step_s": predicted[plan]}
                        for plan in plans},
              "sweeps_sync_slowdown": _host_of(json.loads(json.dumps(
                  cluster)), ranks).get("sync_slowdown")}
    clamped = [f"{plan}: measured {measured[plan]:.6g} s, predicted "
               f"{predicted[plan]:.6g} s" for plan in plans
               if abs(predicted[plan] / measured[plan] - 1) > 0.02]
    if clamped:
        record["note"] = ("the non-negative knobs cannot reach every "
                          "measured step (" + "; ".join(clamped) + ")")
    fitted.setdefault("measured", {})["sync_fit"] = record
    return fitted, record


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Fit host.sync_slowdown and host.sync_latency_us of a "
                    "shard-calibrate output to measured training steps.")
    ap.add_argument("--shard-opt", required=True)
    ap.add_argument("--model", required=True,
                    help="the model's MLIR, built at --batch")
    ap.add_argument("--cluster", required=True, help="shard-calibrate's output")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--train", metavar="CONFIG",
                    help="measure the reference plans now: train the model "
                         "config CONFIG (the one --model was built from) "
                         "with scripts/train.sh, instead of --measured")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="with --train: the build folder train.sh uses")
    ap.add_argument("--seq", type=int, default=64,
                    help="with --train: the sequence length --model has")
    ap.add_argument("--steps", type=int, default=30,
                    help="with --train: steps per run, the median after "
                         "--warmup kept")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--measured", action="append", default=[],
                    metavar="PLAN=SECONDS",
                    help="a reference plan's measured step time (the plan in "
                         "--plan syntax, then = and seconds); once or twice, "
                         "e.g. 'dp=8=0.0515' 'dp=4,tp=2,sp=1=0.061'")
    ap.add_argument("--out", default=None,
                    help="write the fitted file here (default: --cluster)")
    args = ap.parse_args(argv)
    if bool(args.train) == bool(args.measured):
        sys.exit("give either --train CONFIG (measure the reference plans "
                 "now) or --measured PLAN=SECONDS (once or twice)")
    if args.train and not 0 <= args.warmup < args.steps:
        sys.exit(f"--steps {args.steps} must exceed --warmup {args.warmup} "
                 f"(>= 0)")
    measured = {}
    for item in args.measured:
        plan, _, value = item.rpartition("=")
        try:
            measured[plan] = float(value)
        except ValueError:
            sys.exit(f"--measured '{item}': expected PLAN=SECONDS, e.g. "
                     f"dp=8=0.0515")
        if not plan:
            sys.exit(f"--measured '{item}': no plan before '='")
    try:
        with open(args.cluster) as f:
            cluster = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"--cluster {args.cluster}: cannot read a JSON cluster "
                 f"description: {e}")
    try:
        if args.train:
            with tempfile.TemporaryDirectory(prefix="autoshard-ref-") as tmp:
                measured = measure_references(
                    args.build, args.train, args.ranks, args.batch, args.seq,
                    args.steps, args.warmup, os.path.join(tmp, "run"))
        fitted, record = fit_host_sync(args.shard_opt, args.model, cluster,
                                       args.ranks, args.batch, measured)
    except CalibrationError as e:
        sys.exit(f"autoshard.calibration: {e}")
    out = args.out or args.cluster
    try:
        with open(out, "w") as f:
            json.dump(fitted, f, indent=2, sort_keys=True)
            f.write("\n")
    except OSError as e:
        sys.exit(f"--out {out}: cannot write the fitted file: {e}")
    host = _host_of(fitted, args.ranks)
    print(f"host.sync_slowdown {host['sync_slowdown']:g} (sweeps: "
          f"{record['sweeps_sync_slowdown']}), host.sync_latency_us "
          f"{host['sync_latency_us']:g}: " + ", ".join(
              f"{plan} predicted {1e3 * r['predicted_step_s']:.1f} ms, "
              f"measured {1e3 * r['measured_step_s']:.1f} ms"
              for plan, r in record["plans"].items())
          + (f"; {record['note']}" if "note" in record else ""))


if __name__ == "__main__":
    main()
