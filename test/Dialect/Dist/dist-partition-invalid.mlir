// RUN: shard-opt --dist-partition -split-input-file -verify-diagnostics %s

// A value sharded on an axis does not become partial on it (a replicated
// one does: dist-partition-reshard.mlir).
dist.mesh @m [tp = 2 : tensor]
// expected-error @+1 {{cannot reshard #dist.sharding<@m, [{tp}]> to #dist.sharding<@m, [{}], partial = {tp: sum}>: axis 'tp' would become partial}}
func.func @to_partial(%x: tensor<8xf32> {dist.sharding = #dist.sharding<@m, [{tp}]>}) -> (tensor<8xf32> {dist.sharding = #dist.sharding<@m, [{}], partial = {tp: sum}>}) {
  return %x : tensor<8xf32>
}

// -----

dist.mesh @a [tp = 2 : tensor]
// expected-error @+1 {{dist-partition supports one mesh per module, found 2}}
dist.mesh @b [dp = 2 : data]
