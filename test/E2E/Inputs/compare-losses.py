"""Compares the train losses of two shard-run --log JSONL files step by step.

Usage: compare-losses.py REFERENCE.jsonl OTHER.jsonl [--steps N] [--rtol R]
                         [--key KEY]

The first N train-step records (default 3) of both logs must exist and their
`train_loss` (or KEY, e.g. grad_norm) must agree within relative error R
(default 1e-5, DESIGN.md §6; 0: bitwise the same).
Prints one line per step and a summary; exit status 1 on any mismatch or a
missing step.
"""

import argparse
import json
import sys


def train_losses(path, key="train_loss"):
    losses = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                rec = json.loads(line)
                if "train_loss" in rec and key in rec:
                    losses[rec["step"]] = rec[key]
    return losses


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("reference")
    parser.add_argument("other")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--key", default="train_loss")
    args = parser.parse_args()
    ref = train_losses(args.reference, args.key)
    other = train_losses(args.other, args.key)
    steps = sorted(ref)[: args.steps]
    if len(steps) < args.steps:
        print(f"{args.reference}: only {len(steps)} train steps, "
              f"expected {args.steps}")
        return 1
    worst, ok = 0.0, True
    for step in steps:
        if step not in other:
            print(f"step {step}: missing from {args.other}")
            ok = False
            continue
        err = abs(other[step] - ref[step]) / max(abs(ref[step]), 1e-30)
        worst = max(worst, err)
        good = err <= args.rtol
        ok = ok and good
        print(f"step {step}: loss {ref[step]:.7f} vs {other[step]:.7f}, "
              f"relative error {err:.2e} {'ok' if good else 'MISMATCH'}")
    print(f"{len(steps)} steps {'match' if ok else 'differ'} "
          f"(max relative error {worst:.2e}, tolerance {args.rtol:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
