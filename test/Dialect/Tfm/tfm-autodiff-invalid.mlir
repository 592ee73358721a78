// RUN: shard-opt %s -split-input-file --tfm-autodiff -verify-diagnostics
// A pass option value that does not parse is reported once, by llvm::cl
// (issue 19: an empty `<unknown>:0: error:` line followed).
// RUN: not shard-opt %S/../../Inputs/tiny-gpt2-model.mlir --tfm-autodiff="beta1=x" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADVALUE
// RUN: not shard-opt %S/../../Inputs/tiny-gpt2-model.mlir --autoshard-train="microbatches=abc" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADINT
// BADVALUE: for the --beta1 option: 'x' value invalid for floating point argument!
// BADVALUE-NOT: error
// BADINT: for the --microbatches option: 'abc' value invalid for long argument!
// BADINT-NOT: error

// One case per error of `tfm-autodiff`; each names the function, value or op.

// expected-error @below {{tfm-autodiff needs a @forward function with a body}}
module {
  func.func @loss(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}

// -----

// expected-error @+1 {{@forward must return one scalar loss of type tensor<f32>, found 1 result(s), the first of type 'tensor<2xf32>'}}
func.func @forward(%ids: tensor<2xi32> {tfm.input = "tokens"}, %labels: tensor<2xi32> {tfm.input = "labels"},
                   %w: tensor<2xf32> {tfm.param = "w"}) -> tensor<2xf32> {
  return %w : tensor<2xf32>
}

// -----

// expected-error @+1 {{argument #2 of @forward must carry tfm.param or tfm.input = "tokens" | "labels" | "step"}}
func.func @forward(%ids: tensor<2xi32> {tfm.input = "tokens"}, %labels: tensor<2xi32> {tfm.input = "labels"},
                   %w: tensor<2x4xf32>) -> tensor<f32> {
  %loss = tfm.cross_entropy %w, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// expected-error @+1 {{parameter #3 ('unused') does not reach the loss, so it has no gradient}}
func.func @forward(%ids: tensor<2xi32> {tfm.input = "tokens"}, %labels: tensor<2xi32> {tfm.input = "labels"},
                   %w: tensor<2x4xf32> {tfm.param = "w"}, %u: tensor<4xf32> {tfm.param = "unused"}) -> tensor<f32> {
  %loss = tfm.cross_entropy %w, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

func.func @forward(%ids: tensor<2xi32> {tfm.input = "tokens"}, %labels: tensor<2xi32> {tfm.input = "labels"},
                   %w: tensor<2x4xf32> {tfm.param = "w"}) -> tensor<f32> {
  // expected-error @+1 {{'tfm.sum_squares' op has no VJP rule, but its result reaches the loss}}
  %ss = tfm.sum_squares %w : (tensor<2x4xf32>) -> tensor<f32>
  %loss = tfm.cross_entropy %w, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  %total = tfm.add %loss, %ss : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %total : tensor<f32>
}

// -----

func.func @forward(%ids: tensor<2x3xi32> {tfm.input = "tokens"}, %labels: tensor<2x5xi32> {tfm.input = "labels"},
                   %x: tensor<2x4x5xf32> {tfm.param = "x"}, %w: tensor<4x3xf32> {tfm.param = "w"}) -> tensor<f32> {
  // expected-error @+1 {{'tfm.matmul' op has no gradient rule for transpose_lhs with a rank-2 rhs shared by a batched lhs of rank 3}}
  %y = tfm.matmul %x, %w {transpose_lhs} : (tensor<2x4x5xf32>, tensor<4x3xf32>) -> tensor<2x5x3xf32>
  %loss = tfm.cross_entropy %y, %labels : (tensor<2x5x3xf32>, tensor<2x5xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

func.func @forward(%ids: tensor<1x2xi32> {tfm.input = "tokens"}, %labels: tensor<1x2x2xi32> {tfm.input = "labels"},
                   %q: tensor<1x2x2x4xf32> {tfm.param = "q"}) -> tensor<f32> {
  %out, %lse = tfm.attention %q, %q, %q {causal, scale = 0.5 : f64} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> (tensor<1x2x2x4xf32>, tensor<1x2x2xf32>)
  // expected-error @-1 {{'tfm.attention' op has no gradient rule for its lse result (it reaches the loss)}}
  %loss = tfm.cross_entropy %out, %labels : (tensor<1x2x2x4xf32>, tensor<1x2x2xi32>) -> tensor<f32>
  %aux = tfm.reduce_sum %lse {dims = array<i64: 0, 1, 2>} : (tensor<1x2x2xf32>) -> tensor<f32>
  %total = tfm.add %loss, %aux : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %total : tensor<f32>
}

// -----

// expected-error @+1 {{argument #1 ('w') of @blk does not reach its results, so it has no gradient}}
func.func private @blk(%x: tensor<2x4xf32>, %w: tensor<4x4xf32> {tfm.name = "w"}) -> tensor<2x4xf32> {
  %y = tfm.gelu %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

func.func @forward(%ids: tensor<2xi32> {tfm.input = "tokens"}, %labels: tensor<2xi32> {tfm.input = "labels"},
                   %x: tensor<2x4xf32> {tfm.param = "x"}, %w: tensor<4x4xf32> {tfm.param = "w"}) -> tensor<f32> {
  %h = func.call @blk(%x, %w) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %loss = tfm.cross_entropy %h, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

func.func private @blk(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %y = tfm.gelu %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y, %y : tensor<2x4xf32>, tensor<2x4xf32>
}

func.func @forward(%ids: tensor<2xi32> {tfm.input = "tokens"}, %labels: tensor<2xi32> {tfm.input = "labels"},
                   %x: tensor<2x4xf32> {tfm.param = "x"}) -> tensor<f32> {
  // expected-error @+1 {{'func.call' op result #1 does not reach the loss; tfm-autodiff needs a gradient for every float result of @blk}}
  %h:2 = func.call @blk(%x) : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  %loss = tfm.cross_entropy %h#0, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

func.func private @ext(%x: tensor<2x4xf32>) -> tensor<2x4xf32>

func.func @forward(%ids: tensor<2xi32> {tfm.input = "tokens"}, %labels: tensor<2xi32> {tfm.input = "labels"},
                   %x: tensor<2x4xf32> {tfm.param = "x"}) -> tensor<f32> {
  // expected-error @+1 {{'func.call' op calls @ext, which has no body to differentiate}}
  %h = func.call @ext(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %loss = tfm.cross_entropy %h, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// expected-error @+1 {{@forward must compute exactly one tfm.cross_entropy (at its top level) to derive @logits, found 0}}
func.func @forward(%ids: tensor<2xi32> {tfm.input = "tokens"}, %labels: tensor<2xi32> {tfm.input = "labels"},
                   %w: tensor<4xf32> {tfm.param = "w"}) -> tensor<f32> {
  %loss = tfm.reduce_sum %w {dims = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}
