//===- DistPropagate.cpp - Sharding propagation through factor rules ------===//
//
// Gives every tensor value of every function reachable from the public ones
// a sharding (spec/sharding.md §2). The algorithm is described in the pass
// documentation (Passes.td); in short:
//
//   repeat
//     forward sweep (callees first, ops in order): each op derives its
//       factor axes from the shardings around it and sets its soft results;
//     if nothing changed: backward sweep (callers first, ops in reverse):
//       the same, and soft operands learn the factor axes on unsharded dims;
//   until nothing changes.
//
// Conflicts between candidate axes of one factor, and between factors that
// want the same axis, are resolved by cost (see `chooseFactorAxes`).
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Dist/Transforms/ShardingRuleUtils.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"

namespace autoshard::dist {
#define GEN_PASS_DEF_DISTPROPAGATE
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace autoshard::dist

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

/// Weight of a fixed value's layout against a soft one's in conflicts.
constexpr double kFixedWeight = 1000.0;
/// Upper bound on propagation rounds (each round is a forward and maybe a
/// backward sweep); the iteration is monotone and normally ends in a few.
constexpr int kMaxRounds = 64;

struct ValueInfo {
  ShardingAttr sharding;
  bool fixed = false;
  /// Axes that shard this value only for storage (ZeRO-3 parameters on
  /// `dp`): they never drive how an op computes (the parameter is gathered
  /// over them before use).
  bool zeroStorage = false;
};

/// One candidate layout of a factor, with the bytes that would have to move
/// if another layout were chosen.
struct Candidate {
  AxisList axes;
  double weight = 0;
};

class Propagator {
public:
  Propagator(ModuleOp module, MeshOp mesh)
      : module(module), mesh(mesh), ctx(module.getContext()),
        meshRef(FlatSymbolRefAttr::get(ctx, mesh.getSymName())),
        symbols(module) {}

  LogicalResult run();

private:
  void collectFunctions();
  void initialise();
  void sweep(bool backward);
  void process(Operation *op, bool backward);
  void processRuleOp(Operation *op, const tfm::ShardingRule &rule,
                     bool backward);
  void processCall(func::CallOp call, bool backward);
  void processReturn(func::ReturnOp ret, bool backward);
  void write();

  bool isTensor(Value v) { return isa<RankedTensorType>(v.getType()); }
  int64_t rankOf(Value v) {
    return cast<RankedTensorType>(v.getType()).getRank();
  }
  ShardingAttr replicated(Value v) {
    return ShardingAttr::getReplicated(meshRef, rankOf(v));
  }
  int64_t product(ArrayRef<StringAttr> axes) {
    int64_t p = 1;
    for (StringAttr axis : axes)
      p *= mesh.getAxisSize(axis.getValue());
    return p;
  }
  double bytes(Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    unsigned bits = type.getElementType().getIntOrFloatBitWidth();
    return static_cast<double>(type.getNumElements()) * std::max(bits, 8u) /
           8.0;
  }
  double weight(Value v) {
    return bytes(v) * (info[v].fixed ? kFixedWeight : 1.0);
  }
  /// Sets a soft value's sharding (the producer's decision).
  void setSoft(Value v, ShardingAttr sharding) {
    ValueInfo &vi = info[v];
    if (vi.fixed || vi.sharding == sharding)
      return;
    vi.sharding = sharding;
    changed = true;
  }
  void refine(Value v, ShardingAttr proposal);

  ModuleOp module;
  MeshOp mesh;
  MLIRContext *ctx;
  FlatSymbolRefAttr meshRef;
  SymbolTable symbols;
  SmallVector<func::FuncOp> funcs; // callees before callers
  llvm::DenseSet<Operation *> entries;
  DenseMap<Value, ValueInfo> info;
  /// Seeded results of entry functions: (function, result index) -> seed.
  DenseMap<std::pair<Operation *, unsigned>, ShardingAttr> resultSeeds;
  bool changed = false;
};

/// Adds the axes of `proposal` to the unsharded dims of a soft value, when
/// they are not used elsewhere in its sharding and the dim stays divisible.
/// Partial axes are never changed here (they belong to the producer).
void Propagator::refine(Value v, ShardingAttr proposal) {
  if (!isTensor(v) || !proposal)
    return;
  ValueInfo &vi = info[v];
  if (vi.fixed)
    return;
  ShardingAttr current = vi.sharding ? vi.sharding : replicated(v);
  SmallVector<StringAttr> used = current.getUsedAxes();
  ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
  SmallVector<ArrayAttr> dims(current.getDims());
  bool grew = false;
  for (unsigned d = 0; d < dims.size() && d < proposal.getRank(); ++d) {
    if (!dims[d].empty())
      continue;
    AxisList axes = proposal.getDimAxes(d);
    if (axes.empty() || llvm::any_of(axes, [&](StringAttr a) {
          return llvm::is_contained(used, a);
        }))
      continue;
    if (shape[d] % product(axes) != 0)
      continue;
    dims[d] =
        ArrayAttr::get(ctx, SmallVector<Attribute>(axes.begin(), axes.end()));
    used.append(axes.begin(), axes.end());
    grew = true;
  }
  if (!grew && vi.sharding)
    return;
  vi.sharding = ShardingAttr::get(ctx, meshRef, dims, current.getPartialAxes());
  changed = true;
}

void Propagator::collectFunctions() {
  llvm::SetVector<Operation *> order; // post-order: callees first
  llvm::DenseSet<Operation *> visiting;
  std::function<void(func::FuncOp)> visit = [&](func::FuncOp fn) {
    if (order.contains(fn) || !visiting.insert(fn).second)
      return;
    fn.walk([&](func::CallOp call) {
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
        if (!callee.isExternal())
          visit(callee);
    });
    order.insert(fn);
  };
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn.isPublic() && !fn.isExternal()) {
      entries.insert(fn);
      visit(fn);
    }
  for (Operation *op : order)
    funcs.push_back(cast<func::FuncOp>(op));
}

void Propagator::initialise() {
  StringRef name = DistDialect::getShardingAttrName();
  // ZeRO-3 (from the `dist.plan` of dist-apply-plan): parameters are stored
  // sharded on dp but computed with as if they were not.
  bool zero3 = false;
  if (auto plan = module->getAttrOfType<DictionaryAttr>("dist.plan"))
    if (auto zero = plan.getAs<IntegerAttr>("zero"))
      zero3 = zero.getInt() == 3;
  for (func::FuncOp fn : funcs) {
    for (BlockArgument arg : fn.getArguments()) {
      if (auto s = fn.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(), name))
        info[arg] = {s, true};
      if (zero3 && entries.contains(fn) &&
          fn.getArgAttr(arg.getArgNumber(), "tfm.param"))
        info[arg].zeroStorage = true;
    }
    if (entries.contains(fn))
      for (unsigned r = 0, e = fn.getNumResults(); r < e; ++r)
        if (auto s = fn.getResultAttrOfType<ShardingAttr>(r, name))
          resultSeeds[{fn, r}] = s;
    fn.walk([&](Operation *op) {
      if (auto constraint = dyn_cast<ShardingConstraintOp>(op)) {
        info[constraint.getResult()] = {constraint.getSharding(), true};
        return;
      }
      if (isa<arith::ConstantOp>(op)) {
        for (Value result : op->getResults())
          if (isTensor(result))
            info[result] = {replicated(result), true};
        return;
      }
      // User annotations on ops win over derived shardings.
      Attribute attr = op->getAttr(name);
      if (!attr)
        return;
      for (OpResult result : op->getResults())
        if (ShardingAttr s = getRecordedSharding(result))
          info[result] = {s, true};
    });
  }
}

void Propagator::process(Operation *op, bool backward) {
  if (auto call = dyn_cast<func::CallOp>(op))
    return processCall(call, backward);
  if (auto ret = dyn_cast<func::ReturnOp>(op))
    return processReturn(ret, backward);
  // A constraint pins its result; backward, it only proposes its axes for
  // the unsharded dims of its operand (never over a partial axis).
  if (auto constraint = dyn_cast<ShardingConstraintOp>(op)) {
    if (backward)
      refine(constraint.getInput(), constraint.getSharding());
    return;
  }
  if (std::optional<tfm::ShardingRule> rule = getShardingRule(op))
    return processRuleOp(op, *rule, backward);
  // Anything else (constants, constraints are fixed): replicated results.
  for (Value result : op->getResults())
    if (isTensor(result) && !info[result].sharding)
      setSoft(result, replicated(result));
}

/// Chooses the axes of every factor, then the partial axes that pass through
/// linearly, sets the soft results, and in the backward sweep refines the
/// soft operands.
///
/// Cost model: a candidate layout of a factor is worth the bytes of the
/// tensors that already have it (fixed tensors x kFixedWeight): choosing
/// another layout would reshard them. Factors are served in two tiers,
/// pass-through factors first (sharding a reduction factor costs a
/// reduction of the results, so it only gets the axes left over), and in
/// each tier by decreasing worth; a factor whose best candidate uses an
/// axis already taken keeps the rest of its axes if that is still a valid
/// split, else tries its next candidate, else stays unsharded.
void Propagator::processRuleOp(Operation *op, const tfm::ShardingRule &rule,
                               bool backward) {
  int64_t numFactors = rule.getNumFactors();
  SmallVector<SmallVector<Candidate>> candidates(numFactors);
  auto addClaims = [&](Value v, ArrayRef<int64_t> dims) {
    if (!isTensor(v))
      return;
    ShardingAttr s = info[v].sharding;
    if (!s)
      return;
    bool storage = info[v].zeroStorage;
    for (auto [d, f] : llvm::enumerate(dims)) {
      if (f < 0 || rule.factorKinds[f] == tfm::FactorKind::NeedsReplication)
        continue;
      AxisList axes;
      for (StringAttr axis : s.getDimAxes(d))
        if (!storage || axis.getValue() != "dp")
          axes.push_back(axis);
      if (axes.empty() || rule.factorSizes[f] % product(axes) != 0)
        continue;
      auto it = llvm::find_if(
          candidates[f], [&](const Candidate &c) { return c.axes == axes; });
      if (it == candidates[f].end())
        candidates[f].push_back({axes, weight(v)});
      else
        it->weight += weight(v);
    }
  };
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    addClaims(operand, rule.operandDims[i]);
  for (auto [r, result] : llvm::enumerate(op->getResults()))
    addClaims(result, rule.resultDims[r]);

  OpSharding sharding;
  sharding.factorAxes.resize(numFactors);
  SmallVector<int64_t> order;
  for (int64_t f = 0; f < numFactors; ++f) {
    llvm::stable_sort(candidates[f],
                      [](const Candidate &a, const Candidate &b) {
                        return a.weight > b.weight;
                      });
    if (!candidates[f].empty())
      order.push_back(f);
  }
  auto isReduction = [&](int64_t f) {
    return rule.factorKinds[f] == tfm::FactorKind::Reduction;
  };
  llvm::stable_sort(order, [&](int64_t a, int64_t b) {
    if (isReduction(a) != isReduction(b))
      return !isReduction(a);
    return candidates[a].front().weight > candidates[b].front().weight;
  });
  llvm::SmallDenseSet<StringAttr> used;
  for (int64_t f : order) {
    for (const Candidate &c : candidates[f]) {
      AxisList axes;
      for (StringAttr axis : c.axes)
        if (!used.contains(axis))
          axes.push_back(axis);
      if (axes.empty() || rule.factorSizes[f] % product(axes) != 0)
        continue;
      sharding.factorAxes[f] = axes;
      used.insert(axes.begin(), axes.end());
      break;
    }
  }

  // Partial (sum) operands pass through a linear group when the whole
  // group is partial on the axis and no other operand is.
  llvm::SetVector<StringAttr> partialAxes;
  for (Value operand : op->getOperands())
    if (isTensor(operand))
      if (ShardingAttr s = info[operand].sharding)
        for (PartialAxis p : s.getPartialAxes())
          if (!used.contains(p.axis))
            partialAxes.insert(p.axis);
  auto partialSum = [&](Value v, StringAttr axis) {
    ShardingAttr s = isTensor(v) ? info[v].sharding : ShardingAttr();
    std::optional<ReductionKind> kind =
        s ? s.getPartialKind(axis.getValue()) : std::nullopt;
    return kind.has_value() && *kind == ReductionKind::Sum;
  };
  auto partialAny = [&](Value v, StringAttr axis) {
    ShardingAttr s = isTensor(v) ? info[v].sharding : ShardingAttr();
    return s && s.getPartialKind(axis.getValue()).has_value();
  };
  size_t best = 0;
  for (auto [g, group] : llvm::enumerate(rule.linearOperandGroups)) {
    AxisList passed;
    for (StringAttr axis : partialAxes) {
      bool ok = true;
      for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
        bool inGroup = llvm::is_contained(group, static_cast<int64_t>(i));
        if (inGroup ? !partialSum(operand, axis) : partialAny(operand, axis))
          ok = false;
      }
      if (ok)
        passed.push_back(axis);
    }
    if (passed.size() > best) {
      best = passed.size();
      sharding.linearGroup = g;
      sharding.linearPartialAxes = passed;
    }
  }

  buildOpShardings(op, rule, meshRef, sharding);
  for (auto [r, result] : llvm::enumerate(op->getResults()))
    setSoft(result, sharding.results[r]);
  if (!backward)
    return;
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    refine(operand, sharding.operands[i]);
}

void Propagator::processCall(func::CallOp call, bool backward) {
  auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
  if (!callee || callee.isExternal()) {
    for (Value result : call.getResults())
      if (isTensor(result) && !info[result].sharding)
        setSoft(result, replicated(result));
    return;
  }
  for (auto [operand, arg] :
       llvm::zip(call.getOperands(), callee.getArguments())) {
    if (!isTensor(operand))
      continue;
    ValueInfo &from = info[operand];
    ValueInfo &to = info[arg];
    if (from.sharding && !to.sharding) {
      to = from;
      changed = true;
    } else if (from.zeroStorage && !to.zeroStorage) {
      to.zeroStorage = true;
      changed = true;
    } else if (from.sharding) {
      refine(arg, from.sharding);
    }
    if (backward && info[arg].sharding)
      refine(operand, info[arg].sharding);
  }
  auto ret = cast<func::ReturnOp>(callee.getBody().front().getTerminator());
  for (auto [result, returned] :
       llvm::zip(call.getResults(), ret.getOperands())) {
    if (!isTensor(result))
      continue;
    if (ShardingAttr s = info[returned].sharding)
      setSoft(result, s);
    if (backward && info[result].sharding)
      refine(returned, info[result].sharding);
  }
}

void Propagator::processReturn(func::ReturnOp ret, bool backward) {
  if (!backward)
    return;
  auto fn = ret->getParentOfType<func::FuncOp>();
  for (auto [r, operand] : llvm::enumerate(ret.getOperands())) {
    auto it = resultSeeds.find({fn, static_cast<unsigned>(r)});
    if (it != resultSeeds.end())
      refine(operand, it->second);
  }
}

void Propagator::sweep(bool backward) {
  if (!backward) {
    for (func::FuncOp fn : funcs)
      for (Operation &op : fn.getBody().front())
        process(&op, false);
    return;
  }
  for (func::FuncOp fn : llvm::reverse(funcs))
    for (Operation &op : llvm::reverse(fn.getBody().front()))
      process(&op, true);
}

void Propagator::write() {
  StringRef name = DistDialect::getShardingAttrName();
  auto shardingOf = [&](Value v) {
    ShardingAttr s = info.lookup(v).sharding;
    return s ? s : replicated(v);
  };
  for (func::FuncOp fn : funcs) {
    for (BlockArgument arg : fn.getArguments())
      if (isTensor(arg))
        fn.setArgAttr(arg.getArgNumber(), name, shardingOf(arg));
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    for (auto [r, operand] : llvm::enumerate(ret.getOperands())) {
      if (!isTensor(operand))
        continue;
      if (resultSeeds.count({fn, static_cast<unsigned>(r)}))
        continue;
      fn.setResultAttr(r, name, shardingOf(operand));
    }
    fn.walk([&](Operation *op) {
      if (op->getNumResults() == 0 ||
          !llvm::all_of(op->getResults(), [&](Value v) { return isTensor(v); }))
        return;
      if (op->getNumResults() == 1) {
        op->setAttr(name, shardingOf(op->getResult(0)));
        return;
      }
      SmallVector<Attribute> all;
      for (Value result : op->getResults())
        all.push_back(shardingOf(result));
      op->setAttr(name, ArrayAttr::get(ctx, all));
    });
  }
}

LogicalResult Propagator::run() {
  collectFunctions();
  initialise();
  for (int round = 0; round < kMaxRounds; ++round) {
    changed = false;
    sweep(/*backward=*/false);
    if (changed)
      continue;
    sweep(/*backward=*/true);
    if (!changed)
      break;
  }
  write();
  return success();
}

struct DistPropagatePass
    : public dist::impl::DistPropagateBase<DistPropagatePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
    if (meshes.empty())
      return;
    if (meshes.size() > 1) {
      meshes[1].emitError()
          << "dist-propagate supports one dist.mesh per module, found "
          << meshes.size();
      return signalPassFailure();
    }
    Propagator propagator(module, meshes.front());
    if (failed(propagator.run()))
      signalPassFailure();
  }
};

} // namespace
