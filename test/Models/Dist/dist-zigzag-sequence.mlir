// Zig-zag context parallelism (plan cp_layout=zigzag, algorithms.md §2.3):
// dist-zigzag-sequence holds every entry's sequences in zig-zag order
// of 2 cp chunks and tells every position-dependent op (rope, the causal
// mask, position embeddings, dropout) the order; dist-partition keeps it on
// their per-rank forms. Llama-tiny (RoPE), batch 4, seq 8, cp=2: 4 chunks of
// 2 positions, rank r holding chunks r and 3 - r.
//
// RUN: %python -m autoshard.models %autoshard_src/configs/models/llama-tiny-cpu.json --batch 4 --seq 8 --vocab-multiple 8 -q | shard-opt --tfm-autodiff -o %t.ts.mlir
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=cp=2,cp_layout=zigzag" --dist-propagate --dist-zigzag-sequence -o %t.zz.mlir
// RUN: FileCheck %s --check-prefix=ORDER < %t.zz.mlir
// RUN: shard-opt %t.zz.mlir --dist-partition | FileCheck %s --check-prefix=RING
//
// Contiguous (the default) changes nothing.
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=cp=2" --dist-propagate --dist-zigzag-sequence | FileCheck %s --check-prefix=CONTIG
//
// The whole compile with dp, tp and sequence parallelism beside it, and with
// pp: every rank's ppermutes still match.
// RUN: shard-opt %t.ts.mlir --autoshard-train="plan=dp=2,cp=2,tp=2,sp=1,zero=1,cp_layout=zigzag autodiff=false" -o /dev/null
// RUN: shard-opt %t.ts.mlir --autoshard-train="plan=pp=2,cp=2,cp_layout=zigzag autodiff=false" -o /dev/null
// dist-explain: every cp rank does the same causal attention work.
// RUN: shard-opt %t.ts.mlir --autoshard-train="plan=cp=4,cp_layout=zigzag autodiff=false" | shard-opt --dist-explain -o /dev/null | FileCheck %s --check-prefix=EXPLAIN
// EXPLAIN: CP      cp=4  sequence: tokens dim 1 (4x8 -> 4x2), labels dim 1 (4x8 -> 4x2) (zig-zag order: rank r holds chunks r and 7-r of 8); causal attention work per cp rank (visible query-key pairs / the balanced share): 1.00, 1.00, 1.00, 1.00;
// The artifact tells shard-run which entries to feed in zig-zag order.
// RUN: shard-opt %t.ts.mlir --autoshard-train="plan=cp=2,cp_layout=zigzag autodiff=false output=%t.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=ARTIFACT < %t.json
// ARTIFACT-COUNT-3: "zigzag_chunks": 4
//
// GPT-2 style (nanoGPT: position embeddings, dropout): the table rows and the
// dropout masks follow the order; the position-embedding gradient gathers dy
// (a rank's rows are no contiguous block of the table).
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 2 --seq 8 --dropout 0.1 -q | shard-opt --tfm-autodiff | shard-opt --dist-apply-plan="plan=cp=2,cp_layout=zigzag" --dist-propagate --dist-zigzag-sequence --dist-partition | FileCheck %s --check-prefix=GPT

// ORDER: module attributes {dist.plan = {{.*}}cp_layout = "zigzag"{{.*}}, dist.sequence_order = {eval = 4 : i64, logits = 4 : i64, train_step = 4 : i64}
// ORDER-LABEL: func.func private @llama_block_fwd(
// ORDER: tfm.rope {{.*}}zigzag_chunks = 4 : i64
// ORDER: tfm.attention {{.*}}zigzag_chunks = 4 : i64
// ORDER-LABEL: func.func private @llama_block_bwd(
// ORDER: tfm.attention_grad {{.*}}zigzag_chunks = 4 : i64
// ORDER: tfm.rope_grad {{.*}}zigzag_chunks = 4 : i64

// RING-LABEL: func.func private @llama_block_fwd(
// RING: tfm.rope_local {{.*}}zigzag_chunks = 4 : i64
// RING: tfm.attention_block {{.*}}kv_step = 0 : i64, num_chunks = 2 : i64{{.*}}zigzag_chunks = 4 : i64
// RING: tfm.attention_block {{.*}}kv_step = 1 : i64, num_chunks = 2 : i64{{.*}}zigzag_chunks = 4 : i64
// RING-LABEL: func.func private @llama_block_bwd(
// RING: tfm.attention_block_grad {{.*}}zigzag_chunks = 4 : i64
// RING: tfm.rope_local_grad {{.*}}zigzag_chunks = 4 : i64

// CONTIG-NOT: zigzag_chunks
// CONTIG-NOT: dist.sequence_order

// GPT: tfm.position_embedding {{.*}}zigzag_chunks = 4 : i64
// GPT: tfm.dropout_local {{.*}}zigzag_chunks = 4 : i64
// GPT: tfm.position_embedding_grad {{.*}}zigzag_chunks = 4 : i64

// Bad plans and shapes get errors naming the value.
// RUN: not shard-opt %t.ts.mlir --dist-apply-plan="plan=cp_layout=zigzag" 2>&1 | FileCheck %s --check-prefix=NOCP
// NOCP: plan: cp_layout=zigzag needs cp > 1 (it balances the causal work of the cp ranks), found cp=1
// RUN: not shard-opt %t.ts.mlir --dist-apply-plan="plan=cp=2,cp_attention=ulysses,cp_layout=zigzag" 2>&1 | FileCheck %s --check-prefix=ULYSSES
// ULYSSES: plan: cp_layout=zigzag balances ring attention (cp_attention=ring); cp_attention=ulysses gathers the whole sequence, found both
// RUN: not shard-opt %t.ts.mlir --dist-apply-plan="plan=cp=2,cp_layout=diagonal" 2>&1 | FileCheck %s --check-prefix=LAYOUT
// LAYOUT: plan: cp_layout must be contiguous or zigzag, found 'diagonal'
// RUN: %python -m autoshard.models %autoshard_src/configs/models/llama-tiny-cpu.json --batch 4 --seq 6 --vocab-multiple 8 -q | shard-opt --tfm-autodiff | not shard-opt --dist-apply-plan="plan=cp=2,cp_layout=zigzag" --dist-propagate --dist-zigzag-sequence 2>&1 | FileCheck %s --check-prefix=SEQ
// SEQ: plan cp=2,cp_layout=zigzag: the sequence length 6 of entry '{{.*}}' is not divisible by 2*cp = 4 (use a multiple, or cp_layout=contiguous)
// Experts with a capacity (tokens beyond it dropped): the slots go to the
// tokens in original order, as on one rank (mixtral_ep_capacity sweep).
// RUN: %python -m autoshard.models %autoshard_src/configs/models/mixtral-tiny-cpu.json --batch 4 --seq 8 --vocab-multiple 8 --capacity-factor 1.0 -q | shard-opt --tfm-autodiff | shard-opt --dist-apply-plan="plan=cp=2,ep=2,cp_layout=zigzag" --dist-propagate --dist-zigzag-sequence | FileCheck %s --check-prefix=MOE
// MOE-LABEL: func.func private @mixtral_block_fwd(
// MOE: tfm.moe_dispatch {{.*}}zigzag_chunks = 4 : i64
// MOE: tfm.moe_combine {{.*}}zigzag_chunks = 4 : i64
// MOE-LABEL: func.func private @mixtral_block_bwd(
// MOE: tfm.moe_combine_grad {{.*}}zigzag_chunks = 4 : i64
// MOE: tfm.moe_dispatch_grad {{.*}}zigzag_chunks = 4 : i64
