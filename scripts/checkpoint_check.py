"""Checkpoint suite: shard-run's sharded checkpoints (issue 14, item 7).

Called by scripts/checkpoint_check.sh (see its header for the options).
Compiles a few plans of the nanoGPT character model (and Mixtral, Llama)
once with scripts/train.sh, then runs shard-run directly, with one explicit
learning-rate schedule, and checks:

  same_plan   a run resumed from its own checkpoint under the same plan is bit
              for bit the uninterrupted run (train_loss, grad_norm, val_loss);
  cross_plan  a checkpoint saved under one plan and resumed under another
              continues within 1e-5 relative of the uninterrupted run;
  fault       SIGKILL of one rank ends the job with an error naming it, and
              --resume latest reproduces the uninterrupted run bit for bit;
  signal      SIGTERM (the multi-rank launcher) and SIGINT (one rank) stop at
              a step boundary with a checkpoint, exit 0, and resume bit for bit;
  bad_input   damaged or foreign checkpoints, a full disk and an unwritable
              --save-dir each fail with a "shard-run: error:" line naming the
              problem, exit 1 or 2, and no training;
  async       --async-save writes the same bytes as a synchronous save and
              trains the same; it stops on SIGTERM and fails cleanly on a
              full disk like a synchronous save;
  python      the rank files open with safetensors.numpy, and their chunks
              (manifest.json), read with autoshard.checkpoint and reassembled
              independently here, give every parameter the values of
              `shard-run --save-params` at the same step.

Prints a table and "N passed, N failed"; writes a JUnit XML report with
--junit.  Exit status 1 if any case failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple
from xml.sax.saxutils import quoteattr

HEADLINE = "dp=2,tp=2,pp=2,sp=1,zero=1,mb=4,schedule=1f1b"

# name -> (plan or None for one rank, model config relative to the repo; None: nanoGPT)
ARTIFACTS: Dict[str, Tuple[Optional[str], Optional[str]]] = {
    "1rank": (None, None),
    "headline": (HEADLINE, None),
    "z3": ("dp=4,zero=3", None),
    "dp2tp2": ("dp=2,tp=2", None),
    "tp2": ("tp=2", None),
    "pp2i": ("pp=2,mb=4,schedule=interleaved,vpp=2", None),
    "cp2": ("cp=2", None),
    "dp2": ("dp=2", None),
    "moe_ep4": ("dp=4,ep=4", "configs/models/mixtral-tiny-cpu.json"),
    "moe_ep2z3": ("dp=2,ep=2,zero=3", "configs/models/mixtral-tiny-cpu.json"),
    "moe_tp2ep2": ("tp=2,ep=2", "configs/models/mixtral-tiny-cpu.json"),
    "llama": (None, "configs/models/llama-tiny-cpu.json"),
}

STEPS = 12        # the short runs: checkpoint at SAVE_AT, compared up to STEPS
SAVE_AT = 6
WARMUP = 5
LONG_STEPS = 300  # the runs that are interrupted (long enough to be still running)
LONG_EVAL = 3     # their eval interval (val_loss compared where both runs have one)


class Fail(Exception):
    """A failed check of a case (the message goes to the table and JUnit)."""


class Skip(Exception):
    """A case that cannot run here (e.g. mount not permitted)."""


@dataclass
class Result:
    group: str
    name: str
    status: str  # pass, fail, skip
    message: str
    note: str
    seconds: float


@dataclass
class Log:
    """The JSONL metrics of one run."""
    train: Dict[int, dict] = field(default_factory=dict)
    val: Dict[int, float] = field(default_factory=dict)
    records: List[dict] = field(default_factory=list)

    @staticmethod
    def read(path: Path) -> "Log":
        log = Log()
        if not path.exists():
            return log
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            log.records.append(r)
            if "train_loss" in r:
                log.train[r["step"]] = r
            if "val_loss" in r:
                log.val[r["step"]] = r["val_loss"]
        return log


@dataclass
class Run:
    cmd: List[str]
    rc: int
    out: str
    log: Log
    seconds: float

    def brief(self, lines: int = 12) -> str:
        tail = "\n".join(self.out.strip().splitlines()[-lines:])
        return f"$ {' '.join(self.cmd)}\n(exit {self.rc})\n{tail}"


@dataclass
class Artifact:
    path: Path
    ranks: int


@dataclass
class Reference:
    """An uninterrupted STEPS-step run that saved at SAVE_AT and at the end."""
    art: str
    run: Run
    ckpt: Path    # its --save-dir
    params: Path  # its --save-params (after step STEPS)


# --- processes ----------------------------------------------------------------

def ppid_map() -> Dict[int, List[int]]:
    kids: Dict[int, List[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        rest = stat[stat.rfind(")") + 2:].split()
        kids.setdefault(int(rest[1]), []).append(int(d))
    return kids


def descendants(pid: int) -> List[int]:
    kids, out, pending = ppid_map(), [], [pid]
    while pending:
        p = pending.pop()
        for c in kids.get(p, []):
            out.append(c)
            pending.append(c)
    return out


def kill_tree(pid: int) -> None:
    """SIGKILLs `pid` and everything it started (mpirun runs in its own group)."""
    for p in [pid] + descendants(pid):
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def rank_pids(pid: int) -> Dict[int, int]:
    """World rank -> pid of the rank processes below `pid` (OMPI_COMM_WORLD_RANK)."""
    ranks = {}
    for p in descendants(pid):
        try:
            env = Path(f"/proc/{p}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for kv in env:
            if kv.startswith(b"OMPI_COMM_WORLD_RANK="):
                ranks[int(kv.split(b"=", 1)[1])] = p
    return ranks


class Job:
    """A background process (own session), output to a file."""

    def __init__(self, ctx: "Ctx", cmd: List[str], out: Path):
        if ctx.verbose:
            print("  $ " + " ".join(cmd) + " &", flush=True)
        self.cmd, self.out_path, self.t0 = cmd, out, time.monotonic()
        self.fh = open(out, "w")
        self.p = subprocess.Popen(cmd, stdout=self.fh, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True,
                                  env=ctx.env)

    def wait(self, timeout: float) -> Optional[int]:
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def output(self) -> str:
        return self.out_path.read_text(errors="replace")

    def kill(self) -> None:
        if self.p.poll() is None:
            kill_tree(self.p.pid)
            self.p.wait()
        self.fh.close()


# --- context ------------------------------------------------------------------

class Ctx:
    def __init__(self, args):
        self.root = Path(args.root).resolve()
        self.build = Path(args.build).resolve()
        self.py = args.py
        self.shard_run = str(self.build / "bin" / "shard-run")
        self.data = str((self.root / ".." / "shared" / "data" / "tinyshakespeare.txt").resolve())
        self.out = Path(args.out).resolve()
        self.verbose = args.verbose
        self.timeout = args.timeout
        self.env = dict(os.environ, BUILD_DIR=str(self.build))
        self.reuse = args.reuse
        self.arts: Dict[str, object] = {}
        self.refs: Dict[str, object] = {}

    # Artifacts, compiled once (scripts/train.sh: build, autodiff, plan passes,
    # export; it also runs one step, which is quick).
    def art(self, name: str) -> Artifact:
        if name not in self.arts:
            self.arts[name] = self._compile(name)
        a = self.arts[name]
        if isinstance(a, Fail):
            raise Fail(f"artifact '{name}' did not build: {a}")
        return a

    def _compile(self, name: str):
        plan, config = ARTIFACTS[name]
        d = self.out / "art" / name
        model = d / "model.json"
        if not (self.reuse and model.exists()):
            shutil.rmtree(d, ignore_errors=True)
            cmd = [str(self.root / "scripts" / "train.sh"), "--batch", "16", "--steps", "1",
                   "--sample", "0", "--eval-interval", "0", "--eval-iters", "1", "--out", str(d)]
            if plan:
                cmd += ["--plan", plan]
            if config:
                cmd += ["--config", str(self.root / config)]
            rc, out = self.run_cmd(cmd, timeout=max(self.timeout, 300))
            if rc != 0 or not model.exists():
                tail = "\n".join(out.strip().splitlines()[-8:])
                return Fail(f"$ {' '.join(cmd)} (exit {rc})\n{tail}")
        world = json.loads(model.read_text()).get("world_size", 1)
        return Artifact(model, int(world))

    def run_cmd(self, cmd: List[str], timeout: Optional[float] = None) -> Tuple[int, str]:
        """Runs cmd in its own session; on timeout kills it and all it started."""
        if self.verbose:
            print("  $ " + " ".join(cmd), flush=True)
        timeout = timeout or self.timeout
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             stdin=subprocess.DEVNULL, start_new_session=True, env=self.env)
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_tree(p.pid)
            out, _ = p.communicate()
            return 124, out + f"\n[checkpoint_check: timed out after {timeout:.0f}s; killed]"
        return p.returncode, out

    def train_cmd(self, art: str, log: Path, steps: int = STEPS, decay: int = STEPS,
                  eval_interval: int = SAVE_AT, eval_iters: int = 2,
                  save_dir: Optional[Path] = None, save_interval: Optional[int] = None,
                  keep: Optional[int] = None, resume: Optional[str] = None,
                  save_params: Optional[Path] = None,
                  check_replicas: bool = False, async_save: bool = False) -> List[str]:
        a = self.art(art)
        cmd = [self.shard_run] + (["-n", str(a.ranks)] if a.ranks > 1 else [])
        cmd += [str(a.path), "--data", self.data, "--steps", str(steps),
                "--warmup", str(WARMUP), "--decay-steps", str(decay),
                "--eval-interval", str(eval_interval), "--eval-iters", str(eval_iters),
                "--sample", "0", "--log", str(log)]
        if save_dir is not None:
            cmd += ["--save-dir", str(save_dir)]
        if save_interval is not None:
            cmd += ["--save-interval", str(save_interval)]
        if keep is not None:
            cmd += ["--keep", str(keep)]
        if resume is not None:
            cmd += ["--resume", str(resume)]
        if save_params is not None:
            cmd += ["--save-params", str(save_params)]
        if check_replicas:
            cmd += ["--check-replicas"]
        if async_save:
            cmd += ["--async-save"]
        return cmd

    def train(self, art: str, log: Path, timeout: Optional[float] = None, **kw) -> Run:
        if log.exists():
            log.unlink()
        cmd = self.train_cmd(art, log, **kw)
        t0 = time.monotonic()
        rc, out = self.run_cmd(cmd, timeout)
        log.with_suffix(".out").write_text(f"$ {' '.join(cmd)}\n{out}(exit {rc})\n")
        return Run(cmd, rc, out, Log.read(log), time.monotonic() - t0)

    def train_ok(self, art: str, log: Path, **kw) -> Run:
        r = self.train(art, log, **kw)
        if r.rc != 0:
            raise Fail("run failed:\n" + r.brief())
        return r

    # Uninterrupted reference runs (shared by several cases).
    def ref(self, art: str) -> Reference:
        if art not in self.refs:
            d = self.out / "ref" / art
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir(parents=True)
            try:
                r = self.train_ok(art, d / "log.jsonl", save_dir=d / "ckpt",
                                  save_interval=SAVE_AT, save_params=d / "params.safetensors")
                if sorted(r.log.train) != list(range(STEPS)):
                    raise Fail(f"trained steps {sorted(r.log.train)}, expected 0..{STEPS - 1}")
                for s in (SAVE_AT, STEPS):
                    if not (d / "ckpt" / step_dir(s) / "manifest.json").exists():
                        raise Fail(f"no checkpoint {d / 'ckpt' / step_dir(s)} after the run")
                self.refs[art] = Reference(art, r, d / "ckpt", d / "params.safetensors")
            except Fail as e:
                self.refs[art] = Fail(f"reference run of '{art}' failed: {e}")
        ref = self.refs[art]
        if isinstance(ref, Fail):
            raise ref
        return ref


# --- checks -------------------------------------------------------------------

def step_dir(step: int) -> str:
    return f"step-{step:06d}"


def complete_steps(save_dir: Path) -> List[int]:
    """Steps of the complete checkpoints (step-N with a manifest) under save_dir."""
    out = []
    if save_dir.is_dir():
        for p in save_dir.iterdir():
            m = re.fullmatch(r"step-(\d+)", p.name)
            if m and (p / "manifest.json").exists():
                out.append(int(m.group(1)))
    return sorted(out)


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-30)


def compare(ref: Log, got: Log, start: int, end: int, tol: float,
            need_final_val: bool = True) -> float:
    """Steps start..end-1 of `got` against `ref`: train_loss and grad_norm, and
    val_loss wherever both have one from `start` on; tol 0 means equal floats.
    `got` must have trained exactly those steps (a resumed run starts at the
    checkpoint's step).  Returns the largest relative difference."""
    steps = sorted(got.train)
    if steps != list(range(start, end)):
        shown = f"{steps[0]}..{steps[-1]}" if steps else "none"
        raise Fail(f"the run trained steps {shown} ({len(steps)}), expected {start}..{end - 1}")
    worst, bad = 0.0, []
    for s in steps:
        if s not in ref.train:
            raise Fail(f"the reference has no step {s}")
        for key in ("train_loss", "grad_norm"):
            if key not in got.train[s] or key not in ref.train[s]:
                raise Fail(f"step {s}: no {key} in the log")
            a, b = got.train[s][key], ref.train[s][key]
            e = rel(a, b)
            worst = max(worst, e)
            if (tol == 0 and a != b) or e > tol:
                bad.append(f"step {s} {key} {a!r} vs {b!r} (rel {e:.2e})")
    vals = [s for s in sorted(got.val) if s >= start and s in ref.val]
    if need_final_val and end not in vals:
        raise Fail(f"no final val_loss at step {end} in both runs (got {sorted(got.val)}, "
                   f"reference {sorted(ref.val)})")
    for s in vals:
        a, b = got.val[s], ref.val[s]
        e = rel(a, b)
        worst = max(worst, e)
        if (tol == 0 and a != b) or e > tol:
            bad.append(f"step {s} val_loss {a!r} vs {b!r} (rel {e:.2e})")
    if bad:
        what = "not bit for bit" if tol == 0 else f"beyond {tol:g} relative"
        raise Fail(f"{len(bad)} values {what}: " + "; ".join(bad[:4]))
    return worst


def check_resumed(run: Run, ckpt: Path, step: int) -> None:
    if f"resumed from {ckpt} at step {step}" not in run.out:
        raise Fail(f"no 'resumed from {ckpt} at step {step}' line:\n" + run.brief())
    if "--check-replicas" in run.cmd and "replicas: every copy" not in run.out:
        raise Fail("--check-replicas did not report identical replicas:\n" + run.brief())


# --- scenarios ----------------------------------------------------------------

def same_plan(art: str):
    def case(ctx: Ctx, d: Path) -> str:
        ref = ctx.ref(art)
        ckpt = ref.ckpt / step_dir(SAVE_AT)
        r = ctx.train_ok(art, d / "resumed.jsonl", resume=str(ckpt), check_replicas=True)
        check_resumed(r, ckpt, SAVE_AT)
        compare(ref.run.log, r.log, SAVE_AT, STEPS, 0.0)
        return f"steps {SAVE_AT}..{STEPS - 1} + val bit for bit"
    return case


def cross_plan(src: str, dst: str, tol: float = 1e-5):
    def case(ctx: Ctx, d: Path) -> str:
        ref = ctx.ref(src)
        ckpt = ref.ckpt / step_dir(SAVE_AT)
        r = ctx.train_ok(dst, d / "resumed.jsonl", resume=str(ckpt), check_replicas=True)
        check_resumed(r, ckpt, SAVE_AT)
        return f"max rel {compare(ref.run.log, r.log, SAVE_AT, STEPS, tol):.1e}"
    return case


def chain(ctx: Ctx, d: Path) -> str:
    """8 ranks (headline) -> step 6 -> 4 ranks (dp=4,zero=3) -> step 9 -> 1 rank."""
    ref = ctx.ref("headline")
    ck6 = ref.ckpt / step_dir(SAVE_AT)
    leg1 = ctx.train_ok("z3", d / "leg1.jsonl", resume=str(ck6), save_dir=d / "ckpt",
                        save_interval=3, check_replicas=True)
    check_resumed(leg1, ck6, SAVE_AT)
    e1 = compare(ref.run.log, leg1.log, SAVE_AT, STEPS, 1e-5)
    ck9 = d / "ckpt" / step_dir(9)
    if complete_steps(d / "ckpt") != [9, 12]:
        raise Fail(f"the 4-rank leg saved {complete_steps(d / 'ckpt')}, expected [9, 12]")
    man = json.loads((ck9 / "manifest.json").read_text())
    if man.get("world_size") != 4 or man.get("plan", {}).get("zero") != 3:
        raise Fail(f"{ck9}/manifest.json: world_size {man.get('world_size')}, plan "
                   f"{man.get('plan')}; expected 4 ranks, zero=3")
    leg2 = ctx.train_ok("1rank", d / "leg2.jsonl", resume=str(ck9))
    check_resumed(leg2, ck9, 9)
    e2 = compare(ref.run.log, leg2.log, 9, STEPS, 1e-5)
    return f"8->4: {e1:.1e}, 4->1: {e2:.1e} max rel"


def start_long(ctx: Ctx, d: Path, art: str, name: str, save_interval: int = 3,
               keep: Optional[int] = None, async_save: bool = False) -> Tuple[Job, Path, Path]:
    save, log = d / f"{name}.ckpt", d / f"{name}.jsonl"
    cmd = ctx.train_cmd(art, log, steps=LONG_STEPS, decay=LONG_STEPS,
                        eval_interval=LONG_EVAL, eval_iters=1, save_dir=save,
                        save_interval=save_interval, keep=keep, async_save=async_save)
    return Job(ctx, cmd, d / f"{name}.out"), save, log


def wait_for_dir(job: Job, path: Path, timeout: float) -> None:
    t0 = time.monotonic()
    while not path.is_dir():
        if job.p.poll() is not None:
            raise Fail(f"the run ended (exit {job.p.returncode}) before {path} existed:\n"
                       + "\n".join(job.output().strip().splitlines()[-10:]))
        if time.monotonic() - t0 > timeout:
            raise Fail(f"{path} did not appear within {timeout:.0f}s")
        time.sleep(0.01)


def resume_latest_vs_reference(ctx: Ctx, d: Path, art: str, save: Path, name: str) -> str:
    """--resume latest from `save` for 6 more steps, bit for bit against an
    uninterrupted run of the same flags and steps."""
    done = complete_steps(save)
    if not done:
        raise Fail(f"no complete checkpoint under {save}")
    latest = done[-1]
    end = latest + 6
    common = dict(steps=end, decay=LONG_STEPS, eval_interval=LONG_EVAL, eval_iters=1,
                  save_interval=3)
    r = ctx.train_ok(art, d / f"{name}.resumed.jsonl", save_dir=save, resume="latest",
                     **common)
    check_resumed(r, save / step_dir(latest), latest)
    ref = ctx.train_ok(art, d / f"{name}.reference.jsonl", save_dir=d / f"{name}.ref.ckpt",
                       **common)
    compare(ref.log, r.log, latest, end, 0.0)
    return f"latest step {latest}; steps {latest}..{end - 1} bit for bit"


def fault(ctx: Ctx, d: Path) -> str:
    """SIGKILL of rank 2 of a 4-rank job after its step-6 checkpoint."""
    art, victim = "dp2tp2", 2
    job, save, _ = start_long(ctx, d, art, "killed")
    try:
        wait_for_dir(job, save / step_dir(6), ctx.timeout)
        ranks = rank_pids(job.p.pid)
        if victim not in ranks:
            raise Fail(f"no rank {victim} process found below pid {job.p.pid} "
                       f"(found ranks {sorted(ranks)})")
        os.kill(ranks[victim], signal.SIGKILL)
        t0 = time.monotonic()
        rc = job.wait(30)
        took = time.monotonic() - t0
        if rc is None:
            raise Fail(f"the job still runs 30 s after SIGKILL of rank {victim} (a hang)")
    finally:
        job.kill()
    out = job.output()
    if rc == 0:
        raise Fail(f"exit 0 after SIGKILL of rank {victim}:\n{out[-800:]}")
    if not re.search(rf"rank {victim}\b.*(signal 9|Killed)", out):
        raise Fail(f"the output does not name rank {victim} and signal 9:\n"
                   + "\n".join(out.strip().splitlines()[-10:]))
    res = resume_latest_vs_reference(ctx, d, art, save, "killed")
    return f"ended {took:.1f}s after the kill (exit {rc}); {res}"


def stop_by_signal(art: str, sig: int, sig_name: str, async_save: bool = False):
    """SIGTERM/SIGINT to the shard-run process itself (the launcher for -n > 1)."""
    def case(ctx: Ctx, d: Path) -> str:
        keep = 2
        job, save, log = start_long(ctx, d, art, "stopped", keep=keep, async_save=async_save)
        try:
            wait_for_dir(job, save / step_dir(3), ctx.timeout)
            os.kill(job.p.pid, sig)
            rc = job.wait(60)
            if rc is None:
                raise Fail(f"still running 60 s after {sig_name}")
        finally:
            job.kill()
        out = job.output()
        if rc != 0:
            raise Fail(f"exit {rc} after {sig_name} (expected 0):\n"
                       + "\n".join(out.strip().splitlines()[-10:]))
        m = re.search(r"stopped by (.+?) after step (\d+): checkpoint (\S+)", out)
        if not m:
            raise Fail("no 'stopped by ... after step N: checkpoint DIR' line:\n"
                       + "\n".join(out.strip().splitlines()[-10:]))
        # A single rank names the signal; under the launcher (which
        # forwards it as SIGUSR1) the ranks name the launcher's signal.
        want = sig_name if a_ranks(ctx, art) == 1 else f"{sig_name} (to shard-run)"
        if m.group(1) != want:
            raise Fail(f"'stopped by {m.group(1)}', expected {want}")
        n = int(m.group(2))
        if Path(m.group(3)) != save / step_dir(n):
            raise Fail(f"checkpoint {m.group(3)}, expected {save / step_dir(n)}")
        done = complete_steps(save)
        if not done or done[-1] != n:
            raise Fail(f"complete checkpoints {done}; expected the newest at step {n}")
        if len(done) > keep:
            raise Fail(f"{len(done)} complete checkpoints {done} with --keep {keep}")
        lg = Log.read(log)
        if sorted(lg.train) != list(range(n)):
            raise Fail(f"the stopped run logged steps {sorted(lg.train)}, expected 0..{n - 1}")
        if not lg.records or lg.records[-1].get("stopped_by") is None:
            raise Fail("the log does not end with a stopped_by record")
        res = resume_latest_vs_reference(ctx, d, art, save, "stopped")
        return f"stopped by {m.group(1)} at step {n}; {res}"
    return case


def a_ranks(ctx: Ctx, art: str) -> int:
    return ctx.art(art).ranks


# Bad inputs: each must fail with "shard-run: error:" naming the problem.

def expect_error(r: Run, keywords: List[str], max_s: float = 60) -> str:
    errs = [l for l in r.out.splitlines() if "shard-run: error:" in l]
    problems = []
    if r.rc not in (1, 2):
        problems.append(f"exit {r.rc} (expected 1 or 2)")
    if not errs:
        problems.append("no 'shard-run: error:' line")
    text = "\n".join(errs)
    missing = [k for k in keywords if k not in text]
    if errs and missing:
        problems.append(f"the error does not name {missing}")
    if r.log.train or re.search(r"^step \d+/\d+:", r.out, re.M):
        problems.append(f"it trained ({len(r.log.train)} steps logged)")
    if "resumed from" in r.out:
        problems.append("it printed 'resumed from'")
    if r.seconds > max_s:
        problems.append(f"it took {r.seconds:.0f}s")
    if problems:
        raise Fail("; ".join(problems) + "\n" + r.brief())
    return errs[0].split("shard-run: error:", 1)[1].strip()


def copy_ckpt(ctx: Ctx, art: str, d: Path, step: int = SAVE_AT) -> Path:
    src = ctx.ref(art).ckpt / step_dir(step)
    dst = d / "ckpt" / step_dir(step)
    shutil.copytree(src, dst)
    return dst


def bad_truncated(ctx: Ctx, d: Path) -> str:
    ck = copy_ckpt(ctx, "1rank", d)
    f = ck / "rank-00000.safetensors"
    os.truncate(f, f.stat().st_size - 1000)
    r = ctx.train("1rank", d / "log.jsonl", resume=str(ck))
    return expect_error(r, ["rank-00000.safetensors", "truncated"])


def bad_missing_file(ctx: Ctx, d: Path) -> str:
    ck = copy_ckpt(ctx, "z3", d)
    (ck / "rank-00002.safetensors").unlink()
    r = ctx.train("z3", d / "log.jsonl", resume=str(ck))
    return expect_error(r, ["rank-00002.safetensors"])


def bad_checksum(ctx: Ctx, d: Path) -> str:
    ck = copy_ckpt(ctx, "headline", d)
    f = ck / "rank-00003.safetensors"
    data = bytearray(f.read_bytes())
    (hdr,) = struct.unpack("<Q", data[:8])
    pos = 8 + hdr + (len(data) - 8 - hdr) // 2
    data[pos] ^= 0x40
    f.write_bytes(bytes(data))
    # one rank checksums every file of the 8-rank checkpoint
    r = ctx.train("1rank", d / "log.jsonl", resume=str(ck))
    return expect_error(r, ["rank-00003.safetensors", "checksum"])


def bad_other_model(ctx: Ctx, d: Path) -> str:
    ck = ctx.ref("1rank").ckpt / step_dir(SAVE_AT)
    r = ctx.train("llama", d / "log.jsonl", resume=str(ck))
    return expect_error(r, ["no tensor", "another model"])


def edit_manifest(ck: Path, edit: Callable[[dict], None]) -> None:
    p = ck / "manifest.json"
    m = json.loads(p.read_text())
    edit(m)
    p.write_text(json.dumps(m, indent=1))


def bad_missing_tensor(ctx: Ctx, d: Path) -> str:
    ck = copy_ckpt(ctx, "1rank", d)
    edit_manifest(ck, lambda m: m["tensors"].pop("wpe"))
    r = ctx.train("1rank", d / "log.jsonl", resume=str(ck))
    return expect_error(r, ["no tensor 'wpe'"])


def bad_version(ctx: Ctx, d: Path) -> str:
    ck = copy_ckpt(ctx, "1rank", d)
    edit_manifest(ck, lambda m: m.__setitem__("version", 99))
    r = ctx.train("1rank", d / "log.jsonl", resume=str(ck))
    return expect_error(r, ["version 99", "newer"])


def bad_no_complete(ctx: Ctx, d: Path) -> str:
    notes = []
    empty = d / "empty"
    empty.mkdir()
    r = ctx.train("1rank", d / "log1.jsonl", save_dir=empty, resume="latest")
    notes.append(expect_error(r, ["no complete checkpoint", str(empty)]))
    # an interrupted save (rank files, no manifest) and one interrupted
    # between the manifest and the rename: neither is complete
    tmp = d / "tmp-only"
    src = ctx.ref("1rank").ckpt / step_dir(SAVE_AT)
    shutil.copytree(src, tmp / "step-000003.tmp")
    (tmp / "step-000003.tmp" / "manifest.json").unlink()
    shutil.copytree(src, tmp / "step-000006.tmp")
    r = ctx.train("1rank", d / "log2.jsonl", save_dir=tmp, resume="latest")
    expect_error(r, ["no complete checkpoint", str(tmp)])
    # and a 4-rank job ends just as clearly
    r = ctx.train("z3", d / "log3.jsonl", save_dir=tmp, resume="latest")
    expect_error(r, ["no complete checkpoint", str(tmp)])
    return notes[0]


def bad_full_disk(ctx: Ctx, d: Path, async_save: bool = False) -> str:
    """A 14 MiB tmpfs as --save-dir: the step-3 checkpoint (9.3 MiB) fits, the
    step-6 save runs out of space; on 1 rank and on 4 (dp=4,zero=3). An
    asynchronous save's error surfaces at a later step boundary."""
    if os.geteuid() != 0:
        raise Skip("mounting a tmpfs needs root")
    notes = []
    for art in (("z3",) if async_save else ("1rank", "z3")):
        mnt = d / f"small-disk-{art}"
        mnt.mkdir()
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=14m", "tmpfs", str(mnt)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=30)
        if p.returncode != 0:
            raise Skip(f"mount -t tmpfs not permitted here: {p.stdout.strip()[:200]}")
        try:
            r = ctx.train(art, d / f"full-{art}.jsonl", save_dir=mnt, save_interval=3,
                          async_save=async_save)
            msg = expect_error_after_training(
                r, [r"on rank \d+", r"step-000006\.tmp/rank-\d{5}\.safetensors",
                    "No space left"])
            notes.append(msg)
            done = complete_steps(mnt)
            if done != [3]:
                raise Fail(f"complete checkpoints on the full disk: {done}, expected [3]")
            left = sorted(p.name for p in mnt.iterdir())
            if left != [step_dir(3)]:
                raise Fail(f"the failed save left {left} (expected only {step_dir(3)})")
            trained = sorted(r.log.train)
            if async_save:  # the error surfaces when the ranks publish
                if trained[:6] != list(range(6)) or trained != list(range(len(trained))):
                    raise Fail(f"trained steps {trained} before the failed save, "
                               "expected 0..5 and perhaps a few more")
            elif trained != list(range(6)):
                raise Fail(f"trained steps {trained} before the failed save, expected 0..5")
            # the intact step-3 checkpoint still loads and continues bit for bit
            ck = mnt / step_dir(3)
            res = ctx.train_ok(art, d / f"resumed-{art}.jsonl", resume=str(ck), steps=5,
                               decay=STEPS, eval_interval=0)
            check_resumed(res, ck, 3)
            compare(ctx.ref(art).run.log, res.log, 3, 5, 0.0, need_final_val=False)
        finally:
            u = subprocess.run(["umount", str(mnt)], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=30)
            if u.returncode != 0:
                subprocess.run(["umount", "-l", str(mnt)], timeout=30)
    return notes[0]


def bad_foreign_save_dir(ctx: Ctx, d: Path) -> str:
    """A fresh run (no --resume) into a --save-dir holding another run's
    checkpoints is refused before training."""
    save = d / "ckpt"
    shutil.copytree(ctx.ref("1rank").ckpt, save)
    r = ctx.train("z3", d / "fresh.jsonl", save_dir=save, save_interval=3)
    return expect_error(r, ["already holds checkpoints", "--resume latest"])


def async_same(art: str):
    """--async-save writes the same bytes as a synchronous save, and the run
    trains the same."""
    def case(ctx: Ctx, d: Path) -> str:
        ref = ctx.ref(art)
        save = d / "ckpt"
        r = ctx.train_ok(art, d / "async.jsonl", save_dir=save, save_interval=SAVE_AT,
                         async_save=True)
        compare(ref.run.log, r.log, 0, STEPS, 0.0)
        done = complete_steps(save)
        if done != [SAVE_AT, STEPS]:
            raise Fail(f"complete checkpoints {done}, expected [{SAVE_AT}, {STEPS}]")
        for step in done:
            a, b = ref.ckpt / step_dir(step), save / step_dir(step)
            names = sorted(p.name for p in a.iterdir())
            if sorted(p.name for p in b.iterdir()) != names:
                raise Fail(f"{b} holds {sorted(p.name for p in b.iterdir())}, "
                           f"the synchronous {a} holds {names}")
            for n in names:
                if (a / n).read_bytes() != (b / n).read_bytes():
                    raise Fail(f"{b / n} differs from the synchronous save's {a / n}")
        recs = [x for x in r.log.records if "checkpoint" in x]
        if len(recs) != 2 or not all(x.get("save_async") is True and
                                     0 <= x.get("save_stall_s", -1) <= x["save_s"]
                                     for x in recs):
            raise Fail(f"checkpoint log records {recs}: expected 2 with save_async true "
                       "and 0 <= save_stall_s <= save_s")
        ck = save / step_dir(SAVE_AT)
        res = ctx.train_ok(art, d / "resumed.jsonl", resume=str(ck))
        check_resumed(res, ck, SAVE_AT)
        compare(ref.run.log, res.log, SAVE_AT, STEPS, 0.0)
        stall = max(x["save_stall_s"] for x in recs)
        return (f"steps 0..{STEPS - 1} bit for bit, checkpoints {done} byte-identical to "
                f"synchronous ones, resume bit for bit; stall <= {stall:.3f} s")
    return case


def expect_error_after_training(r: Run, keywords: List[str]) -> str:
    """Like expect_error for a failure in the middle of training (keywords
    are regular expressions)."""
    errs = [l for l in r.out.splitlines() if "shard-run: error:" in l]
    text = "\n".join(errs)
    problems = []
    if r.rc not in (1, 2):
        problems.append(f"exit {r.rc} (expected 1 or 2)")
    if not errs:
        problems.append("no 'shard-run: error:' line")
    missing = [k for k in keywords if not re.search(k, text)]
    if errs and missing:
        problems.append(f"the error does not match {missing}")
    if problems:
        raise Fail("; ".join(problems) + "\n" + r.brief())
    return errs[0].split("shard-run: error:", 1)[1].strip()


def bad_save_dir(ctx: Ctx, d: Path) -> str:
    f = d / "a-file"
    f.write_text("not a directory\n")
    notes = []
    for art in ("1rank", "dp2tp2"):
        r = ctx.train(art, d / f"{art}.jsonl", save_dir=f / "ckpt", save_interval=3,
                      timeout=60)
        notes.append(expect_error(r, ["--save-dir", str(f / "ckpt")], max_s=30))
    return notes[0]


# The Python side: safetensors reads the rank files; the manifest's chunks
# reassemble the parameters that --save-params wrote at the same step.

def python_reader(art: str):
    def case(ctx: Ctx, d: Path) -> str:
        try:
            import numpy as np
            from safetensors import safe_open
            from safetensors.numpy import load_file
            sys.path.insert(0, str(ctx.root / "python"))
            from autoshard.checkpoint import load_checkpoint, verify_checksums
        except ImportError as e:
            raise Fail(f"{e} (pip install -r python/requirements.txt into {ctx.py})")
        ref = ctx.ref(art)
        ck = ref.ckpt / step_dir(STEPS)
        man = json.loads((ck / "manifest.json").read_text())
        if man.get("step") != STEPS:
            raise Fail(f"manifest step {man.get('step')}, expected {STEPS}")
        files, offsets = {}, {}
        for name, info in man["files"].items():
            path = ck / name
            if path.stat().st_size != info["bytes"]:
                raise Fail(f"{name}: {path.stat().st_size} bytes, the manifest says "
                           f"{info['bytes']}")
            files[name] = load_file(str(path))
            with safe_open(str(path), "np") as fh:
                meta = fh.metadata() or {}
            rank = int(re.fullmatch(r"rank-(\d+)\.safetensors", name).group(1))
            want = {"autoshard.format": "autoshard-checkpoint-shard",
                    "autoshard.step": str(STEPS), "autoshard.rank": str(rank)}
            for k, v in want.items():
                if meta.get(k) != v:
                    raise Fail(f"{name}: metadata {k} = {meta.get(k)!r}, expected {v!r}")
            raw = path.read_bytes()
            (hlen,) = struct.unpack("<Q", raw[:8])
            hdr = json.loads(raw[8:8 + hlen])
            offsets[name] = {k: 8 + hlen + v["data_offsets"][0]
                             for k, v in hdr.items() if k != "__metadata__"}
        params = load_file(str(ref.params))
        kinds = {k: t["kind"] for k, t in man["tensors"].items()}
        want_params = sorted(k for k, v in kinds.items() if v == "param")
        if sorted(params) != want_params:
            raise Fail(f"--save-params has {sorted(set(params) ^ set(want_params))[:5]} "
                       "not matching the manifest's params")
        # autoshard.checkpoint (the project's reader) against --save-params,
        # after its XXH3 checksums agree with the ones shard-run wrote.
        verify_checksums(ck)
        loaded = load_checkpoint(ck, kinds=("param", "opt_m", "opt_v"))
        if sorted(loaded) != sorted(man["tensors"]):
            raise Fail("autoshard.checkpoint.load_checkpoint returned "
                       f"{len(loaded)} tensors, the manifest lists {len(man['tensors'])}")
        for name in want_params:
            if loaded[name].tobytes() != params[name].tobytes():
                raise Fail(f"autoshard.checkpoint: '{name}' differs from --save-params")
        # and an independent reassembly: each chunk's key, shape and byte
        # offset in its rank file, every element covered exactly once
        n_chunks = 0
        for name, t in man["tensors"].items():
            shape = tuple(t["global_shape"])
            full, cover = None, np.zeros(shape, dtype=np.int32)
            for c in t["chunks"]:
                arr = files[c["file"]].get(name)
                if arr is None:
                    raise Fail(f"{c['file']} has no tensor '{name}'")
                if arr.shape != tuple(c["shape"]):
                    raise Fail(f"{c['file']}:{name} has shape {arr.shape}, the chunk "
                               f"{c['shape']}")
                if offsets[c["file"]][name] != c["byte_offset"]:
                    raise Fail(f"{c['file']}:{name} data starts at byte "
                               f"{offsets[c['file']][name]}, the manifest says "
                               f"{c['byte_offset']}")
                if full is None:
                    full = np.zeros(shape, dtype=arr.dtype)
                box = tuple(slice(o, o + s) for o, s in zip(c["offset"], c["shape"]))
                full[box] = arr
                cover[box] += 1
                n_chunks += 1
            if full is None or not (cover == 1).all():
                raise Fail(f"the chunks of '{name}' do not cover it exactly once "
                           f"(coverage {int(cover.min()) if cover.size else 0}.."
                           f"{int(cover.max()) if cover.size else 0})")
            if full.tobytes() != loaded[name].tobytes():
                raise Fail(f"'{name}': autoshard.checkpoint and the reassembly here differ")
            if t["kind"] == "param":
                p = params[name]
                if p.shape != full.shape or p.dtype != full.dtype:
                    raise Fail(f"'{name}': reassembled {full.dtype}{list(full.shape)}, "
                               f"--save-params {p.dtype}{list(p.shape)}")
                if full.tobytes() != p.tobytes():
                    diff = int((full != p).sum())
                    raise Fail(f"'{name}': reassembled values differ from --save-params "
                               f"in {diff} elements")
        return (f"{len(files)} files, {len(man['tensors'])} tensors ({len(want_params)} "
                f"params) from {n_chunks} chunks; params = --save-params")
    return case


CASES: List[Tuple[str, str, Callable[[Ctx, Path], str]]] = [
    ("same_plan", "1 rank", same_plan("1rank")),
    ("same_plan", f"{HEADLINE} (8 ranks)", same_plan("headline")),
    ("same_plan", "dp=4,zero=3 (4 ranks)", same_plan("z3")),
    ("cross_plan", "8 ranks headline -> 4 ranks dp=4,zero=3 -> 1 rank", chain),
    ("cross_plan", "tp=2 -> pp=2,mb=4,schedule=interleaved,vpp=2", cross_plan("tp2", "pp2i")),
    ("cross_plan", "cp=2 -> dp=2", cross_plan("cp2", "dp2")),
    ("cross_plan", "mixtral dp=4,ep=4 -> dp=2,ep=2,zero=3", cross_plan("moe_ep4", "moe_ep2z3")),
    ("cross_plan", "mixtral dp=4,ep=4 -> tp=2,ep=2 (ep over tp)", cross_plan("moe_ep4", "moe_tp2ep2")),
    ("fault", "SIGKILL of rank 2 (dp=2,tp=2, 4 ranks) + resume latest", fault),
    ("signal", "SIGTERM to shard-run -n 4 (dp=2,tp=2) + resume latest",
     stop_by_signal("dp2tp2", signal.SIGTERM, "SIGTERM")),
    ("signal", "SIGINT to shard-run (1 rank) + resume latest",
     stop_by_signal("1rank", signal.SIGINT, "SIGINT")),
    ("bad_input", "truncated rank file", bad_truncated),
    ("bad_input", "missing rank file (4 ranks)", bad_missing_file),
    ("bad_input", "checksum mismatch", bad_checksum),
    ("bad_input", "checkpoint of another model (llama artifact)", bad_other_model),
    ("bad_input", "manifest missing a tensor", bad_missing_tensor),
    ("bad_input", "newer format version", bad_version),
    ("bad_input", "--resume latest without a complete checkpoint", bad_no_complete),
    ("bad_input", "full disk during a save (14 MiB tmpfs; 1 and 4 ranks)", bad_full_disk),
    ("bad_input", "--save-dir below a regular file", bad_save_dir),
    ("bad_input", "fresh run into a --save-dir with another run's checkpoints",
     bad_foreign_save_dir),
    ("async", "--async-save, dp=4,zero=3: same bytes as synchronous, resume bit for bit",
     async_same("z3")),
    ("async", "SIGTERM to shard-run -n 4 --async-save (dp=2,tp=2) + resume latest",
     stop_by_signal("dp2tp2", signal.SIGTERM, "SIGTERM", async_save=True)),
    ("async", "full disk during an asynchronous save (dp=4,zero=3)",
     lambda ctx, d: bad_full_disk(ctx, d, async_save=True)),
    ("python", "safetensors + manifest reassembly: headline (8 ranks)", python_reader("headline")),
    ("python", "safetensors + manifest reassembly: dp=4,zero=3", python_reader("z3")),
    ("python", "safetensors + manifest reassembly: mixtral dp=4,ep=4",
     python_reader("moe_ep4")),
]


def write_junit(path: Path, results: List[Result], seconds: float,
                suite: str = "checkpoint") -> None:
    cases = []
    for r in results:
        body = ""
        if r.status == "fail":
            body = f"<failure message={quoteattr(r.message.splitlines()[0][:300])}>" \
                   f"{quoteattr(r.message)[1:-1]}</failure>"
        elif r.status == "skip":
            body = f"<skipped message={quoteattr(r.message[:300])}/>"
        elif r.note:
            body = f"<system-out>{quoteattr(r.note)[1:-1]}</system-out>"
        cases.append(f'<testcase classname="{suite}.{r.group}" name={quoteattr(r.name)} '
                     f'time="{r.seconds:.2f}">{body}</testcase>')
    fails = sum(r.status == "fail" for r in results)
    skips = sum(r.status == "skip" for r in results)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="{suite}" '
                    f'tests="{len(results)}" failures="{fails}" skipped="{skips}" '
                    f'time="{seconds:.1f}">' + "".join(cases) + "</testsuite>\n")


def run_case(ctx, out: Path, d: Path, group: str, name: str,
             fn: Callable, tool: str) -> Result:
    """Runs one case in a fresh directory `d` and prints its line; an
    exception other than Fail/Skip (a bug of `tool`) fails the case."""
    d.mkdir(parents=True)
    t0 = time.monotonic()
    status, message, note = "pass", "", ""
    try:
        note = fn(ctx, d) or ""
    except Fail as e:
        status, message = "fail", str(e)
    except Skip as e:
        status, message = "skip", str(e)
    except Exception:  # a bug of this script is a failed case, not a crash
        status, message = "fail", f"{tool}: " + traceback.format_exc()
    # the work directory's path, shortened in what is printed
    short = lambda t: t.replace(str(out) + "/", "$OUT/")
    res = Result(group, name, status, short(message), short(note), time.monotonic() - t0)
    mark = {"pass": "ok", "fail": "FAIL", "skip": "skip"}[status]
    print(f"[{mark:4s}] {group}: {name} ({res.seconds:.1f}s)"
          + (f": {res.note}" if note and status == "pass" else ""), flush=True)
    if status != "pass":
        for line in res.message.splitlines()[:30]:
            print("       " + line)
    return res


def print_summary(results: List[Result], seconds: float, out: Path) -> int:
    """Prints the table of `results` and "N passed, N failed"; returns N failed."""
    w_group = max(len(r.group) for r in results) if results else 5
    w_name = max(len(r.name) for r in results) if results else 4
    print()
    print(f"{'group':{w_group}s}  {'case':{w_name}s}  result  seconds  detail")
    for r in results:
        detail = (r.note if r.status == "pass" else r.message.splitlines()[0])[:140]
        print(f"{r.group:{w_group}s}  {r.name:{w_name}s}  {r.status:6s}  {r.seconds:7.1f}  "
              f"{detail}")
    passed = sum(r.status == "pass" for r in results)
    failed = sum(r.status == "fail" for r in results)
    skipped = sum(r.status == "skip" for r in results)
    print(f"\ntotal {seconds:.0f}s ($OUT = {out})")
    print(f"{passed} passed, {failed} failed" + (f" ({skipped} skipped)" if skipped else ""))
    return failed


def slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", s).strip("-")[:60]


def suite_arguments(tool: str, out_name: str) -> argparse.ArgumentParser:
    """The command line the test drivers share (their .sh wrappers add --root,
    --build and --py); --out defaults to BUILD/`out_name`."""
    ap = argparse.ArgumentParser(prog=f"{tool}.sh")
    ap.add_argument("--root", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--py", default=sys.executable)
    ap.add_argument("--out", default=None, help=f"work directory (default BUILD/{out_name})")
    ap.add_argument("--junit", default=None, help="JUnit XML report")
    ap.add_argument("--filter", default=None, help="only cases whose 'group: name' matches RE")
    ap.add_argument("--timeout", type=float, default=180, help="seconds per shard-run (180)")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse the artifacts compiled by an earlier run in --out")
    ap.add_argument("-v", "--verbose", action="store_true")
    return ap


def prepare_out(tool: str, ctx, reuse: bool) -> bool:
    """Checks that shard-run is built and empties ctx.out (but the compiled
    artifacts with `reuse`); False (after a message) without shard-run."""
    if not os.access(ctx.shard_run, os.X_OK):
        print(f"{tool}: no {ctx.shard_run} (build first)", file=sys.stderr)
        return False
    if ctx.out.exists():
        for p in ctx.out.iterdir():
            if not (reuse and p.name == "art"):
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink()
    ctx.out.mkdir(parents=True, exist_ok=True)
    return True


def selected(cases: list, pattern: Optional[str]) -> list:
    """The cases whose "group: name" matches `pattern` (all without one)."""
    return [c for c in cases if not pattern or re.search(pattern, f"{c[0]}: {c[1]}")]


def main() -> int:
    ap = suite_arguments("checkpoint_check", "checkpoint-check")
    ap.add_argument("--keep-files", action="store_true",
                    help="keep the checkpoints of passing cases (default: deleted)")
    args = ap.parse_args()
    args.out = args.out or str(Path(args.build) / "checkpoint-check")
    ctx = Ctx(args)
    if not prepare_out("checkpoint_check", ctx, args.reuse):
        return 2

    cases = selected(CASES, args.filter)
    t_all = time.monotonic()
    results: List[Result] = []
    for i, (group, name, fn) in enumerate(cases):
        d = ctx.out / "cases" / f"{i:02d}-{group}-{slug(name)}"
        res = run_case(ctx, ctx.out, d, group, name, fn, "checkpoint_check")
        results.append(res)
        if res.status == "pass" and not args.keep_files:
            shutil.rmtree(d, ignore_errors=True)
    seconds = time.monotonic() - t_all
    if not args.keep_files and all(r.status != "fail" for r in results):
        shutil.rmtree(ctx.out / "ref", ignore_errors=True)
    failed = print_summary(results, seconds, ctx.out)
    if args.junit:
        write_junit(Path(args.junit), results, seconds)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
