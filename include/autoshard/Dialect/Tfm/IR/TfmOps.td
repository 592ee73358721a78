//===- TfmOps.td - Transformer graph ops -------------------*- tablegen -*-===//
//
// Forward, backward and optimizer ops of the `tfm` dialect. Every op spells
// its types with `functional-type` so IR stays explicit; the verifier
// recomputes the result types from the operands and attributes (the same
// function the type-inferring builders use) and names the violated rule.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_TFM_IR_TFMOPS_TD
#define AUTOSHARD_DIALECT_TFM_IR_TFMOPS_TD

include "autoshard/Dialect/Tfm/IR/TfmDialect.td"
include "autoshard/Dialect/Tfm/IR/TfmInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/CommonAttrConstraints.td"

def Tfm_FloatTensor : RankedTensorOf<[AnyFloat]>;
def Tfm_IndexTensor : RankedTensorOf<[I32, I64]>;
def Tfm_ScalarF32 : 0DTensorOf<[F32]>;
def Tfm_ScalarI64 : 0DTensorOf<[I64]>;

/// Base of ops whose result types are a function of operand types and
/// attributes: verify() recomputes them (see TfmOps.cpp).
class Tfm_PureOp<string mnemonic, list<Trait> traits = []>
    : Tfm_Op<mnemonic, !listconcat(traits, [Pure])> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Tfm_MatmulOp : Tfm_PureOp<"matmul"> {
  let summary = "batched matrix multiply";
  let description = [{
    `result = op(lhs) @ op(rhs)` where `op` transposes the two innermost dims
    when `transpose_lhs` / `transpose_rhs` is set.

    * `lhs`: `[..., M, K]` (or `[..., K, M]` transposed), rank >= 2.
    * `rhs`: `[K, N]` (or `[N, K]`) shared by every batch entry, or
      `[..., K, N]` with exactly the batch dims of `lhs` (e.g. expert
      weights `[E, H, F]` against dispatched tokens `[E, C, H]`).
    * `result`: `[..., M, N]`, batch dims of `lhs`.

    FLOPs: `2 * batch * M * N * K`.

    Example (a column-parallel projection of `[B, S, H]` activations, and the
    tied LM head reading the `[V, H]` embedding table):

    ```mlir
    %q = tfm.matmul %x, %wq : (tensor<16x64x128xf32>, tensor<128x128xf32>) -> tensor<16x64x128xf32>
    %logits = tfm.matmul %h, %wte {transpose_rhs}
        : (tensor<16x64x128xf32>, tensor<65x128xf32>) -> tensor<16x64x65xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$lhs, Tfm_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Tfm_FloatTensor:$result);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Tfm_BinaryOp<string mnemonic, string formula> : Tfm_PureOp<mnemonic> {
  let summary = "elementwise " # mnemonic # " with suffix broadcasting";
  let description = [{
    `result = }] # formula # [{`. `rhs` is broadcast into `lhs`: its shape
    must equal `lhs`'s shape or a suffix of it (a rank-0 `rhs` is a scalar),
    e.g. a `[S, H]` position table added to `[B, S, H]` activations. The
    result has the shape and element type of `lhs`.

    ```mlir
    %y = tfm.}] # mnemonic # [{ %x, %b : (tensor<16x64x128xf32>, tensor<128xf32>) -> tensor<16x64x128xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$lhs, Tfm_FloatTensor:$rhs);
  let results = (outs Tfm_FloatTensor:$result);
}

def Tfm_AddOp : Tfm_BinaryOp<"add", "lhs + rhs">;

#endif // AUTOSHARD_DIALECT_TFM_IR_TFMOPS_TD
