#!/usr/bin/env python3
"""autoshard's nanoGPT CPU model and recipe in PyTorch: eager, torch.compile
or DDP (gloo) on several processes. Run with the peer venv
(~/.cache/autoshard-peer-venv, python/requirements-peer.txt):

  torch_peer.py --mode eager   [--threads 2] [--steps 2000] ...
  torch_peer.py --mode compile [--threads 2]
  torch_peer.py --mode ddp --nproc 2 [--threads 1]   (global batch 12: 6 rows per rank)

Prints progress lines and, at the end (rank 0), one JSON line:
{"peer", "steps", "tokens_per_s", "wall_s", "final_train_loss", "val_loss",
 "peak_rss_mib" (DDP: "peak_rss_mib_per_rank"), ...}. See README.md for
every difference from autoshard's run.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def extra_args(p):
    p.add_argument("--mode", choices=["eager", "compile", "ddp"], default="eager")
    p.add_argument("--nproc", type=int, default=2, help="DDP processes")
    p.add_argument("--adamw", choices=["foreach", "fused", "for-loop"], default="foreach",
                   help="torch.optim.AdamW implementation (foreach: PyTorch's default)")


def launch_ddp(a) -> int:
    """Starts --nproc ranks of this script (the launcher imports no torch)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(a.nproc):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(a.nproc), LOCAL_RANK=str(r),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable, __file__] + sys.argv[1:], env=env))
    rc = 0
    for p in procs:
        rc = p.wait() or rc
    return rc


def main() -> int:
    a = common.parse_args(__doc__.splitlines()[0], default_threads=2, extra=extra_args)
    ddp = a.mode == "ddp"
    if ddp and "RANK" not in os.environ:
        if "--threads" not in sys.argv:
            sys.argv += ["--threads", "1"]  # 1 thread per rank by default
        return launch_ddp(a)
    common.set_thread_env(a.threads)
    t_start = time.perf_counter()

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(a.threads)
    rank, world = 0, 1
    if ddp:
        import torch.distributed as dist
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        dist.init_process_group("gloo", rank=rank, world_size=world)
        if a.batch % world:
            raise SystemExit(f"--batch {a.batch} is not divisible by {world} processes")
    torch.manual_seed(a.seed)

    data = common.CharData(a.data, a.seq, a.batch, a.seed, a.eval_iters)
    V, VP = data.vocab, common.padded_vocab(data.vocab)
    H, NH = common.N_EMBD, common.N_HEAD

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(H, eps=common.LN_EPS, bias=False)
            self.wq = nn.Linear(H, H, bias=False)
            self.wk = nn.Linear(H, H, bias=False)
            self.wv = nn.Linear(H, H, bias=False)
            self.wo = nn.Linear(H, H, bias=False)
            self.ln_2 = nn.LayerNorm(H, eps=common.LN_EPS, bias=False)
            self.w_fc = nn.Linear(H, common.N_INNER, bias=False)
            self.w_proj = nn.Linear(common.N_INNER, H, bias=False)

        def forward(self, x):
            B, S, _ = x.shape
            h = self.ln_1(x)
            q = self.wq(h).view(B, S, NH, H // NH).transpose(1, 2)
            k = self.wk(h).view(B, S, NH, H // NH).transpose(1, 2)
            v = self.wv(h).view(B, S, NH, H // NH).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.wo(y.transpose(1, 2).reshape(B, S, H))
            return x + self.w_proj(F.gelu(self.w_fc(self.ln_2(x))))  # exact (erf) GELU

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VP, H)
            self.wpe = nn.Embedding(a.seq, H)
            self.blocks = nn.ModuleList(Block() for _ in range(common.N_LAYER))
            self.ln_f = nn.LayerNorm(H, eps=common.LN_EPS, bias=False)
            # Padded logits (rows >= V of the tied table) never win: -inf.
            mask = torch.zeros(VP)
            mask[V:] = float("-inf")
            self.register_buffer("logit_mask", mask, persistent=False)
            with torch.no_grad():
                for name, p in self.named_parameters():
                    if p.dim() >= 2:
                        resid = name.endswith("wo.weight") or name.endswith("w_proj.weight")
                        p.normal_(0.0, common.RESID_STD if resid else common.INIT_STD)
                self.wte.weight[V:] = 0  # autoshard: 0 outside the logical shape

        def forward(self, ids, labels):
            S = ids.shape[1]
            x = self.wte(ids) + self.wpe.weight[:S]
            for b in self.blocks:
                x = b(x)
            logits = self.ln_f(x) @ self.wte.weight.t() + self.logit_mask  # tied head
            return F.cross_entropy(logits.view(-1, VP), labels.reshape(-1))

    model = GPT()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt_kw = {}
    if a.adamw == "fused":
        opt_kw["fused"] = True
    elif a.adamw == "for-loop":
        opt_kw["foreach"] = False
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(a.beta1, a.beta2), eps=1e-8, **opt_kw)
    step_model = model
    if ddp:
        from torch.nn.parallel import DistributedDataParallel
        step_model = DistributedDataParallel(model)
    if a.mode == "compile":
        step_model = torch.compile(model)
    eval_model = step_model.module if ddp else step_model

    rows = a.batch // world
    lo, hi = rank * rows, (rank + 1) * rows
    val = [(torch.from_numpy(x[lo:hi]).long(), torch.from_numpy(y[lo:hi]).long())
           for x, y in data.val_batches]

    @torch.no_grad()
    def evaluate() -> float:
        model.eval()
        total = sum(eval_model(x, y).item() for x, y in val) / len(val)
        model.train()
        if ddp:  # the mean over the whole global batch
            t = torch.tensor([total])
            dist.all_reduce(t)
            total = t.item() / world
        return total

    timer = common.StepTimer(a.batch * a.seq)
    val_loss = float("nan")
    loss_v = float("nan")
    for it in range(a.steps):
        if a.eval_interval > 0 and it % a.eval_interval == 0:
            val_loss = evaluate()
            if rank == 0:
                print(f"step {it}: val loss {val_loss:.4f}", flush=True)
        lr = common.lr_at(a, it)
        for g in opt.param_groups:
            g["lr"] = lr
        xb, yb = data.train_batch()
        xb = torch.from_numpy(xb[lo:hi]).long()
        yb = torch.from_numpy(yb[lo:hi]).long()
        t0 = time.perf_counter()
        loss = step_model(xb, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip)
        opt.step()
        loss_v = loss.item()
        dt = time.perf_counter() - t0
        timer.add(it, dt)
        if rank == 0:
            common.progress(a, it, loss_v, lr, dt, a.batch * a.seq)
    val_loss = evaluate()
    if rank == 0:
        print(f"step {a.steps}: val loss {val_loss:.4f}", flush=True)
    wall = time.perf_counter() - t_start
    rss = common.peak_rss_mib()
    out = {"peer": {"eager": "torch-eager", "compile": "torch-compile", "ddp": "torch-ddp-gloo"}[a.mode],
           "steps": a.steps, "tokens_per_s": timer.tokens_per_s(), "wall_s": wall,
           "final_train_loss": loss_v, "val_loss": val_loss}
    if ddp:
        rss_all = [None] * world
        dist.all_gather_object(rss_all, rss)
        # train loss: the mean over the global batch, like autoshard's
        t = torch.tensor([loss_v])
        dist.all_reduce(t)
        out["final_train_loss"] = t.item() / world
        out["peak_rss_mib_per_rank"] = rss_all
        out["peak_rss_mib"] = max(rss_all)
        dist.destroy_process_group()
    else:
        out["peak_rss_mib"] = rss
    if rank == 0:
        out.update(threads=a.threads, processes=world, batch=a.batch, seq=a.seq,
                   timed_steps=timer.steps, torch=torch.__version__, adamw=a.adamw)
        print(common.result_line(**out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
