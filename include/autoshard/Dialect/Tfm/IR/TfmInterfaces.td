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
        Returns the number of attention score elements (B·N·Sq·Sk) an
        attention op computes; 0 (the default) for other ops.
      }], "double", "getAttentionScoreElements", (ins), [{}],
      [{ return 0; }]>,
  ];
}

#endif // AUTOSHARD_DIALECT_TFM_IR_TFMINTERFACES_TD
