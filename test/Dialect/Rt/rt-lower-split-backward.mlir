// rt-lower files what the backward split's halves compute as gradients, as
// it does for a whole backward function: the input-gradient (I) and
// weight-gradient (W) functions' buffers and their calls' results, also on
// a pipeline rank without the loss (ZB-V's middle stages: the W inputs
// arrive from another rank, so no gradient reaches them from a seed).
// RUN: shard-opt %s --rt-lower | FileCheck %s

// CHECK-LABEL: rt.func @blk_i(
// CHECK-SAME: attributes {tfm.func_kind = #tfm.func_kind<input_grad>}
// CHECK-NEXT: rt.alloc grad : !rt.buffer<2x8xf32>
// CHECK-NEXT: rt.kernel "gelu"
// CHECK-NEXT: rt.kernel "mul"
func.func private @blk_i(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>) -> tensor<2x8xf32>
    attributes {tfm.func_kind = #tfm.func_kind<input_grad>} {
  %h = tfm.gelu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %dx = tfm.mul %h, %dy : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %dx : tensor<2x8xf32>
}
// CHECK-LABEL: rt.func @blk_w(
// CHECK-SAME: attributes {tfm.func_kind = #tfm.func_kind<weight_grad>}
// CHECK-NEXT: rt.alloc grad : !rt.buffer<2x8xf32>
// CHECK-NEXT: rt.kernel "gelu"
func.func private @blk_w(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>) -> tensor<2x8xf32>
    attributes {tfm.func_kind = #tfm.func_kind<weight_grad>} {
  %g = tfm.gelu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %dw = tfm.mul %g, %dy : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %dw : tensor<2x8xf32>
}

// The received output gradient (here an input) is no gradient; what the
// calls return is.
// CHECK-LABEL: rt.func @eval() attributes {entry = "eval"} {
// CHECK:      rt.alloc grad : !rt.buffer<2x8xf32>
// CHECK-NEXT: rt.call @blk_i(
// CHECK-NEXT: rt.alloc grad : !rt.buffer<2x8xf32>
// CHECK-NEXT: rt.call @blk_w(
func.func @eval(%x: tensor<2x8xf32> {tfm.input = "x"},
                %dy: tensor<2x8xf32> {tfm.input = "dy"},
                %w: tensor<2x8xf32> {tfm.param = "w", tfm.init = "zeros"})
    -> (tensor<2x8xf32> {tfm.output = "y"}, tensor<2x8xf32> {tfm.param = "w"}) {
  %dx = func.call @blk_i(%x, %dy) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %dw = func.call @blk_w(%x, %dx) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = tfm.mul %dw, %w : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y, %w : tensor<2x8xf32>, tensor<2x8xf32>
}
