// The MoE load-balancing loss under data parallelism: each rank takes the
// mean of its sequences' terms, rescaled to (local sum) / (global batch),
// and the loss is partial over dp (summed by the consumer); the gradient is
// the local one rescaled the same way.
// RUN: shard-opt --dist-partition %s | FileCheck %s

dist.mesh @m [dp = 2 : data]
// CHECK-LABEL: func.func @aux
// CHECK: %[[L:.*]] = tfm.moe_aux_loss %{{.*}}, %{{.*}} : (tensor<2x8x4xf32>, tensor<2x8x2xi32>) -> tensor<f32>
// CHECK: %[[S:.*]] = tfm.scale %[[L]] {factor = 5.000000e-01 : f64}
// CHECK: %[[G:.*]] = tfm.moe_aux_loss_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<2x8x4xf32>, tensor<2x8x2xi32>) -> tensor<2x8x4xf32>
// CHECK: tfm.scale %[[G]] {factor = 5.000000e-01 : f64}
// CHECK: dist.all_reduce %[[S]] on @m axes = [dp] reduction = sum
func.func @aux(%logits: tensor<4x8x4xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>},
               %ids: tensor<4x8x2xi32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>},
               %dloss: tensor<f32>)
    -> (tensor<f32>, tensor<4x8x4xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>}) {
  %loss = tfm.moe_aux_loss %logits, %ids {dist.sharding = #dist.sharding<@m, [], partial = {dp: sum}>} : (tensor<4x8x4xf32>, tensor<4x8x2xi32>) -> tensor<f32>
  %dlogits = tfm.moe_aux_loss_grad %dloss, %logits, %ids {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>} : (tensor<f32>, tensor<4x8x4xf32>, tensor<4x8x2xi32>) -> tensor<4x8x4xf32>
  return %loss, %dlogits : tensor<f32>, tensor<4x8x4xf32>
}
