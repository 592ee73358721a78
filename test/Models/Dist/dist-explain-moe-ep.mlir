// dist-explain under expert parallelism: the 4-layer Mixtral CPU model
// (4 experts) at batch 4, plan dp=4,ep=2,zero=1 (mesh [dp = 2, ep = 2]),
// bucketed. The EP row says what ep splits (the expert weights' dim 0, 2 of
// 4 experts per rank), where the expert gradients are reduced (dp, the
// expert-data-parallel group) and the all-to-alls (4 per MoE layer per
// microbatch, 16 per step); the DP row counts every data-parallel rank
// (dp x ep = 4); gradients are reduce-scattered per layer (4 expert
// buckets over dp, 5 dense ones over dp,ep: the last with the embeddings',
// the first the final norm's). An independent recount of the IR matches
// the report.
// RUN: %python -m autoshard.models %autoshard_src/configs/models/mixtral-tiny-cpu.json --batch 4 --seq 8 -q | shard-opt --tfm-autodiff -o %t.ts.mlir
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=4,ep=2,zero=1" --dist-propagate --dist-partition --dist-bucket-collectives --dist-explain="format=json output=%t.json" -o %t.mlir
// RUN: %python %autoshard_src/test/Dialect/Dist/Inputs/count_collectives.py %t.mlir %t.json | FileCheck %s --check-prefix=RECOUNT
// RUN: shard-opt %t.mlir --dist-explain -o /dev/null | FileCheck %s
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=2,ep=2" --dist-propagate --dist-partition --dist-explain -o /dev/null | FileCheck %s --check-prefix=EDP1
// RUN: %python -m autoshard.models %autoshard_src/configs/models/mixtral-tiny-cpu.json --batch 4 --seq 8 --vocab-multiple 64 -q | shard-opt --tfm-autodiff -o %t.tp.ts.mlir
// RUN: shard-opt %t.tp.ts.mlir --dist-apply-plan="plan=tp=2,ep=2" --dist-propagate --dist-partition --dist-explain -o /dev/null | FileCheck %s --check-prefix=EPTP
// RUN: shard-opt %t.tp.ts.mlir --dist-apply-plan="plan=tp=2,etp=2" --dist-propagate --dist-partition --dist-explain -o /dev/null | FileCheck %s --check-prefix=ETP

// RECOUNT: match
// CHECK: plan: dp=4,tp=1,sp=0,zero=1,ep=2 (also
// CHECK: mesh: [dp=2, ep=2], world size 4
// CHECK: DP      dp=4  batch: tokens dim 0 (4x8 -> 1x8), labels dim 0 (4x8 -> 1x8); activations follow the batch; gradients are summed over dp,ep (expert weights: over dp, see EP)
// CHECK: EP      ep=2  experts (dim 0): expert_gate, expert_up, expert_down (12), 4 -> 2 experts per rank; expert parameters per rank 1.50 MiB -> 768.00 KiB; expert gradients summed over dp (the expert-data-parallel group of 2 ranks); token dispatch / combine: 16 all-to-alls over ep per step (128.00 KiB), 4 per MoE layer per microbatch
// CHECK: ZeRO-1  dp=4  optimizer states m, v: 86 of 86 split on dp,ep (expert states on dp)
// The parameter all-gathers follow the gradient buckets: one per
// reduce-scatter bucket, expert (dp) and dense (dp,ep) alike.
// CHECK: ZeRO-1          all_gather      dp          4   384.00 KiB
// CHECK: ZeRO-1          all_gather      dp,ep       5
// CHECK: ZeRO-1          reduce_scatter  dp          4   768.00 KiB
// CHECK: ZeRO-1          reduce_scatter  dp,ep       5
// CHECK: EP              all_to_all      ep         16   128.00 KiB
// CHECK: mixtral_block_fwd (called 4x): all_to_all[ep] x2
// CHECK: mixtral_block_bwd (called 4x): all_to_all[ep] x2

// dp = ep: every rank holds different experts, whose gradients need no
// reduction; the dense ones are summed over ep (the mesh has no dp axis).
// EDP1: mesh: [ep=2], world size 2
// EDP1: DP      dp=2  batch: tokens dim 0 (4x8 -> 2x8), labels dim 0 (4x8 -> 2x8); activations follow the batch; gradients are summed over ep (expert weights: not at all, see EP)
// EDP1: EP      ep=2  experts (dim 0): {{.*}}; expert gradients not reduced (each expert on one data-parallel rank); token dispatch / combine: 16 all-to-alls over ep per step
// EDP1: DP              all_reduce      ep
// EDP1: EP              all_to_all      ep         16

// ep folded over the tp ranks: the expert dim on tp is EP's split, not TP's.
// EPTP: mesh: [tp=2], world size 2
// EPTP: EP      ep=2  experts (dim 0): expert_gate, expert_up, expert_down (12), 4 -> 2 experts per rank; {{.*}}; folded over the tp ranks too (etp=1): the tp ranks route the same tokens, each computes its own experts' slots (a local slice in) and the expert outputs are gathered over tp (out)
// EPTP: TP      tp=2  columns (last dim): attn_q, attn_k, attn_v (12); rows (dim 0): attn_out (4); experts (dim 0, see EP): expert_gate, expert_up, expert_down (12); vocab

// etp=2: each expert split as a Megatron MLP (no EP row without ep).
// ETP-NOT: EP      ep=
// ETP: TP      tp=2  columns (last dim): attn_q, attn_k, attn_v, expert_gate, expert_up (20); rows (dim 0): attn_out (4); expert rows (dim 1, etp): expert_down (4); vocab
