// RUN: shard-opt %s -split-input-file -verify-diagnostics

func.func @matmul_contracting(%x: tensor<4x8xf32>, %w: tensor<9x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{contracting dims must match: lhs K = 8, rhs K = 9}}
  %0 = tfm.matmul %x, %w : (tensor<4x8xf32>, tensor<9x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
