// RUN: %python -m autoshard.models %configs/models/mixtral-8x22b.json --batch 1 --seq 256 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: shard-opt %t.mlir | FileCheck %s

// COUNT: mixtral-8x22b: 140630071296 parameters (140.63B)

// CHECK-COUNT-1: func.func private @mixtral_block(
// CHECK: func.func @forward(
// CHECK-COUNT-56: call @mixtral_block
// CHECK-NOT: call @
// CHECK: tfm.cross_entropy
