//===- TfmInterfaces.td - Op knowledge for later passes ----*- tablegen -*-===//
//
// Op interfaces through which compiler passes learn an op's gradient rule,
// sharding rule and cost without special-casing ops by name.
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

def TfmShardingRuleOpInterface : OpInterface<"TfmShardingRuleOpInterface"> {
  let cppNamespace = "::autoshard::tfm";
  let description = [{
    The op's sharding rule in factor form (as in GSPMD and Shardy): the op's
    iteration space is a list of factors, each operand and result dim maps to
    at most one factor, and each factor says whether sharding it is free
    (pass-through, e.g. batch), makes results partial (reduction, e.g. the
    contracting dim of a matmul) or is not allowed (needs replication, e.g.
    the normalised dim of layer_norm). `dist-propagate` moves shardings
    between operands and results along shared factors.
  }];
  let methods = [
    InterfaceMethod<"Returns the factor-based sharding rule of this op.",
      "::autoshard::tfm::ShardingRule", "getShardingRule">,
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
  ];
}

def TfmPartitionOpInterface : OpInterface<"TfmPartitionOpInterface"> {
  let cppNamespace = "::autoshard::tfm";
  let description = [{
    How `dist-partition` turns the op into per-rank (local) ops when its
    factor rule (`TfmShardingRuleOpInterface`) is not enough, as GSPMD's and
    Shardy's custom partitioners do. `dist-partition` never special-cases an
    op by name: it asks this interface first and falls back to the factor
    rule.

    * `partition` is the hook: given a `PartitionContext` (the local operands
      and their actual shardings, the annotated result shardings, a builder,
      the mesh and the resharding engine) it either emits the local ops and
      records every result with its actual sharding (returns true), declines
      so that the factor rule applies (returns false), or reports an error
      (failure). Examples: vocab-parallel `tfm.embedding` (a masked lookup of
      the owned rows, partial sum over the vocabulary axes) and
      `tfm.cross_entropy` (max and sum all-reduces of per-row statistics,
      never an all-gather of the logits), `tfm.sum_squares` (one all-reduce
      per group of operands sharded on the same axes, over exactly those
      axes).

    How pending sums pass through an op (its linearity) is part of the
    factor rule (`ShardingRule::linearOperandGroups`); ops whose rule needs
    a hook for some sharded factor (`ShardingRule::needsHook`) must
    implement `partition` for it, or `dist-partition` reports an error.
  }];
  let methods = [
    InterfaceMethod<[{
        Emits the local form of the op through `ctx`; returns true if it did
        (every result recorded with `ctx.setResult`), false to let the
        factor rule partition the op.
      }],
      "::mlir::FailureOr<bool>", "partition",
      (ins "::autoshard::tfm::PartitionContext &":$ctx), [{}],
      /*defaultImplementation=*/[{ return false; }]>,
  ];
}

#endif // AUTOSHARD_DIALECT_TFM_IR_TFMINTERFACES_TD
