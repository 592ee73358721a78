// dist-explain on a hand-written partitioned program with known collectives
// (Inputs/explain-toy.mlir: its header lists them), in func form (lowered on
// a copy), in rt form, as JSON, with a baseline; then on nanoGPT through the
// whole pipeline, where an independent recount of the partitioned IR must
// match the report.
// RUN: shard-opt %S/Inputs/explain-toy.mlir --dist-explain -o /dev/null | FileCheck %s
// RUN: shard-opt %S/Inputs/explain-toy.mlir --dist-explain -o %t.toy.mlir > /dev/null
// RUN: shard-opt %S/Inputs/explain-toy.mlir | diff - %t.toy.mlir
// RUN: shard-opt %S/Inputs/explain-toy.mlir --rt-lower --rt-plan-memory --dist-explain -o /dev/null | FileCheck %s --check-prefix=RT
// RUN: shard-opt %S/Inputs/explain-toy.mlir --rt-lower --dist-explain="baseline=%S/Inputs/explain-toy-baseline.json output=%t.txt" -o /dev/null
// RUN: FileCheck %s --check-prefix=BASE < %t.txt
// RUN: shard-opt %S/Inputs/explain-toy.mlir --dist-explain="format=json baseline=%S/Inputs/explain-toy-baseline.json" -o /dev/null | FileCheck %s --check-prefix=JSON
// RUN: not shard-opt %S/Inputs/explain-toy.mlir --dist-explain="format=xml" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-FORMAT
// RUN: not shard-opt %S/Inputs/explain-toy.mlir --dist-explain="baseline=%t.missing.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERR-BASE
//
// nanoGPT (batch 4, seq 8), plan dp=2,tp=2,sp=1,zero=1:
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 4 --seq 8 --vocab-multiple 8 -q | shard-opt --tfm-autodiff -o %t.ts.mlir
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=2,tp=2,sp=1,zero=1" --dist-propagate --dist-partition --dist-explain="format=json output=%t.gpt.json" -o %t.gpt.mlir
// RUN: %python %S/Inputs/count_collectives.py %t.gpt.mlir %t.gpt.json | FileCheck %s --check-prefix=RECOUNT
// RUN: shard-opt %t.gpt.mlir --dist-explain -o /dev/null | FileCheck %s --check-prefix=GPT
// RUN: shard-opt %t.gpt.mlir --rt-lower --rt-plan-memory --dist-explain -o /dev/null | FileCheck %s --check-prefix=GPT-RT
// Bucketed (dist-bucket-collectives): one collective per bucket, classified
// by the tensors in it; the recount of the IR still matches.
// RUN: shard-opt %t.gpt.mlir --dist-bucket-collectives --dist-explain="format=json output=%t.bucket.json" -o %t.bucket.mlir
// RUN: %python %S/Inputs/count_collectives.py %t.bucket.mlir %t.bucket.json | FileCheck %s --check-prefix=RECOUNT-BUCKET
// RUN: shard-opt %t.bucket.mlir --dist-explain -o /dev/null | FileCheck %s --check-prefix=BUCKET
// And without a plan (one rank): nothing split, no collective.
// RUN: shard-opt %t.ts.mlir --rt-lower --dist-explain -o /dev/null | FileCheck %s --check-prefix=ONE
//
// With activation recomputation (tfm-recompute, full): a strategy row, and
// the re-runs carry the forward's collectives but the last reduce-scatter
// (the MLP down-projection only the output needs is not re-run); with
// selective, the backward recomputes locally (its collectives are those of
// the backward without recomputation).
// RUN: shard-opt %t.ts.mlir --tfm-recompute=mode=full --dist-apply-plan="plan=dp=2,tp=2,sp=1,recompute=full" --dist-propagate --dist-partition --dist-explain -o /dev/null | FileCheck %s --check-prefix=RECOMP
// RUN: shard-opt %t.ts.mlir --tfm-recompute=mode=selective --dist-apply-plan="plan=dp=2,tp=2,sp=1,recompute=selective" --dist-propagate --dist-partition --dist-explain -o /dev/null | FileCheck %s --check-prefix=RECOMP-SEL
// RECOMP: plan: dp=2,tp=2,sp=1{{.*}}recompute=full
// RECOMP: Recomp  full  layers keep only their input; each layer's forward re-runs right before its backward (@gpt2_block_recompute_full x4 per step)
// RECOMP: gpt2_block_recompute_full (called 4x): all_gather[tp] x2, reduce_scatter[tp] x1
// RECOMP-SEL: Recomp  selective norms and elementwise activations are recomputed at the start of each layer's backward from the kept matmul and attention outputs (@gpt2_block_selective_bwd x4 per step)
// RECOMP-SEL: gpt2_block_selective_bwd (called 4x): all_gather[tp] x4, reduce_scatter[tp] x2

// CHECK-LABEL: dist-explain: toy
// CHECK-NEXT: plan: dp=2,tp=2,sp=0,zero=1
// CHECK-NEXT: mesh: [dp=2, tp=2], world size 4
// CHECK: strategies (what is split on which axis, from the entry's shardings; roles from tfm.role)
// CHECK-NEXT: DP      dp=2  batch: tokens dim 0 (4x4x8 -> 2x4x8);
// CHECK-NEXT: ZeRO-1  dp=2  optimizer states m, v: 1 of 1 split on dp; optimizer state per rank 256 B -> 64 B
// CHECK-NEXT: TP      tp=2  columns (last dim): attn_q (1); rows (dim 0): attn_out (1); replicated: norm (1); split parameters per rank 512 B -> 256 B
// CHECK-NOT: SP
// CHECK: collectives per train_step per rank
// CHECK-NEXT: strategy        op              axes    count   bytes/step
// CHECK-NEXT: DP              all_reduce      dp          1        256 B
// CHECK-NEXT: ZeRO-1          all_gather      dp          1         64 B
// CHECK-NEXT: ZeRO-1          reduce_scatter  dp          1        128 B
// CHECK-NEXT: TP              all_reduce      tp          3        768 B
// CHECK-NEXT: loss/grad norm  all_reduce      dp,tp       1          4 B
// CHECK-NEXT: total                                       7     1.19 KiB
// CHECK-NEXT: per call:
// CHECK-NEXT: blk (called 3x): all_reduce[tp] x1
// CHECK-NEXT: train_step (called 1x): all_reduce[dp] x1, reduce_scatter[dp] x1, all_gather[dp] x1, all_reduce[dp,tp] x1
// CHECK: memory per rank (train_step)
// CHECK-NEXT: with plan      without  ratio
// CHECK-NEXT: state: params                   288 B        544 B   0.53
// CHECK-NEXT: state: optimizer m               64 B        256 B   0.25
// CHECK-NEXT: state: optimizer v                0 B          0 B
// CHECK-NEXT: state: total                    352 B        800 B   0.44
// CHECK-NEXT: transient: frame {{.*}} n/a
// CHECK: at peak: live total {{.*}} n/a
// CHECK: transient n/a (pass baseline=<one-rank artifact.json>)

// Already lowered: the same counts; states are named by their names.
// RT: TP      tp=2  columns (last dim): wq (1); rows (dim 0): wo (1); replicated: ln (1)
// RT: TP              all_reduce      tp          3        768 B
// RT: total                                       7     1.19 KiB
// RT: blk (called 3x): all_reduce[tp] x1

// BASE: state: total                    352 B        800 B   0.44
// BASE-NEXT: transient: frame {{.*}}     4.00 KiB
// BASE-NEXT: at peak: activation {{.*}}     3.00 KiB
// BASE: at peak: io {{.*}}     1.00 KiB
// BASE: at peak: live total {{.*}}     4.00 KiB
// BASE-NEXT: total: state + frame {{.*}}     4.78 KiB
// BASE-NEXT: transient from {{.*}}explain-toy-baseline.json (world size 1, state there 800 B)

// JSON: "collectives": [
// JSON: "bytes": 768,
// JSON-NEXT: "count": 3,
// JSON-NEXT: "op": "all_reduce",
// JSON-NEXT: "strategy": "TP"
// JSON: "functions": {
// JSON-NEXT: "blk": {
// JSON-NEXT: "calls": 3,
// JSON: "frame": {
// JSON-NEXT: "with": {{[0-9]+}},
// JSON-NEXT: "without": 4096
// JSON: "state_total": {
// JSON-NEXT: "with": 352,
// JSON-NEXT: "without": 800
// JSON: "world_size": 4

// ERR-FORMAT: dist-explain: format must be 'text' or 'json', found 'xml'
// ERR-BASE: dist-explain: cannot read baseline

// RECOUNT: match: 129 collectives

// Per block call: forward 2 all-gathers + 2 reduce-scatters on the sequence
// dim (SP), backward 4 + 2 (DESIGN.md §12); the ZeRO-1 gradient
// reduce-scatters and parameter all-gathers are in the train step.
// GPT-LABEL: dist-explain: nanogpt-shakespeare-char-cpu
// GPT: plan: dp=2,tp=2,sp=1,zero=1
// GPT: DP      dp=2  batch: tokens dim 0 (4x8 -> 2x8), labels dim 0 (4x8 -> 2x8);
// GPT: ZeRO-1  dp=2  optimizer states m, v: 70 of 70 split on dp
// GPT: TP      tp=2  columns (last dim): attn_q, attn_k, attn_v, mlp_up (16); rows (dim 0): attn_out, mlp_down (8); vocab: embedding (1); replicated: pos_embedding, norm (10)
// GPT: SP      tp=2  sequence dim 1 of the residual stream on tp (2x8x128 -> 2x4x128 per rank between blocks)
// GPT: ZeRO-1          reduce_scatter  dp         35
// GPT: SP              all_gather      tp         26
// GPT: SP              reduce_scatter  tp         18
// GPT: total                                     129
// GPT: gpt2_block_fwd (called 4x): all_gather[tp] x2, reduce_scatter[tp] x2
// GPT-NEXT: gpt2_block_bwd (called 4x): all_gather[tp] x4, reduce_scatter[tp] x2
// GPT: state: params {{.*}} 0.51
// GPT: state: optimizer m {{.*}} 0.25
// GPT: state: optimizer v {{.*}} 0.25

// GPT-RT: total                                     129
// GPT-RT: gpt2_block_fwd (called 4x): all_gather[tp] x2, reduce_scatter[tp] x2
// GPT-RT-NEXT: gpt2_block_bwd (called 4x): all_gather[tp] x4, reduce_scatter[tp] x2

// RECOUNT-BUCKET: match: 52 collectives

// The 35 parameter all-gathers over dp become one; the 35 gradient
// reduce-scatters one per layer (right after its backward: the final
// norm's, one per block, the first block's with the embeddings'), and so
// do the norms' gradient all-reduces over tp; the backward's 4 sequence
// all-gathers per block become 2.
// BUCKET: ZeRO-1          all_gather      dp          1
// BUCKET: ZeRO-1          reduce_scatter  dp          5
// BUCKET: TP              all_reduce      tp          7
// BUCKET: SP              all_gather      tp         17
// BUCKET: SP              reduce_scatter  tp         18
// BUCKET: loss/grad norm  all_reduce      dp          2          8 B
// BUCKET: total                                      52
// BUCKET: gpt2_block_fwd (called 4x): all_gather[tp] x2, reduce_scatter[tp] x2
// BUCKET-NEXT: gpt2_block_bwd (called 4x): all_gather[tp] x2, reduce_scatter[tp] x2

// ONE: plan: none (no dist.plan)
// ONE-NEXT: mesh: none, world size 1
// ONE: none: every tensor is replicated
// ONE: total                                       0          0 B
// ONE: state: total {{.*}}   1.00
// ONE: transient: frame {{.*}}   1.00
// ONE: transient from this program (world size 1
