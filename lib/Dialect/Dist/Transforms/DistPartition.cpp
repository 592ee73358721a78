//===- DistPartition.cpp - Global to per-rank shapes ----------------------===//
//
// `dist-partition`: rewrites every function of a module from global shapes
// annotated with `#dist.sharding` to per-rank (local) shapes with explicit
// collectives. See the pass description in Passes.td and the resharding
// algorithm in Reshard.h.
//
// The rewrite keeps, for every global value, its local value and the
// sharding that local value actually has (which may differ from the
// annotation: e.g. a result that the rule cannot make partial is computed
// complete). Consumers reshard from the actual sharding to what they need;
// the reshards of one value to one sharding are shared within a block.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Interfaces/ShardingInterfaces.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Dist/Transforms/Reshard.h"
#include "autoshard/Dialect/Tfm/IR/TfmDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

namespace autoshard::dist {
#define GEN_PASS_DEF_DISTPARTITION
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace autoshard::dist

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

using AxisList = SmallVector<StringAttr>;

/// Declared shardings of a function's arguments and results.
struct Signature {
  SmallVector<ShardingAttr> args;
  SmallVector<ShardingAttr> results;
};

/// The local value of a global value and the sharding it actually has.
struct LocalValue {
  Value local;
  ShardingAttr sharding;
};

ArrayAttr axesAttr(MLIRContext *ctx, ArrayRef<StringAttr> axes) {
  return ArrayAttr::get(ctx, SmallVector<Attribute>(axes.begin(), axes.end()));
}

ShardingAttr makeSharding(FlatSymbolRefAttr mesh, ArrayRef<AxisList> dims,
                          ArrayRef<PartialAxis> partial = {}) {
  MLIRContext *ctx = mesh.getContext();
  SmallVector<ArrayAttr> dimAttrs;
  for (const AxisList &axes : dims)
    dimAttrs.push_back(axesAttr(ctx, axes));
  return ShardingAttr::get(ctx, mesh, dimAttrs, partial);
}

/// `sharding` without its partial axes.
ShardingAttr withoutPartial(ShardingAttr sharding) {
  return ShardingAttr::get(sharding.getContext(), sharding.getMesh(),
                           sharding.getDims());
}

/// Ranked tensor type of `value`, or null.
RankedTensorType tensorType(Value value) {
  return dyn_cast<RankedTensorType>(value.getType());
}

/// The annotated sharding of each result of `op` (replicated if none).
SmallVector<ShardingAttr> resultShardings(Operation *op,
                                          FlatSymbolRefAttr mesh) {
  SmallVector<ShardingAttr> out;
  Attribute attr = op->getAttr(kShardingAttrName);
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    ShardingAttr s;
    if (auto one = dyn_cast_or_null<ShardingAttr>(attr))
      s = i == 0 ? one : ShardingAttr();
    else if (auto many = dyn_cast_or_null<ArrayAttr>(attr))
      s = i < many.size() ? dyn_cast<ShardingAttr>(many[i]) : ShardingAttr();
    RankedTensorType type = tensorType(result);
    if (!s || (type && s.getRank() != type.getRank()))
      s = ShardingAttr::getReplicated(mesh, type ? type.getRank() : 0);
    out.push_back(s);
  }
  return out;
}

class Partitioner;

/// The view of the partitioner that a partition hook gets for one op.
class HookContext : public PartitionContext {
public:
  HookContext(Partitioner &p, Operation *op, ArrayRef<ShardingAttr> annotations)
      : p(p), op(op), annotations(annotations), results(op->getNumResults()) {}

  OpBuilder &getBuilder() override;
  MeshOp getMesh() override;
  Value getLocalOperand(unsigned i) override;
  ShardingAttr getOperandSharding(unsigned i) override;
  FailureOr<Value> getOperandAs(unsigned i, ShardingAttr sharding) override;
  ShardingAttr getPreferredReducedSharding(unsigned i) override;
  ShardingAttr getResultSharding(unsigned r) override { return annotations[r]; }
  FailureOr<Value> reshard(Value local, RankedTensorType globalType,
                           ShardingAttr from, ShardingAttr to) override;
  void setResult(unsigned r, Value local, ShardingAttr sharding) override {
    results[r] = {local, sharding};
  }
  SmallVector<Value> *lookupMemo(Value key, StringRef tag) override;
  void setMemo(Value key, StringRef tag, ArrayRef<Value> values) override;

  Partitioner &p;
  Operation *op;
  ArrayRef<ShardingAttr> annotations;
  SmallVector<LocalValue> results;
};

class Partitioner {
public:
  Partitioner(ModuleOp module, MeshOp mesh)
      : module(module), mesh(mesh),
        meshRef(FlatSymbolRefAttr::get(mesh.getSymNameAttr())),
        builder(module.getContext()) {}

  LogicalResult run();

  // Used by HookContext. `raggedDim`: see dist::reshard.
  FailureOr<Value> getAs(Value global, ShardingAttr target,
                         std::optional<int64_t> raggedDim = std::nullopt);
  /// The local values of `globals`, each resharded to its target (a null
  /// target: the global value itself, e.g. a non-sharded operand), or the
  /// first failure.
  FailureOr<SmallVector<Value>> getAllAs(ValueRange globals,
                                         ArrayRef<ShardingAttr> targets);
  /// A copy of `op` on the local `operands`, without its sharding
  /// annotation; its result types are still the global ones.
  Operation *cloneLocal(Operation *op, ValueRange operands);
  ShardingAttr preferredReduced(Value global, Operation *except);
  LocalValue lookup(Value global) { return values.lookup(global); }

  ModuleOp module;
  MeshOp mesh;
  FlatSymbolRefAttr meshRef;
  OpBuilder builder;
  SymbolTableCollection symbols;
  llvm::DenseMap<Operation *, Signature> signatures;
  // Per function.
  llvm::DenseMap<Value, LocalValue> values;
  llvm::DenseMap<Value, RankedTensorType> globalTypes;
  llvm::DenseMap<std::pair<Value, Attribute>, Value> reshardCache;
  llvm::DenseMap<std::pair<Value, StringAttr>, SmallVector<Value>> memo;

  LogicalResult collectSignature(func::FuncOp func);
  LogicalResult partitionFunction(func::FuncOp func);
  LogicalResult partitionOp(Operation *op);
  LogicalResult partitionByRule(Operation *op, ShardingRule rule,
                                ArrayRef<ShardingAttr> annotations);
  FailureOr<SmallVector<ShardingAttr>>
  requiredOperandShardings(Operation *op, const ShardingRule &rule,
                           ArrayRef<ShardingAttr> annotations, bool useActuals,
                           SmallVectorImpl<ShardingAttr> *resultActuals);
  LogicalResult checkSharding(Operation *op, ShardingAttr s, Type type);
  void setLocal(Value global, Value local, ShardingAttr sharding) {
    values[global] = {local, sharding};
  }
  RankedTensorType localType(RankedTensorType global, ShardingAttr s) {
    return s.getLocalType(global, mesh);
  }
};

//===----------------------------------------------------------------------===//
// HookContext
//===----------------------------------------------------------------------===//

OpBuilder &HookContext::getBuilder() { return p.builder; }
MeshOp HookContext::getMesh() { return p.mesh; }
Value HookContext::getLocalOperand(unsigned i) {
  return p.lookup(op->getOperand(i)).local;
}
ShardingAttr HookContext::getOperandSharding(unsigned i) {
  return p.lookup(op->getOperand(i)).sharding;
}
FailureOr<Value> HookContext::getOperandAs(unsigned i, ShardingAttr sharding) {
  return p.getAs(op->getOperand(i), sharding);
}
ShardingAttr HookContext::getPreferredReducedSharding(unsigned i) {
  return p.preferredReduced(op->getOperand(i), op);
}
FailureOr<Value> HookContext::reshard(Value local, RankedTensorType globalType,
                                      ShardingAttr from, ShardingAttr to) {
  return dist::reshard(p.builder, op->getLoc(), p.mesh, local, globalType, from,
                       to);
}
SmallVector<Value> *HookContext::lookupMemo(Value key, StringRef tag) {
  auto it = p.memo.find({key, StringAttr::get(op->getContext(), tag)});
  if (it == p.memo.end())
    return nullptr;
  // Only values of the block being rewritten are usable here.
  Block *block = p.builder.getInsertionBlock();
  for (Value v : it->second)
    if (v.getParentBlock() != block)
      return nullptr;
  return &it->second;
}
void HookContext::setMemo(Value key, StringRef tag, ArrayRef<Value> values) {
  p.memo[{key, StringAttr::get(op->getContext(), tag)}] =
      SmallVector<Value>(values);
}

//===----------------------------------------------------------------------===//
// Partitioner
//===----------------------------------------------------------------------===//

LogicalResult Partitioner::checkSharding(Operation *op, ShardingAttr s,
                                         Type type) {
  if (s.getMesh() != meshRef)
    return op->emitError() << "dist-partition: sharding " << s
                           << " names another mesh than " << meshRef;
  return s.verifyAgainst(mesh, type, [&] { return op->emitError(); });
}

LogicalResult Partitioner::collectSignature(func::FuncOp func) {
  Signature sig;
  FunctionType type = func.getFunctionType();
  auto get = [&](DictionaryAttr attrs, Type t) -> FailureOr<ShardingAttr> {
    auto tensor = dyn_cast<RankedTensorType>(t);
    ShardingAttr s =
        attrs ? dyn_cast_or_null<ShardingAttr>(attrs.get(kShardingAttrName))
              : ShardingAttr();
    if (!tensor)
      return ShardingAttr();
    if (!s)
      return ShardingAttr::getReplicated(meshRef, tensor.getRank());
    if (failed(checkSharding(func, s, tensor)))
      return failure();
    return s;
  };
  for (unsigned i = 0; i < type.getNumInputs(); ++i) {
    FailureOr<ShardingAttr> s = get(func.getArgAttrDict(i), type.getInput(i));
    if (failed(s))
      return failure();
    sig.args.push_back(*s);
  }
  for (unsigned i = 0; i < type.getNumResults(); ++i) {
    FailureOr<ShardingAttr> s =
        get(func.getResultAttrDict(i), type.getResult(i));
    if (failed(s))
      return failure();
    sig.results.push_back(*s);
  }
  signatures[func] = std::move(sig);
  return success();
}

FailureOr<Value> Partitioner::getAs(Value global, ShardingAttr target,
                                    std::optional<int64_t> raggedDim) {
  LocalValue lv = values.lookup(global);
  if (!lv.local)
    return emitError(global.getLoc()) << "dist-partition: value has no local "
                                         "form (defined outside the function?)";
  if (lv.sharding == target)
    return lv.local;
  auto key = std::make_pair(global, Attribute(target));
  if (Value cached = reshardCache.lookup(key))
    if (cached.getParentBlock() == builder.getInsertionBlock())
      return cached;
  RankedTensorType type = globalTypes.lookup(global);
  if (!type)
    type = tensorType(global);
  FailureOr<Value> v = dist::reshard(builder, global.getLoc(), mesh, lv.local,
                                     type, lv.sharding, target, raggedDim);
  if (succeeded(v))
    reshardCache[key] = *v;
  return v;
}

/// Rule-based requirement for operand `i` of `op`, from annotations only.
static std::optional<ShardingAttr> requirementOf(Partitioner &p,
                                                 OpOperand &use);

ShardingAttr Partitioner::preferredReduced(Value global, Operation *except) {
  for (OpOperand &use : global.getUses()) {
    if (use.getOwner() == except)
      continue;
    std::optional<ShardingAttr> need = requirementOf(*this, use);
    if (need && !need->isPartial())
      return *need;
  }
  return withoutPartial(values.lookup(global).sharding);
}

FailureOr<SmallVector<ShardingAttr>> Partitioner::requiredOperandShardings(
    Operation *op, const ShardingRule &rule, ArrayRef<ShardingAttr> annotations,
    bool useActuals, SmallVectorImpl<ShardingAttr> *resultActuals) {
  int64_t numFactors = rule.getNumFactors();
  SmallVector<std::optional<AxisList>> factorAxes(numFactors);
  llvm::DenseSet<StringAttr> used;
  auto kindOf = [&](int64_t f) {
    return f < static_cast<int64_t>(rule.factorKinds.size())
               ? rule.factorKinds[f]
               : FactorKind::PassThrough;
  };

  // Pass-through factors follow the result shardings (the plan).
  for (auto [r, dims] : llvm::enumerate(rule.resultDims)) {
    if (r >= annotations.size())
      break;
    for (auto [d, f] : llvm::enumerate(dims)) {
      if (f < 0 || factorAxes[f] || kindOf(f) == FactorKind::NeedsReplication)
        continue;
      AxisList axes;
      for (StringAttr a : annotations[r].getDimAxes(d))
        if (used.insert(a).second)
          axes.push_back(a);
      factorAxes[f] = axes;
    }
  }

  // Partial axes the results declare.
  SmallVector<PartialAxis> declared;
  for (ShardingAttr s : annotations)
    for (const PartialAxis &pa : s.getPartialAxes())
      if (!llvm::is_contained(declared, pa) && !used.contains(pa.axis))
        declared.push_back(pa);
  auto declaredKind = [&](StringAttr a) -> std::optional<ReductionKind> {
    for (const PartialAxis &pa : declared)
      if (pa.axis == a)
        return pa.kind;
    return std::nullopt;
  };
  auto factorReduction = [&](int64_t f) {
    return rule.getReduction(f) == FactorReduction::Max ? ReductionKind::Max
                                                        : ReductionKind::Sum;
  };

  // Reduction factors take the axes their operand dims actually have, as
  // far as the results declare them partial.
  for (int64_t f = 0; f < numFactors; ++f) {
    if (kindOf(f) != FactorKind::Reduction || factorAxes[f])
      continue;
    AxisList axes;
    if (useActuals) {
      for (auto [i, dims] : llvm::enumerate(rule.operandDims)) {
        auto it = llvm::find(dims, f);
        if (it == dims.end())
          continue;
        ShardingAttr actual = values.lookup(op->getOperand(i)).sharding;
        if (!actual)
          continue;
        for (StringAttr a : actual.getDimAxes(it - dims.begin())) {
          if (used.contains(a) || declaredKind(a) != factorReduction(f))
            break;
          axes.push_back(a);
          used.insert(a);
        }
        break;
      }
    }
    factorAxes[f] = axes;
  }

  // Remaining declared partial (sum) axes: through a linear group whose
  // operands are all partial over the axis, without communication.
  SmallVector<SmallVector<PartialAxis>> operandPartial(op->getNumOperands());
  SmallVector<PartialAxis> resultPartial;
  for (const PartialAxis &pa : declared) {
    if (used.contains(pa.axis) || pa.kind != ReductionKind::Sum || !useActuals)
      continue;
    for (const auto &group : rule.linearOperandGroups) {
      bool all = !group.empty() && llvm::all_of(group, [&](int64_t i) {
        ShardingAttr actual = values.lookup(op->getOperand(i)).sharding;
        return actual &&
               actual.getPartialKind(pa.axis.getValue()) == ReductionKind::Sum;
      });
      if (!all)
        continue;
      for (int64_t i : group)
        operandPartial[i].push_back(pa);
      resultPartial.push_back(pa);
      used.insert(pa.axis);
      break;
    }
  }

  // A factor sharded against its rule needs the op's hook.
  for (int64_t f = 0; f < numFactors; ++f) {
    if (factorAxes[f] && !factorAxes[f]->empty() && rule.factorNeedsHook(f))
      return op->emitOpError()
             << "dist-partition: sharding factor " << f << " (size "
             << rule.factorSizes[f] << ") on axes "
             << axisListToString(axesAttr(op->getContext(), *factorAxes[f]))
             << " needs the op's partition hook, which does not support it";
  }

  auto shardingFor = [&](ArrayRef<int64_t> dims,
                         ArrayRef<PartialAxis> partial) {
    SmallVector<AxisList> axes;
    for (int64_t f : dims)
      axes.push_back(f >= 0 && factorAxes[f] ? *factorAxes[f] : AxisList());
    return makeSharding(meshRef, axes, partial);
  };
  SmallVector<ShardingAttr> required;
  for (auto [i, dims] : llvm::enumerate(rule.operandDims))
    required.push_back(shardingFor(dims, operandPartial[i]));

  if (resultActuals) {
    SmallVector<PartialAxis> partial(resultPartial);
    for (int64_t f = 0; f < numFactors; ++f)
      if (kindOf(f) == FactorKind::Reduction && factorAxes[f])
        for (StringAttr a : *factorAxes[f])
          partial.push_back({a, factorReduction(f)});
    for (auto [r, dims] : llvm::enumerate(rule.resultDims)) {
      // A reduction factor tied to this result splits it instead.
      SmallVector<PartialAxis> own;
      for (const PartialAxis &pa : partial) {
        bool tied = llvm::any_of(dims, [&](int64_t f) {
          return f >= 0 && factorAxes[f] &&
                 llvm::is_contained(*factorAxes[f], pa.axis);
        });
        if (!tied)
          own.push_back(pa);
      }
      resultActuals->push_back(shardingFor(dims, own));
    }
  }
  return required;
}

static std::optional<ShardingAttr> requirementOf(Partitioner &p,
                                                 OpOperand &use) {
  Operation *user = use.getOwner();
  unsigned i = use.getOperandNumber();
  if (auto ret = dyn_cast<func::ReturnOp>(user)) {
    auto it = p.signatures.find(ret->getParentOp());
    if (it != p.signatures.end() && i < it->second.results.size())
      return it->second.results[i];
    return std::nullopt;
  }
  if (auto call = dyn_cast<func::CallOp>(user)) {
    Operation *callee =
        p.symbols.lookupNearestSymbolFrom(call, call.getCalleeAttr());
    auto it = p.signatures.find(callee);
    if (it != p.signatures.end() && i < it->second.args.size())
      return it->second.args[i];
    return std::nullopt;
  }
  if (auto c = dyn_cast<ShardingConstraintOp>(user))
    return c.getSharding();
  if (auto c = dyn_cast<ReshardOp>(user))
    return c.getSharding();
  if (isa<PartitionOpInterface>(user))
    return std::nullopt;
  auto ruleOp = dyn_cast<ShardingRuleOpInterface>(user);
  if (!ruleOp)
    return std::nullopt;
  ShardingRule rule = ruleOp.getShardingRule();
  SmallVector<ShardingAttr> annotations = resultShardings(user, p.meshRef);
  // Diagnostics of a speculative query would be misleading: drop them.
  ScopedDiagnosticHandler silence(user->getContext(),
                                  [](Diagnostic &) { return success(); });
  FailureOr<SmallVector<ShardingAttr>> req = p.requiredOperandShardings(
      user, rule, annotations, /*useActuals=*/false, nullptr);
  if (failed(req) || i >= req->size())
    return std::nullopt;
  return (*req)[i];
}

FailureOr<SmallVector<Value>>
Partitioner::getAllAs(ValueRange globals, ArrayRef<ShardingAttr> targets) {
  SmallVector<Value> locals;
  for (auto [global, target] : llvm::zip_equal(globals, targets)) {
    FailureOr<Value> v = target ? getAs(global, target) : global;
    if (failed(v))
      return failure();
    locals.push_back(*v);
  }
  return locals;
}

Operation *Partitioner::cloneLocal(Operation *op, ValueRange operands) {
  Operation *local = builder.clone(*op);
  local->setOperands(operands);
  local->removeAttr(kShardingAttrName);
  return local;
}

LogicalResult Partitioner::partitionByRule(Operation *op, ShardingRule rule,
                                           ArrayRef<ShardingAttr> annotations) {
  if (rule.operandDims.size() != op->getNumOperands() ||
      rule.resultDims.size() != op->getNumResults())
    return op->emitOpError() << "dist-partition: malformed sharding rule";
  SmallVector<ShardingAttr> actuals;
  FailureOr<SmallVector<ShardingAttr>> required = requiredOperandShardings(
      op, rule, annotations, /*useActuals=*/true, &actuals);
  if (failed(required))
    return failure();
  FailureOr<SmallVector<Value>> operands =
      getAllAs(op->getOperands(), *required);
  if (failed(operands))
    return failure();
  Operation *local = cloneLocal(op, *operands);
  for (auto [r, result] : llvm::enumerate(local->getResults())) {
    RankedTensorType type = tensorType(op->getResult(r));
    if (failed(checkSharding(op, actuals[r], type)))
      return failure();
    result.setType(localType(type, actuals[r]));
    setLocal(op->getResult(r), result, actuals[r]);
  }
  if (failed(mlir::verify(local))) {
    InFlightDiagnostic diag = op->emitOpError()
                              << "dist-partition: the local op does not "
                                 "verify with operand shardings [";
    llvm::interleaveComma(*required, diag, [&](ShardingAttr s) { diag << s; });
    return diag << "]";
  }
  return success();
}

LogicalResult Partitioner::partitionOp(Operation *op) {
  Location loc = op->getLoc();

  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    const Signature &sig = signatures[op->getParentOp()];
    FailureOr<SmallVector<Value>> operands =
        getAllAs(ret.getOperands(), sig.results);
    if (failed(operands))
      return failure();
    func::ReturnOp::create(builder, loc, *operands);
    return success();
  }

  if (auto call = dyn_cast<func::CallOp>(op)) {
    auto callee = symbols.lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (!callee)
      return call.emitOpError() << "dist-partition: unknown callee";
    const Signature &sig = signatures[callee];
    FailureOr<SmallVector<Value>> operands =
        getAllAs(call.getOperands(), sig.args);
    if (failed(operands))
      return failure();
    SmallVector<Type> types;
    for (auto [i, result] : llvm::enumerate(call.getResults())) {
      RankedTensorType type = tensorType(result);
      types.push_back(type && sig.results[i] ? localType(type, sig.results[i])
                                             : result.getType());
    }
    auto local = cast<func::CallOp>(cloneLocal(op, *operands));
    for (auto [i, result] : llvm::enumerate(local.getResults())) {
      result.setType(types[i]);
      setLocal(call.getResult(i), result, sig.results[i]);
    }
    return success();
  }

  if (isa<ShardingConstraintOp, ReshardOp>(op)) {
    auto sharding = op->getAttrOfType<ShardingAttr>("sharding");
    if (failed(checkSharding(op, sharding, op->getResult(0).getType())))
      return failure();
    std::optional<uint64_t> raggedDim =
        isa<ShardingConstraintOp>(op)
            ? cast<ShardingConstraintOp>(op).getRaggedDim()
            : cast<ReshardOp>(op).getRaggedDim();
    std::optional<int64_t> ragged;
    if (raggedDim)
      ragged = static_cast<int64_t>(*raggedDim);
    FailureOr<Value> v = getAs(op->getOperand(0), sharding, ragged);
    if (failed(v))
      return failure();
    setLocal(op->getResult(0), *v, sharding);
    return success();
  }

  SmallVector<ShardingAttr> annotations = resultShardings(op, meshRef);
  for (auto [s, result] : llvm::zip(annotations, op->getResults()))
    if (tensorType(result) && failed(checkSharding(op, s, result.getType())))
      return failure();

  if (auto hook = dyn_cast<PartitionOpInterface>(op)) {
    HookContext ctx(*this, op, annotations);
    FailureOr<bool> done = hook.partition(ctx);
    if (failed(done))
      return failure();
    if (*done) {
      for (auto [r, lv] : llvm::enumerate(ctx.results)) {
        if (!lv.local)
          return op->emitOpError()
                 << "dist-partition: partition hook left result " << r
                 << " undefined";
        setLocal(op->getResult(r), lv.local, lv.sharding);
      }
      return success();
    }
  }

  if (auto ruleOp = dyn_cast<ShardingRuleOpInterface>(op))
    return partitionByRule(op, ruleOp.getShardingRule(), annotations);

  if (op->getNumRegions() != 0)
    return op->emitOpError() << "dist-partition: ops with regions are not "
                                "supported";
  // No rule: compute replicated (e.g. arith.constant).
  SmallVector<Value> operands;
  for (Value operand : op->getOperands()) {
    RankedTensorType type = tensorType(operand);
    if (!type) {
      operands.push_back(values.lookup(operand).local
                             ? values.lookup(operand).local
                             : operand);
      continue;
    }
    FailureOr<Value> v =
        getAs(operand, ShardingAttr::getReplicated(meshRef, type.getRank()));
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  Operation *local = cloneLocal(op, operands);
  for (auto [r, result] : llvm::enumerate(local->getResults())) {
    RankedTensorType type = tensorType(result);
    setLocal(op->getResult(r), result,
             ShardingAttr::getReplicated(meshRef, type ? type.getRank() : 0));
  }
  return success();
}

LogicalResult Partitioner::partitionFunction(func::FuncOp func) {
  values.clear();
  globalTypes.clear();
  reshardCache.clear();
  memo.clear();
  const Signature &sig = signatures[func];

  SmallVector<Type> inputs, results;
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    inputs.push_back(tensor ? localType(tensor, sig.args[i]) : type);
  }
  for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    results.push_back(tensor ? localType(tensor, sig.results[i]) : type);
  }

  if (!func.isExternal()) {
    if (!func.getBody().hasOneBlock())
      return func.emitOpError()
             << "dist-partition: only single-block functions are supported";
    // The local program is built in a new block, so that the global ops
    // (whose rules read global types) stay intact until the end.
    Block &block = func.getBody().front();
    auto *localBlock = new Block();
    for (BlockArgument arg : block.getArguments()) {
      auto tensor = dyn_cast<RankedTensorType>(arg.getType());
      BlockArgument local =
          localBlock->addArgument(inputs[arg.getArgNumber()], arg.getLoc());
      if (tensor)
        globalTypes[arg] = tensor;
      setLocal(arg, local,
               tensor ? sig.args[arg.getArgNumber()] : ShardingAttr());
    }
    func.getBody().push_back(localBlock);
    builder.setInsertionPointToEnd(localBlock);
    for (Operation &op : block)
      if (failed(partitionOp(&op)))
        return failure();
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block))) {
      op.dropAllUses();
      op.erase();
    }
    block.erase();
  }
  func.setFunctionType(FunctionType::get(func.getContext(), inputs, results));
  func->setAttr(DistDialect::getPartitionedAttrName(),
                UnitAttr::get(func.getContext()));

  // Entry functions keep their argument / result shardings (rt-export).
  if (func.isPrivate()) {
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      func.removeArgAttr(i, kShardingAttrName);
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      func.removeResultAttr(
          i, StringAttr::get(func.getContext(), kShardingAttrName));
  }
  return success();
}

LogicalResult Partitioner::run() {
  if (failed(verifyShardingModelsRegistered(module)))
    return failure();
  SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
  for (func::FuncOp func : funcs)
    if (failed(collectSignature(func)))
      return failure();
  for (func::FuncOp func : funcs)
    if (failed(partitionFunction(func)))
      return failure();
  return success();
}

struct DistPartitionPass
    : public dist::impl::DistPartitionBase<DistPartitionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<MeshOp> mesh = getSingleMesh(module, "dist-partition");
    if (failed(mesh))
      return signalPassFailure();
    if (!*mesh)
      return;
    Partitioner partitioner(module, *mesh);
    if (failed(partitioner.run()))
      signalPassFailure();
  }
};

} // namespace
