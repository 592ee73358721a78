#!/usr/bin/env python3
"""Planner calibration: predicted vs published TFLOP/s per GPU.

For every row of the two tables of /work/shared/reference/workloads.md §4
(Narayanan et al. 2021 on DGX A100; Megatron-Core on DGX H100) this builds
the GPT model IR, scores the published plan with
`shard-opt --dist-auto-plan=evaluate=...`, prints predicted vs reported
TFLOP/s per GPU (in each paper's own FLOP formula) and the error; then runs
the search on the same model/cluster/batch and prints the plan it picks and
its predicted TFLOP/s (same formula, so the numbers compare work per second).

Assumptions for what the tables leave out (not tuned per row): microbatch
size 1, the 1F1B schedule (vpp=1); Narayanan: full recomputation, no
sequence parallelism, no distributed optimizer (zero=0); Megatron-Core:
sequence parallelism when tp>1, distributed optimizer (zero=1), no
recomputation; dropout 0.1 on the hidden states (Megatron's GPT default, which
both runs used). Cluster efficiencies come from configs/clusters/*.json.

Usage: bench/planner_calibration/run.py [--build build-plan] [--rows N]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# params(B), heads, h, l, t, p, d, gpus, batch, TFLOP/s per GPU (96-formula)
NARAYANAN = [
    (1.7, 24, 2304, 24, 1, 1, 32, 32, 512, 137),
    (3.6, 32, 3072, 30, 2, 1, 32, 64, 512, 138),
    (7.5, 32, 4096, 36, 4, 1, 32, 128, 512, 142),
    (18.4, 48, 6144, 40, 8, 1, 32, 256, 1024, 135),
    (39.1, 64, 8192, 48, 8, 2, 32, 512, 1536, 138),
    (76.1, 80, 10240, 60, 8, 4, 32, 1024, 1792, 140),
    (145.6, 96, 12288, 80, 8, 8, 24, 1536, 2304, 148),
    (310.1, 128, 16384, 96, 8, 16, 15, 1920, 2160, 155),
    (529.6, 128, 20480, 105, 8, 35, 9, 2520, 2520, 163),
    (1008.0, 160, 25600, 128, 8, 64, 6, 3072, 3072, 163),
]
# params, heads, h, l, TP, PP, GPUs, batch, TFLOP/s per GPU (72-formula)
MCORE = [
    ("1.7B", 16, 2048, 24, 1, 1, 48, 192, 408.8),
    ("7.1B", 32, 4096, 30, 2, 1, 96, 192, 465.9),
    ("16B", 48, 6144, 32, 4, 1, 192, 192, 489.1),
    ("32B", 56, 7168, 48, 8, 1, 384, 192, 459.6),
    ("70B", 64, 8192, 84, 8, 2, 768, 384, 419.7),
    ("119B", 80, 10240, 92, 8, 4, 1536, 768, 420.5),
    ("177B", 96, 12288, 96, 8, 6, 2304, 1152, 432.8),
    ("314B", 128, 16384, 96, 8, 8, 3072, 1536, 474.4),
    ("462B", 144, 18432, 112, 8, 16, 6144, 3072, 459.9),
]


def paper_flops(formula, B, s, l, h, V):
    """Model FLOPs per iteration (workloads.md §3)."""
    if formula == 96:  # Narayanan: full recomputation counted
        return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))
    return 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))


def build_ir(tmp, name, heads, h, l, s, V, py):
    cfg = {"model_type": "gpt2", "vocab_size": V, "n_positions": s, "n_embd": h,
           "n_layer": l, "n_head": heads, "n_inner": 4 * h,
           "activation_function": "gelu", "tie_word_embeddings": True}
    cfg_path = os.path.join(tmp, name + ".json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    out = os.path.join(tmp, name + ".mlir")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    subprocess.run([py, "-m", "autoshard.models", cfg_path, "--batch", "8", "--seq",
                    str(s), "--dtype", "bf16", "--dropout", "0.1", "-q", "-o", out], check=True, env=env)
    return out


def run_planner(shard_opt, ir, cluster, gpus, batch, evaluate, tmp):
    report = os.path.join(tmp, "report.json")
    opts = f"cluster={cluster} gpus={gpus} batch={batch} format=json report={report}"
    if evaluate:
        opts += f" evaluate={evaluate}"
    t0 = time.time()
    proc = subprocess.run([shard_opt, ir, f"--dist-auto-plan={opts}", "-o", os.devnull],
                          capture_output=True, text=True)
    wall = time.time() - t0
    if proc.returncode != 0:
        return None, proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed", wall
    with open(report) as f:
        return json.load(f), None, wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build-plan"))
    ap.add_argument("--py", default=os.path.join(ROOT, "build", "venv", "bin", "python"))
    ap.add_argument("--rows", type=int, default=0, help="only the first N rows per table")
    ap.add_argument("--no-search", action="store_true")
    args = ap.parse_args()
    shard_opt = os.path.join(args.build, "bin", "shard-opt")
    tables = []
    for r in NARAYANAN:
        P, heads, h, l, t, p, d, gpus, B, rep = r
        tables.append(("narayanan2021/dgx-a100", f"{P}B", heads, h, l, 2048, 51200, gpus, B,
                       f"pp={p},dp={d},tp={t},sp=0,zero=0,mbs=1,schedule=1f1b,recompute=full",
                       96, rep, "dgx-a100-80gb.json"))
    for r in MCORE:
        name, heads, h, l, t, p, gpus, B, rep = r
        d = gpus // (t * p)
        tables.append(("mcore/dgx-h100", name, heads, h, l, 4096, 131072, gpus, B,
                       f"pp={p},dp={d},tp={t},sp={1 if t > 1 else 0},zero=1,mbs=1,"
                       f"schedule=1f1b,recompute=none", 72, rep, "dgx-h100.json"))
    if args.rows:
        keep, seen = [], {}
        for row in tables:
            seen[row[0]] = seen.get(row[0], 0) + 1
            if seen[row[0]] <= args.rows:
                keep.append(row)
        tables = keep
    errors = {}
    wins = 0
    hdr = (f"{'table':24} {'model':8} {'GPUs':>5} {'published plan':58} {'reported':>8} "
           f"{'predicted':>9} {'error':>7} | {'searched plan':110} {'pred.':>6} {'gain':>6} {'search s':>8}")
    print(hdr)
    with tempfile.TemporaryDirectory() as tmp:
        for (table, name, heads, h, l, s, V, gpus, B, plan, formula, rep, cluster) in tables:
            ir = build_ir(tmp, "m", heads, h, l, s, V, args.py)
            cpath = os.path.join(ROOT, "configs", "clusters", cluster)
            work = paper_flops(formula, B, s, l, h, V)
            rep_json, err, _ = run_planner(shard_opt, ir, cpath, gpus, B, plan, tmp)
            if rep_json and rep_json["plans"]:
                step = rep_json["plans"][0]["step_s"]
                pred = work / step / gpus / 1e12
                e = (pred - rep) / rep
                errors.setdefault(table, []).append(e)
                pred_s, err_s = f"{pred:9.1f}", f"{100 * e:+6.1f}%"
            else:
                why = err or next(iter(rep_json["rejected"].values()), "rejected")
                pred, pred_s, err_s = None, "   reject", why[:60]
            line = (f"{table:24} {name:8} {gpus:5d} {plan:58} {rep:8.1f} {pred_s} {err_s:>7}")
            if not args.no_search:
                srch, serr, wall = run_planner(shard_opt, ir, cpath, gpus, B, None, tmp)
                if srch and srch["plans"]:
                    best = srch["plans"][0]
                    spred = work / best["step_s"] / gpus / 1e12
                    gain = (spred / pred - 1) * 100 if pred else float("nan")
                    if pred is None or spred >= pred * (1 - 1e-9):
                        wins += 1
                    line += f" | {best['plan']:110} {spred:6.1f} {gain:+5.1f}% {wall:8.2f}"
                else:
                    line += f" | search failed: {serr}"
            print(line, flush=True)
    allerr = [e for v in errors.values() for e in v]
    for table, v in errors.items():
        mae = sum(abs(e) for e in v) / len(v)
        print(f"{table}: rows {len(v)}, MAE {100 * mae:.1f}%, max |error| {100 * max(abs(e) for e in v):.1f}%")
    if allerr:
        print(f"both tables: rows {len(allerr)}, MAE {100 * sum(abs(e) for e in allerr) / len(allerr):.1f}%, "
              f"max |error| {100 * max(abs(e) for e in allerr):.1f}%")
    if not args.no_search:
        print(f"searched plan >= published plan (predicted): {wins} of {len(tables)} rows")


if __name__ == "__main__":
    sys.exit(main())
