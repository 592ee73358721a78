//===- ShardingRuleUtils.cpp - Op shardings from factor rules -------------===//

#include "autoshard/Dialect/Dist/Analysis/ShardingRuleUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

std::optional<ShardingRule> dist::getShardingRule(Operation *op) {
  auto iface = dyn_cast<ShardingRuleOpInterface>(op);
  if (!iface)
    return std::nullopt;
  return iface.getShardingRule();
}

ReductionKind dist::toReductionKind(FactorReduction reduction) {
  return reduction == FactorReduction::Max ? ReductionKind::Max
                                           : ReductionKind::Sum;
}

static ShardingAttr buildSharding(MLIRContext *ctx, FlatSymbolRefAttr mesh,
                                  ArrayRef<int64_t> dimFactors,
                                  ArrayRef<AxisList> factorAxes,
                                  ArrayRef<PartialAxis> partial) {
  SmallVector<ArrayAttr> dims;
  for (int64_t f : dimFactors) {
    SmallVector<Attribute> axes;
    if (f >= 0)
      axes.append(factorAxes[f].begin(), factorAxes[f].end());
    dims.push_back(ArrayAttr::get(ctx, axes));
  }
  return ShardingAttr::get(ctx, mesh, dims, partial);
}

void dist::buildOpShardings(Operation *op, const ShardingRule &rule,
                            FlatSymbolRefAttr mesh, OpSharding &sharding) {
  MLIRContext *ctx = op->getContext();
  sharding.operands.clear();
  sharding.results.clear();
  for (auto [i, dims] : llvm::enumerate(rule.operandDims)) {
    SmallVector<PartialAxis> partial;
    if (sharding.linearGroup &&
        llvm::is_contained(rule.linearOperandGroups[*sharding.linearGroup],
                           static_cast<int64_t>(i)))
      for (StringAttr axis : sharding.linearPartialAxes)
        partial.push_back({axis, ReductionKind::Sum});
    sharding.operands.push_back(
        buildSharding(ctx, mesh, dims, sharding.factorAxes, partial));
  }
  for (auto dims : rule.resultDims) {
    SmallVector<PartialAxis> partial;
    for (int64_t f = 0, e = rule.getNumFactors(); f < e; ++f)
      if (rule.factorKinds[f] == FactorKind::Reduction &&
          !llvm::is_contained(dims, f))
        for (StringAttr axis : sharding.factorAxes[f])
          partial.push_back({axis, toReductionKind(rule.getReduction(f))});
    for (StringAttr axis : sharding.linearPartialAxes)
      partial.push_back({axis, ReductionKind::Sum});
    sharding.results.push_back(
        buildSharding(ctx, mesh, dims, sharding.factorAxes, partial));
  }
}

FailureOr<OpSharding>
dist::deriveOpSharding(Operation *op, const ShardingRule &rule,
                       ArrayRef<ShardingAttr> operandShardings,
                       ArrayRef<ShardingAttr> resultShardings) {
  OpSharding out;
  int64_t numFactors = rule.getNumFactors();
  out.factorAxes.resize(numFactors);
  SmallVector<bool> known(numFactors, false);
  FlatSymbolRefAttr mesh;
  for (auto [r, sharding] : llvm::enumerate(resultShardings)) {
    if (!sharding)
      continue;
    mesh = sharding.getMesh();
    for (auto [d, f] : llvm::enumerate(rule.resultDims[r])) {
      if (f < 0)
        continue;
      AxisList axes = sharding.getDimAxes(d);
      if (known[f] && axes != out.factorAxes[f])
        return op->emitOpError()
               << "results disagree on the sharding of factor " << f;
      out.factorAxes[f] = axes;
      known[f] = true;
    }
  }
  // Partial axes of the results (they all lack the same reduction factors
  // in our rules; take the union conservatively from the first result).
  llvm::SmallDenseSet<StringAttr> pending;
  for (ShardingAttr sharding : resultShardings) {
    if (!sharding)
      continue;
    for (PartialAxis p : sharding.getPartialAxes())
      pending.insert(p.axis);
    break;
  }
  for (int64_t f = 0; f < numFactors; ++f) {
    if (known[f] || rule.factorKinds[f] != FactorKind::Reduction)
      continue;
    for (auto [i, dims] : llvm::enumerate(rule.operandDims)) {
      ShardingAttr sharding =
          i < operandShardings.size() ? operandShardings[i] : ShardingAttr();
      if (!sharding)
        continue;
      for (auto [d, g] : llvm::enumerate(dims)) {
        if (g != f)
          continue;
        for (StringAttr axis : sharding.getDimAxes(d))
          if (pending.erase(axis))
            out.factorAxes[f].push_back(axis);
      }
      if (!out.factorAxes[f].empty())
        break;
    }
  }
  if (!mesh) {
    for (ShardingAttr sharding : operandShardings)
      if (sharding)
        mesh = sharding.getMesh();
  }
  // What is left is linear pass-through (sum).
  for (ShardingAttr sharding : resultShardings) {
    if (!sharding)
      continue;
    for (PartialAxis p : sharding.getPartialAxes())
      if (pending.contains(p.axis))
        out.linearPartialAxes.push_back(p.axis);
    break;
  }
  if (!out.linearPartialAxes.empty()) {
    // The first group all of whose operands are partial on the axes, else
    // the first group.
    for (auto [g, group] : llvm::enumerate(rule.linearOperandGroups)) {
      bool all = llvm::all_of(group, [&](int64_t i) {
        ShardingAttr s = i < static_cast<int64_t>(operandShardings.size())
                             ? operandShardings[i]
                             : ShardingAttr();
        return s && llvm::all_of(out.linearPartialAxes, [&](StringAttr a) {
                 return s.getPartialKind(a.getValue()).has_value();
               });
      });
      if (all) {
        out.linearGroup = g;
        break;
      }
    }
    if (!out.linearGroup) {
      if (rule.linearOperandGroups.empty())
        return op->emitOpError()
               << "result is partial over an axis that no sharded reduction "
                  "factor or linear operand explains";
      out.linearGroup = 0;
    }
  }
  if (mesh)
    buildOpShardings(op, rule, mesh, out);
  return out;
}

ShardingAttr dist::getRecordedSharding(Value value) {
  StringRef name = DistDialect::getShardingAttrName();
  if (auto result = dyn_cast<OpResult>(value)) {
    Attribute attr = result.getOwner()->getAttr(name);
    if (auto array = dyn_cast_or_null<ArrayAttr>(attr))
      return result.getResultNumber() < array.size()
                 ? dyn_cast<ShardingAttr>(array[result.getResultNumber()])
                 : ShardingAttr();
    return dyn_cast_or_null<ShardingAttr>(attr);
  }
  auto arg = cast<BlockArgument>(value);
  auto fn = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
  if (!fn || arg.getOwner() != &fn.getFunctionBody().front())
    return {};
  return dyn_cast_or_null<ShardingAttr>(
      fn.getArgAttr(arg.getArgNumber(), name));
}
