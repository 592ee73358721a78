// dist-propagate on the builder's models; the tests on hand-written IR are
// test/Dialect/Dist/dist-propagate.mlir.

// nanoGPT from the builder, through tfm-autodiff:
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 4 --seq 16 --vocab-multiple 2 -q | shard-opt --tfm-autodiff -o %t.mlir
// RUN: shard-opt %t.mlir --dist-apply-plan="plan=dp=2" --dist-propagate | FileCheck %s --check-prefix=DP
// RUN: shard-opt %t.mlir --dist-apply-plan="plan=tp=2" --dist-propagate | FileCheck %s --check-prefix=TP
// RUN: shard-opt %t.mlir --dist-apply-plan="plan=dp=2,tp=2,sp=1" --dist-propagate | FileCheck %s --check-prefix=SP
// RUN: shard-opt %t.mlir --dist-apply-plan="plan=dp=2,zero=1" --dist-propagate | FileCheck %s --check-prefix=Z1
// RUN: shard-opt %t.mlir --dist-apply-plan="plan=dp=2,zero=2" --dist-propagate | FileCheck %s --check-prefix=Z2
// RUN: shard-opt %t.mlir --dist-apply-plan="plan=dp=2,tp=2,zero=3" --dist-propagate | FileCheck %s --check-prefix=Z3
// Llama (GQA, RoPE, SwiGLU, RMSNorm) and GPT-2 (biases) at tiny sizes:
// RUN: %python -m autoshard.models %configs/models/llama3-8b.json --batch 2 --seq 8 --vocab-multiple 2 -q | shard-opt --tfm-autodiff | shard-opt --dist-apply-plan="plan=dp=2,tp=2,sp=1,zero=1" --dist-propagate | FileCheck %s --check-prefix=LLAMA
// RUN: %python -m autoshard.models %configs/models/gpt2-124m.json --batch 2 --seq 8 --vocab-multiple 2 -q | shard-opt --tfm-autodiff | shard-opt --dist-apply-plan="plan=tp=2" --dist-propagate | FileCheck %s --check-prefix=GPT2

// nanoGPT, dp=2: every activation batch-sharded, param grads partial (dp).
// DP-LABEL: func.func private @gpt2_block_fwd
// DP-COUNT-15: {dist.sharding = {{.*}}[{dp}, {}, {}{{.*}}
// DP: tfm.add %{{.*}}, %{{.*}} {dist.sharding = #dist.sharding<@mesh, [{dp}, {}, {}]>}
// DP-NEXT: return
// DP-LABEL: func.func private @gpt2_block_bwd
// DP-COUNT-2: tfm.matmul_wgrad {{.*}}{dist.sharding = #dist.sharding<@mesh, [{}, {}], partial = {dp: sum}>}
// DP: tfm.layer_norm_grad {{.*}}dist.sharding = [#dist.sharding<@mesh, [{dp}, {}, {}]>, #dist.sharding<@mesh, [{}], partial = {dp: sum}>, #dist.sharding<@mesh, [{}], partial = {dp: sum}>]
// DP-LABEL: func.func @train_step
// DP: tfm.cross_entropy {{.*}}{dist.sharding = #dist.sharding<@mesh, [], partial = {dp: sum}>
// DP: tfm.embedding_grad {{.*}}{dist.sharding = #dist.sharding<@mesh, [{}, {}], partial = {dp: sum}>
// DP: tfm.add {{.*}}{dist.sharding = #dist.sharding<@mesh, [{}, {}], partial = {dp: sum}>}
// DP: tfm.clip_coef {{.*}}{dist.sharding = [#dist.sharding<@mesh, []>, #dist.sharding<@mesh, []>]

// nanoGPT, tp=2: Megatron column / row, heads split, the block output
// projections partial over tp, the residual stream replicated.
// TP-LABEL: func.func private @gpt2_block_fwd
// TP-SAME: %arg3: tensor<128x128xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>, tfm.name = "attn.wq"
// TP-SAME: %arg6: tensor<128x128xf32> {dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>, tfm.name = "attn.wo"
// TP: tfm.layer_norm %arg0, %arg2 {dist.sharding = #dist.sharding<@mesh, [{}, {}, {}]>
// TP-COUNT-3: tfm.matmul %0, %arg{{[345]}} {dist.sharding = #dist.sharding<@mesh, [{}, {}, {tp}]>}
// TP-COUNT-3: tfm.reshape {{.*}}{dist.sharding = #dist.sharding<@mesh, [{}, {}, {tp}, {}]>}
// TP: tfm.attention {{.*}}dist.sharding = [#dist.sharding<@mesh, [{}, {}, {tp}, {}]>, #dist.sharding<@mesh, [{}, {tp}, {}]>]
// TP: %[[O:.*]] = tfm.matmul %{{.*}}, %arg6 {dist.sharding = #dist.sharding<@mesh, [{}, {}, {}], partial = {tp: sum}>}
// TP: tfm.add %arg0, %[[O]] {dist.sharding = #dist.sharding<@mesh, [{}, {}, {}]>}
// TP: tfm.matmul %{{.*}}, %arg8 {dist.sharding = #dist.sharding<@mesh, [{}, {}, {tp}]>}
// TP: tfm.gelu {{.*}}{dist.sharding = #dist.sharding<@mesh, [{}, {}, {tp}]>}
// TP: tfm.matmul %{{.*}}, %arg9 {dist.sharding = #dist.sharding<@mesh, [{}, {}, {}], partial = {tp: sum}>}
// TP: tfm.add {{.*}}{dist.sharding = #dist.sharding<@mesh, [{}, {}, {}]>}
// TP-LABEL: func.func private @gpt2_block_bwd
// TP: tfm.matmul_wgrad %arg20, %arg0 {dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>}
// TP: tfm.attention_grad {{.*}}dist.sharding = [#dist.sharding<@mesh, [{}, {}, {tp}, {}]>, #dist.sharding<@mesh, [{}, {}, {tp}, {}]>, #dist.sharding<@mesh, [{}, {}, {tp}, {}]>]
// TP: tfm.matmul_wgrad %arg10, %{{.*}} {dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>}
// TP-LABEL: func.func @train_step
// TP: tfm.embedding {{.*}}{dist.sharding = #dist.sharding<@mesh, [{}, {}, {}], partial = {tp: sum}>}
// TP: tfm.matmul {{.*}}{dist.sharding = #dist.sharding<@mesh, [{}, {}, {tp}]>, transpose_rhs}
// TP: tfm.cross_entropy {{.*}}{dist.sharding = #dist.sharding<@mesh, []>
// TP: tfm.cross_entropy_grad {{.*}}{dist.sharding = #dist.sharding<@mesh, [{}, {}, {tp}]>
// TP: tfm.matmul_wgrad {{.*}}{dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>}

// nanoGPT, dp=2 tp=2 sp=1: the residual stream [{dp}, {tp}, {}] (norms
// run sequence-sharded), the column-parallel matmuls gather the sequence,
// the row-parallel ones end partial (reduce-scattered into the residual).
// SP-LABEL: func.func private @gpt2_block_fwd
// SP-SAME: %arg0: tensor<4x16x128xf32> {dist.sharding = #dist.sharding<@mesh, [{dp}, {tp}, {}]>, tfm.role = "hidden"}
// SP: tfm.layer_norm %arg0, %arg2 {dist.sharding = #dist.sharding<@mesh, [{dp}, {tp}, {}]>
// SP: tfm.matmul %0, %arg3 {dist.sharding = #dist.sharding<@mesh, [{dp}, {}, {tp}]>}
// SP: %[[O:.*]] = tfm.matmul %{{.*}}, %arg6 {dist.sharding = #dist.sharding<@mesh, [{dp}, {}, {}], partial = {tp: sum}>}
// SP: tfm.add %arg0, %[[O]] {dist.sharding = #dist.sharding<@mesh, [{dp}, {tp}, {}]>}
// SP: tfm.layer_norm {{.*}}{dist.sharding = #dist.sharding<@mesh, [{dp}, {tp}, {}]>
// SP: tfm.add {{.*}}{dist.sharding = #dist.sharding<@mesh, [{dp}, {tp}, {}]>}
// SP-NEXT: return
// SP-LABEL: func.func private @gpt2_block_bwd
// SP: tfm.layer_norm_grad {{.*}}dist.sharding = [#dist.sharding<@mesh, [{dp}, {tp}, {}]>, #dist.sharding<@mesh, [{}], partial = {dp: sum, tp: sum}>
// SP-LABEL: func.func @train_step
// SP: %[[E:.*]] = tfm.embedding {{.*}}{dist.sharding = #dist.sharding<@mesh, [{dp}, {}, {}], partial = {tp: sum}>}
// SP: %[[A:.*]] = tfm.add %[[E]], %{{.*}} {dist.sharding = #dist.sharding<@mesh, [{dp}, {tp}, {}]>}
// SP: %[[C:.*]] = dist.sharding_constraint %[[A]] to <@mesh, [{dp}, {tp}, {}]>
// SP: call @gpt2_block_fwd(%[[C]],

// ZeRO-1: m, v on dp; AdamW runs on the dp shard (the replicated parameter
// is sliced, the new one gathered at the return).
// Z1-LABEL: func.func @train_step
// Z1-SAME: tensor<128x512xf32> {dist.sharding = #dist.sharding<@mesh, [{dp}, {}]>, tfm.init = "zeros", tfm.state = "layers.0.mlp.w_fc.exp_avg"
// Z1-NOT: dist.sharding_constraint
// Z1: tfm.adamw {{.*}}dist.sharding = [#dist.sharding<@mesh, [{dp}, {}]>, #dist.sharding<@mesh, [{dp}, {}]>, #dist.sharding<@mesh, [{dp}, {}]>]
// ZeRO-2: the partial gradient is pinned to the dp shard where it is produced.
// Z2-LABEL: func.func @train_step
// Z2: %[[G:.*]]:9 = call @gpt2_block_bwd
// Z2-NEXT: dist.sharding_constraint %[[G]]#8 to <@mesh, [{dp}, {}]> {dist.sharding = #dist.sharding<@mesh, [{dp}, {}]>} : tensor<512x128xf32>
// Z2: tfm.sum_squares
// Z2: tfm.adamw {{.*}}dist.sharding = [#dist.sharding<@mesh, [{dp}, {}]>, #dist.sharding<@mesh, [{dp}, {}]>, #dist.sharding<@mesh, [{dp}, {}]>]
// ZeRO-3 with tensor parallelism: parameters stored on tp then dp (dp minor) but computed with gathered
// dp shards: the activations keep dp on the batch.
// Z3-LABEL: func.func private @gpt2_block_fwd
// Z3-SAME: %arg3: tensor<128x128xf32> {dist.sharding = #dist.sharding<@mesh, [{dp}, {tp}]>, tfm.name = "attn.wq"
// Z3-SAME: %arg6: tensor<128x128xf32> {dist.sharding = #dist.sharding<@mesh, [{tp, dp}, {}]>, tfm.name = "attn.wo"
// Z3: tfm.matmul %0, %arg3 {dist.sharding = #dist.sharding<@mesh, [{dp}, {}, {tp}]>}
// Z3: tfm.matmul %{{.*}}, %arg6 {dist.sharding = #dist.sharding<@mesh, [{dp}, {}, {}], partial = {tp: sum}>}
// Z3-LABEL: func.func @train_step
// Z3: tfm.adamw {{.*}}dist.sharding = [#dist.sharding<@mesh, [{dp}, {tp}]>, #dist.sharding<@mesh, [{dp}, {tp}]>, #dist.sharding<@mesh, [{dp}, {tp}]>]

// Llama: GQA heads split (q and kv heads), RoPE on the split heads, SwiGLU
// column-parallel, RMSNorm sequence-sharded.
// LLAMA-LABEL: func.func private @llama_block_fwd
// LLAMA: tfm.rms_norm %arg0, {{.*}}{dist.sharding = #dist.sharding<@mesh, [{dp}, {tp}, {}]>
// LLAMA: tfm.rope {{.*}}{dist.sharding = #dist.sharding<@mesh, [{dp}, {}, {tp}, {}]>
// LLAMA: tfm.attention {{.*}}dist.sharding = [#dist.sharding<@mesh, [{dp}, {}, {tp}, {}]>, #dist.sharding<@mesh, [{dp}, {tp}, {}]>]
// LLAMA: tfm.swiglu {{.*}}{dist.sharding = #dist.sharding<@mesh, [{dp}, {}, {tp}]>}

// GPT-2: column-parallel biases are split with their outputs.
// GPT2-LABEL: func.func private @gpt2_block_fwd
// GPT2: tfm.add {{.*}}{dist.sharding = #dist.sharding<@mesh, [{}, {}, {tp}]>}
