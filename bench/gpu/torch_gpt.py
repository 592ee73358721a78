"""The same GPT training step in PyTorch, eager and torch.compile.

The reference for scripts/gpu_check.sh: a nanoGPT-style GPT-2 (pre-LayerNorm
without biases, GELU MLP of 4h, tied embeddings, causal
scaled_dot_product_attention) built from the same HF-style config as the
autoshard artifact, trained with bf16 autocast (fp32 master weights) and
fused AdamW. Prints one JSON object per mode with tokens/s and the step time.

    python bench/gpu/torch_gpt.py CONFIG.json --batch 8 --seq 2048 \
        [--steps 5] [--warmup 2] [--modes eager,compile] [--vocab-multiple 64]
"""

import argparse
import json
import math
import sys
import time


def build(cfg, vocab, seq):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    h, heads = cfg["n_embd"], cfg["n_head"]
    inner = cfg.get("n_inner") or 4 * h
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    bias = cfg.get("bias", True)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(h, eps=eps, bias=bias)
            self.qkv = nn.Linear(h, 3 * h, bias=bias)
            self.proj = nn.Linear(h, h, bias=bias)
            self.ln2 = nn.LayerNorm(h, eps=eps, bias=bias)
            self.fc = nn.Linear(h, inner, bias=bias)
            self.out = nn.Linear(inner, h, bias=bias)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(h, dim=2)
            q, k, v = (t.view(b, s, heads, h // heads).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, s, h))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, h)
            self.wpe = nn.Embedding(seq, h)
            self.blocks = nn.ModuleList(Block() for _ in range(cfg["n_layer"]))
            self.ln = nn.LayerNorm(h, eps=eps, bias=bias)

        def forward(self, idx, labels):
            pos = torch.arange(idx.shape[1], device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for blk in self.blocks:
                x = blk(x)
            logits = self.ln(x) @ self.wte.weight.t()
            return F.cross_entropy(logits.float().view(-1, vocab), labels.view(-1))

    return GPT()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("config")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--modes", default="eager,compile")
    p.add_argument("--vocab-multiple", type=int, default=64)
    args = p.parse_args(argv)
    cfg = json.load(open(args.config))
    vocab = math.ceil(cfg["vocab_size"] / args.vocab_multiple) * args.vocab_multiple

    import torch

    torch.backends.cuda.matmul.allow_tf32 = True
    dev = "cuda"
    for mode in args.modes.split(","):
        torch.manual_seed(0)
        model = build(cfg, vocab, args.seq).to(dev)
        params = sum(t.numel() for t in model.parameters())
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        step_fn = model if mode == "eager" else torch.compile(model)
        idx = torch.randint(0, cfg["vocab_size"], (args.batch, args.seq), device=dev)
        labels = torch.randint(0, cfg["vocab_size"], (args.batch, args.seq), device=dev)

        def step():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = step_fn(idx, labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss

        t0 = time.time()
        for _ in range(args.warmup):
            step()
        torch.cuda.synchronize()
        warm = time.time() - t0
        t0 = time.time()
        for _ in range(args.steps):
            loss = step()
        torch.cuda.synchronize()
        sec = (time.time() - t0) / args.steps
        print(json.dumps({
            "mode": mode, "params": params, "step_ms": sec * 1e3,
            "tokens_per_s": args.batch * args.seq / sec,
            "warmup_s": warm, "loss": float(loss),
        }), flush=True)
        del model, opt, step_fn
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
