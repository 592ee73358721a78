// nanoGPT shakespeare_char CPU recipe: dropout 0.0 -> no step input, no dropout ops.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 12 --seq 64 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: shard-opt %t.mlir | FileCheck %s

// COUNT: nanogpt-shakespeare-char-cpu: 804096 parameters (804.1K)

// CHECK-NOT: tfm.dropout
// CHECK-NOT: "step"
// CHECK-COUNT-4: call @gpt2_block
// CHECK: tfm.matmul {{.*}} {transpose_rhs} : (tensor<12x64x128xf32>, tensor<65x128xf32>) -> tensor<12x64x65xf32>
