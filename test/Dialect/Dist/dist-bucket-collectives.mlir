// dist-bucket-collectives: exact per-bucket collective counts, on small
// hand-written functions (placement, dependencies, keys, calls, the byte cap)
// (DESIGN.md §5, §12: one collective per bucket, not per tensor); nanoGPT
// through the whole pipeline: test/Models/Dist/dist-bucket-collectives.mlir.
// RUN: shard-opt --dist-bucket-collectives -split-input-file %s | FileCheck %s \
// RUN:   --implicit-check-not=dist.all_reduce --implicit-check-not=dist.all_gather \
// RUN:   --implicit-check-not=dist.reduce_scatter
// RUN: shard-opt --dist-bucket-collectives="bucket-bytes=128" %s -split-input-file | FileCheck %s --check-prefix=CAP
// RUN: shard-opt --dist-bucket-collectives="split-at-calls=false" %s -split-input-file | FileCheck %s --check-prefix=NOSPLIT
// RUN: not shard-opt --dist-bucket-collectives="bucket-bytes=-1" %s -split-input-file 2>&1 | FileCheck %s --check-prefix=ERR

dist.mesh @m [dp = 2 : data, tp = 2 : tensor]

// Three independent partial gradients and the loss: one all-reduce, right
// after the last of them is produced.
// CHECK-LABEL: func.func @ddp(
// CHECK: %[[G0:.*]] = tfm.mul
// CHECK-NEXT: %[[G1:.*]] = tfm.add
// CHECK-NEXT: %[[G2:.*]] = tfm.add
// CHECK-NEXT: %[[P:.*]] = dist.pack %[[G0]], %[[G1]], %[[G2]], %{{.*}} : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<f32> -> tensor<73xf32>
// CHECK-NEXT: %[[R:.*]] = dist.all_reduce %[[P]] on @m axes = [dp] reduction = sum : tensor<73xf32> -> tensor<73xf32>
// CHECK-NEXT: %[[U:.*]]:4 = dist.unpack %[[R]] : tensor<73xf32> -> tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<f32>
// CHECK-NEXT: return %[[U]]#0, %[[U]]#1, %[[U]]#2, %[[U]]#3
func.func @ddp(%x: tensor<4x8xf32>, %y: tensor<8xf32>, %l: tensor<f32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<f32>) {
  %g0 = tfm.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %r0 = dist.all_reduce %g0 on @m axes = [dp] reduction = sum : tensor<4x8xf32> -> tensor<4x8xf32>
  %g1 = tfm.add %y, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %r1 = dist.all_reduce %g1 on @m axes = [dp] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  %g2 = tfm.add %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %r2 = dist.all_reduce %g2 on @m axes = [dp] reduction = sum : tensor<4x8xf32> -> tensor<4x8xf32>
  %rl = dist.all_reduce %l on @m axes = [dp] reduction = sum : tensor<f32> -> tensor<f32>
  return %r0, %r1, %r2, %rl : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<f32>
}

// -----

dist.mesh @m [dp = 2 : data, tp = 2 : tensor]

// Reduce-scatters on different dims: segment r of the packed buffer is
// shard r of each tensor, so the flat result unpacks with one group.
// CHECK-LABEL: func.func @zero2(
// CHECK: %[[P:.*]] = dist.pack %arg0, %arg1 num_groups = 2 scatter_dims = [0, 1] : tensor<4x8xf32>, tensor<2x6xf32> -> tensor<44xf32>
// CHECK-NEXT: %[[S:.*]] = dist.reduce_scatter %[[P]] on @m axes = [dp] scatter_dim = 0 reduction = sum : tensor<44xf32> -> tensor<22xf32>
// CHECK-NEXT: dist.unpack %[[S]] : tensor<22xf32> -> tensor<2x8xf32>, tensor<2x3xf32>
func.func @zero2(%x: tensor<4x8xf32>, %y: tensor<2x6xf32>) -> (tensor<2x8xf32>, tensor<2x3xf32>) {
  %a = dist.reduce_scatter %x on @m axes = [dp] scatter_dim = 0 reduction = sum : tensor<4x8xf32> -> tensor<2x8xf32>
  %b = dist.reduce_scatter %y on @m axes = [dp] scatter_dim = 1 reduction = sum : tensor<2x6xf32> -> tensor<2x3xf32>
  return %a, %b : tensor<2x8xf32>, tensor<2x3xf32>
}

// -----

dist.mesh @m [dp = 2 : data, tp = 2 : tensor]

// Gathers: one flat all-gather before the first use of either result; the
// unpack splits each rank's segment back along each gather dim.
// CHECK-LABEL: func.func @zero3(
// CHECK-NEXT: %[[P:.*]] = dist.pack %arg0, %arg1 : tensor<2x8xf32>, tensor<4x4xf32> -> tensor<32xf32>
// CHECK-NEXT: %[[G:.*]] = dist.all_gather %[[P]] on @m axes = [dp] gather_dim = 0 : tensor<32xf32> -> tensor<64xf32>
// CHECK-NEXT: %[[U:.*]]:2 = dist.unpack %[[G]] num_groups = 2 scatter_dims = [0, 1] : tensor<64xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT: tfm.mul %[[U]]#0, %[[U]]#0
// CHECK-NEXT: tfm.add %{{.*}}, %[[U]]#1
func.func @zero3(%x: tensor<2x8xf32>, %y: tensor<4x4xf32>) -> tensor<4x8xf32> {
  %a = dist.all_gather %x on @m axes = [dp] gather_dim = 0 : tensor<2x8xf32> -> tensor<4x8xf32>
  %u = tfm.mul %a, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = dist.all_gather %y on @m axes = [dp] gather_dim = 1 : tensor<4x4xf32> -> tensor<4x8xf32>
  %v = tfm.add %u, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %v : tensor<4x8xf32>
}

// -----

dist.mesh @m [dp = 2 : data, tp = 2 : tensor]

// A collective whose operand depends on another one's result cannot join
// its bucket (no cycle): %b starts a new one, which %c joins.
// CHECK-LABEL: func.func @dependent(
// CHECK-NEXT: %[[A:.*]] = dist.all_reduce %arg0 on @m axes = [dp] reduction = sum : tensor<8xf32> -> tensor<8xf32>
// CHECK-NEXT: %[[T:.*]] = tfm.mul %[[A]], %[[A]]
// CHECK-NEXT: dist.pack %[[T]], %arg1 : tensor<8xf32>, tensor<8xf32> -> tensor<16xf32>
// CHECK-NEXT: dist.all_reduce %{{.*}} : tensor<16xf32> -> tensor<16xf32>
// CHECK-NEXT: dist.unpack
func.func @dependent(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %a = dist.all_reduce %x on @m axes = [dp] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  %t = tfm.mul %a, %a : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %b = dist.all_reduce %t on @m axes = [dp] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  %c = dist.all_reduce %y on @m axes = [dp] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  return %b, %c : tensor<8xf32>, tensor<8xf32>
}

// -----

dist.mesh @m [dp = 2 : data, tp = 2 : tensor]

// Different axes, reductions or element types never share a collective; one
// of a kind stays as it is.
// CHECK-LABEL: func.func @keys(
// CHECK-NEXT: dist.all_reduce %arg0 on @m axes = [dp] reduction = sum
// CHECK-NEXT: dist.all_reduce %arg0 on @m axes = [tp] reduction = sum
// CHECK-NEXT: dist.all_reduce %arg0 on @m axes = [dp] reduction = max
// CHECK-NEXT: dist.all_reduce %arg1 on @m axes = [dp] reduction = sum
// CHECK-NEXT: dist.all_reduce %arg0 on @m axes = [tp, dp] reduction = sum
func.func @keys(%x: tensor<8xf32>, %i: tensor<8xi64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xi64>, tensor<8xf32>) {
  %a = dist.all_reduce %x on @m axes = [dp] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  %b = dist.all_reduce %x on @m axes = [tp] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  %c = dist.all_reduce %x on @m axes = [dp] reduction = max : tensor<8xf32> -> tensor<8xf32>
  %d = dist.all_reduce %i on @m axes = [dp] reduction = sum : tensor<8xi64> -> tensor<8xi64>
  %e = dist.all_reduce %x on @m axes = [tp, dp] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  return %a, %b, %c, %d, %e : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xi64>, tensor<8xf32>
}

// -----

dist.mesh @m [dp = 2 : data, tp = 2 : tensor]

func.func private @layer(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)

// A call (a layer) closes the bucket: gradients of different layers are
// reduce-scattered per layer, right after the layer's backward, even when
// the partitioner left every reduction at the end of the step (a
// reduction's layer is that of its operand's producer). Without
// split-at-calls the four share one, after the last producer.
// CHECK-LABEL: func.func @layers(
// CHECK: %[[G0:.*]]:2 = call @layer
// CHECK-NEXT: dist.pack %[[G0]]#0, %[[G0]]#1 num_groups = 2 scatter_dims = [0, 0] : tensor<8xf32>, tensor<8xf32> -> tensor<16xf32>
// CHECK-NEXT: dist.reduce_scatter {{.*}} : tensor<16xf32> -> tensor<8xf32>
// CHECK-NEXT: dist.unpack
// CHECK-NEXT: %[[G1:.*]]:2 = call @layer
// CHECK-NEXT: dist.pack %[[G1]]#0, %[[G1]]#1 num_groups = 2 scatter_dims = [0, 0] : tensor<8xf32>, tensor<8xf32> -> tensor<16xf32>
// CHECK-NEXT: dist.reduce_scatter {{.*}} : tensor<16xf32> -> tensor<8xf32>
// CHECK-NEXT: dist.unpack
// NOSPLIT-LABEL: func.func @layers(
// NOSPLIT-COUNT-2: call @layer
// NOSPLIT-NEXT: dist.pack {{.*}} : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<32xf32>
// NOSPLIT-NEXT: dist.reduce_scatter {{.*}} : tensor<32xf32> -> tensor<16xf32>
// NOSPLIT-NEXT: dist.unpack
// NOSPLIT-NOT: dist.reduce_scatter
func.func @layers(%x: tensor<8xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %g0:2 = call @layer(%x) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %g1:2 = call @layer(%g0#0) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %a = dist.reduce_scatter %g0#0 on @m axes = [dp] scatter_dim = 0 reduction = sum : tensor<8xf32> -> tensor<4xf32>
  %b = dist.reduce_scatter %g0#1 on @m axes = [dp] scatter_dim = 0 reduction = sum : tensor<8xf32> -> tensor<4xf32>
  %c = dist.reduce_scatter %g1#0 on @m axes = [dp] scatter_dim = 0 reduction = sum : tensor<8xf32> -> tensor<4xf32>
  %d = dist.reduce_scatter %g1#1 on @m axes = [dp] scatter_dim = 0 reduction = sum : tensor<8xf32> -> tensor<4xf32>
  return %a, %b, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

dist.mesh @m [dp = 2 : data, tp = 2 : tensor]

// The byte cap (the full side: 64 B per tensor here) starts a new bucket
// when the next tensor would not fit: 128 B gives two buckets of two.
// CHECK-LABEL: func.func @cap(
// CHECK: dist.all_gather {{.*}} : tensor<32xf32> -> tensor<64xf32>
// CAP-LABEL: func.func @cap(
// CAP: dist.all_gather {{.*}} : tensor<16xf32> -> tensor<32xf32>
// CAP: dist.all_gather {{.*}} : tensor<16xf32> -> tensor<32xf32>
// CAP-NOT: dist.all_gather
func.func @cap(%a: tensor<8xf32>, %b: tensor<8xf32>, %c: tensor<8xf32>, %d: tensor<8xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %0 = dist.all_gather %a on @m axes = [dp] gather_dim = 0 : tensor<8xf32> -> tensor<16xf32>
  %1 = dist.all_gather %b on @m axes = [dp] gather_dim = 0 : tensor<8xf32> -> tensor<16xf32>
  %2 = dist.all_gather %c on @m axes = [dp] gather_dim = 0 : tensor<8xf32> -> tensor<16xf32>
  %3 = dist.all_gather %d on @m axes = [dp] gather_dim = 0 : tensor<8xf32> -> tensor<16xf32>
  return %0, %1, %2, %3 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// ERR: dist-bucket-collectives: bucket-bytes must be >= 0 (0 = no limit), found -1
