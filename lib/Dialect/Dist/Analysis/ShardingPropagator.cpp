//===- ShardingPropagator.cpp - The algorithm of dist-propagate -----------===//
//
// The contract is in ShardingPropagator.h; in short:
//
//   repeat
//     forward sweep (callees first, ops in order): each op derives its
//       factor axes from the shardings around it and sets its soft results;
//     if nothing changed: backward sweep (callers first, ops in reverse):
//       the same, and soft operands learn the factor axes on unsharded dims;
//   until nothing changes;
// then, if the call sites of a callee disagree on the shardings of its
// arguments, the callee is cloned per distinct signature (`_sN`) and the
// propagation starts over.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/Analysis/ShardingPropagator.h"
#include "autoshard/Dialect/Dist/Analysis/ShardingRuleUtils.h"
#include "autoshard/Dialect/Dist/IR/DistAttrNames.h"
#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "autoshard/Dialect/Tfm/IR/TfmAttrNames.h"
#include "autoshard/Dialect/Tfm/IR/TfmAttrs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <functional>

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

/// Weight of a fixed value's layout against a soft one's in conflicts.
constexpr double kFixedWeight = 1000.0;
/// Extra weight of the layout of training state (parameters, optimizer
/// states) and of a parameter gradient's preferred layout, on top of
/// kFixedWeight: TP weights never move to suit an activation (Megatron
/// gathers the activation), whatever their sizes.
constexpr double kStateWeight = 1.0e6;
/// Upper bound on propagation rounds (each round is a forward and maybe a
/// backward sweep); the iteration is monotone and normally ends in a few.
constexpr int kMaxRounds = 64;
/// Upper bound on restarts after cloning callees per signature.
constexpr int kMaxSplitRounds = 8;

struct ValueInfo {
  ShardingAttr sharding;
  bool fixed = false;
  /// Axes that shard this value only for storage (ZeRO-3 parameters on
  /// `dp`): they never drive how an op computes (the parameter is gathered
  /// over them before use).
  bool zeroStorage = false;
  /// An expert weight (`tfm.role` expert_gate / expert_up / expert_down):
  /// under expert parallelism its `ep` axis is how it computes (E split
  /// over ep), not ZeRO storage as for the dense weights on `{dp, ep}`.
  bool expert = false;
  /// Training state: an entry argument with `tfm.param` or `tfm.state`, and
  /// the callee arguments it is passed to.
  bool state = false;
  /// A parameter (the `tfm.param` part of `state`).
  bool param = false;
  /// Soft values: the layout this value should preferably have, that of
  /// the parameter it is the gradient of (without ZeRO-3 storage axes). It
  /// weighs like the parameter itself in the producer's choice, except on
  /// an axis over which the producer's operands are partial and cheaper to
  /// keep partial (reduced later, in the result) than to reduce first.
  ShardingAttr preferred;
};

/// One candidate layout of a factor, with the bytes that would have to move
/// if another layout were chosen.
struct Candidate {
  AxisList axes;
  double weight = 0;
};

} // namespace

class ShardingPropagator::Impl {
public:
  Impl(ModuleOp module, MeshOp mesh)
      : module(module), mesh(mesh), ctx(module.getContext()),
        meshRef(FlatSymbolRefAttr::get(ctx, mesh.getSymName())),
        symbols(module) {}

  LogicalResult run();

private:
  void collectFunctions();
  void initialise();
  void seedPreferences();
  bool splitCallees();
  void reset();
  void sweep(bool backward);
  void process(Operation *op, bool backward);
  void processRuleOp(Operation *op, const ShardingRule &rule, bool backward);
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
    const ValueInfo &vi = info[v];
    return bytes(v) * (vi.fixed ? kFixedWeight : 1.0) *
           (vi.state ? kStateWeight : 1.0);
  }
  /// The axes of the ZeRO group, over which gradients are summed and
  /// ZeRO-3 parameters are stored split: the data axis, and the context
  /// axis (context-parallel ranks hold the same weights; Megatron shards
  /// over DP x CP).
  bool isDataAxis(StringRef axis) {
    return mesh.hasAxisRole(axis, AxisRole::Data) ||
           mesh.hasAxisRole(axis, AxisRole::Context);
  }
  /// Whether `axis` shards `vi` (a ZeRO-3 parameter) only for storage: the
  /// ZeRO group's axes (data, context, and expert under expert
  /// parallelism) for the dense weights; only the data axis for the
  /// experts, whose expert axis (and context axis, when the ep group folds
  /// over it) is how they compute.
  bool isStorageAxis(const ValueInfo &vi, StringRef axis) {
    if (!vi.zeroStorage)
      return false;
    if (vi.expert)
      return mesh.hasAxisRole(axis, AxisRole::Data);
    return isDataAxis(axis) || mesh.hasAxisRole(axis, AxisRole::Expert);
  }
  /// The layout a parameter computes with: its sharding without the ZeRO-3
  /// storage axes (`isStorageAxis`).
  ShardingAttr computeLayout(Value v) {
    const ValueInfo &vi = info[v];
    if (!vi.sharding || !vi.zeroStorage)
      return vi.sharding;
    SmallVector<ArrayAttr> dims;
    for (unsigned d = 0; d < vi.sharding.getRank(); ++d) {
      SmallVector<Attribute> axes;
      for (StringAttr axis : vi.sharding.getDimAxes(d))
        if (!isStorageAxis(vi, axis.getValue()))
          axes.push_back(axis);
      dims.push_back(ArrayAttr::get(ctx, axes));
    }
    return ShardingAttr::get(ctx, meshRef, dims);
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
void ShardingPropagator::Impl::refine(Value v, ShardingAttr proposal) {
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

void ShardingPropagator::Impl::collectFunctions() {
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

/// An op with one tensor operand and one result that its rule ties dim for
/// dim, every factor pass-through (a conversion or unary map of a tensor).
static bool isElementwiseImage(Operation *op) {
  if (op->getNumOperands() != 1 || op->getNumResults() != 1 ||
      !isa<RankedTensorType>(op->getOperand(0).getType()) ||
      !isa<RankedTensorType>(op->getResult(0).getType()))
    return false;
  std::optional<ShardingRule> rule = getShardingRule(op);
  return rule && rule->operandDims.size() == 1 &&
         rule->resultDims.size() == 1 &&
         rule->operandDims[0] == rule->resultDims[0] &&
         llvm::all_of(rule->operandDims[0], [&](int64_t f) {
           return f >= 0 && rule->factorKinds[f] == FactorKind::PassThrough;
         });
}

void ShardingPropagator::Impl::initialise() {
  StringRef name = DistDialect::getShardingAttrName();
  // ZeRO-3 (from the `dist.plan` of dist-apply-plan): parameters are stored
  // sharded on dp but computed with as if they were not.
  bool zero3 = false;
  if (auto plan = module->getAttrOfType<DictionaryAttr>(kPlanAttrName))
    if (auto zero = plan.getAs<IntegerAttr>("zero"))
      zero3 = zero.getInt() == 3;
  for (func::FuncOp fn : funcs) {
    for (BlockArgument arg : fn.getArguments()) {
      if (auto s = fn.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(), name))
        info[arg] = {s, true};
      bool isParam = entries.contains(fn) &&
                     fn.getArgAttr(arg.getArgNumber(), tfm::kParamAttrName);
      if (zero3 && isParam)
        info[arg].zeroStorage = true;
      if (std::optional<tfm::Role> role =
              tfm::getRole(fn.getArgAttrDict(arg.getArgNumber())))
        info[arg].expert = isParam && tfm::isExpertRole(*role);
      if (entries.contains(fn) &&
          (isParam || fn.getArgAttr(arg.getArgNumber(), tfm::kStateAttrName)))
        info[arg].state = true;
      if (isParam)
        info[arg].param = true;
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
  // Training state passed to callees (callers first), and its elementwise
  // images (tfm-mixed-precision's bf16 copy of an f32 weight), also where a
  // callee returns them (a block's forward saving the copy for its
  // backward): they weigh like the state, so the copy keeps the plan's
  // layout as the weight does. Repeated until nothing changes (a returned
  // copy reaches its caller after the callee is visited).
  bool changed = true;
  auto markState = [&](Value v) {
    ValueInfo &vi = info[v];
    changed |= !vi.state;
    vi.state = true;
  };
  while (changed) {
    changed = false;
    for (func::FuncOp fn : llvm::reverse(funcs))
      fn.walk([&](Operation *op) {
        auto call = dyn_cast<func::CallOp>(op);
        if (!call) {
          if (isElementwiseImage(op) && info.lookup(op->getOperand(0)).state)
            markState(op->getResult(0));
          return;
        }
        auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
        if (!callee || callee.isExternal())
          return;
        for (auto [operand, arg] :
             llvm::zip(call.getOperands(), callee.getArguments())) {
          const ValueInfo &from = info.lookup(operand);
          if (from.state)
            markState(arg);
          if (from.param)
            info[arg].param = true;
        }
        auto ret =
            cast<func::ReturnOp>(callee.getBody().front().getTerminator());
        for (auto [returned, result] :
             llvm::zip(ret.getOperands(), call.getResults()))
          if (info.lookup(returned).state)
            markState(result);
      });
  }
}

/// A soft operand that an op ties dim for dim (pass-through) to a parameter
/// operand of the same type (the gradient of `tfm.adamw`) prefers the
/// parameter's layout; the preference follows the gradient back through
/// constraints, call results (into the callee's returned value) and
/// gradient accumulation and conversion (an op linear in all its operands
/// together, each of the result's shape: add, sub, scale, cast), up to the
/// ops that compute it.
void ShardingPropagator::Impl::seedPreferences() {
  SmallVector<Value> worklist;
  auto prefer = [&](Value v, ShardingAttr layout) {
    ValueInfo &vi = info[v];
    if (vi.preferred || vi.state)
      return;
    vi.preferred = layout;
    worklist.push_back(v);
  };
  for (func::FuncOp fn : funcs)
    fn.walk([&](Operation *op) {
      std::optional<ShardingRule> rule = getShardingRule(op);
      if (!rule || rule->operandDims.size() != op->getNumOperands())
        return;
      for (auto [j, param] : llvm::enumerate(op->getOperands())) {
        if (!isTensor(param) || !info.lookup(param).param)
          continue;
        ShardingAttr layout = computeLayout(param);
        if (!layout)
          continue;
        for (auto [i, v] : llvm::enumerate(op->getOperands())) {
          if (i == j || v.getType() != param.getType())
            continue;
          bool tied = llvm::all_of(
              llvm::zip(rule->operandDims[i], rule->operandDims[j]),
              [&](auto pair) {
                auto [a, b] = pair;
                return a == b && a >= 0 &&
                       rule->factorKinds[a] == FactorKind::PassThrough;
              });
          if (tied)
            prefer(v, layout);
        }
      }
    });
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    ShardingAttr layout = info[v].preferred;
    Operation *def = v.getDefiningOp();
    if (!def)
      continue;
    if (auto constraint = dyn_cast<ShardingConstraintOp>(def)) {
      prefer(constraint.getInput(), layout);
      continue;
    }
    if (auto call = dyn_cast<func::CallOp>(def)) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal())
        continue;
      auto ret = cast<func::ReturnOp>(callee.getBody().front().getTerminator());
      prefer(ret.getOperand(cast<OpResult>(v).getResultNumber()), layout);
      continue;
    }
    std::optional<ShardingRule> rule = getShardingRule(def);
    if (!rule || def->getNumResults() != 1)
      continue;
    SmallVector<int64_t> operands;
    for (auto [i, operand] : llvm::enumerate(def->getOperands()))
      if (isTensor(operand))
        operands.push_back(i);
    bool accumulates =
        !operands.empty() &&
        llvm::all_of(operands,
                     [&](int64_t i) {
                       return cast<ShapedType>(def->getOperand(i).getType())
                                  .getShape() ==
                              cast<ShapedType>(v.getType()).getShape();
                     }) &&
        llvm::any_of(rule->linearOperandGroups, [&](const auto &group) {
          SmallVector<int64_t> sorted(group.begin(), group.end());
          llvm::sort(sorted);
          return sorted == operands;
        });
    if (accumulates)
      for (int64_t i : operands)
        prefer(def->getOperand(i), layout);
  }
}

void ShardingPropagator::Impl::process(Operation *op, bool backward) {
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
  if (std::optional<ShardingRule> rule = getShardingRule(op))
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
void ShardingPropagator::Impl::processRuleOp(Operation *op,
                                             const ShardingRule &rule,
                                             bool backward) {
  int64_t numFactors = rule.getNumFactors();
  SmallVector<SmallVector<Candidate>> candidates(numFactors);

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
  // The bytes of the operands that are partial (sum) over `axis` and can
  // pass it through a linear group (the whole group is partial on it and no
  // other operand is); 0 if none can.
  auto partialBytes = [&](StringAttr axis) {
    double most = 0;
    for (const auto &group : rule.linearOperandGroups) {
      double sum = 0;
      bool ok = !group.empty();
      for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
        bool inGroup = llvm::is_contained(group, static_cast<int64_t>(i));
        if (inGroup ? !partialSum(operand, axis) : partialAny(operand, axis))
          ok = false;
        else if (inGroup)
          sum += bytes(operand);
      }
      if (ok)
        most = std::max(most, sum);
    }
    return most;
  };
  auto claim = [&](int64_t f, const AxisList &axes, double w) {
    auto it = llvm::find_if(candidates[f],
                            [&](const Candidate &c) { return c.axes == axes; });
    if (it == candidates[f].end())
      candidates[f].push_back({axes, w});
    else
      it->weight += w;
  };
  // Whether the result `v` should rather stay partial over `axis` than
  // split on it: operands partial over it pass it through, and reducing
  // them first (an all-reduce, about twice their bytes) costs more than
  // reducing the result later (a reduce-scatter of its bytes). Over the
  // data, expert (expert parallelism folds over data) and context axes a
  // gradient always stays partial: it is reduced once per step, in
  // buckets, never per microbatch (DESIGN.md §5).
  auto keepsPartial = [&](Value v, StringAttr axis) {
    double operands = partialBytes(axis);
    return operands > 0 &&
           (isDataAxis(axis.getValue()) ||
            mesh.hasAxisRole(axis.getValue(), AxisRole::Expert) ||
            2 * operands >= bytes(v));
  };
  // `keepPartial`: no claim on an axis `v` should stay partial over (a
  // parameter gradient).
  auto addClaims = [&](Value v, ArrayRef<int64_t> dims, bool keepPartial) {
    if (!isTensor(v))
      return;
    ShardingAttr s = info[v].sharding;
    if (!s)
      return;
    ValueInfo held = info[v]; // a copy: info may grow below
    for (auto [d, f] : llvm::enumerate(dims)) {
      if (f < 0 || rule.factorKinds[f] == FactorKind::NeedsReplication)
        continue;
      AxisList axes;
      for (StringAttr axis : s.getDimAxes(d))
        if (!isStorageAxis(held, axis.getValue()))
          axes.push_back(axis);
      // An unsplit dim of training state claims to stay unsplit (e.g. an
      // optimizer step on replicated state gathers its gradient once
      // rather than splitting and re-gathering the parameter and both
      // moments).
      if (axes.empty() && !(info[v].state && info[v].fixed))
        continue;
      if ((keepPartial &&
           llvm::any_of(axes,
                        [&](StringAttr a) { return keepsPartial(v, a); })) ||
          rule.factorSizes[f] % product(axes) != 0)
        continue;
      claim(f, axes, weight(v));
    }
  };
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    addClaims(operand, rule.operandDims[i], /*keepPartial=*/false);

  // A soft result's preferred layout (a parameter gradient) claims like
  // training state, except on axes it should rather stay partial over; it
  // waits until every operand has its sharding (whether they are partial is
  // not known before).
  bool operandsKnown = llvm::all_of(op->getOperands(), [&](Value v) {
    return !isTensor(v) || info[v].sharding;
  });
  for (auto [r, result] : llvm::enumerate(op->getResults())) {
    const ValueInfo &vi = info[result];
    bool gradient = !vi.fixed && vi.preferred;
    addClaims(result, rule.resultDims[r], /*keepPartial=*/gradient);
    if (!gradient || !operandsKnown)
      continue;
    ShardingAttr preferred = vi.preferred;
    double w = bytes(result) * kFixedWeight * kStateWeight;
    for (auto [d, f] : llvm::enumerate(rule.resultDims[r])) {
      if (f < 0 || rule.factorKinds[f] == FactorKind::NeedsReplication ||
          d >= static_cast<size_t>(preferred.getRank()))
        continue;
      AxisList axes = preferred.getDimAxes(d);
      if (axes.empty() ||
          llvm::any_of(axes,
                       [&](StringAttr a) { return keepsPartial(result, a); }) ||
          rule.factorSizes[f] % product(axes) != 0)
        continue;
      claim(f, axes, w);
    }
  }

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
    return rule.factorKinds[f] == FactorKind::Reduction;
  };
  llvm::stable_sort(order, [&](int64_t a, int64_t b) {
    if (isReduction(a) != isReduction(b))
      return !isReduction(a);
    return candidates[a].front().weight > candidates[b].front().weight;
  });
  llvm::SmallDenseSet<StringAttr> used;
  for (int64_t f : order) {
    for (const Candidate &c : candidates[f]) {
      if (c.axes.empty())
        break; // the best remaining layout keeps the factor unsplit
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
  // A parameter gradient much larger than its partial operands (a table
  // scattered from a few rows) is better reduced before: the operands
  // are then all-reduced instead of the result.
  auto reduceFirst = [&](StringAttr axis) {
    return llvm::any_of(op->getResults(), [&](Value r) {
      const ValueInfo &vi = info[r];
      return !vi.fixed && vi.preferred && !keepsPartial(r, axis);
    });
  };
  size_t best = 0;
  for (auto [g, group] : llvm::enumerate(rule.linearOperandGroups)) {
    AxisList passed;
    for (StringAttr axis : partialAxes) {
      bool ok = !reduceFirst(axis);
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

void ShardingPropagator::Impl::processCall(func::CallOp call, bool backward) {
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
      to.sharding = from.sharding;
      to.fixed = from.fixed;
      to.zeroStorage |= from.zeroStorage;
      to.expert |= from.expert;
      changed = true;
    } else if (from.zeroStorage && !to.zeroStorage) {
      to.zeroStorage = true;
      to.expert |= from.expert;
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

void ShardingPropagator::Impl::processReturn(func::ReturnOp ret,
                                             bool backward) {
  if (!backward)
    return;
  auto fn = ret->getParentOfType<func::FuncOp>();
  for (auto [r, operand] : llvm::enumerate(ret.getOperands())) {
    auto it = resultSeeds.find({fn, static_cast<unsigned>(r)});
    if (it != resultSeeds.end())
      refine(operand, it->second);
  }
}

void ShardingPropagator::Impl::sweep(bool backward) {
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

void ShardingPropagator::Impl::write() {
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

/// Clones every callee whose call sites pass differently sharded operands,
/// one clone per distinct signature (the first keeps the name, the others
/// get `_s1`, `_s2`, ...), and retargets the calls. Returns whether any
/// callee was cloned.
bool ShardingPropagator::Impl::splitCallees() {
  llvm::MapVector<Operation *, SmallVector<func::CallOp>> sites;
  for (func::FuncOp fn : funcs)
    fn.walk([&](func::CallOp call) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (callee && !callee.isExternal() && !entries.contains(callee))
        sites[callee].push_back(call);
    });
  bool split = false;
  for (auto &[op, calls] : sites) {
    auto callee = cast<func::FuncOp>(op);
    using Signature = SmallVector<ShardingAttr>;
    SmallVector<std::pair<Signature, SmallVector<func::CallOp>>> groups;
    for (func::CallOp call : calls) {
      Signature sig;
      for (Value operand : call.getOperands()) {
        ShardingAttr s;
        if (isTensor(operand)) {
          s = info.lookup(operand).sharding;
          if (!s)
            s = replicated(operand);
        }
        sig.push_back(s);
      }
      auto *it = llvm::find_if(groups, [&](auto &g) { return g.first == sig; });
      if (it == groups.end())
        groups.push_back({sig, {call}});
      else
        it->second.push_back(call);
    }
    if (groups.size() < 2)
      continue;
    split = true;
    for (unsigned g = 1; g < groups.size(); ++g) {
      auto clone = cast<func::FuncOp>(callee->clone());
      clone.setSymName((callee.getSymName() + "_s" + Twine(g)).str());
      // A per-signature copy computes what its original does: it keeps its
      // attributes, tfm.func_kind included.
      symbols.insert(clone, std::next(Block::iterator(callee)));
      for (func::CallOp call : groups[g].second)
        call.setCallee(clone.getSymName());
    }
  }
  return split;
}

void ShardingPropagator::Impl::reset() {
  funcs.clear();
  entries.clear();
  info.clear();
  resultSeeds.clear();
}

LogicalResult ShardingPropagator::Impl::run() {
  if (failed(verifyShardingModelsRegistered(module)))
    return failure();
  for (int split = 0;; ++split) {
    collectFunctions();
    initialise();
    seedPreferences();
    for (int round = 0; round < kMaxRounds; ++round) {
      changed = false;
      sweep(/*backward=*/false);
      if (changed)
        continue;
      sweep(/*backward=*/true);
      if (!changed)
        break;
    }
    if (split == kMaxSplitRounds || !splitCallees())
      break;
    reset();
  }
  write();
  return success();
}

ShardingPropagator::ShardingPropagator(ModuleOp module, MeshOp mesh)
    : impl(std::make_unique<Impl>(module, mesh)) {}

ShardingPropagator::~ShardingPropagator() = default;

LogicalResult ShardingPropagator::run() { return impl->run(); }
