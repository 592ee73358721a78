// dist-pipeline-split with ZeRO-3 over cp and the tied embedding (issue 14,
// item 6): with dp=1 the ZeRO group is cp, so `wte` is stored sharded on cp
// and all-gathered before use. Stage 0 (embedding) and stage 1 (LM head)
// each all-gather their own copy (the gather reads only the parameter, so it
// is run on every rank that uses it, not sent), hence both hold `wte` in
// every entry and both update it from the same summed gradient: stage 1
// sends its LM-head share back, stage 0 adds the embedding's, reduce-scatters
// over cp and sends the result to stage 1. Formerly stage 0 sent the
// gathered table, so @train_step__pp1 held no `wte` while @logits__pp1 did:
// the last stage's copy was never updated.
// RUN: %python -m autoshard.models %configs/models/nanogpt-shakespeare-char-cpu.json --batch 2 --seq 8 --vocab-multiple 8 -q -o %t.mlir
// RUN: shard-opt %t.mlir --tfm-autodiff -o %t.ts.mlir
// RUN: shard-opt %t.ts.mlir --plan pp=2,cp=2,tp=2,sp=1,zero=3 --dist-propagate --dist-partition --dist-pipeline-split --dist-verify-comm | FileCheck %s
// RUN: shard-opt %t.mlir --tfm-autodiff=microbatches=2 -o %t.ts2.mlir
// RUN: shard-opt %t.ts2.mlir --plan pp=2,cp=2,tp=2,sp=1,zero=3,mb=2,schedule=interleaved,vpp=2 --dist-propagate --dist-partition --dist-pipeline-split --dist-verify-comm | FileCheck %s --check-prefix=IL
// RUN: shard-opt %t.ts2.mlir --plan pp=2,cp=2,zero=3,mb=2,schedule=zb-h1 --dist-propagate --dist-partition --dist-pipeline-split --dist-verify-comm | FileCheck %s --check-prefix=ZB

// CHECK-LABEL: func.func @train_step__pp0(
// CHECK-SAME: %[[WTE0:arg[0-9]+]]: tensor<18x128xf32> {{{[^%]*}}tfm.param = "wte"
// CHECK: %[[G0:[0-9]+]] = dist.all_gather %[[WTE0]] on @mesh axes = [cp] gather_dim = 0 : tensor<18x128xf32> -> tensor<36x128xf32>
// CHECK-NOT: dist.send_start %[[G0]]
// CHECK: %[[HEAD:[0-9]+]] = dist.recv on @mesh axes = [pp] peer = 1 {dist.tag = "B mb=0 {{.*}} : tensor<36x128xf32>
// CHECK: %[[SUM:[0-9]+]] = tfm.add %[[HEAD]], %{{[0-9]+}} : (tensor<36x128xf32>, tensor<36x128xf32>)
// CHECK: %[[GRAD0:[0-9]+]] = dist.reduce_scatter %[[SUM]] on @mesh axes = [cp] scatter_dim = 0 reduction = sum : tensor<36x128xf32> -> tensor<18x128xf32>
// CHECK: dist.send_start %[[GRAD0]] on @mesh axes = [pp] peer = 1
// CHECK: tfm.adamw %[[WTE0]], %[[GRAD0]],

// CHECK-LABEL: func.func @train_step__pp1(
// CHECK-SAME: %[[WTE1:arg[0-9]+]]: tensor<18x128xf32> {{{[^%]*}}tfm.param = "wte"
// CHECK-NOT: dist.recv {{.*}} : tensor<36x128xf32>
// CHECK: %[[G1:[0-9]+]] = dist.all_gather %[[WTE1]] on @mesh axes = [cp] gather_dim = 0 : tensor<18x128xf32> -> tensor<36x128xf32>
// CHECK: tfm.matmul %{{[0-9]+}}, %[[G1]] {transpose_rhs}
// CHECK: %[[HEADG:[0-9]+]] = tfm.matmul_wgrad
// CHECK: dist.send_start %[[HEADG]] on @mesh axes = [pp] peer = 0
// CHECK: %[[GRAD1:[0-9]+]] = dist.recv on @mesh axes = [pp] peer = 0 {{.*}} : tensor<18x128xf32>
// CHECK: tfm.adamw %[[WTE1]], %[[GRAD1]],
// CHECK: return

// The other entries hold (and gather) it on the same ranks.
// CHECK-LABEL: func.func @eval__pp1(
// CHECK-SAME: %[[WTE2:arg[0-9]+]]: tensor<18x128xf32> {{{[^%]*}}tfm.param = "wte"
// CHECK-NOT: dist.recv {{.*}} : tensor<36x128xf32>
// CHECK: dist.all_gather %[[WTE2]] on @mesh axes = [cp]
// CHECK-LABEL: func.func @logits__pp1(
// CHECK-SAME: tfm.param = "wte"

// With microbatches the gradient is summed over them right after the
// embedding's last backward on stage 0 (the sum's home), reduce-scattered
// there and sent once; stage 1 updates its copy from that same gradient.
// IL-LABEL: func.func @train_step__pp1(
// IL-SAME: %[[W:arg[0-9]+]]: tensor<18x128xf32> {{{[^%]*}}tfm.param = "wte"
// IL-SAME: dist.pp_chunks = array<i64: 1, 3>
// IL: dist.all_gather %[[W]] on @mesh axes = [cp] gather_dim = 0 : tensor<18x128xf32> -> tensor<36x128xf32>
// IL-NOT: dist.reduce_scatter %{{[0-9]+}} on @mesh axes = [cp] scatter_dim = 0 reduction = sum : tensor<36x128xf32>
// IL: %[[G:[0-9]+]] = dist.recv on @mesh axes = [pp] peer = 0 {dist.tag = "B mb=1 {{.*}} : tensor<18x128xf32>
// IL: tfm.adamw %[[W]], %[[G]],

// ZB-LABEL: func.func @train_step__pp1(
// ZB-SAME: %[[W:arg[0-9]+]]: tensor<36x128xf32> {{{[^%]*}}tfm.param = "wte"
// ZB: dist.all_gather %[[W]] on @mesh axes = [cp] gather_dim = 0 : tensor<36x128xf32> -> tensor<72x128xf32>
// ZB-NOT: dist.reduce_scatter %{{[0-9]+}} on @mesh axes = [cp] scatter_dim = 0 reduction = sum : tensor<72x128xf32>
// ZB: %[[G:[0-9]+]] = dist.recv on @mesh axes = [pp] peer = 0 {dist.tag = "W mb=1 {{.*}} : tensor<36x128xf32>
// ZB: tfm.adamw %[[W]], %[[G]],
