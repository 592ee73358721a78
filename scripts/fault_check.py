#!/usr/bin/env python3
"""Fault suite (issue 19, items 1, 3 and 7): see scripts/fault_check.sh."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
import checkpoint_check  # noqa: E402
from checkpoint_check import (Fail, Job, Skip, prepare_out, print_summary,  # noqa: E402
                              rank_pids, run_case, selected, slug, suite_arguments,
                              write_junit)

# The artifacts (compiled by checkpoint_check's Ctx with scripts/train.sh):
# its own, and these.
checkpoint_check.ARTIFACTS.setdefault("pp2dp2", ("pp=2,dp=2,mb=2", None))

LONG_STEPS = 100000  # runs that are stopped or interrupted
TIMEOUT = 10         # --comm-timeout of the watchdog cases
TCP_RETRIES2 = 5     # the hosts' net.ipv4.tcp_retries2 (docs/running.md)


class Ctx(checkpoint_check.Ctx):
    def cmd(self, art: str, log: Path, steps: int = LONG_STEPS, extra: List[str] = (),
            launcher: Optional[List[str]] = None) -> List[str]:
        a = self.art(art)
        head = launcher if launcher is not None else (
            [self.shard_run] + (["-n", str(a.ranks)] if a.ranks > 1 else []))
        return head + [str(a.path), "--data", self.data, "--steps", str(steps),
                       "--eval-interval", "0", "--eval-iters", "1", "--sample", "0",
                       "--log", str(log)] + list(extra)

    def start(self, art: str, d: Path, name: str, extra: List[str] = ()) -> Tuple[Job, Path]:
        log = d / f"{name}.jsonl"
        return Job(self, self.cmd(art, log, extra=extra), d / f"{name}.out"), log


# --- helpers ------------------------------------------------------------------

def steps_logged(log: Path) -> List[int]:
    steps = []
    try:
        for line in log.read_text().splitlines():
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line being written
            if "train_loss" in r:
                steps.append(int(r["step"]))
    except OSError:
        pass
    return steps


def wait_for_steps(job: Job, log: Path, n: int, timeout: float) -> None:
    t0 = time.monotonic()
    while len(steps_logged(log)) < n:
        if job.p.poll() is not None:
            raise Fail(f"the run ended (exit {job.p.returncode}) before {n} steps:\n"
                       + tail(job.output()))
        if time.monotonic() - t0 > timeout:
            raise Fail(f"fewer than {n} steps logged within {timeout:.0f}s")
        time.sleep(0.05)


def tail(text: str, n: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


def ranks_of(job: Job, n: int, victim: int, timeout: float = 30) -> Dict[int, int]:
    """World rank -> pid of the `n` ranks of `job`; fails without `victim`."""
    t0 = time.monotonic()
    while True:
        ranks = rank_pids(job.p.pid)
        if len(ranks) == n or time.monotonic() - t0 > timeout:
            break
        time.sleep(0.1)
    if victim not in ranks:
        raise Fail(f"no rank {victim} below pid {job.p.pid} (found {sorted(ranks)})")
    return ranks


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of `pid`, its threads included."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    rest = stat[stat.rfind(")") + 2:].split()
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def process_table(pid: int) -> str:
    """`pid` and its descendants, one line each: pid, state, kernel wait
    channel, command line (what a hung job is stuck in)."""
    lines = []
    for p in [pid] + sorted(checkpoint_check.descendants(pid)):
        try:
            stat = Path(f"/proc/{p}/stat").read_text()
            state = stat[stat.rfind(")") + 2:].split()[0]
            wchan = Path(f"/proc/{p}/wchan").read_text().strip() or "-"
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        lines.append(f"  {p:>7} {state} {wchan:<24} {cmd[:110]}")
    return "\n".join(lines) or "  (none left)"


def act_then_wait(ctx: Ctx, job: Job, log: Path, act: Callable[[], None], limit: float,
                  what: str) -> Tuple[int, float, List[int]]:
    """Once `job` has logged 3 steps, runs `act` and waits up to `limit` s for
    the job to end: (exit status, seconds it took, steps logged at `act`).
    Fails if it does not end; the job is killed in any case."""
    try:
        wait_for_steps(job, log, 3, ctx.timeout)
        act()
        logged = steps_logged(log)
        t0 = time.monotonic()
        rc = job.wait(limit)
        took = time.monotonic() - t0
        if rc is None:
            raise Fail(f"the job still runs {limit:.0f} s after {what}:\n{tail(job.output())}"
                       f"\nits processes:\n{process_table(job.p.pid)}")
    finally:
        job.kill()
    return rc, took, logged


# --- item 1: the communication watchdog ----------------------------------------

def watchdog_sigstop(art: str, victim: int, extra: List[str] = ()):
    """SIGSTOP one rank: the job ends within --comm-timeout + 30 s, non-zero, with
    a message naming the operation, its group, the step and the stopped peer,
    from every other rank; meanwhile the waiting ranks stop burning their cores."""
    def case(ctx: Ctx, d: Path) -> str:
        n = ctx.art(art).ranks
        job, log = ctx.start(art, d, "stopped", ["--comm-timeout", str(TIMEOUT)] + list(extra))
        try:
            wait_for_steps(job, log, 3, ctx.timeout)
            ranks = ranks_of(job, n, victim)
            os.kill(ranks[victim], signal.SIGSTOP)
            t0 = time.monotonic()
            # CPU of the waiting ranks over 2 s, from 1 s after the stop.
            time.sleep(1.0)
            others = [p for r, p in ranks.items() if r != victim]
            before = {p: cpu_seconds(p) for p in others}
            time.sleep(2.0)
            busy = max((cpu_seconds(p) - before[p]) / 2.0 for p in others)
            rc = job.wait(TIMEOUT + 30 - (time.monotonic() - t0))
            took = time.monotonic() - t0
            if rc is None:
                raise Fail(f"the job still runs {TIMEOUT + 30} s after SIGSTOP of rank "
                           f"{victim} with --comm-timeout {TIMEOUT} (a hang):\n"
                           + tail(job.output()))
        finally:
            job.kill()
        out = job.output()
        if rc == 0:
            raise Fail(f"exit 0 after SIGSTOP of rank {victim}:\n{tail(out)}")
        if took < TIMEOUT - 1:
            raise Fail(f"ended {took:.1f}s after the stop, before the {TIMEOUT} s timeout:\n"
                       + tail(out))
        m = re.search(r"shard-run: error: rank (\d+): .*communication timeout: (\S+) .*"
                      r"over group \[[^\]]*\] \(world ranks [0-9, ]+\).*"
                      r"at step (\d+); waiting for rank (\d+)(?: \(by way of [^)]*\))?, "
                      r"which did not answer", out)
        if not m:
            raise Fail("no 'communication timeout: OP ... over group [...] (world ranks ...) "
                       "... at step N; waiting for rank R, which did not answer' line:\n"
                       + tail(out))
        if int(m.group(4)) != victim:
            raise Fail(f"the message names rank {m.group(4)}, rank {victim} was stopped:\n"
                       + m.group(0))
        spoke = {int(r) for r in re.findall(r"shard-run: error: rank (\d+): ", out)}
        silent = sorted(set(range(n)) - {victim} - spoke)
        if silent:
            raise Fail(f"ranks {silent} said nothing (every rank that can speak must):\n"
                       + tail(out))
        if busy > 0.5:
            raise Fail(f"a waiting rank used {busy:.0%} of a core while rank {victim} was "
                       f"stopped (the wait must back off)")
        return (f"ended {took:.1f}s after SIGSTOP (timeout {TIMEOUT}s, exit {rc}); "
                f"op {m.group(2)} at step {m.group(3)}; waiting ranks used at most "
                f"{busy:.0%} of a core")
    return case


# --- item 3: signals and deaths ------------------------------------------------

def interrupted(art: str, sig: int, sig_name: str):
    """SIGINT/SIGTERM to shard-run without --save-dir: 'interrupted at step N' at
    a step boundary, exit 128 + signal, the log holds steps 0..N-1."""
    def case(ctx: Ctx, d: Path) -> str:
        job, log = ctx.start(art, d, "interrupted")
        rc, took, _ = act_then_wait(ctx, job, log, lambda: os.kill(job.p.pid, sig), 30,
                                    sig_name)
        out = job.output()
        if rc != 128 + sig:
            raise Fail(f"exit {rc} after {sig_name}, expected {128 + sig}:\n{tail(out)}")
        m = re.search(r"shard-run: interrupted at step (\d+) by (.+?) \(", out)
        if not m:
            raise Fail(f"no 'shard-run: interrupted at step N by ...' line:\n{tail(out)}")
        if m.group(2) != sig_name:  # under -n N too: the launcher's signal
            raise Fail(f"the line names '{m.group(2)}', expected {sig_name}:\n{m.group(0)}")
        n, steps = int(m.group(1)), steps_logged(log)
        if steps != list(range(n)):
            raise Fail(f"interrupted at step {n}, but the log holds steps {steps[:3]}..."
                       f"{steps[-3:]} (expected 0..{n - 1})")
        return f"'interrupted at step {n} by {m.group(2)}' {took:.1f}s after {sig_name}"
    return case


def rank_dies(art: str, victim: int):
    """SIGKILL of one rank: a 'shard-run: error:' line names it and its step."""
    def case(ctx: Ctx, d: Path) -> str:
        n = ctx.art(art).ranks
        job, log = ctx.start(art, d, "killed")
        kill = lambda: os.kill(ranks_of(job, n, victim)[victim], signal.SIGKILL)
        rc, took, logged = act_then_wait(ctx, job, log, kill, 30, f"SIGKILL of rank {victim}")
        out = job.output()
        if rc == 0:
            raise Fail(f"exit 0 after SIGKILL of rank {victim}:\n{tail(out)}")
        m = re.search(r"shard-run: error: rank (\d+) \(pid \d+\) died during step (\d+)", out)
        if not m:
            raise Fail(f"no 'shard-run: error: rank R (pid P) died during step N' line:\n"
                       + tail(out))
        if int(m.group(1)) != victim:
            raise Fail(f"the line names rank {m.group(1)}, rank {victim} was killed:\n"
                       + m.group(0))
        step, last = int(m.group(2)), (logged[-1] if logged else -1)
        # Rank 0 logs a step after finishing it; the victim may be one ahead.
        if not last - 1 <= step <= last + 2:
            raise Fail(f"died during step {step}, but rank 0 had logged up to step {last}")
        return f"'{m.group(0)}' {took:.1f}s after the kill (exit {rc})"
    return case


def dies_while_finishing(art: str, steps: int = 3):
    """A rank killed while writing --save-params after the last step: the
    line says it died after its last training step, not during a step the
    run does not have, and the target file is not created."""
    def case(ctx: Ctx, d: Path) -> str:
        target = d / "final.safetensors"
        cmd = ["env", "AUTOSHARD_TEST_WRITE_FAULT=kill:final.safetensors"] + ctx.cmd(
            art, d / "log.jsonl", steps=steps, extra=["--save-params", str(target)])
        rc, out = ctx.run_cmd(cmd, ctx.timeout)
        if rc == 0:
            raise Fail(f"exit 0 although a rank was killed while saving:\n{tail(out)}")
        m = re.search(r"shard-run: error: rank (\d+) \(pid \d+\) died ([^;]*)", out)
        if not m:
            raise Fail(f"no 'shard-run: error: rank R (pid P) died ...' line:\n{tail(out)}")
        want = f"after its last training step ({steps} steps done"
        if not m.group(2).startswith(want):
            raise Fail(f"the line says '{m.group(0)}', expected 'died {want}; ...)'")
        if target.exists():
            raise Fail(f"{target} exists although its writer was killed")
        return f"'{m.group(0)[:110]}' (exit {rc})"
    return case


# --- item 7: two hosts in network namespaces --------------------------------

class TwoHosts:
    """Two "hosts": network namespaces joined by a veth pair, 10.77.0.1 and
    10.77.0.2, and an OpenMPI rsh agent that maps a host to `ip netns exec`.
    Each host also gets a UTS namespace with its own host name (OpenMPI 4.1
    crashes in MPI_Comm_dup when two nodes share a host name). Raises Skip
    where namespaces cannot be created (no root, no CAP_SYS_ADMIN, no
    iproute2 or unshare)."""
    ADDRS = ("10.77.0.1", "10.77.0.2")

    def __init__(self, d: Path):
        tag = f"as{os.getpid() % 100000}"
        self.ns = (f"{tag}a", f"{tag}b")
        self.dev = (f"{tag}va", f"{tag}vb")
        for tool in ("ip", "unshare"):
            if not shutil.which(tool):
                raise Skip(f"no '{tool}' (iproute2, util-linux): cannot create the namespaces")
        probe = subprocess.run(["ip", "netns", "add", self.ns[0]], capture_output=True, text=True)
        if probe.returncode != 0:
            raise Skip("cannot create network namespaces here: " + probe.stderr.strip())
        try:
            self.sh(["ip", "netns", "add", self.ns[1]])
            self.sh(["ip", "link", "add", self.dev[0], "netns", self.ns[0], "type", "veth",
                     "peer", "name", self.dev[1], "netns", self.ns[1]])
            for ns, dev, addr in zip(self.ns, self.dev, self.ADDRS):
                self.sh(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev])
                self.sh(["ip", "-n", ns, "link", "set", dev, "up"])
                self.sh(["ip", "-n", ns, "link", "set", "lo", "up"])
                # docs/running.md: keepalive only probes idle connections; a
                # connection with unacknowledged data (mpirun ordering a
                # remote daemon to kill its ranks) is given up after
                # tcp_retries2 retransmissions, about 13 s at 5, 15 min at
                # Linux's default 15.
                self.sh(["ip", "netns", "exec", ns, "sysctl", "-q", "-w",
                         f"net.ipv4.tcp_retries2={TCP_RETRIES2}"])
        except Fail:
            self.close()
            raise
        self.agent = d / "netns-rsh"
        self.agent.write_text(
            "#!/bin/sh\n# OpenMPI's plm_rsh_agent: HOST CMD... runs CMD in HOST's namespace.\n"
            "host=$1; shift\ncase $host in\n"
            + "".join(f"  {a}) ns={n} ;;\n" for a, n in zip(self.ADDRS, self.ns))
            + '  *) echo "netns-rsh: unknown host $host" >&2; exit 255 ;;\nesac\n'
            'exec ip netns exec "$ns" unshare --uts /bin/sh -c "hostname $ns; $*"\n')
        self.agent.chmod(0o755)

    @staticmethod
    def sh(cmd: List[str]) -> None:
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise Fail(f"$ {' '.join(cmd)}: {r.stderr.strip()}")

    def mpirun(self, ctx: Ctx, ranks: int) -> List[str]:
        """mpirun on host A, `ranks` ranks split over both hosts (TCP between
        them, shared memory inside each), with the out-of-band keepalive of
        docs/running.md."""
        mpirun = os.environ.get("AUTOSHARD_MPIRUN") or shutil.which("mpirun") or "mpirun"
        per = ranks // 2
        return ["ip", "netns", "exec", self.ns[0], "unshare", "--uts", "/bin/sh", "-c",
                'hostname "$0" && exec "$@"', self.ns[0], mpirun, "-n", str(ranks),
                "--host", ",".join(f"{a}:{per}" for a in self.ADDRS),
                "--mca", "plm_rsh_agent", str(self.agent),
                "--mca", "btl", "tcp,vader,self", "--mca", "btl_tcp_if_include", "10.77.0.0/24",
                "--mca", "oob_tcp_if_include", "10.77.0.0/24",
                "--mca", "oob_tcp_keepalive_time", "5", "--mca", "oob_tcp_keepalive_intvl", "2",
                "--mca", "oob_tcp_keepalive_probes", "3",
                "--oversubscribe", "--bind-to", "none", "--allow-run-as-root",
                "-x", "OMPI_MCA_mpi_yield_when_idle=1", "-x", "OPENBLAS_NUM_THREADS=1",
                ctx.shard_run]

    def link_down(self) -> None:
        self.sh(["ip", "-n", self.ns[0], "link", "set", self.dev[0], "down"])

    def close(self) -> None:
        for ns in self.ns:  # deleting a namespace deletes its end of the veth
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def check_plain_progress(out: str) -> None:
    """Progress written to a file (mpirun's pseudo-terminal in between) must
    be plain lines."""
    if "\x1b[" in out or "\r" in out:
        raise Fail("the progress written to a file carries terminal escape codes:\n"
                   + repr(out[-300:]))
    if not re.search(r"^step \d+/\d+: loss", out, re.M):
        raise Fail(f"no plain 'step N/M: loss' progress line:\n{tail(out)}")


def own_mpirun(art: str, steps: int = 6):
    """The user's own mpirun on one host, output to a file: plain progress
    lines (mpirun gives rank 0 a pseudo-terminal), the same losses as
    `shard-run -n N`."""
    def case(ctx: Ctx, d: Path) -> str:
        a = ctx.art(art)
        mpirun = os.environ.get("AUTOSHARD_MPIRUN") or shutil.which("mpirun") or "mpirun"
        ref, own = d / "launcher.jsonl", d / "own.jsonl"
        rc, out = ctx.run_cmd(ctx.cmd(art, ref, steps=steps), ctx.timeout)
        if rc != 0:
            raise Fail(f"shard-run -n {a.ranks} failed (exit {rc}):\n{tail(out)}")
        head = [mpirun, "-n", str(a.ranks), "--oversubscribe", "--bind-to", "none",
                "--allow-run-as-root", ctx.shard_run]
        rc, out = ctx.run_cmd(ctx.cmd(art, own, steps=steps, launcher=head), ctx.timeout)
        if rc != 0:
            raise Fail(f"mpirun -n {a.ranks} shard-run failed (exit {rc}):\n{tail(out)}")
        check_plain_progress(out)
        if losses(ref) != losses(own):
            raise Fail(f"losses differ: shard-run -n {a.ranks} {losses(ref)}, own mpirun "
                       f"{losses(own)}")
        return f"plain progress lines; {steps} losses equal to shard-run -n {a.ranks}"
    return case


def losses(log: Path) -> Dict[int, float]:
    out = {}
    for line in log.read_text().splitlines():
        r = json.loads(line)
        if "train_loss" in r:
            out[int(r["step"])] = r["train_loss"]
    return out


def across_hosts(art: str, steps: int = 6):
    """A 4-rank plan across two hosts (network namespaces, OpenMPI over TCP, the
    user's own mpirun): losses equal to the one-host run, plain progress lines
    in a file; then the link taken down mid-run ends the job with a message
    within --comm-timeout + 30 s."""
    def case(ctx: Ctx, d: Path) -> str:
        ranks = ctx.art(art).ranks
        hosts = TwoHosts(d)
        try:
            one = d / "one-host.jsonl"
            rc, out = ctx.run_cmd(ctx.cmd(art, one, steps=steps), ctx.timeout)
            if rc != 0:
                raise Fail(f"the one-host run failed (exit {rc}):\n{tail(out)}")
            two = d / "two-hosts.jsonl"
            cmd = ctx.cmd(art, two, steps=steps, launcher=hosts.mpirun(ctx, ranks))
            rc, out = ctx.run_cmd(cmd, ctx.timeout)
            (d / "two-hosts.out").write_text(out)
            if rc != 0:
                raise Fail(f"the run across two hosts failed (exit {rc}):\n{tail(out, 20)}")
            a, b = losses(one), losses(two)
            if sorted(a) != list(range(steps)) or a != b:
                raise Fail(f"losses differ: one host {a}, two hosts {b}")
            check_plain_progress(out)
            # The link dies mid-run.
            job = Job(ctx, ctx.cmd(art, d / "cut.jsonl", extra=["--comm-timeout", str(TIMEOUT)],
                                   launcher=hosts.mpirun(ctx, ranks)), d / "cut.out")
            limit = TIMEOUT + 30
            rc, took, _ = act_then_wait(ctx, job, d / "cut.jsonl", hosts.link_down, limit,
                                        "the link went down")
        finally:
            hosts.close()
        out = job.output()
        if rc == 0:
            raise Fail(f"exit 0 after the link went down:\n{tail(out)}")
        m = re.search(r"communication timeout[^\n]*|\[autoshard watchdog\][^\n]*|"
                      r"lost communication[^\n]*", out)
        if not m:
            raise Fail(f"no watchdog ('communication timeout', '[autoshard watchdog]') or "
                       f"keepalive ('lost communication') message after the link went "
                       f"down:\n{tail(out, 20)}")
        return (f"{steps} losses equal to one host (bitwise); link down: ended in "
                f"{took:.1f}s (exit {rc}): '{m.group(0)[:100]}'")
    return case


CASES: List[Tuple[str, str, Callable[[Ctx, Path], str]]] = [
    ("watchdog", "SIGSTOP rank 2 of dp=2,tp=2 (4 ranks)", watchdog_sigstop("dp2tp2", 2)),
    ("watchdog", "SIGSTOP rank 1 of dp=2,tp=2, --comm-thread on",
     watchdog_sigstop("dp2tp2", 1, ["--comm-thread", "on"])),
    ("watchdog", "SIGSTOP rank 3 of pp=2,dp=2 (p2p receives)", watchdog_sigstop("pp2dp2", 3)),
    ("signal", "SIGINT to shard-run -n 4, no --save-dir",
     interrupted("dp2tp2", signal.SIGINT, "SIGINT")),
    ("signal", "SIGTERM to shard-run (1 rank), no --save-dir",
     interrupted("1rank", signal.SIGTERM, "SIGTERM")),
    ("death", "SIGKILL of rank 1 of dp=2,tp=2", rank_dies("dp2tp2", 1)),
    ("death", "rank killed writing --save-params after the last step of dp=2,tp=2",
     dies_while_finishing("dp2tp2")),
    ("hosts", "dp=2,tp=2 under the user's own mpirun on one host: plain progress lines",
     own_mpirun("dp2tp2")),
    ("hosts", "dp=2,tp=2 across two network namespaces over TCP, then the link down",
     across_hosts("dp2tp2")),
    ("hosts", "pp=2,dp=2 across two network namespaces over TCP, then the link down",
     across_hosts("pp2dp2")),
]


def main() -> int:
    args = suite_arguments("fault_check", "fault-check").parse_args()
    args.out = args.out or str(Path(args.build) / "fault-check")
    ctx = Ctx(args)
    if not prepare_out("fault_check", ctx, args.reuse):
        return 2
    t_all = time.monotonic()
    results = [run_case(ctx, ctx.out, ctx.out / "cases" / f"{i:02d}-{group}-{slug(name)}",
                        group, name, fn, "fault_check")
               for i, (group, name, fn) in enumerate(selected(CASES, args.filter))]
    seconds = time.monotonic() - t_all
    failed = print_summary(results, seconds, ctx.out)
    if args.junit:
        write_junit(Path(args.junit), results, seconds, suite="fault")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
