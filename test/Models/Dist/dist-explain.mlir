// dist-explain on the builder's models; the tests on hand-written IR are
// test/Dialect/Dist/dist-explain.mlir.

// nanoGPT (batch 4, seq 8), plan dp=2,tp=2,sp=1,zero=1:
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 4 --seq 8 --vocab-multiple 8 -q | shard-opt --tfm-autodiff -o %t.ts.mlir
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=2,tp=2,sp=1,zero=1" --dist-propagate --dist-partition --dist-explain="format=json output=%t.gpt.json" -o %t.gpt.mlir
// RUN: %python %autoshard_src/test/Dialect/Dist/Inputs/count_collectives.py %t.gpt.mlir %t.gpt.json | FileCheck %s --check-prefix=RECOUNT
// RUN: shard-opt %t.gpt.mlir --dist-explain -o /dev/null | FileCheck %s --check-prefix=GPT
// RUN: shard-opt %t.gpt.mlir --rt-lower --rt-plan-memory --dist-explain -o /dev/null | FileCheck %s --check-prefix=GPT-RT
// Bucketed (dist-bucket-collectives): one collective per bucket, classified
// by the tensors in it; the recount of the IR still matches.
// RUN: shard-opt %t.gpt.mlir --dist-bucket-collectives --dist-explain="format=json output=%t.bucket.json" -o %t.bucket.mlir
// RUN: %python %autoshard_src/test/Dialect/Dist/Inputs/count_collectives.py %t.bucket.mlir %t.bucket.json | FileCheck %s --check-prefix=RECOUNT-BUCKET
// RUN: shard-opt %t.bucket.mlir --dist-explain -o /dev/null | FileCheck %s --check-prefix=BUCKET
// And without a plan (one rank): nothing split, no collective.
// RUN: shard-opt %t.ts.mlir --rt-lower --dist-explain -o /dev/null | FileCheck %s --check-prefix=ONE

// With pp, format=json also gives every pipeline rank's memory plan
// (`pipeline_ranks`: held states by kind, frame, live bytes per category at
// its peak); `memory` is the heaviest rank's (largest frame + held states),
// here rank 0, whose figures both carry.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 4 --seq 8 --vocab-multiple 8 -q | shard-opt --tfm-autodiff=microbatches=2 -o %t.ts2.mlir
// RUN: shard-opt %t.ts2.mlir --plan pp=2,dp=2,mb=2,schedule=interleaved,vpp=2 --dist-propagate --dist-partition --dist-pipeline-split --dist-explain="format=json" -o /dev/null | FileCheck %s --check-prefix=PP-JSON
// The one-rank JSON has no pipeline_ranks.
// RUN: shard-opt %t.gpt.mlir --dist-explain="format=json" -o /dev/null | FileCheck %s --check-prefix=NO-PP-JSON
// PP-JSON:      "frame": {
// PP-JSON-NEXT:   "with": [[FRAME:[0-9]+]],
// PP-JSON:      "peak_grad": {
// PP-JSON-NEXT:   "with": [[GRAD:[0-9]+]],
// PP-JSON:      "state_param": {
// PP-JSON-NEXT:   "with": [[PARAM:[0-9]+]],
// The model's booleans are JSON booleans (`true` was read as the integer -1).
// PP-JSON:      "tie_word_embeddings": true,
// PP-JSON:      "pipeline_ranks": [
// PP-JSON-NEXT:   {
// PP-JSON-NEXT:     "frame": [[FRAME]],
// PP-JSON-NEXT:     "function": "train_step__pp0",
// PP-JSON-NEXT:     "peak": {
// PP-JSON-NEXT:       "activation": {{[0-9]+}},
// PP-JSON-NEXT:       "grad": [[GRAD]],
// PP-JSON-NEXT:       "io": {{[0-9]+}},
// PP-JSON-NEXT:       "workspace": 0
// PP-JSON-NEXT:     },
// PP-JSON-NEXT:     "pp_rank": 0,
// PP-JSON-NEXT:     "state": {
// PP-JSON-NEXT:       "opt_m": [[PARAM]],
// PP-JSON-NEXT:       "opt_v": [[PARAM]],
// PP-JSON-NEXT:       "param": [[PARAM]]
// PP-JSON-NEXT:     }
// PP-JSON-NEXT:   },
// PP-JSON-NEXT:   {
// PP-JSON-NEXT:     "frame": {{[0-9]+}},
// PP-JSON-NEXT:     "function": "train_step__pp1",
// PP-JSON:          "pp_rank": 1,
// PP-JSON:      ],
// PP-JSON:      "pp_stage": 0,
// NO-PP-JSON-NOT: pipeline_ranks

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

// RECOUNT-BUCKET: match: 56 collectives

// The 35 gradient reduce-scatters become one per layer (right after its
// backward: the final norm's, one per block, the first block's with the
// embeddings'), the 35 parameter all-gathers over dp one per gradient
// bucket (each starts behind the next buckets' updates), and so
// do the norms' gradient all-reduces over tp; the backward's 4 sequence
// all-gathers per block become 2.
// BUCKET: ZeRO-1          all_gather      dp          5
// BUCKET: ZeRO-1          reduce_scatter  dp          5
// BUCKET: TP              all_reduce      tp          7
// BUCKET: SP              all_gather      tp         17
// BUCKET: SP              reduce_scatter  tp         18
// BUCKET: loss/grad norm  all_reduce      dp          2          8 B
// BUCKET: total                                      56
// BUCKET: gpt2_block_fwd (called 4x): all_gather[tp] x2, reduce_scatter[tp] x2
// BUCKET-NEXT: gpt2_block_bwd (called 4x): all_gather[tp] x2, reduce_scatter[tp] x2

// ONE: plan: none (no dist.plan)
// ONE-NEXT: mesh: none, world size 1
// ONE: none: every tensor is replicated
// ONE: total                                       0          0 B
// ONE: state: total {{.*}}   1.00
// ONE: transient: frame {{.*}}   1.00
// ONE: transient from this program (world size 1
