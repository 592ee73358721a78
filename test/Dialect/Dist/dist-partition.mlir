// RUN: shard-opt --dist-partition -split-input-file %s | FileCheck %s \
// RUN:   --implicit-check-not=dist.all_reduce --implicit-check-not=dist.all_gather \
// RUN:   --implicit-check-not=dist.reduce_scatter --implicit-check-not=dist.all_to_all \
// RUN:   --implicit-check-not=dist.shard_slice
//
// `dist-partition` on hand-annotated IR (as `dist-propagate` leaves it).
// Every collective and local slice in the output must be matched by a
// positive CHECK (--implicit-check-not), so the checks assert exact
// collective counts.

//===----------------------------------------------------------------------===//
// Resharding on a 2x4 mesh (function results are resharded to their declared shardings)
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @rs(
// CHECK-SAME: %[[A:.*]]: tensor<16x128xf32> {dist.sharding = #dist.sharding<@m, [{}, {}], partial = {tp: sum}>}
// CHECK-SAME: %[[B:.*]]: tensor<8x128xf32>
// CHECK-SAME: %[[C:.*]]: tensor<2x128xf32>
// CHECK-SAME: %[[D:.*]]: tensor<4x128xf32>
// CHECK-SAME: %[[E:.*]]: tensor<16x128xf32>,
// CHECK-SAME: %[[F:.*]]: tensor<8x32xf32>
// CHECK-SAME: %[[G:.*]]: tensor<16x128xf32>
// CHECK-SAME: -> (tensor<4x128xf32> {{.*}}, tensor<2x128xf32> {{.*}}, tensor<16x128xf32> {{.*}}, tensor<16x32xf32> {{.*}}, tensor<8x32xf32> {{.*}}, tensor<2x128xf32> {{.*}}, tensor<16x64xf32> {{.*}})
// CHECK-SAME: attributes {dist.partitioned}
// Partial -> sharded on the partial axis: one reduce-scatter.
// CHECK: %[[A1:.*]] = dist.reduce_scatter %[[A]] on @m axes = [tp] scatter_dim = 0 reduction = sum : tensor<16x128xf32> -> tensor<4x128xf32>
// Partial, the target adds the partial axis minor to dp: one reduce-scatter.
// CHECK: %[[B1:.*]] = dist.reduce_scatter %[[B]] on @m axes = [tp] scatter_dim = 0 reduction = sum : tensor<8x128xf32> -> tensor<2x128xf32>
// Multi-axis dim -> replicated: one all-gather, axes major to minor.
// CHECK: %[[C1:.*]] = dist.all_gather %[[C]] on @m axes = [dp, tp] gather_dim = 0 : tensor<2x128xf32> -> tensor<16x128xf32>
// Axis moved between dims: one all-to-all.
// CHECK: %[[D1:.*]] = dist.all_to_all %[[D]] on @m axes = [tp] split_dim = 1 concat_dim = 0 : tensor<4x128xf32> -> tensor<16x32xf32>
// Replicated -> sharded: local slices, no communication.
// CHECK: %[[E1:.*]] = dist.shard_slice %[[E]] on @m axes = [dp] dim = 0 : tensor<16x128xf32> -> tensor<8x128xf32>
// CHECK: %[[E2:.*]] = dist.shard_slice %[[E1]] on @m axes = [tp] dim = 1 : tensor<8x128xf32> -> tensor<8x32xf32>
// [{dp}, {tp}] -> [{tp, dp}, {}]: gather dp, move tp, slice dp back in (axis order swap).
// CHECK: %[[F1:.*]] = dist.all_gather %[[F]] on @m axes = [dp] gather_dim = 0 : tensor<8x32xf32> -> tensor<16x32xf32>
// CHECK: %[[F2:.*]] = dist.all_to_all %[[F1]] on @m axes = [tp] split_dim = 0 concat_dim = 1 : tensor<16x32xf32> -> tensor<4x128xf32>
// CHECK: %[[F3:.*]] = dist.shard_slice %[[F2]] on @m axes = [dp] dim = 0 : tensor<4x128xf32> -> tensor<2x128xf32>
// Partial over dp (sum) and tp (max) -> dim 1 on dp: reduce-scatter, then all-reduce max.
// CHECK: %[[G1:.*]] = dist.reduce_scatter %[[G]] on @m axes = [dp] scatter_dim = 1 reduction = sum : tensor<16x128xf32> -> tensor<16x64xf32>
// CHECK: %[[G2:.*]] = dist.all_reduce %[[G1]] on @m axes = [tp] reduction = max : tensor<16x64xf32> -> tensor<16x64xf32>
// CHECK: return %[[A1]], %[[B1]], %[[C1]], %[[D1]], %[[E2]], %[[F3]], %[[G2]]

dist.mesh @m [dp = 2 : data, tp = 4 : tensor]
func.func @rs(%a: tensor<16x128xf32> {dist.sharding = #dist.sharding<@m, [{}, {}], partial = {tp: sum}>},
              %b: tensor<16x128xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}], partial = {tp: sum}>},
              %c: tensor<16x128xf32> {dist.sharding = #dist.sharding<@m, [{dp, tp}, {}]>},
              %d: tensor<16x128xf32> {dist.sharding = #dist.sharding<@m, [{tp}, {}]>},
              %e: tensor<16x128xf32>,
              %f: tensor<16x128xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {tp}]>},
              %g: tensor<16x128xf32> {dist.sharding = #dist.sharding<@m, [{}, {}], partial = {dp: sum, tp: max}>})
    -> (tensor<16x128xf32> {dist.sharding = #dist.sharding<@m, [{tp}, {}]>},
        tensor<16x128xf32> {dist.sharding = #dist.sharding<@m, [{dp, tp}, {}]>},
        tensor<16x128xf32> {dist.sharding = #dist.sharding<@m, [{}, {}]>},
        tensor<16x128xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>},
        tensor<16x128xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {tp}]>},
        tensor<16x128xf32> {dist.sharding = #dist.sharding<@m, [{tp, dp}, {}]>},
        tensor<16x128xf32> {dist.sharding = #dist.sharding<@m, [{}, {dp}]>}) {
  return %a, %b, %c, %d, %e, %f, %g : tensor<16x128xf32>, tensor<16x128xf32>, tensor<16x128xf32>, tensor<16x128xf32>, tensor<16x128xf32>, tensor<16x128xf32>, tensor<16x128xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Resharding on a 2x2x2 mesh
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @rs3(
// CHECK-SAME: %[[A:[^:]*]]: tensor<4x4x4xf32>
// CHECK-SAME: %[[B:[^:]*]]: tensor<2x8x8xf32>
// CHECK-SAME: %[[C:[^:]*]]: tensor<8x8x8xf32>
// [{x}, {y}, {z}] -> [{z}, {x}, {y}]: gather x and y, move z, slice x and y back in.
// CHECK: %[[A1:.*]] = dist.all_gather %[[A]] on @m3 axes = [x] gather_dim = 0
// CHECK: %[[A2:.*]] = dist.all_gather %[[A1]] on @m3 axes = [y] gather_dim = 1
// CHECK: %[[A3:.*]] = dist.all_to_all %[[A2]] on @m3 axes = [z] split_dim = 0 concat_dim = 2 : tensor<8x8x4xf32> -> tensor<4x8x8xf32>
// CHECK: %[[A4:.*]] = dist.shard_slice %[[A3]] on @m3 axes = [x] dim = 1
// CHECK: %[[A5:.*]] = dist.shard_slice %[[A4]] on @m3 axes = [y] dim = 2 : tensor<4x4x8xf32> -> tensor<4x4x4xf32>
// Partial over z, target adds z minor-most on dim 0: one reduce-scatter.
// CHECK: %[[B1:.*]] = dist.reduce_scatter %[[B]] on @m3 axes = [z] scatter_dim = 0 reduction = sum : tensor<2x8x8xf32> -> tensor<1x8x8xf32>
// Partial over x, y, z -> [{y}, {x}, {}] still partial over z: two reduce-scatters.
// CHECK: %[[C1:.*]] = dist.reduce_scatter %[[C]] on @m3 axes = [y] scatter_dim = 0 reduction = sum
// CHECK: %[[C2:.*]] = dist.reduce_scatter %[[C1]] on @m3 axes = [x] scatter_dim = 1 reduction = sum : tensor<4x8x8xf32> -> tensor<4x4x8xf32>
// CHECK: return %[[A5]], %[[B1]], %[[C2]]

dist.mesh @m3 [x = 2, y = 2, z = 2]
func.func @rs3(%a: tensor<8x8x8xf32> {dist.sharding = #dist.sharding<@m3, [{x}, {y}, {z}]>},
               %b: tensor<8x8x8xf32> {dist.sharding = #dist.sharding<@m3, [{x, y}, {}, {}], partial = {z: sum}>},
               %c: tensor<8x8x8xf32> {dist.sharding = #dist.sharding<@m3, [{}, {}, {}], partial = {x: sum, y: sum, z: sum}>})
    -> (tensor<8x8x8xf32> {dist.sharding = #dist.sharding<@m3, [{z}, {x}, {y}]>},
        tensor<8x8x8xf32> {dist.sharding = #dist.sharding<@m3, [{x, y, z}, {}, {}]>},
        tensor<8x8x8xf32> {dist.sharding = #dist.sharding<@m3, [{y}, {x}, {}], partial = {z: sum}>}) {
  return %a, %b, %c : tensor<8x8x8xf32>, tensor<8x8x8xf32>, tensor<8x8x8xf32>
}


// -----

//===----------------------------------------------------------------------===//
// GPT block, TP (tp = 2), forward: 2 all-reduces (after the row-parallel attn_out and mlp_down)
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @tp_fwd(
// CHECK-SAME: tensor<16x8xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}
// CHECK: tfm.attention {{.*}} -> (tensor<2x8x2x4xf32>, tensor<2x2x8xf32>)
// CHECK: %[[A:.*]] = tfm.matmul {{.*}} : (tensor<2x8x8xf32>, tensor<8x16xf32>) -> tensor<2x8x16xf32>
// CHECK: dist.all_reduce %[[A]] on @m axes = [tp] reduction = sum
// CHECK: %[[D:.*]] = tfm.matmul {{.*}} : (tensor<2x8x32xf32>, tensor<32x16xf32>) -> tensor<2x8x16xf32>
// CHECK: dist.all_reduce %[[D]] on @m axes = [tp] reduction = sum
// CHECK: return

dist.mesh @m [tp = 2 : tensor]
func.func @tp_fwd(%x: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {}]>}, %g1: tensor<16xf32>,
    %wq: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}, %wk: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}, %wv: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>},
    %wo: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{tp}, {}]>}, %g2: tensor<16xf32>,
    %wu: tensor<16x64xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}, %wd: tensor<64x16xf32> {dist.sharding = #dist.sharding<@m, [{tp}, {}]>}) -> (tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {}]>}) {
  %h = tfm.layer_norm %x, %g1 {epsilon = 1.0e-05 : f64, dist.sharding = #dist.sharding<@m, [{}, {}, {}]>} : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %q = tfm.matmul %h, %wq {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %k = tfm.matmul %h, %wk {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %v = tfm.matmul %h, %wv {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %q4 = tfm.reshape %q {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}, {}]>} : (tensor<2x8x16xf32>) -> tensor<2x8x4x4xf32>
  %k4 = tfm.reshape %k {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}, {}]>} : (tensor<2x8x16xf32>) -> tensor<2x8x4x4xf32>
  %v4 = tfm.reshape %v {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}, {}]>} : (tensor<2x8x16xf32>) -> tensor<2x8x4x4xf32>
  %o, %lse = tfm.attention %q4, %k4, %v4 {causal, scale = 0.5 : f64, dist.sharding = [#dist.sharding<@m, [{}, {}, {tp}, {}]>, #dist.sharding<@m, [{}, {tp}, {}]>]} : (tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x4x8xf32>)
  %o3 = tfm.reshape %o {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x4x4xf32>) -> tensor<2x8x16xf32>
  %a = tfm.matmul %o3, %wo {dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {tp: sum}>} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %r1 = tfm.add %x, %a {dist.sharding = #dist.sharding<@m, [{}, {}, {}]>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %h2 = tfm.layer_norm %r1, %g2 {epsilon = 1.0e-05 : f64, dist.sharding = #dist.sharding<@m, [{}, {}, {}]>} : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %u = tfm.matmul %h2, %wu {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x16xf32>, tensor<16x64xf32>) -> tensor<2x8x64xf32>
  %gl = tfm.gelu %u {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %d = tfm.matmul %gl, %wd {dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {tp: sum}>} : (tensor<2x8x64xf32>, tensor<64x16xf32>) -> tensor<2x8x16xf32>
  %r2 = tfm.add %r1, %d {dist.sharding = #dist.sharding<@m, [{}, {}, {}]>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %r2 : tensor<2x8x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// GPT block, TP (tp = 2), backward: 2 all-reduces (of the input gradient before each norm gradient)
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @tp_bwd(
// CHECK: %[[DH2:.*]] = tfm.matmul {{.*}} {transpose_rhs} : (tensor<2x8x32xf32>, tensor<16x32xf32>) -> tensor<2x8x16xf32>
// CHECK: %[[R1:.*]] = dist.all_reduce %[[DH2]] on @m axes = [tp] reduction = sum
// CHECK: tfm.layer_norm_grad %[[R1]]
// The three partial input gradients of q, k, v are summed before one reduction.
// CHECK-COUNT-3: tfm.matmul {{.*}} {transpose_rhs} : (tensor<2x8x8xf32>, tensor<16x8xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT: %[[S:.*]] = tfm.add
// CHECK-NEXT: %[[DH:.*]] = tfm.add %[[S]]
// CHECK: %[[R2:.*]] = dist.all_reduce %[[DH]] on @m axes = [tp] reduction = sum
// CHECK: tfm.layer_norm_grad %[[R2]]
// CHECK: return

dist.mesh @m [tp = 2 : tensor]
func.func @tp_bwd(%dy: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {}]>}, %x: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {}]>}, %g1: tensor<16xf32>,
    %wq: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}, %wk: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}, %wv: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>},
    %wo: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{tp}, {}]>}, %g2: tensor<16xf32>,
    %wu: tensor<16x64xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}, %wd: tensor<64x16xf32> {dist.sharding = #dist.sharding<@m, [{tp}, {}]>},
    %h: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {}]>}, %q4: tensor<2x8x4x4xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}, {}]>}, %k4: tensor<2x8x4x4xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}, {}]>}, %v4: tensor<2x8x4x4xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}, {}]>},
    %o: tensor<2x8x4x4xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}, {}]>}, %lse: tensor<2x4x8xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}, {}]>}, %o3: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>},
    %r1: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {}]>}, %h2: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {}]>}, %u: tensor<2x8x64xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>}, %gl: tensor<2x8x64xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>})
    -> (tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {}]>}, tensor<16xf32> {dist.sharding = #dist.sharding<@m, [{}]>}, tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}, tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>},
        tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}, tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{tp}, {}]>}, tensor<16xf32> {dist.sharding = #dist.sharding<@m, [{}]>},
        tensor<16x64xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}, tensor<64x16xf32> {dist.sharding = #dist.sharding<@m, [{tp}, {}]>}) {
  %dgl = tfm.matmul %dy, %wd {transpose_rhs, dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x16xf32>, tensor<64x16xf32>) -> tensor<2x8x64xf32>
  %dwd = tfm.matmul_wgrad %gl, %dy {dist.sharding = #dist.sharding<@m, [{tp}, {}]>} : (tensor<2x8x64xf32>, tensor<2x8x16xf32>) -> tensor<64x16xf32>
  %du = tfm.gelu_grad %dgl, %u {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %dwu = tfm.matmul_wgrad %h2, %du {dist.sharding = #dist.sharding<@m, [{}, {tp}]>} : (tensor<2x8x16xf32>, tensor<2x8x64xf32>) -> tensor<16x64xf32>
  %dh2 = tfm.matmul %du, %wu {transpose_rhs, dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {tp: sum}>} : (tensor<2x8x64xf32>, tensor<16x64xf32>) -> tensor<2x8x16xf32>
  %dr1a, %dg2, %db2 = tfm.layer_norm_grad %dh2, %r1, %g2 {epsilon = 1.0e-05 : f64, dist.sharding = [#dist.sharding<@m, [{}, {}, {}]>, #dist.sharding<@m, [{}]>, #dist.sharding<@m, [{}]>]} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
  %dr1 = tfm.add %dy, %dr1a {dist.sharding = #dist.sharding<@m, [{}, {}, {}]>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %do3 = tfm.matmul %dr1, %wo {transpose_rhs, dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %dwo = tfm.matmul_wgrad %o3, %dr1 {dist.sharding = #dist.sharding<@m, [{tp}, {}]>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
  %do4 = tfm.reshape %do3 {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}, {}]>} : (tensor<2x8x16xf32>) -> tensor<2x8x4x4xf32>
  %dq4, %dk4, %dv4 = tfm.attention_grad %do4, %q4, %k4, %v4, %o, %lse {causal, scale = 0.5 : f64, dist.sharding = [#dist.sharding<@m, [{}, {}, {tp}, {}]>, #dist.sharding<@m, [{}, {}, {tp}, {}]>, #dist.sharding<@m, [{}, {}, {tp}, {}]>]} : (tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x4x8xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>)
  %dq = tfm.reshape %dq4 {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x4x4xf32>) -> tensor<2x8x16xf32>
  %dk = tfm.reshape %dk4 {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x4x4xf32>) -> tensor<2x8x16xf32>
  %dv = tfm.reshape %dv4 {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x4x4xf32>) -> tensor<2x8x16xf32>
  %dwq = tfm.matmul_wgrad %h, %dq {dist.sharding = #dist.sharding<@m, [{}, {tp}]>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
  %dwk = tfm.matmul_wgrad %h, %dk {dist.sharding = #dist.sharding<@m, [{}, {tp}]>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
  %dwv = tfm.matmul_wgrad %h, %dv {dist.sharding = #dist.sharding<@m, [{}, {tp}]>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
  %dhq = tfm.matmul %dq, %wq {transpose_rhs, dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {tp: sum}>} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %dhk = tfm.matmul %dk, %wk {transpose_rhs, dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {tp: sum}>} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %dhv = tfm.matmul %dv, %wv {transpose_rhs, dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {tp: sum}>} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %dha = tfm.add %dhq, %dhk {dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {tp: sum}>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %dh = tfm.add %dha, %dhv {dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {tp: sum}>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %dx1, %dg1, %db1 = tfm.layer_norm_grad %dh, %x, %g1 {epsilon = 1.0e-05 : f64, dist.sharding = [#dist.sharding<@m, [{}, {}, {}]>, #dist.sharding<@m, [{}]>, #dist.sharding<@m, [{}]>]} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
  %dx = tfm.add %dr1, %dx1 {dist.sharding = #dist.sharding<@m, [{}, {}, {}]>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %dx, %dg1, %dwq, %dwk, %dwv, %dwo, %dg2, %dwu, %dwd : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x64xf32>, tensor<64x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// GPT block, TP + SP (tp = 2), forward: 2 all-gathers + 2 reduce-scatters, no all-reduce
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @sp_fwd(
// CHECK-SAME: %{{.*}}: tensor<2x4x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}, {}]>}
// CHECK: %[[H:.*]] = tfm.layer_norm {{.*}} -> tensor<2x4x16xf32>
// One gather of the norm output feeds q, k and v.
// CHECK: %[[G1:.*]] = dist.all_gather %[[H]] on @m axes = [tp] gather_dim = 1 : tensor<2x4x16xf32> -> tensor<2x8x16xf32>
// CHECK-COUNT-3: tfm.matmul %[[G1]]
// CHECK: %[[A:.*]] = tfm.matmul {{.*}} : (tensor<2x8x8xf32>, tensor<8x16xf32>) -> tensor<2x8x16xf32>
// CHECK: %[[RS1:.*]] = dist.reduce_scatter %[[A]] on @m axes = [tp] scatter_dim = 1 reduction = sum : tensor<2x8x16xf32> -> tensor<2x4x16xf32>
// CHECK: tfm.add %{{.*}}, %[[RS1]]
// CHECK: %[[H2:.*]] = tfm.layer_norm
// CHECK: dist.all_gather %[[H2]] on @m axes = [tp] gather_dim = 1
// CHECK: %[[D:.*]] = tfm.matmul {{.*}} : (tensor<2x8x32xf32>, tensor<32x16xf32>) -> tensor<2x8x16xf32>
// CHECK: dist.reduce_scatter %[[D]] on @m axes = [tp] scatter_dim = 1 reduction = sum
// CHECK: return {{.*}} : tensor<2x4x16xf32>

dist.mesh @m [tp = 2 : tensor]
func.func @sp_fwd(%x: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}, {}]>}, %g1: tensor<16xf32>,
    %wq: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}, %wk: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}, %wv: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>},
    %wo: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{tp}, {}]>}, %g2: tensor<16xf32>,
    %wu: tensor<16x64xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}, %wd: tensor<64x16xf32> {dist.sharding = #dist.sharding<@m, [{tp}, {}]>}) -> (tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}, {}]>}) {
  %h = tfm.layer_norm %x, %g1 {epsilon = 1.0e-05 : f64, dist.sharding = #dist.sharding<@m, [{}, {tp}, {}]>} : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %q = tfm.matmul %h, %wq {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %k = tfm.matmul %h, %wk {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %v = tfm.matmul %h, %wv {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %q4 = tfm.reshape %q {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}, {}]>} : (tensor<2x8x16xf32>) -> tensor<2x8x4x4xf32>
  %k4 = tfm.reshape %k {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}, {}]>} : (tensor<2x8x16xf32>) -> tensor<2x8x4x4xf32>
  %v4 = tfm.reshape %v {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}, {}]>} : (tensor<2x8x16xf32>) -> tensor<2x8x4x4xf32>
  %o, %lse = tfm.attention %q4, %k4, %v4 {causal, scale = 0.5 : f64, dist.sharding = [#dist.sharding<@m, [{}, {}, {tp}, {}]>, #dist.sharding<@m, [{}, {tp}, {}]>]} : (tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x4x8xf32>)
  %o3 = tfm.reshape %o {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x4x4xf32>) -> tensor<2x8x16xf32>
  %a = tfm.matmul %o3, %wo {dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {tp: sum}>} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %r1 = tfm.add %x, %a {dist.sharding = #dist.sharding<@m, [{}, {tp}, {}]>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %h2 = tfm.layer_norm %r1, %g2 {epsilon = 1.0e-05 : f64, dist.sharding = #dist.sharding<@m, [{}, {tp}, {}]>} : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %u = tfm.matmul %h2, %wu {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x16xf32>, tensor<16x64xf32>) -> tensor<2x8x64xf32>
  %gl = tfm.gelu %u {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %d = tfm.matmul %gl, %wd {dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {tp: sum}>} : (tensor<2x8x64xf32>, tensor<64x16xf32>) -> tensor<2x8x16xf32>
  %r2 = tfm.add %r1, %d {dist.sharding = #dist.sharding<@m, [{}, {tp}, {}]>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %r2 : tensor<2x8x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// GPT block, TP + SP (tp = 2), backward: 4 all-gathers + 2 reduce-scatters, no all-reduce
// (Megatron's policy, DESIGN.md §12: the saved block inputs are sequence-sharded
// and re-gathered for the weight gradients)
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @sp_bwd(
// CHECK-SAME: %[[DY:[^:]*]]: tensor<2x4x16xf32>
// The incoming gradient, gathered once for the dgrad and wgrad of mlp_down.
// CHECK: dist.all_gather %[[DY]] on @m axes = [tp] gather_dim = 1
// The saved (sequence-sharded) mlp input, re-gathered for the mlp_up wgrad.
// CHECK: dist.all_gather %{{.*}} on @m axes = [tp] gather_dim = 1
// CHECK: dist.reduce_scatter %{{.*}} on @m axes = [tp] scatter_dim = 1 reduction = sum
// CHECK: tfm.layer_norm_grad
// CHECK: dist.all_gather %{{.*}} on @m axes = [tp] gather_dim = 1
// The saved attention input, re-gathered once for the q, k, v wgrads.
// CHECK: %[[GH:.*]] = dist.all_gather %{{.*}} on @m axes = [tp] gather_dim = 1
// CHECK-COUNT-3: tfm.matmul_wgrad %[[GH]]
// CHECK: dist.reduce_scatter %{{.*}} on @m axes = [tp] scatter_dim = 1 reduction = sum
// CHECK: tfm.layer_norm_grad
// CHECK: return

dist.mesh @m [tp = 2 : tensor]
func.func @sp_bwd(%dy: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}, {}]>}, %x: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}, {}]>}, %g1: tensor<16xf32>,
    %wq: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}, %wk: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}, %wv: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>},
    %wo: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{tp}, {}]>}, %g2: tensor<16xf32>,
    %wu: tensor<16x64xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}, %wd: tensor<64x16xf32> {dist.sharding = #dist.sharding<@m, [{tp}, {}]>},
    %h: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}, {}]>}, %q4: tensor<2x8x4x4xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}, {}]>}, %k4: tensor<2x8x4x4xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}, {}]>}, %v4: tensor<2x8x4x4xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}, {}]>},
    %o: tensor<2x8x4x4xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}, {}]>}, %lse: tensor<2x4x8xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}, {}]>}, %o3: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>},
    %r1: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}, {}]>}, %h2: tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}, {}]>}, %u: tensor<2x8x64xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>}, %gl: tensor<2x8x64xf32> {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>})
    -> (tensor<2x8x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}, {}]>}, tensor<16xf32> {dist.sharding = #dist.sharding<@m, [{}], partial = {tp: sum}>}, tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}, tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>},
        tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}, tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{tp}, {}]>}, tensor<16xf32> {dist.sharding = #dist.sharding<@m, [{}], partial = {tp: sum}>},
        tensor<16x64xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>}, tensor<64x16xf32> {dist.sharding = #dist.sharding<@m, [{tp}, {}]>}) {
  %dgl = tfm.matmul %dy, %wd {transpose_rhs, dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x16xf32>, tensor<64x16xf32>) -> tensor<2x8x64xf32>
  %dwd = tfm.matmul_wgrad %gl, %dy {dist.sharding = #dist.sharding<@m, [{tp}, {}]>} : (tensor<2x8x64xf32>, tensor<2x8x16xf32>) -> tensor<64x16xf32>
  %du = tfm.gelu_grad %dgl, %u {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %dwu = tfm.matmul_wgrad %h2, %du {dist.sharding = #dist.sharding<@m, [{}, {tp}]>} : (tensor<2x8x16xf32>, tensor<2x8x64xf32>) -> tensor<16x64xf32>
  %dh2 = tfm.matmul %du, %wu {transpose_rhs, dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {tp: sum}>} : (tensor<2x8x64xf32>, tensor<16x64xf32>) -> tensor<2x8x16xf32>
  %dr1a, %dg2, %db2 = tfm.layer_norm_grad %dh2, %r1, %g2 {epsilon = 1.0e-05 : f64, dist.sharding = [#dist.sharding<@m, [{}, {tp}, {}]>, #dist.sharding<@m, [{}], partial = {tp: sum}>, #dist.sharding<@m, [{}], partial = {tp: sum}>]} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
  %dr1 = tfm.add %dy, %dr1a {dist.sharding = #dist.sharding<@m, [{}, {tp}, {}]>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %do3 = tfm.matmul %dr1, %wo {transpose_rhs, dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %dwo = tfm.matmul_wgrad %o3, %dr1 {dist.sharding = #dist.sharding<@m, [{tp}, {}]>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
  %do4 = tfm.reshape %do3 {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}, {}]>} : (tensor<2x8x16xf32>) -> tensor<2x8x4x4xf32>
  %dq4, %dk4, %dv4 = tfm.attention_grad %do4, %q4, %k4, %v4, %o, %lse {causal, scale = 0.5 : f64, dist.sharding = [#dist.sharding<@m, [{}, {}, {tp}, {}]>, #dist.sharding<@m, [{}, {}, {tp}, {}]>, #dist.sharding<@m, [{}, {}, {tp}, {}]>]} : (tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x4x8xf32>) -> (tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>)
  %dq = tfm.reshape %dq4 {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x4x4xf32>) -> tensor<2x8x16xf32>
  %dk = tfm.reshape %dk4 {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x4x4xf32>) -> tensor<2x8x16xf32>
  %dv = tfm.reshape %dv4 {dist.sharding = #dist.sharding<@m, [{}, {}, {tp}]>} : (tensor<2x8x4x4xf32>) -> tensor<2x8x16xf32>
  %dwq = tfm.matmul_wgrad %h, %dq {dist.sharding = #dist.sharding<@m, [{}, {tp}]>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
  %dwk = tfm.matmul_wgrad %h, %dk {dist.sharding = #dist.sharding<@m, [{}, {tp}]>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
  %dwv = tfm.matmul_wgrad %h, %dv {dist.sharding = #dist.sharding<@m, [{}, {tp}]>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
  %dhq = tfm.matmul %dq, %wq {transpose_rhs, dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {tp: sum}>} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %dhk = tfm.matmul %dk, %wk {transpose_rhs, dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {tp: sum}>} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %dhv = tfm.matmul %dv, %wv {transpose_rhs, dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {tp: sum}>} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %dha = tfm.add %dhq, %dhk {dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {tp: sum}>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %dh = tfm.add %dha, %dhv {dist.sharding = #dist.sharding<@m, [{}, {}, {}], partial = {tp: sum}>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %dx1, %dg1, %db1 = tfm.layer_norm_grad %dh, %x, %g1 {epsilon = 1.0e-05 : f64, dist.sharding = [#dist.sharding<@m, [{}, {tp}, {}]>, #dist.sharding<@m, [{}], partial = {tp: sum}>, #dist.sharding<@m, [{}], partial = {tp: sum}>]} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
  %dx = tfm.add %dr1, %dx1 {dist.sharding = #dist.sharding<@m, [{}, {tp}, {}]>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %dx, %dg1, %dwq, %dwk, %dwv, %dwo, %dg2, %dwu, %dwd : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x64xf32>, tensor<64x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// DDP (dp = 2): one all-reduce per gradient, none for the norm of replicated gradients
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @ddp(
// CHECK: %[[DW:.*]] = tfm.matmul_wgrad
// CHECK: %[[DB:.*]] = tfm.reduce_sum
// CHECK: %[[RW:.*]] = dist.all_reduce %[[DW]] on @m axes = [dp] reduction = sum : tensor<16x16xf32>
// CHECK: %[[RB:.*]] = dist.all_reduce %[[DB]] on @m axes = [dp] reduction = sum : tensor<16xf32>
// CHECK: tfm.sum_squares %[[RW]], %[[RB]]
// CHECK: tfm.adamw %{{.*}}, %[[RW]]
// CHECK: tfm.adamw %{{.*}}, %[[RB]]
// CHECK: return

dist.mesh @m [dp = 2 : data]
func.func @ddp(%x: tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>},
    %dy: tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>},
    %w: tensor<16x16xf32>, %b: tensor<16xf32>, %mw: tensor<16x16xf32>, %vw: tensor<16x16xf32>,
    %mb: tensor<16xf32>, %vb: tensor<16xf32>, %lr: tensor<f32>, %step: tensor<i64>)
    -> (tensor<f32>, tensor<16x16xf32>, tensor<16xf32>) {
  %dw = tfm.matmul_wgrad %x, %dy {dist.sharding = #dist.sharding<@m, [{}, {}], partial = {dp: sum}>} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<16x16xf32>
  %db = tfm.reduce_sum %dy {dims = array<i64: 0, 1>, dist.sharding = #dist.sharding<@m, [{}], partial = {dp: sum}>} : (tensor<4x8x16xf32>) -> tensor<16xf32>
  %ss = tfm.sum_squares %dw, %db : (tensor<16x16xf32>, tensor<16xf32>) -> tensor<f32>
  %coef, %norm = tfm.clip_coef %ss {max_norm = 1.0 : f64} : (tensor<f32>) -> (tensor<f32>, tensor<f32>)
  %w1, %mw1, %vw1 = tfm.adamw %w, %dw, %mw, %vw, %lr, %step, %coef {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64} : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>)
  %b1, %mb1, %vb1 = tfm.adamw %b, %db, %mb, %vb, %lr, %step, %coef {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return %norm, %w1, %b1 : tensor<f32>, tensor<16x16xf32>, tensor<16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// ZeRO-1 (dp = 2): reduce-scatter of each gradient, update on the shard, all-gather of the
// parameters after it; the norm sums the shards with one all-reduce of a scalar
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @zero1(
// CHECK: %[[DW:.*]] = tfm.matmul_wgrad
// CHECK: %[[DB:.*]] = tfm.reduce_sum
// CHECK: %[[SW:.*]] = dist.reduce_scatter %[[DW]] on @m axes = [dp] scatter_dim = 0 reduction = sum : tensor<16x16xf32> -> tensor<8x16xf32>
// CHECK: %[[SB:.*]] = dist.reduce_scatter %[[DB]] on @m axes = [dp] scatter_dim = 0 reduction = sum : tensor<16xf32> -> tensor<8xf32>
// CHECK: %[[SS:.*]] = tfm.sum_squares %[[SW]], %[[SB]]
// CHECK: dist.all_reduce %[[SS]] on @m axes = [dp] reduction = sum : tensor<f32>
// CHECK: %[[PW:.*]] = dist.shard_slice %{{.*}} on @m axes = [dp] dim = 0 : tensor<16x16xf32> -> tensor<8x16xf32>
// CHECK: %[[W1:.*]], %{{.*}}, %{{.*}} = tfm.adamw %[[PW]], %[[SW]]
// CHECK: %[[PB:.*]] = dist.shard_slice %{{.*}} on @m axes = [dp] dim = 0 : tensor<16xf32> -> tensor<8xf32>
// CHECK: %[[B1:.*]], %{{.*}}, %{{.*}} = tfm.adamw %[[PB]], %[[SB]]
// CHECK: dist.all_gather %[[W1]] on @m axes = [dp] gather_dim = 0 : tensor<8x16xf32> -> tensor<16x16xf32>
// CHECK: dist.all_gather %[[B1]] on @m axes = [dp] gather_dim = 0 : tensor<8xf32> -> tensor<16xf32>
// CHECK: return

dist.mesh @m [dp = 2 : data]
func.func @zero1(%x: tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>},
    %dy: tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>},
    %w: tensor<16x16xf32>, %b: tensor<16xf32>, %mw: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}]>}, %vw: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}]>},
    %mb: tensor<16xf32> {dist.sharding = #dist.sharding<@m, [{dp}]>}, %vb: tensor<16xf32> {dist.sharding = #dist.sharding<@m, [{dp}]>}, %lr: tensor<f32>, %step: tensor<i64>)
    -> (tensor<f32>, tensor<16x16xf32>, tensor<16xf32>) {
  %dw = tfm.matmul_wgrad %x, %dy {dist.sharding = #dist.sharding<@m, [{}, {}], partial = {dp: sum}>} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<16x16xf32>
  %db = tfm.reduce_sum %dy {dims = array<i64: 0, 1>, dist.sharding = #dist.sharding<@m, [{}], partial = {dp: sum}>} : (tensor<4x8x16xf32>) -> tensor<16xf32>
  %ss = tfm.sum_squares %dw, %db : (tensor<16x16xf32>, tensor<16xf32>) -> tensor<f32>
  %coef, %norm = tfm.clip_coef %ss {max_norm = 1.0 : f64} : (tensor<f32>) -> (tensor<f32>, tensor<f32>)
  %w1, %mw1, %vw1 = tfm.adamw %w, %dw, %mw, %vw, %lr, %step, %coef {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.1 : f64, dist.sharding = [#dist.sharding<@m, [{dp}, {}]>, #dist.sharding<@m, [{dp}, {}]>, #dist.sharding<@m, [{dp}, {}]>]} : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>)
  %b1, %mb1, %vb1 = tfm.adamw %b, %db, %mb, %vb, %lr, %step, %coef {beta1 = 0.9 : f64, beta2 = 0.95 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.0 : f64, dist.sharding = [#dist.sharding<@m, [{dp}]>, #dist.sharding<@m, [{dp}]>, #dist.sharding<@m, [{dp}]>]} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return %norm, %w1, %b1 : tensor<f32>, tensor<16x16xf32>, tensor<16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// ZeRO-3 (dp = 2): the parameter is all-gathered before its use in the forward and again in
// the backward function; its gradient is reduce-scattered
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func private @blk_fwd(
// CHECK-SAME: %{{.*}}: tensor<2x8x16xf32>, %[[W:.*]]: tensor<8x16xf32>) -> tensor<2x8x16xf32>
// CHECK: %[[G:.*]] = dist.all_gather %[[W]] on @m axes = [dp] gather_dim = 0 : tensor<8x16xf32> -> tensor<16x16xf32>
// CHECK: tfm.matmul %{{.*}}, %[[G]]
// CHECK-LABEL: func.func private @blk_bwd(
// CHECK: %[[G:.*]] = dist.all_gather %{{.*}} on @m axes = [dp] gather_dim = 0 : tensor<8x16xf32> -> tensor<16x16xf32>
// CHECK: tfm.matmul %{{.*}}, %[[G]] {transpose_rhs}
// CHECK: %[[DW:.*]] = tfm.matmul_wgrad
// CHECK: %[[S:.*]] = dist.reduce_scatter %[[DW]] on @m axes = [dp] scatter_dim = 0 reduction = sum : tensor<16x16xf32> -> tensor<8x16xf32>
// CHECK: return %{{.*}}, %[[S]]
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}]>}
// CHECK: call @blk_fwd(%{{.*}}, %{{.*}}) : (tensor<2x8x16xf32>, tensor<8x16xf32>) -> tensor<2x8x16xf32>
// CHECK: call @blk_bwd
// CHECK: return

dist.mesh @m [dp = 2 : data]
func.func private @blk_fwd(%x: tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>}, %w: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}]>}) -> (tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>}) {
  %y = tfm.matmul %x, %w {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>} : (tensor<4x8x16xf32>, tensor<16x16xf32>) -> tensor<4x8x16xf32>
  return %y : tensor<4x8x16xf32>
}
func.func private @blk_bwd(%dy: tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>}, %x: tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>}, %w: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}]>}) -> (tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>}, tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}]>}) {
  %dx = tfm.matmul %dy, %w {transpose_rhs, dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>} : (tensor<4x8x16xf32>, tensor<16x16xf32>) -> tensor<4x8x16xf32>
  %dw = tfm.matmul_wgrad %x, %dy {dist.sharding = #dist.sharding<@m, [{}, {}], partial = {dp: sum}>} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<16x16xf32>
  return %dx, %dw : tensor<4x8x16xf32>, tensor<16x16xf32>
}
func.func @step(%x: tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>}, %w: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}]>}) -> (tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>}, tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {}]>}) {
  %y = func.call @blk_fwd(%x, %w) {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>} : (tensor<4x8x16xf32>, tensor<16x16xf32>) -> tensor<4x8x16xf32>
  %dx, %dw = func.call @blk_bwd(%y, %x, %w) {dist.sharding = [#dist.sharding<@m, [{dp}, {}, {}]>, #dist.sharding<@m, [{dp}, {}]>]} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<16x16xf32>) -> (tensor<4x8x16xf32>, tensor<16x16xf32>)
  return %dx, %dw : tensor<4x8x16xf32>, tensor<16x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Vocab-parallel embedding and cross-entropy (dp = 2, tp = 2): no all-gather of the
// logits; max and sum all-reduces of per-row statistics (shared by the loss and its
// gradient); the loss is a partial sum over dp divided by the global token count
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @vocab(
// CHECK-SAME: %[[IDS:[^:]*]]: tensor<2x8xi32>
// CHECK-SAME: %[[LABELS:[^:]*]]: tensor<2x8xi32>
// CHECK-SAME: %[[WTE:[^:]*]]: tensor<36x16xf32>
// CHECK: %[[I0:.*]] = dist.axis_index on @m axes = [tp] : tensor<i64>
// CHECK: %[[E:.*]] = tfm.vocab_embedding %[[IDS]], %[[WTE]], %[[I0]] : (tensor<2x8xi32>, tensor<36x16xf32>, tensor<i64>) -> tensor<2x8x16xf32>
// CHECK: dist.all_reduce %[[E]] on @m axes = [tp] reduction = sum
// CHECK: %[[LOGITS:.*]] = tfm.matmul {{.*}} {transpose_rhs} : (tensor<2x8x16xf32>, tensor<36x16xf32>) -> tensor<2x8x36xf32>
// CHECK: %[[I1:.*]] = dist.axis_index on @m axes = [tp]
// CHECK: %[[LMAX:.*]] = tfm.vocab_ce_max %[[LOGITS]], %[[I1]] {vocab_size = 65 : i64}
// CHECK: %[[MAX:.*]] = dist.all_reduce %[[LMAX]] on @m axes = [tp] reduction = max : tensor<2x8xf32>
// CHECK: %[[LST:.*]] = tfm.vocab_ce_stats %[[LOGITS]], %[[LABELS]], %[[MAX]], %[[I1]] {vocab_size = 65 : i64}
// CHECK: %[[ST:.*]] = dist.all_reduce %[[LST]] on @m axes = [tp] reduction = sum : tensor<2x8x2xf32>
// CHECK: %[[LOSS:.*]] = tfm.vocab_ce_loss %[[ST]], %[[MAX]] {num_tokens = 32 : i64}
// CHECK: %[[DL:.*]] = tfm.vocab_ce_grad %{{.*}}, %[[LOGITS]], %[[LABELS]], %[[MAX]], %[[ST]], %[[I1]] {num_tokens = 32 : i64, vocab_size = 65 : i64}
// CHECK: %[[DH:.*]] = tfm.matmul %[[DL]], %[[WTE]] : (tensor<2x8x36xf32>, tensor<36x16xf32>) -> tensor<2x8x16xf32>
// CHECK: %[[DHR:.*]] = dist.all_reduce %[[DH]] on @m axes = [tp] reduction = sum
// CHECK: %[[I2:.*]] = dist.axis_index on @m axes = [tp]
// CHECK: tfm.vocab_embedding_grad %[[IDS]], %[[DHR]], %[[I2]] {num_embeddings = 36 : i64}
// The loss and the (tied) table gradient are reduced over dp once, at the return.
// CHECK: dist.all_reduce %[[LOSS]] on @m axes = [dp] reduction = sum : tensor<f32>
// CHECK: dist.all_reduce %{{.*}} on @m axes = [dp] reduction = sum : tensor<36x16xf32>
// CHECK: return

dist.mesh @m [dp = 2 : data, tp = 2 : tensor]
func.func @vocab(%ids: tensor<4x8xi32> {dist.sharding = #dist.sharding<@m, [{dp}, {}]>},
    %labels: tensor<4x8xi32> {dist.sharding = #dist.sharding<@m, [{dp}, {}]>},
    %wte: tensor<72x16xf32> {dist.sharding = #dist.sharding<@m, [{tp}, {}]>})
    -> (tensor<f32>, tensor<72x16xf32> {dist.sharding = #dist.sharding<@m, [{tp}, {}]>}) {
  %h = tfm.embedding %ids, %wte {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}], partial = {tp: sum}>} : (tensor<4x8xi32>, tensor<72x16xf32>) -> tensor<4x8x16xf32>
  %hr = tfm.scale %h {factor = 1.0 : f64, dist.sharding = #dist.sharding<@m, [{dp}, {}, {}]>} : (tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %logits = tfm.matmul %hr, %wte {transpose_rhs, dist.sharding = #dist.sharding<@m, [{dp}, {}, {tp}]>} : (tensor<4x8x16xf32>, tensor<72x16xf32>) -> tensor<4x8x72xf32>
  %loss = tfm.cross_entropy %logits, %labels {vocab_size = 65 : i64, dist.sharding = #dist.sharding<@m, [], partial = {dp: sum}>} : (tensor<4x8x72xf32>, tensor<4x8xi32>) -> tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %dlogits = tfm.cross_entropy_grad %one, %logits, %labels {vocab_size = 65 : i64, dist.sharding = #dist.sharding<@m, [{dp}, {}, {tp}]>} : (tensor<f32>, tensor<4x8x72xf32>, tensor<4x8xi32>) -> tensor<4x8x72xf32>
  %dw1 = tfm.matmul_wgrad %dlogits, %hr {dist.sharding = #dist.sharding<@m, [{tp}, {}], partial = {dp: sum}>} : (tensor<4x8x72xf32>, tensor<4x8x16xf32>) -> tensor<72x16xf32>
  %dh = tfm.matmul %dlogits, %wte {dist.sharding = #dist.sharding<@m, [{dp}, {}, {}], partial = {tp: sum}>} : (tensor<4x8x72xf32>, tensor<72x16xf32>) -> tensor<4x8x16xf32>
  %dw2 = tfm.embedding_grad %ids, %dh {num_embeddings = 72 : i64, dist.sharding = #dist.sharding<@m, [{tp}, {}], partial = {dp: sum}>} : (tensor<4x8xi32>, tensor<4x8x16xf32>) -> tensor<72x16xf32>
  %dw = tfm.add %dw1, %dw2 {dist.sharding = #dist.sharding<@m, [{tp}, {}], partial = {dp: sum}>} : (tensor<72x16xf32>, tensor<72x16xf32>) -> tensor<72x16xf32>
  return %loss, %dw : tensor<f32>, tensor<72x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Global gradient norm (dp = 2, tp = 2): each group of gradients is summed over exactly the
// axes it is sharded on (replicated gradients are not counted twice); a partial
// gradient is reduced first
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @norm(
// CHECK-SAME: %[[G1:[^:]*]]: tensor<16x8xf32>
// CHECK-SAME: %[[G2:[^:]*]]: tensor<16xf32>,
// CHECK-SAME: %[[G3:[^:]*]]: tensor<8x8xf32>
// CHECK-SAME: %[[G4:[^:]*]]: tensor<8x16xf32>
// CHECK-SAME: %[[G5:[^:]*]]: tensor<16xf32>
// CHECK: %[[R5:.*]] = dist.all_reduce %[[G5]] on @m axes = [dp] reduction = sum : tensor<16xf32>
// CHECK: %[[TP:.*]] = tfm.sum_squares %[[G1]], %[[G4]]
// CHECK: %[[TPR:.*]] = dist.all_reduce %[[TP]] on @m axes = [tp] reduction = sum : tensor<f32>
// CHECK: %[[REP:.*]] = tfm.sum_squares %[[G2]], %[[R5]]
// CHECK: %[[A:.*]] = tfm.add %[[TPR]], %[[REP]]
// CHECK: %[[DT:.*]] = tfm.sum_squares %[[G3]]
// CHECK: %[[DTR:.*]] = dist.all_reduce %[[DT]] on @m axes = [dp, tp] reduction = sum : tensor<f32>
// CHECK: %[[T:.*]] = tfm.add %[[A]], %[[DTR]]
// CHECK: return %[[T]]

dist.mesh @m [dp = 2 : data, tp = 2 : tensor]
func.func @norm(%g1: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{}, {tp}]>},
    %g2: tensor<16xf32>,
    %g3: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {tp}]>},
    %g4: tensor<16x16xf32> {dist.sharding = #dist.sharding<@m, [{tp}, {}]>},
    %g5: tensor<16xf32> {dist.sharding = #dist.sharding<@m, [{}], partial = {dp: sum}>}) -> tensor<f32> {
  %ss = tfm.sum_squares %g1, %g2, %g3, %g4, %g5 : (tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<f32>
  return %ss : tensor<f32>
}


// -----

//===----------------------------------------------------------------------===//
// position_embedding_grad with the sequence sharded and S == P (SP at the
// full context): the table's rows are split like the sequence, the local op
// sums the local rows (num_positions = local rows), no communication
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @pos_grad_full(
// CHECK-SAME: %[[DY:[^:]*]]: tensor<2x4x16xf32>
// CHECK-SAME: -> (tensor<4x16xf32>
// CHECK: %[[DT:.*]] = tfm.position_embedding_grad %[[DY]] {num_positions = 4 : i64} : (tensor<2x4x16xf32>) -> tensor<4x16xf32>
// CHECK: return %[[DT]]

dist.mesh @m [dp = 2 : data, tp = 2 : tensor]
func.func @pos_grad_full(%dy: tensor<4x8x16xf32> {dist.sharding = #dist.sharding<@m, [{dp}, {tp}, {}]>})
    -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@m, [{tp}, {}], partial = {dp: sum}>}) {
  %dt = tfm.position_embedding_grad %dy {num_positions = 8 : i64, dist.sharding = #dist.sharding<@m, [{tp}, {}], partial = {dp: sum}>} : (tensor<4x8x16xf32>) -> tensor<8x16xf32>
  return %dt : tensor<8x16xf32>
}
