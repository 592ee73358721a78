// dist-verify-comm: every rank's program (its pipeline stage's function)
// expanded to sends, receives and collectives, checked for FIFO matching,
// collective order and deadlock (algorithms.md §1.6, checks C and D).
// RUN: shard-opt %s -split-input-file --dist-verify-comm -verify-diagnostics | FileCheck %s

// Matching sends and receives, in the same order: accepted unchanged.
// CHECK-LABEL: func.func @ok__pp1
// CHECK: dist.recv {{.*}}"F mb=0"
// CHECK: dist.recv {{.*}}"F mb=1"
module {
  dist.mesh @mesh [pp = 2 : pipeline]
  func.func @ok__pp0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.entry = "ok", dist.pp_stage = 0 : i64} {
    %a = dist.send_start %x on @mesh axes = [pp] peer = 1 {dist.tag = "F mb=0"} : tensor<4xf32> -> !dist.async
    %b = dist.send_start %x on @mesh axes = [pp] peer = 1 {dist.tag = "F mb=1"} : tensor<4xf32> -> !dist.async
    dist.wait %a : !dist.async
    dist.wait %b : !dist.async
    return %x : tensor<4xf32>
  }
  func.func @ok__pp1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.entry = "ok", dist.pp_stage = 1 : i64} {
    %a = dist.recv on @mesh axes = [pp] peer = 0 {dist.tag = "F mb=0"} : tensor<4xf32>
    %b = dist.recv on @mesh axes = [pp] peer = 0 {dist.tag = "F mb=1"} : tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

// Two forwards swapped on stage 1: the first message does not match.
// expected-error @below {{dist-verify-comm: entry 'swapped': p2p rank 0 -> rank 1, message #0: rank 0 sends 'F mb=0 tensor<4xf32>' (event #0, rank 0 @swapped__pp0 op #0 dist.send_start) but rank 1 receives 'F mb=1 tensor<4xf32>' (event #0, rank 1 @swapped__pp1 op #0 dist.recv)}}
module {
  dist.mesh @mesh [pp = 2 : pipeline]
  func.func @swapped__pp0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.entry = "swapped", dist.pp_stage = 0 : i64} {
    %a = dist.send_start %x on @mesh axes = [pp] peer = 1 {dist.tag = "F mb=0"} : tensor<4xf32> -> !dist.async
    %b = dist.send_start %x on @mesh axes = [pp] peer = 1 {dist.tag = "F mb=1"} : tensor<4xf32> -> !dist.async
    dist.wait %a : !dist.async
    dist.wait %b : !dist.async
    return %x : tensor<4xf32>
  }
  func.func @swapped__pp1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.entry = "swapped", dist.pp_stage = 1 : i64} {
    %b = dist.recv on @mesh axes = [pp] peer = 0 {dist.tag = "F mb=1"} : tensor<4xf32>
    %a = dist.recv on @mesh axes = [pp] peer = 0 {dist.tag = "F mb=0"} : tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

// Each stage waits for the other before sending: a dependency cycle.
// expected-error @below {{deadlock}}
module {
  dist.mesh @mesh [pp = 2 : pipeline]
  func.func @cycle__pp0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.entry = "cycle", dist.pp_stage = 0 : i64} {
    %g = dist.recv on @mesh axes = [pp] peer = 1 {dist.tag = "B mb=0"} : tensor<4xf32>
    %a = dist.send_start %g on @mesh axes = [pp] peer = 1 {dist.tag = "F mb=0"} : tensor<4xf32> -> !dist.async
    dist.wait %a : !dist.async
    return %g : tensor<4xf32>
  }
  func.func @cycle__pp1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.entry = "cycle", dist.pp_stage = 1 : i64} {
    %y = dist.recv on @mesh axes = [pp] peer = 0 {dist.tag = "F mb=0"} : tensor<4xf32>
    %a = dist.send_start %y on @mesh axes = [pp] peer = 0 {dist.tag = "B mb=0"} : tensor<4xf32> -> !dist.async
    dist.wait %a : !dist.async
    return %y : tensor<4xf32>
  }
}

// -----

// The members of the pp group enter two all-reduces in different orders.
// expected-error @below {{collective}}
module {
  dist.mesh @mesh [pp = 2 : pipeline]
  func.func @order__pp0(%x: tensor<4xf32>, %s: tensor<f32>) -> tensor<4xf32> attributes {dist.entry = "order", dist.pp_stage = 0 : i64} {
    %a = dist.all_reduce %x on @mesh axes = [pp] reduction = sum : tensor<4xf32> -> tensor<4xf32>
    %b = dist.all_reduce %s on @mesh axes = [pp] reduction = sum : tensor<f32> -> tensor<f32>
    return %a : tensor<4xf32>
  }
  func.func @order__pp1(%x: tensor<4xf32>, %s: tensor<f32>) -> tensor<4xf32> attributes {dist.entry = "order", dist.pp_stage = 1 : i64} {
    %b = dist.all_reduce %s on @mesh axes = [pp] reduction = sum : tensor<f32> -> tensor<f32>
    %a = dist.all_reduce %x on @mesh axes = [pp] reduction = sum : tensor<4xf32> -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

// Symmetry (issue 19): dp and tp carry no point-to-point transfer, so one
// rank per (pp) class is expanded: 2 ranks stand for 2 x 1,048,576 x 8. The
// pp transfers and the collectives over dp and tp match: accepted.
// CHECK-LABEL: func.func @big__pp0
module {
  dist.mesh @mesh [pp = 2 : pipeline, dp = 1048576 : data, tp = 8 : tensor]
  func.func @big__pp0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.entry = "big", dist.pp_stage = 0 : i64} {
    %r = dist.all_reduce %x on @mesh axes = [tp] reduction = sum : tensor<4xf32> -> tensor<4xf32>
    %a = dist.send_start %r on @mesh axes = [pp] peer = 1 {dist.tag = "F mb=0"} : tensor<4xf32> -> !dist.async
    dist.wait %a : !dist.async
    %g = dist.all_reduce %r on @mesh axes = [dp] reduction = sum : tensor<4xf32> -> tensor<4xf32>
    return %g : tensor<4xf32>
  }
  func.func @big__pp1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.entry = "big", dist.pp_stage = 1 : i64} {
    %y = dist.recv on @mesh axes = [pp] peer = 0 {dist.tag = "F mb=0"} : tensor<4xf32>
    %r = dist.all_reduce %y on @mesh axes = [tp] reduction = sum : tensor<4xf32> -> tensor<4xf32>
    %g = dist.all_reduce %r on @mesh axes = [dp, tp] reduction = sum : tensor<4xf32> -> tensor<4xf32>
    return %g : tensor<4xf32>
  }
}

// -----

// The same mesh with stage 1 receiving the wrong microbatch: the mismatch
// names real ranks (8,388,608 is pp=1, dp=0, tp=0) and says which ranks
// share it.
// expected-error @below {{dist-verify-comm: entry 'bad': p2p rank 0 -> rank 8388608, message #0: rank 0 sends 'F mb=0 tensor<4xf32>' (event #1, rank 0 @bad__pp0 op #1 dist.send_start) but rank 8388608 receives 'F mb=1 tensor<4xf32>' (event #0, rank 8388608 @bad__pp1 op #0 dist.recv) (checked on 2 of 16777216 ranks: axes dp, tp carry no point-to-point transfer, so every rank that differs from a rank named above only on them runs the same program and has the same violation)}}
module {
  dist.mesh @mesh [pp = 2 : pipeline, dp = 1048576 : data, tp = 8 : tensor]
  func.func @bad__pp0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.entry = "bad", dist.pp_stage = 0 : i64} {
    %r = dist.all_reduce %x on @mesh axes = [tp] reduction = sum : tensor<4xf32> -> tensor<4xf32>
    %a = dist.send_start %r on @mesh axes = [pp] peer = 1 {dist.tag = "F mb=0"} : tensor<4xf32> -> !dist.async
    dist.wait %a : !dist.async
    return %r : tensor<4xf32>
  }
  func.func @bad__pp1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.entry = "bad", dist.pp_stage = 1 : i64} {
    %y = dist.recv on @mesh axes = [pp] peer = 0 {dist.tag = "F mb=1"} : tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

// A deadlock through a collective over a symmetric axis: stage 1 enters an
// all-reduce over [pp, dp] that stage 0 never enters, and waits there
// before sending what stage 0 waits for.
// expected-error @below {{deadlock}}
module {
  dist.mesh @mesh [pp = 2 : pipeline, dp = 65536 : data]
  func.func @dl__pp0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.entry = "dl", dist.pp_stage = 0 : i64} {
    %y = dist.recv on @mesh axes = [pp] peer = 1 {dist.tag = "B mb=0"} : tensor<4xf32>
    %g = dist.all_reduce %y on @mesh axes = [pp, dp] reduction = sum : tensor<4xf32> -> tensor<4xf32>
    return %g : tensor<4xf32>
  }
  func.func @dl__pp1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dist.entry = "dl", dist.pp_stage = 1 : i64} {
    %g = dist.all_reduce %x on @mesh axes = [pp, dp] reduction = sum : tensor<4xf32> -> tensor<4xf32>
    %a = dist.send_start %g on @mesh axes = [pp] peer = 0 {dist.tag = "B mb=0"} : tensor<4xf32> -> !dist.async
    dist.wait %a : !dist.async
    return %g : tensor<4xf32>
  }
}

// -----

// A send over dp makes dp a point-to-point axis, which is then expanded:
// every rank sends to dp = 3, so only the ranks with dp = 3 (6 and 7, not
// a class representative under a reduction of dp) send to themselves. tp
// stays symmetric and the rank named is the real one (dp = 3, tp = 0).
// expected-error @below {{rank 6 event #0 (rank 6 @self op #0 dist.send_start): sends to itself}}
module {
  dist.mesh @mesh [dp = 4 : data, tp = 2 : tensor]
  func.func @self(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = dist.send_start %x on @mesh axes = [dp] peer = 3 {dist.tag = "x"} : tensor<4xf32> -> !dist.async
    %y = dist.recv on @mesh axes = [dp] peer = 3 {dist.tag = "x"} : tensor<4xf32>
    dist.wait %a : !dist.async
    return %y : tensor<4xf32>
  }
}

// -----

// Calls are inlined; a recursive call is an error (the expansion used to
// stop silently at depth 16).
module {
  dist.mesh @mesh [dp = 2 : data]
  // expected-error @below {{dist-verify-comm: @loop calls itself (directly or through its callees); a rank's program must be finite}}
  func.func private @loop(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = dist.all_reduce %x on @mesh axes = [dp] reduction = sum : tensor<4xf32> -> tensor<4xf32>
    %y = func.call @loop(%r) : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
  func.func @rec(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = func.call @loop(%x) : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}
