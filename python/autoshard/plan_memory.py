"""The planner's memory breakdown beside the compiled static memory plan.

Issue 21, item 5: where both exist, print both. The planner
(``dist-auto-plan format=json``) gives per plan a ``memory`` breakdown in
bytes per rank; ``dist-explain format=json`` on the compiled program gives
the static memory plan (rt-plan-memory): the states by kind and the live
bytes per category at the plan's peak. On a cluster whose gradients are
frame buffers (``memory.grad_buffer = "frame"``, e.g.
configs/clusters/cpu-2core.json) the planner composes that same peak, so
its categories compare one to one (docs/planner.md, "the static memory
plan"):

* parameters: planner ``params`` = ``state_param``;
* optimizer states: planner ``optimizer`` = ``state_opt_m + state_opt_v``;
* gradients live at the peak: planner ``grads + activation_grads`` =
  ``peak_grad``;
* activations at the peak: planner ``activations`` = ``peak_activation``.

``scripts/train.sh --plan auto`` prints this table for the plan it chose and
compiled; python/tests/test_planner_memory.py checks the same categories on
a fixed set of plans.

With pp, the planner scores the first and the last pipeline rank (under
1F1B and GPipe every rank: ``memory_ranks``) and reports the heaviest; dist-explain reports every
rank's memory plan (``pipeline_ranks``), and the planner's breakdown is
compared with the same rank's (compare_plan). rank_totals gives each
compiled rank's states + live bytes at its peak, to check that the rank the
planner reports is the heaviest.

CLI::

    python -m autoshard.plan_memory AUTO_PLAN.json EXPLAIN.json

AUTO_PLAN.json: the planner's JSON report (its first plan, the chosen or
evaluated one); EXPLAIN.json: ``shard-opt LOWERED.mlir
--dist-explain=format=json``'s output for that plan's compiled program.
Standard library only.
"""

import argparse
import json
import sys

__all__ = ["PlanMemoryError", "check_same_plan", "compare", "compare_plan",
           "format_table", "rank_memory", "rank_totals"]


class PlanMemoryError(Exception):
    """A report or memory plan without the fields compared, or two reports
    of different plans."""


def _shape(value):
    """How a JSON value that is not what was expected reads in a message."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def _object(value, what):
    if not isinstance(value, dict):
        raise PlanMemoryError(f"{what} is not a JSON object (got "
                              f"{_shape(value)})")
    return value


def _number(table, key, what):
    value = _object(table, what).get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PlanMemoryError(f"{what} has no number '{key}' (got "
                              f"{_shape(value)})")
    return value


def compare(planned, compiled):
    """Rows ``(category, planner bytes, compiled bytes)``.

    ``planned``: a plan's ``memory`` object of the planner's JSON report;
    ``compiled``: the ``memory`` object of dist-explain's JSON report, each
    entry ``{"with": bytes, "without": ...}`` (the plan's figure is
    ``with``). Raises PlanMemoryError naming a missing or malformed
    field."""
    _object(planned, "the planner's memory breakdown")
    _object(compiled, "the dist-explain report's 'memory'")

    def plan(key):
        return _number(planned, key, "the planner's memory breakdown")

    def comp(key):
        entry = compiled.get(key)
        if not isinstance(entry, dict):
            raise PlanMemoryError(f"the dist-explain report's 'memory' has no "
                                  f"entry '{key}' (got {_shape(entry)})")
        return _number(entry, "with", f"the compiled memory plan's '{key}'")

    return [
        ("params", plan("params"), comp("state_param")),
        ("optimizer", plan("optimizer"),
         comp("state_opt_m") + comp("state_opt_v")),
        ("grads at peak", plan("grads") + plan("activation_grads"),
         comp("peak_grad")),
        ("activations at peak", plan("activations"), comp("peak_activation")),
    ]


def _pipeline_ranks(explain):
    """dist-explain's ``pipeline_ranks`` (a list of objects, each with an
    integer ``pp_rank``), or [] without pp."""
    ranks = explain.get("pipeline_ranks", [])
    if not isinstance(ranks, list):
        raise PlanMemoryError(f"the dist-explain report's 'pipeline_ranks' "
                              f"is not a list (got {_shape(ranks)})")
    for i, entry in enumerate(ranks):
        what = f"the dist-explain report's pipeline_ranks[{i}]"
        pp_rank = _object(entry, what).get("pp_rank")
        if isinstance(pp_rank, bool) or not isinstance(pp_rank, int):
            raise PlanMemoryError(f"{what} has no integer 'pp_rank' (got "
                                  f"{_shape(pp_rank)})")
    return ranks


def rank_memory(explain, pp_rank):
    """The compiled memory plan of pipeline rank ``pp_rank`` in the form of
    dist-explain's ``memory`` object (what :func:`compare` reads), from the
    report's ``pipeline_ranks`` (every rank's held states by kind and the
    live bytes per category at its frame's peak; ``memory`` is the heaviest
    rank's only). Raises PlanMemoryError when the report has no such rank
    or the rank lacks a figure."""
    ranks = _pipeline_ranks(_object(explain, "the dist-explain report"))
    for entry in ranks:
        if entry["pp_rank"] != pp_rank:
            continue
        what = f"the dist-explain report's pipeline rank {pp_rank}"
        state, peak = entry.get("state"), entry.get("peak")
        return {
            "state_param": {"with": _number(state, "param", what + " state")},
            "state_opt_m": {"with": _number(state, "opt_m", what + " state")},
            "state_opt_v": {"with": _number(state, "opt_v", what + " state")},
            "peak_grad": {"with": _number(peak, "grad", what + " peak")},
            "peak_activation": {"with": _number(peak, "activation",
                                                what + " peak")},
        }
    raise PlanMemoryError(f"the dist-explain report has no pipeline rank "
                          f"{pp_rank!r} (ranks: {[e['pp_rank'] for e in ranks]})")


# Plan keys both reports carry: the planner's `plan` text
# ("pp=2,dp=1,...,mb=4,schedule=1f1b,vpp=1,recompute=none") and
# dist-explain's `plan` object (dist.plan).
_PLAN_KEYS = ("pp", "dp", "cp", "tp", "sp", "zero", "ep", "mb", "schedule",
              "vpp", "recompute")


def check_same_plan(plan, explain):
    """Raises PlanMemoryError naming the keys that differ when the planner's
    plan (``plan["plan"]``, ``key=value,...``) and the compiled program's
    (dist-explain's ``plan`` object) are not the same plan; keys one of them
    lacks are not compared (an older report)."""
    text = plan.get("plan")
    compiled = explain.get("plan")
    if not isinstance(text, str) or not isinstance(compiled, dict):
        return
    planned = dict(item.split("=", 1) for item in text.split(",")
                   if "=" in item)
    differ = [f"{key} {planned[key]} vs {compiled[key]}" for key in _PLAN_KEYS
              if key in planned and key in compiled and
              str(planned[key]) != str(compiled[key])]
    if differ:
        raise PlanMemoryError("the two reports are of different plans "
                              "(planner vs compiled: " + ", ".join(differ) +
                              ")")


def compare_plan(plan, explain):
    """``(pp_rank, rows)``: :func:`compare`'s rows for the pipeline rank
    whose breakdown the planner reports.

    ``plan``: one plan of the planner's JSON report; ``explain``:
    dist-explain's JSON report of its compiled program. With pp the planner
    scores the first and the last pipeline rank (under 1F1B and GPipe
    every rank: ``memory_ranks``) and reports the heaviest (``memory``,
    ``memory.pp_rank``); that breakdown is
    compared with the same rank's compiled memory plan (``pipeline_ranks``).
    Without pp: rank 0, against dist-explain's ``memory``. Raises
    PlanMemoryError for reports of different plans (check_same_plan) or a
    missing or malformed field."""
    _object(plan, "the planner's plan")
    _object(explain, "the dist-explain report")
    check_same_plan(plan, explain)
    memory = _object(plan.get("memory"), "the planner's memory breakdown")
    pp_rank = memory.get("pp_rank", 0)
    if isinstance(pp_rank, bool) or not isinstance(pp_rank, int):
        raise PlanMemoryError(f"the planner's memory breakdown has no integer "
                              f"'pp_rank' (got {_shape(pp_rank)})")
    if not _pipeline_ranks(explain):
        if pp_rank != 0:
            raise PlanMemoryError(f"the planner's breakdown is of pipeline "
                                  f"rank {pp_rank}, but the dist-explain "
                                  f"report has no pipeline ranks")
        return 0, compare(memory, explain.get("memory"))
    return pp_rank, compare(memory, rank_memory(explain, pp_rank))


def rank_totals(explain):
    """Per pipeline rank of a compiled program, its held states plus the
    live bytes at its frame's peak (what the planner weighs to pick the
    heaviest rank): ``{pp_rank: bytes}``; ``{0: ...}`` without pp."""
    ranks = _pipeline_ranks(_object(explain, "the dist-explain report"))
    if ranks:
        totals = {}
        for entry in ranks:
            what = f"the dist-explain report's pipeline rank {entry['pp_rank']}"
            state = _object(entry.get("state"), what + " state")
            peak = _object(entry.get("peak"), what + " peak")
            totals[entry["pp_rank"]] = sum(
                _number(table, key, what) for table in (state, peak)
                for key in table)
        return totals
    memory = explain.get("memory")
    return {0: _number(_object(memory, "the dist-explain report's 'memory'")
                       .get("state_total"), "with", "state_total") +
            _number(memory.get("peak_live_total"), "with", "peak_live_total")}


# The largest per-category difference that counts as equal: 64-byte buffer
# alignment and the one-block profile's affine fit in the microbatch size
# (bench/planner_memory's --tolerance default).
TOLERANCE_BYTES = 1024


def format_table(rows):
    """The rows as text: one line per category with both figures in bytes
    and planner - compiled."""
    lines = [f"  {'':20s} {'planner':>12s} {'compiled':>12s} {'difference':>10s}"]
    for name, p, c in rows:
        lines.append(f"  {name:20s} {p:12.0f} {c:12.0f} {p - c:+10.0f}")
    return "\n".join(lines)


def _load(path, what):
    try:
        with open(path) as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise PlanMemoryError(f"cannot read {what} '{path}': {e}") from None
    if not text.strip():
        raise PlanMemoryError(f"{what} '{path}' is empty (did the command "
                              f"that writes it fail?)")
    try:
        return json.loads(text)
    except ValueError as e:
        raise PlanMemoryError(f"{what} '{path}' is not JSON: {e}") from None


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m autoshard.plan_memory",
        description="Print the planner's memory breakdown of a plan beside "
                    "the compiled program's static memory plan (bytes per "
                    "rank).")
    ap.add_argument("report", help="dist-auto-plan format=json report (its "
                                   "first plan is compared)")
    ap.add_argument("explain", help="dist-explain format=json output of the "
                                    "plan's compiled program")
    args = ap.parse_args(argv)
    try:
        report = _load(args.report, "the planner's report")
        explain = _load(args.explain, "the dist-explain report")
        plans = report.get("plans") if isinstance(report, dict) else None
        if not isinstance(plans, list) or not plans or \
                not isinstance(plans[0], dict):
            swapped = isinstance(report, dict) and "memory" in report and \
                isinstance(explain, dict) and "plans" in explain
            raise PlanMemoryError(
                f"the planner's report '{args.report}' has no plan (its "
                f"'plans' is {_shape(plans)})"
                + ("; it looks like the dist-explain report: give the "
                   "planner's report first" if swapped else ""))
        if not isinstance(explain, dict) or \
                not isinstance(explain.get("memory"), dict):
            raise PlanMemoryError(
                f"the dist-explain report '{args.explain}' has no 'memory' "
                f"object (is it dist-explain format=json output?)")
        pp_rank, rows = compare_plan(plans[0], explain)
        totals = rank_totals(explain) if explain.get("pipeline_ranks") else {}
    except PlanMemoryError as e:
        sys.exit(f"autoshard.plan_memory: {e}")
    where = f", pipeline rank {pp_rank}" if len(totals) > 1 else ""
    print(f"memory per rank of {plans[0].get('plan', 'the plan')}{where}: "
          f"the planner's breakdown vs the compiled static memory plan, bytes")
    print(format_table(rows))
    off = [name for name, p, c in rows if abs(p - c) > TOLERANCE_BYTES]
    print(f"  difference: planner - compiled; "
          + (f"every category within {TOLERANCE_BYTES} B (buffer alignment "
             f"and the profile's affine fit)" if not off else
             f"over {TOLERANCE_BYTES} B in: {', '.join(off)}"))
    if len(totals) > 1:
        heaviest = max(totals, key=totals.get)
        print("  compiled states + live at the peak per pipeline rank: " +
              ", ".join(f"{r}: {b}" for r, b in sorted(totals.items())))
        if heaviest != pp_rank:
            print(f"  the planner reports rank {pp_rank} as the heaviest, but "
                  f"compiled rank {heaviest} holds "
                  f"{totals[heaviest] - totals[pp_rank]:+} B more")


if __name__ == "__main__":
    main()
