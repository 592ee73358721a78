// dist-apply-plan: mesh, dist.plan and the seed shardings of each strategy.
// RUN: shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=dp=2" | FileCheck %s --check-prefix=DP
// RUN: shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=tp=2" | FileCheck %s --check-prefix=TP
// RUN: shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=dp=2,tp=2,sp=1,zero=2" | FileCheck %s --check-prefix=SPZ2
// RUN: shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=dp=2,zero=3" | FileCheck %s --check-prefix=Z3
// RUN: shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=dp=1,tp=1,zero=1" | FileCheck %s --check-prefix=NONE
// RUN: shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=tp=2,schedule=1f1b,pp=1,recompute=none" | FileCheck %s --check-prefix=TP
// A plan with recomputation applies to a module that tfm-recompute rewrote
// for the same mode (the step here has no block pair, so nothing else changes).
// RUN: shard-opt %S/Inputs/mini-train-step.mlir --tfm-recompute=mode=full --dist-apply-plan="plan=dp=2,recompute=full" | FileCheck %s --check-prefix=RECOMP
// RECOMP: module attributes {dist.plan = {{{.*}}recompute = "full"{{.*}}}, tfm.recompute = "full"}

// dp=2: batch of the inputs on dp; everything else replicated, grads untouched.
// DP: module attributes {dist.plan = {cp = 1 : i64, cp_attention = "ring", dp = 2 : i64, ep = 1 : i64, mb = 1 : i64, pp = 1 : i64, recompute = "none", schedule = "1f1b", sp = 0 : i64, tp = 1 : i64, vpp = 1 : i64, zero = 0 : i64}
// DP: dist.mesh @mesh [dp = 2 : data]
// DP: func.func private @block(%arg0: tensor<4x8x16xf32> {tfm.role = "hidden"}
// DP-LABEL: func.func @train_step
// DP-SAME: tensor<4x8xi32> {dist.sharding = #dist.sharding<@mesh, [{dp}, {}]>, tfm.input = "tokens"}
// DP-SAME: tensor<4x8xi32> {dist.sharding = #dist.sharding<@mesh, [{dp}, {}]>, tfm.input = "labels"}
// DP-SAME: tensor<i64> {dist.sharding = #dist.sharding<@mesh, []>, tfm.input = "step"}
// DP-SAME: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {}]>, tfm.param = "wte"
// DP-SAME: tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {}]>, tfm.state = "l0.wq.exp_avg"
// DP-SAME: -> (tensor<f32> {dist.sharding = #dist.sharding<@mesh, []>, tfm.output = "loss"}
// DP-NOT: dist.sharding_constraint

// tp=2: Megatron column / row, vocab-parallel embedding, column biases.
// TP: dist.mesh @mesh [tp = 2 : tensor]
// TP-LABEL: func.func @train_step
// TP-SAME: tensor<4x8xi32> {dist.sharding = #dist.sharding<@mesh, [{}, {}]>, tfm.input = "tokens"}
// TP-SAME: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>, tfm.param = "wte", tfm.role = "embedding"}
// TP-SAME: tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>, tfm.param = "l0.wq", tfm.role = "attn_q"}
// TP-SAME: tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, [{tp}]>, tfm.bias_of = "attn_q"
// TP-SAME: tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>, tfm.param = "l0.wo", tfm.role = "attn_out"}
// TP-SAME: tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, [{}]>, tfm.param = "ln_f"
// TP-SAME: tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>, tfm.state = "l0.wq.exp_avg"
// TP-SAME: -> (tensor<f32> {dist.sharding = #dist.sharding<@mesh, []>, tfm.output = "loss"}, tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>, tfm.param = "l0.wq"}

// SP + ZeRO-2: optimizer states on dp (major), the residual stream pinned
// around the block call, the gradient pinned to the states' sharding where
// it is produced; a state with no divisible dim is recorded.
// SPZ2: dist.zero_unsharded = ["odd.exp_avg"]
// SPZ2: dist.mesh @mesh [dp = 2 : data, tp = 2 : tensor]
// SPZ2-LABEL: func.func @train_step
// SPZ2-SAME: tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>, tfm.param = "l0.wq"
// SPZ2-SAME: tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, [{dp}, {tp}]>, tfm.state = "l0.wq.exp_avg"
// SPZ2-SAME: tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, [{dp}, {tp}]>, tfm.state = "l0.wq.exp_avg_sq"
// SPZ2-SAME: tensor<3x5xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {}]>, tfm.state = "odd.exp_avg"
// SPZ2-SAME: tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, [{dp}, {tp}]>, tfm.state = "l0.wq.exp_avg"}
// SPZ2: %[[H:.*]] = tfm.embedding
// SPZ2: %[[C:.*]] = dist.sharding_constraint %[[H]] to <@mesh, [{dp}, {tp}, {}]>
// SPZ2: %[[Y:.*]] = call @block(%[[C]],
// SPZ2: %[[YC:.*]] = dist.sharding_constraint %[[Y]] to <@mesh, [{dp}, {tp}, {}]>
// SPZ2: tfm.layer_norm %[[YC]]
// SPZ2: %[[G:.*]] = tfm.matmul_wgrad
// SPZ2: %[[GC:.*]] = dist.sharding_constraint %[[G]] to <@mesh, [{dp}, {tp}]>
// SPZ2: tfm.sum_squares %[[GC]]
// SPZ2: tfm.adamw %{{.*}}, %[[GC]],

// ZeRO-3: parameters too; their states follow them.
// Z3: dist.zero_unsharded = ["odd", "odd.exp_avg"]
// Z3-LABEL: func.func @train_step
// Z3-SAME: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{dp}, {}]>, tfm.param = "wte"
// Z3-SAME: tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, [{dp}, {}]>, tfm.param = "l0.wq"
// Z3-SAME: tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, [{dp}]>, tfm.param = "ln_f"
// Z3-SAME: tensor<16x16xf32> {dist.sharding = #dist.sharding<@mesh, [{dp}, {}]>, tfm.state = "l0.wq.exp_avg"
// Z3: dist.sharding_constraint %{{.*}} to <@mesh, [{dp}, {}]> : tensor<16x16xf32>

// Every degree 1 (zero without dp is allowed): nothing changes.
// NONE-NOT: dist.
