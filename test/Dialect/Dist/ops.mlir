// RUN: shard-opt %s | shard-opt | FileCheck %s
// RUN: shard-opt %s --mlir-print-op-generic | shard-opt | FileCheck %s
// RUN: shard-opt %s -emit-bytecode | shard-opt | FileCheck %s

// CHECK: dist.mesh @m [pp = 2, dp = 2, cp = 1, tp = 2]
dist.mesh @m [pp = 2, dp = 2, cp = 1, tp = 2]

// Axis names that are not bare identifiers print quoted.
// CHECK: dist.mesh @quoted ["expert-dp" = 2, ep = 4]
dist.mesh @quoted ["expert-dp" = 2, ep = 4]

// Axis roles (what each axis parallelises; passes find axes by role).
// CHECK: dist.mesh @roles [pp = 2 : pipeline, dp = 2 : data, ep = 2 : expert, cp = 1 : context, tp = 2 : tensor]
dist.mesh @roles [pp = 2 : pipeline, dp = 2 : data, ep = 2 : expert, cp = 1 : context, tp = 2 : tensor]

//===----------------------------------------------------------------------===//
// #dist.sharding, #dist.reduction and !dist.async in standalone positions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func private @attribute_forms()
// CHECK-SAME: a.dims = #dist.sharding<@m, [{dp}, {}, {tp}]>
// CHECK-SAME: b.multi_axis = #dist.sharding<@m, [{dp, cp}, {}]>
// CHECK-SAME: c.partial = #dist.sharding<@m, [{}, {}], partial = {tp: sum}>
// Partial axes are canonicalised to name order.
// CHECK-SAME: d.partial_sorted = #dist.sharding<@m, [{pp}], partial = {dp: max, tp: sum}>
// CHECK-SAME: e.scalar = #dist.sharding<@m, []>
// CHECK-SAME: f.quoted = #dist.sharding<@quoted, [{"expert-dp", ep}]>
// CHECK-SAME: g.reduction = #dist.reduction<max>
// CHECK-SAME: h.async = !dist.async<tensor<4x8xf32>>
// CHECK-SAME: i.async_none = !dist.async
func.func private @attribute_forms() attributes {
  a.dims = #dist.sharding<@m, [{dp}, {}, {tp}]>,
  b.multi_axis = #dist.sharding<@m, [{dp, cp}, {}]>,
  c.partial = #dist.sharding<@m, [{}, {}], partial = {tp: sum}>,
  d.partial_sorted = #dist.sharding<@m, [{pp}], partial = {tp: sum, dp: max}>,
  e.scalar = #dist.sharding<@m, []>,
  f.quoted = #dist.sharding<@quoted, [{"expert-dp", ep}]>,
  g.reduction = #dist.reduction<max>,
  h.async = !dist.async<tensor<4x8xf32>>,
  i.async_none = !dist.async
}

//===----------------------------------------------------------------------===//
// The discardable dist.sharding attribute
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @discardable
// CHECK-SAME: (%{{.*}}: tensor<8x6x4xf32> {dist.sharding = #dist.sharding<@m, [{dp, pp}, {}, {tp}]>}
// CHECK-SAME: %{{.*}}: tensor<f32> {dist.sharding = #dist.sharding<@m, []>})
// CHECK-SAME: -> (tensor<8x6x4xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}], partial = {tp: sum}>})
func.func @discardable(
    %x: tensor<8x6x4xf32> {dist.sharding = #dist.sharding<@m, [{dp, pp}, {}, {tp}]>},
    %s: tensor<f32> {dist.sharding = #dist.sharding<@m, []>})
    -> (tensor<8x6x4xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}], partial = {tp: sum}>}) {
  // CHECK: arith.addf {{.*}} {dist.sharding = #dist.sharding<@m, [{dp}, {}, {tp}]>}
  %0 = arith.addf %x, %x {dist.sharding = #dist.sharding<@m, [{dp}, {}, {tp}]>} : tensor<8x6x4xf32>
  // One sharding per result.
  // CHECK: arith.addui_extended {{.*}} {dist.sharding = [#dist.sharding<@m, [{tp}]>, #dist.sharding<@m, [{}]>]}
  %i = arith.constant dense<1> : tensor<4xi32>
  %sum, %carry = arith.addui_extended %i, %i {dist.sharding = [#dist.sharding<@m, [{tp}]>, #dist.sharding<@m, [{}]>]} : tensor<4xi32>, tensor<4xi1>
  return %0 : tensor<8x6x4xf32>
}

// Dynamic dims are not checked for divisibility; declarations are checked
// from their function type.
// CHECK-LABEL: func.func private @declaration
// CHECK-SAME: tensor<?x6xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {tp}]>}
func.func private @declaration(tensor<?x6xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {tp}]>})

//===----------------------------------------------------------------------===//
// Sharding annotations
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @sharding_ops
func.func @sharding_ops(%x: tensor<8x6x4xf32>) -> tensor<8x6x4xf32> {
  // CHECK: %[[C:.*]] = dist.sharding_constraint %{{.*}} to <@m, [{dp}, {}, {tp}]> : tensor<8x6x4xf32>
  %0 = dist.sharding_constraint %x to <@m, [{dp}, {}, {tp}]> : tensor<8x6x4xf32>
  // CHECK: %[[P:.*]] = dist.reshard %[[C]] to <@m, [{dp}, {}, {}], partial = {tp: sum}> : tensor<8x6x4xf32>
  %1 = dist.reshard %0 to <@m, [{dp}, {}, {}], partial = {tp: sum}> : tensor<8x6x4xf32>
  // CHECK: dist.reshard %[[P]] to <@m, [{dp, tp}, {}, {}]> : tensor<8x6x4xf32>
  %2 = dist.reshard %1 to <@m, [{dp, tp}, {}, {}]> : tensor<8x6x4xf32>
  return %2 : tensor<8x6x4xf32>
}

// A dim of size 0 is divisible by every shard count (each shard is empty),
// and the collectives' size rules hold for it: 0 × g = 0 / g = 0.
// CHECK-LABEL: func.func @zero_size_dims
func.func @zero_size_dims(%x: tensor<0x6xf32>) {
  // CHECK: dist.sharding_constraint %{{.*}} to <@m, [{dp, pp, tp}, {}]> : tensor<0x6xf32>
  %0 = dist.sharding_constraint %x to <@m, [{dp, pp, tp}, {}]> : tensor<0x6xf32>
  // CHECK: dist.all_gather %{{.*}} on @m axes = [dp] gather_dim = 0 : tensor<0x6xf32> -> tensor<0x6xf32>
  %1 = dist.all_gather %x on @m axes = [dp] gather_dim = 0 : tensor<0x6xf32> -> tensor<0x6xf32>
  // CHECK: dist.reduce_scatter %{{.*}} on @m axes = [tp] scatter_dim = 0 reduction = sum : tensor<0x6xf32> -> tensor<0x6xf32>
  %2 = dist.reduce_scatter %x on @m axes = [tp] scatter_dim = 0 reduction = sum : tensor<0x6xf32> -> tensor<0x6xf32>
  // CHECK: dist.all_to_all %{{.*}} on @m axes = [dp] split_dim = 0 concat_dim = 1 : tensor<0x6xf32> -> tensor<0x12xf32>
  %3 = dist.all_to_all %x on @m axes = [dp] split_dim = 0 concat_dim = 1 : tensor<0x6xf32> -> tensor<0x12xf32>
  return
}

// The device count may be as large as 2^24.
// CHECK: dist.mesh @huge [a = 8192, b = 2048]
dist.mesh @huge [a = 8192, b = 2048]

//===----------------------------------------------------------------------===//
// Collectives, blocking
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: tensor<2x8xf32>, %y: tensor<8x4xf32>, %z: tensor<8x4x16x2xf32>) {
  // CHECK: dist.all_reduce %{{.*}} on @m axes = [tp] reduction = sum : tensor<2x8xf32> -> tensor<2x8xf32>
  %0 = dist.all_reduce %x on @m axes = [tp] reduction = sum : tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK: dist.all_reduce %{{.*}} on @m axes = [dp, tp] reduction = max : tensor<2x8xf32> -> tensor<2x8xf32>
  %1 = dist.all_reduce %x on @m axes = [dp, tp] reduction = max : tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK: dist.all_gather %{{.*}} on @m axes = [dp, tp] gather_dim = 0 : tensor<2x8xf32> -> tensor<8x8xf32>
  %2 = dist.all_gather %x on @m axes = [dp, tp] gather_dim = 0 : tensor<2x8xf32> -> tensor<8x8xf32>
  // CHECK: dist.reduce_scatter %{{.*}} on @m axes = [tp] scatter_dim = 1 reduction = sum : tensor<2x8xf32> -> tensor<2x4xf32>
  %3 = dist.reduce_scatter %x on @m axes = [tp] scatter_dim = 1 reduction = sum : tensor<2x8xf32> -> tensor<2x4xf32>
  // CHECK: dist.all_to_all %{{.*}} on @m axes = [dp, tp] split_dim = 0 concat_dim = 1 : tensor<8x4xf32> -> tensor<2x16xf32>
  %4 = dist.all_to_all %y on @m axes = [dp, tp] split_dim = 0 concat_dim = 1 : tensor<8x4xf32> -> tensor<2x16xf32>
  // CHECK: dist.all_to_all %{{.*}} on @m axes = [tp] split_dim = 1 concat_dim = 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  %5 = dist.all_to_all %y on @m axes = [tp] split_dim = 1 concat_dim = 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  // CHECK: dist.all_to_all %{{.*}} on @m axes = [tp] split_dim = 0 concat_dim = 1 ragged_dim = 2 : tensor<8x4x16x2xf32> -> tensor<4x8x16x2xf32>
  %r = dist.all_to_all %z on @m axes = [tp] split_dim = 0 concat_dim = 1 ragged_dim = 2 : tensor<8x4x16x2xf32> -> tensor<4x8x16x2xf32>
  // CHECK: dist.sharding_constraint %{{.*}} to <@m, [{tp}, {}, {}, {}]> ragged_dim = 2 : tensor<8x4x16x2xf32>
  %rc = dist.sharding_constraint %z to <@m, [{tp}, {}, {}, {}]> ragged_dim = 2 : tensor<8x4x16x2xf32>
  // CHECK: dist.broadcast %{{.*}} on @m axes = [pp] root = 1 : tensor<2x8xf32> -> tensor<2x8xf32>
  %6 = dist.broadcast %x on @m axes = [pp] root = 1 : tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK: dist.ppermute %{{.*}} on @m axes = [dp, tp] pairs = [0 -> 1, 1 -> 2, 2 -> 3, 3 -> 0] : tensor<2x8xf32> -> tensor<2x8xf32>
  %7 = dist.ppermute %x on @m axes = [dp, tp] pairs = [0 -> 1, 1 -> 2, 2 -> 3, 3 -> 0] : tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK: dist.ppermute %{{.*}} on @m axes = [pp] pairs = [] : tensor<2x8xf32> -> tensor<2x8xf32>
  %8 = dist.ppermute %x on @m axes = [pp] pairs = [] : tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK: dist.send %{{.*}} on @m axes = [pp] peer = 1 : tensor<2x8xf32>
  dist.send %x on @m axes = [pp] peer = 1 : tensor<2x8xf32>
  // CHECK: dist.recv on @m axes = [pp] peer = 0 : tensor<2x8xf32>
  %9 = dist.recv on @m axes = [pp] peer = 0 : tensor<2x8xf32>
  // Axes of size 1 form groups of one.
  // CHECK: dist.all_gather %{{.*}} on @m axes = [cp] gather_dim = 1 : tensor<2x8xf32> -> tensor<2x8xf32>
  %10 = dist.all_gather %x on @m axes = [cp] gather_dim = 1 : tensor<2x8xf32> -> tensor<2x8xf32>
  // CHECK: dist.all_reduce %{{.*}} on @quoted axes = ["expert-dp"] reduction = sum
  %11 = dist.all_reduce %x on @quoted axes = ["expert-dp"] reduction = sum : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Collectives, asynchronous
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @async_collectives
func.func @async_collectives(%x: tensor<2x8xf32>, %y: tensor<8x4xf32>) {
  // CHECK: %[[H0:.*]] = dist.all_reduce_start %{{.*}} on @m axes = [tp] reduction = sum : tensor<2x8xf32> -> !dist.async<tensor<2x8xf32>>
  // CHECK: dist.wait %[[H0]] : !dist.async<tensor<2x8xf32>>
  %h0 = dist.all_reduce_start %x on @m axes = [tp] reduction = sum : tensor<2x8xf32> -> !dist.async<tensor<2x8xf32>>
  %0 = dist.wait %h0 : !dist.async<tensor<2x8xf32>>
  // CHECK: %[[H1:.*]] = dist.all_gather_start %{{.*}} on @m axes = [dp, tp] gather_dim = 0 : tensor<2x8xf32> -> !dist.async<tensor<8x8xf32>>
  // CHECK: dist.wait %[[H1]] : !dist.async<tensor<8x8xf32>>
  %h1 = dist.all_gather_start %x on @m axes = [dp, tp] gather_dim = 0 : tensor<2x8xf32> -> !dist.async<tensor<8x8xf32>>
  %1 = dist.wait %h1 : !dist.async<tensor<8x8xf32>>
  // CHECK: dist.reduce_scatter_start %{{.*}} on @m axes = [tp] scatter_dim = 1 reduction = max : tensor<2x8xf32> -> !dist.async<tensor<2x4xf32>>
  %h2 = dist.reduce_scatter_start %x on @m axes = [tp] scatter_dim = 1 reduction = max : tensor<2x8xf32> -> !dist.async<tensor<2x4xf32>>
  %2 = dist.wait %h2 : !dist.async<tensor<2x4xf32>>
  // CHECK: dist.all_to_all_start %{{.*}} on @m axes = [tp] split_dim = 0 concat_dim = 1 : tensor<8x4xf32> -> !dist.async<tensor<4x8xf32>>
  %h3 = dist.all_to_all_start %y on @m axes = [tp] split_dim = 0 concat_dim = 1 : tensor<8x4xf32> -> !dist.async<tensor<4x8xf32>>
  %3 = dist.wait %h3 : !dist.async<tensor<4x8xf32>>
  // CHECK: dist.broadcast_start %{{.*}} on @m axes = [dp] root = 0 : tensor<2x8xf32> -> !dist.async<tensor<2x8xf32>>
  %h4 = dist.broadcast_start %x on @m axes = [dp] root = 0 : tensor<2x8xf32> -> !dist.async<tensor<2x8xf32>>
  %4 = dist.wait %h4 : !dist.async<tensor<2x8xf32>>
  // CHECK: dist.ppermute_start %{{.*}} on @m axes = [pp] pairs = [0 -> 1] : tensor<2x8xf32> -> !dist.async<tensor<2x8xf32>>
  %h5 = dist.ppermute_start %x on @m axes = [pp] pairs = [0 -> 1] : tensor<2x8xf32> -> !dist.async<tensor<2x8xf32>>
  %5 = dist.wait %h5 : !dist.async<tensor<2x8xf32>>
  // CHECK: %[[S:.*]] = dist.send_start %{{.*}} on @m axes = [pp] peer = 1 : tensor<2x8xf32> -> !dist.async
  // CHECK: dist.wait %[[S]] : !dist.async
  %h6 = dist.send_start %x on @m axes = [pp] peer = 1 : tensor<2x8xf32> -> !dist.async
  dist.wait %h6 : !dist.async
  // CHECK: %[[R:.*]] = dist.recv_start on @m axes = [pp] peer = 0 : !dist.async<tensor<2x8xf32>>
  // CHECK: dist.wait %[[R]] : !dist.async<tensor<2x8xf32>>
  %h7 = dist.recv_start on @m axes = [pp] peer = 0 : !dist.async<tensor<2x8xf32>>
  %7 = dist.wait %h7 : !dist.async<tensor<2x8xf32>>
  return
}

//===----------------------------------------------------------------------===//
// Local ops that read the rank's mesh coordinate
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @local_coordinate_ops
func.func @local_coordinate_ops(%x: tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<16x4xf32>, tensor<i64>, tensor<i64>) {
  // CHECK: dist.shard_slice %{{.*}} on @m axes = [dp, tp] dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  %0 = dist.shard_slice %x on @m axes = [dp, tp] dim = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  // CHECK: dist.shard_slice %{{.*}} on @m axes = [tp] dim = 1 : tensor<16x8xf32> -> tensor<16x4xf32>
  %1 = dist.shard_slice %x on @m axes = [tp] dim = 1 : tensor<16x8xf32> -> tensor<16x4xf32>
  // CHECK: dist.axis_index on @m axes = [tp] : tensor<i64>
  %2 = dist.axis_index on @m axes = [tp] : tensor<i64>
  // CHECK: dist.axis_index on @m axes = [pp, dp] : tensor<i64>
  %3 = dist.axis_index on @m axes = [pp, dp] : tensor<i64>
  return %0, %1, %2, %3 : tensor<4x8xf32>, tensor<16x4xf32>, tensor<i64>, tensor<i64>
}

//===----------------------------------------------------------------------===//
// Flat buffers of bucketed collectives
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @pack_unpack
func.func @pack_unpack(%a: tensor<4x8xf32>, %b: tensor<3x4xf32>, %s: tensor<f32>) -> (tensor<4x8xf32>, tensor<3x4xf32>, tensor<f32>) {
  // CHECK: dist.pack %{{.*}}, %{{.*}} num_groups = 2 scatter_dims = [0, 1] : tensor<4x8xf32>, tensor<3x4xf32> -> tensor<44xf32>
  %0 = dist.pack %a, %b num_groups = 2 scatter_dims = [0, 1] : tensor<4x8xf32>, tensor<3x4xf32> -> tensor<44xf32>
  // CHECK: dist.unpack %{{.*}} num_groups = 2 scatter_dims = [0, 1] : tensor<44xf32> -> tensor<4x8xf32>, tensor<3x4xf32>
  %1:2 = dist.unpack %0 num_groups = 2 scatter_dims = [0, 1] : tensor<44xf32> -> tensor<4x8xf32>, tensor<3x4xf32>
  // One group (the default): concatenation, scalars allowed.
  // CHECK: dist.pack %{{.*}}, %{{.*}} : tensor<3x4xf32>, tensor<f32> -> tensor<13xf32>
  %2 = dist.pack %b, %s : tensor<3x4xf32>, tensor<f32> -> tensor<13xf32>
  // CHECK: dist.unpack %{{.*}} : tensor<13xf32> -> tensor<3x4xf32>, tensor<f32>
  %3:2 = dist.unpack %2 : tensor<13xf32> -> tensor<3x4xf32>, tensor<f32>
  // CHECK: dist.pack %{{.*}} : tensor<4x8xf32> -> tensor<32xf32>
  %4 = dist.pack %a num_groups = 1 : tensor<4x8xf32> -> tensor<32xf32>
  return %1#0, %3#0, %3#1 : tensor<4x8xf32>, tensor<3x4xf32>, tensor<f32>
}
