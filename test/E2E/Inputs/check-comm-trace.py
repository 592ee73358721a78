"""Checks a shard-run --trace file for the communication track.

Usage: check-comm-trace.py TRACE.json [--no-comm]

The file must be a valid Chrome trace (an object with a `traceEvents` list
of complete "X" events with numeric ts/dur >= 0 and integer pid/tid, and
"M" metadata events). With the communication thread on, shard-run names
tid 0 "compute" and puts every communication operation (cat "comm") on
tracks of their own named "comm", "comm 2", ... (thread_name metadata);
the events of one track must nest or be disjoint. Requires at least one
comm event and one dist.wait on the compute track, and prints a summary.
With --no-comm (the thread off) there must be no comm track and no comm
event. `otherData.clock` must name the clock (steady_clock), the host and
the trace's zero on that clock (origin_us). Exit status 1 on any
violation.
"""

import argparse
import collections
import json
import sys


def fail(message):
    print(f"error: {message}")
    sys.exit(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("--no-comm", action="store_true")
    args = parser.parse_args()
    with open(args.trace, encoding="utf-8") as f:
        trace = json.load(f)
    events = trace.get("traceEvents") if isinstance(trace, dict) else None
    if not isinstance(events, list):
        fail("no traceEvents list")
    names = {}
    complete = []
    for e in events:
        if not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int):
            fail(f"event without integer pid/tid: {e}")
        if e.get("ph") == "M":
            if e.get("name") == "thread_name":
                names[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e.get("ph") == "X":
            ts, dur = e.get("ts"), e.get("dur")
            if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)) or dur < 0:
                fail(f"bad ts/dur: {e}")
            complete.append(e)
        else:
            fail(f"unexpected phase {e.get('ph')!r}: {e}")
    # The clock the ts count on, so that one machine's ranks can be aligned.
    clock = (trace.get("otherData") or {}).get("clock")
    if not isinstance(clock, dict) or clock.get("source") != "steady_clock" or \
            not clock.get("host") or not isinstance(clock.get("origin_us"), (int, float)):
        fail(f"otherData.clock must name steady_clock, a host and a numeric origin_us, "
             f"got {clock!r}")
    tracks = collections.defaultdict(list)
    for e in complete:
        tracks[(e["pid"], e["tid"])].append(e)
    # Complete events of one track must nest or be disjoint.
    for key, evs in tracks.items():
        stack = []
        for e in sorted(evs, key=lambda e: (e["ts"], -e["dur"])):
            end = e["ts"] + e["dur"]
            while stack and stack[-1] <= e["ts"]:
                stack.pop()
            if stack and end > stack[-1] + 1e-3:
                fail(f"track {names.get(key, key)}: '{e['name']}' at {e['ts']} "
                     "overlaps an enclosing event without nesting")
            stack.append(end)
    comm_tracks = {k: n for k, n in names.items() if n == "comm" or n.startswith("comm ")}
    comm_events = [e for e in complete if e.get("cat") == "comm"]
    if args.no_comm:
        if comm_tracks or comm_events:
            fail(f"{len(comm_events)} comm events on tracks {sorted(comm_tracks.values())}")
        print("no comm track")
        return 0
    compute = [k for k, n in names.items() if n == "compute"]
    if not compute:
        fail("no track named 'compute'")
    if not comm_tracks:
        fail("no track named 'comm'")
    if set(compute) & set(comm_tracks):
        fail("the comm track is the compute track")
    for e in comm_events:
        if (e["pid"], e["tid"]) not in comm_tracks:
            fail(f"comm event '{e['name']}' outside the comm tracks")
    if not comm_events:
        fail("no comm event")
    compute_events = [e for k in compute for e in tracks[k]]
    waits = [e for e in compute_events if e["name"] == "dist.wait"]
    if not waits:
        fail("no dist.wait on the compute track")
    ops = collections.Counter(e["name"] for e in comm_events)
    print(f"compute track: {len(compute_events)} events, {len(waits)} dist.wait")
    print(f"comm tracks: {', '.join(sorted(comm_tracks.values()))}")
    print("comm events: " + ", ".join(f"{n} x{c}" for n, c in sorted(ops.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
