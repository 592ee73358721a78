// Context parallelism with Ulysses attention (plan cp=N,cp_attention=ulysses;
// DeepSpeed-Ulysses, algorithms.md §2.5): the sequence stays split on `cp`
// everywhere except inside attention, where an all-to-all over `cp` swaps the
// sequence split for a head split (each rank then attends its heads over the
// whole sequence with the ordinary kernel) and another swaps it back.
// dist-apply-plan pins the layouts with sharding constraints and
// dist-partition derives the all-to-alls. Llama-tiny (GQA: 4 query heads,
// 2 kv heads), batch 4, seq 8, cp=2.
//
// RUN: %python -m autoshard.models %autoshard_src/configs/models/llama-tiny-cpu.json --batch 4 --seq 8 --vocab-multiple 8 -q | shard-opt --tfm-autodiff -o %t.ts.mlir
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=cp=2,cp_attention=ulysses" -o %t.plan.mlir
// RUN: FileCheck %s --check-prefix=PIN < %t.plan.mlir
// RUN: shard-opt %t.plan.mlir --dist-propagate --dist-partition --dist-verify-comm -o %t.part.mlir
// RUN: FileCheck %s --check-prefix=PART < %t.part.mlir
// RUN: FileCheck %s --check-prefix=COUNT < %t.part.mlir
// RUN: shard-opt %t.part.mlir --dist-explain -o /dev/null | FileCheck %s --check-prefix=EXPLAIN
//
// Full recomputation re-runs the forward's all-to-alls (its recompute
// function) before the backward's;
// with pp, dp, ZeRO-3 and mixed precision the program still verifies.
// RUN: shard-opt %t.ts.mlir --tfm-recompute=mode=full | shard-opt --dist-apply-plan="plan=cp=2,recompute=full,cp_attention=ulysses" --dist-propagate --dist-partition --dist-verify-comm | FileCheck %s --check-prefix=FULL
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=pp=2,dp=2,cp=2,zero=3,cp_attention=ulysses" --dist-propagate --dist-partition --dist-pipeline-split --dist-bucket-collectives --dist-verify-comm -o /dev/null
// RUN: %python -m autoshard.models %autoshard_src/configs/models/llama-tiny-cpu.json --batch 4 --seq 8 --vocab-multiple 8 -q | shard-opt --tfm-mixed-precision --tfm-autodiff | shard-opt --dist-apply-plan="plan=cp=2,cp_attention=ulysses" --dist-propagate --dist-partition --dist-verify-comm --rt-lower --rt-plan-memory -o /dev/null
//
// nanoGPT (4 heads, no GQA): the heads split over tp x cp with Megatron SP.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 4 --seq 8 --vocab-multiple 8 -q | shard-opt --tfm-autodiff -o %t.gpt.mlir
// RUN: shard-opt %t.gpt.mlir --dist-apply-plan="plan=dp=2,cp=2,tp=2,sp=1,zero=1,cp_attention=ulysses" --dist-propagate --dist-partition --dist-bucket-collectives --dist-verify-comm | FileCheck %s --check-prefix=TPCP
//
// Errors: heads that tp*cp does not divide, Ulysses without cp, unknown mode.
// RUN: not shard-opt %t.ts.mlir --dist-apply-plan="plan=cp=4,cp_attention=ulysses" 2>&1 | FileCheck %s --check-prefix=ERR-HEADS
// RUN: not shard-opt %t.ts.mlir --dist-apply-plan="plan=cp=2,tp=2,cp_attention=ulysses" 2>&1 | FileCheck %s --check-prefix=ERR-TPCP
// RUN: not shard-opt %t.ts.mlir --dist-apply-plan="plan=tp=2,cp_attention=ulysses" 2>&1 | FileCheck %s --check-prefix=ERR-NOCP
// RUN: not shard-opt %t.ts.mlir --dist-apply-plan="plan=cp=2,cp_attention=zigzag" 2>&1 | FileCheck %s --check-prefix=ERR-MODE

// Each attention operand: the sequence layout, then the head layout (q/k/v
// [B, S, H, D]); the output the other way round. The forward's saved lse
// keeps the head layout only (nothing else reads it).
// PIN-LABEL: func.func private @llama_block_fwd(
// PIN: %[[Q1:.*]] = dist.sharding_constraint %{{.*}} to <@mesh, [{}, {cp}, {}, {}]> : tensor<4x8x4x16xf32>
// PIN: %[[Q2:.*]] = dist.sharding_constraint %[[Q1]] to <@mesh, [{}, {}, {cp}, {}]> : tensor<4x8x4x16xf32>
// PIN: %[[K2:.*]] = dist.sharding_constraint %{{.*}} to <@mesh, [{}, {}, {cp}, {}]> : tensor<4x8x2x16xf32>
// PIN: %[[V2:.*]] = dist.sharding_constraint %{{.*}} to <@mesh, [{}, {}, {cp}, {}]> : tensor<4x8x2x16xf32>
// PIN: %[[OUT:.*]], %[[LSE:.*]] = tfm.attention %[[Q2]], %[[K2]], %[[V2]]
// PIN: %[[L:.*]] = dist.sharding_constraint %[[LSE]] to <@mesh, [{}, {cp}, {}]> : tensor<4x4x8xf32>
// PIN-NOT: dist.sharding_constraint %[[L]]
// PIN: %[[O1:.*]] = dist.sharding_constraint %[[OUT]] to <@mesh, [{}, {}, {cp}, {}]>
// PIN: %[[O2:.*]] = dist.sharding_constraint %[[O1]] to <@mesh, [{}, {cp}, {}, {}]>
// PIN: tfm.reshape %[[O2]]
// The backward receives them in the head layout: one pin each, no
// round trip; dout comes from the sequence layout.
// PIN: return {{.*}}%[[V2]], %[[Q2]], %[[K2]], %[[O1]], %[[L]],
// PIN-LABEL: func.func private @llama_block_bwd(
// PIN: %[[D1:.*]] = dist.sharding_constraint %{{.*}} to <@mesh, [{}, {cp}, {}, {}]>
// PIN: %[[D2:.*]] = dist.sharding_constraint %[[D1]] to <@mesh, [{}, {}, {cp}, {}]>
// PIN: dist.sharding_constraint %arg13 to <@mesh, [{}, {}, {cp}, {}]>
// PIN: dist.sharding_constraint %arg16 to <@mesh, [{}, {cp}, {}]>
// PIN: tfm.attention_grad %[[D2]]

// The partitioned block: the all-to-alls split the heads (dim 2) and gather
// the sequence (dim 1) around a local attention over all 8 positions of 2
// query heads and 1 kv head.
// PART-LABEL: func.func private @llama_block_fwd(
// PART-SAME: tensor<4x4x64xf32>
// PART: %[[Q:.*]] = dist.all_to_all %{{.*}} on @mesh axes = [cp] split_dim = 2 concat_dim = 1 : tensor<4x4x4x16xf32> -> tensor<4x8x2x16xf32>
// PART: %[[K:.*]] = dist.all_to_all %{{.*}} on @mesh axes = [cp] split_dim = 2 concat_dim = 1 : tensor<4x4x2x16xf32> -> tensor<4x8x1x16xf32>
// PART: %[[V:.*]] = dist.all_to_all %{{.*}} on @mesh axes = [cp] split_dim = 2 concat_dim = 1 : tensor<4x4x2x16xf32> -> tensor<4x8x1x16xf32>
// PART: %[[OUT:.*]], %{{.*}} = tfm.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f64} : (tensor<4x8x2x16xf32>, tensor<4x8x1x16xf32>, tensor<4x8x1x16xf32>) -> (tensor<4x8x2x16xf32>, tensor<4x2x8xf32>)
// PART: dist.all_to_all %[[OUT]] on @mesh axes = [cp] split_dim = 1 concat_dim = 2 : tensor<4x8x2x16xf32> -> tensor<4x4x4x16xf32>
// PART-LABEL: func.func private @llama_block_bwd(
// PART: %[[DO:.*]] = dist.all_to_all %{{.*}} on @mesh axes = [cp] split_dim = 2 concat_dim = 1 : tensor<4x4x4x16xf32> -> tensor<4x8x2x16xf32>
// PART: %[[DQ:[^,]*]], %[[DK:[^,]*]], %[[DV:[^ ]*]] = tfm.attention_grad %[[DO]], %arg13, %arg14, %arg12, %arg15, %arg16
// PART-DAG: dist.all_to_all %[[DQ]] on @mesh axes = [cp] split_dim = 1 concat_dim = 2 : tensor<4x8x2x16xf32> -> tensor<4x4x4x16xf32>
// PART-DAG: dist.all_to_all %[[DK]] on @mesh axes = [cp] split_dim = 1 concat_dim = 2 : tensor<4x8x1x16xf32> -> tensor<4x4x2x16xf32>
// PART-DAG: dist.all_to_all %[[DV]] on @mesh axes = [cp] split_dim = 1 concat_dim = 2 : tensor<4x8x1x16xf32> -> tensor<4x4x2x16xf32>

// Four all-to-alls each way per layer (DeepSpeed's count), no ring.
// COUNT-LABEL: func.func private @llama_block_fwd(
// COUNT-COUNT-4: dist.all_to_all
// COUNT-NOT: dist.all_to_all
// COUNT-NOT: dist.ppermute
// COUNT: return
// COUNT-LABEL: func.func private @llama_block_bwd(
// COUNT-COUNT-4: dist.all_to_all
// COUNT-NOT: dist.all_to_all
// COUNT-NOT: dist.ppermute
// COUNT: return

// EXPLAIN: plan: dp=1,cp=2,tp=1,sp=0,zero=0 (also cp_attention=ulysses,
// EXPLAIN: CP      cp=2  sequence: tokens dim 1 (4x8 -> 4x4), labels dim 1 (4x8 -> 4x4) (contiguous chunks); activations follow the sequence; attention: Ulysses, per layer 4 all-to-alls over cp forward {{.*}} (32 per step)
// EXPLAIN: CP Ulysses      all_to_all      cp         32

// FULL-LABEL: func.func private @llama_block_full_fwd(
// FULL-COUNT-4: dist.all_to_all
// FULL-NOT: dist.all_to_all
// FULL: return
// FULL-LABEL: func.func private @llama_block_bwd(
// FULL-COUNT-4: dist.all_to_all
// FULL-NOT: dist.all_to_all
// FULL: return

// The heads split {tp, cp} (tp major): each of the 4 ranks of a dp replica
// holds one head over the whole sequence.
// TPCP-LABEL: func.func private @gpt2_block_fwd(
// TPCP: dist.all_to_all %{{.*}} on @mesh axes = [cp] split_dim = 2 concat_dim = 1 : tensor<2x4x2x32xf32> -> tensor<2x8x1x32xf32>
// TPCP: tfm.attention {{.*}} -> (tensor<2x8x1x32xf32>, tensor<2x1x8xf32>)

// ERR-HEADS: error: plan cp=4,cp_attention=ulysses: the attention's key/value has 2 heads, not divisible by cp=4 (Ulysses splits the heads over tp and cp; use cp_attention=ring or a smaller cp)
// ERR-TPCP: error: plan cp=2,cp_attention=ulysses: the attention's key/value has 2 heads, not divisible by tp*cp=4
// ERR-NOCP: error: dist-apply-plan: plan: cp_attention=ulysses needs cp > 1 (the all-to-alls run over the cp axis), found cp=1
// ERR-MODE: error: dist-apply-plan: plan: cp_attention must be ring or ulysses, found 'zigzag'
