// RUN: shard-opt %s | shard-opt | FileCheck %s
// RUN: shard-opt %s --mlir-print-op-generic | shard-opt | FileCheck %s

// CHECK-LABEL: func @matmul
func.func @matmul(%x: tensor<16x64x128xf32>, %w: tensor<128x512xf32>, %wte: tensor<65x128xf32>) -> (tensor<16x64x512xf32>, tensor<16x64x65xf32>) {
  // CHECK: tfm.matmul %{{.*}}, %{{.*}} : (tensor<16x64x128xf32>, tensor<128x512xf32>) -> tensor<16x64x512xf32>
  %0 = tfm.matmul %x, %w : (tensor<16x64x128xf32>, tensor<128x512xf32>) -> tensor<16x64x512xf32>
  // CHECK: tfm.matmul %{{.*}}, %{{.*}} {transpose_rhs}
  %1 = tfm.matmul %x, %wte {transpose_rhs} : (tensor<16x64x128xf32>, tensor<65x128xf32>) -> tensor<16x64x65xf32>
  return %0, %1 : tensor<16x64x512xf32>, tensor<16x64x65xf32>
}

// CHECK-LABEL: func @add
func.func @add(%x: tensor<16x64x128xf32>, %b: tensor<128xf32>) -> tensor<16x64x128xf32> {
  // CHECK: tfm.add %{{.*}}, %{{.*}} : (tensor<16x64x128xf32>, tensor<128xf32>) -> tensor<16x64x128xf32>
  %0 = tfm.add %x, %b : (tensor<16x64x128xf32>, tensor<128xf32>) -> tensor<16x64x128xf32>
  return %0 : tensor<16x64x128xf32>
}
