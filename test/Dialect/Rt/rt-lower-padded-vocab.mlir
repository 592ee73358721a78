// A padded vocabulary (V = 11 padded to 16): parameters that carry
// `tfm.vocab_size` get the logical (unpadded, global) shape on their
// `rt.state_def` and in the artifact's init spec, so that the runtime keys
// the init on the unpadded tensor's indices and zeroes the padding
// (docs/artifact-format.md, "Initialisation"). The vocabulary dim is the
// first of an embedding `[Vp, H]` and the last of an LM head `[H, Vp]`,
// whatever the sharding; optimizer states (zeros) need none.
// RUN: shard-opt %s --rt-lower | FileCheck %s
// RUN: shard-opt %s --rt-lower | shard-opt | FileCheck %s
// RUN: shard-opt %s --rt-lower --rt-plan-memory --rt-export=output=%t.json -o /dev/null
// RUN: FileCheck %s --check-prefix=JSON < %t.json

module attributes {tfm.model = {name = "padded", vocab_size = 11 : i64, padded_vocab_size = 16 : i64, batch = 4 : i64, seq_len = 4 : i64}, dist.plan = {dp = 1 : i64, tp = 2 : i64, sp = 0 : i64, zero = 0 : i64}} {
  dist.mesh @m [tp = 2 : tensor]

  // CHECK: rt.state_def @wte param init normal std 2.000000e-02 logical [11, 8] decay {rt.sharding = #dist.sharding<@m, [{tp}, {}]>} : !rt.buffer<8x8xf32>
  // CHECK: rt.state_def @lm_head param init normal std 2.000000e-02 logical [8, 11] decay {rt.sharding = #dist.sharding<@m, [{}, {tp}]>} : !rt.buffer<8x8xf32>
  // CHECK: rt.state_def @lm_head.exp_avg opt_m of @lm_head init zeros {rt.sharding
  // CHECK: rt.state_def @head2 param init normal std 1.000000e+00 decay : !rt.buffer<8x11xf32>

  // CHECK-LABEL: rt.func @step()
  func.func @step(
      %wte: tensor<8x8xf32> {tfm.param = "wte", tfm.role = "embedding", tfm.vocab_size = 11 : i64, tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64, dist.sharding = #dist.sharding<@m, [{tp}, {}]>},
      %head: tensor<8x8xf32> {tfm.param = "lm_head", tfm.role = "lm_head", tfm.vocab_size = 11 : i64, tfm.init = "normal", tfm.init_std = 2.000000e-02 : f64, dist.sharding = #dist.sharding<@m, [{}, {tp}]>},
      %m: tensor<8x8xf32> {tfm.state = "lm_head.exp_avg", tfm.state_kind = "opt_m", tfm.state_of = "lm_head", tfm.init = "zeros", dist.sharding = #dist.sharding<@m, [{}, {tp}]>},
      // Not padded (vocab_size = the dim): no logical shape.
      %head2: tensor<8x11xf32> {tfm.param = "head2", tfm.role = "lm_head", tfm.vocab_size = 11 : i64, tfm.init = "normal", tfm.init_std = 1.0 : f64})
      -> (tensor<8x8xf32> {tfm.output = "y", dist.sharding = #dist.sharding<@m, [{}, {tp}]>})
      attributes {dist.partitioned} {
    %y = tfm.add %wte, %head : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %z = tfm.add %y, %m : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    return %z : tensor<8x8xf32>
  }
}

// JSON: "state": [
// JSON-NEXT: {"dtype":"f32","global_shape":[16,8],"init":{"kind":"normal","logical_shape":[11,8],"std":0.02},"kind":"param","name":"wte","shape":[8,8],"sharding":{{\[\[}}"tp"],[]],"weight_decay":true},
// JSON-NEXT: {"dtype":"f32","global_shape":[8,16],"init":{"kind":"normal","logical_shape":[8,11],"std":0.02},"kind":"param","name":"lm_head","shape":[8,8],"sharding":{{\[\[}}],["tp"]],"weight_decay":true},
// JSON-NEXT: {"dtype":"f32","global_shape":[8,16],"init":{"kind":"zeros"},"kind":"opt_m","name":"lm_head.exp_avg","of":"lm_head","shape":[8,8],"sharding":{{\[\[}}],["tp"]]},
// JSON-NEXT: {"dtype":"f32","global_shape":[8,11],"init":{"kind":"normal","std":1},"kind":"param","name":"head2","shape":[8,11],"sharding":{{\[\[}}],[]],"weight_decay":true}
