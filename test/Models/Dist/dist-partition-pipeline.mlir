// Builder output through the whole sharding pipeline: the collective counts
// of the block functions (forward, backward, and the eval/logits block).
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 4 --seq 8 --vocab-multiple 8 -q | shard-opt --tfm-autodiff -o %t.mlir
// RUN: shard-opt %t.mlir --dist-apply-plan="plan=dp=2,tp=2" --dist-propagate --dist-partition | FileCheck %s --check-prefix=TP
// RUN: shard-opt %t.mlir --dist-apply-plan="plan=dp=2,tp=2,sp=1" --dist-propagate --dist-partition | FileCheck %s --check-prefix=SP
// RUN: shard-opt %t.mlir --dist-apply-plan="plan=dp=2" --dist-propagate --dist-partition | FileCheck %s --check-prefix=DP

// With tp = 2: 2 all-reduces forward, 2 backward, nothing else in a block.
// TP-LABEL: func.func private @gpt2_block(
// TP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// TP: dist.all_reduce {{.*}} axes = [tp] reduction = sum
// TP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// TP: dist.all_reduce {{.*}} axes = [tp] reduction = sum
// TP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// TP-LABEL: func.func private @gpt2_block_fwd(
// TP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// TP: dist.all_reduce {{.*}} axes = [tp] reduction = sum
// TP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// TP: dist.all_reduce {{.*}} axes = [tp] reduction = sum
// TP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// TP-LABEL: func.func private @gpt2_block_bwd(
// TP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// TP: dist.all_reduce {{.*}} axes = [tp] reduction = sum
// TP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// TP: dist.all_reduce {{.*}} axes = [tp] reduction = sum
// TP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// TP-LABEL: func.func @train_step(

// With tp = 2 and sp = 1: 2 all-gathers + 2 reduce-scatters forward; backward 4 all-gathers + 2
// reduce-scatters (DESIGN.md §12); no all-reduce in a block.
// SP-LABEL: func.func private @gpt2_block(
// SP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// SP: dist.all_gather {{.*}} axes = [tp] gather_dim = 1
// SP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// SP: dist.reduce_scatter {{.*}} axes = [tp] scatter_dim = 1 reduction = sum
// SP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// SP: dist.all_gather {{.*}} axes = [tp] gather_dim = 1
// SP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// SP: dist.reduce_scatter {{.*}} axes = [tp] scatter_dim = 1 reduction = sum
// SP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// SP-LABEL: func.func private @gpt2_block_fwd(
// SP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// SP: dist.all_gather {{.*}} axes = [tp] gather_dim = 1
// SP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// SP: dist.reduce_scatter {{.*}} axes = [tp] scatter_dim = 1 reduction = sum
// SP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// SP: dist.all_gather {{.*}} axes = [tp] gather_dim = 1
// SP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// SP: dist.reduce_scatter {{.*}} axes = [tp] scatter_dim = 1 reduction = sum
// SP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// SP-LABEL: func.func private @gpt2_block_bwd(
// SP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// SP: dist.all_gather {{.*}} axes = [tp] gather_dim = 1
// SP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// SP: dist.all_gather {{.*}} axes = [tp] gather_dim = 1
// SP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// SP: dist.reduce_scatter {{.*}} axes = [tp] scatter_dim = 1 reduction = sum
// SP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// SP: dist.all_gather {{.*}} axes = [tp] gather_dim = 1
// SP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// SP: dist.all_gather {{.*}} axes = [tp] gather_dim = 1
// SP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// SP: dist.reduce_scatter {{.*}} axes = [tp] scatter_dim = 1 reduction = sum
// SP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// SP-LABEL: func.func @train_step(

// With dp = 2: no collective inside a block (gradients stay partial); one all-reduce
// per parameter gradient in the train step (35 parameters) plus one for the
// loss; the norm of the reduced (replicated) gradients needs none.
// DP-LABEL: func.func private @gpt2_block_bwd(
// DP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// DP-LABEL: func.func @train_step(
// DP-COUNT-36: dist.all_reduce {{.*}} axes = [dp] reduction = sum
// DP-NOT: dist.{{(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice) }}
// DP-LABEL: func.func @eval(
