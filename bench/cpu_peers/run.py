#!/usr/bin/env python3
"""Paired CPU benchmark of autoshard against its peers on this machine.

  bench/cpu_peers/run.py [--pairs eager,compile,ddp,jax] [--rounds 3]
                         [--steps 300] [--eval-interval 0] [--out DIR]

Each pair runs autoshard (A) and a peer (B) in turn, A B A B ... for
--rounds rounds, on the same model, data, recipe and step count:

  pair     autoshard (scripts/train.sh)             peer
  eager    1 rank, threads = cores                  torch_peer.py --mode eager   --threads cores
  compile  1 rank, threads = cores                  torch_peer.py --mode compile --threads cores
  ddp      --plan dp=2 -n 2 (1 thread per rank)     torch_peer.py --mode ddp --nproc 2 (1 thread each)
  jax      --plan dp=2,tp=2,sp=1 -n 4               jax_peer.py --mesh dp=2,tp=2 --threads cores

Pairing keeps a ratio meaningful when the machine's speed drifts; the
ratio A/B is taken round by round and printed as min / median / max (quote
the median). Per run it records train tokens/s over the steps from index 10
on (the peers' and autoshard's alike: the first steps carry allocation and
compilation), the whole command's wall time (autoshard's includes building
and compiling the model with shard-opt, torch.compile's its compile, JAX's
its jit), and the peak RSS of each process (autoshard: each rank's, from
shard-run's log; the peers report their own). The table goes to stdout, every
run's figures to OUT/results.json. Differences between the models: README.md.

Environment: AUTOSHARD_PEER_VENV (torch; default ~/.cache/autoshard-peer-venv)
and AUTOSHARD_JAX_VENV (jax; default ~/.cache/autoshard-jax-venv), made by
scripts/setup.sh and `scripts/setup.sh --jax` (python/requirements-*.txt).
Exit status 1, with the command and its output's tail, if any run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import common  # noqa: E402

HOME = Path.home()
PEER_VENV = Path(os.environ.get("AUTOSHARD_PEER_VENV", HOME / ".cache/autoshard-peer-venv"))
JAX_VENV = Path(os.environ.get("AUTOSHARD_JAX_VENV", HOME / ".cache/autoshard-jax-venv"))
PAIRS = ("eager", "compile", "ddp", "jax")


def cores() -> int:
    return len(os.sched_getaffinity(0))


class RunFailed(RuntimeError):
    pass


def run(cmd: list[str], log: Path, env: dict | None = None) -> tuple[float, str]:
    """Runs cmd to completion, output to `log`; returns (wall seconds, output)."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=dict(os.environ, **(env or {})))
    wall = time.perf_counter() - t0
    log.write_text(p.stdout)
    if p.returncode != 0:
        tail = "\n".join(p.stdout.splitlines()[-15:])
        raise RunFailed(f"exit {p.returncode}: {' '.join(cmd)}\n(log {log})\n{tail}")
    return wall, p.stdout


def autoshard(a, name: str, plan: list[str], out: Path) -> dict:
    """scripts/train.sh with `plan`; figures from its metrics.jsonl."""
    cmd = [str(ROOT / "scripts/train.sh"), *plan, "--steps", str(a.steps),
           "--eval-interval", str(a.eval_interval), "--sample", "0", "--out", str(out)]
    wall, _ = run(cmd, out.with_suffix(".log"))
    recs = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in recs if "tokens_per_s" in r and r["step"] >= common.WARMUP_STEPS]
    final = next(r for r in reversed(recs) if r.get("final"))
    # Every step has the same tokens: the mean rate is n / sum(1 / rate_i).
    seconds = sum(1.0 / r["tokens_per_s"] for r in steps)
    train = [r["train_loss"] for r in recs if "train_loss" in r]
    return {"name": name, "tokens_per_s": len(steps) / seconds if seconds else 0.0,
            "wall_s": wall, "final_train_loss": train[-1], "val_loss": final["val_loss"],
            "peak_rss_mib_per_process": final["peak_rss_mib_per_rank"]}


def peer(a, name: str, python: Path, script: str, args: list[str], log: Path) -> dict:
    if not python.exists():
        raise RunFailed(f"{python} not found: run scripts/setup.sh"
                        + (" --jax" if "jax" in script else ""))
    cmd = [str(python), str(HERE / script), *args, "--steps", str(a.steps),
           "--eval-interval", str(a.eval_interval)]
    wall, text = run(cmd, log)
    res = json.loads([line for line in text.splitlines() if line.startswith("{")][-1])
    rss = res.get("peak_rss_mib_per_rank") or [res["peak_rss_mib"]]
    return {"name": name, "tokens_per_s": res["tokens_per_s"], "wall_s": wall,
            "final_train_loss": res["final_train_loss"], "val_loss": res["val_loss"],
            "peak_rss_mib_per_process": rss}


def pair_runs(a, pair: str, out: Path):
    """The two run functions (A: autoshard, B: the peer) of `pair`."""
    n = cores()
    torch_py = PEER_VENV / "bin/python"
    jax_py = JAX_VENV / "bin/python"
    if pair == "eager":
        return (lambda r: autoshard(a, "autoshard 1 rank", [], out / f"eager-A{r}"),
                lambda r: peer(a, "torch eager", torch_py, "torch_peer.py",
                               ["--mode", "eager", "--threads", str(n)], out / f"eager-B{r}.log"))
    if pair == "compile":
        return (lambda r: autoshard(a, "autoshard 1 rank", [], out / f"compile-A{r}"),
                lambda r: peer(a, "torch.compile", torch_py, "torch_peer.py",
                               ["--mode", "compile", "--threads", str(n)], out / f"compile-B{r}.log"))
    if pair == "ddp":
        return (lambda r: autoshard(a, "autoshard dp=2", ["--plan", "dp=2", "-n", "2"],
                                    out / f"ddp-A{r}"),
                lambda r: peer(a, "torch DDP gloo x2", torch_py, "torch_peer.py",
                               ["--mode", "ddp", "--nproc", "2",
                                "--threads", str(max(1, n // 2))], out / f"ddp-B{r}.log"))
    if pair == "jax":
        return (lambda r: autoshard(a, "autoshard dp=2,tp=2,sp=1",
                                    ["--plan", "dp=2,tp=2,sp=1", "-n", "4"], out / f"jax-A{r}"),
                lambda r: peer(a, "jax jit dp=2,tp=2", jax_py, "jax_peer.py",
                               ["--mesh", "dp=2,tp=2", "--threads", str(n)], out / f"jax-B{r}.log"))
    raise ValueError(pair)


def spread(xs: list[float]) -> str:
    return f"{min(xs):.2f} / {statistics.median(xs):.2f} / {max(xs):.2f}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", default=",".join(PAIRS),
                   help=f"comma-separated subset of {','.join(PAIRS)}")
    p.add_argument("--rounds", type=int, default=3, help="A B rounds per pair (>= 1)")
    p.add_argument("--steps", type=int, default=300,
                   help="training steps per run (default 300)")
    p.add_argument("--eval-interval", type=int, default=0,
                   help="steps between evaluations, 0 = none (default 0)")
    p.add_argument("--out", default=str(ROOT / "build/bench/cpu_peers"),
                   help="directory of results.json and the runs' outputs "
                        "(default build/bench/cpu_peers)")
    a = p.parse_args()
    pairs = [x for x in a.pairs.split(",") if x]
    bad = [x for x in pairs if x not in PAIRS]
    if bad or not pairs:
        p.error(f"--pairs {a.pairs!r}: unknown {bad or 'empty'}; choose from {','.join(PAIRS)}")
    if a.rounds < 1 or a.steps <= common.WARMUP_STEPS:
        p.error(f"--rounds {a.rounds} must be >= 1 and --steps {a.steps} > {common.WARMUP_STEPS}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"{cores()} cores, {a.steps} steps, {a.rounds} rounds per pair (A B A B ...)", flush=True)

    results = {}
    try:
        for pair in pairs:
            run_a, run_b = pair_runs(a, pair, out)
            rounds = []
            for r in range(a.rounds):
                ra, rb = run_a(r), run_b(r)
                rounds.append((ra, rb))
                print(f"  {pair} round {r}: {ra['name']} {ra['tokens_per_s']:.0f} tok/s, "
                      f"{rb['name']} {rb['tokens_per_s']:.0f} tok/s, "
                      f"ratio {ra['tokens_per_s'] / rb['tokens_per_s']:.2f}", flush=True)
            results[pair] = rounds
    except RunFailed as e:
        print(f"run.py: error: {e}", file=sys.stderr)
        return 1
    (out / "results.json").write_text(json.dumps(results, indent=1))

    print(f"\n{'pair':8} {'A tok/s':>9} {'B tok/s':>9}  {'A/B tok/s min/med/max':>22}  "
          f"{'wall A/B (med, s)':>18}  {'peak RSS/process MiB A | B':>26}  losses A | B (train, val)")
    for pair, rounds in results.items():
        ta = [x["tokens_per_s"] for x, _ in rounds]
        tb = [y["tokens_per_s"] for _, y in rounds]
        ratios = [x / y for x, y in zip(ta, tb)]
        wa = statistics.median(x["wall_s"] for x, _ in rounds)
        wb = statistics.median(y["wall_s"] for _, y in rounds)
        rss_a = max(max(x["peak_rss_mib_per_process"]) for x, _ in rounds)
        rss_b = max(max(y["peak_rss_mib_per_process"]) for _, y in rounds)
        la, lb = rounds[-1][0], rounds[-1][1]
        print(f"{pair:8} {statistics.median(ta):9.0f} {statistics.median(tb):9.0f}  "
              f"{spread(ratios):>22}  {wa:8.1f} / {wb:7.1f}  {rss_a:12.0f} | {rss_b:11.0f}  "
              f"{la['final_train_loss']:.3f}, {la['val_loss']:.3f} | "
              f"{lb['final_train_loss']:.3f}, {lb['val_loss']:.3f}")
    print(f"\nA = autoshard, B = peer; every run: {out / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
