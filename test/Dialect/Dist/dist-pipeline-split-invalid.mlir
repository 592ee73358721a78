// dist-pipeline-split errors. A rank that reads a state in one entry must
// hold (and so update) it in the training step: here @train_step uses `w`
// only on stage 0 while @eval reads it on stage 1, whose copy no step would
// update (formerly accepted silently).
// RUN: shard-opt %s --dist-pipeline-split -verify-diagnostics -split-input-file

module attributes {dist.plan = {pp = 2 : i64}} {
  dist.mesh @m [pp = 2 : pipeline]
  func.func private @layer(%x: tensor<1x2x4xf32> {tfm.role = "hidden"}) -> (tensor<1x2x4xf32> {tfm.role = "hidden"}) {
    %y = tfm.scale %x {factor = 2.0 : f64} : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    return %y : tensor<1x2x4xf32>
  }
  func.func @train_step(%x: tensor<1x2x4xf32> {tfm.input = "tokens"},
                        %labels: tensor<1x2xi32> {tfm.input = "labels"},
                        %w: tensor<1x2x4xf32> {tfm.param = "w"})
      -> (tensor<f32> {tfm.output = "loss"}, tensor<1x2x4xf32> {tfm.param = "w"}) {
    %h = tfm.add %x, %w : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %h0 = call @layer(%h) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %h1 = call @layer(%h0) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %loss = tfm.cross_entropy %h1, %labels : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    %one = arith.constant dense<1.0> : tensor<f32>
    %g = tfm.cross_entropy_grad %one, %h1, %labels : (tensor<f32>, tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<1x2x4xf32>
    %norm = tfm.sum_squares %g : (tensor<1x2x4xf32>) -> tensor<f32>
    %new = tfm.mul %w, %norm : (tensor<1x2x4xf32>, tensor<f32>) -> tensor<1x2x4xf32>
    return %loss, %new : tensor<f32>, tensor<1x2x4xf32>
  }
  // expected-error @below {{dist-pipeline-split: rank 1 of @eval reads state 'w', which @train_step does not hold (and update) on that rank}}
  func.func @eval(%x: tensor<1x2x4xf32> {tfm.input = "tokens"},
                  %labels: tensor<1x2xi32> {tfm.input = "labels"},
                  %w: tensor<1x2x4xf32> {tfm.param = "w"})
      -> (tensor<f32> {tfm.output = "loss"}) {
    %h0 = call @layer(%x) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %h1 = call @layer(%h0) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %o = tfm.add %h1, %w : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
    %loss = tfm.cross_entropy %o, %labels : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
