// dist-auto-plan's recomputation costs come from the one-block model
// compiled with tfm-recompute (after tfm-autodiff), not from the analytic
// model: nanoGPT (CPU recipe, 4 layers, 128 hidden, seq 64) at tp=2 with SP,
// microbatch size 2 (f32).
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 8 --seq 64 --vocab-multiple 8 -q -o %t.model.mlir
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 evaluate=dp=1,tp=2,sp=1,mbs=2" -o /dev/null | FileCheck %s --check-prefix=NONE
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 evaluate=dp=1,tp=2,sp=1,mbs=2,recompute=selective" -o /dev/null | FileCheck %s --check-prefix=SEL
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 evaluate=dp=1,tp=2,sp=1,mbs=2,recompute=full" -o /dev/null | FileCheck %s --check-prefix=FULL
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 evaluate=dp=1,tp=2,sp=1,mbs=2,recompute=full format=json" -o /dev/null | FileCheck %s --check-prefix=JSON
// compilable=true searches recomputation now; restricted to full it
// compiles the none and full programs of 5 (tp, sp) configurations at 2
// microbatch sizes.
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=4 compilable=true recompute=full" -o /dev/null | FileCheck %s --check-prefix=SEARCH
// With 258 MiB per rank (256 of them reserved) no plan without
// recomputation fits 8 ranks at global batch 16 (auto_plan_check.sh's
// model); the planner picks one with recomputation (measured: full
// recomputation under interleaved pp=2, tp=4+SP, which trains like the
// 1-rank run: scripts/auto_plan_check.sh --cluster <this file>).
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 16 --seq 64 --vocab-multiple 64 -q -o %t.model16.mlir
// RUN: shard-opt %t.model16.mlir --dist-auto-plan="cluster=%S/Inputs/auto-plan-recompute-cluster.json gpus=8 batch=16 compilable=true" -o /dev/null | FileCheck %s --check-prefix=TIGHT
// RUN: shard-opt %t.model16.mlir --dist-auto-plan="cluster=%S/Inputs/auto-plan-recompute-cluster.json gpus=8 batch=16 compilable=true recompute=none" -o /dev/null | FileCheck %s --check-prefix=TIGHT-NONE

// Without recomputation a layer keeps its residuals and its input
// (0.532 MiB); 0.625 MiB of SP all-gathers / reduce-scatters. The
// one-block step's memory plan (frame column) is read after the per-rank
// passes on cpu-2core.json (memory.grad_buffer = "frame"): its peak, 0.595
// MiB, holds the block's SP re-gather bucketed with the head's.
// NONE: recomputation, one block per microbatch (tp=2+sp, mbs=2
// NONE: none compiled 0.027 0.054 0.625 0.532 0.595
// NONE: search: 1 candidates (1 fit), 0 simulated, 2 block compilations

// Selective: the recomputed norms and GELU are memory-bound (no GEMM
// FLOPs, no communication) and the layer keeps 0.313 MiB (the analytic
// model would drop the attention outputs instead).
// SEL: recomputation, one block per microbatch (tp=2+sp, mbs=2
// SEL: selective compiled 0.027 0.054 0.625 0.313 0.532
// SEL: 4 block compilations

// Full: @B_recompute_full adds 0.018 GFLOP (the forward's 0.027 less the
// MLP down-projection) and 3 of the forward's 4 SP collectives (0.1875
// MiB); the analytic model would add the whole forward (0.081 GFLOP, 0.9375
// MiB). A layer keeps its input only: 2x32x128 f32 = 0.031 MiB.
// FULL: evaluated plan: pp=1,dp=1,cp=1,tp=2,sp=1,zero=0,ep=1,mbs=2,mb=4,schedule=1f1b,vpp=1,recompute=full
// FULL-NEXT: as --plan: dp=1,tp=2,sp=1,mb=4,recompute=full{{$}}
// FULL: full compiled 0.027 0.072 0.812 0.031 0.595
// FULL: 4 block compilations

// JSON: "recompute_compiled": true
// JSON: "recompute": [
// JSON: "compiled": true
// JSON: "kept_bytes": 32768
// JSON: "mode": "full"

// SEARCH: chosen plan: {{.*}},recompute=full
// SEARCH: mode source
// SEARCH-NEXT: full compiled
// 32 of them under the cp the search scores (gradients in the static frame).
// SEARCH: 52 block compilations

// TIGHT: chosen plan: {{.*}},recompute={{selective|full}}{{$}}
// TIGHT-NONE: no plan fits
