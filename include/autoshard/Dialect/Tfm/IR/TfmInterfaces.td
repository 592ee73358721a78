//===- TfmInterfaces.td - Op knowledge for later passes ----*- tablegen -*-===//
//
// Op interfaces through which compiler passes learn an op's gradient rule
// and cost without special-casing ops by name. Sharding knowledge is the
// dist dialect's contract (Dist/Interfaces/ShardingInterfaces.td), which
// the tfm ops implement as external models (lib/Dialect/Tfm/Sharding).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_TFM_IR_TFMINTERFACES_TD
#define AUTOSHARD_DIALECT_TFM_IR_TFMINTERFACES_TD

include "mlir/IR/OpBase.td"

def TfmVJPOpInterface : OpInterface<"TfmVJPOpInterface"> {
  let cppNamespace = "::autoshard::tfm";
  let description = [{
    Vector-Jacobian product rule of an op, used by `tfm-autodiff`. Given the
    gradients of the op's results (a null Value for a result that does not
    reach the loss), the rule emits ops at the builder's insertion point that
    compute the gradient of every operand, and appends one Value per operand
    to `operandGrads` (a null Value for a non-differentiable operand such as
    token ids). The emitted ops may use the op's operands and results, which
    `tfm-autodiff` keeps alive as saved residuals. `tfm-autodiff` calls the
    rule only when at least one result gradient is non-null; a rule that
    cannot handle the gradients it gets (e.g. one of attention's log-sum-exp)
    reports an error on the op and fails. Ops without a rule (gradient and
    optimizer ops: no second-order differentiation) do not implement the
    interface.
  }];
  let methods = [
    InterfaceMethod<
      "Emits the gradients of all operands given the gradients of all results.",
      "::llvm::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

def TfmCostOpInterface : OpInterface<"TfmCostOpInterface"> {
  let cppNamespace = "::autoshard::tfm";
  let description = [{
    FLOP and memory-traffic counts of one execution of the op on the shapes
    of its operands (global shapes before partitioning, per-rank shapes
    after). FLOPs count a multiply-add as 2; bytes count every operand read
    and every result written once (the roofline's minimum traffic).
  }];
  let methods = [
    InterfaceMethod<"Returns FLOPs (multiply-add = 2) and bytes moved.",
      "::autoshard::tfm::OpCost", "getCost">,
    InterfaceMethod<[{
        Returns the roofline the op's kernel follows: a GEMM, a fused
        attention kernel, or memory-bound (the default).
      }], "::autoshard::tfm::RooflineKind", "getRooflineKind", (ins), [{}],
      [{ return ::autoshard::tfm::RooflineKind::Memory; }]>,
    InterfaceMethod<[{
        Returns the GEMM problem of a GEMM-like op on its operand shapes
        (elements); nullopt (the default) for other ops.
      }], "std::optional<::autoshard::tfm::GemmShape>", "getGemmShape",
      (ins), [{}], [{ return std::nullopt; }]>,
    InterfaceMethod<[{
        Returns the problem of an attention op's kernel on its operand
        shapes (score matrices, their sizes, the causal mask); nullopt (the
        default) for other ops.
      }], "std::optional<::autoshard::tfm::AttentionShape>",
      "getAttentionShape", (ins), [{}], [{ return std::nullopt; }]>,
  ];
}

def TfmParameterUpdateOpInterface
    : OpInterface<"TfmParameterUpdateOpInterface"> {
  let cppNamespace = "::autoshard::tfm";
  let description = [{
    An optimizer's update of one parameter (tfm.adamw): it reads the
    parameter, its gradient (the same shape; the sum over the data-parallel
    replicas and microbatches) and per-element optimizer states of the
    parameter's type, and returns their new values. dist-apply-plan shards
    the states under ZeRO and pins the gradient to their sharding;
    dist-auto-plan reads which gradients the backward produces sliced.
  }];
  let methods = [
    InterfaceMethod<"The parameter the op updates.", "::mlir::Value",
                    "getUpdatedParameter">,
    InterfaceMethod<"The gradient the update reads (the parameter's shape).",
                    "::mlir::Value", "getParameterGradient">,
    InterfaceMethod<[{
        The per-element optimizer states (each of the parameter's type;
        e.g. Adam's first and second moments), sharded alike under ZeRO.
      }], "::llvm::SmallVector<::mlir::Value, 2>", "getOptimizerStates">,
  ];
}

def TfmSequenceOrderOpInterface : OpInterface<"TfmSequenceOrderOpInterface"> {
  let cppNamespace = "::autoshard::tfm";
  let description = [{
    An op whose result depends on the original positions of its sequence
    rows: the causal mask, rope's angles, position embeddings, dropout's
    mask. Under zig-zag context parallelism (`dist-zigzag-sequence`,
    algorithms.md §2.3) a program holds its sequences permuted: with
    `zigzag_chunks = n` the `S` positions are cut into `n` chunks of
    `h = S / n` and permuted chunk `q` holds original chunk `q / 2` for even
    `q`, `n - 1 - q / 2` for odd `q` (so that the contiguous block of cp rank
    `r` holds the original chunks `r` and `n - 1 - r`). The op then computes,
    for the row at permuted index `p`, what it computes for original position
    `pi(p)` (runtime/include/autoshard/runtime/SequencePositions.h); without
    the attribute, the original order.
  }];
  let methods = [
    InterfaceMethod<
      "The zig-zag chunk count of the sequence order; 0: the original order.",
      "int64_t", "getSequenceZigzagChunks", (ins), [{}], [{
        ::mlir::IntegerAttr attr = $_op.getZigzagChunksAttr();
        return attr ? attr.getInt() : 0;
      }]>,
    InterfaceMethod<
      "Sets the zig-zag chunk count (n >= 2, even; 0 removes it).",
      "void", "setSequenceZigzagChunks", (ins "int64_t":$chunks), [{}], [{
        if (chunks == 0) {
          $_op.removeZigzagChunksAttr();
          return;
        }
        $_op.setZigzagChunksAttr(::mlir::IntegerAttr::get(
            ::mlir::IntegerType::get($_op->getContext(), 64), chunks));
      }]>,
  ];
  let verify = [{
    auto attr = $_op->template getAttrOfType<::mlir::IntegerAttr>(
        "zigzag_chunks");
    if (attr && (attr.getInt() < 2 || attr.getInt() % 2 != 0))
      return $_op->emitOpError()
             << "zigzag_chunks must be even and >= 2 (two chunks per cp "
                "rank), found "
             << attr.getInt();
    return ::mlir::success();
  }];
}

#endif // AUTOSHARD_DIALECT_TFM_IR_TFMINTERFACES_TD
