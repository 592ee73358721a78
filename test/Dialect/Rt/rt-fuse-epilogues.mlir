// RUN: shard-opt %s -split-input-file --rt-fuse-epilogues | FileCheck %s
// The fused program still plans (every pair live at the fused kernel apart).
// RUN: shard-opt %s -split-input-file --rt-fuse-epilogues --rt-plan-memory -o /dev/null

// Forward residual (attention out-projection, MLP down-projection) in a
// callee: the add becomes the GEMM's third argument, written straight into
// the callee's output; the temporary is gone. The arguments alias nothing:
// the one caller passes an input slot, a state and an output slot.
// CHECK-LABEL: rt.func @block(
// CHECK-NEXT: %[[H:.*]] = rt.alloc activation
// CHECK-NEXT: rt.kernel "gelu"(%arg0) -> (%[[H]])
// CHECK-NEXT: rt.kernel "matmul"(%[[H]], %arg1, %arg0) -> (%arg2) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
// CHECK-NEXT: rt.return
rt.state_def @w param init normal std 2.000000e-02 : !rt.buffer<8x8xf32>
rt.func @block(%x: !rt.buffer<4x8xf32>, %w: !rt.buffer<8x8xf32>, %y: !rt.buffer<4x8xf32>) {
  %h = rt.alloc activation : !rt.buffer<4x8xf32>
  rt.kernel "gelu"(%x) -> (%h) : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  %t = rt.alloc activation : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%h, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "add"(%x, %t) -> (%y) : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}
rt.func @main() attributes {entry = "train_step"} {
  %x = rt.input "x" : !rt.buffer<4x8xf32>
  %w = rt.state @w : !rt.buffer<8x8xf32>
  %y = rt.output "y" : !rt.buffer<4x8xf32>
  rt.call @block(%x, %w, %y) : !rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>, !rt.buffer<4x8xf32>
  rt.return
}

// -----

// Backward: the input gradient summed over two branches. The first GEMM's
// temporary is added to the second's; the second is written between the
// two, which is fine: the fused kernel reads it where the add did. Its
// attributes stay. Then an accumulation in place (addend = result).
// CHECK-LABEL: rt.func @bwd(
// CHECK: rt.kernel "matmul"(%arg1, %arg3) -> (%[[G2:.*]]) attrs {transpose_rhs}
// CHECK-NEXT: %[[DX:.*]] = rt.alloc grad
// CHECK-NEXT: rt.kernel "matmul"(%arg0, %arg2, %[[G2]]) -> (%[[DX]]) attrs {transpose_rhs} : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
// CHECK-NEXT: rt.kernel "matmul"(%arg0, %arg3, %[[DX]]) -> (%[[DX]]) :
// CHECK-NEXT: rt.kernel "reshape"(%[[DX]]) -> (%arg4)
// CHECK-NOT: "add"
rt.func @bwd(%dy1: !rt.buffer<4x8xf32>, %dy2: !rt.buffer<4x8xf32>, %w1: !rt.buffer<8x8xf32>, %w2: !rt.buffer<8x8xf32>, %out: !rt.buffer<4x8xf32>) {
  %g1 = rt.alloc grad : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%dy1, %w1) -> (%g1) attrs {transpose_rhs} : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  %g2 = rt.alloc grad : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%dy2, %w2) -> (%g2) attrs {transpose_rhs} : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  %dx = rt.alloc grad : !rt.buffer<4x8xf32>
  rt.kernel "add"(%g1, %g2) -> (%dx) : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  %g3 = rt.alloc grad : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%dy1, %w2) -> (%g3) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "add"(%dx, %g3) -> (%dx) : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "reshape"(%dx) -> (%out) : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}
rt.state_def @w1 param init normal std 2.000000e-02 : !rt.buffer<8x8xf32>
rt.state_def @w2 param init normal std 2.000000e-02 : !rt.buffer<8x8xf32>
rt.func @bwd_main() attributes {entry = "train_step"} {
  %a = rt.input "a" : !rt.buffer<4x8xf32>
  %b = rt.input "b" : !rt.buffer<4x8xf32>
  %w1 = rt.state @w1 : !rt.buffer<8x8xf32>
  %w2 = rt.state @w2 : !rt.buffer<8x8xf32>
  %y = rt.output "y" : !rt.buffer<4x8xf32>
  rt.call @bwd(%a, %b, %w1, %w2, %y) : !rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>, !rt.buffer<8x8xf32>, !rt.buffer<4x8xf32>
  rt.return
}

// -----

// A bias (the add's rhs [n], broadcast over the rows) is the distinct form
// epilogue = "bias", next to the matmul's own attributes. A rank-2 suffix
// (a position-embedding-like add) is not a bias: left alone.
// CHECK-LABEL: rt.func @bias()
// CHECK: %[[B:.*]] = rt.state @b
// CHECK-NEXT: %[[Y:.*]] = rt.output "y"
// CHECK-NEXT: rt.kernel "matmul"(%{{.*}}, %{{.*}}, %[[B]]) -> (%[[Y]]) attrs {epilogue = "bias", transpose_rhs} : (!rt.buffer<2x4x8xf32>, !rt.buffer<6x8xf32>, !rt.buffer<6xf32>) -> !rt.buffer<2x4x6xf32>
// CHECK: %[[T:.*]] = rt.alloc activation : !rt.buffer<2x4x8xf32>
// CHECK-NEXT: rt.kernel "matmul"(%{{.*}}, %{{.*}}) -> (%[[T]])
// CHECK: rt.kernel "add"(%[[T]], %{{.*}}) -> (%{{.*}})
rt.state_def @wb param init normal std 2.000000e-02 : !rt.buffer<6x8xf32>
rt.state_def @b param init zeros : !rt.buffer<6xf32>
rt.state_def @w8 param init normal std 2.000000e-02 : !rt.buffer<8x8xf32>
rt.state_def @pos param init zeros : !rt.buffer<4x8xf32>
rt.func @bias() attributes {entry = "eval"} {
  %x = rt.input "x" : !rt.buffer<2x4x8xf32>
  %w = rt.state @wb : !rt.buffer<6x8xf32>
  %t = rt.alloc activation : !rt.buffer<2x4x6xf32>
  rt.kernel "matmul"(%x, %w) -> (%t) attrs {transpose_rhs} : (!rt.buffer<2x4x8xf32>, !rt.buffer<6x8xf32>) -> !rt.buffer<2x4x6xf32>
  %b = rt.state @b : !rt.buffer<6xf32>
  %y = rt.output "y" : !rt.buffer<2x4x6xf32>
  rt.kernel "add"(%t, %b) -> (%y) : (!rt.buffer<2x4x6xf32>, !rt.buffer<6xf32>) -> !rt.buffer<2x4x6xf32>
  %w8 = rt.state @w8 : !rt.buffer<8x8xf32>
  %t2 = rt.alloc activation : !rt.buffer<2x4x8xf32>
  rt.kernel "matmul"(%x, %w8) -> (%t2) : (!rt.buffer<2x4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<2x4x8xf32>
  %pos = rt.state @pos : !rt.buffer<4x8xf32>
  %z = rt.output "z" : !rt.buffer<2x4x8xf32>
  rt.kernel "add"(%t2, %pos) -> (%z) : (!rt.buffer<2x4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<2x4x8xf32>
  rt.return
}

// -----

// Reads and writes of c and r between the two kernels stay where they are:
// the fused kernel reads c and writes r at the add's place.
// CHECK-LABEL: rt.func @between()
// CHECK: rt.kernel "gelu"(%{{.*}}) -> (%[[C:.*]]) :
// CHECK-NEXT: rt.kernel "scale"(%[[R:.*]]) -> (%{{.*}}) attrs
// CHECK-NEXT: rt.kernel "matmul"(%{{.*}}, %{{.*}}, %[[C]]) -> (%[[R]]) :
rt.state_def @w param init normal std 2.000000e-02 : !rt.buffer<8x8xf32>
rt.func @between() attributes {entry = "train_step"} {
  %x = rt.input "x" : !rt.buffer<4x8xf32>
  %w = rt.state @w : !rt.buffer<8x8xf32>
  %r = rt.output "r" : !rt.buffer<4x8xf32>
  %old = rt.output "old" : !rt.buffer<4x8xf32>
  %t = rt.alloc activation : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%x, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  %c = rt.alloc activation : !rt.buffer<4x8xf32>
  rt.kernel "gelu"(%x) -> (%c) : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "scale"(%r) -> (%old) attrs {factor = 1.0 : f64} : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "add"(%c, %t) -> (%r) : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}

// -----

// Negative cases: each function keeps its matmul and add. (In @second_use
// the gelu still fuses, keeping the product for the add.)
// CHECK-LABEL: rt.func @second_use()
// CHECK: %[[T:.*]] = rt.alloc activation
// CHECK-NEXT: rt.kernel "matmul"(%{{[^,]*}}, %{{[^,]*}}) -> (%{{[^,]*}}, %[[T]]) attrs {epilogue = "gelu"}
// CHECK-NEXT: rt.kernel "add"(%{{.*}}, %[[T]])
// CHECK-LABEL: rt.func @view_result()
// CHECK: "matmul"(%{{[^,]*}}, %{{[^,]*}}) ->
// CHECK-NEXT: "add"
// CHECK-LABEL: rt.func @slot_result()
// CHECK: "matmul"(%{{[^,]*}}, %{{[^,]*}}) ->
// CHECK-NEXT: "add"
// CHECK-LABEL: rt.func @state_result()
// CHECK: "matmul"(%{{[^,]*}}, %{{[^,]*}}) ->
// CHECK-NEXT: "add"
rt.state_def @w param init normal std 2.000000e-02 : !rt.buffer<8x8xf32>
rt.state_def @s param init zeros : !rt.buffer<4x8xf32>
// t is read again after the add.
rt.func @second_use() attributes {entry = "e1"} {
  %x = rt.input "x" : !rt.buffer<4x8xf32>
  %w = rt.state @w : !rt.buffer<8x8xf32>
  %y = rt.output "y" : !rt.buffer<4x8xf32>
  %z = rt.output "z" : !rt.buffer<4x8xf32>
  %t = rt.alloc activation : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%x, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "gelu"(%t) -> (%z) : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "add"(%x, %t) -> (%y) : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}
// t is a view of a buffer.
rt.func @view_result() attributes {entry = "e2"} {
  %x = rt.input "x" : !rt.buffer<4x8xf32>
  %w = rt.state @w : !rt.buffer<8x8xf32>
  %y = rt.output "y" : !rt.buffer<4x8xf32>
  %a = rt.alloc activation : !rt.buffer<32xf32>
  %t = rt.view %a : !rt.buffer<32xf32> to !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%x, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "add"(%x, %t) -> (%y) : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}
// t is an output slot (read by the runtime after the entry).
rt.func @slot_result() attributes {entry = "e3"} {
  %x = rt.input "x" : !rt.buffer<4x8xf32>
  %w = rt.state @w : !rt.buffer<8x8xf32>
  %y = rt.output "y" : !rt.buffer<4x8xf32>
  %t = rt.output "t" : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%x, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "add"(%x, %t) -> (%y) : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}
// t is a state (persists after the entry).
rt.func @state_result() attributes {entry = "e4"} {
  %x = rt.input "x" : !rt.buffer<4x8xf32>
  %w = rt.state @w : !rt.buffer<8x8xf32>
  %y = rt.output "y" : !rt.buffer<4x8xf32>
  %t = rt.state @s : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%x, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "add"(%x, %t) -> (%y) : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}

// -----

// Negative cases: a GEMM operand written between the two kernels (directly,
// through a view, through another rt.state of the same name), and a result
// that is a GEMM operand (the add in place on lhs).
// CHECK-LABEL: rt.func @write_lhs()
// CHECK: "matmul"(%{{[^,]*}}, %{{[^,]*}}) ->
// CHECK-NEXT: "gelu"
// CHECK-NEXT: "add"
// CHECK-LABEL: rt.func @write_rhs_view()
// CHECK: "matmul"(%{{[^,]*}}, %{{[^,]*}}) ->
// CHECK: "scale"
// CHECK-NEXT: "add"
// CHECK-LABEL: rt.func @write_rhs_state()
// CHECK: "matmul"(%{{[^,]*}}, %{{[^,]*}}) ->
// CHECK: "scale"
// CHECK-NEXT: "add"
// CHECK-LABEL: rt.func @result_is_lhs()
// CHECK: "matmul"(%{{[^,]*}}, %{{[^,]*}}) ->
// CHECK-NEXT: "add"
rt.state_def @w param init normal std 2.000000e-02 : !rt.buffer<8x8xf32>
rt.func @write_lhs() attributes {entry = "e1"} {
  %x = rt.input "x" : !rt.buffer<4x8xf32>
  %w = rt.state @w : !rt.buffer<8x8xf32>
  %y = rt.output "y" : !rt.buffer<4x8xf32>
  %h = rt.alloc activation : !rt.buffer<4x8xf32>
  rt.kernel "gelu"(%x) -> (%h) : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  %t = rt.alloc activation : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%h, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "gelu"(%x) -> (%h) : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "add"(%x, %t) -> (%y) : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}
rt.func @write_rhs_view() attributes {entry = "e2"} {
  %x = rt.input "x" : !rt.buffer<4x8xf32>
  %y = rt.output "y" : !rt.buffer<4x8xf32>
  %w = rt.alloc activation : !rt.buffer<8x8xf32>
  rt.kernel "gelu"(%x) -> (%w) : (!rt.buffer<4x8xf32>) -> !rt.buffer<8x8xf32>
  %t = rt.alloc activation : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%x, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  %wv = rt.view %w : !rt.buffer<8x8xf32> to !rt.buffer<64xf32>
  rt.kernel "scale"(%wv) -> (%wv) attrs {factor = 2.0 : f64} : (!rt.buffer<64xf32>) -> !rt.buffer<64xf32>
  rt.kernel "add"(%x, %t) -> (%y) : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}
rt.func @write_rhs_state() attributes {entry = "e3"} {
  %x = rt.input "x" : !rt.buffer<4x8xf32>
  %y = rt.output "y" : !rt.buffer<4x8xf32>
  %w = rt.state @w : !rt.buffer<8x8xf32>
  %t = rt.alloc activation : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%x, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  %w2 = rt.state @w : !rt.buffer<8x8xf32>
  rt.kernel "scale"(%w2) -> (%w2) attrs {factor = 2.0 : f64} : (!rt.buffer<8x8xf32>) -> !rt.buffer<8x8xf32>
  rt.kernel "add"(%x, %t) -> (%y) : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}
rt.func @result_is_lhs() attributes {entry = "e4"} {
  %x = rt.input "x" : !rt.buffer<4x8xf32>
  %w = rt.state @w : !rt.buffer<8x8xf32>
  %y = rt.output "y" : !rt.buffer<4x8xf32>
  %h = rt.alloc activation : !rt.buffer<4x8xf32>
  rt.kernel "gelu"(%x) -> (%h) : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  %t = rt.alloc activation : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%h, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "add"(%h, %t) -> (%h) : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "reshape"(%h) -> (%y) : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}

// -----

// Negative cases: an asynchronous collective or a call between the two (the
// pass does not look into either); a callee whose output argument one caller
// passes as its GEMM's lhs (the other caller's buffers are distinct: one
// aliasing call site is enough to keep the callee as it is).
// CHECK-LABEL: rt.func @async_between()
// CHECK: "matmul"(%{{[^,]*}}, %{{[^,]*}}) ->
// CHECK-NEXT: "dist.all_reduce_start"
// CHECK-NEXT: "add"
// CHECK-LABEL: rt.func @wait_between()
// CHECK: "matmul"(%{{[^,]*}}, %{{[^,]*}}) ->
// CHECK-NEXT: "dist.wait"
// CHECK-NEXT: "add"
// CHECK-LABEL: rt.func @g(
// CHECK-LABEL: rt.func @call_between()
// CHECK: "matmul"(%{{[^,]*}}, %{{[^,]*}}) ->
// CHECK-NEXT: rt.call @g
// CHECK-NEXT: "add"
// CHECK-LABEL: rt.func @callee(
// CHECK-NEXT: rt.alloc
// CHECK-NEXT: "matmul"(%arg0, %arg1) ->
// CHECK-NEXT: "add"
rt.state_def @w param init normal std 2.000000e-02 : !rt.buffer<8x8xf32>
rt.func @async_between() attributes {entry = "e1"} {
  %x = rt.input "x" : !rt.buffer<4x8xf32>
  %w = rt.state @w : !rt.buffer<8x8xf32>
  %y = rt.output "y" : !rt.buffer<4x8xf32>
  %s = rt.output "s" : !rt.buffer<4x8xf32>
  %t = rt.alloc activation : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%x, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "dist.all_reduce_start"(%x) -> (%s) attrs {axes = ["dp"], handle = 0 : i64, reduction = "sum"} : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "add"(%x, %t) -> (%y) : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "dist.wait"(%x, %s) -> (%s) attrs {handle = 0 : i64} : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}
rt.func @wait_between() attributes {entry = "e2"} {
  %x = rt.input "x" : !rt.buffer<4x8xf32>
  %w = rt.state @w : !rt.buffer<8x8xf32>
  %y = rt.output "y" : !rt.buffer<4x8xf32>
  %s = rt.output "s" : !rt.buffer<4x8xf32>
  rt.kernel "dist.all_reduce_start"(%x) -> (%s) attrs {axes = ["dp"], handle = 0 : i64, reduction = "sum"} : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  %t = rt.alloc activation : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%x, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "dist.wait"(%x, %s) -> (%s) attrs {handle = 0 : i64} : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "add"(%x, %t) -> (%y) : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}
rt.func @g(%a: !rt.buffer<4x8xf32>, %b: !rt.buffer<4x8xf32>) {
  rt.kernel "gelu"(%a) -> (%b) : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}
rt.func @call_between() attributes {entry = "e3"} {
  %x = rt.input "x" : !rt.buffer<4x8xf32>
  %w = rt.state @w : !rt.buffer<8x8xf32>
  %y = rt.output "y" : !rt.buffer<4x8xf32>
  %z = rt.output "z" : !rt.buffer<4x8xf32>
  %t = rt.alloc activation : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%x, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  rt.call @g(%x, %z) : !rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>
  rt.kernel "add"(%x, %t) -> (%y) : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}
rt.func @callee(%a: !rt.buffer<8x8xf32>, %w: !rt.buffer<8x8xf32>, %c: !rt.buffer<8x8xf32>, %r: !rt.buffer<8x8xf32>) {
  %t = rt.alloc activation : !rt.buffer<8x8xf32>
  rt.kernel "matmul"(%a, %w) -> (%t) : (!rt.buffer<8x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<8x8xf32>
  rt.kernel "add"(%c, %t) -> (%r) : (!rt.buffer<8x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<8x8xf32>
  rt.return
}
rt.func @two_callers() attributes {entry = "e4"} {
  %w = rt.state @w : !rt.buffer<8x8xf32>
  %p = rt.alloc activation : !rt.buffer<8x8xf32>
  %q = rt.alloc activation : !rt.buffer<8x8xf32>
  %r = rt.alloc activation : !rt.buffer<8x8xf32>
  rt.kernel "gelu"(%w) -> (%p) : (!rt.buffer<8x8xf32>) -> !rt.buffer<8x8xf32>
  rt.kernel "gelu"(%w) -> (%q) : (!rt.buffer<8x8xf32>) -> !rt.buffer<8x8xf32>
  rt.call @callee(%p, %w, %q, %r) : !rt.buffer<8x8xf32>, !rt.buffer<8x8xf32>, !rt.buffer<8x8xf32>, !rt.buffer<8x8xf32>
  %pv = rt.view %p : !rt.buffer<8x8xf32> to !rt.buffer<64xf32>
  %pv2 = rt.view %pv : !rt.buffer<64xf32> to !rt.buffer<8x8xf32>
  rt.call @callee(%p, %w, %r, %pv2) : !rt.buffer<8x8xf32>, !rt.buffer<8x8xf32>, !rt.buffer<8x8xf32>, !rt.buffer<8x8xf32>
  %y = rt.output "y" : !rt.buffer<8x8xf32>
  rt.kernel "reshape"(%p) -> (%y) : (!rt.buffer<8x8xf32>) -> !rt.buffer<8x8xf32>
  rt.return
}

// -----

// GELU after a GEMM (MLP up-projection). A temporary product that only the
// gelu reads is never written: the fused kernel activates it in cache
// (tanh_approx carried over). A product that is also read later (the
// pre-activation the backward saves, here the callee's output %pre) stays
// as the fused kernel's second result.
// CHECK-LABEL: rt.func @gelu_temporary(
// CHECK-NEXT: rt.kernel "matmul"(%arg0, %arg1) -> (%arg2) attrs {epilogue = "gelu", tanh_approx} : (!rt.buffer<4x8xf32>, !rt.buffer<8x16xf32>) -> !rt.buffer<4x16xf32>
// CHECK-NEXT: rt.return
// CHECK-LABEL: rt.func @gelu_saved(
// CHECK-NEXT: rt.kernel "matmul"(%arg0, %arg1) -> (%arg3, %arg2) attrs {epilogue = "gelu"} : (!rt.buffer<4x8xf32>, !rt.buffer<8x16xf32>) -> (!rt.buffer<4x16xf32>, !rt.buffer<4x16xf32>)
// CHECK-NEXT: rt.return
rt.state_def @w1 param init normal std 2.000000e-02 : !rt.buffer<8x16xf32>
rt.func @gelu_temporary(%x: !rt.buffer<4x8xf32>, %w: !rt.buffer<8x16xf32>, %y: !rt.buffer<4x16xf32>) {
  %t = rt.alloc activation : !rt.buffer<4x16xf32>
  rt.kernel "matmul"(%x, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x16xf32>) -> !rt.buffer<4x16xf32>
  rt.kernel "gelu"(%t) -> (%y) attrs {tanh_approx} : (!rt.buffer<4x16xf32>) -> !rt.buffer<4x16xf32>
  rt.return
}
rt.func @gelu_saved(%x: !rt.buffer<4x8xf32>, %w: !rt.buffer<8x16xf32>, %pre: !rt.buffer<4x16xf32>, %y: !rt.buffer<4x16xf32>) {
  rt.kernel "matmul"(%x, %w) -> (%pre) : (!rt.buffer<4x8xf32>, !rt.buffer<8x16xf32>) -> !rt.buffer<4x16xf32>
  rt.kernel "gelu"(%pre) -> (%y) : (!rt.buffer<4x16xf32>) -> !rt.buffer<4x16xf32>
  rt.return
}
rt.func @main() attributes {entry = "train_step"} {
  %x = rt.input "x" : !rt.buffer<4x8xf32>
  %w = rt.state @w1 : !rt.buffer<8x16xf32>
  %y = rt.output "y" : !rt.buffer<4x16xf32>
  %pre = rt.output "pre" : !rt.buffer<4x16xf32>
  %y2 = rt.output "y2" : !rt.buffer<4x16xf32>
  rt.call @gelu_temporary(%x, %w, %y) : !rt.buffer<4x8xf32>, !rt.buffer<8x16xf32>, !rt.buffer<4x16xf32>
  rt.call @gelu_saved(%x, %w, %pre, %y2) : !rt.buffer<4x8xf32>, !rt.buffer<8x16xf32>, !rt.buffer<4x16xf32>, !rt.buffer<4x16xf32>
  rt.return
}

// -----

// gelu_grad after the GEMM of its dy (the MLP's backward): the product
// temporary disappears and the saved pre-activation x becomes the third
// argument. The weight gradient in between reads neither operand's memory
// for writing, so the GEMM's reads may move down to the gelu_grad's place.
// CHECK-LABEL: rt.func @gelu_grad(
// CHECK-NEXT: rt.kernel "matmul_wgrad"
// CHECK-NEXT: %[[DX:.*]] = rt.alloc grad
// CHECK-NEXT: rt.kernel "matmul"(%arg0, %arg1, %arg2) -> (%[[DX]]) attrs {epilogue = "gelu_grad", transpose_rhs} : (!rt.buffer<4x8xf32>, !rt.buffer<16x8xf32>, !rt.buffer<4x16xf32>) -> !rt.buffer<4x16xf32>
// CHECK-NEXT: rt.kernel "reshape"(%[[DX]]) -> (%arg4)
rt.state_def @w2 param init normal std 2.000000e-02 : !rt.buffer<16x8xf32>
rt.func @gelu_grad(%dy: !rt.buffer<4x8xf32>, %w: !rt.buffer<16x8xf32>, %pre: !rt.buffer<4x16xf32>, %dw: !rt.buffer<16x8xf32>, %out: !rt.buffer<4x16xf32>) {
  %t = rt.alloc grad : !rt.buffer<4x16xf32>
  rt.kernel "matmul"(%dy, %w) -> (%t) attrs {transpose_rhs} : (!rt.buffer<4x8xf32>, !rt.buffer<16x8xf32>) -> !rt.buffer<4x16xf32>
  rt.kernel "matmul_wgrad"(%pre, %dy) -> (%dw) : (!rt.buffer<4x16xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<16x8xf32>
  %dx = rt.alloc grad : !rt.buffer<4x16xf32>
  rt.kernel "gelu_grad"(%t, %pre) -> (%dx) : (!rt.buffer<4x16xf32>, !rt.buffer<4x16xf32>) -> !rt.buffer<4x16xf32>
  rt.kernel "reshape"(%dx) -> (%out) : (!rt.buffer<4x16xf32>) -> !rt.buffer<4x16xf32>
  rt.return
}
rt.func @main() attributes {entry = "train_step"} {
  %dy = rt.input "dy" : !rt.buffer<4x8xf32>
  %w = rt.state @w2 : !rt.buffer<16x8xf32>
  %pre = rt.input "pre" : !rt.buffer<4x16xf32>
  %dw = rt.output "dw" : !rt.buffer<16x8xf32>
  %out = rt.output "dx" : !rt.buffer<4x16xf32>
  rt.call @gelu_grad(%dy, %w, %pre, %dw, %out) : !rt.buffer<4x8xf32>, !rt.buffer<16x8xf32>, !rt.buffer<4x16xf32>, !rt.buffer<16x8xf32>, !rt.buffer<4x16xf32>
  rt.return
}

// -----

// Negative cases of the gelu fusions: each function keeps its matmul and
// its activation.
// CHECK-LABEL: rt.func @grad_product_read_again()
// CHECK: "matmul"(%{{[^,]*}}, %{{[^,]*}}) -> (%[[T:[^)]*]])
// CHECK-NEXT: "gelu_grad"(%[[T]],
// CHECK-LABEL: rt.func @grad_in_place()
// CHECK: "matmul"(%{{[^,]*}}, %{{[^,]*}}) -> (%[[T:[^)]*]])
// CHECK-NEXT: "gelu_grad"(%[[T]],
// CHECK-LABEL: rt.func @view_read_between()
// CHECK: "matmul"(%{{[^,]*}}, %{{[^,]*}}) -> (%[[T:[^)]*]])
// CHECK-NEXT: rt.view
// CHECK-NEXT: "scale"
// CHECK-NEXT: "gelu"(%[[T]])
// CHECK-LABEL: rt.func @operand_written_between()
// CHECK: "matmul"(%{{[^,]*}}, %{{[^,]*}}) -> (%[[T:[^)]*]])
// CHECK-NEXT: "scale"
// CHECK-NEXT: "gelu"(%[[T]])
// CHECK-LABEL: rt.func @other_attribute()
// CHECK: "matmul"(%{{[^,]*}}, %{{[^,]*}}) -> (%[[T:[^)]*]])
// CHECK-NEXT: "gelu"(%[[T]])
rt.state_def @w param init normal std 2.000000e-02 : !rt.buffer<8x8xf32>
// gelu_grad's dy is read again: its product must be written.
rt.func @grad_product_read_again() attributes {entry = "e1"} {
  %x = rt.input "x" : !rt.buffer<4x8xf32>
  %w = rt.state @w : !rt.buffer<8x8xf32>
  %y = rt.output "y" : !rt.buffer<4x8xf32>
  %z = rt.output "z" : !rt.buffer<4x8xf32>
  %t = rt.alloc grad : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%x, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "gelu_grad"(%t, %x) -> (%y) : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "scale"(%t) -> (%z) attrs {factor = 2.0 : f64} : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}
// dx is x itself (in place): the fused kernel would write x while reading it.
rt.func @grad_in_place() attributes {entry = "e2"} {
  %x = rt.input "x" : !rt.buffer<4x8xf32>
  %w = rt.state @w : !rt.buffer<8x8xf32>
  %p = rt.output "p" : !rt.buffer<4x8xf32>
  rt.kernel "reshape"(%x) -> (%p) : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  %t = rt.alloc grad : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%x, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "gelu_grad"(%t, %p) -> (%p) : (!rt.buffer<4x8xf32>, !rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}
// The product is read through a view between the GEMM and the gelu: it
// must be written where the GEMM wrote it.
rt.func @view_read_between() attributes {entry = "e3"} {
  %x = rt.input "x" : !rt.buffer<4x8xf32>
  %w = rt.state @w : !rt.buffer<8x8xf32>
  %y = rt.output "y" : !rt.buffer<4x8xf32>
  %z = rt.output "z" : !rt.buffer<32xf32>
  %t = rt.alloc activation : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%x, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  %v = rt.view %t : !rt.buffer<4x8xf32> to !rt.buffer<32xf32>
  rt.kernel "scale"(%v) -> (%z) attrs {factor = 2.0 : f64} : (!rt.buffer<32xf32>) -> !rt.buffer<32xf32>
  rt.kernel "gelu"(%t) -> (%y) : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}
// The GEMM's lhs is overwritten before the gelu.
rt.func @operand_written_between() attributes {entry = "e4"} {
  %x0 = rt.input "x" : !rt.buffer<4x8xf32>
  %w = rt.state @w : !rt.buffer<8x8xf32>
  %y = rt.output "y" : !rt.buffer<4x8xf32>
  %x = rt.alloc activation : !rt.buffer<4x8xf32>
  rt.kernel "reshape"(%x0) -> (%x) : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  %t = rt.alloc activation : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%x, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "scale"(%x0) -> (%x) attrs {factor = 2.0 : f64} : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "gelu"(%t) -> (%y) : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}
// An activation attribute the fused kernel would not know.
rt.func @other_attribute() attributes {entry = "e5"} {
  %x = rt.input "x" : !rt.buffer<4x8xf32>
  %w = rt.state @w : !rt.buffer<8x8xf32>
  %y = rt.output "y" : !rt.buffer<4x8xf32>
  %t = rt.alloc activation : !rt.buffer<4x8xf32>
  rt.kernel "matmul"(%x, %w) -> (%t) : (!rt.buffer<4x8xf32>, !rt.buffer<8x8xf32>) -> !rt.buffer<4x8xf32>
  rt.kernel "gelu"(%t) -> (%y) attrs {approximate = "none"} : (!rt.buffer<4x8xf32>) -> !rt.buffer<4x8xf32>
  rt.return
}
