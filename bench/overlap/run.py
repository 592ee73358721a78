#!/usr/bin/env python3
"""Compute/communication overlap on CPU ranks: exposed communication with
`dist-overlap-collectives` off and on (issue 18, item 4).

Builds a model, compiles one plan twice with shard-opt's `autoshard-train`
(`overlap=false`: every collective blocks where the partitioner put it;
`overlap=true`, the default: dist-hoist-argument-gathers and
dist-overlap-collectives start them early), runs each with
`shard-run --comm-thread on` (Debian's OpenMPI has no progress thread: a
started collective advances only on the communication thread) in turn,
A B A B ..., and reads each run's Chrome trace of one step.

Printed per run: tokens/s, the step's time, its *exposed* communication --
the time the compute thread spends inside `dist.*` instructions (blocking
collectives, starts and waits; pack/unpack/slices excluded) -- and the
communication thread's busy time; then the medians and ratios.

    bench/overlap/run.py [--plan dp=2,zero=3] [--config ...] [--batch 8]
                         [--seq 256] [--steps 8] [--rounds 2] [--threads 1]

Sizes default to nanoGPT's Tiny Shakespeare model (6 layers, 384 hidden) at
block 256, large enough for the ZeRO-3 gathers and reduce-scatters to show.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_COMM = ("dist.pack", "dist.unpack", "dist.shard_slice", "dist.axis_index")


def exposed(trace: Path, step: int):
    """(step ms, exposed ms, comm-thread busy ms) of rank 0's trace."""
    data = json.loads(trace.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    spans = [e for e in events if e.get("ph") == "X"]
    step_ms = sum(e["dur"] for e in spans if e["name"] == f"train_step {step}") / 1e3
    comm = [e for e in spans if e.get("tid", 0) == 0 and e["name"].startswith("dist.")
            and e["name"].split(" ")[0] not in NOT_COMM]
    thread = [e for e in spans if e.get("tid", 0) != 0]
    return step_ms, sum(e["dur"] for e in comm) / 1e3, sum(e["dur"] for e in thread) / 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", default="dp=2,zero=3")
    ap.add_argument("--config", default=str(ROOT.parent / "shared" / "configs" / "models" /
                                            "nanogpt-shakespeare-char.json"))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="kernel threads per rank")
    ap.add_argument("--build", default=os.environ.get("BUILD_DIR", str(ROOT / "build")))
    args = ap.parse_args()
    build = Path(args.build)
    opt, run = build / "bin" / "shard-opt", build / "bin" / "shard-run"
    for tool in (opt, run):
        if not os.access(tool, os.X_OK):
            sys.exit(f"overlap bench: {tool} not built (scripts/setup.sh)")
    data = ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"
    ranks = 1
    for key, value in re.findall(r"(pp|dp|cp|tp)=(\d+)", args.plan):
        ranks *= int(value)
    out = Path(tempfile.mkdtemp(prefix="overlap-bench-"))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    model = out / "model.mlir"
    subprocess.run([str(build / "venv" / "bin" / "python"), "-m", "autoshard.models",
                    args.config, "--batch", str(args.batch), "--seq", str(args.seq),
                    "--vocab-multiple", "64", "-q", "-o", str(model)], env=env, check=True)
    arts = {}
    for overlap in ("false", "true"):
        arts[overlap] = out / f"overlap_{overlap}.json"
        subprocess.run([str(opt), str(model),
                        f"--autoshard-train=plan={args.plan} overlap={overlap} "
                        f"output={arts[overlap]}", "-o", os.devnull], env=env, check=True)
    trace_step = args.steps - 2
    results = {"false": [], "true": []}
    print(f"plan {args.plan} on {ranks} ranks, {args.config}, batch {args.batch}, seq {args.seq}; "
          f"{args.steps} steps, trace of step {trace_step}; --comm-thread on, "
          f"--threads {args.threads}; out {out}")
    print(f"{'overlap':8} {'tok/s':>8} {'step ms':>8} {'exposed ms':>11} {'comm busy ms':>13}")
    for r in range(args.rounds):
        for overlap in ("false", "true"):
            trace = out / f"trace_{overlap}_{r}.json"
            p = subprocess.run([str(run), str(arts[overlap]), "-n", str(ranks), "--data", str(data),
                                "--steps", str(args.steps), "--sample", "0", "--eval-interval", "0",
                                "--threads", str(args.threads), "--comm-thread", "on",
                                "--trace", str(trace), "--trace-step", str(trace_step)],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if p.returncode:
                sys.exit(f"overlap bench: shard-run failed:\n{p.stdout}")
            tok = float(re.search(r"throughput (\d+) tokens/s", p.stdout).group(1))
            step, exp, busy = exposed(trace, trace_step)
            results[overlap].append((tok, step, exp, busy))
            print(f"{overlap:8} {tok:8.0f} {step:8.1f} {exp:11.1f} {busy:13.1f}")
    med = {k: [statistics.median(x[i] for x in v) for i in range(4)] for k, v in results.items()}
    print("median   " + "  ".join(f"{k}: {m[0]:.0f} tok/s, exposed {m[2]:.1f} ms"
                                  for k, m in med.items()))
    print(f"overlap on / off: tokens/s {med['true'][0] / med['false'][0]:.2f}x, "
          f"exposed communication {med['true'][2] / max(med['false'][2], 1e-9):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
