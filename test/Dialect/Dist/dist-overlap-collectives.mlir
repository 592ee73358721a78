// dist-overlap-collectives: each gradient reduction starts right after the
// producer of its operand and is waited for after the next call (one
// layer's backward), or before its first use if that comes first; nothing
// to overlap leaves it blocking; groups over pp are left alone.
// RUN: shard-opt --dist-overlap-collectives -split-input-file %s | FileCheck %s
// RUN: shard-opt --dist-overlap-collectives="overlap-calls=2" -split-input-file %s | FileCheck %s --check-prefix=TWO
// RUN: not shard-opt --dist-overlap-collectives="overlap-calls=0" %s -split-input-file 2>&1 | FileCheck %s --check-prefix=ERR
// nanoGPT through the whole pipeline: test/Models/Dist/dist-overlap-collectives.mlir.

dist.mesh @m [pp = 2 : pipeline, dp = 2 : data]

func.func private @layer(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)

// The partitioner left both reductions at the end: the first moves up to
// its producer (the first call) and runs during the second call; the
// second has no call after it, but the tfm.add before its use: it starts
// right after its producer and is waited for before the use.
// CHECK-LABEL: func.func @layers(
// CHECK: %[[G0:.*]]:2 = call @layer
// CHECK-NEXT: %[[H0:.*]] = dist.all_reduce_start %[[G0]]#1 on @m axes = [dp] reduction = sum : tensor<8xf32> -> !dist.async<tensor<8xf32>>
// CHECK-NEXT: %[[G1:.*]]:2 = call @layer(%[[G0]]#0)
// CHECK-NEXT: %[[H1:.*]] = dist.reduce_scatter_start %[[G1]]#1 on @m axes = [dp] scatter_dim = 0 reduction = sum : tensor<8xf32> -> !dist.async<tensor<4xf32>>
// CHECK-NEXT: %[[R0:.*]] = dist.wait %[[H0]] : !dist.async<tensor<8xf32>>
// CHECK-NEXT: %[[S:.*]] = tfm.add %[[G1]]#0, %[[G1]]#0
// CHECK-NEXT: %[[R1:.*]] = dist.wait %[[H1]]
// CHECK-NEXT: return %[[R0]], %[[R1]], %[[S]]
// With overlap-calls=2 the first reduction could run behind two calls, but
// only one follows: it is waited for before its use (the return), like
// the second.
// TWO-LABEL: func.func @layers(
// TWO: dist.all_reduce_start
// TWO-NEXT: call @layer
// TWO-NEXT: dist.reduce_scatter_start
// TWO-NEXT: tfm.add
// TWO-NEXT: dist.wait
// TWO-NEXT: dist.wait
// TWO-NEXT: return
func.func @layers(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<4xf32>, tensor<8xf32>) {
  %g0:2 = call @layer(%x) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %g1:2 = call @layer(%g0#0) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %a = dist.all_reduce %g0#1 on @m axes = [dp] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  %b = dist.reduce_scatter %g1#1 on @m axes = [dp] scatter_dim = 0 reduction = sum : tensor<8xf32> -> tensor<4xf32>
  %s = tfm.add %g1#0, %g1#0 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %a, %b, %s : tensor<8xf32>, tensor<4xf32>, tensor<8xf32>
}

// Used right away (nothing to hide behind): stays blocking, in place. A
// group over pp (another stage's program takes part) is never moved.
// CHECK-LABEL: func.func @nothing(
// CHECK-NEXT: %[[A:.*]] = dist.all_reduce %arg0 on @m axes = [dp]
// CHECK-NEXT: tfm.add %[[A]], %[[A]]
// CHECK: call @layer
// CHECK-NEXT: dist.all_reduce %arg0 on @m axes = [pp]
func.func @nothing(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %a = dist.all_reduce %x on @m axes = [dp] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  %s = tfm.add %a, %a : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %g:2 = call @layer(%s) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %p = dist.all_reduce %x on @m axes = [pp] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  return %g#0, %p : tensor<8xf32>, tensor<8xf32>
}

// -----

dist.mesh @m [dp = 2 : data]

func.func private @layer(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<4xf32>, tensor<4xf32>)

// A bucket (pack, reduction, unpack) moves as one: the pack up to the last
// producer of its operands, the unpack down to the first use of what it
// unpacks, so that the reduction runs behind the next call.
// CHECK-LABEL: func.func @bucket(
// CHECK: %[[G:.*]]:3 = call @layer
// CHECK-NEXT: %[[P:.*]] = dist.pack %[[G]]#1, %[[G]]#2
// CHECK-NEXT: %[[H:.*]] = dist.all_reduce_start %[[P]]
// CHECK-NEXT: call @layer(%[[G]]#0)
// CHECK-NEXT: %[[R:.*]] = dist.wait %[[H]]
// CHECK-NEXT: dist.unpack %[[R]]
func.func @bucket(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) {
  %g:3 = call @layer(%x) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<4xf32>, tensor<4xf32>)
  %h:3 = call @layer(%g#0) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<4xf32>, tensor<4xf32>)
  %p = dist.pack %g#1, %g#2 : tensor<4xf32>, tensor<4xf32> -> tensor<8xf32>
  %r = dist.all_reduce %p on @m axes = [dp] reduction = sum : tensor<8xf32> -> tensor<8xf32>
  %u:2 = dist.unpack %r : tensor<8xf32> -> tensor<4xf32>, tensor<4xf32>
  return %h#0, %u#0, %u#1 : tensor<8xf32>, tensor<4xf32>, tensor<4xf32>
}

// ERR: dist-overlap-collectives: overlap-calls must be >= 1, found 0
