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

__all__ = ["PlanMemoryError", "compare", "format_table"]


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
        rows = compare(plans[0].get("memory"),
                       explain.get("memory") if isinstance(explain, dict)
                       else None)
    except PlanMemoryError as e:
        sys.exit(f"autoshard.plan_memory: {e}")
    print(f"memory per rank of {plans[0].get('plan', 'the plan')}: the "
          f"planner's breakdown vs the compiled static memory plan, bytes")
    print(format_table(rows))


if __name__ == "__main__":
    main()
