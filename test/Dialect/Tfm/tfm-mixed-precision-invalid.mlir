// RUN: shard-opt %s -split-input-file --tfm-mixed-precision -verify-diagnostics
// RUN: not shard-opt %s -split-input-file --tfm-mixed-precision="compute-type=f64" 2>&1 | FileCheck %s --check-prefix=TYPE

// One case per error of `tfm-mixed-precision`.

// TYPE: tfm-mixed-precision: compute-type must be bf16 or f16, found 'f64'

// The pass runs on the model, before tfm-autodiff.
func.func @train_step(%p: tensor<4xf32> {tfm.param = "w"}, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>,
                      %lr: tensor<f32>, %step: tensor<i64>, %c: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfm.adamw' op is not a forward op: tfm-mixed-precision runs on the model (before tfm-autodiff)}}
  %p1, %m1, %v1 = tfm.adamw %p, %g, %m, %v, %lr, %step, %c
      {beta1 = 9.000000e-01 : f64, beta2 = 9.500000e-01 : f64, epsilon = 1.000000e-08 : f64, weight_decay = 1.000000e-01 : f64}
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<f32>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %p1 : tensor<4xf32>
}

// -----

// Master weights are f32: a model built in bf16 has none to keep.
// expected-error @+1 {{parameter 'w' is 'tensor<2x4xbf16>'; tfm-mixed-precision keeps f32 master weights, so the model must be built in f32}}
func.func @forward(%labels: tensor<2xi32> {tfm.input = "labels"}, %w: tensor<2x4xbf16> {tfm.param = "w"}) -> tensor<f32> {
  %loss = tfm.cross_entropy %w, %labels : (tensor<2x4xbf16>, tensor<2xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Applied once.
// expected-error @below {{tfm-mixed-precision: the module is already mixed precision (tfm.mixed_precision is set)}}
module attributes {tfm.mixed_precision = "bf16"} {
  func.func @forward(%labels: tensor<2xi32> {tfm.input = "labels"}, %w: tensor<2x4xf32> {tfm.param = "w"}) -> tensor<f32> {
    %loss = tfm.cross_entropy %w, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A block function is rewritten once: its calls must agree on the types
// the policy gives their operands (here an f32 norm output, cast to bf16,
// and an f32 parameter).
module {
  func.func private @f(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %y = tfm.gelu %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
  func.func @forward(%labels: tensor<2xi32> {tfm.input = "labels"}, %w: tensor<2x4xf32> {tfm.param = "w"},
                     %g: tensor<4xf32> {tfm.param = "g"}) -> tensor<f32> {
    %n = tfm.layer_norm %w, %g {epsilon = 1.000000e-05 : f64} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %a = func.call @f(%n) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    // expected-error @+1 {{'func.call' op passes other types to 'f' than an earlier call after the precision policy; tfm-mixed-precision rewrites a block function once}}
    %b = func.call @f(%w) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %s = tfm.add %a, %b : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %loss = tfm.cross_entropy %s, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
