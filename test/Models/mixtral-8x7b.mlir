// Mixtral 8x7B: Llama attention + MoE FFN (router [H,E], top-2 renormalised,
// dispatch/experts/combine). Default capacity is dropless (C = S). As in HF,
// the router aux loss is part of the loss only with output_router_logits
// (the reference config has none): then each block returns its aux loss,
// @forward sums them and adds them with router_aux_loss_coef / n_layer
// (prefix AUX, on configs/models/mixtral-tiny-cpu.json: 4 layers, coefficient 0.02).
// RUN: %python -m autoshard.models %configs/models/mixtral-8x7b.json --batch 2 --seq 64 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: shard-opt %t.mlir | FileCheck %s
// RUN: %python -m autoshard.models %configs/models/mixtral-8x7b.json --batch 2 --seq 64 --capacity-factor 1.25 -q | shard-opt | FileCheck %s --check-prefix=CF
// RUN: %python -m autoshard.models %autoshard_src/configs/models/mixtral-tiny-cpu.json --batch 2 --seq 8 -q | shard-opt | FileCheck %s --check-prefix=AUX

// COUNT: mixtral-8x7b: 46702792704 parameters (46.70B)

// CHECK-LABEL: func.func private @mixtral_block(
// CHECK-SAME: tensor<4096x8xf32> {tfm.name = "moe.router", tfm.role = "router"}
// CHECK-SAME: tensor<8x4096x14336xf32> {tfm.name = "moe.experts.w_gate", tfm.role = "expert_gate"}
// CHECK-SAME: tensor<8x4096x14336xf32> {tfm.name = "moe.experts.w_up", tfm.role = "expert_up"}
// CHECK-SAME: tensor<8x14336x4096xf32> {tfm.name = "moe.experts.w_down", tfm.role = "expert_down"}
// CHECK-SAME: -> tensor<2x64x4096xf32>
// CHECK: tfm.matmul {{.*}} -> tensor<2x64x8xf32>
// CHECK: tfm.moe_router {{.*}} {renormalize, top_k = 2 : i64} : (tensor<2x64x8xf32>) -> (tensor<2x64x2xf32>, tensor<2x64x2xi32>)
// CHECK-NOT: tfm.moe_aux_loss
// CHECK: tfm.moe_dispatch {{.*}} {capacity = 64 : i64, dropless, num_experts = 8 : i64} : (tensor<2x64x4096xf32>, tensor<2x64x2xi32>) -> tensor<8x2x64x4096xf32>
// CHECK: tfm.reshape {{.*}} -> tensor<8x128x4096xf32>
// CHECK: tfm.matmul {{.*}} : (tensor<8x128x4096xf32>, tensor<8x4096x14336xf32>) -> tensor<8x128x14336xf32>
// CHECK: tfm.swiglu
// CHECK: tfm.matmul {{.*}} : (tensor<8x128x14336xf32>, tensor<8x14336x4096xf32>) -> tensor<8x128x4096xf32>
// CHECK: tfm.moe_combine {{.*}} : (tensor<8x2x64x4096xf32>, tensor<2x64x2xf32>, tensor<2x64x2xi32>) -> tensor<2x64x4096xf32>
// CHECK-LABEL: func.func @forward(
// CHECK-COUNT-32: call @mixtral_block
// CHECK: tfm.cross_entropy
// CHECK-NOT: tfm.scale
// CHECK-NOT: tfm.add
// CHECK: return

// AUX-LABEL: func.func private @mixtral_block(
// AUX-SAME: -> (tensor<2x8x64xf32>, tensor<f32>)
// AUX: tfm.moe_router
// AUX: tfm.moe_aux_loss {{.*}} -> tensor<f32>
// AUX: return {{.*}} : tensor<2x8x64xf32>, tensor<f32>
// AUX-LABEL: func.func @forward(
// AUX-COUNT-4: call @mixtral_block
// AUX: tfm.cross_entropy
// AUX: tfm.scale {{.*}} {factor = 5.000000e-03 : f64} : (tensor<f32>) -> tensor<f32>
// AUX: tfm.add {{.*}} : (tensor<f32>, tensor<f32>) -> tensor<f32>

// ceil(1.25 * S * K / E) = ceil(1.25 * 64 * 2 / 8) = 20 slots per expert per sequence
// CF: tfm.moe_dispatch {{.*}} {capacity = 20 : i64, num_experts = 8 : i64} : {{.*}} -> tensor<8x2x20x4096xf32>
// CF: tfm.reshape {{.*}} -> tensor<8x40x4096xf32>
