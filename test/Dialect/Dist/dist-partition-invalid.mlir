// RUN: shard-opt --dist-partition -split-input-file -verify-diagnostics %s

// RoPE's angles depend on global positions: a sharded sequence dim needs a
// partition hook that passes the shard offset (not implemented yet).
dist.mesh @m [dp = 2]
func.func @rope(%x: tensor<2x8x2x4xf32> {dist.sharding = #dist.sharding<@m, [{}, {dp}, {}, {}]>}) -> tensor<2x8x2x4xf32> {
  // expected-error @+1 {{dist-partition: sharding factor 1 (size 8) on axes [dp] needs the op's partition hook, which does not support it}}
  %y = tfm.rope %x {theta = 10000.0 : f64, dist.sharding = #dist.sharding<@m, [{}, {dp}, {}, {}]>} : (tensor<2x8x2x4xf32>) -> tensor<2x8x2x4xf32>
  return %y : tensor<2x8x2x4xf32>
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
