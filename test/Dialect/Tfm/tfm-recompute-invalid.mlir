// tfm-recompute errors name the value found.
// RUN: not shard-opt %S/../Dist/Inputs/mini-train-step.mlir --tfm-recompute=mode=partial 2>&1 | FileCheck %s --check-prefix=MODE
// MODE: error: tfm-recompute: mode must be none, selective or full, found 'partial'
// RUN: shard-opt %S/../Dist/Inputs/mini-train-step.mlir --tfm-recompute=mode=full | not shard-opt --tfm-recompute=mode=selective 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: tfm-recompute: the module is already rewritten (tfm.recompute = "full")
// RUN: not shard-opt %s -split-input-file --tfm-recompute=mode=full 2>&1 | FileCheck %s

// CHECK: error: tfm-recompute: no @train_step (run tfm-autodiff first)
module {
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// -----

// A residual read by anything but its backward call.
module {
  func.func private @b_fwd(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) attributes {tfm.func_kind = #tfm.func_kind<forward>} {
    %y = tfm.gelu %x : (tensor<2xf32>) -> tensor<2xf32>
    return %y, %y : tensor<2xf32>, tensor<2xf32>
  }
  func.func private @b_bwd(%dy: tensor<2xf32>, %r: tensor<2xf32>) -> tensor<2xf32> attributes {tfm.func_kind = #tfm.func_kind<backward>} {
    return %r : tensor<2xf32>
  }
  func.func @train_step(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
    %f:2 = call @b_fwd(%x) : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    // CHECK: error: 'tfm.add' op reads residual #0 of @b_fwd (result #1 of a forward call), which only its backward call may read
    %s = tfm.add %f#1, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %g = call @b_bwd(%x, %f#1) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %g, %f#0, %s : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  }
}
