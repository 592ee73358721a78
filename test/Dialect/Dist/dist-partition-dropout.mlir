// RUN: shard-opt --dist-partition -split-input-file %s | FileCheck %s \
// RUN:   --implicit-check-not=dist.all_reduce --implicit-check-not=dist.all_gather \
// RUN:   --implicit-check-not=dist.reduce_scatter --implicit-check-not=dist.all_to_all \
// RUN:   --implicit-check-not=dist.shard_slice --implicit-check-not="tfm.dropout "
//
// The partition hooks of tfm.dropout / tfm.dropout_grad: a sharded input
// becomes tfm.dropout_local / tfm.dropout_local_grad with the global shape
// and, per sharded dim, the rank's block index over the dim's axes (so that
// the local op draws the mask of each element's global index). No
// communication; a replicated dropout stays tfm.dropout.

dist.mesh @m [dp = 2 : data, tp = 2 : tensor]

// CHECK-LABEL: func.func @dim0(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x8x16xf32>
// CHECK-SAME: %[[S:[^:]*]]: tensor<i64>
// CHECK-SAME: %[[L:[^:]*]]: tensor<i64>
// CHECK: %[[I:.*]] = dist.axis_index on @m axes = [dp] : tensor<i64>
// CHECK: %[[Y:.*]] = tfm.dropout_local %[[X]], %[[S]], %[[L]], %[[I]] {global_shape = array<i64: 4, 8, 16>, rate = 2.000000e-01 : f64, shard_dims = array<i64: 0>, site = 1 : i64} : (tensor<2x8x16xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<2x8x16xf32>
// CHECK: return %[[Y]]
func.func @dim0(%x: tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>}, %s: tensor<i64> {dist.sharding = #dist.sharding<@m, []>}, %l: tensor<i64> {dist.sharding = #dist.sharding<@m, []>}) -> (tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>}) {
  %y = tfm.dropout %x, %s, %l {rate = 0.2 : f64, site = 1 : i64, dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>} : (tensor<4x8x16xf32>, tensor<i64>, tensor<i64>) -> tensor<4x8x16xf32>
  return %y : tensor<4x8x16xf32>
}

// -----

dist.mesh @m [dp = 2 : data, tp = 2 : tensor]

// Sequence-parallel layout [{dp}, {tp}, {}]: two shard indices. The
// gradient uses the same layout and the same mask.
// CHECK-LABEL: func.func @dims01(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4x16xf32>
// CHECK: %[[I0:.*]] = dist.axis_index on @m axes = [dp]
// CHECK: %[[I1:.*]] = dist.axis_index on @m axes = [tp]
// CHECK: %[[Y:.*]] = tfm.dropout_local %[[X]], %{{.*}}, %{{.*}}, %[[I0]], %[[I1]] {global_shape = array<i64: 4, 8, 16>, rate = 1.000000e-01 : f64, shard_dims = array<i64: 0, 1>, site = 2 : i64} : (tensor<2x4x16xf32>, tensor<i64>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<2x4x16xf32>
// CHECK: %[[J0:.*]] = dist.axis_index on @m axes = [dp]
// CHECK: %[[J1:.*]] = dist.axis_index on @m axes = [tp]
// CHECK: %[[DX:.*]] = tfm.dropout_local_grad %[[Y]], %{{.*}}, %{{.*}}, %[[J0]], %[[J1]] {global_shape = array<i64: 4, 8, 16>, rate = 1.000000e-01 : f64, shard_dims = array<i64: 0, 1>, site = 2 : i64}
// CHECK: return %[[DX]]
func.func @dims01(%x: tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {tp}, {}]>}, %s: tensor<i64> {dist.sharding = #dist.sharding<@m, []>}, %l: tensor<i64> {dist.sharding = #dist.sharding<@m, []>}) -> (tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {tp}, {}]>}) {
  %y = tfm.dropout %x, %s, %l {rate = 0.1 : f64, site = 2 : i64, dist.sharding = #dist.sharding<@m, [{dp}, {tp}, {}]>} : (tensor<4x8x16xf32>, tensor<i64>, tensor<i64>) -> tensor<4x8x16xf32>
  %dx = tfm.dropout_grad %y, %s, %l {rate = 0.1 : f64, site = 2 : i64, dist.sharding = #dist.sharding<@m, [{dp}, {tp}, {}]>} : (tensor<4x8x16xf32>, tensor<i64>, tensor<i64>) -> tensor<4x8x16xf32>
  return %dx : tensor<4x8x16xf32>
}

// -----

dist.mesh @m [dp = 2 : data, tp = 2 : tensor]

// One dim over two axes (major to minor), and a partial (sum) input that
// the result declares partial: it stays partial (same mask on every
// summand), no all-reduce before the dropout.
// CHECK-LABEL: func.func @multi_axis_partial(
// CHECK-SAME: %[[X:[^:]*]]: tensor<1x8x16xf32>
// CHECK-SAME: %[[P:[^:]*]]: tensor<2x8x16xf32>
// CHECK: %[[I:.*]] = dist.axis_index on @m axes = [dp, tp]
// CHECK: %[[Y:.*]] = tfm.dropout_local %[[X]], %{{.*}}, %{{.*}}, %[[I]] {global_shape = array<i64: 4, 8, 16>, {{.*}}shard_dims = array<i64: 0>
// CHECK: %[[K:.*]] = dist.axis_index on @m axes = [dp]
// CHECK: %[[Z:.*]] = tfm.dropout_local_grad %[[P]], %{{.*}}, %{{.*}}, %[[K]] {global_shape = array<i64: 4, 8, 16>, {{.*}}shard_dims = array<i64: 0>
// CHECK: return %[[Y]], %[[Z]]
func.func @multi_axis_partial(%x: tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp, tp}, {}, {}]>}, %p: tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}], partial = {tp: sum}>}, %s: tensor<i64> {dist.sharding = #dist.sharding<@m, []>}, %l: tensor<i64> {dist.sharding = #dist.sharding<@m, []>}) -> (tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp, tp}, {}, {}]>}, tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}], partial = {tp: sum}>}) {
  %y = tfm.dropout %x, %s, %l {rate = 0.1 : f64, site = 0 : i64, dist.sharding = #dist.sharding<@m, [{dp, tp}, {}, {}]>} : (tensor<4x8x16xf32>, tensor<i64>, tensor<i64>) -> tensor<4x8x16xf32>
  %z = tfm.dropout_grad %p, %s, %l {rate = 0.1 : f64, site = 0 : i64, dist.sharding = #dist.sharding<@m, [{dp}, {}, {}], partial = {tp: sum}>} : (tensor<4x8x16xf32>, tensor<i64>, tensor<i64>) -> tensor<4x8x16xf32>
  return %y, %z : tensor<4x8x16xf32>, tensor<4x8x16xf32>
}

// -----

dist.mesh @m [dp = 2 : data, tp = 2 : tensor]

// Replicated: the global op is kept as it is.
// CHECK-LABEL: func.func @replicated(
// CHECK: tfm.dropout %{{.*}} : (tensor<4x8x16xf32>, tensor<i64>, tensor<i64>) -> tensor<4x8x16xf32>
// CHECK-NOT: tfm.dropout_local
func.func @replicated(%x: tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {}]>}, %s: tensor<i64> {dist.sharding = #dist.sharding<@m, []>}, %l: tensor<i64> {dist.sharding = #dist.sharding<@m, []>}) -> (tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {}]>}) {
  %y = tfm.dropout %x, %s, %l {rate = 0.1 : f64, site = 0 : i64, dist.sharding = #dist.sharding<@m, [{}, {}, {}]>} : (tensor<4x8x16xf32>, tensor<i64>, tensor<i64>) -> tensor<4x8x16xf32>
  return %y : tensor<4x8x16xf32>
}
