// RUN: %python -m autoshard.models %configs/models/llama3.1-405b.json --batch 1 --seq 256 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: shard-opt %t.mlir | FileCheck %s

// COUNT: llama3.1-405b: 405853388800 parameters (405.85B)

// CHECK-COUNT-1: func.func private @llama_block(
// CHECK: func.func @forward(
// CHECK-COUNT-126: call @llama_block
// CHECK-NOT: call @
// CHECK: tfm.cross_entropy
