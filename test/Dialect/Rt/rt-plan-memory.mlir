// Exact plan of a small program, computed by hand (64-byte alignment).
// RUN: shard-opt %s --rt-plan-memory | FileCheck %s
// The plan passes its own independent check when read back.
// RUN: shard-opt %s --rt-plan-memory | shard-opt --rt-plan-memory=verify-only=true -o /dev/null

// Instructions: 1 gelu, 3 scale, 4 add. %t (64 B) is live over [1, 3],
// %u (160 B) over [3, 4]: they meet at 3, so %u goes after %t, at 64; the
// frame ends at 224, rounded up to 256. Peak at 3: 64 activation + 160
// workspace.
// CHECK-LABEL: rt.func @callee(
// CHECK-SAME: frame_bytes = 256 : i64, peak_breakdown = {activation = 64 : i64, grad = 0 : i64, io = 0 : i64, workspace = 160 : i64}
// CHECK-NEXT: rt.alloc activation at 0 : !rt.buffer<16xf32>
// CHECK: rt.alloc workspace at 64 : !rt.buffer<40xf32>
rt.func @callee(%x: !rt.buffer<16xf32>, %y: !rt.buffer<16xf32>) {
  %t = rt.alloc activation : !rt.buffer<16xf32>
  rt.kernel "gelu"(%x) -> (%t) : (!rt.buffer<16xf32>) -> !rt.buffer<16xf32>
  %u = rt.alloc workspace : !rt.buffer<40xf32>
  rt.kernel "scale"(%t) -> (%u) : (!rt.buffer<16xf32>) -> !rt.buffer<40xf32>
  rt.kernel "add"(%u, %x) -> (%y) : (!rt.buffer<40xf32>, !rt.buffer<16xf32>) -> !rt.buffer<16xf32>
  rt.return
}

// Instructions: 3 gelu, 5 call, 8 foo, 9 sum; 11 ops, so the slots are live
// over [0, 10]. Placement in order of first use, larger first:
//   %x [0, 64), %y [64, 68)                       (slots, whole function)
//   %a (live 3..5)   -> 128                       (above both slots)
//   call (5, 256 B)  -> 192: [192, 448)           (above %a)
//   %b (live 5..8)   -> 448                       (above the callee frame)
//   %c (live 8..9, 128 B) -> 128: reuses %a's bytes and the callee's, which
//                            are dead by then
// Frame: 512. Peak at the call: io 68, activation 64 (%a) + 64 (callee),
// grad 64 (%b), workspace 160 (callee).
// CHECK-LABEL: rt.func @main()
// CHECK-SAME: entry = "train_step", frame_bytes = 512 : i64, peak_breakdown = {activation = 128 : i64, grad = 64 : i64, io = 68 : i64, workspace = 160 : i64}
// CHECK-NEXT: rt.input "x" at 0 : !rt.buffer<16xf32>
// CHECK-NEXT: rt.output "y" at 64 : !rt.buffer<f32>
// CHECK-NEXT: rt.alloc activation at 128 : !rt.buffer<16xf32>
// CHECK-NEXT: rt.kernel "gelu"
// CHECK-NEXT: rt.alloc grad at 448 : !rt.buffer<16xf32>
// CHECK-NEXT: rt.call @callee({{.*}}) at 192 :
// CHECK-NEXT: rt.alloc grad at 128 : !rt.buffer<32xf32>
rt.func @main() attributes {entry = "train_step"} {
  %x = rt.input "x" : !rt.buffer<16xf32>
  %y = rt.output "y" : !rt.buffer<f32>
  %a = rt.alloc activation : !rt.buffer<16xf32>
  rt.kernel "gelu"(%x) -> (%a) : (!rt.buffer<16xf32>) -> !rt.buffer<16xf32>
  %b = rt.alloc grad : !rt.buffer<16xf32>
  rt.call @callee(%a, %b) : !rt.buffer<16xf32>, !rt.buffer<16xf32>
  %c = rt.alloc grad : !rt.buffer<32xf32>
  %cv = rt.view %c : !rt.buffer<32xf32> to !rt.buffer<2x16xf32>
  rt.kernel "foo"(%b) -> (%cv) : (!rt.buffer<16xf32>) -> !rt.buffer<2x16xf32>
  rt.kernel "sum"(%c) -> (%y) : (!rt.buffer<32xf32>) -> !rt.buffer<f32>
  rt.return
}
