// dist-auto-plan searches expert parallelism on an MoE model (4 layers, 8
// experts of FFN 512, fp32) on a memory-tight cluster (263.5 MiB per rank):
// expert weights, gradients and optimizer states divided by ep make it fit
// with ep >= 4 only (smallest peaks: ep=1 265.5, ep=2 264.0, ep=4 263.1,
// ep=8 262.8 MiB), and only with cp > 1 (cp = 1: ep=8 265.8 MiB). ep > 1
// is scored analytically; compilable=true searches ep folded as
// dist-apply-plan builds it: over dp (cp = 1), or over every cp rank and
// ep/cp dp ranks (cp > 1: ep a multiple of cp), so it finds ep=8 over
// dp=2 x cp=4 or dp=2 x cp=2 x tp=2 (within 2 %: the tp=2 plan
// accumulates half the dense gradients over its 8 microbatches) and never
// proposes an ep smaller than cp.
// RUN: %python -m autoshard.models %S/Inputs/auto-plan-moe-model.json --batch 16 --seq 64 --vocab-multiple 64 -q -o %t.model.mlir
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%S/Inputs/auto-plan-moe-tight-cluster.json gpus=8" -o /dev/null | FileCheck %s
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%S/Inputs/auto-plan-moe-tight-cluster.json gpus=8 ep=1" -o /dev/null | FileCheck %s --check-prefix=EP1
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%S/Inputs/auto-plan-moe-tight-cluster.json gpus=8 compilable=true" -o /dev/null | FileCheck %s --check-prefix=COMPILABLE
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%S/Inputs/auto-plan-moe-tight-cluster.json gpus=8 compilable=true" -o /dev/null | FileCheck %s --check-prefix=NO-EP-CP
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%S/Inputs/auto-plan-moe-tight-cluster.json gpus=8 ep=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// Under tp > 1 the block also compiles with ep folded over the tp ranks and
// with the experts split over them (etp = tp): each divides the expert
// GEMMs by tp, which the replicated profile repeats on every tp rank.
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 evaluate=tp=2,ep=2,mb=16" -o /dev/null | FileCheck %s --check-prefix=EPTP
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=2 evaluate=tp=2,etp=2,mb=16" -o /dev/null | FileCheck %s --check-prefix=ETP
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=4 compilable=true format=json" -o /dev/null | FileCheck %s --check-prefix=TPSEARCH
// RUN: not shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/cpu-2core.json gpus=4 evaluate=tp=4,etp=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-ETP

// CHECK: dist-auto-plan: model {{.*}}4 layers
// CHECK: chosen plan: {{.*}},ep={{[48]}},
// CHECK: as --plan: {{.*}}ep={{[48]}}
// CHECK: rejected families
// CHECK-DAG: tp=1 pp=1 cp=1 {{ *}}OOM
// CHECK-DAG: ep=2 {{ *}}OOM
// CHECK: analytic: {{.*}}ep (expert all-to-all

// EP1: no plan fits
// EP1-NOT: ep=2
// EP1-NOT: ep=4
// EP1-NOT: ep=8

// COMPILABLE: chosen plan: pp=1,dp=2,cp={{[24]}},tp={{[12]}},sp={{[01]}},zero={{[0-9]}},ep=8,
// COMPILABLE: as --plan: dp=2,cp={{[24]}},{{(tp=2,sp=1,)?}}zero={{[0-9]}},ep=8,
// COMPILABLE-DAG: tp=1 pp=1 cp=1 ep=4 {{ *}}OOM
// COMPILABLE-DAG: tp=1 pp=1 cp=1 ep=8 {{ *}}OOM
// COMPILABLE-DAG: tp=1 pp=1 cp=2 ep=2 {{ *}}OOM

// NO-EP-CP: rejected families
// NO-EP-CP-NOT: cp=4 {{ *}}ep=2
// NO-EP-CP-NOT: cp=8 {{ *}}ep={{[24] }}

// BAD: option 'ep': 0 is out of range

// EPTP: as --plan: dp=1,tp=2,ep=2,mb=16
// EPTP: 1    pp=1,dp=1,cp=1,tp=2,sp=0,zero=0,ep=2,
// ETP: as --plan: dp=1,tp=2,etp=2,mb=16
// ETP: 1    pp=1,dp=1,cp=1,tp=2,sp=0,zero=0,ep=1,{{.*}},etp=2
// Every family is in the JSON report (the text lists the best ones).
// TPSEARCH: "rejected"
// TPSEARCH-DAG: "tp=2+sp pp=1 cp=1 etp=2"
// TPSEARCH-DAG: "tp=2+sp pp=1 cp=1 ep=2 etp=2"
// TPSEARCH-DAG: "tp=2+sp pp=1 cp=1 ep=4"
// BAD-ETP: dist-auto-plan: evaluate: plan: etp=2 must be 1 (whole experts on every rank) or tp=4
