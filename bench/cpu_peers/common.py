"""Shared pieces of the peer scripts (stdlib; numpy for CharData only, so
that run.py runs on any python3): the options, the
data, the learning-rate schedule and the final JSON line.

Mirrors autoshard's nanoGPT CPU recipe (scripts/train.sh without --plan):
character tokens of Tiny Shakespeare (sorted distinct characters, 90/10
train/val split at int(n * 0.9) as nanoGPT's prepare.py), random windows of
64 + 1 tokens, batch 12, nanoGPT's warmup + cosine schedule
(runtime/train/lib/LRSchedule.cpp), eval before the steps whose index is a
multiple of --eval-interval and once after the last step, on --eval-iters
fixed validation batches (the same ones at every evaluation, as shard-run's
Trainer::evaluate).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"

# The model of ../shared/configs/models/nanogpt-shakespeare-char-cpu.json.
N_LAYER, N_HEAD, N_EMBD, N_INNER, BLOCK = 4, 4, 128, 512, 64
INIT_STD = 0.02
RESID_STD = INIT_STD / math.sqrt(2 * N_LAYER)  # GPT-2's scaled init (out, down)
LN_EPS = 1e-5
VOCAB_MULTIPLE = 64  # train.sh --vocab-multiple: 65 characters -> 128 rows
WARMUP_STEPS = 10  # steps left out of tokens/s (first-step allocation, compile)


def padded_vocab(v: int, multiple: int = VOCAB_MULTIPLE) -> int:
    return (v + multiple - 1) // multiple * multiple


def parse_args(description: str, default_threads: int, extra=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--eval-interval", type=int, default=250,
                   help="evaluate before every step whose index is a multiple (0: only at the end)")
    p.add_argument("--eval-iters", type=int, default=20)
    p.add_argument("--threads", type=int, default=default_threads,
                   help=f"intra-op threads per process (default {default_threads})")
    p.add_argument("--batch", type=int, default=12, help="global batch (rows of 64 tokens)")
    p.add_argument("--seq", type=int, default=BLOCK)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min-lr", type=float, default=1e-4)
    p.add_argument("--warmup", type=int, default=None, help="default min(100, steps)")
    p.add_argument("--decay-steps", type=int, default=None, help="default: --steps")
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.99)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--log-interval", type=int, default=100, help="progress line every N steps")
    if extra:
        extra(p)
    a = p.parse_args()
    if a.decay_steps is None:
        a.decay_steps = a.steps
    if a.warmup is None:
        a.warmup = min(100, a.decay_steps)
    return a


def lr_at(a: argparse.Namespace, step: int) -> float:
    """runtime/train/lib/LRSchedule.cpp (nanoGPT's get_lr)."""
    if step < a.warmup:
        return a.lr * (step + 1) / (a.warmup + 1)
    if step > a.decay_steps:
        return a.min_lr
    span = a.decay_steps - a.warmup
    ratio = (step - a.warmup) / span if span > 0 else 1.0
    return a.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (a.lr - a.min_lr)


class CharData:
    """nanoGPT's shakespeare_char: sorted distinct characters, 90/10 split."""

    def __init__(self, path: str, seq: int, batch: int, seed: int, eval_iters: int):
        import numpy as np

        self.np = np
        text = Path(path).read_bytes()
        chars = sorted(set(text))
        self.vocab = len(chars)
        lut = np.zeros(256, dtype=np.int32)
        for i, c in enumerate(chars):
            lut[c] = i
        ids = lut[np.frombuffer(text, dtype=np.uint8)]
        n = int(len(ids) * 0.9)
        self.train, self.val = ids[:n], ids[n:]
        self.seq, self.batch = seq, batch
        self.rng = np.random.default_rng(seed)
        vrng = np.random.default_rng(seed + 1)
        # Fixed validation batches: every evaluation sees the same windows.
        self.val_batches = [self._windows(self.val, vrng) for _ in range(eval_iters)]

    def _windows(self, data, rng):
        np = self.np
        starts = rng.integers(0, len(data) - self.seq, size=self.batch)
        idx = starts[:, None] + np.arange(self.seq + 1)[None, :]
        w = data[idx]
        return np.ascontiguousarray(w[:, :-1]), np.ascontiguousarray(w[:, 1:])

    def train_batch(self):
        """The global batch of the next step (every rank draws the same one)."""
        return self._windows(self.train, self.rng)


def peak_rss_mib() -> float:
    """This process's peak resident set (ru_maxrss, KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class StepTimer:
    """Train tokens/s over the timed steps (index >= WARMUP_STEPS)."""

    def __init__(self, tokens_per_step: int):
        self.tokens_per_step = tokens_per_step
        self.seconds = 0.0
        self.steps = 0

    def add(self, step: int, seconds: float) -> None:
        if step >= WARMUP_STEPS:
            self.seconds += seconds
            self.steps += 1

    def tokens_per_s(self) -> float:
        return self.steps * self.tokens_per_step / self.seconds if self.seconds > 0 else 0.0


def result_line(**fields) -> str:
    return json.dumps(fields)


def progress(a: argparse.Namespace, step: int, loss: float, lr: float, dt: float, tokens: int) -> None:
    if a.log_interval > 0 and (step % a.log_interval == 0 or step == a.steps - 1):
        print(f"step {step}/{a.steps}: loss {loss:.4f}, lr {lr:.2e}, {tokens / dt:.0f} tok/s",
              flush=True)


def set_thread_env(n: int) -> None:
    """Thread counts for the OpenMP/MKL/OpenBLAS pools, before they start."""
    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[k] = str(n)
