// RUN: shard-opt --dist-partition -split-input-file -verify-diagnostics %s

// MoE dispatch with the expert dim sharded needs expert parallelism's hook
// (expert offsets and all-to-alls; not implemented yet).
dist.mesh @m [dp = 2]
func.func @dispatch(%x: tensor<4x8x16xf32>, %i: tensor<4x8x2xi32>) -> tensor<4x4x5x16xf32> {
  // expected-error @+1 {{dist-partition: sharding factor 0 (size 4) on axes [dp] needs the op's partition hook, which does not support it}}
  %0 = tfm.moe_dispatch %x, %i {capacity = 5 : i64, num_experts = 4 : i64, dist.sharding = #dist.sharding<@m, [{dp}, {}, {}, {}]>} : (tensor<4x8x16xf32>, tensor<4x8x2xi32>) -> tensor<4x4x5x16xf32>
  return %0 : tensor<4x4x5x16xf32>
}

// -----

// A value sharded on an axis does not become partial on it (a replicated
// one does: dist-partition-reshard.mlir).
dist.mesh @m [tp = 2]
// expected-error @+1 {{cannot reshard #dist.sharding<@m, [{tp}]> to #dist.sharding<@m, [{}], partial = {tp: sum}>: axis 'tp' would become partial}}
func.func @to_partial(%x: tensor<8xf32> {dist.sharding = #dist.sharding<@m, [{tp}]>}) -> (tensor<8xf32> {dist.sharding = #dist.sharding<@m, [{}], partial = {tp: sum}>}) {
  return %x : tensor<8xf32>
}

// -----

dist.mesh @a [tp = 2]
// expected-error @+1 {{dist-partition supports one mesh per module, found 2}}
dist.mesh @b [dp = 2]
