"""The measured per-rank timeline of a step, from ``shard-run --trace``.

``shard-run --trace FILE`` writes one Chrome trace per rank (``FILE`` for
rank 0, ``FILE`` with ``.rankR`` before the extension for rank R; complete
"X" events in microseconds; thread 0 runs the program, the other threads
are communication streams). Each rank's events nest: the traced ``step``,
the instructions of the entry function (``cat`` = the entry, e.g.
``train_step__pp0``), inside a call the callee's instructions. The page
draws, per rank, one lane per thread with the outermost events under the
step as boxes: a call of a forward function (``..._fwd``, ``forward``) as
F, of a backward function as B, ``dist.*`` communication as comm, the rest
as other; the gaps are idle time.
"""

import html
import json
import os
import re
from typing import Dict, List, Optional, Sequence, Tuple

from .summary import mesh_ranks

_RANK_RE = re.compile(r"\.rank(\d+)\.[^./]*$")

LANE_HEIGHT, LANE_GAP, LEFT, TOP, AXIS = 24, 6, 110, 6, 24


class TraceError(Exception):
    """A trace file that cannot be read (names the file and the problem)."""


def _rank_of(path: str, meta: Optional[dict] = None) -> int:
    """R of a ``.rankR`` suffix; without one the rank the trace names
    (``otherData.rank``, e.g. a renamed copy), else 0 (rank 0's file)."""
    m = _RANK_RE.search(os.path.basename(path))
    if m:
        return int(m.group(1))
    rank = (meta or {}).get("rank")
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else 0


def read_text(path: str, what: str) -> str:
    """The UTF-8 text of ``path`` (``what`` names it in errors); raises
    TraceError naming the file and the problem."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise TraceError(f"{what} {path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise TraceError(f"{what} {path}: not UTF-8 text (byte {e.start}: "
                         f"{e.object[e.start:e.start + 1]!r})") from None


def load_trace(path: str) -> Tuple[Dict[int, str], List[dict]]:
    """(thread id -> name, complete events) of one rank's trace file."""
    return _load(path)[:2]


def _load(path: str) -> Tuple[Dict[int, str], List[dict], dict]:
    """load_trace plus the trace's ``otherData`` (the run it belongs to)."""
    text = read_text(path, "trace")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise TraceError(f"{path}: not JSON: {e}") from None
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise TraceError(f"{path}: no 'traceEvents' list (found {type(events).__name__})")
    threads: Dict[int, str] = {}
    complete = []
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            raise TraceError(f"{path}: event {i} is not an object: {e!r}")
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            threads[int(e.get("tid", 0))] = str(e.get("args", {}).get("name", ""))
        elif e.get("ph") == "X":
            for key in ("ts", "dur"):
                if not isinstance(e.get(key), (int, float)):
                    raise TraceError(f"{path}: event {i} ({e.get('name')!r}) has no numeric '{key}'")
            complete.append(e)
    if not complete:
        raise TraceError(f"{path}: no complete ('X') events")
    meta = data.get("otherData") if isinstance(data, dict) else None
    return threads, complete, meta if isinstance(meta, dict) else {}


def _check_one_run(ranks: List[tuple]) -> int:
    """Refuses traces of different runs (shard-run writes the run into each
    trace's ``otherData``: rank, world size, artifact, plan, step); returns
    the world size (0 when the traces do not say)."""
    world = 0
    first = None
    for rank, path, _, _, meta in ranks:
        if not meta:
            continue
        if "rank" in meta and meta["rank"] != rank:
            raise TraceError(f"{path}: the file name says rank {rank}, the trace rank "
                             f"{meta['rank']}")
        run = {k: meta.get(k) for k in ("world_size", "artifact", "plan", "step")}
        if first is None:
            first = (path, run)
        else:
            for key, value in run.items():
                if value != first[1][key]:
                    raise TraceError(
                        f"{path} and {first[0]} are traces of different runs: {key} "
                        f"{json.dumps(value)} vs {json.dumps(first[1][key])}")
        world = int(run["world_size"] or 0)
    if world and len(ranks) > world:
        raise TraceError(f"{len(ranks)} traces of a run of {world} ranks")
    for rank, path, *_ in ranks:
        if world and not 0 <= rank < world:
            raise TraceError(f"{path}: rank {rank} of a run of {world} ranks")
    return world


def shared_clock_origins(ranks: List[tuple]) -> Optional[List[float]]:
    """Per trace of ``ranks`` (``(rank, path, threads, events, meta)``),
    the zero of its ``ts`` on the clock it names (``otherData.clock``:
    ``source``, ``host``, ``origin_us``, which shard-run writes) when every
    trace names the same clock of the same machine; else None (older
    traces, or ranks on several machines, whose clocks are not shared)."""
    origins, first = [], None
    for _, _, _, _, meta in ranks:
        clock = meta.get("clock") if isinstance(meta, dict) else None
        if not isinstance(clock, dict):
            return None
        origin, key = clock.get("origin_us"), (clock.get("source"), clock.get("host"))
        if not isinstance(origin, (int, float)) or isinstance(origin, bool) or not key[1]:
            return None
        if first is None:
            first = key
        elif key != first:
            return None
        origins.append(float(origin))
    return origins


def _why_not_aligned(ranks: List[tuple]) -> str:
    """Why shared_clock_origins found no common clock, for the page."""
    for _, path, _, _, meta in ranks:
        clock = meta.get("clock")
        if not isinstance(clock, dict):
            return (f"{os.path.basename(path)} does not say which clock its times count on "
                    f"(no otherData.clock: written by an older shard-run)")
        if shared_clock_origins([(0, path, {}, [], meta)]) is None:
            return (f"{os.path.basename(path)}'s otherData.clock names no host or numeric "
                    f"origin_us: {json.dumps(clock)}")
    return "the ranks ran on different machines, whose clocks are not synchronized"


def _check_steps_overlap(ranks: List[tuple], clocks: List[float]) -> None:
    """The traced steps of one run's ranks overlap on the machine's clock
    (every rank is in the step while the others are: they exchange data
    in it); raises TraceError naming two traces whose steps do not, e.g.
    the same step of two runs of one artifact on one machine."""
    spans = []
    for (rank, path, _, events, _), origin in zip(ranks, clocks):
        spans.append((min(e["ts"] for e in events) + origin,
                      max(e["ts"] + e["dur"] for e in events) + origin, path))
    late = max(spans, key=lambda x: x[0])
    early = min(spans, key=lambda x: x[1])
    if late[0] > early[1]:
        raise TraceError(
            f"{late[2]} and {early[2]} are traces of different runs: on the "
            f"machine's clock the step of {os.path.basename(late[2])} starts "
            f"{(late[0] - early[1]) / 1e3:.3f} ms after the step of "
            f"{os.path.basename(early[2])} ended")


def _outermost(events: List[dict]) -> List[dict]:
    """The events of one thread directly under its outermost ``step`` event
    (every outermost event when there is none)."""
    events = sorted(events, key=lambda e: (e["ts"], -e["dur"]))
    steps = [e for e in events if e.get("cat") == "step"]
    pool = [e for e in events if e.get("cat") != "step"]
    top: List[dict] = []
    end = float("-inf")
    for e in pool:
        if e["ts"] >= end - 1e-6:
            top.append(e)
            end = e["ts"] + e["dur"]
        elif e["ts"] + e["dur"] > end:
            end = e["ts"] + e["dur"]
    if steps and not top:
        top = steps
    return top


def _kind(event: dict) -> str:
    name = str(event.get("name", ""))
    if name.startswith("dist.") or event.get("cat") == "comm":
        return "comm"
    low = name.lower()
    if "bwd" in low or "backward" in low:
        return "B"
    if "fwd" in low or "forward" in low:
        return "F"
    return "other"


def _num(v: float) -> str:
    return f"{v:.2f}"


def _asset(name: str) -> str:
    with open(os.path.join(os.path.dirname(__file__), name), encoding="utf-8") as f:
        return f.read()


def predicted_figures(page: str) -> List[str]:
    """The timeline figures (``<figure>`` holding an ``svg.timeline``) of a
    ``dist-explain format=html`` page, as they are written there."""
    figures = []
    for m in re.finditer(r"<figure[^>]*>.*?</figure>", page, re.S):
        if 'class="timeline"' in m.group(0):
            figures.append(m.group(0))
    return figures


def trace_report(paths: Sequence[str], title: Optional[str] = None, width: float = 900,
                 predicted: Optional[str] = None) -> str:
    """The HTML page of the measured timeline of the traces at ``paths``
    (one per rank: rank R from a ``.rankR`` suffix, rank 0 without one, as
    ``shard-run --trace`` names them). With ``predicted`` (the text of the
    plan's ``dist-explain format=html`` page), its pipeline timelines come
    first, so that predicted and measured sit on one page."""
    if not paths:
        raise TraceError("no trace files given")
    ranks = []
    for path in paths:
        threads, events, meta = _load(path)
        ranks.append((_rank_of(path, meta), path, threads, events, meta))
    ranks.sort(key=lambda r: r[0])
    seen = [r[0] for r in ranks]
    if len(set(seen)) != len(seen):
        raise TraceError(f"two traces of the same rank: ranks {seen} from {list(paths)}")
    world = _check_one_run(ranks)
    if predicted is not None and world:
        planned = mesh_ranks(predicted)
        if planned and planned != world:
            raise TraceError(f"the --predicted page is of a plan on {planned} ranks, the "
                             f"traces of a run on {world}")
    # Lanes: per rank, per thread that has events under the step.
    # Each rank's trace has its own zero (its process's start): on one
    # machine the clock itself is shared, so the ranks are drawn on one axis
    # from the earliest step start; otherwise each from its own step's.
    clocks = shared_clock_origins(ranks)
    aligned = clocks is not None
    if aligned:
        _check_steps_overlap(ranks, clocks)
        start = min(min(e["ts"] for e in r[3]) + c for r, c in zip(ranks, clocks))
    unaligned_why = "" if aligned else _why_not_aligned(ranks)
    lanes: List[Tuple[str, List[dict]]] = []
    for i, (rank, _, threads, events, _) in enumerate(ranks):
        origin = start - clocks[i] if aligned else min(e["ts"] for e in events)
        events = [dict(e, ts=e["ts"] - origin) for e in events]
        by_tid: Dict[int, List[dict]] = {}
        for e in events:
            by_tid.setdefault(int(e.get("tid", 0)), []).append(e)
        for tid in sorted(by_tid):
            top = _outermost(by_tid[tid])
            name = threads.get(tid, f"thread {tid}")
            lanes.append((f"rank {rank} {name}", top))
    t0 = 0.0
    t1 = max(e["ts"] + e["dur"] for _, evs in lanes for e in evs)
    span_ms = max((t1 - t0) / 1e3, 1e-9)
    scale = width / span_ms

    def x(ms: float) -> float:
        return LEFT + ms * scale

    units = sum(len(evs) for _, evs in lanes)
    height = TOP + len(lanes) * (LANE_HEIGHT + LANE_GAP) + AXIS
    out = []
    title = title or "Measured step: " + ", ".join(os.path.basename(p) for p in paths)
    out.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
               f"<title>{html.escape(title)}</title>\n<style>\n{_asset('style.css')}</style>\n"
               f"</head>\n<body>\n<h1>{html.escape(title)}</h1>\n")
    count = (f"{len(ranks)} of {world} ranks" if world and len(ranks) < world
             else f"{len(ranks)} rank{'s' if len(ranks) != 1 else ''}")
    if aligned:
        out.append(f"<p class=\"sub\">{count}, {span_ms:.2f} ms from the first rank's "
                   "step start to the last rank's end (the ranks ran on one machine: drawn on "
                   "its monotonic clock)</p>\n")
    else:
        out.append(f"<p class=\"sub\">{count}, longest step {span_ms:.2f} ms (each rank "
                   f"from the start of its traced step: {html.escape(unaligned_why)})"
                   "</p>\n")
    if predicted is not None:
        figures = predicted_figures(predicted)
        if not figures:
            raise TraceError("the predicted page has no pipeline timeline (a dist-explain "
                             "format=html page of a plan with pp > 1)")
        out.append("<h2 id=\"predicted\">Predicted: the compiled schedule (dist-explain)</h2>\n"
                   "<div class=\"row\">\n" + "\n".join(figures) + "\n</div>\n")
    out.append("<h2 id=\"measured\">Measured timeline</h2>\n")
    out.append("<div class=\"legend\">" + "".join(
        f"<span><svg width=\"11\" height=\"11\"><rect class=\"{c}\" width=\"11\" height=\"11\"/></svg> {l}</span>"
        for c, l in (("unit F", "forward call"), ("unit B", "backward call"),
                     ("unit comm", "communication (dist.*)"), ("unit other", "other instruction"),
                     ("bubble", "idle"))) + "</div>\n")
    out.append(f"<figure>\n<figcaption>One lane per rank and thread; boxes: the instructions of "
               f"the step's entry function (calls as one box); hover for the name and time"
               f"</figcaption>\n<svg class=\"timeline\" id=\"timeline-measured\" data-kind=\"measured\" "
               f"data-lanes=\"{len(lanes)}\" data-units=\"{units}\" width=\"{_num(LEFT + width + 24)}\" "
               f"height=\"{_num(height)}\" xmlns=\"http://www.w3.org/2000/svg\">\n")
    out.append("<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
               "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f3f3f3\"/>"
               "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#c9c9c9\" stroke-width=\"3\"/>"
               "</pattern></defs>\n")
    for i, (name, evs) in enumerate(lanes):
        y = TOP + i * (LANE_HEIGHT + LANE_GAP)
        out.append(f"<g class=\"lane\" data-lane=\"{i}\">\n<text class=\"lane-name\" x=\"4\" "
                   f"y=\"{_num(y + LANE_HEIGHT / 2 + 4)}\">{html.escape(name)}</text>\n"
                   f"<rect class=\"lane-bg\" x=\"{LEFT}\" y=\"{_num(y)}\" width=\"{_num(width)}\" "
                   f"height=\"{LANE_HEIGHT}\"/>\n")
        cursor = 0.0
        spans = sorted(((e["ts"] - t0) / 1e3, (e["ts"] + e["dur"] - t0) / 1e3, e) for e in evs)

        def bubble(a: float, b: float) -> None:
            if b - a > span_ms * 1e-3:
                out.append(f"<rect class=\"bubble\" x=\"{_num(x(a))}\" y=\"{_num(y)}\" "
                           f"width=\"{_num((b - a) * scale)}\" height=\"{LANE_HEIGHT}\">"
                           f"<title>idle {a:.3f} to {b:.3f} ms</title></rect>\n")

        for start, end, e in spans:
            bubble(cursor, start)
            cursor = max(cursor, end)
        bubble(cursor, span_ms)
        for start, end, e in spans:
            w = max((end - start) * scale, 0.5)
            label = str(e.get("name", ""))
            out.append(f"<rect class=\"unit {_kind(e)}\" x=\"{_num(x(start))}\" y=\"{_num(y)}\" "
                       f"width=\"{_num(w)}\" height=\"{LANE_HEIGHT}\"><title>"
                       f"{html.escape(label)} ({html.escape(str(e.get('cat', '')))}): "
                       f"{start:.3f} to {end:.3f} ms</title></rect>\n")
            if w >= 7 * len(label):
                out.append(f"<text class=\"unit-label\" x=\"{_num(x(start) + w / 2)}\" "
                           f"y=\"{_num(y + LANE_HEIGHT / 2 + 4)}\" text-anchor=\"middle\">"
                           f"{html.escape(label)}</text>\n")
        out.append("</g>\n")
    axis_y = TOP + len(lanes) * (LANE_HEIGHT + LANE_GAP)
    out.append(f"<line class=\"axis\" x1=\"{LEFT}\" y1=\"{_num(axis_y)}\" x2=\"{_num(LEFT + width)}\" "
               f"y2=\"{_num(axis_y)}\"/>\n")
    step = _tick_step(span_ms)
    k = 0
    while k * step <= span_ms * (1 + 1e-9):
        out.append(f"<text class=\"tick\" x=\"{_num(x(k * step))}\" y=\"{_num(axis_y + 14)}\" "
                   f"text-anchor=\"middle\">{k * step:g}</text>\n")
        k += 1
    out.append(f"<text class=\"tick\" x=\"4\" y=\"{_num(axis_y + 14)}\">ms</text>\n</svg>\n</figure>\n")
    out.append(f"<script>\n{_asset('script.js')}</script>\n</body>\n</html>\n")
    return "".join(out)


def _tick_step(end: float) -> float:
    import math
    raw = end / 6
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag
