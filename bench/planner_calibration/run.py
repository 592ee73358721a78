#!/usr/bin/env python3
"""Planner calibration: predicted vs published TFLOP/s per GPU.

For every row of the two tables of /work/shared/reference/workloads.md §4
(Narayanan et al. 2021 on DGX A100; Megatron-Core on DGX H100) this builds
the GPT model IR, scores the published plan with
`shard-opt --dist-auto-plan=evaluate=...`, prints predicted vs reported
TFLOP/s per GPU (in each paper's own FLOP formula) and the error; then runs
the search on the same model/cluster/batch and prints the plan it picks and
its predicted TFLOP/s (same formula, so the numbers compare work per second).

Calibration protocol (out of sample, DESIGN.md §7): every cluster knob is
fixed a priori from a stated principle (docs/planner.md, "Calibration")
except two per cluster file, `efficiency.gemm` and `efficiency.attention`,
which are fitted (coordinate descent on a grid, minimising the mean absolute
error) on the FIT rows only: the odd rows (1st, 3rd, ...) of each table,
fixed before any result was seen. The even rows are held out and never
enter the fit; the bench reports their errors separately ("held-out"), and
the fitted values are written to the report, not to configs/clusters (the
committed files carry the values of the last `--fit` run). Nothing is set
per row.

Assumptions for what the tables leave out (not tuned per row): microbatch
size 1, the 1F1B schedule (vpp=1); Narayanan: full recomputation, no
sequence parallelism, no distributed optimizer (zero=0); Megatron-Core:
sequence parallelism when tp>1, distributed optimizer (zero=1), no
recomputation; dropout 0.1 on the hidden states (Megatron's GPT default, which
both runs used). Cluster efficiencies come from configs/clusters/*.json.

Usage: bench/planner_calibration/run.py [--build build-plan] [--rows N]
       [--fit] [--no-search]
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


# The features of the software each published table ran (its "same-software"
# search): Megatron-LM as of Narayanan et al. 2021 had 1F1B and the
# interleaved schedule (introduced there), full activation recomputation and
# plain data parallelism (no sequence parallelism, selective recomputation,
# distributed optimizer or context parallelism: those came in 2022-2023);
# Megatron-Core has SP, selective recomputation, the distributed optimizer
# (ZeRO-1) and context parallelism, but no zero-bubble or GPipe schedules.
SAME_SOFTWARE = {
    "dgx-a100-80gb.json": "schedules=1f1b,interleaved recompute=none,full zero=0 cp=1 sp=false",
    "dgx-h100.json": "schedules=1f1b,interleaved zero=0,1",
}


def run_planner(shard_opt, ir, cluster, gpus, batch, evaluate, tmp, extra=""):
    report = os.path.join(tmp, "report.json")
    opts = f"cluster={cluster} gpus={gpus} batch={batch} format=json report={report}"
    if evaluate:
        opts += f" evaluate={evaluate}"
    if extra:
        opts += " " + extra
    t0 = time.time()
    proc = subprocess.run([shard_opt, ir, f"--dist-auto-plan={opts}", "-o", os.devnull],
                          capture_output=True, text=True)
    wall = time.time() - t0
    if proc.returncode != 0:
        return None, proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed", wall
    with open(report) as f:
        return json.load(f), None, wall


def fit_row(index):
    """The protocol's fixed split: odd rows (1st, 3rd, ...) fit, even held out."""
    return index % 2 == 0


def write_cluster(tmp, cluster_file, knobs):
    """A copy of the cluster file with `knobs` ({"efficiency.gemm": x}) set."""
    with open(os.path.join(ROOT, "configs", "clusters", cluster_file)) as f:
        cfg = json.load(f)
    for key, value in knobs.items():
        obj = cfg
        parts = key.split(".")
        for part in parts[:-1]:
            obj = obj.setdefault(part, {})
        obj[parts[-1]] = value
    path = os.path.join(tmp, "fit-" + cluster_file)
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


def predict(shard_opt, row, cpath, tmp):
    (table, name, heads, h, l, s, V, gpus, B, plan, formula, rep, cluster, ir, idx) = row
    work = paper_flops(formula, B, s, l, h, V)
    rep_json, err, _ = run_planner(shard_opt, ir, cpath, gpus, B, plan, tmp)
    if rep_json and rep_json["plans"]:
        return work / rep_json["plans"][0]["step_s"] / gpus / 1e12, None
    return None, err or next(iter(rep_json["rejected"].values()), "rejected")


GRID = {"efficiency.gemm": [0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0],
        "efficiency.attention": [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]}


def fit_cluster(shard_opt, rows, cluster_file, tmp):
    """Coordinate descent over GRID on the fit rows of one cluster: MAE."""
    with open(os.path.join(ROOT, "configs", "clusters", cluster_file)) as f:
        cfg = json.load(f)
    knobs = {k: cfg.get(k.split(".")[0], {}).get(k.split(".")[1], GRID[k][2]) for k in GRID}
    cache = {}

    def mae(kn):
        key = tuple(sorted(kn.items()))
        if key not in cache:
            cpath = write_cluster(tmp, cluster_file, kn)
            errs = []
            for row in rows:
                pred, _ = predict(shard_opt, row, cpath, tmp)
                errs.append(1.0 if pred is None else abs(pred - row[11]) / row[11])
            cache[key] = sum(errs) / len(errs)
        return cache[key]

    for _ in range(2):
        for k in GRID:
            best = min(GRID[k], key=lambda x: mae(dict(knobs, **{k: x})))
            knobs[k] = best
    return knobs, mae(knobs), len(cache)


def korthikanti_check(shard_opt, tables, cluster_paths, tmp):
    """An external check of the model's relative predictions (not fitted):
    Korthikanti et al. 2022 (arXiv 2205.05198, abstract) measured, for the
    530B GPT on A100s with t=8, p=35 (2,240 GPUs), 42.1% MFU with full
    recomputation and 54.2% with sequence parallelism + selective
    recomputation: +28.7% throughput. Scored here on the Narayanan 529.6B
    row's model and cluster file (its 2,520 GPUs, d=9, batch 2,520) with the
    same t=8, p=35 layout, MFU in the 72-formula (no recomputation counted)."""
    row = next((r for r in tables if r[1] == "529.6B"), None)
    if row is None:
        return
    (table, name, heads, h, l, s, V, gpus, B, plan, formula, rep, cluster, ir, idx) = row
    variants = [("full recompute", plan),
                ("SP + selective", plan.replace("sp=0", "sp=1").replace("recompute=full",
                                                                      "recompute=selective"))]
    mfu = []
    for label, p in variants:
        rep_json, err, _ = run_planner(shard_opt, ir, cluster_paths[cluster], gpus, B, p, tmp)
        if not rep_json or not rep_json["plans"]:
            print(f"korthikanti check: {label} ({p}) rejected: {err or rep_json['rejected']}")
            return
        step = rep_json["plans"][0]["step_s"]
        mfu.append(paper_flops(72, B, s, l, h, V) / step / gpus / 312e12)
    print(f"external check (Korthikanti et al. 2022, 530B on A100, t=8 p=35): predicted MFU "
          f"{100 * mfu[0]:.1f}% (full recompute) -> {100 * mfu[1]:.1f}% (SP + selective), "
          f"{100 * (mfu[1] / mfu[0] - 1):+.1f}%; measured 42.1% -> 54.2%, +28.7%")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--py", default=os.path.join(ROOT, "build", "venv", "bin", "python"))
    ap.add_argument("--rows", type=int, default=0, help="only the first N rows per table")
    ap.add_argument("--no-search", action="store_true")
    ap.add_argument("--fit", action="store_true",
                    help="refit efficiency.gemm/attention per cluster on the fit rows first")
    args = ap.parse_args()
    shard_opt = os.path.join(args.build, "bin", "shard-opt")
    tables = []
    for i, r in enumerate(NARAYANAN):
        P, heads, h, l, t, p, d, gpus, B, rep = r
        tables.append(["narayanan2021/dgx-a100", f"{P}B", heads, h, l, 2048, 51200, gpus, B,
                       f"pp={p},dp={d},tp={t},sp=0,zero=0,mbs=1,schedule=1f1b,recompute=full",
                       96, rep, "dgx-a100-80gb.json", None, i])
    for i, r in enumerate(MCORE):
        name, heads, h, l, t, p, gpus, B, rep = r
        d = gpus // (t * p)
        tables.append(["mcore/dgx-h100", name, heads, h, l, 4096, 131072, gpus, B,
                       f"pp={p},dp={d},tp={t},sp={1 if t > 1 else 0},zero=1,mbs=1,"
                       f"schedule=1f1b,recompute=none", 72, rep, "dgx-h100.json", None, i])
    if args.rows:
        tables = [row for row in tables if row[14] < args.rows]
    errors = {}
    gains = []
    gain_rows = []
    same_rows = []
    wins = 0
    with tempfile.TemporaryDirectory() as tmp:
        for k, row in enumerate(tables):
            row[13] = build_ir(tmp, f"m{k}", *row[2:5], row[5], row[6], args.py)
        cluster_paths = {}
        for cluster in sorted({row[12] for row in tables}):
            cluster_paths[cluster] = os.path.join(ROOT, "configs", "clusters", cluster)
            if args.fit:
                fit_rows = [row for row in tables if row[12] == cluster and fit_row(row[14])]
                t0 = time.time()
                knobs, mae, n = fit_cluster(shard_opt, fit_rows, cluster, tmp)
                cluster_paths[cluster] = write_cluster(tmp, cluster, knobs)
                print(f"fit {cluster} on rows {[r[1] for r in fit_rows]}: "
                      + ", ".join(f"{k}={v}" for k, v in knobs.items())
                      + f" (fit-row MAE {100 * mae:.1f}%, {n} grid points, {time.time() - t0:.0f} s)",
                      flush=True)
        print("protocol: fit rows = odd rows of each table (marked F), held-out rows = even rows "
              "(marked H); only efficiency.gemm/attention per cluster are fitted, on F rows")
        hdr = (f"{'table':24} {'model':8} {'set':3} {'GPUs':>5} {'published plan':58} {'reported':>8} "
               f"{'predicted':>9} {'error':>7} | {'searched plan':110} {'pred.':>6} {'gain':>6} {'vs rep.':>7} {'search s':>8}")
        print(hdr)
        for row in tables:
            (table, name, heads, h, l, s, V, gpus, B, plan, formula, rep, cluster, ir, idx) = row
            cpath = cluster_paths[cluster]
            work = paper_flops(formula, B, s, l, h, V)
            which = "F" if fit_row(idx) else "H"
            pred, why = predict(shard_opt, row, cpath, tmp)
            if pred is not None:
                e = (pred - rep) / rep
                errors.setdefault((table, which), []).append(e)
                pred_s, err_s = f"{pred:9.1f}", f"{100 * e:+6.1f}%"
            else:
                pred_s, err_s = "   reject", (why or "")[:60]
            line = (f"{table:24} {name:8} {which:3} {gpus:5d} {plan:58} {rep:8.1f} {pred_s} {err_s:>7}")
            if not args.no_search:
                srch, serr, wall = run_planner(shard_opt, ir, cpath, gpus, B, None, tmp)
                if srch and srch["plans"]:
                    best = srch["plans"][0]
                    spred = work / best["step_s"] / gpus / 1e12
                    gain = (spred / pred - 1) * 100 if pred else float("nan")
                    # Against the reported figure: the gain if the published
                    # plan ran at its reported speed (removes the row's error).
                    vs_rep = (spred / rep - 1) * 100
                    if pred is not None:
                        gains.append(gain)
                        gain_rows.append((table, name, which, gain, vs_rep, best["plan"]))
                    if pred is None or spred >= pred * (1 - 1e-9):
                        wins += 1
                    line += (f" | {best['plan']:110} {spred:6.1f} {gain:+5.1f}% {vs_rep:+6.1f}% "
                             f"{wall:8.2f}")
                    # The same search restricted to the published run's software.
                    same, _, _ = run_planner(shard_opt, ir, cpath, gpus, B, None, tmp,
                                             SAME_SOFTWARE.get(cluster, ""))
                    if same and same["plans"] and pred is not None:
                        sbest = same["plans"][0]
                        sgain = (work / sbest["step_s"] / gpus / 1e12 / pred - 1) * 100
                        same_rows.append((table, sgain))
                        line += f" | same software: {sbest['apply_plan']:60} {sgain:+5.1f}%"
                else:
                    line += f" | search failed: {serr}"
            print(line, flush=True)
        if not args.rows or args.rows >= 9:
            korthikanti_check(shard_opt, tables, cluster_paths, tmp)

    def summary(label, v):
        if v:
            print(f"{label}: rows {len(v)}, MAE {100 * sum(abs(e) for e in v) / len(v):.1f}%, "
                  f"max |error| {100 * max(abs(e) for e in v):.1f}%")
    for table in sorted({t for t, _ in errors}):
        summary(f"{table} held-out", errors.get((table, "H"), []))
        summary(f"{table} fit rows", errors.get((table, "F"), []))
        summary(f"{table} all rows", errors.get((table, "H"), []) + errors.get((table, "F"), []))
    summary("both tables held-out", [e for (t, w), v in errors.items() if w == "H" for e in v])
    summary("both tables all rows", [e for v in errors.values() for e in v])
    if not args.no_search:
        print(f"searched plan >= published plan (predicted): {wins} of {len(tables)} rows")
        if gains:
            beats = [g for g in gains if g > 0.05]
            gs = sorted(gains)
            for table in sorted({r[0] for r in gain_rows}):
                g = sorted(r[3] for r in gain_rows if r[0] == table)
                v = sorted(r[4] for r in gain_rows if r[0] == table)
                print(f"{table}: searched vs published predicted {g[0]:+.1f}% to {g[-1]:+.1f}% "
                      f"(median {g[len(g) // 2]:+.1f}%); vs reported {v[0]:+.1f}% to {v[-1]:+.1f}% "
                      f"(median {v[len(v) // 2]:+.1f}%)")
            for table in sorted({t for t, _ in same_rows}):
                g = sorted(x for t, x in same_rows if t == table)
                print(f"{table}: same-software search vs published predicted {g[0]:+.1f}% to "
                      f"{g[-1]:+.1f}% (median {g[len(g) // 2]:+.1f}%)")
            print(f"searched plan beats the published plan by > 0.05% on {len(beats)} of {len(gains)} rows; "
                  f"gain median {gs[len(gs) // 2]:+.1f}%, mean {sum(gs) / len(gs):+.1f}%, max {gs[-1]:+.1f}%")


if __name__ == "__main__":
    sys.exit(main())
