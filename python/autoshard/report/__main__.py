"""CLI: ``python -m autoshard.report TRACE... [--predicted PLAN.html] -o
timeline.html`` or ``python -m autoshard.report --summary PAGE.html``."""

import argparse
import sys
from typing import List, Optional

from . import TraceError, summarize, trace_report
from .trace import read_text


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
    if args.summary and len(args.inputs) != 1:
        p.error(f"--summary takes one HTML file, found {len(args.inputs)}")
    try:
        if args.summary:
            page = read_text(args.inputs[0], "page")
            try:
                text = "\n".join(summarize(page)) + "\n"
            except ValueError as e:
                raise TraceError(f"{args.inputs[0]}: {e}") from None
        else:
            predicted = read_text(args.predicted, "--predicted page") if args.predicted else None
            text = trace_report(args.inputs, title=args.title, predicted=predicted)
        if args.output:
            try:
                with open(args.output, "w", encoding="utf-8") as f:
                    f.write(text)
            except OSError as e:
                raise TraceError(f"cannot write -o {args.output}: {e.strerror}") from None
        else:
            sys.stdout.write(text)
    except TraceError as e:
        print(f"autoshard.report: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
