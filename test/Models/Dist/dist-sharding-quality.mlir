// Collective counts of the builder's nanoGPT through the whole sharding
// pipeline, at the sequence lengths where the partitioner used to pick a
// worse layout (see docs/dist-explain.md):
// * SP (tp=2, sp=1): per block, forward 2 all-gathers + 2 reduce-scatters,
//   backward 4 all-gathers + 2 reduce-scatters (DESIGN.md §12: the backward
//   re-gathers block inputs for the weight gradients; weights never move), at
//   seq 8, 32 and 64 (= n_positions: the position table's gradient is split
//   like the sequence);
// * ZeRO (dp minor in the states): each gradient is one reduce-scatter over
//   dp and each parameter one all-gather over dp, no collective over
//   (dp, tp) and none over tp for the optimizer;
// * the tied embedding's gradient under SP goes through the vocab-parallel
//   hook (local rows) and is summed with the LM head's (local) weight
//   gradient with no collective but the dp reduction;
// * the position table's gradient is reduce-scattered over dp, not
//   all-reduced (the hook alone: test/Dialect/Dist/dist-partition-position-grad.mlir).
//
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 16 --seq 8 --vocab-multiple 64 -q | shard-opt --tfm-autodiff -o %t8.mlir
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 16 --seq 32 --vocab-multiple 64 -q | shard-opt --tfm-autodiff -o %t32.mlir
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 16 --seq 64 --vocab-multiple 64 -q | shard-opt --tfm-autodiff -o %t64.mlir
// RUN: shard-opt %t8.mlir --dist-apply-plan="plan=tp=2,sp=1" --dist-propagate --dist-partition --dist-explain -o /dev/null | FileCheck %s --check-prefix=SP
// RUN: shard-opt %t32.mlir --dist-apply-plan="plan=tp=2,sp=1" --dist-propagate --dist-partition --dist-explain -o /dev/null | FileCheck %s --check-prefix=SP
// RUN: shard-opt %t64.mlir --dist-apply-plan="plan=tp=2,sp=1" --dist-propagate --dist-partition --dist-explain -o /dev/null | FileCheck %s --check-prefix=SP
// RUN: shard-opt %t64.mlir --dist-apply-plan="plan=tp=2" --dist-propagate --dist-partition --dist-explain -o /dev/null | FileCheck %s --check-prefix=TP
// RUN: shard-opt %t64.mlir --dist-apply-plan="plan=dp=2,tp=2,sp=1,zero=1" --dist-propagate --dist-partition --dist-explain -o /dev/null | FileCheck %s --check-prefix=Z1SP
// RUN: shard-opt %t64.mlir --dist-apply-plan="plan=dp=2,tp=2,sp=1,zero=1" --dist-propagate --dist-partition | FileCheck %s --check-prefix=EMB
// RUN: shard-opt %t32.mlir --dist-apply-plan="plan=dp=2,tp=2,zero=1" --dist-propagate --dist-partition --dist-explain -o /dev/null | FileCheck %s --check-prefix=Z1TP
// RUN: shard-opt %t32.mlir --dist-apply-plan="plan=dp=2,tp=2,sp=1,zero=1" --dist-propagate --dist-partition | FileCheck %s --check-prefix=WPE
// Every call site of a block function shares one sharding signature: no
// clone (dist-propagate-clone.mlir covers call sites that differ).
// RUN: shard-opt %t64.mlir --dist-apply-plan="plan=dp=2,tp=2,sp=1,zero=1" --dist-propagate | FileCheck %s --check-prefix=NOCLONE
// RUN: shard-opt %t64.mlir --dist-apply-plan="plan=dp=2,tp=2,zero=3" --dist-propagate | FileCheck %s --check-prefix=NOCLONE
// NOCLONE-NOT: _s{{[0-9]+}}(

// SP: gpt2_block_fwd (called 4x): all_gather[tp] x2, reduce_scatter[tp] x2
// SP-NEXT: gpt2_block_bwd (called 4x): all_gather[tp] x4, reduce_scatter[tp] x2

// TP: gpt2_block_fwd (called 4x): all_reduce[tp] x2
// TP-NEXT: gpt2_block_bwd (called 4x): all_reduce[tp] x2

// The whole step: no DP all-reduce (every gradient is reduce-scattered into
// its ZeRO shard), no collective over (dp, tp), one TP all-gather (the
// position table's gradient, split like the sequence, back to the rows of
// its dp shard).
// Z1SP: collectives per train_step per rank
// Z1SP-NEXT: strategy        op              axes    count   bytes/step
// Z1SP-NEXT: ZeRO-1          all_gather      dp         35
// Z1SP-NEXT: ZeRO-1          reduce_scatter  dp         35
// Z1SP-NEXT: TP              all_gather      tp          1
// Z1SP-NEXT: TP              all_reduce      tp         11
// Z1SP-NEXT: SP              all_gather      tp         26
// Z1SP-NEXT: SP              reduce_scatter  tp         18
// Z1SP-NEXT: loss/grad norm  all_reduce      dp          2
// Z1SP-NEXT: loss/grad norm  all_reduce      dp,tp       1
// Z1SP-NEXT: total                                     129
// Z1SP: gpt2_block_fwd (called 4x): all_gather[tp] x2, reduce_scatter[tp] x2
// Z1SP-NEXT: gpt2_block_bwd (called 4x): all_gather[tp] x4, reduce_scatter[tp] x2

// Tied embedding: the LM head's weight gradient and the lookup's (local
// rows of the vocab-parallel table, after re-gathering the sequence) are
// both [V/tp, H]; their sum is reduce-scattered over dp, nothing else.
// EMB-LABEL: func.func @train_step(
// EMB: %[[HEAD:.*]] = tfm.matmul_wgrad {{.*}} -> tensor<64x128xf32>
// EMB: %[[ROWS:.*]] = tfm.vocab_embedding_grad {{.*}} -> tensor<64x128xf32>
// EMB-NEXT: %[[SUM:.*]] = tfm.add %[[HEAD]], %[[ROWS]] : (tensor<64x128xf32>, tensor<64x128xf32>)
// EMB-NEXT: %[[RS:.*]] = dist.reduce_scatter %[[SUM]] on @mesh axes = [dp] scatter_dim = 0 reduction = sum : tensor<64x128xf32> -> tensor<32x128xf32>
// EMB-NOT: dist.{{.*}} %[[SUM]]
// EMB-NOT: dist.{{.*}} %[[RS]]
// EMB: tfm.adamw %{{.*}}, %[[RS]],

// ZeRO-1 with tensor parallelism alone: the states are the TP shards split over dp, so no
// all-gather over tp and none over (dp, tp).
// Z1TP: collectives per train_step per rank
// Z1TP-NEXT: strategy        op              axes    count   bytes/step
// Z1TP-NEXT: ZeRO-1          all_gather      dp         35
// Z1TP-NEXT: ZeRO-1          reduce_scatter  dp         35
// Z1TP-NEXT: TP              all_reduce      tp         29
// Z1TP-NEXT: TP              reduce_scatter  tp          1
// Z1TP-NEXT: loss/grad norm  all_reduce      dp          2
// Z1TP-NEXT: loss/grad norm  all_reduce      dp,tp       1
// Z1TP-NEXT: total                                     103

// Position table (seq 32 < 64 positions): its gradient stays partial over dp
// through the hook and is reduce-scattered into the ZeRO shard.
// WPE-LABEL: func.func @train_step(
// WPE: %[[P:.*]] = tfm.position_embedding_grad {{.*}} -> tensor<64x128xf32>
// WPE-NOT: dist.all_reduce %[[P]]
// WPE: dist.reduce_scatter %[[P]] on @mesh axes = [dp] scatter_dim = 0 reduction = sum : tensor<64x128xf32> -> tensor<32x128xf32>
