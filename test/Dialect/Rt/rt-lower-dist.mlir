// rt-lower and rt-export of a per-rank (partitioned) program: dist
// collectives on local tensors (blocking, and async start/wait), point to
// point, shard_slice / axis_index, and the `dist.sharding` of entry
// arguments and results (hand-written, as dist-partition leaves them: the
// function is marked `dist.partitioned`).
// RUN: shard-opt %s --rt-lower | FileCheck %s
// RUN: shard-opt %s --rt-lower | shard-opt | FileCheck %s
// RUN: shard-opt %s --rt-lower --rt-plan-memory --rt-export=output=%t.json -o /dev/null
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: %python -c "import json, sys; a = json.load(open(sys.argv[1])); assert a['version'] == 5 and a['world_size'] == 4; print('ok')" %t.json | FileCheck %s --check-prefix=PY

// PY: ok

module attributes {tfm.model = {name = "tp", vocab_size = 16 : i64, padded_vocab_size = 16 : i64, batch = 4 : i64, seq_len = 4 : i64}, dist.plan = {dp = 2 : i64, tp = 2 : i64, sp = 0 : i64, zero = 1 : i64}} {
  dist.mesh @m [dp = 2 : data, tp = 2 : tensor]

  // CHECK: rt.state_def @w param init normal std 2.000000e-02 decay {rt.sharding = #dist.sharding<@m, [{}, {tp}]>} : !rt.buffer<8x4xf32>
  // CHECK: rt.state_def @w.exp_avg opt_m of @w init zeros {rt.sharding = #dist.sharding<@m, [{dp}, {tp}]>} : !rt.buffer<4x4xf32>

  // CHECK-LABEL: rt.func @step()
  func.func @step(
      %x: tensor<2x4x8xf32> {tfm.input = "tokens", dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>},
      %w: tensor<8x4xf32> {tfm.param = "w", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64, dist.sharding = #dist.sharding<@m, [{}, {tp}]>},
      %m: tensor<4x4xf32> {tfm.state = "w.exp_avg", tfm.state_kind = "opt_m", tfm.state_of = "w", tfm.init = "zeros", dist.sharding = #dist.sharding<@m, [{dp}, {tp}]>})
      -> (tensor<2x4x8xf32> {tfm.output = "y", dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>},
          tensor<i64> {tfm.output = "index"},
          tensor<4x4xf32> {tfm.state = "w.exp_avg", dist.sharding = #dist.sharding<@m, [{dp}, {tp}]>})
      attributes {dist.partitioned} {
    // CHECK: %[[X:.*]] = rt.input "tokens" {rt.sharding = #dist.sharding<@m, [{dp}, {}, {}]>} : !rt.buffer<2x4x8xf32>
    // CHECK: %[[Y:.*]] = rt.output "y" {rt.sharding = #dist.sharding<@m, [{dp}, {}, {}]>} : !rt.buffer<2x4x8xf32>
    // CHECK: %[[I:.*]] = rt.output "index" : !rt.buffer<i64>
    %h = tfm.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
    // CHECK: rt.kernel "dist.all_gather"(%{{.*}}) -> (%[[G:.*]]) attrs {axes = ["tp"], gather_dim = 2 : i64}
    %g = dist.all_gather %h on @m axes = [tp] gather_dim = 2 : tensor<2x4x4xf32> -> tensor<2x4x8xf32>
    // Async: the start writes the wait's destination (the output slot); the
    // wait names the start's operand and result, paired by `handle`.
    // CHECK: rt.kernel "dist.all_reduce_start"(%[[G]]) -> (%[[Y]]) attrs {axes = ["tp"], handle = 0 : i64, reduction = "sum"}
    %t = dist.all_reduce_start %g on @m axes = [tp] reduction = sum : tensor<2x4x8xf32> -> !dist.async<tensor<2x4x8xf32>>
    // CHECK: rt.kernel "dist.reduce_scatter"(%{{.*}}) -> (%{{.*}}) attrs {axes = ["dp", "tp"], reduction = "max", scatter_dim = 1 : i64}
    %rs = dist.reduce_scatter %g on @m axes = [dp, tp] scatter_dim = 1 reduction = max : tensor<2x4x8xf32> -> tensor<2x1x8xf32>
    // CHECK: rt.kernel "dist.all_to_all"(%{{.*}}) -> (%{{.*}}) attrs {axes = ["dp"], concat_dim = 0 : i64, split_dim = 2 : i64}
    %a2a = dist.all_to_all %rs on @m axes = [dp] split_dim = 2 concat_dim = 0 : tensor<2x1x8xf32> -> tensor<4x1x4xf32>
    // CHECK: rt.kernel "dist.broadcast"(%{{.*}}) -> (%{{.*}}) attrs {axes = ["dp"], root = 1 : i64}
    %b = dist.broadcast %a2a on @m axes = [dp] root = 1 : tensor<4x1x4xf32> -> tensor<4x1x4xf32>
    // CHECK: rt.kernel "dist.ppermute"(%{{.*}}) -> (%[[P:.*]]) attrs {axes = ["tp"], pairs = array<i64: 0, 1, 1, 0>}
    %p = dist.ppermute %b on @m axes = [tp] pairs = [0 -> 1, 1 -> 0] : tensor<4x1x4xf32> -> tensor<4x1x4xf32>
    // A send writes nothing; its wait names only the operand.
    // CHECK: rt.kernel "dist.send_start"(%[[P]]) -> () attrs {axes = ["dp"], handle = 1 : i64, peer = 0 : i64}
    %s = dist.send_start %p on @m axes = [dp] peer = 0 : tensor<4x1x4xf32> -> !dist.async
    // CHECK: rt.kernel "dist.recv"() -> (%{{.*}}) attrs {axes = ["dp"], peer = 1 : i64}
    %r = dist.recv on @m axes = [dp] peer = 1 : tensor<4x1x4xf32>
    // CHECK: rt.kernel "dist.wait"(%[[P]]) -> () attrs {handle = 1 : i64}
    dist.wait %s : !dist.async
    // CHECK: rt.kernel "dist.shard_slice"(%{{.*}}) -> (%{{.*}}) attrs {axes = ["dp"], dim = 0 : i64}
    %sl = dist.shard_slice %r on @m axes = [dp] dim = 0 : tensor<4x1x4xf32> -> tensor<2x1x4xf32>
    // CHECK: rt.kernel "dist.axis_index"() -> (%[[I]]) attrs {axes = ["tp"]}
    %i = dist.axis_index on @m axes = [tp] : tensor<i64>
    %m2 = tfm.scale %m {factor = 5.000000e-01 : f64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    // CHECK: rt.kernel "dist.wait"(%[[G]], %[[Y]]) -> (%[[Y]]) attrs {handle = 0 : i64}
    %y = dist.wait %t : !dist.async<tensor<2x4x8xf32>>
    return %y, %i, %m2 : tensor<2x4x8xf32>, tensor<i64>, tensor<4x4xf32>
  }
}

// JSON: "inputs": {"tokens":{"dtype":"f32","global_shape":[4,4,8],"shape":[2,4,8],"sharding":{{\[\[}}"dp"],[],[]]}},
// JSON: "index": {"dtype":"i64","global_shape":[],"shape":[],"sharding":[]},
// JSON: "y": {"dtype":"f32","global_shape":[4,4,8],"shape":[2,4,8],"sharding":{{\[\[}}"dp"],[],[]]}
// JSON: {"args":[5],"attrs":{"axes":["tp"],"gather_dim":2},"op":"dist.all_gather","results":[6]},
// JSON: {"args":[6],"attrs":{"axes":["tp"],"handle":0,"reduction":"sum"},"op":"dist.all_reduce_start","results":[3]},
// JSON: {"args":[10],"attrs":{"axes":["dp"],"handle":1,"peer":0},"op":"dist.send_start","results":[]},
// JSON: {"args":[10],"attrs":{"handle":1},"op":"dist.wait","results":[]},
// JSON: {"args":[6,3],"attrs":{"handle":0},"op":"dist.wait","results":[3]}
// JSON: "mesh": {"axes":["dp","tp"],"sizes":[2,2]},
// JSON: "plan": {"dp":2,"sp":0,"tp":2,"zero":1},
// JSON: "state": [
// JSON-NEXT: {"dtype":"f32","global_shape":[8,8],"init":{"kind":"normal","std":0.02},"kind":"param","name":"w","shape":[8,4],"sharding":{{\[\[}}],["tp"]],"weight_decay":true},
// JSON-NEXT: {"dtype":"f32","global_shape":[8,8],"init":{"kind":"zeros"},"kind":"opt_m","name":"w.exp_avg","of":"w","shape":[4,4],"sharding":{{\[\[}}"dp"],["tp"]]}
// JSON: "version": 5,
// JSON: "world_size": 4
