// RUN: shard-opt %s --tfm-autodiff --tfm-recompute=mode=full | FileCheck %s --check-prefix=FULL
// RUN: shard-opt %s --tfm-autodiff --tfm-recompute=mode=selective | FileCheck %s --check-prefix=SEL
// RUN: shard-opt %s --tfm-autodiff --tfm-recompute=mode=none | FileCheck %s --check-prefix=NONE
// RUN: shard-opt %s --tfm-autodiff=microbatches=2 --tfm-recompute=mode=full | FileCheck %s --check-prefix=MB
// The builder's models: test/Models/Tfm/tfm-recompute.mlir.

// Two layers of a LayerNorm + GELU MLP block with a residual connection.

module {
  func.func private @block(
      %x: tensor<2x4x8xf32> {tfm.role = "hidden"},
      %ln: tensor<8xf32> {tfm.name = "ln.weight", tfm.role = "norm"},
      %w_fc: tensor<8x16xf32> {tfm.name = "mlp.w_fc", tfm.role = "mlp_up"},
      %w_proj: tensor<16x8xf32> {tfm.name = "mlp.w_proj", tfm.role = "mlp_down"})
      -> tensor<2x4x8xf32> {
    %h = tfm.layer_norm %x, %ln {epsilon = 1.000000e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    %fc = tfm.matmul %h, %w_fc : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
    %act = tfm.gelu %fc : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
    %proj = tfm.matmul %act, %w_proj : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %out = tfm.add %x, %proj : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    return %out : tensor<2x4x8xf32>
  }

  func.func @forward(
      %ids: tensor<2x4xi32> {tfm.input = "tokens"},
      %labels: tensor<2x4xi32> {tfm.input = "labels"},
      %wte: tensor<16x8xf32> {tfm.param = "wte", tfm.role = "embedding", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %ln0: tensor<8xf32> {tfm.param = "layers.0.ln.weight", tfm.role = "norm", tfm.init = "ones"},
      %fc0: tensor<8x16xf32> {tfm.param = "layers.0.mlp.w_fc", tfm.role = "mlp_up", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %proj0: tensor<16x8xf32> {tfm.param = "layers.0.mlp.w_proj", tfm.role = "mlp_down", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %ln1: tensor<8xf32> {tfm.param = "layers.1.ln.weight", tfm.role = "norm", tfm.init = "ones"},
      %fc1: tensor<8x16xf32> {tfm.param = "layers.1.mlp.w_fc", tfm.role = "mlp_up", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64},
      %proj1: tensor<16x8xf32> {tfm.param = "layers.1.mlp.w_proj", tfm.role = "mlp_down", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64})
      -> tensor<f32> {
    %emb = tfm.embedding %ids, %wte : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %h0 = func.call @block(%emb, %ln0, %fc0, %proj0) {tfm.layer = 0 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %h1 = func.call @block(%h0, %ln1, %fc1, %proj1) {tfm.layer = 1 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %logits = tfm.matmul %h1, %wte {transpose_rhs} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = tfm.cross_entropy %logits, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// full: the forward keeps only each layer's input; right before each
// backward, @block_recompute_full (the forward returning only the residuals,
// so without the down-projection and the residual add that only the output
// needs) re-runs with the forward call's operands, marked tfm.recompute with
// the layer attribute of the forward call, and feeds the backward.
// FULL: module attributes {tfm.recompute = "full"}
// FULL-NOT: func.func private @block_fwd(
// FULL-LABEL: func.func private @block_recompute_full(
// FULL-SAME: %[[X:[a-z0-9]+]]: tensor<2x4x8xf32> {tfm.role = "hidden"}, %[[LN:[a-z0-9]+]]: tensor<8xf32> {tfm.name = "ln.weight", tfm.role = "norm"}, %[[WFC:[a-z0-9]+]]: tensor<8x16xf32> {tfm.name = "mlp.w_fc", tfm.role = "mlp_up"}, %{{.*}}: tensor<16x8xf32> {tfm.name = "mlp.w_proj", tfm.role = "mlp_down"})
// FULL-SAME: -> (tensor<2x4x8xf32> {tfm.residual = 0 : i64}, tensor<2x4x16xf32> {tfm.residual = 1 : i64}, tensor<2x4x16xf32> {tfm.residual = 2 : i64})
// FULL-SAME: attributes {tfm.func_kind = #tfm.func_kind<recompute>}
// FULL-NEXT: %[[H:.*]] = tfm.layer_norm %[[X]], %[[LN]]
// FULL-NEXT: %[[FC:.*]] = tfm.matmul %[[H]], %[[WFC]]
// FULL-NEXT: %[[ACT:.*]] = tfm.gelu %[[FC]]
// FULL-NEXT: return %[[H]], %[[FC]], %[[ACT]]
// FULL-LABEL: func.func private @block_full_fwd(
// FULL-SAME: -> tensor<2x4x8xf32>
// FULL-SAME: attributes {tfm.func_kind = #tfm.func_kind<forward>}
// FULL: tfm.layer_norm
// FULL-NEXT: tfm.matmul
// FULL-NEXT: tfm.gelu
// FULL-NEXT: tfm.matmul
// FULL-NEXT: %[[OUT:.*]] = tfm.add
// FULL-NEXT: return %[[OUT]] : tensor<2x4x8xf32>
// FULL-LABEL: func.func @train_step(
// FULL: %[[E:.*]] = tfm.embedding
// FULL-NEXT: %[[H0:.*]] = call @block_full_fwd(%[[E]], {{.*}}) {tfm.layer = 0 : i64} : {{.*}} -> tensor<2x4x8xf32>
// FULL-NEXT: %[[H1:.*]] = call @block_full_fwd(%[[H0]], {{.*}}) {tfm.layer = 1 : i64} : {{.*}} -> tensor<2x4x8xf32>
// FULL: %[[R1:.*]]:3 = call @block_recompute_full(%[[H0]], %arg8, %arg9, %arg10) {tfm.layer = 1 : i64, tfm.recompute}
// FULL-NEXT: %[[G1:.*]]:4 = call @block_bwd(%{{.*}}, %[[H0]], %arg8, %arg9, %arg10, %[[R1]]#0, %[[R1]]#1, %[[R1]]#2)
// FULL-NEXT: %[[R0:.*]]:3 = call @block_recompute_full(%[[E]], %arg5, %arg6, %arg7) {tfm.layer = 0 : i64, tfm.recompute}
// FULL-NEXT: call @block_bwd(%[[G1]]#0, %[[E]], %arg5, %arg6, %arg7, %[[R0]]#0, %[[R0]]#1, %[[R0]]#2)
// FULL-NOT: call @block
// FULL-LABEL: func.func @eval(
// FULL: call @block(

// selective: the forward keeps the matmul output (fc) only; the backward
// (@block_selective_bwd: @block_bwd's inputs before the residuals, then the
// kept values; marked tfm.recompute) starts by recomputing the LayerNorm
// output from the layer input and the GELU output from fc, then runs
// @block_bwd's body.
// SEL: module attributes {tfm.recompute = "selective"}
// SEL-NOT: func.func private @block_fwd(
// SEL-NOT: func.func private @block_bwd(
// SEL-LABEL: func.func private @block_selective_fwd(
// SEL-SAME: -> (tensor<2x4x8xf32>, tensor<2x4x16xf32>)
// SEL: %[[FC:.*]] = tfm.matmul
// SEL: %[[OUT:.*]] = tfm.add
// SEL-NEXT: return %[[OUT]], %[[FC]] : tensor<2x4x8xf32>, tensor<2x4x16xf32>
// SEL-LABEL: func.func private @block_selective_bwd(
// SEL-SAME: %[[DY:[a-z0-9]+]]: tensor<2x4x8xf32>, %[[X:[a-z0-9]+]]: tensor<2x4x8xf32> {tfm.role = "hidden"}, %[[LN:[a-z0-9]+]]: tensor<8xf32> {{.*}}, %[[WFC:[a-z0-9]+]]: tensor<8x16xf32> {{.*}}, %[[WPROJ:[a-z0-9]+]]: tensor<16x8xf32> {{.*}}, %[[KFC:[a-z0-9]+]]: tensor<2x4x16xf32>)
// SEL-SAME: attributes {tfm.func_kind = #tfm.func_kind<backward>, tfm.recompute}
// SEL-NEXT: %[[H:.*]] = tfm.layer_norm %[[X]], %[[LN]]
// SEL-NEXT: %[[ACT:.*]] = tfm.gelu %[[KFC]]
// SEL-NEXT: %[[DACT:.*]] = tfm.matmul %[[DY]], %[[WPROJ]] {transpose_rhs}
// SEL-NEXT: tfm.matmul_wgrad %[[ACT]], %[[DY]]
// SEL-NEXT: tfm.gelu_grad %[[DACT]], %[[KFC]]
// SEL-LABEL: func.func @train_step(
// SEL: %[[E:.*]] = tfm.embedding
// SEL-NEXT: %[[F0:.*]]:2 = call @block_selective_fwd(%[[E]], {{.*}}) {tfm.layer = 0 : i64}
// SEL-NEXT: %[[F1:.*]]:2 = call @block_selective_fwd(%[[F0]]#0, {{.*}}) {tfm.layer = 1 : i64}
// SEL: %[[G1:.*]]:4 = call @block_selective_bwd(%{{.*}}, %[[F0]]#0, %arg8, %arg9, %arg10, %[[F1]]#1)
// SEL-NEXT: call @block_selective_bwd(%[[G1]]#0, %[[E]], %arg5, %arg6, %arg7, %[[F0]]#1)
// SEL-NOT: tfm.recompute}

// none: the module is only marked.
// NONE: module attributes {tfm.recompute = "none"}
// NONE-LABEL: func.func @train_step(
// NONE: call @block_fwd(
// NONE: call @block_fwd(
// NONE-NOT: tfm.recompute

// Microbatches: one re-run per layer and microbatch, each right before its
// backward (in microbatch 1 the gradient sums follow each backward).
// MB-LABEL: func.func @train_step(
// MB-COUNT-2: call @block_full_fwd(
// MB: call @block_recompute_full({{.*}}tfm.recompute
// MB-NEXT: call @block_bwd(
// MB-NEXT: call @block_recompute_full({{.*}}tfm.recompute
// MB-NEXT: call @block_bwd(
// MB-COUNT-2: call @block_full_fwd(
// MB: call @block_recompute_full({{.*}}tfm.recompute
// MB-NEXT: call @block_bwd(
// MB: call @block_recompute_full({{.*}}tfm.recompute
// MB-NEXT: call @block_bwd(
// MB-NOT: tfm.recompute}
