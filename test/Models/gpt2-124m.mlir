// GPT-2 124M: learned positions, pre-LN with biases, exact GELU ("gelu" in the
// config), tied LM head; one block function called 12 times.
// RUN: %python -m autoshard.models %configs/models/gpt2-124m.json --batch 2 --seq 64 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: shard-opt %t.mlir | FileCheck %s
// RUN: shard-opt %t.mlir | shard-opt --mlir-print-op-generic | shard-opt -o %t.roundtrip.mlir

// COUNT: gpt2-124m: 124439808 parameters (124.4M)

// CHECK: module attributes {tfm.model = {{.*}}num_layers = 12 : i64, num_parameters = 124439808 : i64
// CHECK-LABEL: func.func private @gpt2_block(
// CHECK-SAME: %arg0: tensor<2x64x768xf32> {tfm.role = "hidden"}
// CHECK-SAME: %arg1: tensor<i64> {tfm.role = "layer_index"}
// CHECK-SAME: tensor<768xf32> {tfm.name = "ln_1.weight", tfm.role = "norm"}
// CHECK-SAME: tensor<768xf32> {tfm.bias_of = "norm", tfm.name = "ln_1.bias", tfm.role = "bias"}
// CHECK-SAME: tensor<768x768xf32> {tfm.name = "attn.wq", tfm.role = "attn_q"}
// CHECK-SAME: tensor<768xf32> {tfm.bias_of = "attn_q", tfm.name = "attn.bq", tfm.role = "bias"}
// CHECK-SAME: tensor<768x3072xf32> {tfm.name = "mlp.w_fc", tfm.role = "mlp_up"}
// CHECK-SAME: tensor<3072x768xf32> {tfm.name = "mlp.w_proj", tfm.role = "mlp_down"}
// CHECK-SAME: -> tensor<2x64x768xf32>
// CHECK: tfm.layer_norm %arg0, %arg2, %arg3 {epsilon = 1.000000e-05 : f64}
// CHECK: tfm.reshape {{.*}} -> tensor<2x64x12x64xf32>
// CHECK: tfm.attention {{.*}} {causal, scale = 1.250000e-01 : f64} : {{.*}} -> (tensor<2x64x12x64xf32>, tensor<2x12x64xf32>)
// CHECK: tfm.gelu %{{[0-9]+}} : (tensor<2x64x3072xf32>)
// CHECK: return {{.*}} : tensor<2x64x768xf32>

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: tensor<2x64xi32> {tfm.input = "tokens"}
// CHECK-SAME: tensor<2x64xi32> {tfm.input = "labels"}
// CHECK-SAME: tensor<50257x768xf32> {tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64, tfm.param = "wte", tfm.role = "embedding"}
// CHECK-SAME: tensor<1024x768xf32> {tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64, tfm.param = "wpe", tfm.role = "pos_embedding"}
// CHECK-SAME: {tfm.init = "normal", tfm.init_std = {{.*}} : f64, tfm.param = "layers.0.attn.wo", tfm.role = "attn_out"}
// CHECK-SAME: {tfm.bias_of = "attn_out", tfm.init = "zeros", tfm.param = "layers.0.attn.bo", tfm.role = "bias"}
// CHECK-SAME: {tfm.init = "ones", tfm.param = "ln_f.weight", tfm.role = "norm"}
// CHECK-SAME: -> tensor<f32>
// CHECK: tfm.embedding %arg0, %arg2 : (tensor<2x64xi32>, tensor<50257x768xf32>) -> tensor<2x64x768xf32>
// CHECK: tfm.position_embedding %arg3 {seq_len = 64 : i64} : (tensor<1024x768xf32>) -> tensor<64x768xf32>
// CHECK: tfm.add {{.*}} : (tensor<2x64x768xf32>, tensor<64x768xf32>) -> tensor<2x64x768xf32>
// CHECK-COUNT-12: call @gpt2_block
// CHECK-NOT: call @
// CHECK: tfm.layer_norm
// CHECK: tfm.matmul {{.*}} {transpose_rhs} : (tensor<2x64x768xf32>, tensor<50257x768xf32>) -> tensor<2x64x50257xf32>
// CHECK: tfm.cross_entropy %{{[0-9]+}}, %arg1 : (tensor<2x64x50257xf32>, tensor<2x64xi32>) -> tensor<f32>
