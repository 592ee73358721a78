// User annotations and dist-apply-plan: a user-declared mesh must be the
// plan's (one without axis roles takes the plan's); an entry argument
// annotated like the plan says is accepted; one annotated differently is a
// conflict (the plan decides the layout of parameters, optimizer states and
// inputs); an annotation on an argument without a role is the user's and
// stays; an annotated op inside a function wins over propagation
// (dist-propagate keeps it, dist-partition reshards).
// RUN: shard-opt %s -split-input-file --dist-apply-plan="plan=dp=2,tp=2" -verify-diagnostics | FileCheck %s
// RUN: shard-opt %s -split-input-file --dist-apply-plan="plan=dp=2,tp=2" --dist-propagate --dist-partition -verify-diagnostics | FileCheck %s --check-prefix=PART

// CHECK-LABEL: module
// CHECK: dist.mesh @mesh [dp = 2 : data, tp = 2 : tensor]
// CHECK-NOT: dist.mesh
// CHECK: func.func @train_step(%{{.*}}: tensor<4x8xi32> {dist.sharding = #dist.sharding<@mesh, [{dp}, {}]>
// CHECK-SAME: %{{.*}}: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>
// CHECK-SAME: %{{.*}}: tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, [{tp}]>}
// The user's layout of an intermediate value wins: the replicated input is
// sliced over dp to produce it (4x8x32 split [{dp}, {}, {tp}]: 2x8x16 per
// rank) and the function's result takes it.
// PART-LABEL: func.func @train_step
// PART-SAME: -> (tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{dp}, {}, {tp}]>})
// PART: dist.shard_slice %{{.*}} on @mesh axes = [dp] dim = 0
// PART: tfm.matmul {{.*}} -> tensor<2x8x16xf32>
module attributes {tfm.model = {num_heads = 2 : i64, num_kv_heads = 2 : i64, ffn_hidden_size = 32 : i64, padded_vocab_size = 8 : i64}} {
  dist.mesh @mesh [dp = 2, tp = 2]
  func.func @train_step(
      %x: tensor<4x8xi32> {tfm.input = "tokens", dist.sharding = #dist.sharding<@mesh, [{dp}, {}]>},
      %w: tensor<16x32xf32> {tfm.param = "l0.w_fc", tfm.role = "mlp_up", dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>},
      %extra: tensor<16xf32> {dist.sharding = #dist.sharding<@mesh, [{tp}]>},
      %h: tensor<4x8x16xf32> {tfm.role = "hidden"})
      -> tensor<4x8x32xf32> {
    %y = tfm.matmul %h, %w {dist.sharding = #dist.sharding<@mesh, [{dp}, {}, {tp}]>} : (tensor<4x8x16xf32>, tensor<16x32xf32>) -> tensor<4x8x32xf32>
    return %y : tensor<4x8x32xf32>
  }
}

// -----

module attributes {tfm.model = {num_heads = 2 : i64, num_kv_heads = 2 : i64, ffn_hidden_size = 32 : i64, padded_vocab_size = 8 : i64}} {
  dist.mesh @mesh [dp = 2 : data, tp = 2 : tensor]
  // expected-error @below {{dist-apply-plan: conflicting annotation: argument #0 ('l0.w_fc') of @train_step is annotated #dist.sharding<@mesh, [{tp}, {}]> in the IR, but plan 'pp=1,dp=2,cp=1,tp=2,sp=0,zero=0,ep=1,mb=1,schedule=1f1b,vpp=1,recompute=none' lays it out as #dist.sharding<@mesh, [{}, {tp}]>; the plan decides the layout of parameters, optimizer states and inputs (remove the annotation or change the plan)}}
  func.func @train_step(
      %w: tensor<16x32xf32> {tfm.param = "l0.w_fc", tfm.role = "mlp_up", dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>})
      -> tensor<16x32xf32> {
    return %w : tensor<16x32xf32>
  }
}

// -----

module attributes {tfm.model = {num_heads = 2 : i64, num_kv_heads = 2 : i64, ffn_hidden_size = 32 : i64, padded_vocab_size = 8 : i64}} {
  // expected-error @below {{dist-apply-plan: the module's mesh @mesh does not match plan 'pp=1,dp=2,cp=1,tp=2,sp=0,zero=0,ep=1,mb=1,schedule=1f1b,vpp=1,recompute=none', whose mesh is [dp = 2 : data, tp = 2 : tensor]}}
  dist.mesh @mesh [dp = 4 : data]
  func.func @train_step(%w: tensor<16x32xf32> {tfm.param = "l0.w_fc", tfm.role = "mlp_up"}) -> tensor<16x32xf32> {
    return %w : tensor<16x32xf32>
  }
}
