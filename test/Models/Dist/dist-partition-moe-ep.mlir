// Expert parallelism (plan ep, folded over the dp ranks) on the 4-layer
// Mixtral CPU model (4 experts, top-2, dropless: capacity = seq = 8) at
// batch 4: dp=4,ep=2 gives the mesh [dp = 2, ep = 2], the batch on {dp, ep}
// (one sequence per rank) and the expert weights' E dim on ep (2 experts per
// rank). Each MoE layer has four all-to-alls over ep, two in the forward
// (dispatch: [4, 1, 8, 64] token buffers -> [2, 2, 8, 64] expert buffers;
// combine: back) and two in the backward; the expert GEMMs run on the
// received [2, 16, 64] rows. Dense gradients are reduced over {dp, ep}, the
// expert gradients over the expert-data-parallel axis dp only, and the
// squared gradient norm of the experts is summed over ep.
// RUN: %python -m autoshard.models %autoshard_src/configs/models/mixtral-tiny-cpu.json --batch 4 --seq 8 -q -o %t.model.mlir
// RUN: shard-opt %t.model.mlir --tfm-autodiff -o %t.ts.mlir
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=4,ep=2,zero=1" | FileCheck %s --check-prefix=SEED
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=4,ep=2" --dist-propagate --dist-partition -o %t.part.mlir
// RUN: FileCheck %s < %t.part.mlir
// RUN: sed -n '/func.func @train_step/,/^  }/p' %t.part.mlir | grep -o 'dist.all_reduce %[^ ]* on @mesh axes = \[[a-z, ]*\] reduction = sum : tensor<[0-9x]*f32>' | sed 's/%[^ ]* //' | sort | uniq -c | FileCheck %s --check-prefix=GRADS
// RUN: shard-opt %t.part.mlir --dist-bucket-collectives | sed -n '/func.func @train_step/,/^  }/p' | grep -o 'dist.all_reduce %[^ ]* on @mesh axes = \[[a-z, ]*\]' | sed 's/%[^ ]* //' | sort | uniq -c | FileCheck %s --check-prefix=BUCKETS
//
// ZeRO-3 with expert parallelism (FSDP2 + EP): each block gathers its dense
// weights over {dp, ep} and its experts' over dp alone (the expert-data-
// parallel group), one bucket each; the experts are computed with E/ep = 2
// of the 4 per rank, and ep never leaks into the activations (ep is a
// storage axis of the dense weights only).
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=4,ep=2,zero=3" --dist-propagate --dist-partition --dist-bucket-collectives --dist-verify-comm | FileCheck %s --check-prefix=ZERO3
//
// EP folded over the cp ranks (cp=2,ep=2): the MoE layer sees the sequence
// gathered over cp (per-sequence capacity and drop order), each cp rank
// takes its E/ep experts' slots with a local slice, runs only those
// experts, and the expert outputs are gathered back over cp; the expert
// GEMMs are never repeated on the two cp ranks.
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=cp=2,ep=2" --dist-propagate --dist-partition --dist-verify-comm | FileCheck %s --check-prefix=EPCP
// With ep spanning dp and cp ranks (dp=2,cp=2,ep=4) the way back is one
// gather over cp and one all-to-all over ep.
// RUN: shard-opt %t.ts.mlir --dist-apply-plan="plan=dp=2,cp=2,ep=4,zero=1" --dist-propagate --dist-partition --dist-bucket-collectives --dist-verify-comm | FileCheck %s --check-prefix=EPDPCP

// EP folded over the tp ranks (tp=2,ep=2, etp=1; the vocabulary padded
// for tp): the tp ranks route the
// same tokens; each takes its 2 experts' slots with a local slice over tp
// (no all-to-all), runs only those, and the expert outputs are gathered
// back over tp before the combine.
// RUN: %python -m autoshard.models %autoshard_src/configs/models/mixtral-tiny-cpu.json --batch 4 --seq 8 --vocab-multiple 64 -q | shard-opt --tfm-autodiff -o %t.tp.ts.mlir
// RUN: shard-opt %t.tp.ts.mlir --dist-apply-plan="plan=tp=2,ep=2" --dist-propagate --dist-partition --dist-verify-comm | FileCheck %s --check-prefix=EPTP
// With ep over tp x dp (dp=2,tp=2,ep=4) the way back is one gather over tp
// and one all-to-all over ep.
// RUN: shard-opt %t.tp.ts.mlir --dist-apply-plan="plan=dp=2,tp=2,ep=4" --dist-propagate --dist-partition --dist-verify-comm | FileCheck %s --check-prefix=EPTPDP
// Expert tensor parallelism (tp=2,etp=2): every expert split over tp (gate
// and up by columns, down by rows); the down projection's output is partial
// over tp and goes through the (linear) combine, so the only reduction is
// that of the block's output, as after a Megatron MLP.
// RUN: shard-opt %t.tp.ts.mlir --dist-apply-plan="plan=tp=2,etp=2" --dist-propagate --dist-partition --dist-verify-comm | FileCheck %s --check-prefix=ETP

// SEED: dist.mesh @mesh [dp = 2 : data, ep = 2 : expert]
// SEED-LABEL: func.func private @mixtral_block_fwd(
// SEED: %[[BUF:.*]] = tfm.moe_dispatch
// SEED-NEXT: %[[TOK:.*]] = dist.sharding_constraint %[[BUF]] to <@mesh, [{}, {dp, ep}, {}, {}]>
// SEED-NEXT: dist.sharding_constraint %[[TOK]] to <@mesh, [{ep}, {dp}, {}, {}]>
// SEED: %[[EXP:.*]] = dist.sharding_constraint %{{.*}} to <@mesh, [{ep}, {dp}, {}, {}]>
// SEED-NEXT: %[[BACK:.*]] = dist.sharding_constraint %[[EXP]] to <@mesh, [{}, {dp, ep}, {}, {}]>
// SEED-NEXT: tfm.moe_combine %[[BACK]]
// SEED: func.func @train_step(%arg0: tensor<4x8xi32> {dist.sharding = #dist.sharding<@mesh, [{dp, ep}, {}]>, tfm.input = "tokens"}
// SEED-SAME: tensor<64x4xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {}]>, {{.*}}tfm.param = "layers.0.moe.router"
// SEED-SAME: tensor<4x64x128xf32> {dist.sharding = #dist.sharding<@mesh, [{ep}, {}, {}]>, {{.*}}tfm.param = "layers.0.moe.experts.w_gate"
// SEED-SAME: tensor<64x4xf32> {dist.sharding = #dist.sharding<@mesh, [{dp, ep}, {}]>, {{.*}}tfm.state = "layers.0.moe.router.exp_avg"
// SEED-SAME: tensor<4x64x128xf32> {dist.sharding = #dist.sharding<@mesh, [{ep, dp}, {}, {}]>, {{.*}}tfm.state = "layers.0.moe.experts.w_gate.exp_avg"

// CHECK: dist.mesh @mesh [dp = 2 : data, ep = 2 : expert]
// CHECK-LABEL: func.func private @mixtral_block_fwd(
// CHECK-SAME: %arg9: tensor<2x64x128xf32>
// CHECK-NOT: dist.all_to_all
// CHECK: tfm.moe_dispatch %{{.*}} : (tensor<1x8x64xf32>, tensor<1x8x2xi32>) -> tensor<4x1x8x64xf32>
// CHECK-NEXT: dist.all_to_all %{{.*}} on @mesh axes = [ep] split_dim = 0 concat_dim = 1 ragged_dim = 2 : tensor<4x1x8x64xf32> -> tensor<2x2x8x64xf32>
// CHECK-NOT: dist.all_to_all
// CHECK: tfm.matmul %{{.*}}, %arg9 : (tensor<2x16x64xf32>, tensor<2x64x128xf32>) -> tensor<2x16x128xf32>
// CHECK-NOT: dist.all_to_all
// CHECK: dist.all_to_all %{{.*}} on @mesh axes = [ep] split_dim = 1 concat_dim = 0 ragged_dim = 2 : tensor<2x2x8x64xf32> -> tensor<4x1x8x64xf32>
// CHECK-NEXT: tfm.moe_combine %{{.*}} : (tensor<4x1x8x64xf32>, tensor<1x8x2xf32>, tensor<1x8x2xi32>) -> tensor<1x8x64xf32>
// CHECK-NOT: dist.all_to_all
// CHECK-LABEL: func.func private @mixtral_block_bwd(
// CHECK-NOT: dist.all_to_all
// CHECK: tfm.moe_combine_grad {{.*}} -> (tensor<4x1x8x64xf32>, tensor<1x8x2xf32>)
// CHECK-NEXT: dist.all_to_all %{{.*}} on @mesh axes = [ep] split_dim = 0 concat_dim = 1 ragged_dim = 2 : tensor<4x1x8x64xf32> -> tensor<2x2x8x64xf32>
// CHECK-NOT: dist.all_to_all
// CHECK: tfm.matmul %{{.*}} {transpose_lhs} : (tensor<2x16x64xf32>, tensor<2x16x128xf32>) -> tensor<2x64x128xf32>
// CHECK-NOT: dist.all_to_all
// CHECK: dist.all_to_all %{{.*}} on @mesh axes = [ep] split_dim = 1 concat_dim = 0 ragged_dim = 2 : tensor<2x2x8x64xf32> -> tensor<4x1x8x64xf32>
// CHECK-NEXT: tfm.moe_dispatch_grad
// CHECK-NOT: dist.all_to_all
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: tensor<1x8xi32>
// CHECK-SAME: tensor<2x64x128xf32> {dist.sharding = #dist.sharding<@mesh, [{ep}, {}, {}]>, {{.*}}tfm.param = "layers.0.moe.experts.w_gate"

// Per layer: 7 dense gradients over {dp, ep} (plus embedding and head), the
// 3 expert gradients over dp; the experts' squared norm over ep.
// GRADS-DAG: 8 dist.all_reduce on @mesh axes = [dp, ep] reduction = sum : tensor<64x32xf32>
// GRADS-DAG: 4 dist.all_reduce on @mesh axes = [dp, ep] reduction = sum : tensor<64x4xf32>
// GRADS-DAG: 8 dist.all_reduce on @mesh axes = [dp, ep] reduction = sum : tensor<64x64xf32>
// GRADS-DAG: 9 dist.all_reduce on @mesh axes = [dp, ep] reduction = sum : tensor<64xf32>
// GRADS-DAG: 4 dist.all_reduce on @mesh axes = [dp] reduction = sum : tensor<2x128x64xf32>
// GRADS-DAG: 8 dist.all_reduce on @mesh axes = [dp] reduction = sum : tensor<2x64x128xf32>
// GRADS-DAG: 1 dist.all_reduce on @mesh axes = [ep] reduction = sum : tensor<f32>

// Bucketed: one bucket per group and layer (dense over {dp, ep}: the four
// blocks' and the final norm's with the loss; experts over dp: the four
// blocks'), each right after the backward that produced it.
// BUCKETS-DAG: 5 dist.all_reduce on @mesh axes = [dp, ep]
// BUCKETS-DAG: 4 dist.all_reduce on @mesh axes = [dp]
// BUCKETS-DAG: 1 dist.all_reduce on @mesh axes = [ep]

// ZERO3-LABEL: func.func private @mixtral_block_fwd(
// ZERO3-SAME: tensor<1x8x64xf32> {tfm.role = "hidden"}
// ZERO3: dist.all_gather %{{.*}} on @mesh axes = [dp, ep] gather_dim = 0 : tensor<3168xf32> -> tensor<12672xf32>
// ZERO3: dist.all_to_all %{{.*}} on @mesh axes = [ep] split_dim = 0 concat_dim = 1 ragged_dim = 2 : tensor<4x1x8x64xf32> -> tensor<2x2x8x64xf32>
// ZERO3: dist.all_gather %{{.*}} on @mesh axes = [dp] gather_dim = 0 : tensor<24576xf32> -> tensor<49152xf32>
// ZERO3: dist.all_to_all %{{.*}} on @mesh axes = [ep] split_dim = 1 concat_dim = 0
// ZERO3-NOT: dist.all_gather
// ZERO3-NOT: dist.reduce_scatter
// ZERO3: return
// ZERO3-LABEL: func.func private @mixtral_block_bwd(
// ZERO3-COUNT-2: dist.all_to_all
// ZERO3-NOT: dist.all_to_all
// ZERO3-NOT: axes = [ep] gather_dim
// ZERO3: return

// EPCP-LABEL: func.func private @mixtral_block_fwd(
// EPCP: %[[X:.*]] = dist.all_gather %{{.*}} on @mesh axes = [cp] gather_dim = 1 : tensor<4x4x64xf32> -> tensor<4x8x64xf32>
// EPCP: %[[BUF:.*]] = tfm.moe_dispatch %[[X]]
// EPCP: dist.shard_slice %[[BUF]] on @mesh axes = [cp] dim = 0 : tensor<4x4x8x64xf32> -> tensor<2x4x8x64xf32>
// EPCP: tfm.matmul %{{.*}}, %arg9 : (tensor<2x32x64xf32>, tensor<2x64x128xf32>) -> tensor<2x32x128xf32>
// EPCP: %[[OUT:.*]] = dist.all_gather %{{.*}} on @mesh axes = [cp] gather_dim = 0 : tensor<2x4x8x64xf32> -> tensor<4x4x8x64xf32>
// EPCP: tfm.moe_combine %[[OUT]]
// EPCP-NOT: dist.all_to_all
// EPCP: return
// EPCP-LABEL: func.func private @mixtral_block_bwd(
// EPCP: dist.shard_slice %dbuf on @mesh axes = [cp] dim = 0 : tensor<4x4x8x64xf32> -> tensor<2x4x8x64xf32>
// EPCP: dist.all_gather %{{.*}} on @mesh axes = [cp] gather_dim = 0 : tensor<2x4x8x64xf32> -> tensor<4x4x8x64xf32>
// EPCP: tfm.moe_dispatch_grad
// EPCP: return

// EPDPCP-LABEL: func.func private @mixtral_block_fwd(
// EPDPCP: tfm.moe_dispatch
// EPDPCP: dist.all_to_all %{{.*}} on @mesh axes = [ep] split_dim = 0 concat_dim = 1
// EPDPCP: dist.shard_slice %{{.*}} on @mesh axes = [cp] dim = 0
// EPDPCP: tfm.swiglu
// EPDPCP: dist.all_gather %{{.*}} on @mesh axes = [cp] gather_dim = 0
// EPDPCP: dist.all_to_all %{{.*}} on @mesh axes = [ep] split_dim = 1 concat_dim = 0
// EPDPCP-NOT: axes = [ep, cp]
// EPDPCP: tfm.moe_combine

// EPTP: dist.mesh @mesh [tp = 2 : tensor]
// EPTP-LABEL: func.func private @mixtral_block_fwd(
// EPTP-NOT: dist.all_to_all
// EPTP: tfm.moe_dispatch %{{.*}} -> tensor<4x4x8x64xf32>
// EPTP-NEXT: dist.shard_slice %{{.*}} on @mesh axes = [tp] dim = 0 : tensor<4x4x8x64xf32> -> tensor<2x4x8x64xf32>
// EPTP: tfm.matmul %{{.*}}, %arg9 : (tensor<2x32x64xf32>, tensor<2x64x128xf32>) -> tensor<2x32x128xf32>
// EPTP: dist.all_gather %{{.*}} on @mesh axes = [tp] gather_dim = 0 : tensor<2x4x8x64xf32> -> tensor<4x4x8x64xf32>
// EPTP-NEXT: tfm.moe_combine %{{.*}} : (tensor<4x4x8x64xf32>,
// EPTP-NOT: dist.all_to_all
// EPTP-LABEL: func.func @train_step(
// EPTP-SAME: tensor<2x64x128xf32> {dist.sharding = #dist.sharding<@mesh, [{tp}, {}, {}]>, {{.*}}tfm.param = "layers.0.moe.experts.w_gate"

// EPTPDP: dist.mesh @mesh [ep = 2 : expert, tp = 2 : tensor]
// EPTPDP-LABEL: func.func private @mixtral_block_fwd(
// EPTPDP: tfm.moe_dispatch %{{.*}} -> tensor<4x2x8x64xf32>
// EPTPDP: dist.all_to_all %{{.*}} on @mesh axes = [ep] split_dim = 0 concat_dim = 1 ragged_dim = 2 : tensor<{{.*}}> -> tensor<{{.*}}>
// EPTPDP: tfm.matmul %{{.*}}, %arg9 : (tensor<1x32x64xf32>, tensor<1x64x128xf32>) -> tensor<1x32x128xf32>
// EPTPDP: dist.all_gather %{{.*}} on @mesh axes = [tp] gather_dim = 0
// EPTPDP-NEXT: dist.all_to_all %{{.*}} on @mesh axes = [ep] split_dim = 1 concat_dim = 0 ragged_dim = 2 : tensor<2x4x8x64xf32> -> tensor<4x2x8x64xf32>
// EPTPDP-NEXT: tfm.moe_combine
// EPTPDP-LABEL: func.func @train_step(
// EPTPDP-SAME: tensor<1x64x128xf32> {dist.sharding = #dist.sharding<@mesh, [{ep, tp}, {}, {}]>, {{.*}}tfm.param = "layers.0.moe.experts.w_gate"

// ETP: dist.mesh @mesh [tp = 2 : tensor]
// ETP-LABEL: func.func private @mixtral_block_fwd(
// ETP-NOT: dist.shard_slice
// ETP: tfm.moe_dispatch %{{.*}} -> tensor<4x4x8x64xf32>
// ETP-NOT: dist.
// ETP: tfm.matmul %{{.*}}, %arg9 : (tensor<4x32x64xf32>, tensor<4x64x64xf32>) -> tensor<4x32x64xf32>
// ETP-NOT: dist.
// ETP: tfm.matmul %{{.*}}, %arg11 : (tensor<4x32x64xf32>, tensor<4x64x64xf32>) -> tensor<4x32x64xf32>
// ETP-NOT: dist.
// ETP: tfm.moe_combine %{{.*}} : (tensor<4x4x8x64xf32>,
// ETP-LABEL: func.func @train_step(
// ETP-SAME: tensor<4x64x64xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {}, {tp}]>, {{.*}}tfm.param = "layers.0.moe.experts.w_gate"
// ETP-SAME: tensor<4x64x64xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {tp}, {}]>, {{.*}}tfm.param = "layers.0.moe.experts.w_down"
