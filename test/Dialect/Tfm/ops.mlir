// RUN: shard-opt %s | shard-opt | FileCheck %s
// RUN: shard-opt %s --mlir-print-op-generic | shard-opt | FileCheck %s

// CHECK-LABEL: func @matmul
func.func @matmul(%x: tensor<16x64x128xf32>, %w: tensor<128x512xf32>, %wte: tensor<65x128xf32>, %e: tensor<8x40x128xbf16>, %we: tensor<8x128x256xbf16>, %a: tensor<4x6xf64>, %b: tensor<4x5xf64>) -> (tensor<16x64x512xf32>, tensor<16x64x65xf32>, tensor<8x40x256xbf16>, tensor<6x5xf64>) {
  // CHECK: %{{.*}} = tfm.matmul %{{.*}}, %{{.*}} : (tensor<16x64x128xf32>, tensor<128x512xf32>) -> tensor<16x64x512xf32>
  %0 = tfm.matmul %x, %w : (tensor<16x64x128xf32>, tensor<128x512xf32>) -> tensor<16x64x512xf32>
  // CHECK: %{{.*}} = tfm.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<16x64x128xf32>, tensor<65x128xf32>) -> tensor<16x64x65xf32>
  %1 = tfm.matmul %x, %wte {transpose_rhs} : (tensor<16x64x128xf32>, tensor<65x128xf32>) -> tensor<16x64x65xf32>
  // CHECK: %{{.*}} = tfm.matmul %{{.*}}, %{{.*}} : (tensor<8x40x128xbf16>, tensor<8x128x256xbf16>) -> tensor<8x40x256xbf16>
  %2 = tfm.matmul %e, %we : (tensor<8x40x128xbf16>, tensor<8x128x256xbf16>) -> tensor<8x40x256xbf16>
  // CHECK: %{{.*}} = tfm.matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<4x6xf64>, tensor<4x5xf64>) -> tensor<6x5xf64>
  %3 = tfm.matmul %a, %b {transpose_lhs} : (tensor<4x6xf64>, tensor<4x5xf64>) -> tensor<6x5xf64>
  return %0, %1, %2, %3 : tensor<16x64x512xf32>, tensor<16x64x65xf32>, tensor<8x40x256xbf16>, tensor<6x5xf64>
}

// CHECK-LABEL: func @matmul_wgrad
func.func @matmul_wgrad(%x: tensor<16x64x128xf32>, %dy: tensor<16x64x512xf32>) -> tensor<128x512xf32> {
  // CHECK: %{{.*}} = tfm.matmul_wgrad %{{.*}}, %{{.*}} : (tensor<16x64x128xf32>, tensor<16x64x512xf32>) -> tensor<128x512xf32>
  %0 = tfm.matmul_wgrad %x, %dy : (tensor<16x64x128xf32>, tensor<16x64x512xf32>) -> tensor<128x512xf32>
  return %0 : tensor<128x512xf32>
}

// CHECK-LABEL: func @elementwise
func.func @elementwise(%x: tensor<16x64x128xf32>, %b: tensor<128xf32>, %p: tensor<64x128xf32>, %s: tensor<f32>) -> (tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<16x64x128xf32>) {
  // CHECK: %{{.*}} = tfm.add %{{.*}}, %{{.*}} : (tensor<16x64x128xf32>, tensor<128xf32>) -> tensor<16x64x128xf32>
  %0 = tfm.add %x, %b : (tensor<16x64x128xf32>, tensor<128xf32>) -> tensor<16x64x128xf32>
  // CHECK: %{{.*}} = tfm.sub %{{.*}}, %{{.*}} : (tensor<16x64x128xf32>, tensor<16x64x128xf32>) -> tensor<16x64x128xf32>
  %1 = tfm.sub %x, %x : (tensor<16x64x128xf32>, tensor<16x64x128xf32>) -> tensor<16x64x128xf32>
  // CHECK: %{{.*}} = tfm.mul %{{.*}}, %{{.*}} : (tensor<16x64x128xf32>, tensor<f32>) -> tensor<16x64x128xf32>
  %2 = tfm.mul %x, %s : (tensor<16x64x128xf32>, tensor<f32>) -> tensor<16x64x128xf32>
  // CHECK: %{{.*}} = tfm.add %{{.*}}, %{{.*}} : (tensor<16x64x128xf32>, tensor<64x128xf32>) -> tensor<16x64x128xf32>
  %3 = tfm.add %x, %p : (tensor<16x64x128xf32>, tensor<64x128xf32>) -> tensor<16x64x128xf32>
  // CHECK: %{{.*}} = tfm.scale %{{.*}} {factor = 5.000000e-01 : f64} : (tensor<16x64x128xf32>) -> tensor<16x64x128xf32>
  %4 = tfm.scale %x {factor = 5.000000e-01 : f64} : (tensor<16x64x128xf32>) -> tensor<16x64x128xf32>
  return %0, %1, %2, %3, %4 : tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<16x64x128xf32>
}

// CHECK-LABEL: func @reduce_sum
func.func @reduce_sum(%dy: tensor<16x64x128xf32>) -> (tensor<128xf32>, tensor<16x128xf32>, tensor<16x64x128xf32>) {
  // CHECK: %{{.*}} = tfm.reduce_sum %{{.*}} {dims = array<i64: 0, 1>} : (tensor<16x64x128xf32>) -> tensor<128xf32>
  %0 = tfm.reduce_sum %dy {dims = array<i64: 0, 1>} : (tensor<16x64x128xf32>) -> tensor<128xf32>
  // CHECK: %{{.*}} = tfm.reduce_sum %{{.*}} {dims = array<i64: 1>} : (tensor<16x64x128xf32>) -> tensor<16x128xf32>
  %1 = tfm.reduce_sum %dy {dims = array<i64: 1>} : (tensor<16x64x128xf32>) -> tensor<16x128xf32>
  // CHECK: %{{.*}} = tfm.reduce_sum %{{.*}} {dims = array<i64>} : (tensor<16x64x128xf32>) -> tensor<16x64x128xf32>
  %2 = tfm.reduce_sum %dy {dims = array<i64>} : (tensor<16x64x128xf32>) -> tensor<16x64x128xf32>
  return %0, %1, %2 : tensor<128xf32>, tensor<16x128xf32>, tensor<16x64x128xf32>
}

// CHECK-LABEL: func @broadcast
func.func @broadcast(%b: tensor<128xf32>, %p: tensor<16x128xf32>) -> (tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<16x128xf32>) {
  // CHECK: %{{.*}} = tfm.broadcast %{{.*}} {dims = array<i64: 0, 1>} : (tensor<128xf32>) -> tensor<16x64x128xf32>
  %0 = tfm.broadcast %b {dims = array<i64: 0, 1>} : (tensor<128xf32>) -> tensor<16x64x128xf32>
  // CHECK: %{{.*}} = tfm.broadcast %{{.*}} {dims = array<i64: 1>} : (tensor<16x128xf32>) -> tensor<16x64x128xf32>
  %1 = tfm.broadcast %p {dims = array<i64: 1>} : (tensor<16x128xf32>) -> tensor<16x64x128xf32>
  // CHECK: %{{.*}} = tfm.broadcast %{{.*}} {dims = array<i64>} : (tensor<16x128xf32>) -> tensor<16x128xf32>
  %2 = tfm.broadcast %p {dims = array<i64>} : (tensor<16x128xf32>) -> tensor<16x128xf32>
  return %0, %1, %2 : tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<16x128xf32>
}

// CHECK-LABEL: func @cast
func.func @cast(%w: tensor<128x512xf32>, %l: tensor<4x32x128xbf16>, %d: tensor<8xf64>) -> (tensor<128x512xbf16>, tensor<4x32x128xf32>, tensor<8xf16>, tensor<128x512xf32>) {
  // CHECK: %{{.*}} = tfm.cast %{{.*}} : (tensor<128x512xf32>) -> tensor<128x512xbf16>
  %0 = tfm.cast %w : (tensor<128x512xf32>) -> tensor<128x512xbf16>
  // CHECK: %{{.*}} = tfm.cast %{{.*}} : (tensor<4x32x128xbf16>) -> tensor<4x32x128xf32>
  %1 = tfm.cast %l : (tensor<4x32x128xbf16>) -> tensor<4x32x128xf32>
  // CHECK: %{{.*}} = tfm.cast %{{.*}} : (tensor<8xf64>) -> tensor<8xf16>
  %2 = tfm.cast %d : (tensor<8xf64>) -> tensor<8xf16>
  // The identity is allowed.
  // CHECK: %{{.*}} = tfm.cast %{{.*}} : (tensor<128x512xf32>) -> tensor<128x512xf32>
  %3 = tfm.cast %w : (tensor<128x512xf32>) -> tensor<128x512xf32>
  return %0, %1, %2, %3 : tensor<128x512xbf16>, tensor<4x32x128xf32>, tensor<8xf16>, tensor<128x512xf32>
}

// CHECK-LABEL: func @embeddings
func.func @embeddings(%ids: tensor<16x64xi32>, %ids64: tensor<16x64xi64>, %wte: tensor<65x128xf32>, %wpe: tensor<256x128xf32>, %dh: tensor<16x64x128xf32>, %dpos: tensor<64x128xf32>) -> (tensor<16x64x128xf32>, tensor<65x128xf32>, tensor<64x128xf32>, tensor<256x128xf32>, tensor<256x128xf32>) {
  // CHECK: %{{.*}} = tfm.embedding %{{.*}}, %{{.*}} : (tensor<16x64xi32>, tensor<65x128xf32>) -> tensor<16x64x128xf32>
  %0 = tfm.embedding %ids, %wte : (tensor<16x64xi32>, tensor<65x128xf32>) -> tensor<16x64x128xf32>
  // CHECK: %{{.*}} = tfm.embedding_grad %{{.*}}, %{{.*}} {num_embeddings = 65 : i64} : (tensor<16x64xi64>, tensor<16x64x128xf32>) -> tensor<65x128xf32>
  %1 = tfm.embedding_grad %ids64, %dh {num_embeddings = 65 : i64} : (tensor<16x64xi64>, tensor<16x64x128xf32>) -> tensor<65x128xf32>
  // CHECK: %{{.*}} = tfm.microbatch %{{.*}} {count = 4 : i64, index = 3 : i64} : (tensor<16x64xi32>) -> tensor<4x64xi32>
  %mb = tfm.microbatch %ids {index = 3 : i64, count = 4 : i64} : (tensor<16x64xi32>) -> tensor<4x64xi32>
  // CHECK: %{{.*}} = tfm.position_embedding %{{.*}} {seq_len = 64 : i64} : (tensor<256x128xf32>) -> tensor<64x128xf32>
  %2 = tfm.position_embedding %wpe {seq_len = 64 : i64} : (tensor<256x128xf32>) -> tensor<64x128xf32>
  // CHECK: %{{.*}} = tfm.position_embedding_grad %{{.*}} {num_positions = 256 : i64} : (tensor<16x64x128xf32>) -> tensor<256x128xf32>
  %3 = tfm.position_embedding_grad %dh {num_positions = 256 : i64} : (tensor<16x64x128xf32>) -> tensor<256x128xf32>
  // CHECK: %{{.*}} = tfm.position_embedding_grad %{{.*}} {num_positions = 256 : i64} : (tensor<64x128xf32>) -> tensor<256x128xf32>
  %4 = tfm.position_embedding_grad %dpos {num_positions = 256 : i64} : (tensor<64x128xf32>) -> tensor<256x128xf32>
  return %0, %1, %2, %3, %4 : tensor<16x64x128xf32>, tensor<65x128xf32>, tensor<64x128xf32>, tensor<256x128xf32>, tensor<256x128xf32>
}

// CHECK-LABEL: func @norms
func.func @norms(%x: tensor<16x64x128xf32>, %dy: tensor<16x64x128xf32>, %g: tensor<128xf32>, %b: tensor<128xf32>) -> (tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<128xf32>) {
  // CHECK: %{{.*}} = tfm.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64} : (tensor<16x64x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<16x64x128xf32>
  %0 = tfm.layer_norm %x, %g, %b {epsilon = 1.000000e-05 : f64} : (tensor<16x64x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<16x64x128xf32>
  // CHECK: %{{.*}} = tfm.layer_norm %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64} : (tensor<16x64x128xf32>, tensor<128xf32>) -> tensor<16x64x128xf32>
  %1 = tfm.layer_norm %x, %g {epsilon = 1.000000e-05 : f64} : (tensor<16x64x128xf32>, tensor<128xf32>) -> tensor<16x64x128xf32>
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}} = tfm.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64} : (tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<128xf32>) -> (tensor<16x64x128xf32>, tensor<128xf32>, tensor<128xf32>)
  %2:3 = tfm.layer_norm_grad %dy, %x, %g {epsilon = 1.000000e-05 : f64} : (tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<128xf32>) -> (tensor<16x64x128xf32>, tensor<128xf32>, tensor<128xf32>)
  // CHECK: %{{.*}} = tfm.rms_norm %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64} : (tensor<16x64x128xf32>, tensor<128xf32>) -> tensor<16x64x128xf32>
  %3 = tfm.rms_norm %x, %g {epsilon = 1.000000e-05 : f64} : (tensor<16x64x128xf32>, tensor<128xf32>) -> tensor<16x64x128xf32>
  // CHECK: %{{.*}}, %{{.*}} = tfm.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64} : (tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<128xf32>) -> (tensor<16x64x128xf32>, tensor<128xf32>)
  %4:2 = tfm.rms_norm_grad %dy, %x, %g {epsilon = 1.000000e-05 : f64} : (tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<128xf32>) -> (tensor<16x64x128xf32>, tensor<128xf32>)
  return %0, %1, %2#0, %2#1, %2#2, %3, %4#0, %4#1 : tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<128xf32>
}

// CHECK-LABEL: func @activations
func.func @activations(%x: tensor<16x64x512xbf16>, %dy: tensor<16x64x512xbf16>) -> (tensor<16x64x512xbf16>, tensor<16x64x512xbf16>, tensor<16x64x512xbf16>, tensor<16x64x512xbf16>, tensor<16x64x512xbf16>, tensor<16x64x512xbf16>, tensor<16x64x512xbf16>, tensor<16x64x512xbf16>, tensor<16x64x512xbf16>) {
  // CHECK: %{{.*}} = tfm.gelu %{{.*}} : (tensor<16x64x512xbf16>) -> tensor<16x64x512xbf16>
  %0 = tfm.gelu %x : (tensor<16x64x512xbf16>) -> tensor<16x64x512xbf16>
  // CHECK: %{{.*}} = tfm.gelu %{{.*}} {tanh_approx} : (tensor<16x64x512xbf16>) -> tensor<16x64x512xbf16>
  %1 = tfm.gelu %x {tanh_approx} : (tensor<16x64x512xbf16>) -> tensor<16x64x512xbf16>
  // CHECK: %{{.*}} = tfm.gelu_grad %{{.*}}, %{{.*}} : (tensor<16x64x512xbf16>, tensor<16x64x512xbf16>) -> tensor<16x64x512xbf16>
  %2 = tfm.gelu_grad %dy, %x : (tensor<16x64x512xbf16>, tensor<16x64x512xbf16>) -> tensor<16x64x512xbf16>
  // CHECK: %{{.*}} = tfm.gelu_grad %{{.*}}, %{{.*}} {tanh_approx} : (tensor<16x64x512xbf16>, tensor<16x64x512xbf16>) -> tensor<16x64x512xbf16>
  %3 = tfm.gelu_grad %dy, %x {tanh_approx} : (tensor<16x64x512xbf16>, tensor<16x64x512xbf16>) -> tensor<16x64x512xbf16>
  // CHECK: %{{.*}} = tfm.silu %{{.*}} : (tensor<16x64x512xbf16>) -> tensor<16x64x512xbf16>
  %4 = tfm.silu %x : (tensor<16x64x512xbf16>) -> tensor<16x64x512xbf16>
  // CHECK: %{{.*}} = tfm.silu_grad %{{.*}}, %{{.*}} : (tensor<16x64x512xbf16>, tensor<16x64x512xbf16>) -> tensor<16x64x512xbf16>
  %5 = tfm.silu_grad %dy, %x : (tensor<16x64x512xbf16>, tensor<16x64x512xbf16>) -> tensor<16x64x512xbf16>
  // CHECK: %{{.*}} = tfm.swiglu %{{.*}}, %{{.*}} : (tensor<16x64x512xbf16>, tensor<16x64x512xbf16>) -> tensor<16x64x512xbf16>
  %6 = tfm.swiglu %x, %dy : (tensor<16x64x512xbf16>, tensor<16x64x512xbf16>) -> tensor<16x64x512xbf16>
  // CHECK: %{{.*}}, %{{.*}} = tfm.swiglu_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<16x64x512xbf16>, tensor<16x64x512xbf16>, tensor<16x64x512xbf16>) -> (tensor<16x64x512xbf16>, tensor<16x64x512xbf16>)
  %7:2 = tfm.swiglu_grad %dy, %x, %x : (tensor<16x64x512xbf16>, tensor<16x64x512xbf16>, tensor<16x64x512xbf16>) -> (tensor<16x64x512xbf16>, tensor<16x64x512xbf16>)
  return %0, %1, %2, %3, %4, %5, %6, %7#0, %7#1 : tensor<16x64x512xbf16>, tensor<16x64x512xbf16>, tensor<16x64x512xbf16>, tensor<16x64x512xbf16>, tensor<16x64x512xbf16>, tensor<16x64x512xbf16>, tensor<16x64x512xbf16>, tensor<16x64x512xbf16>, tensor<16x64x512xbf16>
}

// CHECK-LABEL: func @positional
func.func @positional(%x: tensor<16x64x8x32xf32>, %h: tensor<16x64x256xf32>) -> (tensor<16x64x8x32xf32>, tensor<16x64x8x32xf32>, tensor<16x64x8x32xf32>, tensor<16x64x256xf32>) {
  // CHECK: %{{.*}} = tfm.rope %{{.*}} {theta = 1.000000e+04 : f64} : (tensor<16x64x8x32xf32>) -> tensor<16x64x8x32xf32>
  %0 = tfm.rope %x {theta = 1.000000e+04 : f64} : (tensor<16x64x8x32xf32>) -> tensor<16x64x8x32xf32>
  // CHECK: %{{.*}} = tfm.rope_grad %{{.*}} {theta = 1.000000e+04 : f64} : (tensor<16x64x8x32xf32>) -> tensor<16x64x8x32xf32>
  %1 = tfm.rope_grad %0 {theta = 1.000000e+04 : f64} : (tensor<16x64x8x32xf32>) -> tensor<16x64x8x32xf32>
  // CHECK: %{{.*}} = tfm.reshape %{{.*}} : (tensor<16x64x256xf32>) -> tensor<16x64x8x32xf32>
  %2 = tfm.reshape %h : (tensor<16x64x256xf32>) -> tensor<16x64x8x32xf32>
  // CHECK: %{{.*}} = tfm.reshape %{{.*}} : (tensor<16x64x8x32xf32>) -> tensor<16x64x256xf32>
  %3 = tfm.reshape %x : (tensor<16x64x8x32xf32>) -> tensor<16x64x256xf32>
  return %0, %1, %2, %3 : tensor<16x64x8x32xf32>, tensor<16x64x8x32xf32>, tensor<16x64x8x32xf32>, tensor<16x64x256xf32>
}

// CHECK-LABEL: func @dropout
func.func @dropout(%x: tensor<16x64x128xf32>, %step: tensor<i64>, %layer: tensor<i64>) -> (tensor<16x64x128xf32>, tensor<16x64x128xf32>) {
  // CHECK: %{{.*}} = tfm.dropout %{{.*}}, %{{.*}}, %{{.*}} {rate = 1.000000e-01 : f64, site = 0 : i64} : (tensor<16x64x128xf32>, tensor<i64>, tensor<i64>) -> tensor<16x64x128xf32>
  %0 = tfm.dropout %x, %step, %layer {rate = 1.000000e-01 : f64, site = 0 : i64} : (tensor<16x64x128xf32>, tensor<i64>, tensor<i64>) -> tensor<16x64x128xf32>
  // CHECK: %{{.*}} = tfm.dropout_grad %{{.*}}, %{{.*}}, %{{.*}} {rate = 1.000000e-01 : f64, site = 2 : i64} : (tensor<16x64x128xf32>, tensor<i64>, tensor<i64>) -> tensor<16x64x128xf32>
  %1 = tfm.dropout_grad %0, %step, %layer {rate = 1.000000e-01 : f64, site = 2 : i64} : (tensor<16x64x128xf32>, tensor<i64>, tensor<i64>) -> tensor<16x64x128xf32>
  return %0, %1 : tensor<16x64x128xf32>, tensor<16x64x128xf32>
}

// CHECK-LABEL: func @dropout_local
func.func @dropout_local(%x: tensor<8x32x128xf32>, %step: tensor<i64>, %layer: tensor<i64>, %s0: tensor<i64>, %s1: tensor<i64>) -> (tensor<8x32x128xf32>, tensor<8x32x128xf32>) {
  // CHECK: %{{.*}} = tfm.dropout_local %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {global_shape = array<i64: 16, 64, 128>, rate = 1.000000e-01 : f64, shard_dims = array<i64: 0, 1>, site = 0 : i64} : (tensor<8x32x128xf32>, tensor<i64>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<8x32x128xf32>
  %0 = tfm.dropout_local %x, %step, %layer, %s0, %s1 {global_shape = array<i64: 16, 64, 128>, rate = 1.000000e-01 : f64, shard_dims = array<i64: 0, 1>, site = 0 : i64} : (tensor<8x32x128xf32>, tensor<i64>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<8x32x128xf32>
  // CHECK: %{{.*}} = tfm.dropout_local_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {global_shape = array<i64: 8, 32, 512>, rate = 1.000000e-01 : f64, shard_dims = array<i64: 2>, site = 2 : i64} : (tensor<8x32x128xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<8x32x128xf32>
  %1 = tfm.dropout_local_grad %0, %step, %layer, %s1 {global_shape = array<i64: 8, 32, 512>, rate = 1.000000e-01 : f64, shard_dims = array<i64: 2>, site = 2 : i64} : (tensor<8x32x128xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<8x32x128xf32>
  return %0, %1 : tensor<8x32x128xf32>, tensor<8x32x128xf32>
}

// CHECK-LABEL: func @attention
func.func @attention(%q: tensor<16x64x8x32xf32>, %k: tensor<16x64x2x32xf32>, %v: tensor<16x64x2x32xf32>, %qx: tensor<16x32x8x32xf32>) -> (tensor<16x64x8x32xf32>, tensor<16x8x64xf32>, tensor<16x64x8x32xf32>, tensor<16x64x2x32xf32>, tensor<16x64x2x32xf32>, tensor<16x32x8x32xf32>, tensor<16x8x32xf32>) {
  // CHECK: %{{.*}}, %{{.*}} = tfm.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 1.250000e-01 : f64} : (tensor<16x64x8x32xf32>, tensor<16x64x2x32xf32>, tensor<16x64x2x32xf32>) -> (tensor<16x64x8x32xf32>, tensor<16x8x64xf32>)
  %out, %lse = tfm.attention %q, %k, %v {causal, scale = 1.250000e-01 : f64} : (tensor<16x64x8x32xf32>, tensor<16x64x2x32xf32>, tensor<16x64x2x32xf32>) -> (tensor<16x64x8x32xf32>, tensor<16x8x64xf32>)
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}} = tfm.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 1.250000e-01 : f64} : (tensor<16x64x8x32xf32>, tensor<16x64x8x32xf32>, tensor<16x64x2x32xf32>, tensor<16x64x2x32xf32>, tensor<16x64x8x32xf32>, tensor<16x8x64xf32>) -> (tensor<16x64x8x32xf32>, tensor<16x64x2x32xf32>, tensor<16x64x2x32xf32>)
  %dq, %dk, %dv = tfm.attention_grad %out, %q, %k, %v, %out, %lse {causal, scale = 1.250000e-01 : f64} : (tensor<16x64x8x32xf32>, tensor<16x64x8x32xf32>, tensor<16x64x2x32xf32>, tensor<16x64x2x32xf32>, tensor<16x64x8x32xf32>, tensor<16x8x64xf32>) -> (tensor<16x64x8x32xf32>, tensor<16x64x2x32xf32>, tensor<16x64x2x32xf32>)
  // CHECK: %{{.*}}, %{{.*}} = tfm.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f64} : (tensor<16x32x8x32xf32>, tensor<16x64x2x32xf32>, tensor<16x64x2x32xf32>) -> (tensor<16x32x8x32xf32>, tensor<16x8x32xf32>)
  %xo, %xl = tfm.attention %qx, %k, %v {scale = 1.250000e-01 : f64} : (tensor<16x32x8x32xf32>, tensor<16x64x2x32xf32>, tensor<16x64x2x32xf32>) -> (tensor<16x32x8x32xf32>, tensor<16x8x32xf32>)
  return %out, %lse, %dq, %dk, %dv, %xo, %xl : tensor<16x64x8x32xf32>, tensor<16x8x64xf32>, tensor<16x64x8x32xf32>, tensor<16x64x2x32xf32>, tensor<16x64x2x32xf32>, tensor<16x32x8x32xf32>, tensor<16x8x32xf32>
}

// CHECK-LABEL: func @loss
func.func @loss(%logits: tensor<16x64x72xf32>, %labels: tensor<16x64xi32>, %flat: tensor<1024x65xf32>, %flat_labels: tensor<1024xi64>) -> (tensor<f32>, tensor<16x64x72xf32>, tensor<f32>, tensor<1024x65xf32>) {
  // CHECK: %{{.*}} = tfm.cross_entropy %{{.*}}, %{{.*}} {vocab_size = 65 : i64} : (tensor<16x64x72xf32>, tensor<16x64xi32>) -> tensor<f32>
  %0 = tfm.cross_entropy %logits, %labels {vocab_size = 65 : i64} : (tensor<16x64x72xf32>, tensor<16x64xi32>) -> tensor<f32>
  // CHECK: %{{.*}} = tfm.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} {vocab_size = 65 : i64} : (tensor<f32>, tensor<16x64x72xf32>, tensor<16x64xi32>) -> tensor<16x64x72xf32>
  %1 = tfm.cross_entropy_grad %0, %logits, %labels {vocab_size = 65 : i64} : (tensor<f32>, tensor<16x64x72xf32>, tensor<16x64xi32>) -> tensor<16x64x72xf32>
  // CHECK: %{{.*}} = tfm.cross_entropy %{{.*}}, %{{.*}} : (tensor<1024x65xf32>, tensor<1024xi64>) -> tensor<f32>
  %2 = tfm.cross_entropy %flat, %flat_labels : (tensor<1024x65xf32>, tensor<1024xi64>) -> tensor<f32>
  // CHECK: %{{.*}} = tfm.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<1024x65xf32>, tensor<1024xi64>) -> tensor<1024x65xf32>
  %3 = tfm.cross_entropy_grad %2, %flat, %flat_labels : (tensor<f32>, tensor<1024x65xf32>, tensor<1024xi64>) -> tensor<1024x65xf32>
  return %0, %1, %2, %3 : tensor<f32>, tensor<16x64x72xf32>, tensor<f32>, tensor<1024x65xf32>
}

// CHECK-LABEL: func @moe
func.func @moe(%logits: tensor<16x64x8xf32>, %x: tensor<16x64x128xf32>, %dloss: tensor<f32>) -> (tensor<16x64x2xf32>, tensor<16x64x1xf32>, tensor<16x64x8xf32>, tensor<f32>, tensor<16x64x8xf32>, tensor<8x16x40x128xf32>, tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<8x16x40x128xf32>, tensor<16x64x2xf32>) {
  // CHECK: %{{.*}}, %{{.*}} = tfm.moe_router %{{.*}} {renormalize, top_k = 2 : i64} : (tensor<16x64x8xf32>) -> (tensor<16x64x2xf32>, tensor<16x64x2xi32>)
  %gates, %ids = tfm.moe_router %logits {renormalize, top_k = 2 : i64} : (tensor<16x64x8xf32>) -> (tensor<16x64x2xf32>, tensor<16x64x2xi32>)
  // CHECK: %{{.*}}, %{{.*}} = tfm.moe_router %{{.*}} {top_k = 1 : i64} : (tensor<16x64x8xf32>) -> (tensor<16x64x1xf32>, tensor<16x64x1xi32>)
  %g1, %i1 = tfm.moe_router %logits {top_k = 1 : i64} : (tensor<16x64x8xf32>) -> (tensor<16x64x1xf32>, tensor<16x64x1xi32>)
  // CHECK: %{{.*}} = tfm.moe_router_grad %{{.*}}, %{{.*}}, %{{.*}} {renormalize} : (tensor<16x64x2xf32>, tensor<16x64x8xf32>, tensor<16x64x2xi32>) -> tensor<16x64x8xf32>
  %0 = tfm.moe_router_grad %gates, %logits, %ids {renormalize} : (tensor<16x64x2xf32>, tensor<16x64x8xf32>, tensor<16x64x2xi32>) -> tensor<16x64x8xf32>
  // CHECK: %{{.*}} = tfm.moe_aux_loss %{{.*}}, %{{.*}} : (tensor<16x64x8xf32>, tensor<16x64x2xi32>) -> tensor<f32>
  %1 = tfm.moe_aux_loss %logits, %ids : (tensor<16x64x8xf32>, tensor<16x64x2xi32>) -> tensor<f32>
  // CHECK: %{{.*}} = tfm.moe_aux_loss_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<16x64x8xf32>, tensor<16x64x2xi32>) -> tensor<16x64x8xf32>
  %2 = tfm.moe_aux_loss_grad %dloss, %logits, %ids : (tensor<f32>, tensor<16x64x8xf32>, tensor<16x64x2xi32>) -> tensor<16x64x8xf32>
  // CHECK: %{{.*}} = tfm.moe_dispatch %{{.*}}, %{{.*}} {capacity = 40 : i64, num_experts = 8 : i64} : (tensor<16x64x128xf32>, tensor<16x64x2xi32>) -> tensor<8x16x40x128xf32>
  %3 = tfm.moe_dispatch %x, %ids {capacity = 40 : i64, num_experts = 8 : i64} : (tensor<16x64x128xf32>, tensor<16x64x2xi32>) -> tensor<8x16x40x128xf32>
  // CHECK: %{{.*}} = tfm.moe_dispatch_grad %{{.*}}, %{{.*}} {capacity = 40 : i64} : (tensor<8x16x40x128xf32>, tensor<16x64x2xi32>) -> tensor<16x64x128xf32>
  %4 = tfm.moe_dispatch_grad %3, %ids {capacity = 40 : i64} : (tensor<8x16x40x128xf32>, tensor<16x64x2xi32>) -> tensor<16x64x128xf32>
  // CHECK: %{{.*}} = tfm.moe_combine %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8x16x40x128xf32>, tensor<16x64x2xf32>, tensor<16x64x2xi32>) -> tensor<16x64x128xf32>
  %5 = tfm.moe_combine %3, %gates, %ids : (tensor<8x16x40x128xf32>, tensor<16x64x2xf32>, tensor<16x64x2xi32>) -> tensor<16x64x128xf32>
  // CHECK: %{{.*}}, %{{.*}} = tfm.moe_combine_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<16x64x128xf32>, tensor<8x16x40x128xf32>, tensor<16x64x2xf32>, tensor<16x64x2xi32>) -> (tensor<8x16x40x128xf32>, tensor<16x64x2xf32>)
  %6:2 = tfm.moe_combine_grad %5, %3, %gates, %ids : (tensor<16x64x128xf32>, tensor<8x16x40x128xf32>, tensor<16x64x2xf32>, tensor<16x64x2xi32>) -> (tensor<8x16x40x128xf32>, tensor<16x64x2xf32>)
  return %gates, %g1, %0, %1, %2, %3, %4, %5, %6#0, %6#1 : tensor<16x64x2xf32>, tensor<16x64x1xf32>, tensor<16x64x8xf32>, tensor<f32>, tensor<16x64x8xf32>, tensor<8x16x40x128xf32>, tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<8x16x40x128xf32>, tensor<16x64x2xf32>
}

// CHECK-LABEL: func @optimizer
func.func @optimizer(%p: tensor<128x512xf32>, %g: tensor<128x512xbf16>, %m: tensor<128x512xf32>, %v: tensor<128x512xf32>, %b: tensor<512xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> (tensor<f32>, tensor<f32>, tensor<128x512xf32>, tensor<128x512xf32>, tensor<128x512xf32>, tensor<f32>) {
  // CHECK: %{{.*}} = tfm.sum_squares %{{.*}}, %{{.*}}, %{{.*}} : (tensor<128x512xf32>, tensor<128x512xbf16>, tensor<512xf32>) -> tensor<f32>
  %ss = tfm.sum_squares %p, %g, %b : (tensor<128x512xf32>, tensor<128x512xbf16>, tensor<512xf32>) -> tensor<f32>
  // CHECK: %{{.*}} = tfm.sum_squares %{{.*}} : (tensor<512xf32>) -> tensor<f32>
  %ss1 = tfm.sum_squares %b : (tensor<512xf32>) -> tensor<f32>
  // CHECK: %{{.*}}, %{{.*}} = tfm.clip_coef %{{.*}} {max_norm = 1.000000e+00 : f64} : (tensor<f32>) -> (tensor<f32>, tensor<f32>)
  %coef, %norm = tfm.clip_coef %ss {max_norm = 1.000000e+00 : f64} : (tensor<f32>) -> (tensor<f32>, tensor<f32>)
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}} = tfm.adamw %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, epsilon = 1.000000e-08 : f64, weight_decay = 1.000000e-01 : f64} : (tensor<128x512xf32>, tensor<128x512xbf16>, tensor<128x512xf32>, tensor<128x512xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<128x512xf32>, tensor<128x512xf32>, tensor<128x512xf32>)
  %p1, %m1, %v1 = tfm.adamw %p, %g, %m, %v, %lr, %step, %coef {beta1 = 9.000000e-01 : f64, beta2 = 9.500000e-01 : f64, epsilon = 1.000000e-08 : f64, weight_decay = 1.000000e-01 : f64} : (tensor<128x512xf32>, tensor<128x512xbf16>, tensor<128x512xf32>, tensor<128x512xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<128x512xf32>, tensor<128x512xf32>, tensor<128x512xf32>)
  return %coef, %norm, %p1, %m1, %v1, %ss1 : tensor<f32>, tensor<f32>, tensor<128x512xf32>, tensor<128x512xf32>, tensor<128x512xf32>, tensor<f32>
}

// CHECK-LABEL: func @vocab_parallel
func.func @vocab_parallel(%ids: tensor<8x64xi32>, %table: tensor<32x128xf32>, %shard: tensor<i64>, %dh: tensor<8x64x128xf32>, %logits: tensor<8x64x36xf32>, %labels: tensor<8x64xi32>, %dloss: tensor<f32>) -> (tensor<8x64x128xf32>, tensor<32x128xf32>, tensor<f32>, tensor<8x64x36xf32>) {
  // CHECK: tfm.vocab_embedding %{{.*}}, %{{.*}}, %{{.*}} : (tensor<8x64xi32>, tensor<32x128xf32>, tensor<i64>) -> tensor<8x64x128xf32>
  %0 = tfm.vocab_embedding %ids, %table, %shard : (tensor<8x64xi32>, tensor<32x128xf32>, tensor<i64>) -> tensor<8x64x128xf32>
  // CHECK: tfm.vocab_embedding_grad %{{.*}}, %{{.*}}, %{{.*}} {num_embeddings = 32 : i64} : (tensor<8x64xi32>, tensor<8x64x128xf32>, tensor<i64>) -> tensor<32x128xf32>
  %1 = tfm.vocab_embedding_grad %ids, %dh, %shard {num_embeddings = 32 : i64} : (tensor<8x64xi32>, tensor<8x64x128xf32>, tensor<i64>) -> tensor<32x128xf32>
  // CHECK: tfm.vocab_ce_max %{{.*}}, %{{.*}} {vocab_size = 65 : i64} : (tensor<8x64x36xf32>, tensor<i64>) -> tensor<8x64xf32>
  %mx = tfm.vocab_ce_max %logits, %shard {vocab_size = 65 : i64} : (tensor<8x64x36xf32>, tensor<i64>) -> tensor<8x64xf32>
  // CHECK: tfm.vocab_ce_stats %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {vocab_size = 65 : i64} : (tensor<8x64x36xf32>, tensor<8x64xi32>, tensor<8x64xf32>, tensor<i64>) -> tensor<8x64x2xf32>
  %st = tfm.vocab_ce_stats %logits, %labels, %mx, %shard {vocab_size = 65 : i64} : (tensor<8x64x36xf32>, tensor<8x64xi32>, tensor<8x64xf32>, tensor<i64>) -> tensor<8x64x2xf32>
  // CHECK: tfm.vocab_ce_loss %{{.*}}, %{{.*}} {num_tokens = 1024 : i64} : (tensor<8x64x2xf32>, tensor<8x64xf32>) -> tensor<f32>
  %loss = tfm.vocab_ce_loss %st, %mx {num_tokens = 1024 : i64} : (tensor<8x64x2xf32>, tensor<8x64xf32>) -> tensor<f32>
  // CHECK: tfm.vocab_ce_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {num_tokens = 1024 : i64, vocab_size = 65 : i64} : (tensor<f32>, tensor<8x64x36xf32>, tensor<8x64xi32>, tensor<8x64xf32>, tensor<8x64x2xf32>, tensor<i64>) -> tensor<8x64x36xf32>
  %dl = tfm.vocab_ce_grad %dloss, %logits, %labels, %mx, %st, %shard {num_tokens = 1024 : i64, vocab_size = 65 : i64} : (tensor<f32>, tensor<8x64x36xf32>, tensor<8x64xi32>, tensor<8x64xf32>, tensor<8x64x2xf32>, tensor<i64>) -> tensor<8x64x36xf32>
  return %0, %1, %loss, %dl : tensor<8x64x128xf32>, tensor<32x128xf32>, tensor<f32>, tensor<8x64x36xf32>
}

// Context parallelism's local ops (ring attention, rope on a sequence chunk).
// CHECK-LABEL: func @ring_attention
func.func @ring_attention(%q: tensor<4x8x4x16xf32>, %k: tensor<4x8x2x16xf32>, %v: tensor<4x8x2x16xf32>, %chunk: tensor<i64>) -> (tensor<4x8x4x16xf32>, tensor<4x4x8xf32>, tensor<4x8x4x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x4x16xf32>, tensor<4x8x2x16xf32>) {
  // CHECK: %{{.*}}, %{{.*}} = tfm.attention_block %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal, kv_step = 1 : i64, num_chunks = 2 : i64, scale = 2.500000e-01 : f64} : (tensor<4x8x4x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32>, tensor<i64>) -> (tensor<4x8x4x16xf32>, tensor<4x4x8xf32>)
  %o1, %l1 = tfm.attention_block %q, %k, %v, %chunk {causal, kv_step = 1 : i64, num_chunks = 2 : i64, scale = 0.25 : f64} : (tensor<4x8x4x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32>, tensor<i64>) -> (tensor<4x8x4x16xf32>, tensor<4x4x8xf32>)
  %o0, %l0 = tfm.attention_block %q, %k, %v, %chunk {causal, kv_step = 0 : i64, num_chunks = 2 : i64, scale = 0.25 : f64} : (tensor<4x8x4x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32>, tensor<i64>) -> (tensor<4x8x4x16xf32>, tensor<4x4x8xf32>)
  // CHECK: tfm.attention_merge %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x8x4x16xf32>, tensor<4x4x8xf32>, tensor<4x8x4x16xf32>, tensor<4x4x8xf32>) -> (tensor<4x8x4x16xf32>, tensor<4x4x8xf32>)
  %o, %l = tfm.attention_merge %o0, %l0, %o1, %l1 : (tensor<4x8x4x16xf32>, tensor<4x4x8xf32>, tensor<4x8x4x16xf32>, tensor<4x4x8xf32>) -> (tensor<4x8x4x16xf32>, tensor<4x4x8xf32>)
  // CHECK: tfm.attention_block_grad {{.*}} {causal, kv_step = 1 : i64, num_chunks = 2 : i64, scale = 2.500000e-01 : f64} : (tensor<4x8x4x16xf32>, tensor<4x8x4x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x4x16xf32>, tensor<4x4x8xf32>, tensor<i64>) -> (tensor<4x8x4x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32>)
  %dq, %dk, %dv = tfm.attention_block_grad %o, %q, %k, %v, %o, %l, %chunk {causal, kv_step = 1 : i64, num_chunks = 2 : i64, scale = 0.25 : f64} : (tensor<4x8x4x16xf32>, tensor<4x8x4x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x4x16xf32>, tensor<4x4x8xf32>, tensor<i64>) -> (tensor<4x8x4x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32>)
  // CHECK: tfm.rope_local %{{.*}}, %{{.*}} {seq_len = 16 : i64, theta = 1.000000e+04 : f64} : (tensor<4x8x4x16xf32>, tensor<i64>) -> tensor<4x8x4x16xf32>
  %rq = tfm.rope_local %q, %chunk {seq_len = 16 : i64, theta = 10000.0 : f64} : (tensor<4x8x4x16xf32>, tensor<i64>) -> tensor<4x8x4x16xf32>
  // CHECK: tfm.rope_local_grad %{{.*}}, %{{.*}} {seq_len = 16 : i64, theta = 1.000000e+04 : f64} : (tensor<4x8x2x16xf32>, tensor<i64>) -> tensor<4x8x2x16xf32>
  %rk = tfm.rope_local_grad %k, %chunk {seq_len = 16 : i64, theta = 10000.0 : f64} : (tensor<4x8x2x16xf32>, tensor<i64>) -> tensor<4x8x2x16xf32>
  return %o, %l, %dq, %dk, %dv, %rq, %rk : tensor<4x8x4x16xf32>, tensor<4x4x8xf32>, tensor<4x8x4x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x4x16xf32>, tensor<4x8x2x16xf32>
}
