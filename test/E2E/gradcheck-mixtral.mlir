// Gradient check of a compiled train step, end to end, on a tiny f64
// Mixtral (Llama attention with GQA + MoE: softmax top-2 of 4 experts,
// renormalised gates, dropless capacity C = S, dispatch/combine, aux
// load-balancing loss with coefficient 0.1 so that its gradient weighs in)
// (Inputs/tiny-mixtral.json: 2 layers, hidden 16, vocab 11; batch 2, seq 8).
// Top-k routing is piecewise constant: the driver checks that no routing
// decision flips between p - h d and p + h d (smoothness of the f64 logits
// and of the loss at h and h / 2) and redraws / shrinks the step otherwise;
// with these seeds no direction needs it.
// shard-gradcheck recovers the gradients AdamW receives from opt_m after one
// lr = 0 step (max-grad-norm=1e30 makes the clip coefficient 1) and compares
// <grad, d> with central differences of the eval loss along two directions
// per parameter tensor; relative tolerance 1e-2 (plus the f32 rounding of the
// loss), see runtime/tools/gradcheck/shard-gradcheck.cpp.
//
// REQUIRES: runtime
// RUN: %python -m autoshard.models %S/Inputs/tiny-mixtral.json --batch 2 --seq 8 --dtype f64 -q -o %t.mlir
// RUN: shard-opt %t.mlir --tfm-autodiff="max-grad-norm=1e30 beta1=0.9" -o %t.ts.mlir
// RUN: shard-opt %t.ts.mlir --rt-lower --rt-plan-memory --rt-export="output=%t.json" -o /dev/null
// RUN: shard-gradcheck %t.json | FileCheck %s --implicit-check-not=FAIL

// CHECK: gradcheck tiny-mixtral: 23 parameter tensors, batch 2, seq 8
// CHECK-NEXT: loss {{[0-9.]+}} (train_step {{[0-9.]+}}), grad norm {{.*}} (from opt_m {{.*}})
// CHECK: tok_embeddings f64[11, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.0.attention_norm.weight f64[16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.0.attn.wq f64[16, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.0.attn.wk f64[16, 8] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.0.attn.wv f64[16, 8] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.0.attn.wo f64[16, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.0.ffn_norm.weight f64[16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.0.moe.router f64[16, 4] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.0.moe.experts.w_gate f64[4, 16, 32] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.0.moe.experts.w_up f64[4, 16, 32] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.0.moe.experts.w_down f64[4, 32, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.1.attention_norm.weight f64[16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.1.attn.wq f64[16, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.1.attn.wk f64[16, 8] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.1.attn.wv f64[16, 8] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.1.attn.wo f64[16, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.1.ffn_norm.weight f64[16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.1.moe.router f64[16, 4] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.1.moe.experts.w_gate f64[4, 16, 32] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.1.moe.experts.w_up f64[4, 16, 32] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.1.moe.experts.w_down f64[4, 32, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: norm.weight f64[16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: lm_head f64[16, 11] |g| {{.*}} max rel err {{.*}} ok
// CHECK: summary: 23 tensors, {{[0-9]+}} directions, max rel error {{.*}}, tolerance 1e-02, 0 failed
// CHECK-NEXT: PASS
