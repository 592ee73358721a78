"""Checks that the peak memory of shard-run outputs strictly decreases.

Usage: peak-decreases.py NAME=OUT [NAME=OUT ...]

Each OUT is a shard-run stdout with a line `... peak X MiB (N bytes,
predicted N)`; the peaks (bytes) must decrease strictly in the order given.
Prints one line per run; exit status 1 otherwise.
"""

import re
import sys


def main():
    peaks = []
    for arg in sys.argv[1:]:
        name, path = arg.split("=", 1)
        with open(path, encoding="utf-8") as f:
            m = re.search(r"peak .*\((\d+) bytes, predicted (\d+)\)", f.read())
        if not m:
            print(f"{name}: no peak line in {path}")
            return 1
        peaks.append((name, int(m.group(1))))
        print(f"{name}: peak {int(m.group(1))} bytes")
    ok = all(a[1] > b[1] for a, b in zip(peaks, peaks[1:]))
    print("peaks decrease" if ok else "peaks do not decrease")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
