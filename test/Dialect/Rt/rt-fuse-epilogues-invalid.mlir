// RUN: shard-opt %s --rt-fuse-epilogues -verify-diagnostics

// Offsets of a planned function assume the old live ranges: fusing would
// make two buffers that share bytes live at once.
// expected-error @+1 {{'rt.func' op is already planned (frame_bytes): rt-fuse-epilogues must run before rt-plan-memory}}
rt.func @planned(%x: !rt.buffer<4x4xf32>, %w: !rt.buffer<4x4xf32>, %y: !rt.buffer<4x4xf32>) attributes {frame_bytes = 64 : i64, peak_breakdown = {activation = 64 : i64, grad = 0 : i64, io = 0 : i64, workspace = 0 : i64}} {
  %t = rt.alloc activation at 0 : !rt.buffer<4x4xf32>
  rt.kernel "matmul"(%x, %w) -> (%t) : (!rt.buffer<4x4xf32>, !rt.buffer<4x4xf32>) -> !rt.buffer<4x4xf32>
  rt.kernel "add"(%x, %t) -> (%y) : (!rt.buffer<4x4xf32>, !rt.buffer<4x4xf32>) -> !rt.buffer<4x4xf32>
  rt.return
}
