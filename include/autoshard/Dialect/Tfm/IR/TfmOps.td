//===- TfmOps.td - Transformer graph ops -------------------*- tablegen -*-===//
//
// Forward, backward and optimizer ops of the `tfm` dialect. Every op spells
// its types with `functional-type` so IR stays explicit; the verifier
// recomputes the result types from the operands and attributes (the same
// function the type-inferring builders use) and names the violated rule.
//
// The op set, operand order and attribute names are a contract with the
// Python model builder: see /work/spec/tfm-ops.md.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_TFM_IR_TFMOPS_TD
#define AUTOSHARD_DIALECT_TFM_IR_TFMOPS_TD

include "autoshard/Dialect/Tfm/IR/TfmAttrs.td"
include "autoshard/Dialect/Tfm/IR/TfmDialect.td"
include "autoshard/Dialect/Tfm/IR/TfmInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/CommonAttrConstraints.td"

// Forward ops declare their gradient rule (TfmVJP.cpp); gradient and
// optimizer ops have none (no second-order differentiation).
defvar Tfm_VJP = DeclareOpInterfaceMethods<TfmVJPOpInterface>;
defvar Tfm_SequenceOrder = TfmSequenceOrderOpInterface;
// Every op's factor sharding rule (dist::ShardingRuleOpInterface) is an
// external model (lib/Dialect/Tfm/Sharding/ShardingRules.cpp).
// Every op declares its FLOP and byte count (TfmCost.cpp), for the planner;
// GEMMs and attention also their roofline kind and problem size.
defvar Tfm_Cost = DeclareOpInterfaceMethods<TfmCostOpInterface>;
defvar Tfm_GemmCost = DeclareOpInterfaceMethods<TfmCostOpInterface,
    ["getRooflineKind", "getGemmShape"]>;
defvar Tfm_AttentionCost = DeclareOpInterfaceMethods<TfmCostOpInterface,
    ["getRooflineKind", "getAttentionShape"]>;

// Op kinds the generic passes ask about (TfmTraits.h).
class Tfm_Trait<string name> : NativeOpTrait<name> {
  let cppNamespace = "::autoshard::tfm::trait";
}
def Tfm_TrainingLoss : Tfm_Trait<"TrainingLoss">;
def Tfm_LossGradientSeed : Tfm_Trait<"LossGradientSeed">;
def Tfm_OptimizerStep : Tfm_Trait<"OptimizerStep">;
def Tfm_OptimizerStatistic : Tfm_Trait<"OptimizerStatistic">;
def Tfm_SumOverOperands : Tfm_Trait<"SumOverOperands">;
def Tfm_CheapToRecompute : Tfm_Trait<"CheapToRecompute">;
def Tfm_Gradient : Tfm_Trait<"Gradient">;
def Tfm_WeightGradient : Tfm_Trait<"WeightGradient">;

// Shapes are global and static: sharding rules, costs and the memory plan
// all need concrete sizes.
def Tfm_FloatTensor : StaticShapeTensorOf<[AnyFloat]>;
def Tfm_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def Tfm_ScalarF32 : 0DTensorOf<[F32]>;
def Tfm_ScalarI64 : 0DTensorOf<[I64]>;

/// Base of all tfm ops: pure, `operands attr-dict : functional-type(...)`.
/// `cost` declares the cost interface methods the op defines.
class Tfm_PureOp<string mnemonic, list<Trait> traits = [],
                 Trait cost = Tfm_Cost>
    : Tfm_Op<mnemonic, !listconcat(traits, [Pure, cost])> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

/// Base of ops whose result types are a function of operand types and
/// attributes. The op's `computeResultTypes` is the single source of truth:
/// the generated verifier compares the actual result types with it, and the
/// type-inferring builders (Tfm_InferBuilder) use it. It is defined in
/// TfmOps.cpp, or here by a class that sets `computeBody` (the body of
/// `computeResultTypes(emitError, adaptor, resultTypes)`) for all its ops.
class Tfm_InferredOp<string mnemonic, list<Trait> traits = [],
                     Trait cost = Tfm_Cost>
    : Tfm_PureOp<mnemonic, traits, cost> {
  code computeBody = "";
  // `"dq", "dk", "dv"`: result names for diagnostics.
  string resultNames = !interleave(
      !foreach(i, !range(!size(results)), "\"" # !getdagname(results, i) # "\""),
      ", ");
  let extraClassDeclaration = [{
    /// Computes the result types from the operand types and attributes in
    /// `adaptor`, or reports the first violated rule through `emitError`.
    static ::llvm::LogicalResult
    computeResultTypes(::autoshard::tfm::EmitErrorFn emitError,
                       Adaptor adaptor,
                       ::llvm::SmallVectorImpl<::mlir::Type> &resultTypes);

    /// Number of results, for builders that fill in the types afterwards.
    static constexpr unsigned numInferredResults = }] # !size(results) # [{;
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verify() {
      return ::autoshard::tfm::detail::verifyComputedResultTypes(
          *this, {}] # resultNames # [{});
    }
  }] # !if(!empty(computeBody), "", [{
    ::llvm::LogicalResult $cppClass::computeResultTypes(
        ::autoshard::tfm::EmitErrorFn emitError, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &resultTypes) {
      }] # computeBody # [{
    }
  }]);
}

/// A builder that takes the operands and attributes `params` and infers the
/// result types; `args` forwards them to the generated builder (which gets
/// temporary result types that are then replaced by the inferred ones).
class Tfm_InferBuilder<dag params, string args>
    : OpBuilder<params, [{
        build($_builder, $_state,
              ::autoshard::tfm::detail::pendingResultTypes(numInferredResults),
              }] # args # [{);
        ::autoshard::tfm::detail::addComputedResultTypes<Adaptor>(
            $_state, computeResultTypes);
      }]>;

// The same for an op of TfmSequenceOrderOpInterface: built in the original
// order (no zigzag_chunks); dist-zigzag-sequence sets it later.
class Tfm_OrderedInferBuilder<dag params, string args>
    : Tfm_InferBuilder<params, args # ", /*zigzag_chunks=*/::mlir::IntegerAttr()">;

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Tfm_LinalgGroup : OpDocGroup {
  let summary = "Linear algebra";
  let description = "Matrix products and the weight gradient of a linear layer.";
}

let opDocGroup = Tfm_LinalgGroup in {

def Tfm_MatmulOp : Tfm_InferredOp<"matmul", [Tfm_VJP], Tfm_GemmCost> {
  let summary = "batched matrix multiply";
  let description = [{
    `result = op(lhs) @ op(rhs)` where `op` transposes the two innermost dims
    when `transpose_lhs` / `transpose_rhs` is set:
    `result[..., m, n] = sum_k op(lhs)[..., m, k] * op(rhs)[..., k, n]`.

    * `lhs`: `[..., M, K]` (or `[..., K, M]` transposed), rank >= 2.
    * `rhs`: `[K, N]` (or `[N, K]`) shared by every batch entry, or
      `[..., K, N]` with exactly the batch dims of `lhs` (e.g. expert
      weights `[E, H, F]` against dispatched tokens `[E, C, H]`).
    * `result`: `[..., M, N]`, batch dims of `lhs`; all element types equal.

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
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$lhs, "::mlir::Value":$rhs,
                          CArg<"bool", "false">:$transposeLhs,
                          CArg<"bool", "false">:$transposeRhs),
                     "lhs, rhs, transposeLhs, transposeRhs">
  ];
}

def Tfm_MatmulWgradOp : Tfm_InferredOp<"matmul_wgrad",
    [Tfm_Gradient, Tfm_WeightGradient], Tfm_GemmCost> {
  let summary = "weight gradient of a linear layer";
  let description = [{
    The gradient of `W` in `y = x @ W`, summed over every leading (batch and
    sequence) dim: `dw[k, n] = sum_{i...} x[i..., k] * dy[i..., n]`.

    * `x`: `[..., K]`, `dy`: `[..., N]`, rank >= 2, identical leading dims
      and element type.
    * `dw`: `[K, N]`.

    FLOPs: `2 * T * K * N` with `T` the product of the leading dims.
    Sharding a leading dim leaves `dw` partial (sum), which is how the data
    parallel gradient all-reduce arises.

    ```mlir
    %dw = tfm.matmul_wgrad %x, %dy : (tensor<16x64x128xf32>, tensor<16x64x512xf32>) -> tensor<128x512xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$x, Tfm_FloatTensor:$dy);
  let results = (outs Tfm_FloatTensor:$dw);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$x, "::mlir::Value":$dy), "x, dy">
  ];
}

} // opDocGroup

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

def Tfm_ElementwiseGroup : OpDocGroup {
  let summary = "Elementwise";
  let description = "Elementwise arithmetic with suffix broadcasting and reductions of broadcast dims.";
}

let opDocGroup = Tfm_ElementwiseGroup in {

class Tfm_BinaryOp<string mnemonic, string formula>
    : Tfm_InferredOp<mnemonic, [Tfm_VJP, Tfm_CheapToRecompute]> {
  let summary = "elementwise " # mnemonic # " with suffix broadcasting";
  let description = [{
    `result = }] # formula # [{`. `rhs` is broadcast into `lhs`: its shape
    must equal `lhs`'s shape or a suffix of it (a rank-0 `rhs` is a scalar),
    e.g. a `[S, H]` position table added to `[B, S, H]` activations. The
    result has the shape and element type of `lhs`; both element types are
    equal.

    FLOPs: one per element of `lhs`.

    ```mlir
    %y = tfm.}] # mnemonic # [{ %x, %b : (tensor<16x64x128xf32>, tensor<128xf32>) -> tensor<16x64x128xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$lhs, Tfm_FloatTensor:$rhs);
  let results = (outs Tfm_FloatTensor:$result);
  let computeBody = [{
    return ::autoshard::tfm::detail::computeBroadcastBinary(
        emitError, adaptor.getLhs(), adaptor.getRhs(), resultTypes);
  }];
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$lhs, "::mlir::Value":$rhs),
                     "lhs, rhs">
  ];
}

def Tfm_AddOp : Tfm_BinaryOp<"add", "lhs + rhs">;
def Tfm_SubOp : Tfm_BinaryOp<"sub", "lhs - rhs">;
def Tfm_MulOp : Tfm_BinaryOp<"mul", "lhs * rhs">;

def Tfm_ScaleOp : Tfm_InferredOp<"scale", [Tfm_VJP, Tfm_CheapToRecompute]> {
  let summary = "multiplication by a compile-time constant";
  let description = [{
    `result = factor * x`, elementwise; `result` has the type of `x`. Used
    e.g. for the mean in a loss gradient or for gradient accumulation.

    FLOPs: one per element.

    ```mlir
    %y = tfm.scale %x {factor = 5.000000e-01 : f64} : (tensor<16x64x128xf32>) -> tensor<16x64x128xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$x, F64Attr:$factor);
  let results = (outs Tfm_FloatTensor:$result);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$x, "double":$factor),
                     "x, ::llvm::APFloat(factor)">
  ];
}

def Tfm_ReduceSumOp : Tfm_InferredOp<"reduce_sum", [Tfm_VJP]> {
  let summary = "sum over a set of dims";
  let description = [{
    Sums `x` over `dims` and removes them: `result[rest] = sum_{dims} x`.
    `dims` must be sorted, unique and in `[0, rank(x))`; an empty list is the
    identity. This is the gradient of a broadcast operand (a bias, a position
    table added to a batch).

    FLOPs: one per element of `x`.

    ```mlir
    %db = tfm.reduce_sum %dy {dims = array<i64: 0, 1>} : (tensor<16x64x128xf32>) -> tensor<128xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$x, DenseI64ArrayAttr:$dims);
  let results = (outs Tfm_FloatTensor:$result);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$x, "::llvm::ArrayRef<int64_t>":$dims),
                     "x, dims">
  ];
}

def Tfm_BroadcastOp
    : Tfm_PureOp<"broadcast", [Tfm_VJP, Tfm_CheapToRecompute]> {
  let summary = "broadcast along new dims (the gradient of reduce_sum)";
  let description = [{
    Inserts the result dims listed in `dims` and repeats `x` along them:
    `result[i...] = x[i... without the dims in dims]`. The result type is
    explicit (the sizes of the new dims come from it); `dims` must be sorted,
    unique and in `[0, rank(result))`, removing them from the result shape
    must give the shape of `x`, and the element type is preserved. An empty
    list is the identity. `tfm.reduce_sum` with the same `dims` is its
    gradient, and it is the gradient of `tfm.reduce_sum`.

    No FLOPs; one element written per element of `result`.

    ```mlir
    %dy = tfm.broadcast %db {dims = array<i64: 0, 1>} : (tensor<128xf32>) -> tensor<16x64x128xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$x, DenseI64ArrayAttr:$dims);
  let results = (outs Tfm_FloatTensor:$result);
}

def Tfm_CastOp : Tfm_PureOp<"cast", [Tfm_VJP, Tfm_CheapToRecompute]> {
  let summary = "elementwise conversion to another float element type";
  let description = [{
    `result[i...] = convert(x[i...])`: the value of `x` in the element type
    of the explicit result type (e.g. `f32` master weights to `bf16` for the
    matmuls of mixed-precision training, `bf16` logits to `f32` for the
    loss). Narrowing rounds to nearest, ties to even; NaN stays NaN and
    values beyond the target range become infinities. The shape is
    preserved; both element types are floats (equal types are allowed: the
    identity). Its gradient is the cast of `dresult` back to the type of
    `x`, so the gradient of an `f32` parameter used in `bf16` is `f32`.
    `tfm-mixed-precision` inserts it.

    No FLOPs; one element read and one written per element.

    ```mlir
    %w16 = tfm.cast %w : (tensor<128x512xf32>) -> tensor<128x512xbf16>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$x);
  let results = (outs Tfm_FloatTensor:$result);
}

} // opDocGroup

//===----------------------------------------------------------------------===//
// Embeddings
//===----------------------------------------------------------------------===//

def Tfm_EmbeddingGroup : OpDocGroup {
  let summary = "Embeddings";
  let description = "Token and learned position embeddings and their gradients.";
}

let opDocGroup = Tfm_EmbeddingGroup in {

def Tfm_EmbeddingOp : Tfm_InferredOp<"embedding", [Tfm_VJP]> {
  let summary = "token embedding lookup";
  let description = [{
    `out[i..., h] = table[ids[i...], h]`.

    * `ids`: `[...]` of `i32`/`i64`, any rank; values in `[0, V)`.
    * `table`: `[V, H]`.
    * `out`: `[..., H]` (shape of `ids` plus `H`), element type of `table`.

    No FLOPs; `|ids| * H` elements gathered. Sharding `V` (vocab-parallel)
    needs the op's partition hook (masked lookup plus a sum).

    ```mlir
    %h = tfm.embedding %ids, %wte : (tensor<16x64xi32>, tensor<65x128xf32>) -> tensor<16x64x128xf32>
    ```
  }];
  let arguments = (ins Tfm_IndexTensor:$ids, Tfm_FloatTensor:$table);
  let results = (outs Tfm_FloatTensor:$out);
  let computeBody = [{
    return ::autoshard::tfm::detail::computeEmbedding(
        emitError, adaptor.getIds(), adaptor.getTable(), "[V, H]",
        resultTypes);
  }];
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$ids, "::mlir::Value":$table),
                     "ids, table">
  ];
}

def Tfm_EmbeddingGradOp : Tfm_InferredOp<"embedding_grad", [Tfm_Gradient]> {
  let summary = "gradient of the embedding table (scatter-add)";
  let description = [{
    `dtable[v, h] = sum_{i... : ids[i...] == v} dy[i..., h]`: a scatter-add,
    repeated ids accumulate, rows never looked up are zero.

    * `ids`: `[...]` of `i32`/`i64`.
    * `dy`: `[..., H]` with the shape of `ids` as leading dims.
    * `dtable`: `[V, H]` with `V = num_embeddings >= 1`, element type of `dy`.

    FLOPs: `|ids| * H` additions.

    ```mlir
    %dwte = tfm.embedding_grad %ids, %dh {num_embeddings = 65 : i64}
        : (tensor<16x64xi32>, tensor<16x64x128xf32>) -> tensor<65x128xf32>
    ```
  }];
  let arguments = (ins Tfm_IndexTensor:$ids, Tfm_FloatTensor:$dy,
                       I64Attr:$num_embeddings);
  let results = (outs Tfm_FloatTensor:$dtable);
  let computeBody = [{
    return ::autoshard::tfm::detail::computeEmbeddingGrad(
        emitError, adaptor.getDy(), adaptor.getIds(),
        adaptor.getNumEmbeddingsAttr().getInt(), resultTypes);
  }];
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$ids, "::mlir::Value":$dy,
                          "int64_t":$numEmbeddings),
                     "ids, dy, numEmbeddings">
  ];
}

def Tfm_MicrobatchOp : Tfm_InferredOp<"microbatch"> {
  let summary = "the rows of one microbatch of a batch of ids";
  let description = [{
    `result[q, rest...] = x[q * count + index, rest...]`: microbatch `index`
    of `count` takes every `count`-th row of the batch (gradient
    accumulation over microbatches; `tfm-autodiff` with `microbatches > 1`
    slices the step's tokens and labels with it). The rows are strided,
    not contiguous, so that the op stays local under a batch split over
    data-parallel ranks: each rank's contiguous block of rows holds whole
    groups of `count` rows, and the microbatch's rows of that block are
    exactly the block's rows `index, index + count, ...` (the batch dim's
    sharding factor is its major part, of size `B / count`).

    * `x`: `[B, ...]` ids (i32 or i64), rank >= 1, `B` divisible by `count`.
    * `index` in `[0, count)`, `count >= 1`.
    * `result`: `[B / count, ...]`, element type of `x`.

    No FLOPs; one row copied per result row.

    ```mlir
    %mb1 = tfm.microbatch %tokens {index = 1 : i64, count = 4 : i64} : (tensor<16x64xi32>) -> tensor<4x64xi32>
    ```
  }];
  let arguments = (ins Tfm_IndexTensor:$x, I64Attr:$index, I64Attr:$count);
  let results = (outs Tfm_IndexTensor:$result);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$x, "int64_t":$index,
                          "int64_t":$count),
                     "x, index, count">
  ];
}

def Tfm_PositionEmbeddingOp
    : Tfm_InferredOp<"position_embedding", [Tfm_VJP, Tfm_SequenceOrder]> {
  let summary = "learned absolute position embedding";
  let description = [{
    `out[s, h] = table[s, h]` for `s < seq_len`: the first `seq_len` rows of
    the position table (positions `0 .. S-1`), to be broadcast-added to
    `[B, S, H]` activations.

    * `table`: `[P, H]` with `1 <= seq_len <= P`.
    * `out`: `[S, H]`, `S = seq_len`, element type of `table`.

    No FLOPs.

    ```mlir
    %pos = tfm.position_embedding %wpe {seq_len = 64 : i64} : (tensor<256x128xf32>) -> tensor<64x128xf32>
    ```
  }];
  let arguments = !con((ins Tfm_FloatTensor:$table, I64Attr:$seq_len),
                       (ins OptionalAttr<I64Attr>:$zigzag_chunks));
  let results = (outs Tfm_FloatTensor:$out);
  let builders = [
    Tfm_OrderedInferBuilder<(ins "::mlir::Value":$table, "int64_t":$seqLen),
                     "table, seqLen">
  ];
}

def Tfm_PositionEmbeddingGradOp
    : Tfm_InferredOp<"position_embedding_grad",
                     [Tfm_Gradient, Tfm_SequenceOrder]> {
  let summary = "gradient of the position table";
  let description = [{
    `dtable[s, h] = sum_{i...} dy[i..., s, h]` for `s < S`, zero for
    `S <= s < P`.

    * `dy`: `[..., S, H]`, rank >= 2, `S <= num_positions`.
    * `dtable`: `[P, H]`, `P = num_positions`, element type of `dy`.

    FLOPs: one addition per element of `dy`.

    ```mlir
    %dwpe = tfm.position_embedding_grad %dpos {num_positions = 256 : i64}
        : (tensor<16x64x128xf32>) -> tensor<256x128xf32>
    ```
  }];
  let arguments = !con((ins Tfm_FloatTensor:$dy, I64Attr:$num_positions),
                       (ins OptionalAttr<I64Attr>:$zigzag_chunks));
  let results = (outs Tfm_FloatTensor:$dtable);
  let builders = [
    Tfm_OrderedInferBuilder<(ins "::mlir::Value":$dy, "int64_t":$numPositions),
                     "dy, numPositions">
  ];
}

} // opDocGroup

//===----------------------------------------------------------------------===//
// Normalisation (over the last dim)
//===----------------------------------------------------------------------===//

def Tfm_NormGroup : OpDocGroup {
  let summary = "Normalisation";
  let description = "LayerNorm and RMSNorm over the last dim, and their gradients.";
}

let opDocGroup = Tfm_NormGroup in {

def Tfm_LayerNormOp
    : Tfm_InferredOp<"layer_norm", [Tfm_VJP, Tfm_CheapToRecompute]> {
  let summary = "layer normalisation over the last dim";
  let description = [{
    Over the last dim of `x`:
    `mu = mean_h x`, `var = mean_h (x - mu)^2`,
    `y = (x - mu) / sqrt(var + epsilon) * gamma + beta` (`beta = 0` when
    absent).

    * `x`: `[..., H]`, rank >= 1.
    * `gamma`, optional `beta`: `[H]`, element type of `x`.
    * `y`: type of `x`. `epsilon > 0`.

    FLOPs: about `8` per element of `x`. The normalised dim `H` must not be
    sharded.

    ```mlir
    %y = tfm.layer_norm %x, %g, %b {epsilon = 1.000000e-05 : f64}
        : (tensor<16x64x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<16x64x128xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$x, Tfm_FloatTensor:$gamma,
                       Optional<Tfm_FloatTensor>:$beta, F64Attr:$epsilon);
  let results = (outs Tfm_FloatTensor:$y);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$x, "::mlir::Value":$gamma,
                          "::mlir::Value":$beta, "double":$epsilon),
                     "x, gamma, beta, ::llvm::APFloat(epsilon)">
  ];
}

def Tfm_LayerNormGradOp : Tfm_InferredOp<"layer_norm_grad", [Tfm_Gradient]> {
  let summary = "gradient of layer_norm";
  let description = [{
    With `xhat = (x - mu) / sigma`, `sigma = sqrt(var + epsilon)` and
    `g = dy * gamma` (all over the last dim of length `H`):

    * `dx = (g - mean_h g - xhat * mean_h (g * xhat)) / sigma`
    * `dgamma = sum_{i...} dy * xhat`, `dbeta = sum_{i...} dy`

    `dy`, `x`: `[..., H]`, same type; `gamma`: `[H]`. Results: `dx` has the
    type of `x`, `dgamma` and `dbeta` that of `gamma` (`dbeta` is computed
    whether or not the forward op had a `beta`).

    FLOPs: about `12` per element of `x`.

    ```mlir
    %dx, %dg, %db = tfm.layer_norm_grad %dy, %x, %g {epsilon = 1.000000e-05 : f64}
        : (tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<128xf32>)
        -> (tensor<16x64x128xf32>, tensor<128xf32>, tensor<128xf32>)
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$dy, Tfm_FloatTensor:$x,
                       Tfm_FloatTensor:$gamma, F64Attr:$epsilon);
  let results = (outs Tfm_FloatTensor:$dx, Tfm_FloatTensor:$dgamma,
                      Tfm_FloatTensor:$dbeta);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$dy, "::mlir::Value":$x,
                          "::mlir::Value":$gamma, "double":$epsilon),
                     "dy, x, gamma, ::llvm::APFloat(epsilon)">
  ];
}

def Tfm_RmsNormOp
    : Tfm_InferredOp<"rms_norm", [Tfm_VJP, Tfm_CheapToRecompute]> {
  let summary = "RMS normalisation over the last dim";
  let description = [{
    `y = x / sqrt(mean_h x^2 + epsilon) * gamma` over the last dim of `x`.

    * `x`: `[..., H]`, rank >= 1; `gamma`: `[H]`, element type of `x`.
    * `y`: type of `x`. `epsilon > 0`.

    FLOPs: about `4` per element of `x`.

    ```mlir
    %y = tfm.rms_norm %x, %g {epsilon = 1.000000e-05 : f64}
        : (tensor<16x64x128xf32>, tensor<128xf32>) -> tensor<16x64x128xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$x, Tfm_FloatTensor:$gamma,
                       F64Attr:$epsilon);
  let results = (outs Tfm_FloatTensor:$y);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$x, "::mlir::Value":$gamma,
                          "double":$epsilon),
                     "x, gamma, ::llvm::APFloat(epsilon)">
  ];
}

def Tfm_RmsNormGradOp : Tfm_InferredOp<"rms_norm_grad", [Tfm_Gradient]> {
  let summary = "gradient of rms_norm";
  let description = [{
    With `r = sqrt(mean_h x^2 + epsilon)`, `xhat = x / r`, `g = dy * gamma`:

    * `dx = (g - xhat * mean_h (g * xhat)) / r`
    * `dgamma = sum_{i...} dy * xhat`

    `dy`, `x`: `[..., H]`, same type; `gamma`: `[H]`. `dx` has the type of
    `x`, `dgamma` that of `gamma`.

    FLOPs: about `8` per element of `x`.

    ```mlir
    %dx, %dg = tfm.rms_norm_grad %dy, %x, %g {epsilon = 1.000000e-05 : f64}
        : (tensor<16x64x128xf32>, tensor<16x64x128xf32>, tensor<128xf32>)
        -> (tensor<16x64x128xf32>, tensor<128xf32>)
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$dy, Tfm_FloatTensor:$x,
                       Tfm_FloatTensor:$gamma, F64Attr:$epsilon);
  let results = (outs Tfm_FloatTensor:$dx, Tfm_FloatTensor:$dgamma);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$dy, "::mlir::Value":$x,
                          "::mlir::Value":$gamma, "double":$epsilon),
                     "dy, x, gamma, ::llvm::APFloat(epsilon)">
  ];
}

} // opDocGroup

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

def Tfm_ActivationGroup : OpDocGroup {
  let summary = "Activations";
  let description = "GELU, SiLU and SwiGLU, and their gradients.";
}

let opDocGroup = Tfm_ActivationGroup in {

/// `y = f(x)` elementwise; `extraArgs` are the op's attributes.
class Tfm_ActivationOp<string mnemonic, string formula, string flops,
                       dag extraArgs = (ins)>
    : Tfm_InferredOp<mnemonic, [Tfm_VJP, Tfm_CheapToRecompute]> {
  let summary = mnemonic # " activation";
  let description = [{
    Elementwise `y = }] # formula # [{`; `y` has the type of `x`.

    FLOPs: about }] # flops # [{ per element.

    ```mlir
    %y = tfm.}] # mnemonic # [{ %x : (tensor<16x64x512xf32>) -> tensor<16x64x512xf32>
    ```
  }];
  let arguments = !con((ins Tfm_FloatTensor:$x), extraArgs);
  let results = (outs Tfm_FloatTensor:$y);
  let computeBody = [{
    resultTypes.push_back(adaptor.getX().getType());
    return ::llvm::success();
  }];
  let builders = [Tfm_InferBuilder<(ins "::mlir::Value":$x), "x">];
}

/// `dx = dy * f'(x)` elementwise; `extraArgs` are the forward op's attributes.
class Tfm_ActivationGradOp<string mnemonic, string derivative, string flops,
                           dag extraArgs = (ins)>
    : Tfm_InferredOp<mnemonic, [Tfm_Gradient]> {
  let summary = "gradient of " # !substr(mnemonic, 0, !find(mnemonic, "_grad"));
  let description = [{
    Elementwise `dx = dy * f'(x)` with `f'(x) = }] # derivative # [{`.
    `dy` and `x` have the same type, which is also the type of `dx`.

    FLOPs: about }] # flops # [{ per element.

    ```mlir
    %dx = tfm.}] # mnemonic # [{ %dy, %x
        : (tensor<16x64x512xf32>, tensor<16x64x512xf32>) -> tensor<16x64x512xf32>
    ```
  }];
  let arguments = !con((ins Tfm_FloatTensor:$dy, Tfm_FloatTensor:$x),
                       extraArgs);
  let results = (outs Tfm_FloatTensor:$dx);
  let computeBody = [{
    return ::autoshard::tfm::detail::computeSameType(
        emitError, {{"dy", adaptor.getDy()}}, "x", adaptor.getX(), resultTypes);
  }];
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$dy, "::mlir::Value":$x), "dy, x">
  ];
}

def Tfm_GeluOp : Tfm_ActivationOp<"gelu",
    "0.5 * x * (1 + erf(x / sqrt(2)))` (exact), or with `tanh_approx` "
    # "`0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))", "10",
    (ins UnitAttr:$tanh_approx)> {
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$x,
                          CArg<"bool", "false">:$tanhApprox),
                     "x, tanhApprox">
  ];
}

def Tfm_GeluGradOp : Tfm_ActivationGradOp<"gelu_grad",
    "Phi(x) + x * phi(x)` (exact; `Phi`, `phi` the normal CDF and PDF), or "
    # "with `tanh_approx` (which must match the forward op) the derivative of "
    # "`0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))", "16",
    (ins UnitAttr:$tanh_approx)> {
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$dy, "::mlir::Value":$x,
                          CArg<"bool", "false">:$tanhApprox),
                     "dy, x, tanhApprox">
  ];
}

def Tfm_SiluOp : Tfm_ActivationOp<"silu", "x * sigmoid(x)", "5">;

def Tfm_SiluGradOp : Tfm_ActivationGradOp<"silu_grad",
    "sigmoid(x) * (1 + x * (1 - sigmoid(x)))", "8">;

def Tfm_SwigluOp
    : Tfm_InferredOp<"swiglu", [Tfm_VJP, Tfm_CheapToRecompute]> {
  let summary = "SwiGLU gating";
  let description = [{
    `y = silu(gate) * up = gate * sigmoid(gate) * up`, elementwise (the
    Llama MLP: `gate = x @ W1`, `up = x @ W3`, output `y @ W2`).
    `gate`, `up` and `y` have the same type, e.g. `[B, S, F]`.

    FLOPs: about `6` per element.

    ```mlir
    %y = tfm.swiglu %gate, %up
        : (tensor<16x64x512xf32>, tensor<16x64x512xf32>) -> tensor<16x64x512xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$gate, Tfm_FloatTensor:$up);
  let results = (outs Tfm_FloatTensor:$y);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$gate, "::mlir::Value":$up),
                     "gate, up">
  ];
}

def Tfm_SwigluGradOp : Tfm_InferredOp<"swiglu_grad", [Tfm_Gradient]> {
  let summary = "gradient of swiglu";
  let description = [{
    With `s = sigmoid(gate)`:
    `dgate = dy * up * s * (1 + gate * (1 - s))`, `dup = dy * gate * s`.
    `dy`, `gate`, `up`, `dgate` and `dup` all have the same type.

    FLOPs: about `10` per element.

    ```mlir
    %dgate, %dup = tfm.swiglu_grad %dy, %gate, %up
        : (tensor<16x64x512xf32>, tensor<16x64x512xf32>, tensor<16x64x512xf32>)
        -> (tensor<16x64x512xf32>, tensor<16x64x512xf32>)
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$dy, Tfm_FloatTensor:$gate,
                       Tfm_FloatTensor:$up);
  let results = (outs Tfm_FloatTensor:$dgate, Tfm_FloatTensor:$dup);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$dy, "::mlir::Value":$gate,
                          "::mlir::Value":$up),
                     "dy, gate, up">
  ];
}

} // opDocGroup

//===----------------------------------------------------------------------===//
// Positional / shape
//===----------------------------------------------------------------------===//

def Tfm_PositionalGroup : OpDocGroup {
  let summary = "Positional / shape";
  let description = "Rotary position embedding and reshape.";
}

let opDocGroup = Tfm_PositionalGroup in {

/// Rotary embedding of `input` by `sign * angle`.
class Tfm_RopeOpBase<string mnemonic, string input, string output,
                     string sign, list<Trait> traits = []>
    : Tfm_InferredOp<mnemonic, !listconcat(traits, [Tfm_SequenceOrder])> {
  let description = [{
    Rotary position embedding, rotate-half convention: for position `s` in
    `0 .. S-1` and `i < D/2`, with `a = }] # sign # [{s * theta^(-2i/D)`,
    the pair `(u, w) = (}] # input # [{[b, s, n, i], }] # input
    # [{[b, s, n, i + D/2])` becomes
    `(u * cos(a) - w * sin(a), u * sin(a) + w * cos(a))`.

    * `}] # input # [{`: `[B, S, N, D]` (heads before head dim), `D` even.
    * `}] # output # [{`: type of `}] # input # [{`. `theta > 0` (e.g. 10000).

    FLOPs: `3` per element (two products and a sum per output element).

    ```mlir
    %}] # output # [{ = tfm.}] # mnemonic # [{ %}] # input
    # [{ {theta = 1.000000e+04 : f64}
        : (tensor<16x64x8x32xf32>) -> tensor<16x64x8x32xf32>
    ```
  }];
  let arguments = !con(!con(!dag(ins, [Tfm_FloatTensor], [input]),
                       (ins F64Attr:$theta)),
                       (ins OptionalAttr<I64Attr>:$zigzag_chunks));
  let results = !dag(outs, [Tfm_FloatTensor], [output]);
  let computeBody = [{
    return ::autoshard::tfm::detail::computeRope(
        emitError, "}] # input # [{", adaptor.getOperands()[0],
        adaptor.getTheta().convertToDouble(), resultTypes);
  }];
  let builders = [
    Tfm_OrderedInferBuilder<!con(!dag(ins, ["::mlir::Value"], [input]),
                          (ins "double":$theta)),
                     input # ", ::llvm::APFloat(theta)">
  ];
}

def Tfm_RopeOp
    : Tfm_RopeOpBase<"rope", "x", "y", "", [Tfm_VJP, Tfm_CheapToRecompute]> {
  let summary = "rotary position embedding";
}

def Tfm_RopeGradOp
    : Tfm_RopeOpBase<"rope_grad", "dy", "dx", "-", [Tfm_Gradient]> {
  let summary = "gradient of rope (rotation by the opposite angle)";
}

/// Per-rank rope of a block of the sequence (emitted by dist-partition).
class Tfm_RopeLocalOpBase<string mnemonic, string input, string output,
                          string global, list<Trait> traits = []>
    : Tfm_InferredOp<mnemonic, !listconcat(traits, [Tfm_SequenceOrder])> {
  let description = [{
    The per-rank form of `tfm.}] # global # [{` when the sequence dim of
    `}] # input # [{` is sharded (context parallelism; emitted by
    `dist-partition` through the partition hook of `tfm.}] # global # [{`,
    never in global IR): the local block `[B, Sl, N, D]` holds the global
    positions `shard * Sl + s`, `s < Sl`, and each is rotated as
    `tfm.}] # global # [{` rotates it in the whole sequence.

    * `}] # input # [{`: `[B, Sl, N, D]`, `D` even; `}] # output
    # [{` has its type.
    * `shard`: `tensor<i64>`, this rank's block index along the sequence
      (from `dist.axis_index`), in `[0, seq_len / Sl)`.
    * `seq_len`: the global sequence length, a multiple of `Sl`; `theta > 0`.

    ```mlir
    %s = dist.axis_index on @mesh axes = [cp] : tensor<i64>
    %}] # output # [{ = tfm.}] # mnemonic # [{ %}] # input
    # [{, %s {seq_len = 64 : i64, theta = 1.000000e+04 : f64}
        : (tensor<4x32x4x16xf32>, tensor<i64>) -> tensor<4x32x4x16xf32>
    ```
  }];
  let arguments = !con(!con(!dag(ins, [Tfm_FloatTensor], [input]),
                       (ins Tfm_ScalarI64:$shard, F64Attr:$theta,
                            I64Attr:$seq_len)),
                       (ins OptionalAttr<I64Attr>:$zigzag_chunks));
  let results = !dag(outs, [Tfm_FloatTensor], [output]);
  let computeBody = [{
    return ::autoshard::tfm::detail::computeRopeLocal(
        emitError, "}] # input # [{", adaptor.getOperands()[0],
        adaptor.getTheta().convertToDouble(),
        adaptor.getSeqLenAttr().getInt(), resultTypes);
  }];
  let builders = [
    Tfm_OrderedInferBuilder<!con(!dag(ins, ["::mlir::Value"], [input]),
                          (ins "::mlir::Value":$shard, "double":$theta,
                               "int64_t":$seqLen)),
                     input # ", shard, ::llvm::APFloat(theta), seqLen">
  ];
}

def Tfm_RopeLocalOp : Tfm_RopeLocalOpBase<"rope_local", "x", "y", "rope"> {
  let summary = "rope of a sequence block (global positions)";
}

def Tfm_RopeLocalGradOp
    : Tfm_RopeLocalOpBase<"rope_local_grad", "dy", "dx", "rope_grad",
                          [Tfm_Gradient]> {
  let summary = "rope gradient of a sequence block (global positions)";
}

def Tfm_ReshapeOp
    : Tfm_PureOp<"reshape", [Tfm_VJP, Tfm_CheapToRecompute]> {
  let summary = "row-major reshape";
  let description = [{
    Reinterprets `x` in row-major order with the explicit result shape, e.g.
    `[B, S, H]` to `[B, S, N, D]` with `H = N * D`. The element type and the
    element count are preserved. No FLOPs, no data movement.

    ```mlir
    %q4 = tfm.reshape %q : (tensor<16x64x128xf32>) -> tensor<16x64x4x32xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$x);
  let results = (outs Tfm_FloatTensor:$y);
}

} // opDocGroup

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

def Tfm_DropoutGroup : OpDocGroup {
  let summary = "Dropout";
  let description = "Dropout whose mask does not depend on the sharding plan.";
}

let opDocGroup = Tfm_DropoutGroup in {

/// Dropout of `input` (forward and gradient apply the same mask).
class Tfm_DropoutOpBase<string mnemonic, string input, string output,
                        list<Trait> traits = []>
    : Tfm_InferredOp<mnemonic, !listconcat(traits, [Tfm_SequenceOrder])> {
  let description = [{
    `}] # output # [{ = }] # input # [{ * keep / (1 - rate)`, elementwise,
    where `keep = (u >= rate)` and `u` in `[0, 1)` comes from a counter-based
    RNG (Philox) keyed on `(seed, step, layer, site, global element index)`.
    The mask therefore does not depend on how the tensor is sharded, and the
    gradient op regenerates it instead of saving it.

    * `}] # input # [{`: any float tensor; `}] # output # [{` has its type.
    * `step`, `layer`: `tensor<i64>` (training step, layer index).
    * `rate` in `[0, 1)`; `site >= 0` tells apart the dropouts of one layer.

    FLOPs: about `12` per element (RNG and scaling).

    ```mlir
    %}] # output # [{ = tfm.}] # mnemonic # [{ %}] # input
    # [{, %step, %layer {rate = 1.000000e-01 : f64, site = 0 : i64}
        : (tensor<16x64x128xf32>, tensor<i64>, tensor<i64>) -> tensor<16x64x128xf32>
    ```
  }];
  let arguments = !con(!con(!dag(ins, [Tfm_FloatTensor], [input]),
                       (ins Tfm_ScalarI64:$step, Tfm_ScalarI64:$layer,
                            F64Attr:$rate, I64Attr:$site)),
                       (ins OptionalAttr<I64Attr>:$zigzag_chunks));
  let results = !dag(outs, [Tfm_FloatTensor], [output]);
  let computeBody = [{
    return ::autoshard::tfm::detail::computeDropout(
        emitError, adaptor.getOperands()[0], adaptor.getRate().convertToDouble(),
        adaptor.getSiteAttr().getInt(), resultTypes);
  }];
  let builders = [
    Tfm_OrderedInferBuilder<!con(!dag(ins, ["::mlir::Value"], [input]),
                          (ins "::mlir::Value":$step, "::mlir::Value":$layer,
                               "double":$rate, "int64_t":$site)),
                     input # ", step, layer, ::llvm::APFloat(rate), "
                     # "site">
  ];
}

def Tfm_DropoutOp
    : Tfm_DropoutOpBase<"dropout", "x", "y", [Tfm_VJP, Tfm_CheapToRecompute]> {
  let summary = "dropout with a plan-independent mask";
}

def Tfm_DropoutGradOp
    : Tfm_DropoutOpBase<"dropout_grad", "dy", "dx", [Tfm_Gradient]> {
  let summary = "gradient of dropout (same mask and scaling)";
}

/// Per-rank dropout of a block of a sharded tensor (emitted by
/// dist-partition through the hooks of tfm.dropout / tfm.dropout_grad).
class Tfm_DropoutLocalOpBase<string mnemonic, string input, string output,
                             string global, list<Trait> traits = []>
    : Tfm_InferredOp<mnemonic, !listconcat(traits, [Tfm_SequenceOrder])> {
  let description = [{
    The per-rank form of `tfm.}] # global # [{` when `}] # input # [{` is a
    block of a sharded tensor (emitted by `dist-partition` through the
    partition hook of `tfm.}] # global # [{`; never in global IR). It applies
    exactly the mask elements that `tfm.}] # global # [{` applies to the same
    elements of the whole tensor: element `i` (local coordinates) has the
    global coordinates `g[d] = i[d] + o[d]`, where the block offset is
    `o[d] = shards[k] * shape[d]` when `d = shard_dims[k]` and `0` for the
    other dims, and its mask bit is the one of the global row-major index of
    `g` in `global_shape`.

    * `}] # input # [{`: the local block, any float tensor;
      `}] # output # [{` has its type.
    * `step`, `layer`: `tensor<i64>`; `rate`, `site`: as `tfm.}] # global
    # [{`.
    * `global_shape`: the shape of the whole tensor (same rank).
    * `shard_dims`: the sharded dims, strictly increasing; `shards`: one
      `tensor<i64>` per sharded dim, the index of this rank's block along it
      (from `dist.axis_index` over the dim's mesh axes). A sharded dim's
      global size is a multiple of the local one; every other dim is whole.

    With no sharded dim and `global_shape` the local shape it computes
    `tfm.}] # global # [{`.

    ```mlir
    %s0 = dist.axis_index on @mesh axes = [dp] : tensor<i64>
    %s1 = dist.axis_index on @mesh axes = [tp] : tensor<i64>
    %}] # output # [{ = tfm.}] # mnemonic # [{ %}] # input
    # [{, %step, %layer, %s0, %s1
        {global_shape = array<i64: 16, 64, 128>, rate = 1.000000e-01 : f64,
         shard_dims = array<i64: 0, 1>, site = 0 : i64}
        : (tensor<8x32x128xf32>, tensor<i64>, tensor<i64>, tensor<i64>,
           tensor<i64>) -> tensor<8x32x128xf32>
    ```
  }];
  let arguments = !con(!con(!dag(ins, [Tfm_FloatTensor], [input]),
                       (ins Tfm_ScalarI64:$step, Tfm_ScalarI64:$layer,
                            Variadic<Tfm_ScalarI64>:$shards, F64Attr:$rate,
                            I64Attr:$site, DenseI64ArrayAttr:$global_shape,
                            DenseI64ArrayAttr:$shard_dims)),
                       (ins OptionalAttr<I64Attr>:$zigzag_chunks));
  let results = !dag(outs, [Tfm_FloatTensor], [output]);
  let computeBody = [{
    return ::autoshard::tfm::detail::computeDropoutLocal(
        emitError, adaptor.getOperands()[0], adaptor.getShards().size(),
        adaptor.getRate().convertToDouble(), adaptor.getSiteAttr().getInt(),
        adaptor.getGlobalShape(), adaptor.getShardDims(), resultTypes);
  }];
  let builders = [
    Tfm_OrderedInferBuilder<!con(!dag(ins, ["::mlir::Value"], [input]),
                          (ins "::mlir::Value":$step, "::mlir::Value":$layer,
                               "::mlir::ValueRange":$shards, "double":$rate,
                               "int64_t":$site,
                               "::llvm::ArrayRef<int64_t>":$globalShape,
                               "::llvm::ArrayRef<int64_t>":$shardDims)),
                     input # ", step, layer, shards, ::llvm::APFloat(rate), "
                     # "site, globalShape, shardDims">
  ];
}

def Tfm_DropoutLocalOp
    : Tfm_DropoutLocalOpBase<"dropout_local", "x", "y", "dropout"> {
  let summary = "dropout of a block of a sharded tensor (global mask)";
}

def Tfm_DropoutLocalGradOp
    : Tfm_DropoutLocalOpBase<"dropout_local_grad", "dy", "dx",
                             "dropout_grad", [Tfm_Gradient]> {
  let summary = "dropout gradient of a block of a sharded tensor";
}

} // opDocGroup

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Tfm_AttentionGroup : OpDocGroup {
  let summary = "Attention";
  let description = "Causal, grouped-query attention as one op (so that context parallelism can lower it to ring attention and CUDA to a fused kernel).";
}

let opDocGroup = Tfm_AttentionGroup in {

def Tfm_AttentionOp
    : Tfm_InferredOp<"attention", [Tfm_VJP, Tfm_SequenceOrder],
                     Tfm_AttentionCost> {
  let summary = "scaled dot-product attention (causal, GQA)";
  let description = [{
    Multi-head attention with grouped KV heads. Query head `n` uses KV head
    `g = n / (N / G)`. For each batch `b`, head `n` and query `i`:

    * `s[j] = scale * sum_d q[b, i, n, d] * k[b, j, g, d]`, with
      `s[j] = -inf` for `j > i` when `causal`;
    * `lse[b, n, i] = log sum_j exp(s[j])`;
    * `out[b, i, n, d] = sum_j exp(s[j] - lse[b, n, i]) * v[b, j, g, d]`.

    Shapes: `q`: `[B, Sq, N, D]`; `k`, `v`: `[B, Sk, G, D]` (same type, same
    element type as `q`); `N % G == 0`; `causal` requires `Sq == Sk`;
    `scale > 0` (usually `1/sqrt(D)`). Results: `out` has the type of `q`;
    `lse` is `[B, N, Sq]` `f32` and is saved for the backward pass.

    FLOPs: `4 * B * N * Sq * Sk * D` (halved when causal).

    ```mlir
    %out, %lse = tfm.attention %q, %k, %v {causal, scale = 1.767767e-01 : f64}
        : (tensor<16x64x8x32xf32>, tensor<16x64x2x32xf32>, tensor<16x64x2x32xf32>)
        -> (tensor<16x64x8x32xf32>, tensor<16x8x64xf32>)
    ```
  }];
  let arguments = !con((ins Tfm_FloatTensor:$q, Tfm_FloatTensor:$k,
                       Tfm_FloatTensor:$v, UnitAttr:$causal, F64Attr:$scale),
                       (ins OptionalAttr<I64Attr>:$zigzag_chunks));
  let results = (outs Tfm_FloatTensor:$out, Tfm_FloatTensor:$lse);
  let builders = [
    Tfm_OrderedInferBuilder<(ins "::mlir::Value":$q, "::mlir::Value":$k,
                          "::mlir::Value":$v, "bool":$causal, "double":$scale),
                     "q, k, v, causal, ::llvm::APFloat(scale)">
  ];
}

def Tfm_AttentionGradOp
    : Tfm_InferredOp<"attention_grad", [Tfm_Gradient, Tfm_SequenceOrder],
                     Tfm_AttentionCost> {
  let summary = "gradient of attention";
  let description = [{
    Flash-attention style backward from the saved `out` and `lse`: with
    `p[j] = exp(s[j] - lse)` recomputed from `q`, `k`, `lse` and
    `delta = sum_d dout * out` per query row,

    * `dv[j] += sum_i p[j] * dout[i]`,
    * `ds[j] = p[j] * (sum_d dout[i] * v[j] - delta[i])`,
    * `dq[i] = scale * sum_j ds[j] * k[j]`, `dk[j] += scale * sum_i ds[j] * q[i]`

    (KV gradients summed over the query heads of each group). `dout` and
    `out` have the type of `q`, `lse` is `[B, N, Sq]` `f32`; `causal` and
    `scale` must match the forward op. `dq`, `dk`, `dv` have the types of
    `q`, `k`, `v`.

    FLOPs: `10 * B * N * Sq * Sk * D` (halved when causal).

    ```mlir
    %dq, %dk, %dv = tfm.attention_grad %dout, %q, %k, %v, %out, %lse {causal, scale = 1.767767e-01 : f64}
        : (tensor<16x64x8x32xf32>, tensor<16x64x8x32xf32>, tensor<16x64x2x32xf32>,
           tensor<16x64x2x32xf32>, tensor<16x64x8x32xf32>, tensor<16x8x64xf32>)
        -> (tensor<16x64x8x32xf32>, tensor<16x64x2x32xf32>, tensor<16x64x2x32xf32>)
    ```
  }];
  let arguments = !con((ins Tfm_FloatTensor:$dout, Tfm_FloatTensor:$q,
                       Tfm_FloatTensor:$k, Tfm_FloatTensor:$v,
                       Tfm_FloatTensor:$out, Tfm_FloatTensor:$lse,
                       UnitAttr:$causal, F64Attr:$scale),
                       (ins OptionalAttr<I64Attr>:$zigzag_chunks));
  let results = (outs Tfm_FloatTensor:$dq, Tfm_FloatTensor:$dk,
                      Tfm_FloatTensor:$dv);
  let builders = [
    Tfm_OrderedInferBuilder<(ins "::mlir::Value":$dout, "::mlir::Value":$q,
                          "::mlir::Value":$k, "::mlir::Value":$v,
                          "::mlir::Value":$out, "::mlir::Value":$lse,
                          "bool":$causal, "double":$scale),
                     "dout, q, k, v, out, lse, causal, "
                     # "::llvm::APFloat(scale)">
  ];
}

} // opDocGroup

def Tfm_RingAttentionGroup : OpDocGroup {
  let summary = "Ring attention (context parallelism)";
  let description = [{
    Per-rank ops of ring attention (Liu et al. 2023; algorithms.md §2.1,
    §2.2), emitted by `dist-partition` through the partition hooks of
    `tfm.attention` and `tfm.attention_grad` when the sequence dim is
    sharded (context parallelism); they never appear in global IR. The
    sequence is cut into `num_chunks` contiguous chunks of equal length;
    each rank of the ring holds the queries of chunk `chunk` and, at ring
    step `kv_step`, the keys and values of chunk
    `(chunk - kv_step) mod num_chunks` (received from its predecessor with
    `dist.ppermute_start` / `dist.wait` around the previous step's block,
    so that the exchange overlaps it). The causal mask compares global positions, so a block
    whose keys all follow its queries is skipped at run time (out 0, lse
    -inf), the diagonal block is causal and the others are full.
  }];
}

let opDocGroup = Tfm_RingAttentionGroup in {

def Tfm_AttentionBlockOp
    : Tfm_InferredOp<"attention_block", [Tfm_SequenceOrder],
                     Tfm_AttentionCost> {
  let summary = "one block of ring attention (global causal positions)";
  let description = [{
    `tfm.attention` of the local queries against one visiting chunk of keys
    and values: with `Sc = Sq = Sk` and `kc = (chunk - kv_step) mod
    num_chunks`, query `i` has the global position `chunk * Sc + i` and key
    `j` the position `kc * Sc + j`; when `causal`, query `i` sees key `j`
    iff `kc * Sc + j <= chunk * Sc + i`. `out` is normalised within the
    block and `lse` is its log-sum-exp; a query row that sees no key gets
    `out = 0` and `lse = -inf`. Merge blocks with `tfm.attention_merge`.

    * `q`: `[B, Sc, N, D]`; `k`, `v`: `[B, Sc, G, D]`; `chunk`:
      `tensor<i64>` (this rank's index over the ring's mesh axes).
    * `num_chunks >= 1`, `0 <= kv_step < num_chunks`; `causal`, `scale` as
      `tfm.attention`.
    * Results: `out` like `q`, `lse` `[B, N, Sc]` `f32`.

    FLOPs: as `tfm.attention` on the block, not halved (the diagonal block
    is the only partly masked one).

    ```mlir
    %o, %l = tfm.attention_block %q, %k, %v, %chunk
        {causal, kv_step = 1 : i64, num_chunks = 2 : i64, scale = 0.25 : f64}
        : (tensor<4x8x4x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32>,
           tensor<i64>) -> (tensor<4x8x4x16xf32>, tensor<4x4x8xf32>)
    ```
  }];
  let arguments = !con((ins Tfm_FloatTensor:$q, Tfm_FloatTensor:$k,
                       Tfm_FloatTensor:$v, Tfm_ScalarI64:$chunk,
                       UnitAttr:$causal, F64Attr:$scale, I64Attr:$kv_step,
                       I64Attr:$num_chunks),
                       (ins OptionalAttr<I64Attr>:$zigzag_chunks));
  let results = (outs Tfm_FloatTensor:$out, Tfm_FloatTensor:$lse);
  let builders = [
    Tfm_OrderedInferBuilder<(ins "::mlir::Value":$q, "::mlir::Value":$k,
                          "::mlir::Value":$v, "::mlir::Value":$chunk,
                          "bool":$causal, "double":$scale, "int64_t":$kvStep,
                          "int64_t":$numChunks),
                     "q, k, v, chunk, causal, ::llvm::APFloat(scale), kvStep, "
                     # "numChunks">
  ];
}

def Tfm_AttentionBlockGradOp
    : Tfm_InferredOp<"attention_block_grad",
                     [Tfm_Gradient, Tfm_SequenceOrder], Tfm_AttentionCost> {
  let summary = "gradient of one block of ring attention";
  let description = [{
    The part of `tfm.attention_grad` that one visiting chunk of keys and
    values contributes (FlashAttention-2's backward is block-decomposable
    because the probabilities `exp(s - lse)` use the final `lse`): `out`
    and `lse` are the merged forward results of the local queries, the mask
    is that of `tfm.attention_block` with the same `chunk`, `kv_step` and
    `num_chunks`. `dq` is this block's part of the queries' gradient (the
    ring sums the parts), `dk` and `dv` the gradient of the visiting keys
    and values from the local queries (summed as they travel around the
    ring back to their owner).

    ```mlir
    %dq, %dk, %dv = tfm.attention_block_grad %dout, %q, %k, %v, %out, %lse,
        %chunk {causal, kv_step = 1 : i64, num_chunks = 2 : i64, scale = 0.25 : f64}
        : (tensor<4x8x4x16xf32>, tensor<4x8x4x16xf32>, tensor<4x8x2x16xf32>,
           tensor<4x8x2x16xf32>, tensor<4x8x4x16xf32>, tensor<4x4x8xf32>,
           tensor<i64>)
        -> (tensor<4x8x4x16xf32>, tensor<4x8x2x16xf32>, tensor<4x8x2x16xf32>)
    ```
  }];
  let arguments = !con((ins Tfm_FloatTensor:$dout, Tfm_FloatTensor:$q,
                       Tfm_FloatTensor:$k, Tfm_FloatTensor:$v,
                       Tfm_FloatTensor:$out, Tfm_FloatTensor:$lse,
                       Tfm_ScalarI64:$chunk, UnitAttr:$causal, F64Attr:$scale,
                       I64Attr:$kv_step, I64Attr:$num_chunks),
                       (ins OptionalAttr<I64Attr>:$zigzag_chunks));
  let results = (outs Tfm_FloatTensor:$dq, Tfm_FloatTensor:$dk,
                      Tfm_FloatTensor:$dv);
  let builders = [
    Tfm_OrderedInferBuilder<(ins "::mlir::Value":$dout, "::mlir::Value":$q,
                          "::mlir::Value":$k, "::mlir::Value":$v,
                          "::mlir::Value":$out, "::mlir::Value":$lse,
                          "::mlir::Value":$chunk, "bool":$causal,
                          "double":$scale, "int64_t":$kvStep,
                          "int64_t":$numChunks),
                     "dout, q, k, v, out, lse, chunk, causal, "
                     # "::llvm::APFloat(scale), kvStep, numChunks">
  ];
}

def Tfm_AttentionMergeOp : Tfm_InferredOp<"attention_merge"> {
  let summary = "log-sum-exp merge of two partial attention results";
  let description = [{
    Merges the results of attention over two disjoint key sets of the same
    queries (algorithms.md §2.1): `lse = log(exp(lse_a) + exp(lse_b))`,
    computed as `max + log1p(exp(min - max))`, and
    `out = exp(lse_a - lse) * out_a + exp(lse_b - lse) * out_b`. A side with
    `lse = -inf` (no visible key) weighs 0; two such sides give `out = 0`,
    `lse = -inf` (never NaN).

    * `out_a`, `out_b`: `[B, S, N, D]` (same type); `lse_a`, `lse_b`:
      `[B, N, S]` `f32`. Results: the types of `out_a` and `lse_a`.

    ```mlir
    %o, %l = tfm.attention_merge %o0, %l0, %o1, %l1
        : (tensor<4x8x4x16xf32>, tensor<4x4x8xf32>, tensor<4x8x4x16xf32>,
           tensor<4x4x8xf32>) -> (tensor<4x8x4x16xf32>, tensor<4x4x8xf32>)
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$out_a, Tfm_FloatTensor:$lse_a,
                       Tfm_FloatTensor:$out_b, Tfm_FloatTensor:$lse_b);
  let results = (outs Tfm_FloatTensor:$out, Tfm_FloatTensor:$lse);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$outA, "::mlir::Value":$lseA,
                          "::mlir::Value":$outB, "::mlir::Value":$lseB),
                     "outA, lseA, outB, lseB">
  ];
}

} // opDocGroup

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

def Tfm_LossGroup : OpDocGroup {
  let summary = "Loss";
  let description = "Softmax cross-entropy with vocabulary padding.";
}

let opDocGroup = Tfm_LossGroup in {

def Tfm_CrossEntropyOp
    : Tfm_InferredOp<"cross_entropy", [Tfm_VJP, Tfm_TrainingLoss]> {
  let summary = "mean softmax cross-entropy over all tokens";
  let description = [{
    `loss = mean_{i...} (logsumexp_{c < V'} logits[i..., c] - logits[i..., labels[i...]])`
    with `V' = vocab_size` if set, else `V`: classes `>= vocab_size` are
    vocabulary padding (for vocab-parallel sharding) and masked to `-inf`.

    * `logits`: `[..., V]` float; `labels`: `[...]` (`i32`/`i64`, the
      leading dims of `logits`), values in `[0, V')`.
    * `loss`: `tensor<f32>`. `1 <= vocab_size <= V`.

    FLOPs: about `5` per logit. Sharding `V` needs the op's partition hook
    (a max and a sum across ranks), not a per-dim rule.

    ```mlir
    %loss = tfm.cross_entropy %logits, %labels {vocab_size = 65 : i64}
        : (tensor<16x64x72xf32>, tensor<16x64xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$logits, Tfm_IndexTensor:$labels,
                       OptionalAttr<I64Attr>:$vocab_size);
  let results = (outs Tfm_ScalarF32:$loss);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$logits, "::mlir::Value":$labels,
                          CArg<"std::optional<int64_t>", "std::nullopt">:$vocabSize),
                     "logits, labels, vocabSize ? "
                     # "$_builder.getI64IntegerAttr(*vocabSize) : "
                     # "::mlir::IntegerAttr()">
  ];
}

def Tfm_CrossEntropyGradOp
    : Tfm_InferredOp<"cross_entropy_grad",
                     [Tfm_Gradient, Tfm_LossGradientSeed]> {
  let summary = "gradient of cross_entropy";
  let description = [{
    `dlogits[i..., c] = dloss / T * (softmax(logits[i...])[c] - (c == labels[i...]))`
    with `T` the number of tokens (the product of the dims of `labels`) and
    the softmax over the `vocab_size` real classes (padded classes get 0).

    `dloss`: `tensor<f32>`; `logits`, `labels`, `vocab_size` as in
    `tfm.cross_entropy`; `dlogits` has the type of `logits`.

    FLOPs: about `5` per logit.

    ```mlir
    %dlogits = tfm.cross_entropy_grad %dloss, %logits, %labels {vocab_size = 65 : i64}
        : (tensor<f32>, tensor<16x64x72xf32>, tensor<16x64xi32>) -> tensor<16x64x72xf32>
    ```
  }];
  let arguments = (ins Tfm_ScalarF32:$dloss, Tfm_FloatTensor:$logits,
                       Tfm_IndexTensor:$labels,
                       OptionalAttr<I64Attr>:$vocab_size);
  let results = (outs Tfm_FloatTensor:$dlogits);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$dloss, "::mlir::Value":$logits,
                          "::mlir::Value":$labels,
                          CArg<"std::optional<int64_t>", "std::nullopt">:$vocabSize),
                     "dloss, logits, labels, vocabSize ? "
                     # "$_builder.getI64IntegerAttr(*vocabSize) : "
                     # "::mlir::IntegerAttr()">
  ];
}

} // opDocGroup

//===----------------------------------------------------------------------===//
// MoE (per-sequence routing statistics and capacity)
//===----------------------------------------------------------------------===//

def Tfm_MoeGroup : OpDocGroup {
  let summary = "Mixture of experts";
  let description = "Top-k routing, capacity-bounded dispatch and combine, and the load-balancing loss; routing statistics and capacity are per sequence.";
}

let opDocGroup = Tfm_MoeGroup in {

def Tfm_MoeRouterOp : Tfm_InferredOp<"moe_router", [Tfm_VJP]> {
  let summary = "top-k softmax router";
  let description = [{
    `p = softmax_e(logits[b, s, :])`; `expert_ids[b, s, :]` are the `top_k`
    experts with the largest `p` in decreasing order (ties to the lower
    expert index) and `gates[b, s, j] = p[expert_ids[b, s, j]]`, divided by
    `sum_j gates[b, s, j]` when `renormalize` (Mixtral) is set.

    * `logits`: `[B, S, E]`; `1 <= top_k <= E`.
    * `gates`: `[B, S, K]`, element type of `logits`; `expert_ids`:
      `[B, S, K]` `i32`, with `K = top_k`.

    FLOPs: about `5 * E + K * E` per token.

    ```mlir
    %gates, %ids = tfm.moe_router %logits {renormalize, top_k = 2 : i64}
        : (tensor<16x64x8xf32>) -> (tensor<16x64x2xf32>, tensor<16x64x2xi32>)
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$logits, I64Attr:$top_k,
                       UnitAttr:$renormalize);
  let results = (outs Tfm_FloatTensor:$gates, Tfm_IndexTensor:$expert_ids);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$logits, "int64_t":$topK,
                          CArg<"bool", "false">:$renormalize),
                     "logits, topK, renormalize">
  ];
}

def Tfm_MoeRouterGradOp : Tfm_InferredOp<"moe_router_grad", [Tfm_Gradient]> {
  let summary = "gradient of moe_router through the gates";
  let description = [{
    The selection is piecewise constant, so only the gates carry gradient.
    With `p = softmax(logits[b, s, :])` and `t[j] = expert_ids[b, s, j]`:
    `dp[t[j]] = dgates[j]` (or, with `renormalize`,
    `dp[t[j]] = (dgates[j] - sum_l dgates[l] * gates[l]) / sum_l p[t[l]]`),
    zero elsewhere, and `dlogits = p * (dp - sum_e p * dp)`.

    * `dgates`: `[B, S, K]`, element type of `logits`; `logits`:
      `[B, S, E]`; `expert_ids`: `[B, S, K]`, `1 <= K <= E`.
    * `dlogits`: type of `logits`. `renormalize` must match the forward op.

    FLOPs: about `4 * E` per token.

    ```mlir
    %dlogits = tfm.moe_router_grad %dgates, %logits, %ids {renormalize}
        : (tensor<16x64x2xf32>, tensor<16x64x8xf32>, tensor<16x64x2xi32>) -> tensor<16x64x8xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$dgates, Tfm_FloatTensor:$logits,
                       Tfm_IndexTensor:$expert_ids, UnitAttr:$renormalize);
  let results = (outs Tfm_FloatTensor:$dlogits);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$dgates, "::mlir::Value":$logits,
                          "::mlir::Value":$expertIds,
                          CArg<"bool", "false">:$renormalize),
                     "dgates, logits, expertIds, renormalize">
  ];
}

def Tfm_MoeAuxLossOp : Tfm_InferredOp<"moe_aux_loss", [Tfm_VJP]> {
  let summary = "Switch-style load-balancing loss";
  let description = [{
    Per sequence `b`, with `p = softmax_e(logits[b, s, :])`:
    `f_e = #{(s, j) : expert_ids[b, s, j] == e} / (S * K)` (fraction of
    routed slots) and `P_e = mean_s p[e]`;
    `loss = mean_b (E * sum_e f_e * P_e)` (1 for perfectly balanced routing).

    * `logits`: `[B, S, E]`; `expert_ids`: `[B, S, K]`, `1 <= K <= E`.
    * `loss`: `tensor<f32>`. Only `P` carries gradient.

    FLOPs: about `5 * E` per token.

    ```mlir
    %aux = tfm.moe_aux_loss %logits, %ids : (tensor<16x64x8xf32>, tensor<16x64x2xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$logits, Tfm_IndexTensor:$expert_ids);
  let results = (outs Tfm_ScalarF32:$loss);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$logits, "::mlir::Value":$expertIds),
                     "logits, expertIds">
  ];
}

def Tfm_MoeAuxLossGradOp
    : Tfm_InferredOp<"moe_aux_loss_grad", [Tfm_Gradient]> {
  let summary = "gradient of moe_aux_loss";
  let description = [{
    `dP_e = dloss * E * f_e / (B * S)` for every token of sequence `b`, and
    `dlogits[b, s, :] = p * (dP - sum_e p * dP)` (softmax backward).

    `dloss`: `tensor<f32>`; `logits`, `expert_ids` as in `tfm.moe_aux_loss`;
    `dlogits` has the type of `logits`.

    FLOPs: about `4 * E` per token.

    ```mlir
    %dlogits = tfm.moe_aux_loss_grad %daux, %logits, %ids
        : (tensor<f32>, tensor<16x64x8xf32>, tensor<16x64x2xi32>) -> tensor<16x64x8xf32>
    ```
  }];
  let arguments = (ins Tfm_ScalarF32:$dloss, Tfm_FloatTensor:$logits,
                       Tfm_IndexTensor:$expert_ids);
  let results = (outs Tfm_FloatTensor:$dlogits);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$dloss, "::mlir::Value":$logits,
                          "::mlir::Value":$expertIds),
                     "dloss, logits, expertIds">
  ];
}

def Tfm_MoeDispatchOp
    : Tfm_InferredOp<"moe_dispatch", [Tfm_VJP, Tfm_SequenceOrder]> {
  let summary = "scatter tokens into per-expert capacity buffers";
  let description = [{
    For each sequence `b`, slots of expert `e` are filled in order of token
    `s`, then choice `j`: the `c`-th pair `(s, j)` with
    `expert_ids[b, s, j] == e` writes `buf[e, b, c, :] = x[b, s, :]` if
    `c < capacity`; overflowing pairs are dropped and unused slots are zero.
    With `dropless` (a dropless layer whose buffers are bounded by
    `capacity`, the model's maximum tokens per expert and sequence) no pair
    is ever dropped: a pair past the capacity is a runtime error naming the
    sequence, the expert and its token count, so that the result is the
    unbounded dropless routing or nothing. `capacity = S` is the exact
    bound (each token picks `K` distinct experts), which never overflows.
    With `zigzag_chunks` (a sequence in zig-zag order,
    TfmSequenceOrderOpInterface) the tokens are taken in the order of their
    original positions, so that the same tokens are kept as in the original
    order; `moe_dispatch_grad`, `moe_combine` and `moe_combine_grad` assign
    the slots alike.

    * `x`: `[B, S, H]`; `expert_ids`: `[B, S, K]`, `1 <= K <= E`.
    * `buf`: `[E, B, C, H]`, `E = num_experts >= 1`, `C = capacity >= 1`,
      element type of `x`. Expert matmuls then take `[E, B*C, H]` (after a
      reshape) against `[E, H, F]` weights. The op routes its sequences
      over all `E` experts (`E` is never split here); expert parallelism
      reshards `buf` from `B` split on the data-parallel ranks to `E` split
      on `ep` by one `dist.all_to_all` (the fixed-capacity, drop-and-pad
      form of Megatron's all-to-all token dispatcher).

    No FLOPs; `B * S * K * H` elements moved.

    ```mlir
    %buf = tfm.moe_dispatch %x, %ids {capacity = 40 : i64, num_experts = 8 : i64}
        : (tensor<16x64x128xf32>, tensor<16x64x2xi32>) -> tensor<8x16x40x128xf32>
    ```
  }];
  let arguments = !con((ins Tfm_FloatTensor:$x, Tfm_IndexTensor:$expert_ids,
                       I64Attr:$num_experts, I64Attr:$capacity,
                       UnitAttr:$dropless),
                       (ins OptionalAttr<I64Attr>:$zigzag_chunks));
  let results = (outs Tfm_FloatTensor:$buf);
  let builders = [
    Tfm_OrderedInferBuilder<(ins "::mlir::Value":$x, "::mlir::Value":$expertIds,
                          "int64_t":$numExperts, "int64_t":$capacity,
                          CArg<"bool", "false">:$dropless),
                     "x, expertIds, numExperts, "
                     # "capacity, dropless">
  ];
}

def Tfm_MoeDispatchGradOp
    : Tfm_InferredOp<"moe_dispatch_grad", [Tfm_Gradient, Tfm_SequenceOrder]> {
  let summary = "gradient of moe_dispatch (gather back)";
  let description = [{
    `dx[b, s, :] = sum_j dbuf[e, b, c, :]` over the choices `j` of token `s`
    that got a slot `c` of expert `e = expert_ids[b, s, j]` (slot assignment
    recomputed exactly as in `tfm.moe_dispatch`); dropped choices contribute
    zero.

    * `dbuf`: `[E, B, C, H]` with `C = capacity >= 1`; `expert_ids`:
      `[B, S, K]` (same `B`), `1 <= K <= E`.
    * `dx`: `[B, S, H]` (`B`, `S` from `expert_ids`, `H` from `dbuf`),
      element type of `dbuf`.

    FLOPs: `B * S * K * H` additions.

    ```mlir
    %dx = tfm.moe_dispatch_grad %dbuf, %ids {capacity = 40 : i64}
        : (tensor<8x16x40x128xf32>, tensor<16x64x2xi32>) -> tensor<16x64x128xf32>
    ```
  }];
  let arguments = !con((ins Tfm_FloatTensor:$dbuf, Tfm_IndexTensor:$expert_ids,
                       I64Attr:$capacity),
                       (ins OptionalAttr<I64Attr>:$zigzag_chunks));
  let results = (outs Tfm_FloatTensor:$dx);
  let builders = [
    Tfm_OrderedInferBuilder<(ins "::mlir::Value":$dbuf, "::mlir::Value":$expertIds,
                          "int64_t":$capacity),
                     "dbuf, expertIds, capacity">
  ];
}

def Tfm_MoeCombineOp
    : Tfm_InferredOp<"moe_combine", [Tfm_VJP, Tfm_SequenceOrder]> {
  let summary = "gate-weighted gather of expert outputs";
  let description = [{
    `y[b, s, :] = sum_j gates[b, s, j] * buf[e, b, c, :]` over the choices
    `j` of token `s` that got slot `c` of expert `e = expert_ids[b, s, j]`
    (slot assignment as in `tfm.moe_dispatch` with `C` from `buf`); dropped
    choices contribute zero (the residual connection carries the token).

    * `buf`: `[E, B, C, H]`; `gates`, `expert_ids`: `[B, S, K]` (same `B`),
      `1 <= K <= E`; `gates` has the element type of `buf`.
    * `y`: `[B, S, H]`, element type of `buf`.

    FLOPs: `2 * B * S * K * H`.

    ```mlir
    %y = tfm.moe_combine %buf, %gates, %ids
        : (tensor<8x16x40x128xf32>, tensor<16x64x2xf32>, tensor<16x64x2xi32>) -> tensor<16x64x128xf32>
    ```
  }];
  let arguments = !con((ins Tfm_FloatTensor:$buf, Tfm_FloatTensor:$gates,
                       Tfm_IndexTensor:$expert_ids),
                       (ins OptionalAttr<I64Attr>:$zigzag_chunks));
  let results = (outs Tfm_FloatTensor:$y);
  let builders = [
    Tfm_OrderedInferBuilder<(ins "::mlir::Value":$buf, "::mlir::Value":$gates,
                          "::mlir::Value":$expertIds),
                     "buf, gates, expertIds">
  ];
}

def Tfm_MoeCombineGradOp
    : Tfm_InferredOp<"moe_combine_grad", [Tfm_Gradient, Tfm_SequenceOrder]> {
  let summary = "gradient of moe_combine";
  let description = [{
    For each choice `j` of token `s` that got slot `c` of expert `e`:
    `dbuf[e, b, c, :] = gates[b, s, j] * dy[b, s, :]` and
    `dgates[b, s, j] = sum_h dy[b, s, h] * buf[e, b, c, h]`; everything else
    is zero.

    `dy`: `[B, S, H]` (the type of `tfm.moe_combine`'s result); `buf`,
    `gates`, `expert_ids` as in `tfm.moe_combine`. `dbuf` has the type of
    `buf`, `dgates` that of `gates`.

    FLOPs: `4 * B * S * K * H`.

    ```mlir
    %dbuf, %dgates = tfm.moe_combine_grad %dy, %buf, %gates, %ids
        : (tensor<16x64x128xf32>, tensor<8x16x40x128xf32>, tensor<16x64x2xf32>, tensor<16x64x2xi32>)
        -> (tensor<8x16x40x128xf32>, tensor<16x64x2xf32>)
    ```
  }];
  let arguments = !con((ins Tfm_FloatTensor:$dy, Tfm_FloatTensor:$buf,
                       Tfm_FloatTensor:$gates, Tfm_IndexTensor:$expert_ids),
                       (ins OptionalAttr<I64Attr>:$zigzag_chunks));
  let results = (outs Tfm_FloatTensor:$dbuf, Tfm_FloatTensor:$dgates);
  let builders = [
    Tfm_OrderedInferBuilder<(ins "::mlir::Value":$dy, "::mlir::Value":$buf,
                          "::mlir::Value":$gates, "::mlir::Value":$expertIds),
                     "dy, buf, gates, expertIds">
  ];
}

} // opDocGroup

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

def Tfm_OptimizerGroup : OpDocGroup {
  let summary = "Optimizer";
  let description = "Global gradient norm, clipping and AdamW.";
}

let opDocGroup = Tfm_OptimizerGroup in {

def Tfm_SumSquaresOp : Tfm_InferredOp<"sum_squares", [Tfm_OptimizerStep,
    Tfm_OptimizerStatistic, Tfm_SumOverOperands]> {
  let summary = "sum of squares of all elements of all operands";
  let description = [{
    `result = sum_t sum_i g_t[i]^2`, accumulated in `f32`, over one or more
    float tensors of any shapes and element types (the squared global
    gradient norm).

    FLOPs: `2` per element.

    ```mlir
    %ss = tfm.sum_squares %g0, %g1 : (tensor<128x512xf32>, tensor<512xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Tfm_FloatTensor>:$inputs);
  let results = (outs Tfm_ScalarF32:$result);
  let builders = [
    // `inputs` goes to the generated (types, operands, attributes) builder.
    Tfm_InferBuilder<(ins "::mlir::ValueRange":$inputs), "inputs">
  ];
}

def Tfm_ClipCoefOp
    : Tfm_InferredOp<"clip_coef", [Tfm_OptimizerStep, Tfm_OptimizerStatistic]> {
  let summary = "global-norm gradient clipping coefficient";
  let description = [{
    `norm = sqrt(sumsq)`, `coef = min(1, max_norm / (norm + 1e-6))`, with
    `max_norm > 0`. `sumsq`, `coef` and `norm` are `tensor<f32>`; `coef` is
    the `grad_scale` of `tfm.adamw`.

    ```mlir
    %coef, %norm = tfm.clip_coef %ss {max_norm = 1.000000e+00 : f64}
        : (tensor<f32>) -> (tensor<f32>, tensor<f32>)
    ```
  }];
  let arguments = (ins Tfm_ScalarF32:$sumsq, F64Attr:$max_norm);
  let results = (outs Tfm_ScalarF32:$coef, Tfm_ScalarF32:$norm);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$sumsq, "double":$maxNorm),
                     "sumsq, ::llvm::APFloat(maxNorm)">
  ];
}

def Tfm_AdamwOp : Tfm_InferredOp<"adamw", [Tfm_OptimizerStep,
    DeclareOpInterfaceMethods<TfmParameterUpdateOpInterface>]> {
  let summary = "AdamW update of one parameter";
  let description = [{
    With `g = grad * grad_scale` and `t = step` (1-based):

    * `new_m = beta1 * m + (1 - beta1) * g`
    * `new_v = beta2 * v + (1 - beta2) * g^2`
    * `new_param = param - lr * (new_m / (1 - beta1^t)
      / (sqrt(new_v / (1 - beta2^t)) + epsilon) + weight_decay * param)`

    * `param`, `m`, `v`: same type; `grad`: same shape, any float element
      type. `lr`, `grad_scale`: `tensor<f32>`; `step`: `tensor<i64>`.
    * `beta1`, `beta2` in `[0, 1)`, `epsilon > 0`, `weight_decay >= 0`.
    * Results have the types of `param`, `m`, `v`.

    FLOPs: about `12` per element.

    ```mlir
    %p1, %m1, %v1 = tfm.adamw %p, %g, %m, %v, %lr, %step, %coef
        {beta1 = 9.000000e-01 : f64, beta2 = 9.500000e-01 : f64,
         epsilon = 1.000000e-08 : f64, weight_decay = 1.000000e-01 : f64}
        : (tensor<128x512xf32>, tensor<128x512xf32>, tensor<128x512xf32>, tensor<128x512xf32>,
           tensor<f32>, tensor<i64>, tensor<f32>)
        -> (tensor<128x512xf32>, tensor<128x512xf32>, tensor<128x512xf32>)
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$param, Tfm_FloatTensor:$grad,
                       Tfm_FloatTensor:$m, Tfm_FloatTensor:$v,
                       Tfm_ScalarF32:$lr, Tfm_ScalarI64:$step,
                       Tfm_ScalarF32:$grad_scale, F64Attr:$beta1,
                       F64Attr:$beta2, F64Attr:$epsilon,
                       F64Attr:$weight_decay);
  let results = (outs Tfm_FloatTensor:$new_param, Tfm_FloatTensor:$new_m,
                      Tfm_FloatTensor:$new_v);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$param, "::mlir::Value":$grad,
                          "::mlir::Value":$m, "::mlir::Value":$v,
                          "::mlir::Value":$lr, "::mlir::Value":$step,
                          "::mlir::Value":$gradScale, "double":$beta1,
                          "double":$beta2, "double":$epsilon,
                          "double":$weightDecay),
                     "param, grad, m, v, lr, step, gradScale, "
                     # "::llvm::APFloat(beta1), "
                     # "::llvm::APFloat(beta2), "
                     # "::llvm::APFloat(epsilon), "
                     # "::llvm::APFloat(weightDecay)">
  ];
}

} // opDocGroup

//===----------------------------------------------------------------------===//
// Vocab-parallel local ops (per-rank shapes; emitted by dist-partition)
//===----------------------------------------------------------------------===//

def Tfm_VocabParallelGroup : OpDocGroup {
  let summary = "Vocab-parallel local ops";
  let description = [{
    Per-rank forms of the embedding and the cross-entropy when the vocabulary
    dim is sharded (Megatron's vocab-parallel embedding and cross-entropy).
    `dist-partition` emits them through the partition hooks of
    `tfm.embedding`, `tfm.embedding_grad`, `tfm.cross_entropy` and
    `tfm.cross_entropy_grad`; they never appear in global IR. Each takes
    `shard`, a `tensor<i64>` holding the index of this rank's vocabulary
    shard (from `dist.axis_index`): the rank owns the global classes/rows
    `[shard * Vl, (shard + 1) * Vl)` where `Vl` is the local vocabulary size
    (the size of the local table or logits dim). With `shard = 0` and the
    whole vocabulary they compute what the global ops compute.
  }];
}

let opDocGroup = Tfm_VocabParallelGroup in {

def Tfm_VocabEmbeddingOp : Tfm_InferredOp<"vocab_embedding"> {
  let summary = "embedding lookup of the locally owned vocabulary rows";
  let description = [{
    With `Vl` the rows of the local `table` and `o = shard * Vl`:
    `out[i..., h] = table[ids[i...] - o, h]` if `o <= ids[i...] < o + Vl`,
    else `0`. Summing `out` over the ranks that hold the other shards (a
    partial sum over the vocabulary axes) gives `tfm.embedding`.

    * `ids`: `[...]` global token ids (`i32`/`i64`); `table`: `[Vl, H]`;
      `shard`: `tensor<i64>`.
    * `out`: `[..., H]`, element type of `table`.

    ```mlir
    %h = tfm.vocab_embedding %ids, %wte_shard, %shard
        : (tensor<8x64xi32>, tensor<32x128xf32>, tensor<i64>) -> tensor<8x64x128xf32>
    ```
  }];
  let arguments = (ins Tfm_IndexTensor:$ids, Tfm_FloatTensor:$table,
                       Tfm_ScalarI64:$shard);
  let results = (outs Tfm_FloatTensor:$out);
  let computeBody = [{
    return ::autoshard::tfm::detail::computeEmbedding(
        emitError, adaptor.getIds(), adaptor.getTable(), "[Vl, H]",
        resultTypes);
  }];
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$ids, "::mlir::Value":$table,
                          "::mlir::Value":$shard),
                     "ids, table, shard">
  ];
}

def Tfm_VocabEmbeddingGradOp
    : Tfm_InferredOp<"vocab_embedding_grad", [Tfm_Gradient]> {
  let summary = "embedding gradient of the locally owned vocabulary rows";
  let description = [{
    With `Vl = num_embeddings` (the local rows) and `o = shard * Vl`:
    `dtable[v, h] = sum_{i... : ids[i...] == o + v} dy[i..., h]` for
    `0 <= v < Vl`; ids outside the shard contribute nothing.

    * `ids`: `[...]` global token ids; `dy`: `[..., H]`; `shard`:
      `tensor<i64>`; `num_embeddings >= 1`.
    * `dtable`: `[Vl, H]`, element type of `dy`.

    ```mlir
    %dwte = tfm.vocab_embedding_grad %ids, %dh, %shard {num_embeddings = 32 : i64}
        : (tensor<8x64xi32>, tensor<8x64x128xf32>, tensor<i64>) -> tensor<32x128xf32>
    ```
  }];
  let arguments = (ins Tfm_IndexTensor:$ids, Tfm_FloatTensor:$dy,
                       Tfm_ScalarI64:$shard, I64Attr:$num_embeddings);
  let results = (outs Tfm_FloatTensor:$dtable);
  let computeBody = [{
    return ::autoshard::tfm::detail::computeEmbeddingGrad(
        emitError, adaptor.getDy(), adaptor.getIds(),
        adaptor.getNumEmbeddingsAttr().getInt(), resultTypes);
  }];
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$ids, "::mlir::Value":$dy,
                          "::mlir::Value":$shard, "int64_t":$numEmbeddings),
                     "ids, dy, shard, numEmbeddings">
  ];
}

def Tfm_VocabCeMaxOp : Tfm_InferredOp<"vocab_ce_max"> {
  let summary = "local max of a vocabulary shard of logits (real classes)";
  let description = [{
    With `Vl` the last dim of `logits` and `o = shard * Vl`:
    `max[i...] = max_{c < Vl, o + c < vocab_size} logits[i..., c]`, or `-inf`
    when the shard holds no real class (all padding). A `max` all-reduce
    over the vocabulary axes gives the row max of the whole vocabulary.

    * `logits`: `[..., Vl]` float; `shard`: `tensor<i64>`; `vocab_size >= 1`
      is the global number of real classes.
    * `max`: `[...]` `f32`.

    ```mlir
    %mx = tfm.vocab_ce_max %logits, %shard {vocab_size = 65 : i64}
        : (tensor<8x64x36xf32>, tensor<i64>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$logits, Tfm_ScalarI64:$shard,
                       I64Attr:$vocab_size);
  let results = (outs Tfm_FloatTensor:$max);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$logits, "::mlir::Value":$shard,
                          "int64_t":$vocabSize),
                     "logits, shard, vocabSize">
  ];
}

def Tfm_VocabCeStatsOp : Tfm_InferredOp<"vocab_ce_stats"> {
  let summary = "local softmax statistics of a vocabulary shard of logits";
  let description = [{
    With `Vl` the last dim of `logits`, `o = shard * Vl` and `max` the global
    row max (after the `max` all-reduce):

    * `stats[i..., 0] = sum_{c < Vl, o + c < vocab_size} exp(logits[i..., c] - max[i...])`
    * `stats[i..., 1] = logits[i..., labels[i...] - o]` if
      `o <= labels[i...] < o + Vl`, else `0` (the target logit, owned by
      exactly one shard).

    A `sum` all-reduce over the vocabulary axes gives the global sum of
    exponentials and the target logit; the logits themselves never move.

    * `logits`: `[..., Vl]` float; `labels`: `[...]` (`i32`/`i64`, global
      class ids); `max`: `[...]` `f32`; `shard`: `tensor<i64>`.
    * `stats`: `[..., 2]` `f32`.

    ```mlir
    %st = tfm.vocab_ce_stats %logits, %labels, %mx, %shard {vocab_size = 65 : i64}
        : (tensor<8x64x36xf32>, tensor<8x64xi32>, tensor<8x64xf32>, tensor<i64>) -> tensor<8x64x2xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$logits, Tfm_IndexTensor:$labels,
                       Tfm_FloatTensor:$max, Tfm_ScalarI64:$shard,
                       I64Attr:$vocab_size);
  let results = (outs Tfm_FloatTensor:$stats);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$logits, "::mlir::Value":$labels,
                          "::mlir::Value":$max, "::mlir::Value":$shard,
                          "int64_t":$vocabSize),
                     "logits, labels, max, shard, vocabSize">
  ];
}

def Tfm_VocabCeLossOp : Tfm_InferredOp<"vocab_ce_loss", [Tfm_TrainingLoss]> {
  let summary = "cross-entropy from reduced softmax statistics";
  let description = [{
    `loss = sum_{i...} (log(stats[i..., 0]) + max[i...] - stats[i..., 1]) / num_tokens`
    over the local tokens, with `num_tokens` the GLOBAL token count (the
    product of the global label dims). When the tokens are sharded (over the
    data-parallel axes), the per-rank losses are a partial sum whose total is
    the mean of `tfm.cross_entropy`.

    * `stats`: `[..., 2]` `f32` (after the `sum` all-reduce); `max`: `[...]`
      `f32`; `num_tokens` >= the local token count.
    * `loss`: `tensor<f32>`.

    ```mlir
    %loss = tfm.vocab_ce_loss %st, %mx {num_tokens = 1024 : i64}
        : (tensor<8x64x2xf32>, tensor<8x64xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$stats, Tfm_FloatTensor:$max,
                       I64Attr:$num_tokens);
  let results = (outs Tfm_ScalarF32:$loss);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$stats, "::mlir::Value":$max,
                          "int64_t":$numTokens),
                     "stats, max, numTokens">
  ];
}

def Tfm_VocabCeGradOp
    : Tfm_InferredOp<"vocab_ce_grad", [Tfm_Gradient, Tfm_LossGradientSeed]> {
  let summary = "cross-entropy gradient of a vocabulary shard of logits";
  let description = [{
    With `Vl` the last dim of `logits`, `o = shard * Vl`, `max` and `stats`
    the reduced statistics:
    `dlogits[i..., c] = dloss / num_tokens * (exp(logits[i..., c] - max[i...]) / stats[i..., 0] - (o + c == labels[i...]))`
    for real classes (`o + c < vocab_size`), `0` for padded ones.
    `num_tokens` is the GLOBAL token count.

    * `dloss`: `tensor<f32>`; `logits`: `[..., Vl]`; `labels`: `[...]`;
      `max`: `[...]` `f32`; `stats`: `[..., 2]` `f32`; `shard`:
      `tensor<i64>`.
    * `dlogits`: type of `logits`.

    ```mlir
    %dl = tfm.vocab_ce_grad %dloss, %logits, %labels, %mx, %st, %shard
        {num_tokens = 1024 : i64, vocab_size = 65 : i64}
        : (tensor<f32>, tensor<8x64x36xf32>, tensor<8x64xi32>, tensor<8x64xf32>,
           tensor<8x64x2xf32>, tensor<i64>) -> tensor<8x64x36xf32>
    ```
  }];
  let arguments = (ins Tfm_ScalarF32:$dloss, Tfm_FloatTensor:$logits,
                       Tfm_IndexTensor:$labels, Tfm_FloatTensor:$max,
                       Tfm_FloatTensor:$stats, Tfm_ScalarI64:$shard,
                       I64Attr:$vocab_size, I64Attr:$num_tokens);
  let results = (outs Tfm_FloatTensor:$dlogits);
  let builders = [
    Tfm_InferBuilder<(ins "::mlir::Value":$dloss, "::mlir::Value":$logits,
                          "::mlir::Value":$labels, "::mlir::Value":$max,
                          "::mlir::Value":$stats, "::mlir::Value":$shard,
                          "int64_t":$vocabSize, "int64_t":$numTokens),
                     "dloss, logits, labels, max, stats, shard, vocabSize, "
                     # "numTokens">
  ];
}

} // opDocGroup

#endif // AUTOSHARD_DIALECT_TFM_IR_TFMOPS_TD
