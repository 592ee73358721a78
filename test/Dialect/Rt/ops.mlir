// Round trip of every rt op, planned and unplanned.
// RUN: shard-opt %s | FileCheck %s
// RUN: shard-opt %s | shard-opt | FileCheck %s
// RUN: shard-opt %s --mlir-print-op-generic | shard-opt | FileCheck %s

// CHECK: rt.state_def @wte param init normal std 2.000000e-02 decay : !rt.buffer<65x128xf32>
rt.state_def @wte param init normal std 2.000000e-02 decay : !rt.buffer<65x128xf32>
// CHECK: rt.state_def @wte.exp_avg opt_m of @wte init zeros : !rt.buffer<65x128xf32>
rt.state_def @"wte.exp_avg" opt_m of @wte init zeros : !rt.buffer<65x128xf32>
// CHECK: rt.state_def @wte.exp_avg_sq opt_v of @wte init zeros : !rt.buffer<65x128xf32>
rt.state_def @"wte.exp_avg_sq" opt_v of @wte init zeros : !rt.buffer<65x128xf32>
// CHECK: rt.state_def @ln_f param init ones : !rt.buffer<128xf32>
rt.state_def @ln_f param init ones : !rt.buffer<128xf32>
// CHECK: rt.state_def @lm_head param init normal std 2.000000e-02 logical [128, 65] decay : !rt.buffer<128x128xf32>
rt.state_def @lm_head param init normal std 2.000000e-02 logical [128, 65] decay : !rt.buffer<128x128xf32>

// CHECK-LABEL: rt.func @block(%arg0: !rt.buffer<2x8x128xf32>, %arg1: !rt.buffer<i64>, %arg2: !rt.buffer<2x8x128xf32>) {
// CHECK-NEXT: %[[T:.*]] = rt.alloc activation : !rt.buffer<2x8x128xf32>
// CHECK-NEXT: rt.kernel "gelu"(%arg0) -> (%[[T]]) attrs {tanh_approx} : (!rt.buffer<2x8x128xf32>) -> !rt.buffer<2x8x128xf32>
// CHECK-NEXT: %[[V:.*]] = rt.view %arg2 : !rt.buffer<2x8x128xf32> to !rt.buffer<2x8x4x32xf32>
// CHECK-NEXT: %[[T4:.*]] = rt.view %[[T]] : !rt.buffer<2x8x128xf32> to !rt.buffer<2x8x4x32xf32>
// CHECK-NEXT: rt.kernel "rope"(%[[T4]]) -> (%[[V]]) attrs {theta = 1.000000e+04 : f64}
// CHECK-NEXT: rt.return
rt.func @block(%x: !rt.buffer<2x8x128xf32>, %layer: !rt.buffer<i64>, %y: !rt.buffer<2x8x128xf32>) {
  %t = rt.alloc activation : !rt.buffer<2x8x128xf32>
  rt.kernel "gelu"(%x) -> (%t) attrs {tanh_approx} : (!rt.buffer<2x8x128xf32>) -> !rt.buffer<2x8x128xf32>
  %y4 = rt.view %y : !rt.buffer<2x8x128xf32> to !rt.buffer<2x8x4x32xf32>
  %t4 = rt.view %t : !rt.buffer<2x8x128xf32> to !rt.buffer<2x8x4x32xf32>
  rt.kernel "rope"(%t4) -> (%y4) attrs {theta = 1.000000e+04 : f64} : (!rt.buffer<2x8x4x32xf32>) -> !rt.buffer<2x8x4x32xf32>
  rt.return
}

// CHECK-LABEL: rt.func @planned(%arg0: !rt.buffer<2x8x128xf32>, %arg1: !rt.buffer<2x8x128xf32>) attributes {frame_bytes = 8192 : i64, peak_breakdown = {activation = 8192 : i64, grad = 0 : i64, io = 0 : i64, workspace = 0 : i64}} {
// CHECK-NEXT: rt.alloc grad at 0 : !rt.buffer<2x8x128xf32>
// CHECK-NEXT: rt.alloc workspace at 8192 : !rt.buffer<0xf32>
rt.func @planned(%x: !rt.buffer<2x8x128xf32>, %y: !rt.buffer<2x8x128xf32>)
    attributes {frame_bytes = 8192 : i64, peak_breakdown = {activation = 8192 : i64, grad = 0 : i64, io = 0 : i64, workspace = 0 : i64}} {
  %t = rt.alloc grad at 0 : !rt.buffer<2x8x128xf32>
  %e = rt.alloc workspace at 8192 : !rt.buffer<0xf32>
  rt.kernel "scale"(%x) -> (%t) attrs {factor = 2.000000e+00 : f64} : (!rt.buffer<2x8x128xf32>) -> !rt.buffer<2x8x128xf32>
  rt.kernel "add"(%t, %x) -> (%y) : (!rt.buffer<2x8x128xf32>, !rt.buffer<2x8x128xf32>) -> !rt.buffer<2x8x128xf32>
  rt.return
}

// CHECK-LABEL: rt.func @train_step() attributes {entry = "train_step"} {
// CHECK-NEXT: %[[TOK:.*]] = rt.input "tokens" : !rt.buffer<2x8xi32>
// CHECK-NEXT: %[[LOSS:.*]] = rt.output "loss" : !rt.buffer<f32>
// CHECK-NEXT: %[[W:.*]] = rt.state @wte : !rt.buffer<65x128xf32>
// CHECK-NEXT: %[[M:.*]] = rt.state @wte.exp_avg : !rt.buffer<65x128xf32>
// CHECK-NEXT: %[[C:.*]] = rt.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[L:.*]] = rt.const dense<[0, 1]> : tensor<2xi64>
// CHECK-NEXT: %[[H:.*]] = rt.alloc activation : !rt.buffer<2x8x128xf32>
// CHECK-NEXT: rt.kernel "embedding"(%[[TOK]], %[[W]]) -> (%[[H]])
// CHECK: rt.call @block(%[[H]], %{{.*}}, %[[H]]) : !rt.buffer<2x8x128xf32>, !rt.buffer<i64>, !rt.buffer<2x8x128xf32>
// CHECK: rt.kernel "adamw"(%[[W]], %[[W]], %[[M]], %[[M]], %[[C]], %{{.*}}, %[[C]]) -> (%[[W]], %[[M]], %[[M]]) attrs {beta1 = 9.000000e-01 : f64}
rt.func @train_step() attributes {entry = "train_step"} {
  %tokens = rt.input "tokens" : !rt.buffer<2x8xi32>
  %loss = rt.output "loss" : !rt.buffer<f32>
  %w = rt.state @wte : !rt.buffer<65x128xf32>
  %m = rt.state @"wte.exp_avg" : !rt.buffer<65x128xf32>
  %c = rt.const dense<1.000000e+00> : tensor<f32>
  %layers = rt.const dense<[0, 1]> : tensor<2xi64>
  %h = rt.alloc activation : !rt.buffer<2x8x128xf32>
  rt.kernel "embedding"(%tokens, %w) -> (%h) : (!rt.buffer<2x8xi32>, !rt.buffer<65x128xf32>) -> !rt.buffer<2x8x128xf32>
  %l0 = rt.const dense<0> : tensor<i64>
  rt.call @block(%h, %l0, %h) : !rt.buffer<2x8x128xf32>, !rt.buffer<i64>, !rt.buffer<2x8x128xf32>
  %step = rt.const dense<1> : tensor<i64>
  rt.kernel "adamw"(%w, %w, %m, %m, %c, %step, %c) -> (%w, %m, %m) attrs {beta1 = 9.000000e-01 : f64} : (!rt.buffer<65x128xf32>, !rt.buffer<65x128xf32>, !rt.buffer<65x128xf32>, !rt.buffer<65x128xf32>, !rt.buffer<f32>, !rt.buffer<i64>, !rt.buffer<f32>) -> (!rt.buffer<65x128xf32>, !rt.buffer<65x128xf32>, !rt.buffer<65x128xf32>)
  rt.return
}

// CHECK-LABEL: rt.func @planned_entry() attributes {entry = "eval", frame_bytes = 128 : i64} {
// CHECK-NEXT: rt.input "x" at 0 : !rt.buffer<f32>
// CHECK-NEXT: rt.output "y" at 64 : !rt.buffer<f32>
// CHECK-NEXT: rt.call @empty() at 128{{$}}
rt.func @planned_entry() attributes {entry = "eval", frame_bytes = 128 : i64} {
  %x = rt.input "x" at 0 : !rt.buffer<f32>
  %y = rt.output "y" at 64 : !rt.buffer<f32>
  rt.call @empty() at 128
  rt.kernel "scale"(%x) -> (%y) attrs {factor = 2.000000e+00 : f64} : (!rt.buffer<f32>) -> !rt.buffer<f32>
  rt.return
}

rt.func @empty() attributes {frame_bytes = 0 : i64} {
  rt.return
}
