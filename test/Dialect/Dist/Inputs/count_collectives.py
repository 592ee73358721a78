"""Recounts the collectives of a partitioned module (func form, as
dist-partition prints it) per call of an entry, calls expanded, and compares
them with dist-explain's JSON report: prints "match" or the differences.

usage: count_collectives.py PARTITIONED.mlir REPORT.json [ENTRY]
"""
import collections
import json
import re
import sys

COLLECTIVE = re.compile(
    r"dist\.(all_reduce|all_gather|reduce_scatter|all_to_all|broadcast|ppermute|send|recv)(?:_start)?"
    r" .*?axes = \[([a-z_, ]*)\]")
CALL = re.compile(r"(?:func\.)?call @([\w$.]+)\(")
FUNC = re.compile(r"func\.func (?:private |public )?@([\w$.]+)\(")


def main():
    mlir, report, entry = sys.argv[1], sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else "train_step")
    functions = collections.defaultdict(lambda: ([], []))
    current = None
    for line in open(mlir):
        m = FUNC.search(line)
        if m:
            current = m.group(1)
            continue
        if current is None:
            continue
        c = COLLECTIVE.search(line)
        if c:
            axes = ",".join(a.strip() for a in c.group(2).split(","))
            functions[current][0].append((c.group(1), axes))
        call = CALL.search(line)
        if call:
            functions[current][1].append(call.group(1))

    counts = collections.Counter()

    def expand(name):
        ops, calls = functions[name]
        counts.update(ops)
        for callee in calls:
            expand(callee)

    expand(entry)
    explained = collections.Counter()
    for row in json.load(open(report))["collectives"]:
        explained[(row["op"], ",".join(row["axes"]))] += row["count"]
    if counts == explained:
        print("match: %d collectives" % sum(counts.values()))
    else:
        for key in sorted(set(counts) | set(explained)):
            if counts[key] != explained[key]:
                print("differ:", key, "ir", counts[key], "dist-explain", explained[key])


main()
