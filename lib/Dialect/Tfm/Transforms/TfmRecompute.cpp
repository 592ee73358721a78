//===- TfmRecompute.cpp - Activation recomputation ------------------------===//
//
// `tfm-recompute` rewrites the block calls of the training step that
// `tfm-autodiff` built so that fewer residuals stay alive between a layer's
// forward and its backward (the policy is in Passes.td). Each forward call
// `%f = call @B_fwd(args)` whose residual results feed one
// `call @B_bwd(dy..., args..., residuals...)` is found in the public
// functions; the residuals are the trailing operands of the backward call,
// which are the trailing results of the forward call (spec/autodiff.md).
// The forward call then goes to a variant of `@B_fwd` that returns fewer
// values, and a call marked `tfm.recompute` right before the backward call
// rebuilds the others from the layer's arguments (full) or from the kept
// values (selective). Variants are made once per block function.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Tfm/IR/TfmOps.h"
#include "autoshard/Dialect/Tfm/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SetVector.h"

namespace autoshard::tfm {
#define GEN_PASS_DEF_TFMRECOMPUTE
#include "autoshard/Dialect/Tfm/Transforms/Passes.h.inc"
} // namespace autoshard::tfm

using namespace mlir;
using namespace autoshard::tfm;

namespace {

constexpr StringLiteral kRecomputeAttr = "tfm.recompute";

/// Bytes of a tensor value (0 for anything else).
int64_t getBytes(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return 0;
  return type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
}

/// The ops that selective recomputation re-runs in the backward: norms,
/// activations and elementwise ops (memory-bound, a few FLOPs per element),
/// views and constants. Matmuls, attention, MoE routing/dispatch/combine,
/// embeddings and calls are never recomputed by `selective`.
bool isCheapToRecompute(Operation *op) {
  if (op->getNumOperands() == 0 && op->hasTrait<OpTrait::ConstantLike>())
    return true;
  return isa<LayerNormOp, RmsNormOp, GeluOp, SiluOp, SwigluOp, RopeOp,
             DropoutOp, AddOp, SubOp, MulOp, ScaleOp, CastOp, BroadcastOp,
             ReshapeOp>(op);
}

/// One layer's forward call and the backward call that reads its residuals.
struct LayerCalls {
  func::CallOp fwd, bwd;
  /// The forward call's results before the residuals (@B's results).
  unsigned numOutputs;
};

/// What selective recomputation does for one `@B_fwd`.
struct SelectivePlan {
  /// Results of `@B` (before the residuals of `@B_fwd`).
  unsigned numOutputs;
  /// The forward the layers call: `@B_fwd_selective`, which returns the
  /// kept values after the outputs (or `@B_fwd` itself when nothing is
  /// recomputed).
  func::FuncOp fwd;
  /// `@B_recompute_selective`, returning the recomputed residuals; null
  /// when nothing is recomputed.
  func::FuncOp recompute;
  /// Per residual of `@B_fwd`: its index among the kept values, or -1.
  SmallVector<int64_t> keptIndex;
  /// Per residual of `@B_fwd`: its index among the results of `recompute`,
  /// or -1.
  SmallVector<int64_t> recomputedIndex;
  /// Operands of the recompute call: arguments of `@B_fwd` (by index), then
  /// kept values (by index among the kept values).
  SmallVector<unsigned> recomputeArgs, recomputeKept;
};

/// What full recomputation calls for one `@B_fwd`.
struct FullPair {
  /// `@B_fwd_full`: `@B_fwd` without its residuals (the forward).
  func::FuncOp fwd;
  /// `@B_recompute_full`: `@B_fwd` returning only its residuals (the re-run
  /// before the backward; what only the outputs need is left out, and so
  /// are the arguments nothing left reads).
  func::FuncOp recompute;
  /// Arguments of `@B_fwd` that `recompute` takes, in order.
  SmallVector<unsigned> recomputeArgs;
};

/// `@B` for `@B_fwd`.
StringRef getBlockName(func::FuncOp fwd) {
  StringRef name = fwd.getSymName();
  name.consume_back("_fwd");
  return name;
}

/// Marks each result of recompute function `func` with the index of the
/// residual of `@B_bwd` it is (`tfm.residual`). This also tells the
/// sharding seeders that no result is the block's hidden output.
void setResidualAttrs(func::FuncOp func, ArrayRef<int64_t> residualIndices) {
  Builder b(func.getContext());
  for (auto [i, index] : llvm::enumerate(residualIndices))
    func.setResultAttr(i, "tfm.residual", b.getI64IntegerAttr(index));
}

class Recompute {
public:
  Recompute(ModuleOp module, StringRef mode) : symbols(module), mode(mode) {}

  /// Rewrites one layer's calls.
  LogicalResult rewrite(const LayerCalls &layer);

private:
  FailureOr<const FullPair *> getFullPair(func::FuncOp fwd,
                                          unsigned numOutputs);
  FailureOr<const SelectivePlan *> getSelectivePlan(func::FuncOp fwd,
                                                    unsigned numOutputs);
  func::FuncOp cloneWithResults(func::FuncOp fwd, StringRef name,
                                unsigned numOutputs, ArrayRef<Value> extra);

  SymbolTable symbols;
  StringRef mode;
  DenseMap<Operation *, std::unique_ptr<FullPair>> fullPairs;
  DenseMap<Operation *, std::unique_ptr<SelectivePlan>> selectivePlans;
};

/// Erases the side-effect free ops of `func` whose results are unused, last
/// first, so that a dead chain goes in one sweep.
void eraseDeadOps(func::FuncOp func) {
  SmallVector<Operation *> ops;
  for (Operation &op : func.front().without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
}

/// A copy of `fwd` named `name` returning its first `numOutputs` results,
/// then the values `extra` (of `fwd`'s body) mapped into the copy; the ops
/// that then compute nothing it returns are removed.
func::FuncOp Recompute::cloneWithResults(func::FuncOp fwd, StringRef name,
                                         unsigned numOutputs,
                                         ArrayRef<Value> extra) {
  IRMapping map;
  func::FuncOp copy = fwd.clone(map);
  copy.setSymName(name);
  auto ret = cast<func::ReturnOp>(copy.front().getTerminator());
  SmallVector<Value> results(ret.getOperands().take_front(numOutputs));
  for (Value v : extra)
    results.push_back(map.lookup(v));
  ret->setOperands(results);
  copy.setFunctionType(FunctionType::get(fwd.getContext(),
                                         fwd.getArgumentTypes(),
                                         ValueRange(results).getTypes()));
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned i = 0; i < numOutputs; ++i)
    resultAttrs.push_back(fwd.getResultAttrDict(i));
  resultAttrs.resize(results.size());
  copy.setAllResultAttrs(resultAttrs);
  eraseDeadOps(copy);
  symbols.insert(copy, std::next(Block::iterator(fwd)));
  return copy;
}

FailureOr<const FullPair *> Recompute::getFullPair(func::FuncOp fwd,
                                                   unsigned numOutputs) {
  auto it = fullPairs.find(fwd);
  if (it != fullPairs.end()) {
    if (it->second->fwd.getNumResults() != numOutputs)
      return fwd.emitError()
             << "tfm-recompute: calls of @" << fwd.getSymName()
             << " disagree on its number of outputs ("
             << it->second->fwd.getNumResults() << " and " << numOutputs << ")";
    return it->second.get();
  }
  auto ret = cast<func::ReturnOp>(fwd.front().getTerminator());
  SmallVector<Value> residuals(ret.getOperands().drop_front(numOutputs));
  auto pair = std::make_unique<FullPair>();
  pair->fwd =
      cloneWithResults(fwd, (fwd.getSymName() + "_full").str(), numOutputs, {});
  pair->recompute =
      cloneWithResults(fwd, (getBlockName(fwd) + "_recompute_full").str(),
                       /*numOutputs=*/0, residuals);
  setResidualAttrs(pair->recompute,
                   llvm::to_vector(llvm::seq<int64_t>(0, residuals.size())));
  llvm::BitVector unused(fwd.getNumArguments());
  for (BlockArgument arg : pair->recompute.getArguments()) {
    if (arg.use_empty())
      unused.set(arg.getArgNumber());
    else
      pair->recomputeArgs.push_back(arg.getArgNumber());
  }
  if (failed(pair->recompute.eraseArguments(unused)))
    return failure();
  auto &slot = fullPairs[fwd];
  slot = std::move(pair);
  return slot.get();
}

FailureOr<const SelectivePlan *>
Recompute::getSelectivePlan(func::FuncOp fwd, unsigned numOutputs) {
  auto it = selectivePlans.find(fwd);
  if (it != selectivePlans.end()) {
    if (it->second->numOutputs != numOutputs)
      return fwd.emitError()
             << "tfm-recompute: calls of @" << fwd.getSymName()
             << " disagree on its number of outputs (" << it->second->numOutputs
             << " and " << numOutputs << ")";
    return it->second.get();
  }
  Block &body = fwd.front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Value> residuals(ret.getOperands().drop_front(numOutputs));

  // Kept values: the residuals made by ops that are not cheap, then the
  // values that recomputing the others needs, decided residual by residual
  // in program order (a residual is recomputed when what it needs beyond
  // the kept values and the arguments is strictly smaller than itself).
  llvm::DenseSet<Value> kept;
  for (auto [i, r] : llvm::enumerate(residuals)) {
    Operation *def = r.getDefiningOp();
    // tfm-autodiff passes arguments to @B_bwd directly, never as residuals.
    if (!def)
      return fwd.emitError()
             << "tfm-recompute: residual #" << i << " of @" << fwd.getSymName()
             << " (result #" << numOutputs + i
             << ") is an argument of the function, not a value it computes";
    if (!isCheapToRecompute(def))
      kept.insert(r);
  }
  llvm::DenseSet<Value> recomputed;
  llvm::SetVector<Operation *> recomputeOps;
  for (Value r : residuals) {
    Operation *def = r.getDefiningOp();
    if (kept.contains(r) || recomputed.contains(r))
      continue;
    // The cheap ops between r and the kept values / arguments, and the
    // values they read that would have to be kept in addition.
    llvm::SetVector<Operation *> ops;
    llvm::SetVector<Value> needed;
    SmallVector<Operation *> worklist = {def};
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (!ops.insert(op))
        continue;
      for (Value operand : op->getOperands()) {
        if (isa<BlockArgument>(operand) || kept.contains(operand))
          continue;
        Operation *producer = operand.getDefiningOp();
        if (isCheapToRecompute(producer))
          worklist.push_back(producer);
        else
          needed.insert(operand);
      }
    }
    int64_t neededBytes = 0;
    for (Value v : needed)
      neededBytes += getBytes(v);
    if (neededBytes >= getBytes(r)) {
      kept.insert(r);
      continue;
    }
    kept.insert(needed.begin(), needed.end());
    recomputeOps.insert(ops.begin(), ops.end());
    recomputed.insert(r);
  }

  auto plan = std::make_unique<SelectivePlan>();
  plan->numOutputs = numOutputs;
  // Kept values and recompute ops in program order.
  SmallVector<Value> keptValues;
  SmallVector<Operation *> opsInOrder;
  for (Operation &op : body.without_terminator()) {
    for (Value v : op.getResults())
      if (kept.contains(v))
        keptValues.push_back(v);
    if (recomputeOps.contains(&op))
      opsInOrder.push_back(&op);
  }
  DenseMap<Value, int64_t> keptIndexOf;
  for (auto [i, v] : llvm::enumerate(keptValues))
    keptIndexOf[v] = i;
  SmallVector<Value> recomputedValues;
  for (Value r : residuals) {
    if (recomputed.contains(r)) {
      plan->keptIndex.push_back(-1);
      plan->recomputedIndex.push_back(recomputedValues.size());
      recomputedValues.push_back(r);
    } else {
      plan->keptIndex.push_back(keptIndexOf.lookup(r));
      plan->recomputedIndex.push_back(-1);
    }
  }
  if (recomputedValues.empty()) {
    // Nothing cheap to recompute: the block stays as tfm-autodiff made it.
    plan->fwd = fwd;
    for (auto [i, r] : llvm::enumerate(residuals))
      plan->keptIndex[i] = i;
    auto &slot = selectivePlans[fwd];
    slot = std::move(plan);
    return slot.get();
  }
  plan->fwd = cloneWithResults(fwd, (fwd.getSymName() + "_selective").str(),
                               numOutputs, keptValues);

  // @B_recompute_selective(<args it reads>, <kept values it reads>) ->
  // (recomputed residuals).
  llvm::SetVector<Value> reads;
  for (Operation *op : opsInOrder)
    for (Value operand : op->getOperands())
      if (isa<BlockArgument>(operand) || kept.contains(operand))
        reads.insert(operand);
  SmallVector<Value> inputs;
  SmallVector<DictionaryAttr> inputAttrs;
  for (BlockArgument arg : body.getArguments())
    if (reads.contains(arg)) {
      plan->recomputeArgs.push_back(arg.getArgNumber());
      inputs.push_back(arg);
      inputAttrs.push_back(fwd.getArgAttrDict(arg.getArgNumber()));
    }
  for (auto [i, v] : llvm::enumerate(keptValues))
    if (reads.contains(v)) {
      plan->recomputeKept.push_back(i);
      inputs.push_back(v);
      inputAttrs.push_back(nullptr);
    }
  OpBuilder b(fwd.getContext());
  auto recompute = func::FuncOp::create(
      b, fwd.getLoc(), (getBlockName(fwd) + "_recompute_selective").str(),
      FunctionType::get(fwd.getContext(), ValueRange(inputs).getTypes(),
                        ValueRange(recomputedValues).getTypes()));
  recompute.setPrivate();
  recompute.addEntryBlock();
  recompute.setAllArgAttrs(inputAttrs);
  SmallVector<int64_t> residualIndices;
  for (auto [i, index] : llvm::enumerate(plan->recomputedIndex))
    if (index >= 0)
      residualIndices.push_back(i);
  setResidualAttrs(recompute, residualIndices);
  IRMapping map;
  map.map(inputs, recompute.getArguments());
  OpBuilder inner = OpBuilder::atBlockEnd(&recompute.front());
  for (Operation *op : opsInOrder)
    inner.clone(*op, map);
  SmallVector<Value> results;
  for (Value r : recomputedValues)
    results.push_back(map.lookup(r));
  func::ReturnOp::create(inner, fwd.getLoc(), results);
  symbols.insert(recompute, std::next(Block::iterator(plan->fwd)));
  plan->recompute = recompute;

  auto &slot = selectivePlans[fwd];
  slot = std::move(plan);
  return slot.get();
}

LogicalResult Recompute::rewrite(const LayerCalls &layer) {
  func::CallOp fwdCall = layer.fwd, bwdCall = layer.bwd;
  auto fwd = symbols.lookup<func::FuncOp>(fwdCall.getCallee());
  unsigned numOutputs = layer.numOutputs;
  unsigned numResiduals = fwdCall.getNumResults() - numOutputs;
  unsigned firstResidual = bwdCall.getNumOperands() - numResiduals;
  NamedAttrList recomputeAttrs(fwdCall->getDiscardableAttrDictionary());
  recomputeAttrs.set(kRecomputeAttr, UnitAttr::get(fwdCall.getContext()));

  OpBuilder before(bwdCall);
  OpBuilder forward(fwdCall);
  func::CallOp newFwd;
  if (mode == "full") {
    FailureOr<const FullPair *> pair = getFullPair(fwd, numOutputs);
    if (failed(pair))
      return failure();
    // The re-run of the forward, right before the backward.
    SmallVector<Value> operands;
    for (unsigned i : (*pair)->recomputeArgs)
      operands.push_back(fwdCall.getOperand(i));
    auto rerun = func::CallOp::create(before, fwdCall.getLoc(),
                                      (*pair)->recompute, operands);
    rerun->setDiscardableAttrs(
        recomputeAttrs.getDictionary(fwdCall.getContext()));
    for (unsigned i = 0; i < numResiduals; ++i)
      bwdCall->setOperand(firstResidual + i, rerun.getResult(i));
    newFwd = func::CallOp::create(forward, fwdCall.getLoc(), (*pair)->fwd,
                                  fwdCall.getOperands());
  } else {
    FailureOr<const SelectivePlan *> planOr = getSelectivePlan(fwd, numOutputs);
    if (failed(planOr))
      return failure();
    const SelectivePlan &plan = **planOr;
    if (!plan.recompute)
      return success();
    newFwd = func::CallOp::create(forward, fwdCall.getLoc(), plan.fwd,
                                  fwdCall.getOperands());
    SmallVector<Value> operands;
    for (unsigned i : plan.recomputeArgs)
      operands.push_back(fwdCall.getOperand(i));
    for (unsigned i : plan.recomputeKept)
      operands.push_back(newFwd.getResult(numOutputs + i));
    auto rerun = func::CallOp::create(before, fwdCall.getLoc(), plan.recompute,
                                      operands);
    rerun->setDiscardableAttrs(
        recomputeAttrs.getDictionary(fwdCall.getContext()));
    for (unsigned i = 0; i < numResiduals; ++i)
      bwdCall->setOperand(firstResidual + i,
                          plan.keptIndex[i] >= 0
                              ? newFwd.getResult(numOutputs + plan.keptIndex[i])
                              : rerun.getResult(plan.recomputedIndex[i]));
  }
  newFwd->setDiscardableAttrs(fwdCall->getDiscardableAttrDictionary());
  for (unsigned i = 0; i < numOutputs; ++i)
    fwdCall.getResult(i).replaceAllUsesWith(newFwd.getResult(i));
  fwdCall.erase();
  return success();
}

/// The forward call whose residuals backward call `bwd` (of `@B_bwd`)
/// reads: the residuals are the trailing results of a call of `fwdName`,
/// passed in order as the trailing operands of `bwd`. A null `fwd` when the
/// backward reads no residual (nothing to recompute).
FailureOr<LayerCalls> matchLayer(func::CallOp bwd, StringRef fwdName) {
  LayerCalls layer{nullptr, bwd, 0};
  unsigned numOperands = bwd.getNumOperands();
  if (numOperands == 0)
    return layer;
  auto fwd = bwd.getOperand(numOperands - 1).getDefiningOp<func::CallOp>();
  if (!fwd || fwd.getCallee() != fwdName)
    return layer;
  unsigned n = 0, numResults = fwd.getNumResults();
  while (n < numResults && n < numOperands &&
         bwd.getOperand(numOperands - 1 - n) ==
             fwd.getResult(numResults - 1 - n))
    ++n;
  layer.fwd = fwd;
  layer.numOutputs = numResults - n;
  for (unsigned i = layer.numOutputs; i < numResults; ++i)
    for (Operation *user : fwd.getResult(i).getUsers())
      if (user != bwd.getOperation())
        return user->emitOpError()
               << "reads residual #" << i - layer.numOutputs << " of @"
               << fwdName << " (result #" << i
               << " of a forward call), which only its backward call may "
                  "read";
  if (bwd->getBlock() != fwd->getBlock())
    return bwd.emitOpError()
           << "is not in the block of the forward call of @" << fwdName
           << " whose residuals it reads; run tfm-recompute before the "
              "pipeline split";
  return layer;
}

struct TfmRecomputePass
    : public autoshard::tfm::impl::TfmRecomputeBase<TfmRecomputePass> {
  using TfmRecomputeBase::TfmRecomputeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    StringRef m = mode;
    if (m != "none" && m != "selective" && m != "full") {
      module.emitError() << "tfm-recompute: mode must be none, selective or "
                            "full, found '"
                         << m << "'";
      return signalPassFailure();
    }
    if (auto existing = module->getAttrOfType<StringAttr>(kRecomputeAttr)) {
      module.emitError() << "tfm-recompute: the module is already rewritten ("
                         << kRecomputeAttr << " = \"" << existing.getValue()
                         << "\")";
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    auto train = symbols.lookup<func::FuncOp>("train_step");
    if (!train || train.isExternal()) {
      module.emitError() << "tfm-recompute: no @train_step (run tfm-autodiff "
                            "first)";
      return signalPassFailure();
    }
    if (m != "none") {
      SmallVector<LayerCalls> layers;
      for (auto func : module.getOps<func::FuncOp>()) {
        if (func.isPrivate() || func.isExternal())
          continue;
        WalkResult walk = func.walk([&](func::CallOp call) {
          StringRef callee = call.getCallee();
          if (!callee.ends_with("_bwd"))
            return WalkResult::advance();
          std::string fwdName = (callee.drop_back(4) + "_fwd").str();
          FailureOr<LayerCalls> layer = matchLayer(call, fwdName);
          if (failed(layer))
            return WalkResult::interrupt();
          if (layer->fwd)
            layers.push_back(*layer);
          return WalkResult::advance();
        });
        if (walk.wasInterrupted())
          return signalPassFailure();
      }
      Recompute recompute(module, m);
      llvm::SetVector<StringAttr> callees;
      for (LayerCalls &layer : layers) {
        callees.insert(layer.fwd.getCalleeAttr().getAttr());
        if (failed(recompute.rewrite(layer)))
          return signalPassFailure();
      }
      // A residual-returning forward that no call uses any more is
      // removed.
      for (StringAttr name : callees) {
        auto func = symbols.lookup<func::FuncOp>(name);
        if (func && SymbolTable::symbolKnownUseEmpty(func, module))
          symbols.erase(func);
      }
    }
    module->setAttr(kRecomputeAttr, StringAttr::get(module.getContext(), m));
  }
};

} // namespace
