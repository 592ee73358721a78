"""CLI: ``python -m autoshard.report TRACE... [--predicted PLAN.html] -o
timeline.html`` or ``python -m autoshard.report --summary PAGE.html``."""

import argparse
import sys
from typing import List, Optional

from . import TraceError, summarize, trace_report


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m autoshard.report",
        description="Draw the measured per-rank timeline of shard-run --trace files as one "
                    "HTML page, or summarize an autoshard HTML report's structure.")
    p.add_argument("inputs", nargs="+", help="trace files (one per rank), or with --summary one HTML page")
    p.add_argument("-o", "--output", help="HTML file to write (default: stdout)")
    p.add_argument("--title", help="page title")
    p.add_argument("--predicted", metavar="PAGE.html",
                   help="the plan's dist-explain format=html page: its pipeline timelines are "
                        "drawn above the measured one")
    p.add_argument("--summary", action="store_true",
                   help="print the structure of the HTML page given (sections, lanes, units, bars)")
    args = p.parse_args(argv)
    try:
        if args.summary:
            if len(args.inputs) != 1:
                p.error(f"--summary takes one HTML file, found {len(args.inputs)}")
            with open(args.inputs[0], encoding="utf-8") as f:
                text = "\n".join(summarize(f.read())) + "\n"
        else:
            predicted = None
            if args.predicted:
                with open(args.predicted, encoding="utf-8") as f:
                    predicted = f.read()
            text = trace_report(args.inputs, title=args.title, predicted=predicted)
    except (TraceError, OSError) as e:
        print(f"autoshard.report: error: {e}", file=sys.stderr)
        return 1
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
