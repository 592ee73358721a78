// Every tfm op's factor sharding rule (TfmShardingRuleOpInterface), one
// instance per op, as test-print-sharding-rules prints it (Shardy's
// notation: operand and result dims by factor, `_` for a dim tied to no
// factor, `i*N` for a dim whose major part is factor i; then the factor
// sizes, reduction / need_replication / hook factors and the linear operand
// groups). `dialect=tfm` fails when an op with a rule has no instance here.
// RUN: shard-opt %s --test-print-sharding-rules=dialect=tfm -o /dev/null | FileCheck %s --match-full-lines
// One op alone leaves the others without an instance:
// RUN: sed -n '/^func.func @gelu(/,/^}/p' %s | not shard-opt --test-print-sharding-rules=dialect=tfm -o /dev/null 2>&1 | FileCheck %s --check-prefix=MISSING

// MISSING-DAG: tfm.gelu: ([i, j]) -> ([i, j]) {i=2, j=4}
// MISSING-DAG: error: 56 op(s) of 'tfm' have a sharding rule but no instance in the input: tfm.adamw, tfm.add, tfm.attention, {{.*}}, tfm.vocab_embedding_grad

// CHECK: tfm.adamw: ([i], [i], [i], [i], [], [], []) -> ([i], [i], [i]) {i=16}
func.func @adamw(%a0: tensor<16xf32>, %a1: tensor<16xf32>, %a2: tensor<16xf32>, %a3: tensor<16xf32>, %a4: tensor<f32>, %a5: tensor<i64>, %a6: tensor<f32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %r:3 = tfm.adamw %a0, %a1, %a2, %a3, %a4, %a5, %a6 {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return %r#0, %r#1, %r#2 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// CHECK-NEXT: tfm.add: ([i, j, k], [j, k]) -> ([i, j, k]) {i=2, j=8, k=16} linear={(0, 1)}
func.func @add(%a0: tensor<2x8x16xf32>, %a1: tensor<8x16xf32>) -> tensor<2x8x16xf32> {
  %r = tfm.add %a0, %a1 : (tensor<2x8x16xf32>, tensor<8x16xf32>) -> tensor<2x8x16xf32>
  return %r : tensor<2x8x16xf32>
}

// CHECK-NEXT: tfm.attention: ([i, j, k, l], [i, j, k, l], [i, j, k, l]) -> ([i, j, k, l], [i, k, j]) {i=1, j=2, k=2, l=4} need_replication={l} hook={j}
func.func @attention(%a0: tensor<1x2x2x4xf32>, %a1: tensor<1x2x2x4xf32>, %a2: tensor<1x2x2x4xf32>) -> (tensor<1x2x2x4xf32>, tensor<1x2x2xf32>) {
  %r:2 = tfm.attention %a0, %a1, %a2 {causal, scale = 5.000000e-01 : f64} : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> (tensor<1x2x2x4xf32>, tensor<1x2x2xf32>)
  return %r#0, %r#1 : tensor<1x2x2x4xf32>, tensor<1x2x2xf32>
}

// CHECK-NEXT: tfm.attention: ([i, j, k*2, l], [i, j, k, l], [i, j, k, l]) -> ([i, j, k*2, l], [i, k*2, j]) {i=2, j=8, k=2, l=16} need_replication={l} hook={j}
func.func @attention_gqa(%a0: tensor<2x8x4x16xf32>, %a1: tensor<2x8x2x16xf32>, %a2: tensor<2x8x2x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>) {
  %r:2 = tfm.attention %a0, %a1, %a2 {causal, scale = 2.500000e-01 : f64} : (tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  return %r#0, %r#1 : tensor<2x8x4x16xf32>, tensor<2x4x8xf32>
}

// CHECK-NEXT: tfm.attention_block: ([_, _, _, _], [_, _, _, _], [_, _, _, _], []) -> ([_, _, _, _], [_, _, _]) {}
func.func @attention_block(%a0: tensor<2x4x2x16xf32>, %a1: tensor<2x4x1x16xf32>, %a2: tensor<2x4x1x16xf32>, %a3: tensor<i64>) -> (tensor<2x4x2x16xf32>, tensor<2x2x4xf32>) {
  %r:2 = tfm.attention_block %a0, %a1, %a2, %a3 {causal, kv_step = 0 : i64, num_chunks = 2 : i64, scale = 2.500000e-01 : f64} : (tensor<2x4x2x16xf32>, tensor<2x4x1x16xf32>, tensor<2x4x1x16xf32>, tensor<i64>) -> (tensor<2x4x2x16xf32>, tensor<2x2x4xf32>)
  return %r#0, %r#1 : tensor<2x4x2x16xf32>, tensor<2x2x4xf32>
}

// CHECK-NEXT: tfm.attention_block_grad: ([_, _, _, _], [_, _, _, _], [_, _, _, _], [_, _, _, _], [_, _, _, _], [_, _, _], []) -> ([_, _, _, _], [_, _, _, _], [_, _, _, _]) {}
func.func @attention_block_grad(%a0: tensor<2x4x2x16xf32>, %a1: tensor<2x4x2x16xf32>, %a2: tensor<2x4x1x16xf32>, %a3: tensor<2x4x1x16xf32>, %a4: tensor<2x4x2x16xf32>, %a5: tensor<2x2x4xf32>, %a6: tensor<i64>) -> (tensor<2x4x2x16xf32>, tensor<2x4x1x16xf32>, tensor<2x4x1x16xf32>) {
  %r:3 = tfm.attention_block_grad %a0, %a1, %a2, %a3, %a4, %a5, %a6 {causal, kv_step = 0 : i64, num_chunks = 2 : i64, scale = 2.500000e-01 : f64} : (tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x1x16xf32>, tensor<2x4x1x16xf32>, tensor<2x4x2x16xf32>, tensor<2x2x4xf32>, tensor<i64>) -> (tensor<2x4x2x16xf32>, tensor<2x4x1x16xf32>, tensor<2x4x1x16xf32>)
  return %r#0, %r#1, %r#2 : tensor<2x4x2x16xf32>, tensor<2x4x1x16xf32>, tensor<2x4x1x16xf32>
}

// CHECK-NEXT: tfm.attention_grad: ([i, j, k, l], [i, j, k, l], [i, j, k, l], [i, j, k, l], [i, j, k, l], [i, k, j]) -> ([i, j, k, l], [i, j, k, l], [i, j, k, l]) {i=2, j=8, k=4, l=4} need_replication={l} hook={j} linear={(0)}
func.func @attention_grad(%a0: tensor<2x8x4x4xf32>, %a1: tensor<2x8x4x4xf32>, %a2: tensor<2x8x4x4xf32>, %a3: tensor<2x8x4x4xf32>, %a4: tensor<2x8x4x4xf32>, %a5: tensor<2x4x8xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>) {
  %r:3 = tfm.attention_grad %a0, %a1, %a2, %a3, %a4, %a5 {causal, scale = 0.5 : f64} : (tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x4x8xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>)
  return %r#0, %r#1, %r#2 : tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>
}

// CHECK-NEXT: tfm.attention_merge: ([_, _, _, _], [_, _, _], [_, _, _, _], [_, _, _]) -> ([_, _, _, _], [_, _, _]) {}
func.func @attention_merge(%a0: tensor<2x4x2x16xf32>, %a1: tensor<2x2x4xf32>, %a2: tensor<2x4x2x16xf32>, %a3: tensor<2x2x4xf32>) -> (tensor<2x4x2x16xf32>, tensor<2x2x4xf32>) {
  %r:2 = tfm.attention_merge %a0, %a1, %a2, %a3 : (tensor<2x4x2x16xf32>, tensor<2x2x4xf32>, tensor<2x4x2x16xf32>, tensor<2x2x4xf32>) -> (tensor<2x4x2x16xf32>, tensor<2x2x4xf32>)
  return %r#0, %r#1 : tensor<2x4x2x16xf32>, tensor<2x2x4xf32>
}

// CHECK-NEXT: tfm.broadcast: ([i, k]) -> ([i, j, k]) {i=2, j=3, k=4} linear={(0)}
func.func @broadcast(%a0: tensor<2x4xf32>) -> tensor<2x3x4xf32> {
  %r = tfm.broadcast %a0 {dims = array<i64: 1>} : (tensor<2x4xf32>) -> tensor<2x3x4xf32>
  return %r : tensor<2x3x4xf32>
}

// CHECK-NEXT: tfm.cast: ([i, j]) -> ([i, j]) {i=2, j=4} linear={(0)}
func.func @cast(%a0: tensor<2x4xf32>) -> tensor<2x4xbf16> {
  %r = tfm.cast %a0 : (tensor<2x4xf32>) -> tensor<2x4xbf16>
  return %r : tensor<2x4xbf16>
}

// CHECK-NEXT: tfm.clip_coef: ([]) -> ([], []) {}
func.func @clip_coef(%a0: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %r:2 = tfm.clip_coef %a0 {max_norm = 1.000000e+00 : f64} : (tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %r#0, %r#1 : tensor<f32>, tensor<f32>
}

// CHECK-NEXT: tfm.cross_entropy: ([i, j], [i]) -> ([]) {i=2, j=4} reduction={i} hook={i, j}
func.func @cross_entropy(%a0: tensor<2x4xf32>, %a1: tensor<2xi32>) -> tensor<f32> {
  %r = tfm.cross_entropy %a0, %a1 : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  return %r : tensor<f32>
}

// CHECK-NEXT: tfm.cross_entropy_grad: ([], [i, j, k], [i, j]) -> ([i, j, k]) {i=2, j=8, k=72} hook={i, j, k} linear={(0)}
func.func @cross_entropy_grad(%a0: tensor<f32>, %a1: tensor<2x8x72xf32>, %a2: tensor<2x8xi32>) -> tensor<2x8x72xf32> {
  %r = tfm.cross_entropy_grad %a0, %a1, %a2 {vocab_size = 65 : i64} : (tensor<f32>, tensor<2x8x72xf32>, tensor<2x8xi32>) -> tensor<2x8x72xf32>
  return %r : tensor<2x8x72xf32>
}

// CHECK-NEXT: tfm.dropout: ([i, j], [], []) -> ([i, j]) {i=2, j=4} hook={i, j} linear={(0)}
func.func @dropout(%a0: tensor<2x4xf32>, %a1: tensor<i64>, %a2: tensor<i64>) -> tensor<2x4xf32> {
  %r = tfm.dropout %a0, %a1, %a2 {rate = 0.1 : f64, site = 1 : i64} : (tensor<2x4xf32>, tensor<i64>, tensor<i64>) -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// CHECK-NEXT: tfm.dropout_grad: ([i, j, k], [], []) -> ([i, j, k]) {i=4, j=8, k=16} hook={i, j, k} linear={(0)}
func.func @dropout_grad(%a0: tensor<4x8x16xf32>, %a1: tensor<i64>, %a2: tensor<i64>) -> tensor<4x8x16xf32> {
  %r = tfm.dropout_grad %a0, %a1, %a2 {rate = 0.1 : f64, site = 2 : i64} : (tensor<4x8x16xf32>, tensor<i64>, tensor<i64>) -> tensor<4x8x16xf32>
  return %r : tensor<4x8x16xf32>
}

// CHECK-NEXT: tfm.dropout_local: ([_, _, _], [], [], []) -> ([_, _, _]) {}
func.func @dropout_local(%a0: tensor<2x4x128xf32>, %a1: tensor<i64>, %a2: tensor<i64>, %a3: tensor<i64>) -> tensor<2x4x128xf32> {
  %r = tfm.dropout_local %a0, %a1, %a2, %a3 {global_shape = array<i64: 2, 8, 128>, rate = 1.000000e-01 : f64, shard_dims = array<i64: 1>, site = 1 : i64} : (tensor<2x4x128xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<2x4x128xf32>
  return %r : tensor<2x4x128xf32>
}

// CHECK-NEXT: tfm.dropout_local_grad: ([_, _, _], [], [], []) -> ([_, _, _]) {}
func.func @dropout_local_grad(%a0: tensor<2x2x128xf32>, %a1: tensor<i64>, %a2: tensor<i64>, %a3: tensor<i64>) -> tensor<2x2x128xf32> {
  %r = tfm.dropout_local_grad %a0, %a1, %a2, %a3 {global_shape = array<i64: 2, 8, 128>, rate = 1.000000e-01 : f64, shard_dims = array<i64: 1>, site = 2 : i64} : (tensor<2x2x128xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<2x2x128xf32>
  return %r : tensor<2x2x128xf32>
}

// CHECK-NEXT: tfm.embedding: ([i], [j, k]) -> ([i, k]) {i=2, j=4, k=4} reduction={j} hook={j} linear={(1)}
func.func @embedding(%a0: tensor<2xi32>, %a1: tensor<4x4xf32>) -> tensor<2x4xf32> {
  %r = tfm.embedding %a0, %a1 : (tensor<2xi32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// CHECK-NEXT: tfm.embedding_grad: ([i, j], [i, j, l]) -> ([k, l]) {i=4, j=8, k=72, l=16} reduction={i, j} hook={k} linear={(1)}
func.func @embedding_grad(%a0: tensor<4x8xi32>, %a1: tensor<4x8x16xf32>) -> tensor<72x16xf32> {
  %r = tfm.embedding_grad %a0, %a1 {num_embeddings = 72 : i64} : (tensor<4x8xi32>, tensor<4x8x16xf32>) -> tensor<72x16xf32>
  return %r : tensor<72x16xf32>
}

// CHECK-NEXT: tfm.gelu: ([i, j]) -> ([i, j]) {i=2, j=4}
func.func @gelu(%a0: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %r = tfm.gelu %a0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// CHECK-NEXT: tfm.gelu_grad: ([i, j, k], [i, j, k]) -> ([i, j, k]) {i=2, j=8, k=64} linear={(0)}
func.func @gelu_grad(%a0: tensor<2x8x64xf32>, %a1: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  %r = tfm.gelu_grad %a0, %a1 : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return %r : tensor<2x8x64xf32>
}

// CHECK-NEXT: tfm.layer_norm: ([i, j, k], [k]) -> ([i, j, k]) {i=2, j=4, k=8} need_replication={k}
func.func @layer_norm(%a0: tensor<2x4x8xf32>, %a1: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %r = tfm.layer_norm %a0, %a1 {epsilon = 1.000000e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// CHECK-NEXT: tfm.layer_norm_grad: ([i, j, k], [i, j, k], [k]) -> ([i, j, k], [k], [k]) {i=2, j=8, k=16} reduction={i, j} need_replication={k} linear={(0)}
func.func @layer_norm_grad(%a0: tensor<2x8x16xf32>, %a1: tensor<2x8x16xf32>, %a2: tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %r:3 = tfm.layer_norm_grad %a0, %a1, %a2 {epsilon = 1.0e-05 : f64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return %r#0, %r#1, %r#2 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
}

// CHECK-NEXT: tfm.matmul: ([i, j, l], [l, k]) -> ([i, j, k]) {i=2, j=8, k=32, l=16} reduction={l} linear={(0), (1)}
func.func @matmul(%a0: tensor<2x8x16xf32>, %a1: tensor<16x32xf32>) -> tensor<2x8x32xf32> {
  %r = tfm.matmul %a0, %a1 : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// CHECK-NEXT: tfm.matmul: ([i, j, l], [k, l]) -> ([i, j, k]) {i=2, j=8, k=32, l=16} reduction={l} linear={(0), (1)}
func.func @matmul_transpose_rhs(%a0: tensor<2x8x16xf32>, %a1: tensor<32x16xf32>) -> tensor<2x8x32xf32> {
  %r = tfm.matmul %a0, %a1 {transpose_rhs} : (tensor<2x8x16xf32>, tensor<32x16xf32>) -> tensor<2x8x32xf32>
  return %r : tensor<2x8x32xf32>
}

// CHECK-NEXT: tfm.matmul_wgrad: ([i, j, k], [i, j, l]) -> ([k, l]) {i=2, j=8, k=16, l=16} reduction={i, j} linear={(0), (1)}
func.func @matmul_wgrad(%a0: tensor<2x8x16xf32>, %a1: tensor<2x8x16xf32>) -> tensor<16x16xf32> {
  %r = tfm.matmul_wgrad %a0, %a1 : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}

// CHECK-NEXT: tfm.microbatch: ([i*2, j]) -> ([i, j]) {i=2, j=8}
func.func @microbatch(%a0: tensor<4x8xi32>) -> tensor<2x8xi32> {
  %r = tfm.microbatch %a0 {count = 2 : i64, index = 0 : i64} : (tensor<4x8xi32>) -> tensor<2x8xi32>
  return %r : tensor<2x8xi32>
}

// CHECK-NEXT: tfm.moe_aux_loss: ([i, j, k], [i, j, l]) -> ([]) {i=2, j=8, k=4, l=2} reduction={i} need_replication={j, k, l} hook={i}
func.func @moe_aux_loss(%a0: tensor<2x8x4xf32>, %a1: tensor<2x8x2xi32>) -> tensor<f32> {
  %r = tfm.moe_aux_loss %a0, %a1 : (tensor<2x8x4xf32>, tensor<2x8x2xi32>) -> tensor<f32>
  return %r : tensor<f32>
}

// CHECK-NEXT: tfm.moe_aux_loss_grad: ([], [i, j, k], [i, j, l]) -> ([i, j, k]) {i=2, j=8, k=4, l=2} need_replication={j, k, l} hook={i} linear={(0)}
func.func @moe_aux_loss_grad(%a0: tensor<f32>, %a1: tensor<2x8x4xf32>, %a2: tensor<2x8x2xi32>) -> tensor<2x8x4xf32> {
  %r = tfm.moe_aux_loss_grad %a0, %a1, %a2 : (tensor<f32>, tensor<2x8x4xf32>, tensor<2x8x2xi32>) -> tensor<2x8x4xf32>
  return %r : tensor<2x8x4xf32>
}

// CHECK-NEXT: tfm.moe_combine: ([i, j, k, l], [j, m, n], [j, m, n]) -> ([j, m, l]) {i=4, j=2, k=8, l=64, m=8, n=2} need_replication={i, k, m, n} linear={(0), (1)}
func.func @moe_combine(%a0: tensor<4x2x8x64xf32>, %a1: tensor<2x8x2xf32>, %a2: tensor<2x8x2xi32>) -> tensor<2x8x64xf32> {
  %r = tfm.moe_combine %a0, %a1, %a2 : (tensor<4x2x8x64xf32>, tensor<2x8x2xf32>, tensor<2x8x2xi32>) -> tensor<2x8x64xf32>
  return %r : tensor<2x8x64xf32>
}

// CHECK-NEXT: tfm.moe_combine_grad: ([j, m, l], [i, j, k, l], [j, m, n], [j, m, n]) -> ([i, j, k, l], [j, m, n]) {i=4, j=2, k=8, l=64, m=8, n=2} reduction={l} need_replication={i, k, m, n} linear={(0)}
func.func @moe_combine_grad(%a0: tensor<2x8x64xf32>, %a1: tensor<4x2x8x64xf32>, %a2: tensor<2x8x2xf32>, %a3: tensor<2x8x2xi32>) -> (tensor<4x2x8x64xf32>, tensor<2x8x2xf32>) {
  %r:2 = tfm.moe_combine_grad %a0, %a1, %a2, %a3 : (tensor<2x8x64xf32>, tensor<4x2x8x64xf32>, tensor<2x8x2xf32>, tensor<2x8x2xi32>) -> (tensor<4x2x8x64xf32>, tensor<2x8x2xf32>)
  return %r#0, %r#1 : tensor<4x2x8x64xf32>, tensor<2x8x2xf32>
}

// CHECK-NEXT: tfm.moe_dispatch: ([j, m, l], [j, m, n]) -> ([i, j, k, l]) {i=4, j=2, k=8, l=64, m=8, n=2} need_replication={i, k, m, n} linear={(0)}
func.func @moe_dispatch(%a0: tensor<2x8x64xf32>, %a1: tensor<2x8x2xi32>) -> tensor<4x2x8x64xf32> {
  %r = tfm.moe_dispatch %a0, %a1 {capacity = 8 : i64, num_experts = 4 : i64} : (tensor<2x8x64xf32>, tensor<2x8x2xi32>) -> tensor<4x2x8x64xf32>
  return %r : tensor<4x2x8x64xf32>
}

// CHECK-NEXT: tfm.moe_dispatch_grad: ([i, j, k, l], [j, m, n]) -> ([j, m, l]) {i=4, j=2, k=8, l=64, m=8, n=2} need_replication={i, k, m, n} linear={(0)}
func.func @moe_dispatch_grad(%a0: tensor<4x2x8x64xf32>, %a1: tensor<2x8x2xi32>) -> tensor<2x8x64xf32> {
  %r = tfm.moe_dispatch_grad %a0, %a1 {capacity = 8 : i64} : (tensor<4x2x8x64xf32>, tensor<2x8x2xi32>) -> tensor<2x8x64xf32>
  return %r : tensor<2x8x64xf32>
}

// CHECK-NEXT: tfm.moe_router: ([i, j, k]) -> ([i, j, l], [i, j, l]) {i=2, j=8, k=4, l=2} need_replication={k, l}
func.func @moe_router(%a0: tensor<2x8x4xf32>) -> (tensor<2x8x2xf32>, tensor<2x8x2xi32>) {
  %r:2 = tfm.moe_router %a0 {renormalize, top_k = 2 : i64} : (tensor<2x8x4xf32>) -> (tensor<2x8x2xf32>, tensor<2x8x2xi32>)
  return %r#0, %r#1 : tensor<2x8x2xf32>, tensor<2x8x2xi32>
}

// CHECK-NEXT: tfm.moe_router_grad: ([i, j, k], [i, j, l], [i, j, k]) -> ([i, j, l]) {i=2, j=8, k=2, l=4} need_replication={k, l} linear={(0)}
func.func @moe_router_grad(%a0: tensor<2x8x2xf32>, %a1: tensor<2x8x4xf32>, %a2: tensor<2x8x2xi32>) -> tensor<2x8x4xf32> {
  %r = tfm.moe_router_grad %a0, %a1, %a2 {renormalize} : (tensor<2x8x2xf32>, tensor<2x8x4xf32>, tensor<2x8x2xi32>) -> tensor<2x8x4xf32>
  return %r : tensor<2x8x4xf32>
}

// CHECK-NEXT: tfm.mul: ([i], [i]) -> ([i]) {i=8} linear={(0), (1)}
func.func @mul(%a0: tensor<8xf32>, %a1: tensor<8xf32>) -> tensor<8xf32> {
  %r = tfm.mul %a0, %a1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// CHECK-NEXT: tfm.position_embedding: ([_, j]) -> ([i, j]) {i=8, j=128} hook={i} linear={(0)}
func.func @position_embedding(%a0: tensor<64x128xf32>) -> tensor<8x128xf32> {
  %r = tfm.position_embedding %a0 {seq_len = 8 : i64} : (tensor<64x128xf32>) -> tensor<8x128xf32>
  return %r : tensor<8x128xf32>
}

// CHECK-NEXT: tfm.position_embedding_grad: ([i, j, k]) -> ([j, k]) {i=4, j=8, k=16} reduction={i} hook={j} linear={(0)}
func.func @position_embedding_grad(%a0: tensor<4x8x16xf32>) -> tensor<8x16xf32> {
  %r = tfm.position_embedding_grad %a0 {num_positions = 8 : i64} : (tensor<4x8x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// CHECK-NEXT: tfm.reduce_sum: ([i, j, k]) -> ([j, k]) {i=2, j=3, k=4} reduction={i} linear={(0)}
func.func @reduce_sum(%a0: tensor<2x3x4xf32>) -> tensor<3x4xf32> {
  %r = tfm.reduce_sum %a0 {dims = array<i64: 0>} : (tensor<2x3x4xf32>) -> tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}

// CHECK-NEXT: tfm.reshape: ([i, _]) -> ([i*8]) {i=2} linear={(0)}
func.func @reshape(%a0: tensor<2x8xf32>) -> tensor<16xf32> {
  %r = tfm.reshape %a0 : (tensor<2x8xf32>) -> tensor<16xf32>
  return %r : tensor<16xf32>
}

// CHECK-NEXT: tfm.reshape: ([i, j, k*16]) -> ([i, j, k, _]) {i=2, j=8, k=4} linear={(0)}
func.func @reshape_split_heads(%a0: tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32> {
  %r = tfm.reshape %a0 : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  return %r : tensor<2x8x4x16xf32>
}

// CHECK-NEXT: tfm.rms_norm: ([i, j, k], [k]) -> ([i, j, k]) {i=2, j=4, k=8} need_replication={k}
func.func @rms_norm(%a0: tensor<2x4x8xf32>, %a1: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %r = tfm.rms_norm %a0, %a1 {epsilon = 1.000000e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// CHECK-NEXT: tfm.rms_norm_grad: ([i, j, k], [i, j, k], [k]) -> ([i, j, k], [k]) {i=2, j=4, k=64} reduction={i, j} need_replication={k} linear={(0)}
func.func @rms_norm_grad(%a0: tensor<2x4x64xf32>, %a1: tensor<2x4x64xf32>, %a2: tensor<64xf32>) -> (tensor<2x4x64xf32>, tensor<64xf32>) {
  %r:2 = tfm.rms_norm_grad %a0, %a1, %a2 {epsilon = 1.000000e-05 : f64} : (tensor<2x4x64xf32>, tensor<2x4x64xf32>, tensor<64xf32>) -> (tensor<2x4x64xf32>, tensor<64xf32>)
  return %r#0, %r#1 : tensor<2x4x64xf32>, tensor<64xf32>
}

// CHECK-NEXT: tfm.rope: ([i, j, k, l]) -> ([i, j, k, l]) {i=2, j=8, k=2, l=16} need_replication={l} hook={j} linear={(0)}
func.func @rope(%a0: tensor<2x8x2x16xbf16>) -> tensor<2x8x2x16xbf16> {
  %r = tfm.rope %a0 {theta = 1.000000e+04 : f64} : (tensor<2x8x2x16xbf16>) -> tensor<2x8x2x16xbf16>
  return %r : tensor<2x8x2x16xbf16>
}

// CHECK-NEXT: tfm.rope_grad: ([i, j, k, l]) -> ([i, j, k, l]) {i=2, j=8, k=2, l=16} need_replication={l} hook={j} linear={(0)}
func.func @rope_grad(%a0: tensor<2x8x2x16xbf16>) -> tensor<2x8x2x16xbf16> {
  %r = tfm.rope_grad %a0 {theta = 1.000000e+04 : f64} : (tensor<2x8x2x16xbf16>) -> tensor<2x8x2x16xbf16>
  return %r : tensor<2x8x2x16xbf16>
}

// CHECK-NEXT: tfm.rope_local: ([_, _, _, _], []) -> ([_, _, _, _]) {}
func.func @rope_local(%a0: tensor<2x4x1x16xf32>, %a1: tensor<i64>) -> tensor<2x4x1x16xf32> {
  %r = tfm.rope_local %a0, %a1 {seq_len = 8 : i64, theta = 1.000000e+04 : f64} : (tensor<2x4x1x16xf32>, tensor<i64>) -> tensor<2x4x1x16xf32>
  return %r : tensor<2x4x1x16xf32>
}

// CHECK-NEXT: tfm.rope_local_grad: ([_, _, _, _], []) -> ([_, _, _, _]) {}
func.func @rope_local_grad(%a0: tensor<2x4x1x16xf32>, %a1: tensor<i64>) -> tensor<2x4x1x16xf32> {
  %r = tfm.rope_local_grad %a0, %a1 {seq_len = 8 : i64, theta = 1.000000e+04 : f64} : (tensor<2x4x1x16xf32>, tensor<i64>) -> tensor<2x4x1x16xf32>
  return %r : tensor<2x4x1x16xf32>
}

// CHECK-NEXT: tfm.scale: ([i, j]) -> ([i, j]) {i=2, j=4} linear={(0)}
func.func @scale(%a0: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %r = tfm.scale %a0 {factor = 5.000000e-01 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// CHECK-NEXT: tfm.silu: ([i, j, k]) -> ([i, j, k]) {i=2, j=4, k=8}
func.func @silu(%a0: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %r = tfm.silu %a0 : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// CHECK-NEXT: tfm.silu_grad: ([i, j, k], [i, j, k]) -> ([i, j, k]) {i=2, j=4, k=8} linear={(0)}
func.func @silu_grad(%a0: tensor<2x4x8xf32>, %a1: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %r = tfm.silu_grad %a0, %a1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// CHECK-NEXT: tfm.sub: ([i, j, k], [i, j, k]) -> ([i, j, k]) {i=2, j=3, k=5} linear={(0, 1)}
func.func @sub(%a0: tensor<2x3x5xf32>, %a1: tensor<2x3x5xf32>) -> tensor<2x3x5xf32> {
  %r = tfm.sub %a0, %a1 : (tensor<2x3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  return %r : tensor<2x3x5xf32>
}

// CHECK-NEXT: tfm.sum_squares: ([i, j], [k]) -> ([]) {i=16, j=16, k=16} reduction={i, j, k} hook={i, j, k}
func.func @sum_squares(%a0: tensor<16x16xf32>, %a1: tensor<16xf32>) -> tensor<f32> {
  %r = tfm.sum_squares %a0, %a1 : (tensor<16x16xf32>, tensor<16xf32>) -> tensor<f32>
  return %r : tensor<f32>
}

// CHECK-NEXT: tfm.swiglu: ([i, j, k], [i, j, k]) -> ([i, j, k]) {i=2, j=4, k=64} linear={(1)}
func.func @swiglu(%a0: tensor<2x4x64xf32>, %a1: tensor<2x4x64xf32>) -> tensor<2x4x64xf32> {
  %r = tfm.swiglu %a0, %a1 : (tensor<2x4x64xf32>, tensor<2x4x64xf32>) -> tensor<2x4x64xf32>
  return %r : tensor<2x4x64xf32>
}

// CHECK-NEXT: tfm.swiglu_grad: ([i, j, k], [i, j, k], [i, j, k]) -> ([i, j, k], [i, j, k]) {i=2, j=4, k=64} linear={(0)}
func.func @swiglu_grad(%a0: tensor<2x4x64xf32>, %a1: tensor<2x4x64xf32>, %a2: tensor<2x4x64xf32>) -> (tensor<2x4x64xf32>, tensor<2x4x64xf32>) {
  %r:2 = tfm.swiglu_grad %a0, %a1, %a2 : (tensor<2x4x64xf32>, tensor<2x4x64xf32>, tensor<2x4x64xf32>) -> (tensor<2x4x64xf32>, tensor<2x4x64xf32>)
  return %r#0, %r#1 : tensor<2x4x64xf32>, tensor<2x4x64xf32>
}

// CHECK-NEXT: tfm.vocab_ce_grad: ([], [_, _, _], [_, _], [_, _], [_, _, _], []) -> ([_, _, _]) {}
func.func @vocab_ce_grad(%a0: tensor<f32>, %a1: tensor<2x4x36xf32>, %a2: tensor<2x4xi32>, %a3: tensor<2x4xf32>, %a4: tensor<2x4x2xf32>, %a5: tensor<i64>) -> tensor<2x4x36xf32> {
  %r = tfm.vocab_ce_grad %a0, %a1, %a2, %a3, %a4, %a5 {num_tokens = 16 : i64, vocab_size = 65 : i64} : (tensor<f32>, tensor<2x4x36xf32>, tensor<2x4xi32>, tensor<2x4xf32>, tensor<2x4x2xf32>, tensor<i64>) -> tensor<2x4x36xf32>
  return %r : tensor<2x4x36xf32>
}

// CHECK-NEXT: tfm.vocab_ce_loss: ([_, _, _], [_, _]) -> ([]) {}
func.func @vocab_ce_loss(%a0: tensor<2x4x2xf32>, %a1: tensor<2x4xf32>) -> tensor<f32> {
  %r = tfm.vocab_ce_loss %a0, %a1 {num_tokens = 16 : i64} : (tensor<2x4x2xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %r : tensor<f32>
}

// CHECK-NEXT: tfm.vocab_ce_max: ([_, _, _], []) -> ([_, _]) {}
func.func @vocab_ce_max(%a0: tensor<2x4x36xf32>, %a1: tensor<i64>) -> tensor<2x4xf32> {
  %r = tfm.vocab_ce_max %a0, %a1 {vocab_size = 65 : i64} : (tensor<2x4x36xf32>, tensor<i64>) -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// CHECK-NEXT: tfm.vocab_ce_stats: ([_, _, _], [_, _], [_, _], []) -> ([_, _, _]) {}
func.func @vocab_ce_stats(%a0: tensor<2x4x36xf32>, %a1: tensor<2x4xi32>, %a2: tensor<2x4xf32>, %a3: tensor<i64>) -> tensor<2x4x2xf32> {
  %r = tfm.vocab_ce_stats %a0, %a1, %a2, %a3 {vocab_size = 65 : i64} : (tensor<2x4x36xf32>, tensor<2x4xi32>, tensor<2x4xf32>, tensor<i64>) -> tensor<2x4x2xf32>
  return %r : tensor<2x4x2xf32>
}

// CHECK-NEXT: tfm.vocab_embedding: ([_, _], [_, _], []) -> ([_, _, _]) {}
func.func @vocab_embedding(%a0: tensor<2x4xi32>, %a1: tensor<36x64xf32>, %a2: tensor<i64>) -> tensor<2x4x64xf32> {
  %r = tfm.vocab_embedding %a0, %a1, %a2 : (tensor<2x4xi32>, tensor<36x64xf32>, tensor<i64>) -> tensor<2x4x64xf32>
  return %r : tensor<2x4x64xf32>
}

// CHECK-NEXT: tfm.vocab_embedding_grad: ([_, _], [_, _, _], []) -> ([_, _]) {}
func.func @vocab_embedding_grad(%a0: tensor<2x4xi32>, %a1: tensor<2x4x64xf32>, %a2: tensor<i64>) -> tensor<36x64xf32> {
  %r = tfm.vocab_embedding_grad %a0, %a1, %a2 {num_embeddings = 36 : i64} : (tensor<2x4xi32>, tensor<2x4x64xf32>, tensor<i64>) -> tensor<36x64xf32>
  return %r : tensor<36x64xf32>
}
