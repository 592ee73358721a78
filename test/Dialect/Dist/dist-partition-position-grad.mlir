// position_embedding_grad with S == P whose result rows are split while its
// `dy` is not: the hook must split `dy` like the rows (a local slice) and sum
// only the local rows.
// RUN: shard-opt %s --dist-partition | FileCheck %s

module {
  dist.mesh @mesh [dp = 2, tp = 2]
  func.func @f(%dy: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {}], partial = {dp: sum}>})
      -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{tp, dp}, {}]>}) {
    %0 = tfm.position_embedding_grad %dy {dist.sharding = #dist.sharding<@mesh, [{tp}, {}], partial = {dp: sum}>, num_positions = 8 : i64} : (tensor<8x16xf32>) -> tensor<8x16xf32>
    return %0 : tensor<8x16xf32>
  }
}

// S == P with the table's rows split but `dy` not: `dy` is sliced like the
// rows (kept partial over dp, as the result is) and the local op sums the
// local rows; the result is then one reduce-scatter over dp.
// CHECK-LABEL: func.func @f(
// CHECK: %[[S:.*]] = dist.shard_slice %arg0 on @mesh axes = [tp] dim = 0 : tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[G:.*]] = tfm.position_embedding_grad %[[S]] {num_positions = 4 : i64} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: %[[R:.*]] = dist.reduce_scatter %[[G]] on @mesh axes = [dp] scatter_dim = 0 reduction = sum : tensor<4x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: return %[[R]]
