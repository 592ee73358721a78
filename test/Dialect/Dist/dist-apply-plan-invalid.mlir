// dist-apply-plan errors: each names the key (or the tensor) and the value found.
// Errors on the builder's models: test/Models/Dist/dist-apply-plan-invalid.mlir.
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=dp=2,foo=3" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: dist-apply-plan: plan: unknown key 'foo' (value '3'; known keys: pp, dp, cp, tp, sp, zero, ep, etp, mb, schedule, vpp, recompute, cp_attention, cp_layout)
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=dp=x" 2>&1 | FileCheck %s --check-prefix=NOTINT
// NOTINT: error: dist-apply-plan: plan: dp expects an integer, found 'x'
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=dp=0" 2>&1 | FileCheck %s --check-prefix=DEGREE
// DEGREE: error: dist-apply-plan: plan: dp must be >= 1, found 0
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=tp=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: error: dist-apply-plan: plan: tp must be >= 1, found -1
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=sp=1" 2>&1 | FileCheck %s --check-prefix=SPNOTP
// SPNOTP: error: dist-apply-plan: plan: sp=1 needs tp > 1 (sequence parallelism runs on the tp axis), found tp=1
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=sp=2,tp=2" 2>&1 | FileCheck %s --check-prefix=SPVALUE
// SPVALUE: error: dist-apply-plan: plan: sp must be 0 or 1, found 2
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=zero=4" 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: dist-apply-plan: plan: zero must be in 0..3, found 4
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=cp=3" 2>&1 | FileCheck %s --check-prefix=CP
// CP: error: plan cp=3: the sequence dim of input 'tokens' (size 8) is not divisible by cp
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=cp=0" 2>&1 | FileCheck %s --check-prefix=CPZERO
// CPZERO: error: dist-apply-plan: plan: cp must be >= 1, found 0
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=cp=8,tp=2,sp=1" 2>&1 | FileCheck %s --check-prefix=CPSP
// CPSP: error: plan sp=1: the sequence dim (size 8) of the hidden state is not divisible by cp*tp=16
// Expert parallelism folds over the tp x cp x dp ranks (tp and cp whole,
// minor first), never over pp, and needs an MoE model whose expert count ep
// divides; etp is 1 or tp.
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=dp=2,cp=4,ep=2" 2>&1 | FileCheck %s --check-prefix=EP-CP
// EP-CP: error: dist-apply-plan: plan: ep=2 must be 4 times a divisor of dp=2: the ep group takes every cp rank (cp=4), then ep/4 of the dp ranks
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=ep=4" 2>&1 | FileCheck %s --check-prefix=EP
// EP: error: dist-apply-plan: plan: ep=4 must divide dp=1 (expert parallelism folds over the data-parallel ranks, never over pp)
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=dp=4,ep=3" 2>&1 | FileCheck %s --check-prefix=EP-DIV
// EP-DIV: error: dist-apply-plan: plan: ep=3 must divide dp=4 (expert parallelism folds over the data-parallel ranks, never over pp)
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=pp=2,ep=2" 2>&1 | FileCheck %s --check-prefix=EP-PP
// EP-PP: error: dist-apply-plan: plan: ep=2 must divide dp=1 (expert parallelism folds over the data-parallel ranks, never over pp)
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=tp=4,ep=2" 2>&1 | FileCheck %s --check-prefix=EP-TP
// EP-TP: error: dist-apply-plan: plan: ep=2 must be 4 times a divisor of dp=1: the ep group takes every tp rank (tp=4), then ep/4 of the dp ranks; or etp=4: each expert split over the tp ranks, which then leave the ep group
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=dp=2,cp=2,tp=2,ep=2" 2>&1 | FileCheck %s --check-prefix=EP-TPCP
// EP-TPCP: error: dist-apply-plan: plan: ep=2 must be 4 times a divisor of dp=2: the ep group takes every tp and cp rank (tp*cp=4), then ep/4 of the dp ranks; or etp=2
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=tp=4,etp=2" 2>&1 | FileCheck %s --check-prefix=ETP
// ETP: error: dist-apply-plan: plan: etp=2 must be 1 (whole experts on every rank) or tp=4 (each expert split over the tp ranks)
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=dp=2,ep=2" 2>&1 | FileCheck %s --check-prefix=EP-DENSE
// EP-DENSE: error: plan ep=2: the model has no experts (no tfm.moe_dispatch); expert parallelism needs an MoE model (use ep=1)
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=mb=2" 2>&1 | FileCheck %s --check-prefix=MB
// MB: error: dist-apply-plan: plan mb=2, but the train step was differentiated for 1 microbatch(es) (build the model at the microbatch's batch and run tfm-autodiff with microbatches=2)
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=pp=2,vpp=2" 2>&1 | FileCheck %s --check-prefix=VPP
// VPP: error: dist-apply-plan: plan: vpp=2 needs schedule=interleaved, looped-bfs or zb-v (schedule=1f1b runs one stage per rank)
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=pp=2,schedule=interleaved" 2>&1 | FileCheck %s --check-prefix=INTERLEAVED
// INTERLEAVED: error: dist-apply-plan: plan: schedule=interleaved needs vpp >= 2 model chunks per rank, found vpp=1
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=pp=2,schedule=zb-v,vpp=3" 2>&1 | FileCheck %s --check-prefix=ZBV
// ZBV: error: dist-apply-plan: plan: schedule=zb-v runs two model chunks per rank (its V shape): set vpp=2, found vpp=3
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=schedule=interleaved,vpp=2" 2>&1 | FileCheck %s --check-prefix=VPPNOPP
// VPPNOPP: error: dist-apply-plan: plan: vpp=2 needs pp > 1 (virtual stages are per pipeline rank)
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=schedule=zb-h2" 2>&1 | FileCheck %s --check-prefix=SCHED
// SCHED: error: dist-apply-plan: plan: unknown schedule 'zb-h2' (known: gpipe, 1f1b, interleaved, looped-bfs, zb-h1, zb-v)
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=recompute=full" 2>&1 | FileCheck %s --check-prefix=RECOMP
// RECOMP: error: dist-apply-plan: plan recompute=full, but the module's tfm.recompute is none (absent); run tfm-recompute with mode=full after tfm-autodiff
// RUN: shard-opt %S/Inputs/mini-train-step.mlir --tfm-recompute=mode=selective | not shard-opt --dist-apply-plan="plan=dp=2" 2>&1 | FileCheck %s --check-prefix=RECOMP-SEL
// RECOMP-SEL: error: dist-apply-plan: plan recompute=none, but the module's tfm.recompute is selective; run tfm-recompute with mode=none after tfm-autodiff
// RUN: shard-opt %S/Inputs/mini-train-step.mlir --tfm-recompute=mode=full | not shard-opt --dist-apply-plan="plan=dp=2,recompute=selective" 2>&1 | FileCheck %s --check-prefix=RECOMP-FULL
// RECOMP-FULL: error: dist-apply-plan: plan recompute=selective, but the module's tfm.recompute is full; run tfm-recompute with mode=selective after tfm-autodiff
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=recompute=partial" 2>&1 | FileCheck %s --check-prefix=RECOMP-VALUE
// RECOMP-VALUE: error: dist-apply-plan: plan: recompute must be none, selective or full, found 'partial'
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=dp=2,dp=4" 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: dist-apply-plan: plan: key 'dp' given twice
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=dp2" 2>&1 | FileCheck %s --check-prefix=SYNTAX
// SYNTAX: error: dist-apply-plan: plan: expected 'key=value', found 'dp2' (in "dp2")
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=tp=4" 2>&1 | FileCheck %s --check-prefix=HEADS
// HEADS: error: plan tp=4: the model's num_heads = 2 is not divisible by tp
// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=dp=3" 2>&1 | FileCheck %s --check-prefix=BATCH
// BATCH: error: plan dp=3: the batch dim of input 'tokens' (size 4) is not divisible by dp

// RUN: not shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=pp=2,schedule=foo" 2>&1 | FileCheck %s --check-prefix=SCHEDFOO
// SCHEDFOO: error: dist-apply-plan: plan: unknown schedule 'foo' (known: gpipe, 1f1b, interleaved, looped-bfs, zb-h1, zb-v)
