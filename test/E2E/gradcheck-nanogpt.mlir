// Gradient check of a compiled train step, end to end, on a tiny f64
// nanoGPT (no biases, exact GELU, learned positions, tied LM head)
// (Inputs/tiny-nanogpt.json: 2 layers, hidden 16, vocab 11; batch 2, seq 8).
// shard-gradcheck recovers the gradients AdamW receives from opt_m after one
// lr = 0 step (max-grad-norm=1e30 makes the clip coefficient 1) and compares
// <grad, d> with central differences of the eval loss along two directions
// per parameter tensor; relative tolerance 1e-2 (plus the f32 rounding of the
// loss), see runtime/tools/gradcheck/shard-gradcheck.cpp.
//
// REQUIRES: runtime
// RUN: %python -m autoshard.models %S/Inputs/tiny-nanogpt.json --batch 2 --seq 8 --dtype f64 -q -o %t.mlir
// RUN: shard-opt %t.mlir --tfm-autodiff="max-grad-norm=1e30 beta1=0.9" -o %t.ts.mlir
// RUN: shard-opt %t.ts.mlir --rt-lower --rt-plan-memory --rt-export="output=%t.json" -o /dev/null
// RUN: shard-gradcheck %t.json | FileCheck %s --implicit-check-not=FAIL

// CHECK: gradcheck tiny-nanogpt: 19 parameter tensors, batch 2, seq 8
// CHECK-NEXT: loss {{[0-9.]+}} (train_step {{[0-9.]+}}), grad norm {{.*}} (from opt_m {{.*}})
// CHECK: wte f64[11, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: wpe f64[8, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.0.ln_1.weight f64[16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.0.attn.wq f64[16, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.0.attn.wk f64[16, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.0.attn.wv f64[16, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.0.attn.wo f64[16, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.0.ln_2.weight f64[16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.0.mlp.w_fc f64[16, 64] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.0.mlp.w_proj f64[64, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.1.ln_1.weight f64[16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.1.attn.wq f64[16, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.1.attn.wk f64[16, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.1.attn.wv f64[16, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.1.attn.wo f64[16, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.1.ln_2.weight f64[16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.1.mlp.w_fc f64[16, 64] |g| {{.*}} max rel err {{.*}} ok
// CHECK: layers.1.mlp.w_proj f64[64, 16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: ln_f.weight f64[16] |g| {{.*}} max rel err {{.*}} ok
// CHECK: summary: 19 tensors, {{[0-9]+}} directions, max rel error {{.*}}, tolerance 1e-02, 0 failed
// CHECK-NEXT: PASS
