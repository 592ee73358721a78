// Llama-3 8B: RMSNorm, RoPE (theta 500000), GQA (32 q / 8 kv heads), SwiGLU,
// untied LM head [H, V], no biases.
// RUN: %python -m autoshard.models %configs/models/llama3-8b.json --batch 2 --seq 128 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: shard-opt %t.mlir | FileCheck %s

// COUNT: llama3-8b: 8030261248 parameters (8.03B)

// CHECK-LABEL: func.func private @llama_block(
// CHECK-SAME: tensor<4096x4096xf32> {tfm.name = "attn.wq", tfm.role = "attn_q"}
// CHECK-SAME: tensor<4096x1024xf32> {tfm.name = "attn.wk", tfm.role = "attn_k"}
// CHECK-SAME: tensor<4096x1024xf32> {tfm.name = "attn.wv", tfm.role = "attn_v"}
// CHECK-SAME: tensor<4096x14336xf32> {tfm.name = "mlp.w_gate", tfm.role = "mlp_gate"}
// CHECK-SAME: tensor<4096x14336xf32> {tfm.name = "mlp.w_up", tfm.role = "mlp_up"}
// CHECK-SAME: tensor<14336x4096xf32> {tfm.name = "mlp.w_down", tfm.role = "mlp_down"}
// CHECK: tfm.rms_norm %arg0, %arg2 {epsilon = 1.000000e-05 : f64}
// CHECK: tfm.rope {{.*}} {theta = 5.000000e+05 : f64} : (tensor<2x128x32x128xf32>)
// CHECK: tfm.rope {{.*}} {theta = 5.000000e+05 : f64} : (tensor<2x128x8x128xf32>)
// CHECK: tfm.attention {{.*}} {causal, scale = {{.*}}} : (tensor<2x128x32x128xf32>, tensor<2x128x8x128xf32>, tensor<2x128x8x128xf32>)
// CHECK: tfm.swiglu {{.*}} : (tensor<2x128x14336xf32>, tensor<2x128x14336xf32>) -> tensor<2x128x14336xf32>
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: tensor<128256x4096xf32> {{.*}}tfm.param = "tok_embeddings", tfm.role = "embedding"}
// CHECK-SAME: tensor<4096x128256xf32> {{.*}}tfm.param = "lm_head", tfm.role = "lm_head"}
// CHECK-NOT: tfm.position_embedding
// CHECK-COUNT-32: call @llama_block
// CHECK: tfm.rms_norm
// CHECK: tfm.matmul {{.*}} : (tensor<2x128x4096xf32>, tensor<4096x128256xf32>) -> tensor<2x128x128256xf32>
// CHECK: tfm.cross_entropy
