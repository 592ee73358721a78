#!/usr/bin/env python3
"""Checkpoint save/load bandwidth of shard-run beside the disk's raw bandwidth.

Compiles GPT-2 124M (../shared/configs/models/gpt2-124m.json; vocabulary
padded to 50304, fp32 parameters + AdamW moments: about 1.49 GB of state) for
one rank and for 8 ranks (dp=8,zero=3: every rank holds 1/8 of the state
and writes it), then alternates, pair by pair on the same disk:

  A   shard-run ... --steps 1 --save-dir D   (the synchronous save after the
      step: its `save_s` from the JSONL log, the training loop's stall)
  B   raw write of the same bytes, the faster of
        dd if=/dev/zero of=D/raw bs=8M conv=fsync         (buffered, fsynced)
        dd if=/dev/zero of=D/raw bs=4M oflag=direct conv=fsync  (direct I/O)
  A'  shard-run ... --steps 2 --save-interval 1 --async-save (the stall of
      the asynchronous save after step 1, `save_stall_s`, and its `save_s`)
  L   shard-run ... --resume D/step-000001 --steps 2 (the load: rank 0's
      `resumed ... in T s`, checksums included; the last rank to finish
      bounds it, since the load ends with a collective)
  R   raw read, the faster of dd if=D/raw of=/dev/null bs=8M (buffered) and
      the same with iflag=direct bs=4M

Before each load and each raw read the page cache is dropped (as root:
/proc/sys/vm/drop_caches), so both read from the disk; without root both
read what was just written, mostly from the page cache.

and prints min / median / max of each figure and the ratios B/A and R/L per
pair (bandwidth of the checkpoint over the raw bandwidth). The goal (issue
14) is a ratio >= 0.5 for saves and loads.

  bench/checkpoint/run.py [--reps 3] [--ranks 1,8] [--dir build/bench-checkpoint]

Needs the build (scripts/setup.sh); takes a few minutes on 2 cores (each
repetition trains one GPT-2 step per rank count).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def compile_model(build: Path, out: Path, plan: str) -> Path:
    cmd = [str(ROOT / "scripts/train.sh"), "--config", str(SHARED / "configs/models/gpt2-124m.json"),
           "--batch", "8", "--seq", "32", "--steps", "1", "--eval-interval", "0",
           "--eval-iters", "1", "--sample", "0", "--out", str(out)]
    if plan:
        cmd[1:1] = ["--plan", plan]
    if not (out / "model.json").exists():
        print(f"compiling GPT-2 124M{' for ' + plan if plan else ''} ...", flush=True)
        sh(cmd, env=dict(os.environ, BUILD_DIR=str(build)))
    return out / "model.json"


def drop_caches() -> bool:
    """Empties the page cache (root only), so reads come from the disk."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def stats(xs):
    return f"{min(xs):8.3f} {statistics.median(xs):8.3f} {max(xs):8.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ranks", default="1,8")
    ap.add_argument("--dir", type=Path, default=ROOT / "build/bench-checkpoint")
    ap.add_argument("--build", type=Path, default=Path(os.environ.get("BUILD_DIR", ROOT / "build")))
    args = ap.parse_args()
    shard_run = args.build / "bin/shard-run"
    data = SHARED / "data/tinyshakespeare.txt"
    args.dir.mkdir(parents=True, exist_ok=True)
    rows = []
    cold = False
    for n in map(int, args.ranks.split(",")):
        plan = "" if n == 1 else f"dp={n},zero=3"
        art = compile_model(args.build, args.dir / f"gpt2-{n}", plan)
        base = [str(shard_run), *(["-n", str(n)] if n > 1 else []), str(art), "--data", str(data),
                "--warmup", "1", "--decay-steps", "2", "--eval-interval", "0", "--eval-iters", "1",
                "--sample", "0"]
        save, load, raw_w, raw_r, sizes, stall, async_s = [], [], [], [], [], [], []

        def timed(cmd, cold=False):
            if cold:
                drop_caches()
            t = time.perf_counter()
            sh(cmd)
            return time.perf_counter() - t

        for rep in range(args.reps):
            ck = args.dir / f"ckpt-{n}"
            shutil.rmtree(ck, ignore_errors=True)
            log = args.dir / f"save-{n}.jsonl"
            log.unlink(missing_ok=True)
            sh([*base, "--steps", "1", "--save-dir", str(ck), "--log", str(log)])
            rec = [json.loads(l) for l in log.read_text().splitlines() if '"checkpoint"' in l][-1]
            save.append(rec["save_s"])
            nbytes = rec["save_bytes"]
            sizes.append(nbytes)
            raw = ck / "raw"
            w_buf = timed(["dd", "if=/dev/zero", f"of={raw}", "bs=8M",
                           f"count={(nbytes + (8 << 20) - 1) >> 23}", "conv=fsync"])
            raw.unlink()
            w_dir = timed(["dd", "if=/dev/zero", f"of={raw}", "bs=4M",
                           f"count={(nbytes + (4 << 20) - 1) >> 22}", "oflag=direct",
                           "conv=fsync"])
            raw_w.append(min(w_buf, w_dir))
            alog = args.dir / f"async-{n}.jsonl"
            alog.unlink(missing_ok=True)
            sh([*base, "--steps", "2", "--save-interval", "1", "--async-save", "--save-dir",
                str(args.dir / f"ckpt-async-{n}"), "--log", str(alog)])
            arec = [json.loads(l) for l in alog.read_text().splitlines() if '"checkpoint"' in l][0]
            stall.append(arec["save_stall_s"])
            async_s.append(arec["save_s"])
            shutil.rmtree(args.dir / f"ckpt-async-{n}", ignore_errors=True)
            cold = drop_caches()
            out = sh([*base, "--steps", "2", "--resume", str(ck / "step-000001")]).stdout
            m = re.search(r"resumed from .* in ([0-9.]+) s", out)
            if not m:
                print(out, file=sys.stderr)
                raise SystemExit("no 'resumed ... in T s' line")
            load.append(float(m.group(1)))
            r_buf = timed(["dd", f"if={raw}", "of=/dev/null", "bs=8M"], cold=True)
            r_dir = timed(["dd", f"if={raw}", "of=/dev/null", "bs=4M", "iflag=direct"], cold=True)
            raw_r.append(min(r_buf, r_dir))
            raw.unlink()
            print(f"  {n} rank(s), rep {rep + 1}: save {save[-1]:.3f} s, raw write {raw_w[-1]:.3f} s "
                  f"(buffered {w_buf:.3f}, direct {w_dir:.3f}), async stall {stall[-1]:.3f} s "
                  f"(save {async_s[-1]:.3f} s), load {load[-1]:.3f} s, raw read {raw_r[-1]:.3f} s "
                  f"(buffered {r_buf:.3f}, direct {r_dir:.3f})", flush=True)
        mb = sizes[0] / 1e6
        rows.append((n, mb, save, raw_w, load, raw_r, stall, async_s))

    print(f"\nGPT-2 124M state (params + AdamW m, v, fp32); times in s (min median max), "
          f"{args.reps} pairs each")
    for n, mb, save, raw_w, load, raw_r, stall, async_s in rows:
        print(f"\n{n} rank(s){' (dp=' + str(n) + ',zero=3)' if n > 1 else ''}: {mb:.0f} MB")
        print(f"  save            {stats(save)}   {mb / statistics.median(save):7.0f} MB/s")
        print(f"  raw write (dd)  {stats(raw_w)}   {mb / statistics.median(raw_w):7.0f} MB/s")
        print(f"  async save: stall {stats(stall)}, whole save {stats(async_s)}")
        print(f"  save/raw bandwidth ratio {stats([w / s for s, w in zip(save, raw_w)])}")
        print(f"  load            {stats(load)}   {mb / statistics.median(load):7.0f} MB/s")
        print(f"  raw read (dd)   {stats(raw_r)}   {mb / statistics.median(raw_r):7.0f} MB/s")
        print(f"  load/raw bandwidth ratio {stats([r / l for l, r in zip(load, raw_r)])}")
    print("\nReads are " + ("cold (page cache dropped before each load and raw read)"
                             if cold else "warm (could not drop the page cache: not root)"))
    print("A synchronous save stalls the training loop for its whole time; an asynchronous one "
          "(--async-save) for the stall shown.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
