// A small partitioned program (as dist-partition leaves it, mesh dp=2 x tp=2)
// with known collectives, for dist-explain.mlir. Per train_step per rank:
//   @blk (called 3 times): 1 all_reduce [tp] of 2x4x8xf32 (256 B)  -> TP 3, 768 B
//   train_step: all_reduce [dp] 2x4x8xf32 (async start/wait)       -> DP 1, 256 B
//               reduce_scatter [dp] 8x4xf32 (128 B)                 -> ZeRO-1 1, 128 B
//               all_gather [dp] 4x4xf32 (64 B)                      -> ZeRO-1 1, 64 B
//               all_reduce [dp, tp] f32 (4 B)                       -> loss/grad norm 1, 4 B
//               shard_slice, axis_index: local, not counted.
// States: wq 8x8 [{}, {tp}] (local 8x4), wo 8x8 [{tp}, {}] (local 4x8),
// ln 8 replicated, wq.exp_avg 8x8 [{dp}, {tp}] (local 4x4).
module attributes {tfm.model = {name = "toy", num_parameters = 136 : i64, vocab_size = 8 : i64, padded_vocab_size = 8 : i64, batch = 4 : i64, seq_len = 4 : i64},
                   dist.plan = {dp = 2 : i64, tp = 2 : i64, sp = 0 : i64, zero = 1 : i64}} {
  dist.mesh @mesh [dp = 2 : data, tp = 2 : tensor]

  func.func private @blk(%x: tensor<2x4x8xf32>, %wq: tensor<8x4xf32>, %wo: tensor<4x8xf32>) -> tensor<2x4x8xf32> attributes {dist.partitioned} {
    %h = tfm.matmul %x, %wq : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
    %o = tfm.matmul %h, %wo : (tensor<2x4x4xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
    %r = dist.all_reduce %o on @mesh axes = [tp] reduction = sum : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
    %y = tfm.add %x, %r : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }

  func.func @train_step(
      %x: tensor<2x4x8xf32> {tfm.input = "tokens", dist.sharding = #dist.sharding<@mesh, [{dp}, {}, {}]>},
      %wq: tensor<8x4xf32> {tfm.param = "wq", tfm.role = "attn_q", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64, dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>},
      %wo: tensor<4x8xf32> {tfm.param = "wo", tfm.role = "attn_out", tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64, dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>},
      %ln: tensor<8xf32> {tfm.param = "ln", tfm.role = "norm", tfm.init = "ones", dist.sharding = #dist.sharding<@mesh, [{}]>},
      %m: tensor<4x4xf32> {tfm.state = "wq.exp_avg", tfm.state_kind = "opt_m", tfm.state_of = "wq", tfm.init = "zeros", dist.sharding = #dist.sharding<@mesh, [{dp}, {tp}]>})
      -> (tensor<2x4x8xf32> {tfm.output = "y", dist.sharding = #dist.sharding<@mesh, [{dp}, {}, {}]>},
          tensor<f32> {tfm.output = "loss", dist.sharding = #dist.sharding<@mesh, []>},
          tensor<4x4xf32> {tfm.state = "wq.exp_avg", dist.sharding = #dist.sharding<@mesh, [{dp}, {tp}]>})
      attributes {dist.partitioned} {
    %h1 = func.call @blk(%x, %wq, %wo) : (tensor<2x4x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
    %h2 = func.call @blk(%h1, %wq, %wo) : (tensor<2x4x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
    %h3 = func.call @blk(%h2, %wq, %wo) : (tensor<2x4x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
    %t = dist.all_reduce_start %h3 on @mesh axes = [dp] reduction = sum : tensor<2x4x8xf32> -> !dist.async<tensor<2x4x8xf32>>
    %g = tfm.scale %wq {factor = 5.000000e-01 : f64} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %gs = dist.reduce_scatter %g on @mesh axes = [dp] scatter_dim = 0 reduction = sum : tensor<8x4xf32> -> tensor<4x4xf32>
    %m2 = tfm.add %m, %gs : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %full = dist.all_gather %m2 on @mesh axes = [dp] gather_dim = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
    %back = dist.shard_slice %full on @mesh axes = [dp] dim = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
    %n = tfm.sum_squares %back : (tensor<4x4xf32>) -> tensor<f32>
    %loss = dist.all_reduce %n on @mesh axes = [dp, tp] reduction = sum : tensor<f32> -> tensor<f32>
    %y = dist.wait %t : !dist.async<tensor<2x4x8xf32>>
    return %y, %loss, %m2 : tensor<2x4x8xf32>, tensor<f32>, tensor<4x4xf32>
  }
}
