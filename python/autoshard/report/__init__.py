"""HTML reports of autoshard's plans and measured runs.

* :func:`trace_report` draws the measured per-rank timeline of a step from
  the Chrome traces that ``shard-run --trace`` writes (one file per rank:
  ``trace.json``, ``trace.rank1.json``, ...) in the style of the compiler's
  reports (``dist-explain format=html``, ``dist-auto-plan format=html``),
  whose stylesheet and hover script (``style.css``, ``script.js`` here) the
  C++ writers embed at build time.
* :func:`summarize` reads any of these pages back (sections, and per
  figure its lanes, units, bubbles, arrows and bars): what the tests check,
  also on the DOM a browser dumped.

CLI::

    python -m autoshard.report trace.json trace.rank1.json -o timeline.html
    python -m autoshard.report trace.json trace.rank1.json --predicted plan.html -o both.html
    python -m autoshard.report --summary report.html

Standard library only.
"""

from .summary import summarize
from .trace import TraceError, load_trace, trace_report

__all__ = ["summarize", "trace_report", "load_trace", "TraceError"]
