// rt-lower on a post-autodiff train step (Inputs/tiny-train-step.mlir) and on
// the edge cases below (reshaped, passed-through and unchanged results).
// RUN: shard-opt %S/Inputs/tiny-train-step.mlir --rt-lower | FileCheck %s
// RUN: shard-opt %s --rt-lower | FileCheck %s --check-prefix=EDGE
// The result verifies and round-trips.
// RUN: shard-opt %S/Inputs/tiny-train-step.mlir --rt-lower | shard-opt | FileCheck %s

// State: params first (matrices decayed), then moments, in argument order.
// CHECK: rt.state_def @wte param init normal std 2.000000e-02 decay : !rt.buffer<16x8xf32>
// CHECK-NEXT: rt.state_def @layers.0.w param init normal std 2.000000e-02 decay : !rt.buffer<8x8xf32>
// CHECK-NEXT: rt.state_def @ln_f.weight param init ones : !rt.buffer<8xf32>
// CHECK-NEXT: rt.state_def @wte.exp_avg opt_m of @wte init zeros : !rt.buffer<16x8xf32>
// CHECK: rt.state_def @ln_f.weight.exp_avg_sq opt_v of @ln_f.weight init zeros : !rt.buffer<8xf32>

// The original block (eval) : its result is the caller's buffer %arg3.
// CHECK-LABEL: rt.func @blk(%arg0: !rt.buffer<2x4x8xf32>, %arg1: !rt.buffer<i64>, %arg2: !rt.buffer<8x8xf32>, %arg3: !rt.buffer<2x4x8xf32>) {
// CHECK-NEXT: %[[H:.*]] = rt.alloc activation : !rt.buffer<2x4x8xf32>
// CHECK-NEXT: rt.kernel "matmul"(%arg0, %arg2) -> (%[[H]])
// CHECK-NEXT: %[[A:.*]] = rt.alloc activation : !rt.buffer<2x4x8xf32>
// CHECK-NEXT: rt.kernel "gelu"(%[[H]]) -> (%[[A]]) attrs {tanh_approx}
// CHECK-NEXT: rt.kernel "add"(%arg0, %[[A]]) -> (%arg3)
// CHECK-NEXT: rt.return

// The forward block computes its residual straight into the caller's
// buffer (%arg4): no local, no copy. Functions keep their tfm.func_kind.
// CHECK-LABEL: rt.func @blk_fwd(
// CHECK-SAME: attributes {tfm.func_kind = #tfm.func_kind<forward>}
// CHECK-NEXT: rt.kernel "matmul"(%arg0, %arg2) -> (%arg4)
// CHECK-NEXT: %[[A:.*]] = rt.alloc activation
// CHECK-NEXT: rt.kernel "gelu"(%arg4) -> (%[[A]])
// CHECK-NEXT: rt.kernel "add"(%arg0, %[[A]]) -> (%arg3)

// Everything local to a backward function is a gradient.
// CHECK-LABEL: rt.func @blk_bwd(
// CHECK-SAME: attributes {tfm.func_kind = #tfm.func_kind<backward>}
// CHECK-NEXT: %[[DH:.*]] = rt.alloc grad
// CHECK-NEXT: rt.kernel "gelu_grad"(%arg0, %arg3) -> (%[[DH]])
// CHECK-NEXT: rt.kernel "matmul_wgrad"(%arg1, %[[DH]]) -> (%arg5)
// CHECK-NEXT: %[[DX:.*]] = rt.alloc grad
// CHECK-NEXT: rt.kernel "matmul"(%[[DH]], %arg2) -> (%[[DX]]) attrs {transpose_rhs}
// CHECK-NEXT: rt.kernel "add"(%arg0, %[[DX]]) -> (%arg4)

// CHECK-LABEL: rt.func @train_step() attributes {entry = "train_step"} {
// CHECK-NEXT: %[[TOK:.*]] = rt.input "tokens" : !rt.buffer<2x4xi32>
// CHECK-NEXT: %[[LAB:.*]] = rt.input "labels" : !rt.buffer<2x4xi32>
// CHECK-NEXT: %[[STEP:.*]] = rt.input "step" : !rt.buffer<i64>
// CHECK-NEXT: %[[LR:.*]] = rt.input "lr" : !rt.buffer<f32>
// CHECK-NEXT: %[[WTE:.*]] = rt.state @wte : !rt.buffer<16x8xf32>
// CHECK-NEXT: %[[W0:.*]] = rt.state @layers.0.w
// CHECK-NEXT: %[[G:.*]] = rt.state @ln_f.weight
// CHECK-NEXT: %[[MWTE:.*]] = rt.state @wte.exp_avg :
// CHECK:      %[[VWTE:.*]] = rt.state @wte.exp_avg_sq :
// CHECK:      %[[LOSS:.*]] = rt.output "loss" : !rt.buffer<f32>
// CHECK-NEXT: %[[NORM:.*]] = rt.output "grad_norm" : !rt.buffer<f32>
// CHECK-NEXT: %[[E:.*]] = rt.alloc activation : !rt.buffer<2x4x8xf32>
// CHECK-NEXT: rt.kernel "embedding"(%[[TOK]], %[[WTE]]) -> (%[[E]])
// CHECK-NEXT: %[[L0:.*]] = rt.const dense<0> : tensor<i64>
// The caller allocates the callee's results; residuals are activations.
// CHECK-NEXT: %[[H1:.*]] = rt.alloc activation : !rt.buffer<2x4x8xf32>
// CHECK-NEXT: %[[R0:.*]] = rt.alloc activation : !rt.buffer<2x4x8xf32>
// CHECK-NEXT: rt.call @blk_fwd(%[[E]], %[[L0]], %[[W0]], %[[H1]], %[[R0]])
// CHECK:      %[[LOGITS:.*]] = rt.alloc activation : !rt.buffer<2x4x16xf32>
// CHECK-NEXT: rt.kernel "matmul"(%{{.*}}, %[[WTE]]) -> (%[[LOGITS]]) attrs {transpose_rhs}
// The loss goes straight into its output slot.
// CHECK-NEXT: rt.kernel "cross_entropy"(%[[LOGITS]], %[[LAB]]) -> (%[[LOSS]])
// CHECK-NEXT: %[[SEED:.*]] = rt.const dense<1.000000e+00> : tensor<f32>
// Gradients: from gradient ops, and from plain ops fed by gradients.
// CHECK-NEXT: %[[DL:.*]] = rt.alloc grad : !rt.buffer<2x4x16xf32>
// CHECK-NEXT: rt.kernel "cross_entropy_grad"(%[[SEED]], %[[LOGITS]], %[[LAB]]) -> (%[[DL]])
// CHECK-NEXT: %[[DN:.*]] = rt.alloc grad : !rt.buffer<2x4x8xf32>
// CHECK-NEXT: rt.kernel "matmul"(%[[DL]], %[[WTE]]) -> (%[[DN]])
// CHECK:      rt.kernel "reduce_sum"({{.*}}) attrs {dims = array<i64: 0, 1>}
// CHECK:      %[[DX1:.*]] = rt.alloc grad : !rt.buffer<2x4x8xf32>
// CHECK-NEXT: %[[DW1:.*]] = rt.alloc grad : !rt.buffer<8x8xf32>
// CHECK-NEXT: rt.call @blk_bwd({{.*}}, %[[H1]], %[[W0]], {{.*}}, %[[DX1]], %[[DW1]])
// CHECK:      rt.call @blk_bwd(%[[DX1]], %[[E]], %[[W0]], %[[R0]],
// Optimizer statistics are workspace; the norm goes to its output slot.
// CHECK:      %[[SS:.*]] = rt.alloc workspace : !rt.buffer<f32>
// CHECK-NEXT: rt.kernel "sum_squares"({{.*}}) -> (%[[SS]])
// CHECK-NEXT: %[[COEF:.*]] = rt.alloc workspace : !rt.buffer<f32>
// CHECK-NEXT: rt.kernel "clip_coef"(%[[SS]]) -> (%[[COEF]], %[[NORM]]) attrs {max_norm = 1.000000e+00 : f64}
// AdamW updates the parameter and both moments in place.
// CHECK-NEXT: rt.kernel "adamw"(%[[WTE]], %{{.*}}, %[[MWTE]], %[[VWTE]], %[[LR]], %[[STEP]], %[[COEF]]) -> (%[[WTE]], %[[MWTE]], %[[VWTE]]) attrs {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, epsilon = 1.000000e-08 : f64, weight_decay = 1.000000e-01 : f64}
// CHECK-NEXT: rt.kernel "adamw"
// CHECK-NEXT: rt.kernel "adamw"
// CHECK-NEXT: rt.return

// @eval is the eval entry; it calls the original block.
// CHECK-LABEL: rt.func @eval() attributes {entry = "eval"} {
// CHECK-NOT: rt.func
// CHECK: rt.call @blk(
// CHECK: rt.call @blk(
// CHECK: rt.kernel "cross_entropy"

// The logits are computed straight into the output slot.
// CHECK-LABEL: rt.func @logits() attributes {entry = "logits"} {
// CHECK: %[[OUT:.*]] = rt.output "logits" : !rt.buffer<2x4x16xf32>
// CHECK: rt.kernel "matmul"({{.*}}) -> (%[[OUT]]) attrs {transpose_rhs}
// CHECK-NEXT: rt.return

// A returned reshape is computed into a view of its destination; a returned
// argument is copied (by a `reshape` kernel).
// EDGE-LABEL: rt.func @reshaped(%arg0: !rt.buffer<2x8xf32>, %arg1: !rt.buffer<16xf32>, %arg2: !rt.buffer<2x8xf32>) {
// EDGE-NEXT: %[[V:.*]] = rt.view %arg1 : !rt.buffer<16xf32> to !rt.buffer<2x8xf32>
// EDGE-NEXT: rt.kernel "gelu"(%arg0) -> (%[[V]])
// EDGE-NEXT: rt.kernel "reshape"(%arg0) -> (%arg2)
// EDGE-NEXT: rt.return
func.func private @reshaped(%x: tensor<2x8xf32>) -> (tensor<16xf32>, tensor<2x8xf32>) {
  %g = tfm.gelu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %r = tfm.reshape %g : (tensor<2x8xf32>) -> tensor<16xf32>
  return %r, %x : tensor<16xf32>, tensor<2x8xf32>
}
func.func @eval(%x: tensor<2x8xf32> {tfm.input = "x"},
                %w: tensor<8xf32> {tfm.param = "w", tfm.init = "zeros"})
    -> (tensor<16xf32> {tfm.output = "y"}, tensor<16xf32> {tfm.output = "y2"},
        tensor<2x8xf32> {tfm.output = "y3"}, tensor<8xf32> {tfm.param = "w"}) {
  %a, %b = func.call @reshaped(%x) {tfm.layer = 0 : i64} : (tensor<2x8xf32>) -> (tensor<16xf32>, tensor<2x8xf32>)
  %m = tfm.mul %b, %w {test.note = 1 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %q = tfm.reshape %m : (tensor<2x8xf32>) -> tensor<1x2x2x4xf32>
  %o, %lse = tfm.attention %q, %q, %q {causal, scale = 5.000000e-01 : f64} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> (tensor<1x2x2x4xf32>, tensor<1x2x2xf32>)
  %s = tfm.reshape %o : (tensor<1x2x2x4xf32>) -> tensor<16xf32>
  return %a, %s, %x, %w : tensor<16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<8xf32>
}
// EDGE-LABEL: rt.func @eval() attributes {entry = "eval"} {
// EDGE-NEXT: %[[X:.*]] = rt.input "x" : !rt.buffer<2x8xf32>
// EDGE-NEXT: %[[W:.*]] = rt.state @w : !rt.buffer<8xf32>
// EDGE-NEXT: %[[Y:.*]] = rt.output "y" : !rt.buffer<16xf32>
// EDGE-NEXT: %[[Y2:.*]] = rt.output "y2" : !rt.buffer<16xf32>
// EDGE-NEXT: %[[Y2V:.*]] = rt.view %[[Y2]] : !rt.buffer<16xf32> to !rt.buffer<1x2x2x4xf32>
// EDGE-NEXT: %[[Y3:.*]] = rt.output "y3" : !rt.buffer<2x8xf32>
// EDGE-NEXT: %[[B:.*]] = rt.alloc activation : !rt.buffer<2x8xf32>
// EDGE-NEXT: rt.call @reshaped(%[[X]], %[[Y]], %[[B]])
// Discardable attributes are not kernel parameters.
// EDGE-NEXT: %[[M:.*]] = rt.alloc activation : !rt.buffer<2x8xf32>
// EDGE-NEXT: rt.kernel "mul"(%[[B]], %[[W]]) -> (%[[M]]) :
// EDGE-NEXT: %[[Q:.*]] = rt.view %[[M]] : !rt.buffer<2x8xf32> to !rt.buffer<1x2x2x4xf32>
// A result nothing reads is workspace.
// EDGE-NEXT: %[[LSE:.*]] = rt.alloc workspace : !rt.buffer<1x2x2xf32>
// EDGE-NEXT: rt.kernel "attention"(%[[Q]], %[[Q]], %[[Q]]) -> (%[[Y2V]], %[[LSE]]) attrs {causal, scale = 5.000000e-01 : f64}
// The unchanged state needs nothing; the passed-through input is copied.
// EDGE-NEXT: rt.kernel "reshape"(%[[X]]) -> (%[[Y3]])
// EDGE-NEXT: rt.return
