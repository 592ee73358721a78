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
kept in ``measured.sync_fit``, beside the fitted ``host``: in the profile
``by_ranks_per_node.R`` where the planner reads R ranks' knobs there.

Usage::

    python -m autoshard.calibration --shard-opt build/bin/shard-opt \\
        --model model.mlir --cluster cluster.json --ranks 8 --batch 16 \\
        --measured dp=8=0.0515 --measured dp=4,tp=2,sp=1=0.061 [--out F]
    # or measure the reference plans now (scripts/train.sh, 30 steps each):
    python -m autoshard.calibration ... --train nanogpt-config.json

Errors (``CalibrationError``, one line naming the cluster file and the
value): a failing or missing ``shard-opt`` (its first error line), a
cluster file that is not a JSON object, a plan degree that is not a
positive integer, a step time that is not a positive finite number, fewer
than 2 ranks (a one-rank job has no synchronisation), none or more than two
plans, a rank count the planner reads from a larger ``by_ranks_per_node``
profile scaled down (its knobs are that profile's), and a fit above the
planner's bounds. The command line checks the cluster, the rank count and
``--out`` before ``--train`` runs anything, and writes ``--out`` whole or
not at all. A TERM, HUP or
Ctrl-C ends it with one line (no traceback), its reference run's ranks
stopped (run_child, exit_on_signals). Steps the
non-negative knobs cannot reach (faster than the kernels' sum) are fitted
as close as they allow and said in the record's ``note``.
"""
import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile

# lib/Planner: kMaxSyncSlowdown (include/autoshard/Planner/Cluster.h).
MAX_SYNC_SLOWDOWN = 10.0
MAX_SYNC_LATENCY_US = 1e5  # kMaxSyncLatencyUs


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


def first_error(text):
    """The first line of ``text`` that says "error:" (MLIR echoes the source
    line after it), else its last line."""
    lines = text.strip().splitlines() or ["(no output)"]
    return next((l for l in lines if "error:" in l), lines[-1])


class CalibrationError(Exception):
    """A fit that cannot be made; the message names the input and value."""


def run_child(cmd, **kwargs):
    """``subprocess.run(cmd, capture_output=True, text=True, **kwargs)``,
    except that a child still running when this process is stopped (any
    exception, e.g. the SystemExit of exit_on_signals) gets SIGTERM and 10 s
    to end before SIGKILL: shard-run and shard-calibrate's mpirun then end
    their ranks instead of running on without a parent."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, **kwargs) as proc:
        try:
            out, err = proc.communicate()
        except BaseException:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def exit_on_signals(tool):
    """Makes SIGTERM, SIGHUP and SIGINT (unless ignored, as in a background
    job of a script) end this process with a one-line message naming
    ``tool`` and exit status 128 + the signal, through SystemExit: run_child
    stops the running child and temporary folders are removed (Python's
    default for SIGTERM ends the process at once, its children left
    running; SIGINT's prints a traceback)."""
    def stop(signum, _frame):
        signal.signal(signum, signal.SIG_IGN)
        print(f"{tool}: stopped by {signal.Signals(signum).name}",
              file=sys.stderr, flush=True)
        raise SystemExit(128 + signum)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, stop)


def predict_step_s(shard_opt, model_ir, cluster_path, ranks, batch, plan,
                   source=None):
    """The planner's step time in seconds for ``plan`` (``--plan`` syntax)
    of the model ``model_ir`` (built at the global ``batch``)
    on ``ranks`` ranks of the cluster file ``cluster_path``, scored as the
    compiler builds it (``compilable=true``). Errors name the cluster as
    ``source`` (default: ``cluster_path``)."""
    source = source or cluster_path
    d = plan_degrees(plan)
    if batch % (d["dp"] * d["mb"]):
        raise CalibrationError(f"plan '{plan}': the global batch {batch} is "
                               f"not a multiple of dp*mb = "
                               f"{d['dp'] * d['mb']}")
    cmd = [shard_opt, model_ir,
           f"--dist-auto-plan=cluster={cluster_path} gpus={ranks} "
           f"batch={batch} evaluate={plan},mbs={batch // (d['dp'] * d['mb'])} "
           f"compilable=true format=json", "-o", os.devnull]
    try:
        proc = run_child(cmd)
    except OSError as e:
        raise CalibrationError(f"cannot run shard-opt '{shard_opt}': "
                               f"{e.strerror or e}") from None
    if proc.returncode != 0:
        # The planner names the file it read: the fit's temporary copy.
        why = first_error(proc.stderr).replace(cluster_path, source)
        raise CalibrationError(f"shard-opt could not score {plan} on "
                               f"{source}: {why[:400]}")
    try:
        result = json.loads(proc.stdout)
        plans = result["plans"]
    except (ValueError, KeyError, TypeError):
        raise CalibrationError(f"shard-opt '{shard_opt}' printed no JSON "
                               f"plan list for {plan}: "
                               f"{proc.stdout.strip()[:200]!r}") from None
    if not plans:
        why = "; ".join(str(v) for v in (result.get("rejected") or {})
                        .values()) if isinstance(result, dict) else ""
        raise CalibrationError(f"the planner rejected {plan} on {ranks} ranks "
                               f"of {source}" + (f": {why[:400]}" if why
                                                 else ""))
    return plans[0]["step_s"]


def plan_degrees(plan):
    """``{"pp", "dp", "cp", "tp", "mb"}`` of ``plan`` (``--plan`` syntax; 1
    where absent; mb: microbatches per step). Raises CalibrationError for
    one that is not a positive integer (the planner names every other bad
    item)."""
    d = {"pp": 1, "dp": 1, "cp": 1, "tp": 1, "mb": 1}
    for item in plan.split(","):
        key, _, value = item.partition("=")
        if key in d:
            try:
                d[key] = int(value)
            except ValueError:
                d[key] = 0
            if d[key] < 1:
                raise CalibrationError(f"plan '{plan}': {key} must be a "
                                       f"positive integer, got '{value}'")
    return d


def plan_ranks(plan):
    """The rank count of ``plan`` (``--plan`` syntax): pp x dp x cp x tp."""
    d = plan_degrees(plan)
    return d["pp"] * d["dp"] * d["cp"] * d["tp"]


def measure_step_s(build, config, plan, batch, seq, steps, warmup, out,
                   bind_cores="none"):
    """Trains ``plan`` of the model ``config`` (a JSON config) with
    ``scripts/train.sh`` (built in ``build``; results in the folder
    ``out``; shard-run ``--bind-cores bind_cores``) for ``steps`` steps at
    the global ``batch`` and ``seq``, and returns ``(seconds, "")``: the
    median step time after the first ``warmup`` steps (global batch x seq
    / metrics.jsonl's tokens_per_s), or ``(None, why)`` when the run
    failed or timed no step."""
    cmd = [os.path.join(ROOT, "scripts", "train.sh"), "--config", config,
           "--plan", plan, "-n", str(plan_ranks(plan)), "--batch", str(batch),
           "--seq", str(seq), "--steps", str(steps), "--eval-interval", "0",
           "--eval-iters", "1", "--sample", "0", "--out", out,
           "--", "--bind-cores", bind_cores]
    proc = run_child(cmd, env=dict(os.environ, BUILD_DIR=build))
    if proc.returncode != 0:
        return None, first_error(proc.stderr or proc.stdout)
    times = []
    metrics = os.path.join(out, "metrics.jsonl")
    try:
        with open(metrics) as f:
            for line in f:
                rec = json.loads(line)
                if isinstance(rec, dict) and rec.get("tokens_per_s"):
                    times.append(batch * seq / rec["tokens_per_s"])
    except (OSError, ValueError, TypeError) as e:
        return None, f"cannot read {metrics}: {e}"
    times = times[warmup:]
    if not times:
        return None, "no timed steps in metrics.jsonl"
    return statistics.median(times), ""


def measure_references(build, config, ranks, batch, seq, steps, warmup, out,
                       bind_cores="none"):
    """The measured step of each of reference_plans(ranks), seconds: dp=R
    before and after the others, its time the geometric mean of the two
    (the host's speed drifts within minutes); ``bind_cores`` as
    measure_step_s. Raises CalibrationError when a run fails."""
    def one(plan):
        t, why = measure_step_s(build, config, plan, batch, seq, steps,
                                warmup, out, bind_cores)
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
    fixes the latency per collective). An odd rank count has no tp=2 plan
    of all its ranks: dp=R alone fits the slowdown."""
    plans = [f"dp={ranks}"]
    if ranks >= 2 and ranks % 2 == 0:
        plans.append(f"dp={ranks // 2},tp=2,sp=1")
    return plans


def pinned_cores(cluster, ranks):
    """The ``host.pinned_cores`` a job of ``ranks`` ranks is planned with
    on the parsed cluster file ``cluster``: that of the smallest
    ``by_ranks_per_node`` profile of at least ``ranks`` ranks, else the
    file's own (a profile without the field inherits it); 0 where there is
    none (the file was calibrated with ranks left to the scheduler). Runs
    meant to match the file pass ``--bind-cores auto`` where it is not 0."""
    def of(obj):
        host = obj.get("host") if isinstance(obj, dict) else None
        value = host.get("pinned_cores") if isinstance(host, dict) else None
        return value if isinstance(value, int) and value > 0 else None
    profiles = cluster.get("by_ranks_per_node")
    if isinstance(profiles, dict):
        above = sorted(int(k) for k in profiles
                       if k.isdigit() and int(k) >= ranks)
        if above:
            value = of(profiles[str(above[0])])
            if value is not None:
                return value
    return of(cluster) or 0


def _fit_target(cluster, ranks, source="the cluster description"):
    """``(the object whose host the planner reads for a job of ``ranks``
    ranks, its field path prefix)``: the profile ``by_ranks_per_node.<ranks>``
    where the file has it, else the top level (``cluster`` itself). The planner scales the
    smallest profile above ``ranks`` where there is one, else, on a node
    whose ranks share the cores (``gpu.shares_node``), the file's own
    figures of ``gpus_per_node`` ranks (Cluster.cpp, forWorld): those knobs
    are the other rank count's, so this raises CalibrationError rather than
    change them or miss them."""
    profiles = cluster.get("by_ranks_per_node", {})
    if not isinstance(profiles, dict):
        raise CalibrationError(f"{source}: field 'by_ranks_per_node' must be "
                               f"an object, got {profiles!r:.80}")
    above = sorted(int(k) for k in profiles
                   if k.isdigit() and int(k) >= ranks)
    # shard-calibrate measures powers of two only (-n 3 is refused).
    add = (f"add a {ranks}-rank profile (shard-calibrate -n {ranks}, then "
           f"--profile) or " if ranks & (ranks - 1) == 0 else "")
    if above and above[0] != ranks:
        raise CalibrationError(
            f"{source}: jobs of {ranks} ranks are planned with the profile "
            f"by_ranks_per_node.{above[0]} scaled to {ranks} ranks, whose "
            f"synchronisation terms are those of {above[0]} ranks: {add}fit "
            f"{above[0]} ranks")
    # Ranks that share the node's cores and outnumber every profile are
    # planned with the file's own figures scaled (forWorld): its knobs are
    # the node's rank count's, which a fit of fewer ranks replaced (a fit
    # of 6 ranks set the 8-rank jobs' sync_slowdown).
    node = cluster.get("gpus_per_node")
    gpu = cluster.get("gpu")
    if (not above and isinstance(gpu, dict) and gpu.get("shares_node") is True
            and isinstance(node, int) and not isinstance(node, bool)
            and ranks < node):
        raise CalibrationError(
            f"{source}: jobs of {ranks} ranks are planned with the file's own "
            f"{node}-rank figures scaled to {ranks} ranks, whose "
            f"synchronisation terms are those of {node} ranks: {add}fit "
            f"{node} ranks")
    where = profiles.get(str(ranks)) if above else None
    prefix = f"by_ranks_per_node.{ranks}." if where is not None else ""
    where = cluster if where is None else where
    if not isinstance(where, dict):
        raise CalibrationError(f"{source}: field 'by_ranks_per_node.{ranks}' "
                               f"must be an object, got {where!r:.80}")
    for field in ("host", "measured"):
        if not isinstance(where.get(field, {}), dict):
            raise CalibrationError(f"{source}: field '{prefix}{field}' must "
                                   f"be an object, got {where[field]!r:.80}")
    return where, prefix


def _host_of(cluster, ranks, source="the cluster description"):
    """The ``host`` object the planner reads for a job of ``ranks`` ranks
    (created where missing): see _fit_target."""
    return _fit_target(cluster, ranks, source)[0].setdefault("host", {})


def sync_terms(cluster, ranks, source="the cluster description"):
    """``(host.sync_slowdown, host.sync_latency_us)`` of ``cluster`` (a
    parsed cluster file) where the planner reads them for a job of
    ``ranks`` ranks (the profile ``by_ranks_per_node.<ranks>`` where the
    file has one, else the top level); 0 where unset. Raises
    CalibrationError where the file has no such place (see check_cluster)."""
    host = _host_of(json.loads(json.dumps(cluster)), ranks, source)
    return host.get("sync_slowdown", 0), host.get("sync_latency_us", 0)


def with_sync_terms(cluster, ranks, slowdown, latency_us,
                    source="the cluster description"):
    """A copy of ``cluster`` (a parsed cluster file) with
    ``host.sync_slowdown`` (fraction) and ``host.sync_latency_us`` set where
    the planner reads them for a job of ``ranks`` ranks: the profile
    ``by_ranks_per_node.<ranks>`` where the file has one, else the top
    level. Raises CalibrationError where ``host`` cannot be set (see
    check_cluster)."""
    fitted = json.loads(json.dumps(cluster))
    host = _host_of(fitted, ranks, source)
    host["sync_slowdown"] = slowdown
    host["sync_latency_us"] = latency_us
    return fitted


def _two_significant(x):
    return float(f"{x:.2g}")


def check_cluster(cluster, ranks, source="the cluster description"):
    """Raises CalibrationError unless ``cluster`` (a parsed cluster file,
    named ``source``) can be fitted for jobs of ``ranks`` ranks: a JSON
    object, 2 or more ranks, and a ``host`` the fit can set where the
    planner reads it (see _host_of)."""
    if not isinstance(cluster, dict):
        raise CalibrationError(f"{source}: the cluster description must be a "
                               f"JSON object, got {type(cluster).__name__}")
    if not isinstance(ranks, int) or isinstance(ranks, bool) or ranks < 2:
        raise CalibrationError(f"the synchronisation terms are fitted for "
                               f"2 or more ranks, got {ranks!r}")
    with_sync_terms(cluster, ranks, 0.0, 0.0, source)


def _sweeps_slowdown(cluster, ranks):
    """The ``host.sync_slowdown`` shard-calibrate's sweeps measured for
    ``ranks`` ranks: the file's own where it was not fitted yet, else the
    value its earlier fit recorded (``measured.sync_fit``), not that fit's
    result."""
    where = _fit_target(json.loads(json.dumps(cluster)), ranks)[0]
    earlier = where.get("measured", {}).get("sync_fit")
    if isinstance(earlier, dict) and "sweeps_sync_slowdown" in earlier:
        return earlier["sweeps_sync_slowdown"]
    return where.get("host", {}).get("sync_slowdown")


def fit_host_sync(shard_opt, model_ir, cluster, ranks, batch, measured,
                  source="the cluster description"):
    """Returns ``(fitted cluster dict, record)``: ``cluster`` (a parsed
    cluster file, not modified) with ``host.sync_slowdown`` (fraction) and
    ``host.sync_latency_us`` set so that the planner predicts the measured
    step times ``measured`` ({plan: seconds}, the plans of
    reference_plans(ranks) or any one or two plans of ``ranks`` ranks), and
    the record written under ``measured.sync_fit`` of the same object as
    the knobs (the profile or the top level; each plan's measured and
    predicted step, the sweeps' slowdown it replaced, a note when a value
    was clamped at 0). Both knobs are non-negative: a step below the
    kernels' sum fits them as 0 and says so. One plan fits the slowdown
    alone. Errors name the cluster as ``source`` (its file). Raises
    CalibrationError (see the module's doc)."""
    check_cluster(cluster, ranks, source)
    if not isinstance(measured, dict) or not 1 <= len(measured) <= 2:
        raise CalibrationError(f"the fit needs the measured step of one or "
                               f"two plans, got {measured!r}")
    for plan, t in measured.items():
        if (isinstance(t, bool) or not isinstance(t, (int, float)) or
                not 0 < t < math.inf):
            raise CalibrationError(f"the measured step time of {plan} must "
                                   f"be a positive finite number of seconds, "
                                   f"got "
                                   f"{t!r}")
    plans = list(measured)
    with tempfile.TemporaryDirectory(prefix="autoshard-fit-") as tmp:
        def predict(plan, slowdown, latency_us):
            path = os.path.join(tmp, "cluster.json")
            with open(path, "w") as f:
                json.dump(with_sync_terms(cluster, ranks, slowdown, latency_us,
                                     source), f)
            return predict_step_s(shard_opt, model_ir, path, ranks, batch,
                                  plan, source)
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
    fitted = with_sync_terms(cluster, ranks, slowdown, latency_us)
    record = {"ranks": ranks, "global_batch": batch,
              "plans": {plan: {"measured_step_s": measured[plan],
                               "predicted_step_s": predicted[plan]}
                        for plan in plans},
              "sweeps_sync_slowdown": _sweeps_slowdown(cluster, ranks)}
    clamped = [f"{plan}: measured {measured[plan]:.6g} s, predicted "
               f"{predicted[plan]:.6g} s" for plan in plans
               if abs(predicted[plan] / measured[plan] - 1) > 0.02]
    if clamped:
        record["note"] = ("the non-negative knobs cannot reach every "
                          "measured step (" + "; ".join(clamped) + ")")
    # Beside the host it describes: a profile's record in the profile (the
    # top level's is the file's own rank count's).
    _fit_target(fitted, ranks, source)[0].setdefault("measured", {})[
        "sync_fit"] = record
    return fitted, record


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Fit host.sync_slowdown and host.sync_latency_us of a "
                    "shard-calibrate output to measured training steps.")
    ap.add_argument("--shard-opt", required=True,
                    help="the shard-opt that scores the plans "
                         "(build/bin/shard-opt)")
    ap.add_argument("--model", required=True,
                    help="the model's MLIR, built at --batch")
    ap.add_argument("--cluster", required=True, help="shard-calibrate's output")
    ap.add_argument("--ranks", type=int, required=True,
                    help="the rank count the knobs are fitted for (2 or "
                         "more; a file's by_ranks_per_node.RANKS profile "
                         "where it has one, else its top level; a count the "
                         "planner scales from another's figures, e.g. 6 on "
                         "an 8-rank CPU file, is refused)")
    ap.add_argument("--batch", type=int, required=True,
                    help="the global batch --model was built at")
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
    ap.add_argument("--warmup", type=int, default=5,
                    help="with --train: first steps of each run not timed")
    ap.add_argument("--measured", action="append", default=[],
                    metavar="PLAN=SECONDS",
                    help="a reference plan's measured step time (the plan in "
                         "--plan syntax, then = and seconds); once or twice, "
                         "e.g. 'dp=8=0.0515' 'dp=4,tp=2,sp=1=0.061'")
    ap.add_argument("--out", default=None,
                    help="write the fitted file here (default: --cluster)")
    args = ap.parse_args(argv)
    exit_on_signals("autoshard.calibration")
    if bool(args.train) == bool(args.measured):
        sys.exit("give either --train CONFIG (measure the reference plans "
                 "now) or --measured PLAN=SECONDS (once or twice)")
    if args.train and not 0 <= args.warmup < args.steps:
        sys.exit(f"--steps {args.steps} must exceed --warmup {args.warmup} "
                 f"(>= 0)")
    measured = {}
    for item in args.measured:
        plan, _, value = item.rpartition("=")
        if plan in measured:
            sys.exit(f"--measured '{item}': {plan} is given twice (one "
                     f"measured step per plan)")
        try:
            measured[plan] = float(value)
        except ValueError:
            sys.exit(f"--measured '{item}': expected PLAN=SECONDS, e.g. "
                     f"dp=8=0.0515")
        if not plan:
            sys.exit(f"--measured '{item}': no plan before '='")
        bare = next((i for i in plan.split(",") if "=" not in i), None)
        if bare is not None:
            sys.exit(f"--measured '{item}': expected PLAN=SECONDS, e.g. "
                     f"dp=8=0.0515: '{bare}' in the plan '{plan}' is not "
                     f"key=value (no seconds after the plan?)")
    try:
        with open(args.cluster) as f:
            cluster = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"--cluster {args.cluster}: cannot read a JSON cluster "
                 f"description: {e}")
    out = args.out or args.cluster
    # Checked before the reference runs (minutes), not after them.
    if not os.path.isfile(args.model):
        sys.exit(f"--model {args.model}: no such file (the model's MLIR, "
                 f"python -m autoshard.models CONFIG -o FILE)")
    if not (os.path.isfile(args.shard_opt) and
            os.access(args.shard_opt, os.X_OK)):
        sys.exit(f"--shard-opt {args.shard_opt}: not an executable file "
                 f"(build it: ninja -C build shard-opt)")
    out_dir = os.path.dirname(os.path.abspath(out))
    why = ("it is a folder" if os.path.isdir(out) else
           f"no folder {out_dir}" if not os.path.isdir(out_dir) else
           f"no write access to {out_dir}" if not os.access(
               out_dir, os.W_OK | os.X_OK) else "")
    if why:
        sys.exit(f"--out {out}: cannot write the fitted file: {why}")
    try:
        check_cluster(cluster, args.ranks, args.cluster)
        if args.train:
            # Run as the file says the ranks run: pinned where it was
            # calibrated pinned (shard-calibrate --bind-cores auto).
            bind = "auto" if pinned_cores(cluster, args.ranks) else "none"
            with tempfile.TemporaryDirectory(prefix="autoshard-ref-") as tmp:
                measured = measure_references(
                    args.build, args.train, args.ranks, args.batch, args.seq,
                    args.steps, args.warmup, os.path.join(tmp, "run"), bind)
        fitted, record = fit_host_sync(args.shard_opt, args.model, cluster,
                                       args.ranks, args.batch, measured,
                                       args.cluster)
    except CalibrationError as e:
        sys.exit(f"autoshard.calibration: {e}")
    # A whole file or none (--out defaults to --cluster itself).
    try:
        fd, tmp_out = tempfile.mkstemp(dir=out_dir, prefix=".fit-",
                                       suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(fitted, f, indent=2, sort_keys=True)
                f.write("\n")
            os.replace(tmp_out, out)
        except BaseException:
            os.unlink(tmp_out)
            raise
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
