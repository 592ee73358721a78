// rt-export refuses an entry slot that shard-run feeds or reads (EntryAbi.h:
// tokens, labels, step, lr in; loss, grad_norm, logits out) when it is
// partial, naming the entry and the slot; other partial slots (the
// resharding test programs') are exported with their `partial` map.
// RUN: shard-opt %s --rt-plan-memory --rt-export=output=- -o /dev/null | FileCheck %s
// RUN: sed -e 's/rt.output "y"/rt.output "loss"/' %s | not shard-opt --rt-plan-memory --rt-export -o /dev/null 2>&1 | FileCheck %s --check-prefix=LOSS
// RUN: sed -e 's/rt.input "x"/rt.input "lr"/' %s | not shard-opt --rt-plan-memory --rt-export -o /dev/null 2>&1 | FileCheck %s --check-prefix=LR

// CHECK: "outputs": {"y":{{.*}}"partial":{"tp":"sum"}
// LOSS: error: 'rt.output' op entry 'main' output 'loss' is partial (#dist.sharding<@m, [], partial = {tp: sum}>); shard-run reads whole values: make its sharding not partial (dist-partition then reduces it)
// LR: error: 'rt.input' op entry 'main' input 'lr' is partial (#dist.sharding<@m, [], partial = {tp: sum}>); shard-run feeds whole values

module attributes {tfm.model = {vocab_size = 8 : i64, padded_vocab_size = 8 : i64, batch = 1 : i64, seq = 8 : i64}} {
  dist.mesh @m [tp = 2]
  rt.func @main() attributes {entry = "eval"} {
    %x = rt.input "x" {rt.sharding = #dist.sharding<@m, [], partial = {tp: sum}>} : !rt.buffer<f32>
    %y = rt.output "y" {rt.sharding = #dist.sharding<@m, [], partial = {tp: sum}>} : !rt.buffer<f32>
    rt.kernel "scale"(%x) -> (%y) attrs {factor = 5.000000e-01 : f64} : (!rt.buffer<f32>) -> !rt.buffer<f32>
    rt.return
  }
}
