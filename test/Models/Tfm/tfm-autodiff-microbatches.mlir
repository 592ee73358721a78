// Gradient accumulation: with microbatches=2, @forward is one microbatch of
// 2 rows; @train_step and @eval take 4 rows, run the forward (and backward)
// on rows {0, 2} then {1, 3} (tfm.microbatch), add the losses and the
// parameter gradients and scale them by 1/2 before the global norm and
// AdamW. @logits keeps one microbatch. Bad values are errors. With dropout,
// microbatch 1 keys its masks on the layers 4..7 (microbatch 0: 0..3), in
// its forward and its backward alike, so the two microbatches drop
// different elements.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 2 --seq 8 -q -o %t.mlir
// RUN: shard-opt %t.mlir --tfm-autodiff="microbatches=2" | FileCheck %s
// RUN: not shard-opt %t.mlir --tfm-autodiff="microbatches=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 2 --seq 8 --dropout 0.1 -q -o %t.dropout.mlir
// RUN: shard-opt %t.dropout.mlir --tfm-autodiff="microbatches=2" | FileCheck %s --check-prefix=DROPOUT
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 1 --seq 8 --dropout 0.1 -q | not shard-opt --tfm-autodiff="microbatches=20000" 2>&1 | FileCheck %s --check-prefix=KEYS

// CHECK: module attributes {tfm.microbatches = 2 : i64, tfm.model = {{{.*}}batch = 4 : i64
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[TOK:.*]]: tensor<4x8xi32> {tfm.input = "tokens"}, %[[LAB:.*]]: tensor<4x8xi32> {tfm.input = "labels"}
// CHECK: tfm.microbatch %[[TOK]] {count = 2 : i64, index = 0 : i64} : (tensor<4x8xi32>) -> tensor<2x8xi32>
// CHECK: tfm.microbatch %[[LAB]] {count = 2 : i64, index = 0 : i64}
// CHECK: tfm.cross_entropy
// CHECK: tfm.microbatch %[[TOK]] {count = 2 : i64, index = 1 : i64}
// CHECK: tfm.microbatch %[[LAB]] {count = 2 : i64, index = 1 : i64}
// Each sum right after the op that produced microbatch 1's value (the loss
// right after its cross-entropy, a layer's gradients right after its
// backward call), scaled right away.
// CHECK: %[[CE:.*]] = tfm.cross_entropy
// CHECK-NEXT: %[[LSUM:.*]] = tfm.add %{{.*}}, %[[CE]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT: %[[LOSS:.*]] = tfm.scale %[[LSUM]] {factor = 5.000000e-01 : f64}
// CHECK: %[[G:.*]]:9 = call @gpt2_block_bwd
// CHECK-NEXT: %[[S:.*]] = tfm.add %{{.*}}, %[[G]]#
// CHECK-NEXT: tfm.scale %[[S]] {factor = 5.000000e-01 : f64}
// CHECK: tfm.add %{{.*}}, %{{.*}} : (tensor<65x128xf32>, tensor<65x128xf32>)
// CHECK: tfm.scale %{{.*}} {factor = 5.000000e-01 : f64} : (tensor<65x128xf32>)
// CHECK-NEXT: tfm.sum_squares
// CHECK: tfm.adamw
// CHECK: return %[[LOSS]],
// CHECK-LABEL: func.func @eval(
// CHECK-SAME: tensor<4x8xi32> {tfm.input = "tokens"}
// CHECK-COUNT-2: tfm.cross_entropy
// CHECK: tfm.scale %{{.*}} {factor = 5.000000e-01 : f64} : (tensor<f32>)
// CHECK-LABEL: func.func @logits(
// CHECK-SAME: tensor<2x8xi32> {tfm.input = "tokens"}
// CHECK-NOT: tfm.microbatch

// ZERO: error: tfm-autodiff: option microbatches must be in [1, 65536], found 0
// DROPOUT-LABEL: func.func @train_step(
// DROPOUT: tfm.microbatch %{{.*}} {count = 2 : i64, index = 0 : i64}
// DROPOUT: call @gpt2_block_fwd(%{{[^,]*}}, %[[K0:[^,]*]],
// DROPOUT: call @gpt2_block_bwd(%{{[^,]*}}, %{{[^,]*}}, %[[K0]],
// DROPOUT: tfm.microbatch %{{.*}} {count = 2 : i64, index = 1 : i64}
// DROPOUT: %[[E4:.*]] = arith.constant dense<4> : tensor<i64>
// DROPOUT: %[[K4:.*]] = arith.constant dense<4> : tensor<i64>
// DROPOUT: %[[K7:.*]] = arith.constant dense<7> : tensor<i64>
// DROPOUT: tfm.dropout %{{[^,]*}}, %{{[^,]*}}, %[[E4]]
// DROPOUT: call @gpt2_block_fwd(%{{[^,]*}}, %[[K4]],
// DROPOUT: call @gpt2_block_fwd(%{{[^,]*}}, %[[K7]],
// DROPOUT: call @gpt2_block_bwd(%{{[^,]*}}, %{{[^,]*}}, %[[K7]],
// DROPOUT: call @gpt2_block_bwd(%{{[^,]*}}, %{{[^,]*}}, %[[K4]],
// DROPOUT: tfm.sum_squares
// KEYS: error: tfm-autodiff: 20000 microbatches x 4 dropout layer keys exceed the 65536 layer keys of the dropout RNG
