// Context parallelism (plan cp=N, DESIGN.md §5): dist-apply-plan splits the
// sequence dim of tokens and labels on `cp`, dist-propagate carries it
// through every op of the block (rope and attention included), and
// dist-partition lowers tfm.attention / tfm.attention_grad to ring attention
// and tfm.rope / tfm.rope_grad to tfm.rope_local(_grad)
// (lib/Dialect/Tfm/Sharding/RingAttention.cpp). Llama-tiny (RoPE, GQA: 4 query
// heads, 2 kv heads), batch 4, seq 8, cp=4: chunks of 2 positions.
//
// RUN: %python -m autoshard.models %autoshard_src/configs/models/llama-tiny-cpu.json --batch 4 --seq 8 --vocab-multiple 8 -q | shard-opt --tfm-autodiff -o %t.ts.mlir
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=cp=4" --dist-propagate -o %t.prop.mlir
// RUN: FileCheck %s --check-prefix=PROP < %t.prop.mlir
// RUN: shard-opt %t.prop.mlir --dist-partition -o %t.part.mlir
// RUN: FileCheck %s --check-prefix=RING < %t.part.mlir
// RUN: FileCheck %s --check-prefix=COUNT < %t.part.mlir
// RUN: shard-opt %t.part.mlir --dist-explain -o /dev/null | FileCheck %s --check-prefix=EXPLAIN
//
// With dp, tp and sequence parallelism, the residual stream is split on {cp, tp} (cp major),
// and the whole program still verifies (every rank's ppermutes match).
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=2,cp=2,tp=2,sp=1,zero=1" | FileCheck %s --check-prefix=CPSP
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=2,cp=2,tp=2,sp=1,zero=1" --dist-propagate --dist-partition --dist-bucket-collectives --dist-verify-comm -o /dev/null
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=pp=2,cp=2" --dist-propagate --dist-partition --dist-pipeline-split --dist-verify-comm -o /dev/null
//
// Mixed precision (bf16 compute): the blocks run in bf16, the running output
// and the travelling dK/dV accumulators stay f32.
// RUN: %python -m autoshard.models %autoshard_src/configs/models/llama-tiny-cpu.json --batch 4 --seq 8 --vocab-multiple 8 -q | shard-opt --tfm-mixed-precision --tfm-autodiff | shard-opt --dist-apply-plan="plan=cp=2" --dist-propagate --dist-partition | FileCheck %s --check-prefix=BF16
// BF16-LABEL: func.func private @llama_block_fwd(
// BF16: %[[O0:[^,]*]], %{{.*}} = tfm.attention_block {{.*}} -> (tensor<4x4x4x16xbf16>, tensor<4x4x4xf32>)
// BF16: %[[F0:.*]] = tfm.cast %[[O0]] : (tensor<4x4x4x16xbf16>) -> tensor<4x4x4x16xf32>
// BF16: tfm.attention_merge %[[F0]], {{.*}} : (tensor<4x4x4x16xf32>, tensor<4x4x4xf32>, tensor<4x4x4x16xf32>, tensor<4x4x4xf32>)
// BF16: tfm.cast {{.*}} : (tensor<4x4x4x16xf32>) -> tensor<4x4x4x16xbf16>
// BF16-LABEL: func.func private @llama_block_bwd(
// BF16: dist.ppermute_start {{.*}} : tensor<4x4x2x16xbf16> -> !dist.async<tensor<4x4x2x16xbf16>>
// BF16: tfm.attention_block_grad
// BF16: dist.ppermute_start {{.*}} : tensor<4x4x2x16xf32> -> !dist.async<tensor<4x4x2x16xf32>>

// Propagation: the block's hidden state, q/k after rope, attention's out and
// lse all carry cp on the sequence dim.
// PROP-LABEL: func.func private @llama_block_fwd(
// PROP-SAME: tensor<4x8x64xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {cp}, {}]>, tfm.role = "hidden"}
// PROP: tfm.rope {{.*}}dist.sharding = #dist.sharding<@mesh, [{}, {cp}, {}, {}]>
// PROP: tfm.attention {{.*}}{causal, dist.sharding = [#dist.sharding<@mesh, [{}, {cp}, {}, {}]>, #dist.sharding<@mesh, [{}, {}, {cp}]>]
// PROP-LABEL: func.func private @llama_block_bwd(
// PROP: tfm.attention_grad {{.*}}dist.sharding = [#dist.sharding<@mesh, [{}, {cp}, {}, {}]>, #dist.sharding<@mesh, [{}, {cp}, {}, {}]>, #dist.sharding<@mesh, [{}, {cp}, {}, {}]>]
// PROP-LABEL: func.func @train_step(
// PROP-SAME: tensor<4x8xi32> {dist.sharding = #dist.sharding<@mesh, [{}, {cp}]>, tfm.input = "tokens"}
// PROP-SAME: tensor<4x8xi32> {dist.sharding = #dist.sharding<@mesh, [{}, {cp}]>, tfm.input = "labels"}
// The forward-only entry for sampling keeps whole sequences (the sampler
// feeds a growing context): every cp rank runs it whole.
// PROP-LABEL: func.func @logits(
// PROP-SAME: tensor<4x8xi32> {dist.sharding = #dist.sharding<@mesh, [{}, {}]>, tfm.input = "tokens"}

// The ring, forward: rank r's queries against the K/V chunk r - t at step t
// (the chunk index is this rank's dist.axis_index over cp; which blocks are
// skipped above the causal diagonal is decided by the kernel from it at run
// time). The exchange of K and V for step t + 1 is started before step t's
// block and waited for after it (overlap); each block is merged by
// log-sum-exp.
// RING-LABEL: func.func private @llama_block_fwd(
// RING-SAME: tensor<4x2x64xf32>
// RING: %[[S:.*]] = dist.axis_index on @mesh axes = [cp] : tensor<i64>
// RING: %[[Q:.*]] = tfm.rope_local %{{.*}}, %[[S]] {seq_len = 8 : i64, theta = 1.000000e+04 : f64} : (tensor<4x2x4x16xf32>, tensor<i64>) -> tensor<4x2x4x16xf32>
// RING: %[[K:.*]] = tfm.rope_local {{.*}} : (tensor<4x2x2x16xf32>, tensor<i64>) -> tensor<4x2x2x16xf32>
// RING: %[[C:.*]] = dist.axis_index on @mesh axes = [cp]
// RING: %[[HK:.*]] = dist.ppermute_start %[[K]] on @mesh axes = [cp] pairs = [0 -> 1, 1 -> 2, 2 -> 3, 3 -> 0] : tensor<4x2x2x16xf32> -> !dist.async<tensor<4x2x2x16xf32>>
// RING: %[[HV:.*]] = dist.ppermute_start %[[V:[^ ]*]] on @mesh axes = [cp] pairs = [0 -> 1, 1 -> 2, 2 -> 3, 3 -> 0]
// RING: %[[O0:.*]], %[[L0:.*]] = tfm.attention_block %[[Q]], %[[K]], %[[V]], %[[C]] {causal, kv_step = 0 : i64, num_chunks = 4 : i64, scale = 2.500000e-01 : f64}
// RING: %[[K1:.*]] = dist.wait %[[HK]]
// RING: %[[V1:.*]] = dist.wait %[[HV]]
// RING: dist.ppermute_start %[[K1]]
// RING: dist.ppermute_start %[[V1]]
// RING: %[[O1:.*]], %[[L1:.*]] = tfm.attention_block %[[Q]], %[[K1]], %[[V1]], %[[C]] {causal, kv_step = 1 : i64, num_chunks = 4 : i64
// RING: tfm.attention_merge %[[O0]], %[[L0]], %[[O1]], %[[L1]] : (tensor<4x2x4x16xf32>, tensor<4x4x2xf32>, tensor<4x2x4x16xf32>, tensor<4x4x2xf32>)
// RING: tfm.attention_block {{.*}}kv_step = 2 : i64
// RING: tfm.attention_merge
// RING: tfm.attention_block {{.*}}kv_step = 3 : i64
// RING: tfm.attention_merge
// RING-NOT: tfm.attention_block
// RING: return
// Backward: the K/V chunks travel again, and the dK/dV accumulators travel
// with them (each rank adds its part to the visiting chunk's and passes it
// on); dQ sums locally; the accumulators sent at the last step arrive home.
// RING-LABEL: func.func private @llama_block_bwd(
// RING: %[[DQ0:[^,]*]], %[[DK0:[^,]*]], %[[DV0:[^ ]*]] = tfm.attention_block_grad {{.*}}{causal, kv_step = 0 : i64, num_chunks = 4 : i64
// RING: %[[SK0:.*]] = dist.ppermute_start %[[DK0]] on @mesh axes = [cp]
// RING: %[[SV0:.*]] = dist.ppermute_start %[[DV0]] on @mesh axes = [cp]
// RING: %[[DQ1:[^,]*]], %[[DKB:[^,]*]], %[[DVB:[^ ]*]] = tfm.attention_block_grad {{.*}}kv_step = 1 : i64
// RING: tfm.add %[[DQ0]], %[[DQ1]]
// RING: %[[RK:.*]] = dist.wait %[[SK0]]
// RING: %[[AK:.*]] = tfm.add %[[RK]], %[[DKB]]
// RING: %[[RV:.*]] = dist.wait %[[SV0]]
// RING: tfm.add %[[RV]], %[[DVB]]
// RING: dist.ppermute_start %[[AK]]
// RING: tfm.attention_block_grad {{.*}}kv_step = 2 : i64
// RING: tfm.attention_block_grad {{.*}}kv_step = 3 : i64
// RING: tfm.add
// RING: dist.wait
// RING: %[[AKL:.*]] = tfm.add
// RING: dist.wait
// RING: tfm.add
// RING: %[[SKL:.*]] = dist.ppermute_start %[[AKL]]
// RING: %[[SVL:.*]] = dist.ppermute_start
// RING: %[[DKH:.*]] = dist.wait %[[SKL]]
// RING: dist.wait %[[SVL]]
// RING: tfm.rope_local_grad %[[DKH]]
// RING: return

// Per layer: 2 (cp - 1) ppermutes forward (K, V), 2 (cp - 1) + 2 cp
// backward (K, V again, and dK, dV), each waited for once; cp blocks each
// way, cp - 1 merges; no gather of the sequence anywhere in the block.
// COUNT-LABEL: func.func private @llama_block_fwd(
// COUNT-COUNT-6: dist.ppermute_start
// COUNT-NOT: dist.ppermute
// COUNT-NOT: dist.all_gather
// COUNT: return
// COUNT-LABEL: func.func private @llama_block_bwd(
// COUNT-COUNT-14: dist.ppermute_start
// COUNT-NOT: dist.ppermute
// COUNT-NOT: dist.all_gather
// COUNT: return
// RUN: FileCheck %s --check-prefix=WAITS < %t.part.mlir
// WAITS-LABEL: func.func private @llama_block_fwd(
// WAITS-COUNT-6: dist.wait
// WAITS-NOT: dist.wait
// WAITS: return
// WAITS-LABEL: func.func private @llama_block_bwd(
// WAITS-COUNT-14: dist.wait
// WAITS-NOT: dist.wait
// WAITS: return

// EXPLAIN: plan: dp=1,cp=4,tp=1
// EXPLAIN: mesh: [cp=4], world size 4
// EXPLAIN: CP      cp=4  sequence: tokens dim 1 (4x8 -> 4x2), labels dim 1 (4x8 -> 4x2) (contiguous chunks); causal attention work per cp rank (visible query-key pairs / the balanced share): 0.33, 0.78, 1.22, 1.67; activations follow the sequence; attention: ring attention, per layer 2(cp-1) = 6 K/V ppermutes forward, 2(cp-1) + 2cp = 14 K/V and dK/dV ppermutes backward (80 per step)
// EXPLAIN: CP ring         ppermute        cp         80
// EXPLAIN: llama_block_fwd (called 4x): ppermute[cp] x6
// EXPLAIN: llama_block_bwd (called 4x): ppermute[cp] x14

// CPSP-COUNT-2: dist.sharding_constraint %{{.*}} to <@mesh, [{dp}, {cp, tp}, {}]> : tensor<4x8x64xf32>
