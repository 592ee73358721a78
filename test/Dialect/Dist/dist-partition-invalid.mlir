// RUN: shard-opt --dist-partition -split-input-file -verify-diagnostics %s

// Dropout's mask depends on global element indices: a sharded dim needs a
// partition hook that passes the shard offsets (not implemented yet).
dist.mesh @m [dp = 2]
func.func @dropout(%x: tensor<4x8xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}]>}, %step: tensor<i64>, %layer: tensor<i64>) -> tensor<4x8xf32> {
  // expected-error @+1 {{dist-partition: sharding factor 0 (size 4) on axes [dp] needs the op's partition hook, which does not support it}}
  %y = tfm.dropout %x, %step, %layer {rate = 0.1 : f64, site = 0 : i64, dist.sharding = #dist.sharding<@m, [{dp}, {}]>} : (tensor<4x8xf32>, tensor<i64>, tensor<i64>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Resharding never makes a complete value partial.
dist.mesh @m [tp = 2]
// expected-error @+1 {{cannot reshard #dist.sharding<@m, [{}]> to #dist.sharding<@m, [{}], partial = {tp: sum}>: axis 'tp' would become partial}}
func.func @to_partial(%x: tensor<8xf32>) -> (tensor<8xf32> {dist.sharding = #dist.sharding<@m, [{}], partial = {tp: sum}>}) {
  return %x : tensor<8xf32>
}

// -----

dist.mesh @a [tp = 2]
// expected-error @+1 {{dist-partition supports one mesh per module, found 2}}
dist.mesh @b [dp = 2]
