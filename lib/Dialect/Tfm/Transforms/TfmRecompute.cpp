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
// values; the others are rebuilt from the layer's arguments by a re-run
// marked `tfm.recompute` right before the backward call (full), or from the
// kept values at the start of a variant of `@B_bwd` (selective). Variants
// are made once per block function.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Tfm/IR/TfmAttrNames.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"
#include "autoshard/Dialect/Tfm/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace autoshard::tfm {
#define GEN_PASS_DEF_TFMRECOMPUTE
#include "autoshard/Dialect/Tfm/Transforms/Passes.h.inc"
} // namespace autoshard::tfm

using namespace mlir;
using namespace autoshard::tfm;

namespace {

/// Bytes of a tensor value (0 for anything else).
int64_t getBytes(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return 0;
  return type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
}

/// The ops that selective recomputation re-runs in the backward: norms,
/// activations and elementwise ops (memory-bound, a few FLOPs per element),
/// views (the CheapToRecompute trait) and constants. Matmuls, attention, MoE
/// routing/dispatch/combine, embeddings and calls are never recomputed by
/// `selective`.
bool isCheapToRecompute(Operation *op) {
  if (op->getNumOperands() == 0 && op->hasTrait<OpTrait::ConstantLike>())
    return true;
  return op->hasTrait<trait::CheapToRecompute>();
}

/// One layer's forward call and the backward call that reads its residuals.
struct LayerCalls {
  func::CallOp fwd, bwd;
  /// The forward call's results before the residuals (@B's results).
  unsigned numOutputs;
};

/// What selective recomputation does for one `@B_fwd` / `@B_bwd` pair.
struct SelectivePlan {
  /// Results of `@B` (before the residuals of `@B_fwd`).
  unsigned numOutputs;
  /// Arguments of `@B_bwd` before its residuals (dy..., arguments of `@B`).
  unsigned numBwdInputs;
  /// `@B_selective_fwd`: `@B_fwd` returning the kept values after the
  /// outputs; null when nothing is recomputed (the pair stays).
  func::FuncOp fwd;
  /// `@B_selective_bwd(<inputs of @B_bwd before the residuals>, <arguments
  /// of @B_fwd the recomputation reads>, kept...)`: recomputes the other
  /// residuals, then runs `@B_bwd`'s body.
  func::FuncOp bwd;
  /// Arguments of `@B_fwd` that `bwd` takes after the inputs of `@B_bwd`
  /// (those the recomputation reads and `@B_bwd` does not take).
  SmallVector<unsigned> recomputeArgs;
  /// Arguments of `@B_fwd` the recomputation reads that `@B_bwd` takes too:
  /// (argument of `@B_fwd`, input of `@B_bwd`), the same value at every call.
  SmallVector<std::pair<unsigned, unsigned>> sharedArgs;
};

/// What full recomputation calls for one `@B_fwd`.
struct FullPair {
  /// `@B_full_fwd`: `@B_fwd` without its residuals (the forward).
  func::FuncOp fwd;
  /// `@B_recompute_full`: `@B_fwd` returning only its residuals (the re-run
  /// before the backward; what only the outputs need is left out). It
  /// takes every argument of `@B_fwd`, so that the re-run call has the
  /// forward call's operands (dist-pipeline-split finds a re-run's layer
  /// by them).
  func::FuncOp recompute;
};

/// `@B` for `@B_fwd`.
StringRef getBlockName(func::FuncOp fwd) {
  StringRef name = fwd.getSymName();
  name.consume_back("_fwd");
  return name;
}

/// Marks result i of re-run function `func` as residual i of `@B_bwd`
/// (`tfm.residual = i`). This also tells the sharding seeders that no result
/// is the block's hidden output.
void setResidualAttrs(func::FuncOp func) {
  Builder b(func.getContext());
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    func.setResultAttr(i, kResidualAttrName, b.getI64IntegerAttr(i));
}

class Recompute {
public:
  Recompute(ModuleOp module, StringRef mode) : symbols(module), mode(mode) {}

  /// Rewrites one layer's calls.
  LogicalResult rewrite(const LayerCalls &layer);

private:
  FailureOr<const FullPair *> getFullPair(func::FuncOp fwd,
                                          unsigned numOutputs);
  FailureOr<const SelectivePlan *> getSelectivePlan(const LayerCalls &layer,
                                                    func::FuncOp fwd,
                                                    func::FuncOp bwd,
                                                    unsigned numBwdInputs);
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
  pair->fwd = cloneWithResults(fwd, (getBlockName(fwd) + "_full_fwd").str(),
                               numOutputs, {});
  pair->recompute =
      cloneWithResults(fwd, (getBlockName(fwd) + "_recompute_full").str(),
                       /*numOutputs=*/0, residuals);
  setResidualAttrs(pair->recompute);
  setFuncKind(pair->recompute, FuncKind::Recompute);
  auto &slot = fullPairs[fwd];
  slot = std::move(pair);
  return slot.get();
}

FailureOr<const SelectivePlan *>
Recompute::getSelectivePlan(const LayerCalls &layer, func::FuncOp fwd,
                            func::FuncOp bwd, unsigned numBwdInputs) {
  unsigned numOutputs = layer.numOutputs;
  func::CallOp fwdCall = layer.fwd, bwdCall = layer.bwd;
  auto it = selectivePlans.find(fwd);
  if (it != selectivePlans.end()) {
    if (it->second->numOutputs != numOutputs ||
        it->second->numBwdInputs != numBwdInputs)
      return fwd.emitError()
             << "tfm-recompute: calls of @" << fwd.getSymName() << " and @"
             << bwd.getSymName()
             << " disagree on their number of outputs and inputs ("
             << it->second->numOutputs << ", " << it->second->numBwdInputs
             << " and " << numOutputs << ", " << numBwdInputs << ")";
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
  plan->numBwdInputs = numBwdInputs;
  auto &slot = selectivePlans[fwd];
  if (recomputed.empty()) {
    // Nothing cheap to recompute: the pair stays as tfm-autodiff made it.
    slot = std::move(plan);
    return slot.get();
  }
  if (bwd.getNumArguments() != numBwdInputs + residuals.size())
    return bwd.emitError() << "tfm-recompute: @" << bwd.getSymName()
                           << " takes " << bwd.getNumArguments()
                           << " arguments, expected " << numBwdInputs
                           << " inputs and " << residuals.size()
                           << " residuals of @" << fwd.getSymName();

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
  plan->fwd =
      cloneWithResults(fwd, (getBlockName(fwd) + "_selective_fwd").str(),
                       numOutputs, keptValues);

  // @B_selective_bwd(<inputs of @B_bwd before the residuals>, <arguments
  // of @B_fwd the recomputation reads>, kept...).
  llvm::DenseSet<Value> reads;
  for (Operation *op : opsInOrder)
    reads.insert(op->operand_begin(), op->operand_end());
  SmallVector<Type> inputTypes(bwd.getArgumentTypes().take_front(numBwdInputs));
  SmallVector<DictionaryAttr> inputAttrs;
  for (unsigned i = 0; i < numBwdInputs; ++i)
    inputAttrs.push_back(bwd.getArgAttrDict(i));
  for (BlockArgument arg : body.getArguments()) {
    if (!reads.contains(arg))
      continue;
    unsigned index = arg.getArgNumber();
    Value operand = fwdCall.getOperand(index);
    OperandRange bwdInputs = bwdCall.getOperands().take_front(numBwdInputs);
    if (auto shared = llvm::find(bwdInputs, operand);
        shared != bwdInputs.end()) {
      plan->sharedArgs.emplace_back(index,
                                    std::distance(bwdInputs.begin(), shared));
      continue;
    }
    plan->recomputeArgs.push_back(index);
    inputTypes.push_back(arg.getType());
    inputAttrs.push_back(fwd.getArgAttrDict(index));
  }
  for (Value v : keptValues) {
    inputTypes.push_back(v.getType());
    inputAttrs.push_back(nullptr);
  }
  OpBuilder b(fwd.getContext());
  auto newBwd = func::FuncOp::create(
      b, bwd.getLoc(), (getBlockName(fwd) + "_selective_bwd").str(),
      FunctionType::get(fwd.getContext(), inputTypes, bwd.getResultTypes()));
  newBwd.setPrivate();
  setFuncKind(newBwd, FuncKind::Backward);
  // It recomputes part of the forward (dist-explain reports it).
  newBwd->setAttr(kRecomputeAttrName, b.getUnitAttr());
  newBwd.addEntryBlock();
  newBwd.setAllArgAttrs(inputAttrs);
  if (ArrayAttr resultAttrs = bwd.getAllResultAttrs())
    newBwd.setAllResultAttrs(resultAttrs);
  ValueRange newArgs = newBwd.getArguments();
  // The recomputation, from the arguments and the kept values.
  IRMapping recomputeMap;
  for (auto [index, input] : plan->sharedArgs)
    recomputeMap.map(body.getArgument(index), newArgs[input]);
  for (auto [i, index] : llvm::enumerate(plan->recomputeArgs))
    recomputeMap.map(body.getArgument(index), newArgs[numBwdInputs + i]);
  unsigned firstKept = numBwdInputs + plan->recomputeArgs.size();
  for (auto [i, v] : llvm::enumerate(keptValues))
    recomputeMap.map(v, newArgs[firstKept + i]);
  OpBuilder inner = OpBuilder::atBlockEnd(&newBwd.front());
  for (Operation *op : opsInOrder)
    inner.clone(*op, recomputeMap);
  // Then @B_bwd's body, its residuals taken from the kept values or the
  // recomputation.
  IRMapping bwdMap;
  for (unsigned i = 0; i < numBwdInputs; ++i)
    bwdMap.map(bwd.getArgument(i), newArgs[i]);
  for (auto [i, r] : llvm::enumerate(residuals))
    bwdMap.map(bwd.getArgument(numBwdInputs + i), recomputeMap.lookup(r));
  for (Operation &op : bwd.front())
    inner.clone(op, bwdMap);
  symbols.insert(newBwd, std::next(Block::iterator(bwd)));
  plan->bwd = newBwd;
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
  recomputeAttrs.set(kRecomputeAttrName, UnitAttr::get(fwdCall.getContext()));

  OpBuilder before(bwdCall);
  OpBuilder forward(fwdCall);
  func::CallOp newFwd;
  if (mode == "full") {
    FailureOr<const FullPair *> pair = getFullPair(fwd, numOutputs);
    if (failed(pair))
      return failure();
    // The re-run of the forward, right before the backward.
    auto rerun = func::CallOp::create(
        before, fwdCall.getLoc(), (*pair)->recompute, fwdCall.getOperands());
    rerun->setDiscardableAttrs(
        recomputeAttrs.getDictionary(fwdCall.getContext()));
    for (unsigned i = 0; i < numResiduals; ++i)
      bwdCall->setOperand(firstResidual + i, rerun.getResult(i));
    newFwd = func::CallOp::create(forward, fwdCall.getLoc(), (*pair)->fwd,
                                  fwdCall.getOperands());
  } else {
    auto bwd = symbols.lookup<func::FuncOp>(bwdCall.getCallee());
    FailureOr<const SelectivePlan *> planOr =
        getSelectivePlan(layer, fwd, bwd, firstResidual);
    if (failed(planOr))
      return failure();
    const SelectivePlan &plan = **planOr;
    if (!plan.fwd)
      return success();
    for (auto [index, input] : plan.sharedArgs)
      if (fwdCall.getOperand(index) != bwdCall.getOperand(input))
        return bwdCall.emitOpError()
               << "takes operand #" << input << " where @" << fwd.getSymName()
               << " took operand #" << index
               << " at the first layer, but a different value here";
    newFwd = func::CallOp::create(forward, fwdCall.getLoc(), plan.fwd,
                                  fwdCall.getOperands());
    SmallVector<Value> operands(
        bwdCall.getOperands().take_front(firstResidual));
    for (unsigned i : plan.recomputeArgs)
      operands.push_back(fwdCall.getOperand(i));
    llvm::append_range(operands, newFwd.getResults().drop_front(numOutputs));
    auto newBwd =
        func::CallOp::create(before, bwdCall.getLoc(), plan.bwd, operands);
    newBwd->setDiscardableAttrs(bwdCall->getDiscardableAttrDictionary());
    bwdCall.replaceAllUsesWith(newBwd.getResults());
    bwdCall.erase();
  }
  newFwd->setDiscardableAttrs(fwdCall->getDiscardableAttrDictionary());
  for (unsigned i = 0; i < numOutputs; ++i)
    fwdCall.getResult(i).replaceAllUsesWith(newFwd.getResult(i));
  fwdCall.erase();
  return success();
}

/// The forward call whose residuals backward call `bwd` (of `@B_bwd`)
/// reads: the residuals are the trailing results of a call of a forward
/// function (`@B_fwd`), passed in order as the trailing operands of `bwd`.
/// A null `fwd` when the backward reads no residual (nothing to recompute).
FailureOr<LayerCalls> matchLayer(func::CallOp bwd, SymbolTable &symbols) {
  LayerCalls layer{nullptr, bwd, 0};
  unsigned numOperands = bwd.getNumOperands();
  if (numOperands == 0)
    return layer;
  auto fwd = bwd.getOperand(numOperands - 1).getDefiningOp<func::CallOp>();
  if (!fwd || getFuncKind(symbols.lookup(fwd.getCallee())) != FuncKind::Forward)
    return layer;
  StringRef fwdName = fwd.getCallee();
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
    if (auto existing = module->getAttrOfType<StringAttr>(kRecomputeAttrName)) {
      module.emitError() << "tfm-recompute: the module is already rewritten ("
                         << kRecomputeAttrName << " = \"" << existing.getValue()
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
          if (getFuncKind(symbols.lookup(call.getCallee())) !=
              FuncKind::Backward)
            return WalkResult::advance();
          FailureOr<LayerCalls> layer = matchLayer(call, symbols);
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
        callees.insert(layer.bwd.getCalleeAttr().getAttr());
        if (failed(recompute.rewrite(layer)))
          return signalPassFailure();
      }
      // The pair functions that no call uses any more are removed.
      for (StringAttr name : callees) {
        auto func = symbols.lookup<func::FuncOp>(name);
        if (func && SymbolTable::symbolKnownUseEmpty(func, module))
          symbols.erase(func);
      }
    }
    module->setAttr(kRecomputeAttrName,
                    StringAttr::get(module.getContext(), m));
  }
};

} // namespace
