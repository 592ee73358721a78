// dist-propagate: every value gets a sharding from the seeds through the
// factor rules of the tfm ops, forward and backward, keeping partial state.
//
// RUN: shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=tp=2" --dist-propagate | FileCheck %s --check-prefix=MINI-TP
// RUN: shard-opt %S/Inputs/mini-train-step.mlir --dist-apply-plan="plan=dp=2" --dist-propagate | FileCheck %s --check-prefix=MINI-DP
// RUN: shard-opt %s --dist-propagate | FileCheck %s --check-prefix=USER
// The builder's models: test/Models/Dist/dist-propagate.mlir.

// Hand-written train step, tensor parallel: column-parallel q, heads split,
// row-parallel output partial over tp (it stays partial through the
// residual add, which is linear in both operands), vocab-parallel embedding
// (partial) and LM head (logits split over the vocabulary, loss complete).
// MINI-TP-LABEL: func.func private @block
// MINI-TP: tfm.matmul %arg0, %arg1 {dist.sharding = #dist.sharding<@mesh, [{}, {}, {tp}]>}
// MINI-TP: tfm.reshape %{{.*}} {dist.sharding = #dist.sharding<@mesh, [{}, {}, {tp}, {}]>}
// MINI-TP: tfm.attention {{.*}}dist.sharding = [#dist.sharding<@mesh, [{}, {}, {tp}, {}]>, #dist.sharding<@mesh, [{}, {tp}, {}]>]
// MINI-TP: tfm.matmul %{{.*}}, %arg2 {dist.sharding = #dist.sharding<@mesh, [{}, {}, {}], partial = {tp: sum}>}
// MINI-TP-LABEL: func.func @train_step
// MINI-TP: tfm.embedding %arg0, %arg4 {dist.sharding = #dist.sharding<@mesh, [{}, {}, {}], partial = {tp: sum}>}
// MINI-TP: tfm.layer_norm {{.*}}{dist.sharding = #dist.sharding<@mesh, [{}, {}, {}]>
// MINI-TP: tfm.matmul %{{.*}}, %arg4 {dist.sharding = #dist.sharding<@mesh, [{}, {}, {tp}]>, transpose_rhs}
// MINI-TP: tfm.cross_entropy {{.*}}{dist.sharding = #dist.sharding<@mesh, []>}
// MINI-TP: tfm.sum_squares {{.*}}{dist.sharding = #dist.sharding<@mesh, []>}
// MINI-TP: tfm.adamw {{.*}}dist.sharding = [#dist.sharding<@mesh, [{}, {tp}]>, #dist.sharding<@mesh, [{}, {tp}]>, #dist.sharding<@mesh, [{}, {tp}]>]

// Data parallel: activations batch-sharded, the weight gradient and the loss
// partial over dp (the loss rule is a reduction over the token dims).
// MINI-DP-LABEL: func.func private @block
// MINI-DP-SAME: %arg0: tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{dp}, {}, {}]>, tfm.role = "hidden"}
// MINI-DP-SAME: -> (tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{dp}, {}, {}]>, tfm.role = "hidden"})
// MINI-DP: tfm.attention {{.*}}dist.sharding = [#dist.sharding<@mesh, [{dp}, {}, {}, {}]>, #dist.sharding<@mesh, [{dp}, {}, {}]>]
// MINI-DP-LABEL: func.func @train_step
// MINI-DP: call @block({{.*}}) {dist.sharding = #dist.sharding<@mesh, [{dp}, {}, {}]>}
// MINI-DP: tfm.cross_entropy {{.*}}{dist.sharding = #dist.sharding<@mesh, [], partial = {dp: sum}>}
// MINI-DP: tfm.matmul_wgrad {{.*}}{dist.sharding = #dist.sharding<@mesh, [{}, {}], partial = {dp: sum}>}
// MINI-DP: tfm.sum_squares {{.*}}{dist.sharding = #dist.sharding<@mesh, []>}

// A user annotation wins: the constraint's sharding, and an op's own
// `dist.sharding`, are kept; their users follow them.
// USER-LABEL: func.func @user
// USER-SAME: -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {}]>})
// USER: %[[Y:.*]] = tfm.matmul %arg0, %arg1 {dist.sharding = #dist.sharding<@mesh, [{dp}, {tp}]>}
// USER: %[[C:.*]] = dist.sharding_constraint %[[Y]] to <@mesh, [{dp, tp}, {}]> {dist.sharding = #dist.sharding<@mesh, [{dp, tp}, {}]>}
// USER: tfm.gelu %[[C]] {dist.sharding = #dist.sharding<@mesh, [{dp, tp}, {}]>}
// USER: %[[Z:.*]] = tfm.matmul %{{.*}}, %arg2 {dist.sharding = #dist.sharding<@mesh, [{}, {}]>}
// USER: tfm.scale %[[Z]] {dist.sharding = #dist.sharding<@mesh, [{}, {}]>
module {
  dist.mesh @mesh [dp = 2 : data, tp = 2 : tensor]
  func.func @user(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{dp}, {}]>},
                  %w: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>},
                  %w2: tensor<32x16xf32> {dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>})
      -> tensor<8x16xf32> {
    %y = tfm.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    %c = dist.sharding_constraint %y to <@mesh, [{dp, tp}, {}]> : tensor<8x32xf32>
    %g = tfm.gelu %c : (tensor<8x32xf32>) -> tensor<8x32xf32>
    %z = tfm.matmul %g, %w2 {dist.sharding = #dist.sharding<@mesh, [{}, {}]>} : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
    %s = tfm.scale %z {factor = 2.0 : f64} : (tensor<8x16xf32>) -> tensor<8x16xf32>
    return %s : tensor<8x16xf32>
  }
}
