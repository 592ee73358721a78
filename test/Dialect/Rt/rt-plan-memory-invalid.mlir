// The plan check rejects wrong plans; the planner rejects recursion.
// RUN: shard-opt %s --rt-plan-memory=verify-only=true -split-input-file -verify-diagnostics
// RUN: not shard-opt %s --rt-plan-memory -split-input-file 2>&1 | FileCheck %s --check-prefix=PLAN

// %a and %b are both live at the add, but share bytes [64, 128).
rt.func @overlap(%x: !rt.buffer<16xf32>) attributes {frame_bytes = 256 : i64} {
  // expected-note @+1 {{the other buffer}}
  %a = rt.alloc activation at 0 : !rt.buffer<32xf32>
  // expected-error @+1 {{memory plan is wrong: the 'rt.alloc' buffer (bytes [64, 192), live at instructions 3..4) overlaps the 'rt.alloc' buffer (bytes [0, 128), live at instructions 2..4) while both are live}}
  %b = rt.alloc grad at 64 : !rt.buffer<32xf32>
  rt.kernel "foo"(%x) -> (%a) : (!rt.buffer<16xf32>) -> !rt.buffer<32xf32>
  rt.kernel "foo"(%x) -> (%b) : (!rt.buffer<16xf32>) -> !rt.buffer<32xf32>
  rt.kernel "add"(%a, %b) -> (%x) : (!rt.buffer<32xf32>, !rt.buffer<32xf32>) -> !rt.buffer<16xf32>
  rt.return
}

// -----

rt.func @g() attributes {frame_bytes = 128 : i64} {
  rt.return
}
// The callee's frame [0, 128) meets %a, live during the call.
rt.func @call_overlap(%x: !rt.buffer<16xf32>) attributes {frame_bytes = 192 : i64} {
  // expected-note @+1 {{the other buffer}}
  %a = rt.alloc activation at 64 : !rt.buffer<16xf32>
  rt.kernel "foo"(%x) -> (%a) : (!rt.buffer<16xf32>) -> !rt.buffer<16xf32>
  // expected-error @+1 {{the frame of the call to 'g' (bytes [0, 128), live at instructions 2..2) overlaps the 'rt.alloc' buffer}}
  rt.call @g() at 0
  rt.kernel "foo"(%a) -> (%x) : (!rt.buffer<16xf32>) -> !rt.buffer<16xf32>
  rt.return
}

// -----

// Buffers that are never live together may share bytes.
rt.func @reuse(%x: !rt.buffer<16xf32>) attributes {frame_bytes = 64 : i64} {
  %a = rt.alloc activation at 0 : !rt.buffer<16xf32>
  rt.kernel "foo"(%x) -> (%a) : (!rt.buffer<16xf32>) -> !rt.buffer<16xf32>
  rt.kernel "foo"(%a) -> (%x) : (!rt.buffer<16xf32>) -> !rt.buffer<16xf32>
  %b = rt.alloc activation at 0 : !rt.buffer<16xf32>
  rt.kernel "foo"(%x) -> (%b) : (!rt.buffer<16xf32>) -> !rt.buffer<16xf32>
  rt.kernel "foo"(%b) -> (%x) : (!rt.buffer<16xf32>) -> !rt.buffer<16xf32>
  rt.return
}

// -----

// expected-error @+1 {{is not planned (no frame_bytes)}}
rt.func @unplanned() {
  rt.return
}

// -----

// PLAN: error: 'rt.func' op is recursive; a static frame cannot be planned for it
// expected-error @+1 {{is not planned}}
rt.func @r() {
  rt.call @r()
  rt.return
}
