// nanoGPT shakespeare_char (GPU recipe): no biases, dropout 0.2 (step input,
// sites 0 = embedding, 1 = attention residual, 2 = MLP residual).
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char.json --batch 64 --seq 256 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: shard-opt %t.mlir | FileCheck %s

// COUNT: nanogpt-shakespeare-char: 10745088 parameters (10.7M)

// CHECK-LABEL: func.func private @gpt2_block(
// CHECK-SAME: %arg2: tensor<i64> {tfm.role = "step"}
// CHECK-NOT: tfm.role = "bias"
// CHECK: tfm.layer_norm %arg0, %arg3 {epsilon = 1.000000e-05 : f64} : (tensor<64x256x384xf32>, tensor<384xf32>)
// CHECK: tfm.dropout %{{[0-9]+}}, %arg2, %arg1 {rate = 2.000000e-01 : f64, site = 1 : i64}
// CHECK: tfm.dropout %{{[0-9]+}}, %arg2, %arg1 {rate = 2.000000e-01 : f64, site = 2 : i64}
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %arg2: tensor<i64> {tfm.input = "step"}
// CHECK-SAME: tensor<65x384xf32> {tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64, tfm.param = "wte", tfm.role = "embedding"}
// CHECK-NOT: tfm.role = "bias"
// CHECK: tfm.dropout %{{[0-9]+}}, %arg2, %{{.*}} {rate = 2.000000e-01 : f64, site = 0 : i64}
// CHECK-COUNT-6: call @gpt2_block
// CHECK: tfm.cross_entropy
