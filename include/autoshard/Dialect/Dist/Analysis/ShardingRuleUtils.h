//===- ShardingRuleUtils.h - Op shardings from factor rules -----*- C++ -*-===//
//
// How an op with a `ShardingRuleOpInterface` rule computes under given
// shardings. `dist-propagate` records only value shardings (`dist.sharding`
// on results, args); `deriveOpSharding` recovers from them, unambiguously,
// the mesh axes of every factor and the sharding each operand must have
// when the op runs. `dist-partition` reshards each operand from its own
// sharding to the required one.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_DIST_ANALYSIS_SHARDINGRULEUTILS_H
#define AUTOSHARD_DIALECT_DIST_ANALYSIS_SHARDINGRULEUTILS_H

#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Interfaces/ShardingInterfaces.h"

#include <optional>

namespace autoshard::dist {

/// Mesh axes, major to minor.
using AxisList = llvm::SmallVector<mlir::StringAttr>;

/// The sharding an op computes with.
struct OpSharding {
  /// Per factor of the rule: the axes it is split over.
  llvm::SmallVector<AxisList> factorAxes;
  /// Axes over which partial (sum) operands pass through linearly.
  AxisList linearPartialAxes;
  /// The linear operand group that carries `linearPartialAxes` (index into
  /// `ShardingRule::linearOperandGroups`), if any.
  std::optional<unsigned> linearGroup;
  /// What each operand must be when the op runs (null for non-tensors).
  llvm::SmallVector<ShardingAttr> operands;
  /// What each result is after the op runs.
  llvm::SmallVector<ShardingAttr> results;
};

/// The op's rule, if it implements ShardingRuleOpInterface.
std::optional<ShardingRule> getShardingRule(mlir::Operation *op);

/// Maps a dist reduction to the rule's.
ReductionKind toReductionKind(FactorReduction reduction);

/// The operand / result shardings of an op that computes with `factorAxes`
/// and passes `linearPartialAxes` through operand group `linearGroup`:
/// dims tied to a factor get its axes; results lacking a sharded Reduction
/// factor are partial over its axes; `linearPartialAxes` are partial (sum)
/// on every result and on the operands of the group.
void buildOpShardings(mlir::Operation *op, const ShardingRule &rule,
                      mlir::FlatSymbolRefAttr mesh, OpSharding &sharding);

/// Recovers how `op` computes from its recorded result shardings (the
/// authority) and its operands' current shardings: factors tied to result
/// dims take those dims' axes; a Reduction factor absent from the results
/// takes the axes that some operand has on it and that are partial on the
/// results; the remaining partial (sum) axes of the results are linear
/// pass-through. Fails (with a diagnostic on `op`) if the result shardings
/// disagree on a factor or leave a partial axis unexplained.
mlir::FailureOr<OpSharding>
deriveOpSharding(mlir::Operation *op, const ShardingRule &rule,
                 llvm::ArrayRef<ShardingAttr> operandShardings,
                 llvm::ArrayRef<ShardingAttr> resultShardings);

/// Reads `dist.sharding` of a value: a result's entry of its op's attr, or
/// a block argument's function arg attr. Null if absent.
ShardingAttr getRecordedSharding(mlir::Value value);

} // namespace autoshard::dist

#endif // AUTOSHARD_DIALECT_DIST_ANALYSIS_SHARDINGRULEUTILS_H
