// dist-pipeline-split on the nanoGPT CPU model (4 layers) with pp=2, mb=2
// and 1F1B: one program per stage and entry; layers 0-1 (and the
// embedding) on stage 0, layers 2-3 (and the final norm, LM head and loss)
// on stage 1; 1F1B order (stage 0: F0 F1 B0 B1, stage 1: F0 B0 F1 B1); the
// activation of each microbatch sent forward, its gradient (and the LM
// head's share of the tied embedding gradient) back; each layer's gradient
// accumulated over the microbatches right after that layer's last backward
// (so its reduction could start there), not in the tail; then the tails:
// the mean loss to stage 0, the summed embedding gradient to stage 1 (both
// hold and update the tied embedding), one all-reduce over pp of the
// partial squared norms; dist-verify-comm accepts the result.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 2 --seq 8 --vocab-multiple 8 -q -o %t.mlir
// RUN: shard-opt %t.mlir --tfm-autodiff=microbatches=2 -o %t.ts.mlir
// RUN: shard-opt %t.ts.mlir --plan pp=2,mb=2 --dist-propagate --dist-partition --dist-pipeline-split --dist-verify-comm | FileCheck %s
// RUN: not shard-opt %t.ts.mlir --plan pp=8,mb=2 --dist-propagate --dist-partition --dist-pipeline-split 2>&1 | FileCheck %s --check-prefix=LAYERS
// Lowering a pp plan that was not split is an error, not a silent non-pipeline.
// RUN: not shard-opt %t.ts.mlir --plan pp=2,mb=2 --dist-propagate --dist-partition --rt-lower 2>&1 | FileCheck %s --check-prefix=NOSPLIT
// RUN: shard-opt %t.ts.mlir --plan pp=2,mb=2,schedule=gpipe --dist-propagate --dist-partition --dist-pipeline-split --dist-verify-comm | FileCheck %s --check-prefix=GPIPE
// RUN: shard-opt %t.ts.mlir --plan pp=2,mb=2,schedule=looped-bfs,vpp=2 --dist-propagate --dist-partition --dist-pipeline-split --dist-verify-comm | FileCheck %s --check-prefix=LOOPED

// CHECK-LABEL: func.func @train_step__pp0(
// CHECK-SAME: tfm.param = "wte"
// CHECK-NOT: tfm.param = "layers.2.
// CHECK-SAME: attributes {{{.*}}dist.entry = "train_step"{{.*}}dist.pp_stage = 0 : i64
// F0, F1
// CHECK: call @gpt2_block_fwd
// CHECK: call @gpt2_block_fwd
// CHECK: %[[SEND0:.*]] = dist.send_start {{.*}} peer = 1 {dist.tag = "F mb=0
// CHECK: call @gpt2_block_fwd
// CHECK: call @gpt2_block_fwd
// CHECK: dist.send_start {{.*}} peer = 1 {dist.tag = "F mb=1
// B0, B1. Once rank 1 has sent B0's first message it has received F0, so
// the send of F0 is waited here (its buffer is freed), not at the end.
// CHECK: dist.recv {{.*}} peer = 1 {dist.tag = "B mb=0
// CHECK-NEXT: dist.wait %[[SEND0]]
// CHECK: call @gpt2_block_bwd
// CHECK: call @gpt2_block_bwd
// CHECK: dist.recv {{.*}} peer = 1 {dist.tag = "B mb=1
// CHECK: call @gpt2_block_bwd
// CHECK-NEXT: tfm.add
// CHECK-NEXT: tfm.scale
// CHECK: call @gpt2_block_bwd
// CHECK-NEXT: tfm.add
// CHECK-NEXT: tfm.scale
// Tail: the mean loss in, the summed tied-embedding gradient out, the norm.
// CHECK: dist.recv {{.*}} peer = 1 {dist.tag = "F mb=1
// CHECK-NEXT: dist.send_start {{.*}} peer = 1 {dist.tag = "B mb=1
// CHECK-NEXT: tfm.sum_squares
// CHECK-NEXT: dist.all_reduce {{.*}} axes = [pp] reduction = sum
// CHECK-COUNT-18: tfm.adamw
// CHECK: dist.wait
// CHECK-NEXT: return

// CHECK-LABEL: func.func @train_step__pp1(
// CHECK-SAME: tfm.param = "wte"
// CHECK-NOT: tfm.param = "layers.0.
// CHECK-SAME: dist.pp_stage = 1 : i64
// F0 B0 F1 B1
// CHECK: dist.recv {{.*}} peer = 0 {dist.tag = "F mb=0
// CHECK: call @gpt2_block_fwd
// CHECK: call @gpt2_block_fwd
// CHECK: call @gpt2_block_bwd
// CHECK: call @gpt2_block_bwd
// CHECK: dist.send_start {{.*}} peer = 0 {dist.tag = "B mb=0
// CHECK: dist.recv {{.*}} peer = 0 {dist.tag = "F mb=1
// CHECK: call @gpt2_block_fwd
// CHECK: call @gpt2_block_bwd
// CHECK: tfm.sum_squares
// CHECK-NEXT: dist.all_reduce {{.*}} axes = [pp] reduction = sum
// CHECK-COUNT-18: tfm.adamw
// CHECK: return

// The forward-only entries run the stages' forwards in GPipe order.
// CHECK-LABEL: func.func @eval__pp0(
// CHECK-LABEL: func.func @eval__pp1(
// CHECK-LABEL: func.func @logits__pp0(
// CHECK-LABEL: func.func @logits__pp1(

// LAYERS: error: dist-pipeline-split: pp=8 needs at least 8 block calls (layers) in @train_step, found 4

// GPipe: all forwards, then all backwards, on both stages.
// GPIPE-LABEL: func.func @train_step__pp1(
// GPIPE: dist.recv {{.*}} {dist.tag = "F mb=0
// GPIPE: dist.recv {{.*}} {dist.tag = "F mb=1
// GPIPE: call @gpt2_block_bwd

// NOSPLIT: error: rt-lower: the plan has pp=2, but the entries are not split into pipeline stages (run --dist-pipeline-split after --dist-partition)

// Looped BFS runs a chunk's backward microbatches in reverse (torch's
// ScheduleLoopedBFS): the accumulation follows microbatch 0's backward, the
// last one the chunk runs.
// LOOPED-LABEL: func.func @train_step__pp1(
// LOOPED: tfm.cross_entropy_grad
// LOOPED: call @gpt2_block_bwd
// LOOPED-NEXT: dist.send_start {{.*}} {dist.tag = "B mb=1
// LOOPED: tfm.cross_entropy_grad
// LOOPED: call @gpt2_block_bwd
// LOOPED-NEXT: tfm.add
// LOOPED-NEXT: tfm.scale
// LOOPED: dist.send_start {{.*}} {dist.tag = "B mb=0
