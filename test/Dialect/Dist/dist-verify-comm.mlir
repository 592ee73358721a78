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
