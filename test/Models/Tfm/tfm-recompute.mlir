// tfm-recompute on the builder's models; the tests on hand-written IR are
// test/Dialect/Tfm/tfm-recompute.mlir.

// The builder's models: GPT-2 under selective keeps q, k, v, the attention
// output and log-sum-exp, the residual stream after attention and the MLP
// up-projection, and recomputes both LayerNorms and the GELU (a view of the
// attention output comes back as a reshape); Llama and Mixtral, and a model
// with dropout, compile under both modes and parse back.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 2 --seq 8 -q -o %t.nanogpt.mlir
// RUN: shard-opt %t.nanogpt.mlir --tfm-autodiff --tfm-recompute=mode=selective | shard-opt | FileCheck %s --check-prefix=GPT2
// RUN: shard-opt %t.nanogpt.mlir --tfm-autodiff --tfm-recompute=mode=full | shard-opt | FileCheck %s --check-prefix=GPT2-FULL
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 2 --seq 8 --dropout 0.1 -q -o %t.dropout.mlir
// RUN: shard-opt %t.dropout.mlir --tfm-autodiff --tfm-recompute=mode=full | shard-opt -o /dev/null
// RUN: shard-opt %t.dropout.mlir --tfm-autodiff --tfm-recompute=mode=selective | shard-opt -o /dev/null
// RUN: %python -m autoshard.models %configs/models/llama3-8b.json --batch 2 --seq 8 -q -o %t.llama.mlir
// RUN: shard-opt %t.llama.mlir --tfm-autodiff --tfm-recompute=mode=selective | shard-opt | FileCheck %s --check-prefix=LLAMA
// RUN: shard-opt %t.llama.mlir --tfm-autodiff --tfm-recompute=mode=full | shard-opt -o /dev/null
// RUN: %python -m autoshard.models %configs/models/mixtral-8x7b.json --batch 2 --seq 8 -q -o %t.mixtral.mlir
// RUN: shard-opt %t.mixtral.mlir --tfm-autodiff --tfm-recompute=mode=selective | shard-opt -o /dev/null
// RUN: shard-opt %t.mixtral.mlir --tfm-autodiff --tfm-recompute=mode=full | shard-opt -o /dev/null

// GPT2-LABEL: func.func private @gpt2_block_selective_fwd(
// GPT2-SAME: -> (tensor<2x8x128xf32>, tensor<2x8x4x32xf32>, tensor<2x8x4x32xf32>, tensor<2x8x4x32xf32>, tensor<2x8x4x32xf32>, tensor<2x4x8xf32>, tensor<2x8x128xf32>, tensor<2x8x512xf32>)
// GPT2-LABEL: func.func private @gpt2_block_selective_bwd(
// GPT2-NEXT: tfm.layer_norm
// GPT2-NEXT: tfm.reshape
// GPT2-NEXT: tfm.layer_norm
// GPT2-NEXT: tfm.gelu
// GPT2-NEXT: tfm.matmul {{.*}} {transpose_rhs}
// GPT2-LABEL: func.func @train_step(
// GPT2-COUNT-4: call @gpt2_block_selective_fwd(
// GPT2-COUNT-4: call @gpt2_block_selective_bwd(

// GPT2-FULL-LABEL: func.func @train_step(
// GPT2-FULL-COUNT-4: call @gpt2_block_full_fwd(
// GPT2-FULL-COUNT-4: call @gpt2_block_recompute_full({{.*}}tfm.recompute

// Llama: both RMSNorms and SwiGLU are recomputed; the RoPE outputs are kept
// (recomputing them would need the q and k projections, which are as large).
// LLAMA-LABEL: func.func private @llama_block_selective_bwd(
// LLAMA-NEXT: tfm.rms_norm
// LLAMA-NEXT: tfm.reshape
// LLAMA-NEXT: tfm.rms_norm
// LLAMA-NEXT: tfm.swiglu
// LLAMA-NEXT: tfm.matmul {{.*}} {transpose_rhs}
