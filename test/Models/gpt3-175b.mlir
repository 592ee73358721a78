// GPT-3 175B (96 layers): the block is emitted once and called 96 times.
// pytest python/tests/test_shard_opt.py times the parse of this IR (< 1 s).
// RUN: %python -m autoshard.models %configs/models/gpt3-175b.json --batch 8 --seq 2048 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: shard-opt %t.mlir | FileCheck %s

// COUNT: gpt3-175b: 174615846912 parameters (174.62B)

// CHECK-COUNT-1: func.func private @gpt2_block(
// CHECK-NOT: func.func private
// CHECK: func.func @forward(
// CHECK-COUNT-96: call @gpt2_block({{.*}}) : (tensor<8x2048x12288xf32>, tensor<i64>,
// CHECK-NOT: call @
// CHECK: tfm.cross_entropy {{.*}} : (tensor<8x2048x51200xf32>, tensor<8x2048xi32>) -> tensor<f32>
