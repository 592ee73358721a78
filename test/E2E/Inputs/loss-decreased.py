"""Reads a shard-run --log JSONL file and prints the first and last val loss.

Exit status 1 unless the last val loss is below the first (training made
progress), or when the log has fewer than two val-loss records.
"""

import json
import sys


def main(path):
    vals = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                rec = json.loads(line)
                if "val_loss" in rec:
                    vals.append((rec["step"], rec["val_loss"]))
    if len(vals) < 2:
        print(f"{path}: fewer than two val-loss records")
        return 1
    (s0, v0), (s1, v1) = vals[0], vals[-1]
    ok = v1 < v0
    print(f"val loss step {s0} {v0:.4f} -> step {s1} {v1:.4f}: "
          f"{'decreased' if ok else 'did not decrease'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
