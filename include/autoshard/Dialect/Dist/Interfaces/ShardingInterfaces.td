//===- ShardingInterfaces.td - The sharding contract -------*- tablegen -*-===//
//
// Op interfaces through which the dist passes learn how an op's dims relate
// under sharding and how it is rewritten to per-rank ops, without
// special-casing ops by name. Dialects implement them as external models
// (the tfm ones: lib/Dialect/Tfm/Sharding), as upstream's Linalg implements
// the Shard dialect's ShardingInterface.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_DIST_INTERFACES_SHARDINGINTERFACES_TD
#define AUTOSHARD_DIALECT_DIST_INTERFACES_SHARDINGINTERFACES_TD

include "mlir/IR/OpBase.td"

def ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::autoshard::dist";
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
      "::autoshard::dist::ShardingRule", "getShardingRule">,
  ];
}

def PartitionOpInterface : OpInterface<"PartitionOpInterface"> {
  let cppNamespace = "::autoshard::dist";
  let description = [{
    How `dist-partition` turns the op into per-rank (local) ops when its
    factor rule (`ShardingRuleOpInterface`) is not enough, as GSPMD's and
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
      (ins "::autoshard::dist::PartitionContext &":$ctx), [{}],
      /*defaultImplementation=*/[{ return false; }]>,
  ];
}

#endif // AUTOSHARD_DIALECT_DIST_INTERFACES_SHARDINGINTERFACES_TD
