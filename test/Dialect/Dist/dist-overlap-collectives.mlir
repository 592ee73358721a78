// dist-overlap-collectives: each gradient reduction (and all-to-all) starts
// right after the producer of its operand and is waited for after the next
// call (one layer's backward), or before its first use if that comes
// first; each all-gather starts one call before its use (a prefetch);
// nothing to overlap leaves it blocking; groups over pp are left alone;
// `kinds` restricts the kinds moved. A latency-bound collective (result of
// at most `latency-bound-bytes`) is waited for at its first use only: the
// small tensors here are bounded with latency-bound-bytes=0, except in the
// LAT run.
// RUN: shard-opt --dist-overlap-collectives="latency-bound-bytes=0" -split-input-file %s | FileCheck %s
// RUN: shard-opt --dist-overlap-collectives="overlap-calls=2 latency-bound-bytes=0" -split-input-file %s | FileCheck %s --check-prefix=TWO
// RUN: shard-opt --dist-overlap-collectives -split-input-file %s | FileCheck %s --check-prefix=LAT
// RUN: not shard-opt --dist-overlap-collectives="overlap-calls=0" %s -split-input-file 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not shard-opt --dist-overlap-collectives="latency-bound-bytes=-1" %s -split-input-file 2>&1 | FileCheck %s --check-prefix=NEGBYTES
// NEGBYTES: dist-overlap-collectives: latency-bound-bytes must be >= 0, found -1
// RUN: shard-opt --dist-overlap-collectives="kinds=all_reduce,reduce_scatter latency-bound-bytes=0" -split-input-file %s | FileCheck %s --check-prefix=KINDS
// RUN: not shard-opt --dist-overlap-collectives="kinds=broadcast" %s -split-input-file 2>&1 | FileCheck %s --check-prefix=BADKIND
// BADKIND: dist-overlap-collectives: kinds lists 'broadcast'; expected all_reduce, reduce_scatter, all_gather or all_to_all
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


// A pipeline stage: the loss all-reduce over dp would be waited for right
// after the next call (the last microbatch's backward), but that call's
// input gradient goes to the previous stage first: the wait comes after the
// send starts, so that the neighbour stage does not wait for this dp
// group's collective. A send of the reduced value itself still waits.
// CHECK-LABEL: func.func @stage(
// CHECK: %[[L:.*]] = dist.all_reduce_start %arg1 on @m axes = [dp]
// CHECK-NEXT: %[[G:.*]]:2 = call @layer
// CHECK-NEXT: %[[S0:.*]] = dist.send_start %[[G]]#0 on @m axes = [pp] peer = 0
// CHECK-NEXT: %[[S1:.*]] = dist.send_start %[[G]]#1 on @m axes = [pp] peer = 0
// CHECK-NEXT: %[[R:.*]] = dist.wait %[[L]]
// CHECK-NEXT: %[[S2:.*]] = dist.send_start %[[R]] on @m axes = [pp] peer = 0
// TWO-LABEL: func.func @stage(
// TWO: dist.all_reduce_start
// TWO-NEXT: call @layer
// TWO-NEXT: dist.send_start
// TWO-NEXT: dist.send_start
// TWO-NEXT: dist.wait
// TWO-NEXT: dist.send_start
func.func @stage(%x: tensor<8xf32>, %loss: tensor<f32>) -> (!dist.async, !dist.async, !dist.async) {
  %l = dist.all_reduce %loss on @m axes = [dp] reduction = sum : tensor<f32> -> tensor<f32>
  %g:2 = call @layer(%x) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %s0 = dist.send_start %g#0 on @m axes = [pp] peer = 0 : tensor<8xf32> -> !dist.async
  %s1 = dist.send_start %g#1 on @m axes = [pp] peer = 0 : tensor<8xf32> -> !dist.async
  %s2 = dist.send_start %l on @m axes = [pp] peer = 0 : tensor<f32> -> !dist.async
  return %s0, %s1, %s2 : !dist.async, !dist.async, !dist.async
}

// A last stage with two layers: the loss all-reduce over dp is latency-bound
// (4 bytes), so its wait goes to its first use, after both layers and the
// boundary gradient's send; bounded (latency-bound-bytes=0), it is waited
// for after the first layer, before the send its neighbour waits for. The
// gradient all-reduce of 64 bytes is latency-bound too at the default.
// CHECK-LABEL: func.func @two_layer_stage(
// CHECK: %[[L:.*]] = dist.all_reduce_start %arg1 on @m axes = [dp]
// CHECK-NEXT: %[[G1:.*]]:2 = call @layer
// CHECK-NEXT: %[[R:.*]] = dist.wait %[[L]]
// CHECK-NEXT: %[[G0:.*]]:2 = call @layer
// CHECK-NEXT: dist.send_start %[[G0]]#0 on @m axes = [pp] peer = 0
// LAT-LABEL: func.func @two_layer_stage(
// LAT: %[[L:.*]] = dist.all_reduce_start %arg1 on @m axes = [dp]
// LAT-NEXT: %[[G1:.*]]:2 = call @layer
// LAT-NEXT: %[[G0:.*]]:2 = call @layer
// LAT-NEXT: %[[S:.*]] = dist.send_start %[[G0]]#0 on @m axes = [pp] peer = 0
// LAT-NEXT: %[[R:.*]] = dist.wait %[[L]]
// LAT-NEXT: dist.send_start %[[R]] on @m axes = [pp] peer = 0
// LAT-LABEL: func.func @big(
// LAT: dist.all_reduce_start
// LAT-NEXT: call @big_layer
// LAT-NEXT: dist.wait
func.func @two_layer_stage(%x: tensor<8xf32>, %loss: tensor<f32>) -> (!dist.async, !dist.async) {
  %l = dist.all_reduce %loss on @m axes = [dp] reduction = sum : tensor<f32> -> tensor<f32>
  %g1:2 = call @layer(%x) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %g0:2 = call @layer(%g1#0) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %s0 = dist.send_start %g0#0 on @m axes = [pp] peer = 0 : tensor<8xf32> -> !dist.async
  %s1 = dist.send_start %l on @m axes = [pp] peer = 0 : tensor<f32> -> !dist.async
  return %s0, %s1 : !dist.async, !dist.async
}

// Over latency-bound-bytes (16385 floats: 64 KiB + 4 bytes): bounded by
// overlap-calls as before.
func.func private @big_layer(%x: tensor<16385xf32>) -> tensor<16385xf32>
func.func @big(%x: tensor<16385xf32>) -> tensor<16385xf32> {
  %a = dist.all_reduce %x on @m axes = [dp] reduction = sum : tensor<16385xf32> -> tensor<16385xf32>
  %y = call @big_layer(%x) : (tensor<16385xf32>) -> tensor<16385xf32>
  %z = call @big_layer(%y) : (tensor<16385xf32>) -> tensor<16385xf32>
  %s = tfm.add %z, %a : (tensor<16385xf32>, tensor<16385xf32>) -> tensor<16385xf32>
  return %s : tensor<16385xf32>
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

// -----

dist.mesh @m [dp = 2 : data]

func.func private @block(%x: tensor<8xf32>, %w: tensor<8xf32>) -> tensor<8xf32>

// Parameter gathers at the call sites (dist-hoist-argument-gathers): each
// starts one call before the call that uses it (FSDP2's prefetch: layer
// i+1's weights are gathered during layer i), the first one right after
// its operand's producer; no gather starts earlier, so at most two layers'
// gathered weights are alive. With overlap-calls=2, two calls before.
// CHECK-LABEL: func.func @prefetch(
// CHECK-NEXT: %[[W0:.*]] = dist.all_gather %arg1
// CHECK-NEXT: %[[H1:.*]] = dist.all_gather_start %arg2 on @m axes = [dp] gather_dim = 0 : tensor<4xf32> -> !dist.async<tensor<8xf32>>
// CHECK-NEXT: %[[Y0:.*]] = call @block(%arg0, %[[W0]])
// CHECK-NEXT: %[[W1:.*]] = dist.wait %[[H1]]
// CHECK-NEXT: %[[H2:.*]] = dist.all_gather_start %arg3
// CHECK-NEXT: %[[Y1:.*]] = call @block(%[[Y0]], %[[W1]])
// CHECK-NEXT: %[[W2:.*]] = dist.wait %[[H2]]
// CHECK-NEXT: call @block(%[[Y1]], %[[W2]])
// TWO-LABEL: func.func @prefetch(
// TWO-NEXT: dist.all_gather %arg1
// TWO-NEXT: dist.all_gather_start %arg2
// TWO-NEXT: dist.all_gather_start %arg3
// TWO-NEXT: call @block
// TWO-NEXT: dist.wait
// TWO-NEXT: call @block
// TWO-NEXT: dist.wait
// TWO-NEXT: call @block
// KINDS-LABEL: func.func @prefetch(
// KINDS-NOT: _start
// KINDS: return
func.func @prefetch(%x: tensor<8xf32>, %a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>) -> tensor<8xf32> {
  %w0 = dist.all_gather %a on @m axes = [dp] gather_dim = 0 : tensor<4xf32> -> tensor<8xf32>
  %y0 = call @block(%x, %w0) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %w1 = dist.all_gather %b on @m axes = [dp] gather_dim = 0 : tensor<4xf32> -> tensor<8xf32>
  %y1 = call @block(%y0, %w1) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %w2 = dist.all_gather %c on @m axes = [dp] gather_dim = 0 : tensor<4xf32> -> tensor<8xf32>
  %y2 = call @block(%y1, %w2) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %y2 : tensor<8xf32>
}

// An all-to-all (e.g. expert parallelism's) starts after its producer and
// is waited for before its use, behind the independent tfm.add.
// CHECK-LABEL: func.func @all_to_all(
// CHECK-NEXT: %[[H:.*]] = dist.all_to_all_start %arg0 on @m axes = [dp] split_dim = 0 concat_dim = 1
// CHECK-NEXT: %[[S:.*]] = tfm.add %arg1, %arg1
// CHECK-NEXT: %[[R:.*]] = dist.wait %[[H]]
func.func @all_to_all(%x: tensor<4x2xf32>, %y: tensor<8xf32>) -> (tensor<2x4xf32>, tensor<8xf32>) {
  %s = tfm.add %y, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %t = dist.all_to_all %x on @m axes = [dp] split_dim = 0 concat_dim = 1 : tensor<4x2xf32> -> tensor<2x4xf32>
  return %t, %s : tensor<2x4xf32>, tensor<8xf32>
}
