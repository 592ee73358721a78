// dist-pipeline-split with the chunked and zero-bubble schedules, and the
// cost-balanced layer split, on the nanoGPT CPU model (4 layers).
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 2 --seq 8 --vocab-multiple 8 -q -o %t.mlir
// RUN: shard-opt %t.mlir --tfm-autodiff=microbatches=2 -o %t.ts.mlir

// Interleaved 1F1B, pp=2 x vpp=2: four stages of one layer, stage s on rank
// s % 2 (Megatron's chunk c of rank r is stage c*p + r); rank 0 runs
// stages 0 and 2 in the order of algorithms.md §1.4.
// RUN: shard-opt %t.ts.mlir --plan pp=2,mb=2,schedule=interleaved,vpp=2 --dist-propagate --dist-partition --dist-pipeline-split --dist-verify-comm | FileCheck %s --check-prefix=IL
// IL: dist.pipeline_schedule = "rank0: 0F0 0F1 2F0 2F1 2B0 2B1 0B0 0B1\0Arank1: 1F0 1F1 3F0 3B0 3F1 3B1 1B0 1B1\0A"
// IL-SAME: dist.pipeline_stages = {first_layer = array<i64: 0, 1, 2, 3>
// IL-LABEL: func.func @train_step__pp0(
// IL-SAME: tfm.param = "layers.0.
// IL-NOT: tfm.param = "layers.1.
// IL-SAME: tfm.param = "layers.2.
// IL-SAME: dist.pp_chunks = array<i64: 0, 2>
// 0F0 0F1: layer 0, sent to stage 1 on rank 1.
// IL: call @gpt2_block_fwd
// IL-NEXT: dist.send_start {{.*}} peer = 1 {dist.tag = "F mb=0
// IL: call @gpt2_block_fwd
// IL-NEXT: dist.send_start {{.*}} peer = 1 {dist.tag = "F mb=1
// 2F0: layer 2 reads stage 1's output.
// IL: dist.recv {{.*}} peer = 1 {dist.tag = "F mb=0
// IL: call @gpt2_block_fwd
// 2B0: rank 1 sent the LM head's share of the tied embedding gradient
// (for stage 0) before the activation gradient (for stage 2); rank 0 takes
// both, in that order, before 2B0.
// IL: dist.recv {{.*}} peer = 1 {dist.tag = "B mb=0 {{.*}} : tensor<72x128xf32>
// IL: dist.recv {{.*}} peer = 1 {dist.tag = "B mb=0 {{.*}} : tensor<2x8x128xf32>
// IL: call @gpt2_block_bwd
// IL-LABEL: func.func @train_step__pp1(
// IL-SAME: dist.pp_chunks = array<i64: 1, 3>

// ZB-H1, pp=2: each block's backward is cut into an input-gradient call
// (I, on the critical path: its result is sent back at once) and a
// weight-gradient call (W, deferred: the six weight GEMMs of the block).
// RUN: shard-opt %t.ts.mlir --plan pp=2,mb=2,schedule=zb-h1 --dist-propagate --dist-partition --dist-pipeline-split --dist-verify-comm | FileCheck %s --check-prefix=ZB
// ZB: dist.pipeline_schedule = "rank0: 0F0 0F1 0I0 0W0 0I1 0W1\0Arank1: 1F0 1I0 1F1 1I1 1W0 1W1\0A"
// ZB-LABEL: func.func private @gpt2_block_bwd__input(
// ZB-SAME: tfm.func_kind = #tfm.func_kind<input_grad>
// ZB-NOT: tfm.matmul_wgrad
// ZB: return
// ZB-LABEL: func.func private @gpt2_block_bwd__weight(
// ZB-SAME: tfm.func_kind = #tfm.func_kind<weight_grad>
// ZB-COUNT-6: tfm.matmul_wgrad
// ZB-NOT: tfm.layer_norm_grad
// ZB: return
// Rank 1 (last stage): 1F0 1I0 1F1 1I1 1W0 1W1.
// ZB-LABEL: func.func @train_step__pp1(
// ZB: call @gpt2_block_fwd
// ZB: call @gpt2_block_fwd
// ZB: call @gpt2_block_bwd__input
// ZB: call @gpt2_block_bwd__input
// ZB: dist.send_start {{.*}} peer = 0 {dist.tag = "I mb=0 {{.*}} : tensor<2x8x128xf32>
// ZB: dist.recv {{.*}} peer = 0 {dist.tag = "F mb=1
// ZB: call @gpt2_block_bwd__input
// ZB: call @gpt2_block_bwd__input
// ZB: dist.send_start {{.*}} peer = 0 {dist.tag = "I mb=1 {{.*}} : tensor<2x8x128xf32>
// ZB-COUNT-4: call @gpt2_block_bwd__weight
// ZB: tfm.sum_squares

// ZB-V, pp=2: stages 0 and 3 on rank 0 (V shape), so the embedding and the
// LM head tied to it are on the same rank: only rank 0 holds `wte`.
// RUN: shard-opt %t.ts.mlir --plan pp=2,mb=2,schedule=zb-v,vpp=2 --dist-propagate --dist-partition --dist-pipeline-split --dist-verify-comm | FileCheck %s --check-prefix=ZBV
// ZBV-LABEL: func.func @train_step__pp0(
// ZBV-SAME: tfm.param = "wte"
// ZBV-SAME: dist.pp_chunks = array<i64: 0, 3>
// ZBV-LABEL: func.func @train_step__pp1(
// ZBV-NOT: tfm.param = "wte"
// ZBV-SAME: dist.pp_chunks = array<i64: 1, 2>

// Cost-balanced split: with a 4096-entry vocabulary the LM head and loss
// cost about two and a half layers, so the last of two stages keeps one
// layer (an even split would put 2 layers + head on it).
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 2 --seq 8 --vocab-multiple 4096 -q | shard-opt --tfm-autodiff | shard-opt --plan pp=2 --dist-propagate --dist-partition --dist-pipeline-split --dist-verify-comm | FileCheck %s --check-prefix=BALANCE
// BALANCE: dist.pipeline_stages = {first_layer = array<i64: 0, 3>, flops = array<i64: 58420224, 70324224>, num_layers = 4 : i64}
// BALANCE-LABEL: func.func @train_step__pp1(
// BALANCE-SAME: tfm.param = "layers.3.
// BALANCE-NOT: tfm.param = "layers.2.
// BALANCE-SAME: dist.pp_stage = 1

// A schedule the plan cannot run with these microbatches: interleaved
// needs mb a multiple of pp.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 2 --seq 8 --vocab-multiple 8 -q | shard-opt --tfm-autodiff=microbatches=3 | not shard-opt --plan pp=2,mb=3,schedule=interleaved,vpp=2 --dist-propagate --dist-partition --dist-pipeline-split 2>&1 | FileCheck %s --check-prefix=MBERR
// MBERR: error: dist-pipeline-split: {{.*}}interleaved
