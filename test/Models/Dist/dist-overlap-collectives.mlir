// dist-overlap-collectives on the builder's models; the tests on hand-written IR are
// test/Dialect/Dist/dist-overlap-collectives.mlir.

// nanoGPT (4 layers), dp = 2 and dp = 2 with ZeRO-2, through the whole
// pipeline: each layer's bucket starts after its backward and is waited
// for after the next one; the program still verifies and lowers.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 4 --seq 8 --vocab-multiple 8 -q | shard-opt --tfm-autodiff -o %t.ts.mlir
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=2" --dist-propagate --dist-partition --dist-bucket-collectives --dist-overlap-collectives --dist-verify-comm | FileCheck %s --check-prefix=DDP
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=2" --dist-propagate --dist-partition --dist-bucket-collectives --dist-overlap-collectives --rt-lower | FileCheck %s --check-prefix=INPLACE
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 4 --seq 8 --vocab-multiple 8 -q | shard-opt --tfm-autodiff=microbatches=2 -o %t.ts2.mlir
// RUN: shard-opt %t.ts2.mlir --dist-apply-plan="plan=pp=2,dp=2,mb=2" --dist-propagate --dist-partition --dist-pipeline-split --dist-bucket-collectives --dist-overlap-collectives --dist-verify-comm | FileCheck %s --check-prefix=PP
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=2,zero=1" --dist-propagate --dist-partition --dist-bucket-collectives --dist-overlap-collectives --dist-verify-comm | FileCheck %s --check-prefix=Z1
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=2,zero=2" --dist-propagate --dist-partition --dist-bucket-collectives --dist-overlap-collectives --dist-verify-comm --rt-lower --rt-plan-memory | FileCheck %s --check-prefix=Z2

// DDP-LABEL: func.func @train_step(
// DDP-COUNT-3: call @gpt2_block_bwd
// DDP-NEXT: dist.pack
// DDP-NEXT: %[[H:.*]] = dist.all_reduce_start %{{.*}} on @mesh axes = [dp] reduction = sum : tensor<196864xf32> -> !dist.async<tensor<196864xf32>>
// DDP-NEXT: dist.wait
// DDP-NEXT: call @gpt2_block_bwd
// DDP-NEXT: dist.wait %[[H]]

// Lowered: the start names a handle, the wait after the next backward call
// completes it (the memory plan keeps both buffers live in between).
// ZeRO-1: each layer's updated parameter shards are gathered (one bucket per
// gradient bucket) as soon as that layer's optimizer updates are done, behind
// the next layers' updates; the waits come before the step returns them.
// Z1-LABEL: func.func @train_step(
// Z1: tfm.clip_coef
// Z1-COUNT-10: tfm.adamw
// Z1-NEXT: dist.pack
// Z1-NEXT: dist.all_gather_start
// Z1-COUNT-8: tfm.adamw
// Z1-NEXT: dist.pack
// Z1-NEXT: dist.all_gather_start
// Z1-COUNT-8: tfm.adamw
// Z1-NEXT: dist.pack
// Z1-NEXT: dist.all_gather_start
// Z1-COUNT-8: tfm.adamw
// Z1-NEXT: dist.pack
// Z1-NEXT: dist.all_gather_start
// Z1: dist.wait
// Z1: dist.wait
// Z1: dist.wait
// Z1: dist.wait
// Z1: return

// A pipeline stage (layers 0-1 on stage 0, 2 microbatches): layer 1's
// gradient, accumulated right after its last backward, is all-reduced over
// dp behind layer 0's last backward; the last bucket (layer 0 and the
// embeddings) has nothing left to hide behind.
// PP-LABEL: func.func @train_step__pp0(
// PP: call @gpt2_block_bwd
// PP: call @gpt2_block_bwd
// PP: call @gpt2_block_bwd
// PP: dist.pack
// PP-NEXT: %[[H:[0-9]+]] = dist.all_reduce_start {{.*}} axes = [dp]
// PP-NEXT: call @gpt2_block_bwd
// PP: dist.wait %[[H]]
// PP: dist.all_reduce {{.*}} axes = [dp]
// PP: tfm.sum_squares

// Z2-LABEL: rt.func @train_step(
// Z2: rt.call @gpt2_block_bwd
// Z2: rt.kernel "dist.reduce_scatter_start"({{.*}}) -> ({{.*}}) attrs {axes = ["dp"], handle = [[N:[0-9]+]] : i64, reduction = "sum", scatter_dim = 0 : i64}
// Z2: rt.call @gpt2_block_bwd
// Z2: rt.kernel "dist.wait"({{.*}}) -> ({{.*}}) attrs {handle = [[N]] : i64}

// rt-lower reduces a bucket's flat buffer in place (its pack is its only
// reader): one buffer per in-flight bucket, not two.
// INPLACE-LABEL: rt.func @train_step(
// INPLACE: rt.kernel "dist.pack"({{.*}}) -> (%[[B:[0-9]+]])
// INPLACE-NEXT: rt.kernel "dist.all_reduce_start"(%[[B]]) -> (%[[B]]) attrs {axes = ["dp"], handle = [[N:[0-9]+]] : i64, reduction = "sum"} : (!rt.buffer<{{[0-9]+}}xf32>)
// INPLACE: rt.kernel "dist.wait"(%[[B]], %[[B]]) -> (%[[B]]) attrs {handle = [[N]] : i64}
