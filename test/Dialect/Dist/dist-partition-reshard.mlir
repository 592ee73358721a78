// The collectives dist-partition emits for a few `dist.reshard`s on a 2x4
// mesh (Reshard.h). Numerical checks of every pair of shardings of a 3-D
// tensor on 2x4 and 2x2x2 meshes: test/E2E/reshard-*.mlir.
// RUN: shard-opt --dist-partition %s | FileCheck %s \
// RUN:   --implicit-check-not=dist.all_reduce --implicit-check-not=dist.all_gather \
// RUN:   --implicit-check-not=dist.reduce_scatter --implicit-check-not=dist.all_to_all \
// RUN:   --implicit-check-not=dist.shard_slice

module {
  dist.mesh @m [a = 2, b = 4]

  // Partial -> sharded on the partial axes: one reduce_scatter.
  // CHECK-LABEL: func.func @partial_to_sharded
  // CHECK: dist.reduce_scatter %{{.*}} on @m axes = [a, b] scatter_dim = 1 reduction = sum : tensor<8x16x24xf32> -> tensor<8x2x24xf32>
  func.func @partial_to_sharded(%x: tensor<8x16x24xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {a: sum, b: sum}>}) -> (tensor<8x16x24xf32> {dist.sharding = #dist.sharding<@m, [{}, {a, b}, {}]>}) {
    %y = dist.reshard %x to <@m, [{}, {a, b}, {}]> : tensor<8x16x24xf32>
    return %y : tensor<8x16x24xf32>
  }

  // Partial on the minor axis of a multi-axis target dim: slice the major
  // (replicated) axis in first, then one reduce_scatter (not an all_reduce
  // and a slice).
  // CHECK-LABEL: func.func @partial_minor_of_dim
  // CHECK: %[[S:.*]] = dist.shard_slice %{{.*}} on @m axes = [a] dim = 0 : tensor<8x16x24xf32> -> tensor<4x16x24xf32>
  // CHECK: dist.reduce_scatter %[[S]] on @m axes = [b] scatter_dim = 0 reduction = max : tensor<4x16x24xf32> -> tensor<1x16x24xf32>
  func.func @partial_minor_of_dim(%x: tensor<8x16x24xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {b: max}>}) -> (tensor<8x16x24xf32> {dist.sharding = #dist.sharding<@m, [{a, b}, {}, {}]>}) {
    %y = dist.reshard %x to <@m, [{a, b}, {}, {}]> : tensor<8x16x24xf32>
    return %y : tensor<8x16x24xf32>
  }

  // A partial axis the target does not shard on is all-reduced before the
  // gather, while the value is small.
  // CHECK-LABEL: func.func @reduce_before_gather
  // CHECK: %[[R:.*]] = dist.all_reduce %{{.*}} on @m axes = [a] reduction = sum : tensor<2x16x24xf32> -> tensor<2x16x24xf32>
  // CHECK: dist.all_gather %[[R]] on @m axes = [b] gather_dim = 0 : tensor<2x16x24xf32> -> tensor<8x16x24xf32>
  func.func @reduce_before_gather(%x: tensor<8x16x24xf32> {dist.sharding = #dist.sharding<@m, [{b}, {}, {}], partial = {a: sum}>}) -> (tensor<8x16x24xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {}]>}) {
    %y = dist.reshard %x to <@m, [{}, {}, {}]> : tensor<8x16x24xf32>
    return %y : tensor<8x16x24xf32>
  }

  // An axis moving between dims: one all_to_all.
  // CHECK-LABEL: func.func @move_axis
  // CHECK: dist.all_to_all %{{.*}} on @m axes = [b] split_dim = 2 concat_dim = 0 : tensor<2x16x24xf32> -> tensor<8x16x6xf32>
  func.func @move_axis(%x: tensor<8x16x24xf32> {dist.sharding = #dist.sharding<@m, [{b}, {}, {}]>}) -> (tensor<8x16x24xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {b}]>}) {
    %y = dist.reshard %x to <@m, [{}, {}, {b}]> : tensor<8x16x24xf32>
    return %y : tensor<8x16x24xf32>
  }

  // Swapped axis order within a dim: gather the swapped part, slice it back
  // in the target order.
  // CHECK-LABEL: func.func @swap_order
  // CHECK: %[[G:.*]] = dist.all_gather %{{.*}} on @m axes = [a, b] gather_dim = 1 : tensor<8x2x24xf32> -> tensor<8x16x24xf32>
  // CHECK: dist.shard_slice %[[G]] on @m axes = [b, a] dim = 1 : tensor<8x16x24xf32> -> tensor<8x2x24xf32>
  func.func @swap_order(%x: tensor<8x16x24xf32> {dist.sharding = #dist.sharding<@m, [{}, {a, b}, {}]>}) -> (tensor<8x16x24xf32> {dist.sharding = #dist.sharding<@m, [{}, {b, a}, {}]>}) {
    %y = dist.reshard %x to <@m, [{}, {b, a}, {}]> : tensor<8x16x24xf32>
    return %y : tensor<8x16x24xf32>
  }

  // Replicated -> partial (sum): each member keeps 1/N of the value, so the
  // group's sum is the value (PyTorch DTensor's Replicate -> Partial); no
  // communication. Max needs nothing: every member holds the maximum.
  // CHECK-LABEL: func.func @replicated_to_partial
  // CHECK: tfm.scale %{{.*}} {factor = 2.500000e-01 : f64} : (tensor<4x16x24xf32>)
  // CHECK-NOT: tfm.scale
  // CHECK: return
  func.func @replicated_to_partial(%x: tensor<8x16x24xf32> {dist.sharding = #dist.sharding<@m, [{a}, {}, {}]>}) -> (tensor<8x16x24xf32> {dist.sharding = #dist.sharding<@m, [{a}, {}, {}], partial = {b: sum}>}) {
    %y = dist.reshard %x to <@m, [{a}, {}, {}], partial = {b: sum}> : tensor<8x16x24xf32>
    return %y : tensor<8x16x24xf32>
  }
  // CHECK-LABEL: func.func @replicated_to_partial_max
  // CHECK-NOT: tfm.scale
  // CHECK: return
  func.func @replicated_to_partial_max(%x: tensor<8x16x24xf32>) -> (tensor<8x16x24xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {b: max}>}) {
    %y = dist.reshard %x to <@m, [{}, {}, {}], partial = {b: max}> : tensor<8x16x24xf32>
    return %y : tensor<8x16x24xf32>
  }
}
