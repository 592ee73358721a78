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

With pp, the planner scores the first and the last pipeline rank
(``memory_ranks``) and reports the heavier; dist-explain reports every
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

__all__ = ["PlanMemoryError", "compare", "compare_plan", "format_table",
           "rank_memory", "rank_totals"]


class PlanMemoryError(Exception):
    """A report or memory plan without the fields compared."""


def _number(table, key, what):
    value = table.get(key) if isinstance(table, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PlanMemoryError(f"{what} has no number '{key}' (got {value!r})")
    return value


def compare(planned, compiled):
    """Rows ``(category, planner bytes, compiled bytes)``.

    ``planned``: a plan's ``memory`` object of the planner's JSON report;
    ``compiled``: the ``memory`` object of dist-explain's JSON report, each
    entry ``{"with": bytes, "without": ...}`` (the plan's figure is
    ``with``)."""
    def plan(key):
        return _number(planned, key, "the planner's memory breakdown")

    def comp(key):
        entry = compiled.get(key) if isinstance(compiled, dict) else None
        return _number(entry, "with", f"the compiled memory plan's '{key}'")

    return [
        ("params", plan("params"), comp("state_param")),
        ("optimizer", plan("optimizer"),
         comp("state_opt_m") + comp("state_opt_v")),
        ("grads at peak", plan("grads") + plan("activation_grads"),
         comp("peak_grad")),
        ("activations at peak", plan("activations"), comp("peak_activation")),
    ]


def rank_memory(explain, pp_rank):
    """The compiled memory plan of pipeline rank ``pp_rank`` in the form of
    dist-explain's ``memory`` object (what :func:`compare` reads), from the
    report's ``pipeline_ranks`` (every rank's held states by kind and the
    live bytes per category at its frame's peak; ``memory`` is the heaviest
    rank's only). Raises PlanMemoryError when the report has no such rank."""
    ranks = explain.get("pipeline_ranks") if isinstance(explain, dict) else None
    for entry in ranks or []:
        if isinstance(entry, dict) and entry.get("pp_rank") == pp_rank:
            state, peak = entry.get("state") or {}, entry.get("peak") or {}
            return {
                "state_param": {"with": state.get("param", 0)},
                "state_opt_m": {"with": state.get("opt_m", 0)},
                "state_opt_v": {"with": state.get("opt_v", 0)},
                "peak_grad": {"with": peak.get("grad", 0)},
                "peak_activation": {"with": peak.get("activation", 0)},
            }
    found = [e.get("pp_rank") for e in ranks or [] if isinstance(e, dict)]
    raise PlanMemoryError(f"the dist-explain report has no pipeline rank "
                          f"{pp_rank} (ranks: {found})")


def compare_plan(plan, explain):
    """``(pp_rank, rows)``: :func:`compare`'s rows for the pipeline rank
    whose breakdown the planner reports.

    ``plan``: one plan of the planner's JSON report; ``explain``:
    dist-explain's JSON report of its compiled program. With pp the planner
    scores the first and the last pipeline rank (``memory_ranks``) and
    reports the heavier (``memory``, ``memory.pp_rank``); that breakdown is
    compared with the same rank's compiled memory plan (``pipeline_ranks``).
    Without pp: rank 0, against dist-explain's ``memory``."""
    if not isinstance(plan, dict) or not isinstance(explain, dict):
        raise PlanMemoryError("a plan and a dist-explain report (JSON "
                              "objects) are compared")
    memory = plan.get("memory")
    pp_rank = memory.get("pp_rank") if isinstance(memory, dict) else None
    if not explain.get("pipeline_ranks") or pp_rank is None:
        return 0, compare(memory, explain.get("memory"))
    return pp_rank, compare(memory, rank_memory(explain, pp_rank))


def rank_totals(explain):
    """Per pipeline rank of a compiled program, its held states plus the
    live bytes at its frame's peak (what the planner weighs to pick the
    heaviest rank): ``{pp_rank: bytes}``; ``{0: ...}`` without pp."""
    def live(peak):
        return sum(v for v in peak.values() if isinstance(v, (int, float)))
    ranks = explain.get("pipeline_ranks") if isinstance(explain, dict) else None
    if ranks:
        return {r["pp_rank"]: sum((r.get("state") or {}).values()) +
                live(r.get("peak") or {}) for r in ranks}
    memory = explain.get("memory") or {}
    return {0: _number(memory.get("state_total"), "with", "state_total") +
            _number(memory.get("peak_live_total"), "with", "peak_live_total")}


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
            return json.load(f)
    except (OSError, ValueError) as e:
        raise PlanMemoryError(f"cannot read {what} '{path}': {e}") from None


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
        if not plans or not isinstance(plans[0], dict):
            raise PlanMemoryError(f"the planner's report '{args.report}' has "
                                  f"no plan")
        if not isinstance(explain, dict):
            raise PlanMemoryError(f"the dist-explain report '{args.explain}' "
                                  f"is not a JSON object")
        pp_rank, rows = compare_plan(plans[0], explain)
        totals = (rank_totals(explain) if explain.get("pipeline_ranks")
                  else {})
    except PlanMemoryError as e:
        sys.exit(f"autoshard.plan_memory: {e}")
    where = f", pipeline rank {pp_rank}" if len(totals) > 1 else ""
    print(f"memory per rank of {plans[0].get('plan', 'the plan')}{where}: "
          f"the planner's breakdown vs the compiled static memory plan, bytes")
    print(format_table(rows))
    if len(totals) > 1:
        heaviest = max(totals, key=totals.get)
        print("  compiled states + live at the peak per pipeline rank: " +
              ", ".join(f"{r}: {b}" for r, b in sorted(totals.items())) +
              (f" (the heaviest is rank {heaviest})" if heaviest != pp_rank
               else ""))

if __name__ == "__main__":
    main()
