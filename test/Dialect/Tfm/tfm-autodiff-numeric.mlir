// Numerical check of the linear-algebra VJP rules: the gradients @blk_bwd
// returns must match central differences of @blk (Inputs/vjp_check.py
// interprets both in float64). @blk covers every matmul form (shared 2-D
// weight, plain, transposed and batched operands), suffix-broadcast
// add/sub/mul, scale, reduce_sum/broadcast, reshape, and values with several
// uses (gradient accumulation).
// RUN: shard-opt %s --tfm-autodiff -o %t.mlir
// RUN: %python %S/Inputs/vjp_check.py %t.mlir blk | FileCheck %s
// CHECK-COUNT-10: : ok
// CHECK-NOT: WRONG

func.func private @blk(%a: tensor<2x3x4xf32>, %w: tensor<4x5xf32>, %v: tensor<4x5xf32>, %e: tensor<2x4x3xf32>,
                       %t: tensor<3x6xf32>, %b: tensor<5xf32>, %p: tensor<3x5xf32>, %q: tensor<6x2xf32>, %r: tensor<2x5x6xf32>, %r2: tensor<2x4x4xf32>) -> tensor<2x3x4xf32> {
  %y = tfm.matmul %a, %w : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %y1 = tfm.add %y, %b : (tensor<2x3x5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  %y2 = tfm.mul %y1, %p : (tensor<2x3x5xf32>, tensor<3x5xf32>) -> tensor<2x3x5xf32>
  %y3 = tfm.sub %y2, %y : (tensor<2x3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %z = tfm.matmul %y3, %v {transpose_rhs} : (tensor<2x3x5xf32>, tensor<4x5xf32>) -> tensor<2x3x4xf32>
  %u = tfm.matmul %e, %r2 {transpose_lhs, transpose_rhs} : (tensor<2x4x3xf32>, tensor<2x4x4xf32>) -> tensor<2x3x4xf32>
  %s = tfm.reduce_sum %u {dims = array<i64: 0>} : (tensor<2x3x4xf32>) -> tensor<3x4xf32>
  %m = tfm.matmul %t, %s {transpose_lhs} : (tensor<3x6xf32>, tensor<3x4xf32>) -> tensor<6x4xf32>
  %m2 = tfm.matmul %q, %m {transpose_lhs} : (tensor<6x2xf32>, tensor<6x4xf32>) -> tensor<2x4xf32>
  %bc = tfm.broadcast %m2 {dims = array<i64: 1>} : (tensor<2x4xf32>) -> tensor<2x3x4xf32>
  %sc = tfm.scale %bc {factor = -0.5 : f64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %rr = tfm.matmul %r, %y3 {transpose_lhs, transpose_rhs} : (tensor<2x5x6xf32>, tensor<2x3x5xf32>) -> tensor<2x6x3xf32>
  %rs = tfm.reshape %rr : (tensor<2x6x3xf32>) -> tensor<2x3x6xf32>
  %rm = tfm.matmul %rs, %r {transpose_rhs} : (tensor<2x3x6xf32>, tensor<2x5x6xf32>) -> tensor<2x3x5xf32>
  %rz = tfm.matmul %rm, %w {transpose_rhs} : (tensor<2x3x5xf32>, tensor<4x5xf32>) -> tensor<2x3x4xf32>
  %o1 = tfm.add %z, %u : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %o2 = tfm.add %o1, %sc : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %o3 = tfm.mul %o2, %rz : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %o3 : tensor<2x3x4xf32>
}
func.func @forward(%ids: tensor<2x3xi32> {tfm.input = "tokens"}, %labels: tensor<2x3xi32> {tfm.input = "labels"},
   %a: tensor<2x3x4xf32> {tfm.param = "a"}, %w: tensor<4x5xf32> {tfm.param = "w"}, %v: tensor<4x5xf32> {tfm.param = "v"}, %e: tensor<2x4x3xf32> {tfm.param = "e"},
   %t: tensor<3x6xf32> {tfm.param = "t"}, %b: tensor<5xf32> {tfm.param = "b"}, %p: tensor<3x5xf32> {tfm.param = "p"}, %q: tensor<6x2xf32> {tfm.param = "q"}, %r: tensor<2x5x6xf32> {tfm.param = "r"}, %r2: tensor<2x4x4xf32> {tfm.param = "r2"}) -> tensor<f32> {
  %o = func.call @blk(%a, %w, %v, %e, %t, %b, %p, %q, %r, %r2) : (tensor<2x3x4xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<2x4x3xf32>, tensor<3x6xf32>, tensor<5xf32>, tensor<3x5xf32>, tensor<6x2xf32>, tensor<2x5x6xf32>, tensor<2x4x4xf32>) -> tensor<2x3x4xf32>
  %loss = tfm.cross_entropy %o, %labels : (tensor<2x3x4xf32>, tensor<2x3xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
