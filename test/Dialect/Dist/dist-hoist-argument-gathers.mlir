// dist-hoist-argument-gathers: an argument whose only use is a blocking
// all-gather is gathered at every call site instead, and the function takes
// the gathered tensor; arguments used otherwise, gathers over pp, public
// functions and functions referenced other than by calls are left alone.
// RUN: shard-opt --dist-hoist-argument-gathers -split-input-file %s | FileCheck %s
// RUN: shard-opt --dist-hoist-argument-gathers --dist-bucket-collectives --dist-overlap-collectives --dist-verify-comm -split-input-file %s | FileCheck %s --check-prefix=PIPE

dist.mesh @m [pp = 2 : pipeline, dp = 2 : data]

// CHECK-LABEL: func.func private @block(
// CHECK-SAME: %arg0: tensor<8xf32>, %arg1: tensor<8xf32>, %arg2: tensor<4xf32>, %arg3: tensor<4xf32>)
// CHECK-NOT: dist.all_gather %arg1
// CHECK: dist.all_gather %arg2 on @m axes = [pp]
// CHECK: tfm.add %arg3, %arg3
// CHECK: dist.all_gather %arg3
func.func private @block(%x: tensor<8xf32>, %w: tensor<4xf32>, %p: tensor<4xf32>, %u: tensor<4xf32>) -> tensor<8xf32> {
  %wf = dist.all_gather %w on @m axes = [dp] gather_dim = 0 : tensor<4xf32> -> tensor<8xf32>
  %pf = dist.all_gather %p on @m axes = [pp] gather_dim = 0 : tensor<4xf32> -> tensor<8xf32>
  %v = tfm.add %u, %u : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %uf = dist.all_gather %u on @m axes = [dp] gather_dim = 0 : tensor<4xf32> -> tensor<8xf32>
  %y = tfm.mul %x, %wf : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %z = tfm.add %y, %pf : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %r = tfm.add %z, %uf : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// Every call site gathers its own operand right before the call.
// CHECK-LABEL: func.func @step(
// CHECK-NEXT: %[[G0:.*]] = dist.all_gather %arg1 on @m axes = [dp] gather_dim = 0 : tensor<4xf32> -> tensor<8xf32>
// CHECK-NEXT: %[[Y0:.*]] = call @block(%arg0, %[[G0]], %arg1, %arg1) : (tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
// CHECK-NEXT: %[[G1:.*]] = dist.all_gather %arg2 on @m axes = [dp] gather_dim = 0 : tensor<4xf32> -> tensor<8xf32>
// CHECK-NEXT: call @block(%[[Y0]], %[[G1]], %arg2, %arg2)
// The caller then starts layer 1's gather during layer 0.
// PIPE-LABEL: func.func @step(
// PIPE-NEXT: dist.all_gather %arg1
// PIPE-NEXT: %[[H:.*]] = dist.all_gather_start %arg2
// PIPE-NEXT: call @block
// PIPE-NEXT: %[[W:.*]] = dist.wait %[[H]]
// PIPE-NEXT: call @block(%{{.*}}, %[[W]]
func.func @step(%x: tensor<8xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>) -> tensor<8xf32> {
  %y0 = call @block(%x, %w0, %w0, %w0) : (tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %y1 = call @block(%y0, %w1, %w1, %w1) : (tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  return %y1 : tensor<8xf32>
}

// -----

dist.mesh @m [dp = 2 : data]

// A public function keeps its signature (its callers are not all known).
// CHECK-LABEL: func.func @public_block(
// CHECK-SAME: %arg0: tensor<4xf32>
// CHECK-NEXT: dist.all_gather %arg0
func.func @public_block(%w: tensor<4xf32>) -> tensor<8xf32> {
  %wf = dist.all_gather %w on @m axes = [dp] gather_dim = 0 : tensor<4xf32> -> tensor<8xf32>
  return %wf : tensor<8xf32>
}

// A callee whose gather lands in another private function is hoisted again,
// up to the outermost caller.
// CHECK-LABEL: func.func private @inner(
// CHECK-SAME: %arg0: tensor<8xf32>
// CHECK-NOT: dist.all_gather
// CHECK-LABEL: func.func private @outer(
// CHECK-SAME: %arg0: tensor<8xf32>
// CHECK-NOT: dist.all_gather
// CHECK-LABEL: func.func @top(
// CHECK-NEXT: %[[G:.*]] = dist.all_gather %arg0
// CHECK-NEXT: call @outer(%[[G]])
func.func private @inner(%w: tensor<4xf32>) -> tensor<8xf32> {
  %wf = dist.all_gather %w on @m axes = [dp] gather_dim = 0 : tensor<4xf32> -> tensor<8xf32>
  return %wf : tensor<8xf32>
}
func.func private @outer(%w: tensor<4xf32>) -> tensor<8xf32> {
  %r = call @inner(%w) : (tensor<4xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func @top(%w: tensor<4xf32>) -> tensor<8xf32> {
  %r = call @outer(%w) : (tensor<4xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}
