// dist-pipeline-split with ZeRO-1 and one microbatch (issue 21, item 5):
// the optimizer reads each parameter's dp slice (`dist.shard_slice` of the
// argument), which depends on no microbatch rows, so it goes with its user,
// the optimizer tail, on the rank that holds the parameter. Formerly, with
// one microbatch (no tfm.microbatch), every op but the tail was put in
// microbatch 0's forward, the slices of stage 1's parameters on stage 0:
// stage 0 then held, updated and all-gathered every parameter (their
// gradients sent from stage 1), twice its share of parameters and
// optimizer states.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 2 --seq 8 --vocab-multiple 8 -q -o %t.mlir
// RUN: shard-opt %t.mlir --tfm-autodiff -o %t.ts.mlir
// RUN: shard-opt %t.ts.mlir --plan pp=2,dp=2,zero=1 --dist-propagate --dist-partition --dist-pipeline-split --dist-verify-comm | FileCheck %s

// CHECK-LABEL: func.func @train_step__pp0(
// CHECK-SAME: tfm.param = "layers.1.mlp.w_proj"
// CHECK-NOT: tfm.param = "layers.2.
// CHECK-NOT: tfm.param = "ln_f.weight"
// CHECK: tfm.adamw
// CHECK-LABEL: func.func @train_step__pp1(
// CHECK-NOT: tfm.param = "layers.1.
// CHECK-SAME: tfm.param = "layers.2.ln_1.weight"
// CHECK: tfm.adamw
// CHECK-LABEL: func.func @eval__pp0(
