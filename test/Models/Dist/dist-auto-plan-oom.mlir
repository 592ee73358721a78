// A plan that does not fit in memory is rejected, never scored: GPT-3 175B
// on one DGX H100 node with plain data parallelism needs ~2.8 TB per GPU.
// RUN: %python -m autoshard.models %configs/models/gpt3-175b.json --batch 8 --seq 2048 --dtype bf16 -q -o %t.model.mlir
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/dgx-h100.json nodes=1 evaluate=dp=8,tp=1" -o %t.out.mlir | FileCheck %s
// RUN: FileCheck %s --check-prefix=ATTR < %t.out.mlir
// The same model fits with tp=8 and pipeline stages on 8 nodes.
// RUN: shard-opt %t.model.mlir --dist-auto-plan="cluster=%autoshard_src/configs/clusters/dgx-h100.json nodes=8 evaluate=pp=8,dp=1,tp=8,sp=1,recompute=full,mb=8" -o /dev/null | FileCheck %s --check-prefix=FITS

// Model FLOPs from TfmCostOpInterface on the global forward: the closed form
// 72·s·l·h²·(1 + s/(12h) + V/(12lh)) = 2174.8 TFLOP per sequence.
// CHECK: MFU convention: {{.*}}; 2174.8{{[0-9]}} TFLOP per sequence
// CHECK: no plan fits
// CHECK: rejected families
// CHECK-NEXT: tp=1 pp=1 cp=1 OOM: smallest peak {{[0-9.]+}} GiB > 80.0 GiB
// CHECK: search: 1 candidates (0 fit)

// ATTR-NOT: dist.auto_plan

// FITS: evaluated plan: pp=8,dp=1,cp=1,tp=8,sp=1,zero=0,ep=1,mbs=1,mb=8,schedule=1f1b,vpp=1,recompute=full
// FITS: 1 candidates (1 fit), 1 simulated
