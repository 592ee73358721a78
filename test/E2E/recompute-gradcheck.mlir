// Activation recomputation on the tiny f64 Llama (RMSNorm, RoPE, SwiGLU,
// GQA) and Mixtral (MoE router, dispatch, experts, combine, aux loss) of the
// gradient checks: with tfm-recompute selective and full, shard-gradcheck
// passes and prints exactly what it prints without recomputation (the same
// loss and the same gradients, bit for bit).
//
// REQUIRES: runtime
// RUN: %python -m autoshard.models %S/Inputs/tiny-llama.json --batch 2 --seq 8 --dtype f64 -q -o %t.llama.mlir
// RUN: shard-opt %t.llama.mlir --tfm-autodiff="max-grad-norm=1e30 beta1=0.9" --tfm-recompute=mode=none --rt-lower --rt-plan-memory --rt-export="output=%t.llama.none.json" -o /dev/null
// RUN: shard-opt %t.llama.mlir --tfm-autodiff="max-grad-norm=1e30 beta1=0.9" --tfm-recompute=mode=selective --rt-lower --rt-plan-memory --rt-export="output=%t.llama.selective.json" -o /dev/null
// RUN: shard-opt %t.llama.mlir --tfm-autodiff="max-grad-norm=1e30 beta1=0.9" --tfm-recompute=mode=full --rt-lower --rt-plan-memory --rt-export="output=%t.llama.full.json" -o /dev/null
// RUN: shard-gradcheck %t.llama.none.json > %t.llama.none.out
// RUN: shard-gradcheck %t.llama.selective.json > %t.llama.selective.out
// RUN: shard-gradcheck %t.llama.full.json > %t.llama.full.out
// RUN: diff %t.llama.none.out %t.llama.selective.out
// RUN: diff %t.llama.none.out %t.llama.full.out
// RUN: FileCheck %s --check-prefix=LLAMA --implicit-check-not=FAIL < %t.llama.full.out
// RUN: %python -m autoshard.models %S/Inputs/tiny-mixtral.json --batch 2 --seq 8 --dtype f64 -q -o %t.mixtral.mlir
// RUN: shard-opt %t.mixtral.mlir --tfm-autodiff="max-grad-norm=1e30 beta1=0.9" --tfm-recompute=mode=none --rt-lower --rt-plan-memory --rt-export="output=%t.mixtral.none.json" -o /dev/null
// RUN: shard-opt %t.mixtral.mlir --tfm-autodiff="max-grad-norm=1e30 beta1=0.9" --tfm-recompute=mode=selective --rt-lower --rt-plan-memory --rt-export="output=%t.mixtral.selective.json" -o /dev/null
// RUN: shard-opt %t.mixtral.mlir --tfm-autodiff="max-grad-norm=1e30 beta1=0.9" --tfm-recompute=mode=full --rt-lower --rt-plan-memory --rt-export="output=%t.mixtral.full.json" -o /dev/null
// RUN: shard-gradcheck %t.mixtral.none.json > %t.mixtral.none.out
// RUN: shard-gradcheck %t.mixtral.selective.json > %t.mixtral.selective.out
// RUN: shard-gradcheck %t.mixtral.full.json > %t.mixtral.full.out
// RUN: diff %t.mixtral.none.out %t.mixtral.selective.out
// RUN: diff %t.mixtral.none.out %t.mixtral.full.out
// RUN: FileCheck %s --check-prefix=MIXTRAL --implicit-check-not=FAIL < %t.mixtral.full.out

// LLAMA: gradcheck tiny-llama: 21 parameter tensors
// LLAMA: layers.0.attn.wq f64[16, 16] |g| {{.*}} ok
// MIXTRAL: gradcheck tiny-mixtral: 23 parameter tensors
