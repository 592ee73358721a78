//===- TfmAutodiff.cpp - Training step from the forward function ---------===//
//
// `tfm-autodiff` turns the model builder's `@forward(...) -> loss` into the
// entry points of spec/autodiff.md: `@train_step` (forward, reverse pass,
// global-norm clipping, AdamW), `@eval` (the forward with dropout off, which
// replaces `@forward`), `@logits` (`@eval` without the loss) and a
// `@B_fwd`/`@B_bwd` pair per block function `@B`, plus a dropout-free
// `@B_infer` per block function that contains dropout.
//
// The reverse pass is reverse-mode over one function body: ops are visited
// in reverse program order, each op's TfmVJPOpInterface rule turns its result
// gradients into operand gradients, and a value with several uses gets the
// sum of their gradients (tfm.add, in reverse program order, so the result
// is deterministic). A block call is differentiated through its pair:
// `@B_fwd` replaces the call and also returns residuals, and `@B_bwd` takes
// them in the reverse pass.
//
// A pair is made by building the joint forward + backward body of `@B` once
// and splitting it: the values the backward part reads are either arguments
// of `@B` (passed to `@B_bwd` directly) or values computed in the forward
// part (the residuals, returned by `@B_fwd` in program order). So the
// residual set is exactly what the VJP rules read, and choosing to recompute
// instead of saving (later) is a rewrite of this split.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Tfm/IR/TfmAttrNames.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"
#include "autoshard/Dialect/Tfm/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>

namespace autoshard::tfm {
#define GEN_PASS_DEF_TFMAUTODIFF
#include "autoshard/Dialect/Tfm/Transforms/Passes.h.inc"
} // namespace autoshard::tfm

using namespace mlir;
using namespace autoshard::tfm;

namespace {

/// Only float tensors carry gradients; ids, labels, step and layer indices
/// do not.
bool isDifferentiable(Type type) {
  return static_cast<bool>(getFloatTensorType(type));
}

/// Erases the ops of `ops` (in program order) that are side-effect free and
/// unused, last first, so that a chain of dead ops goes in one sweep.
void eraseDeadOps(ArrayRef<Operation *> ops) {
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
}

/// A readable name of argument `index` of `func` for diagnostics: its
/// `tfm.param`, `tfm.name` or `tfm.role`, else its number.
std::string describeArg(func::FuncOp func, unsigned index) {
  for (StringRef attr : {kParamAttrName, kNameAttrName, kRoleAttrName})
    if (auto name = func.getArgAttrOfType<StringAttr>(index, attr))
      return ("#" + Twine(index) + " ('" + name.getValue() + "')").str();
  return ("#" + Twine(index)).str();
}

/// The pair generated for one block function, as its call sites need it.
struct BlockPair {
  func::FuncOp fwd, bwd;
  /// Indices of the block's float results; `@B_bwd` takes one dy for each.
  SmallVector<unsigned> floatResults;
  /// Indices of the block's arguments that `@B_bwd` takes after the dy.
  SmallVector<unsigned> bwdArgs;
  /// Indices of the block's float arguments; `@B_bwd` returns one gradient
  /// for each, in this order.
  SmallVector<unsigned> floatArgs;
};

class Differentiator;

/// The reverse pass over one function body (the block of `@train_step` or
/// the joint body of a block function). The forward ops are the ops present
/// when it is created; every op it emits (the backward part) goes before the
/// terminator.
class BodyGradient {
public:
  BodyGradient(Differentiator &diff, Block &body);

  /// Seeds `outputs` with `outputGrads` and runs the reverse pass.
  LogicalResult run(ValueRange outputs, ValueRange outputGrads);

  /// Gradient of a block argument, or null when it does not reach an output.
  Value argGrad(unsigned index) const {
    return grads.lookup(body.getArgument(index));
  }

  bool isForward(Operation *op) const { return forwardOps.contains(op); }

  /// Erases backward ops whose results are unused (gradients nobody needs,
  /// e.g. of an input that is not a parameter). Call after the terminator
  /// uses every gradient that must survive.
  void eraseDeadBackwardOps();

private:
  void accumulate(Value value, Value grad);
  LogicalResult differentiateCall(func::CallOp call, ValueRange resultGrads);

  Differentiator &diff;
  Block &body;
  OpBuilder builder;
  llvm::DenseSet<Operation *> forwardOps;
  DenseMap<Value, Value> grads;
};

/// Owns the pairs of the block functions of one module (one per callee, made
/// on first use) and the symbol table they go into.
class Differentiator {
public:
  explicit Differentiator(ModuleOp module) : symbols(module) {}

  /// The pair of `callee`, made on first use.
  FailureOr<const BlockPair *> getPair(func::CallOp call);

  SymbolTable &getSymbols() { return symbols; }

private:
  FailureOr<BlockPair> makePair(func::FuncOp block);

  SymbolTable symbols;
  /// Pointers into it are handed out, hence the indirection.
  DenseMap<Operation *, std::unique_ptr<BlockPair>> pairs;
  /// Blocks whose pair is being made: a call back into one is recursion.
  llvm::SmallPtrSet<Operation *, 4> inProgress;
};

//===----------------------------------------------------------------------===//
// BodyGradient
//===----------------------------------------------------------------------===//

BodyGradient::BodyGradient(Differentiator &diff, Block &body)
    : diff(diff), body(body), builder(body.getTerminator()) {
  for (Operation &op : body.without_terminator())
    forwardOps.insert(&op);
}

void BodyGradient::accumulate(Value value, Value grad) {
  if (!grad || !isDifferentiable(value.getType()))
    return;
  Value &slot = grads[value];
  slot = slot ? AddOp::create(builder, grad.getLoc(), slot, grad) : grad;
}

LogicalResult BodyGradient::run(ValueRange outputs, ValueRange outputGrads) {
  for (auto [output, grad] : llvm::zip_equal(outputs, outputGrads))
    accumulate(output, grad);

  // A snapshot: differentiating a call replaces it by its `@B_fwd` call.
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    if (isForward(&op))
      ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    SmallVector<Value> resultGrads;
    for (Value result : op->getResults())
      resultGrads.push_back(grads.lookup(result));
    if (llvm::all_of(resultGrads, [](Value g) { return !g; }))
      continue;
    // Constants (e.g. a layer index) have nothing to differentiate.
    if (op->getNumOperands() == 0 && op->hasTrait<OpTrait::ConstantLike>())
      continue;

    if (auto call = dyn_cast<func::CallOp>(op)) {
      if (failed(differentiateCall(call, resultGrads)))
        return failure();
      continue;
    }
    auto rule = dyn_cast<TfmVJPOpInterface>(op);
    if (!rule)
      return op->emitOpError()
             << "has no VJP rule, but its result reaches the loss";
    SmallVector<Value> operandGrads;
    if (failed(rule.buildVJP(builder, resultGrads, operandGrads)))
      return failure();
    if (operandGrads.size() != op->getNumOperands())
      return op->emitOpError()
             << "VJP rule returned " << operandGrads.size() << " gradients for "
             << op->getNumOperands() << " operands";
    for (auto [operand, grad] :
         llvm::zip_equal(op->getOperands(), operandGrads))
      accumulate(operand, grad);
  }
  return success();
}

/// Replaces `call @B(args)` by `call @B_fwd(args)` (which also returns the
/// residuals) and emits `call @B_bwd(dy..., args read by the backward...,
/// residuals...)` in the backward part.
LogicalResult BodyGradient::differentiateCall(func::CallOp call,
                                              ValueRange resultGrads) {
  FailureOr<const BlockPair *> pair = diff.getPair(call);
  if (failed(pair))
    return failure();
  const BlockPair &p = **pair;

  SmallVector<Value> bwdOperands;
  for (unsigned i : p.floatResults) {
    if (!resultGrads[i])
      return call.emitOpError()
             << "result #" << i << " does not reach the loss; tfm-autodiff "
             << "needs a gradient for every float result of @"
             << call.getCallee();
    bwdOperands.push_back(resultGrads[i]);
  }
  for (unsigned i : p.bwdArgs)
    bwdOperands.push_back(call.getOperand(i));

  OpBuilder fwdBuilder(call);
  auto fwdCall = func::CallOp::create(fwdBuilder, call.getLoc(), p.fwd,
                                      call.getOperands());
  fwdCall->setDiscardableAttrs(call->getDiscardableAttrDictionary());
  unsigned numResults = call.getNumResults();
  call.replaceAllUsesWith(fwdCall.getResults().take_front(numResults));
  llvm::append_range(bwdOperands, fwdCall.getResults().drop_front(numResults));
  forwardOps.erase(call);
  forwardOps.insert(fwdCall);
  // The erased results' storage may be reused by new values.
  for (Value result : call.getResults())
    grads.erase(result);
  call.erase();

  auto bwdCall =
      func::CallOp::create(builder, fwdCall.getLoc(), p.bwd, bwdOperands);
  for (auto [i, grad] : llvm::enumerate(bwdCall.getResults()))
    accumulate(fwdCall.getOperand(p.floatArgs[i]), grad);
  return success();
}

void BodyGradient::eraseDeadBackwardOps() {
  SmallVector<Operation *> backward;
  for (Operation &op : body.without_terminator())
    if (!isForward(&op))
      backward.push_back(&op);
  eraseDeadOps(backward);
}

//===----------------------------------------------------------------------===//
// Differentiator
//===----------------------------------------------------------------------===//

FailureOr<const BlockPair *> Differentiator::getPair(func::CallOp call) {
  auto block = symbols.lookup<func::FuncOp>(call.getCallee());
  if (!block || block.isExternal())
    return call.emitOpError() << "calls @" << call.getCallee()
                              << ", which has no body to differentiate";
  auto it = pairs.find(block);
  if (it != pairs.end())
    return it->second.get();
  if (!inProgress.insert(block).second)
    return call.emitOpError() << "recursive call to @" << call.getCallee()
                              << " cannot be differentiated";
  FailureOr<BlockPair> pair = makePair(block);
  inProgress.erase(block);
  if (failed(pair))
    return failure();
  auto &slot = pairs[block];
  slot = std::make_unique<BlockPair>(std::move(*pair));
  return slot.get();
}

/// Values of the forward part of a joint body that its backward part reads,
/// split into block arguments and op results (the residuals).
struct BackwardInputs {
  /// Block argument indices, ascending.
  SmallVector<unsigned> args;
  /// Results of forward ops, in program order.
  SmallVector<Value> residuals;
  /// Forward constants read by the backward, and conversions of block
  /// arguments it reads: cloned rather than saved.
  SmallVector<Operation *> constants;
};

/// A `tfm.cast` of an argument of the block (tfm-mixed-precision's bf16
/// copy of an f32 weight, or the f32 copy of a bf16 input of a norm): the
/// backward recomputes it from the argument rather than saving it (one
/// elementwise pass instead of a residual, and the backward then reads the
/// weight itself, as without the cast).
bool isArgumentCast(Operation &op, Block &body, unsigned numBlockArgs) {
  if (!isa<CastOp>(op))
    return false;
  auto arg = dyn_cast<BlockArgument>(op.getOperand(0));
  return arg && arg.getOwner() == &body && arg.getArgNumber() < numBlockArgs;
}

BackwardInputs collectBackwardInputs(BodyGradient &gradient, Block &body,
                                     unsigned numBlockArgs) {
  llvm::DenseSet<Value> read;
  for (Operation &op : body)
    if (!gradient.isForward(&op))
      read.insert(op.operand_begin(), op.operand_end());
  for (Operation &op : body)
    if (gradient.isForward(&op) && isArgumentCast(op, body, numBlockArgs) &&
        read.contains(op.getResult(0)))
      read.insert(op.getOperand(0));

  BackwardInputs inputs;
  for (unsigned i = 0; i < numBlockArgs; ++i)
    if (read.contains(body.getArgument(i)))
      inputs.args.push_back(i);
  for (Operation &op : body.without_terminator()) {
    bool used = gradient.isForward(&op) &&
                llvm::any_of(op.getResults(),
                             [&](Value v) { return read.contains(v); });
    if (!used)
      continue;
    if ((op.getNumOperands() == 0 && op.hasTrait<OpTrait::ConstantLike>()) ||
        isArgumentCast(op, body, numBlockArgs)) {
      inputs.constants.push_back(&op);
      continue;
    }
    for (Value result : op.getResults())
      if (read.contains(result))
        inputs.residuals.push_back(result);
  }
  return inputs;
}

/// Creates a private function named `name` (made unique) after `anchor`.
func::FuncOp createFunc(SymbolTable &symbols, Operation *anchor, Twine name,
                        FunctionType type) {
  OpBuilder b(anchor->getContext());
  auto func = func::FuncOp::create(b, anchor->getLoc(), name.str(), type);
  func.setPrivate();
  symbols.insert(func, std::next(Block::iterator(anchor)));
  func.addEntryBlock();
  return func;
}

/// Clones `ops` (in order) into `func`'s entry block and ends it with a
/// return of the mapped `results`.
void cloneInto(func::FuncOp func, ArrayRef<Operation *> ops, IRMapping &map,
               ValueRange results) {
  OpBuilder b = OpBuilder::atBlockEnd(&func.front());
  for (Operation *op : ops)
    b.clone(*op, map);
  SmallVector<Value> mapped;
  for (Value v : results)
    mapped.push_back(map.lookupOrDefault(v));
  func::ReturnOp::create(b, func.getLoc(), mapped);
}

FailureOr<BlockPair> Differentiator::makePair(func::FuncOp block) {
  BlockPair pair;
  FunctionType blockType = block.getFunctionType();
  unsigned numArgs = blockType.getNumInputs();
  for (auto [i, type] : llvm::enumerate(blockType.getResults()))
    if (isDifferentiable(type))
      pair.floatResults.push_back(i);
  for (auto [i, type] : llvm::enumerate(blockType.getInputs()))
    if (isDifferentiable(type))
      pair.floatArgs.push_back(i);

  // The joint body: @B's body with one dy argument per float result and the
  // reverse pass appended. It is only a scratch copy, split below.
  OwningOpRef<func::FuncOp> joint = block.clone();
  Block &body = joint->front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Value> outputs, dys;
  for (unsigned i : pair.floatResults) {
    outputs.push_back(ret.getOperand(i));
    dys.push_back(body.addArgument(blockType.getResult(i), block.getLoc()));
  }
  BodyGradient gradient(*this, body);
  if (failed(gradient.run(outputs, dys)))
    return failure();

  SmallVector<Value> argGrads;
  for (unsigned i : pair.floatArgs) {
    Value grad = gradient.argGrad(i);
    if (!grad)
      return block.emitError()
             << "argument " << describeArg(block, i) << " of @"
             << block.getSymName()
             << " does not reach its results, so it has no gradient";
    argGrads.push_back(grad);
  }
  // The gradients are the backward part's results: a temporary terminator
  // keeps them alive through dead-code removal and counts as a reader (a
  // gradient may be a forward value, e.g. dy passed through).
  SmallVector<Value> yields(ret.getOperands());
  ret->setOperands(argGrads);
  gradient.eraseDeadBackwardOps();
  BackwardInputs inputs = collectBackwardInputs(gradient, body, numArgs);

  // @B_fwd: @B's arguments -> (@B's results, residuals).
  SmallVector<Type> fwdResults(blockType.getResults());
  for (Value r : inputs.residuals)
    fwdResults.push_back(r.getType());
  pair.fwd = createFunc(
      symbols, block, block.getSymName() + "_fwd",
      FunctionType::get(block.getContext(), blockType.getInputs(), fwdResults));
  // (A block whose arguments carry no attributes has no array.)
  if (ArrayAttr argAttrs = block.getAllArgAttrs())
    pair.fwd.setAllArgAttrs(argAttrs);
  setFuncKind(pair.fwd, FuncKind::Forward);
  SmallVector<Value> fwdYields(yields);
  llvm::append_range(fwdYields, inputs.residuals);
  IRMapping fwdMap;
  fwdMap.map(body.getArguments().take_front(numArgs), pair.fwd.getArguments());
  SmallVector<Operation *> fwdOps, bwdOps(inputs.constants);
  for (Operation &op : body.without_terminator())
    (gradient.isForward(&op) ? fwdOps : bwdOps).push_back(&op);
  cloneInto(pair.fwd, fwdOps, fwdMap, fwdYields);

  // @B_bwd: (dy..., @B's arguments it reads, residuals) -> gradients.
  SmallVector<Value> bwdInputs(dys);
  SmallVector<DictionaryAttr> bwdArgAttrs(dys.size());
  for (unsigned i : inputs.args) {
    bwdInputs.push_back(body.getArgument(i));
    bwdArgAttrs.push_back(block.getArgAttrDict(i));
  }
  llvm::append_range(bwdInputs, inputs.residuals);
  bwdArgAttrs.resize(bwdInputs.size());
  SmallVector<Type> gradTypes;
  SmallVector<DictionaryAttr> gradAttrs;
  for (unsigned i : pair.floatArgs) {
    gradTypes.push_back(blockType.getInput(i));
    gradAttrs.push_back(block.getArgAttrDict(i));
  }
  pair.bwd = createFunc(symbols, pair.fwd, block.getSymName() + "_bwd",
                        FunctionType::get(block.getContext(),
                                          ValueRange(bwdInputs).getTypes(),
                                          gradTypes));
  pair.bwd.setAllArgAttrs(bwdArgAttrs);
  setFuncKind(pair.bwd, FuncKind::Backward);
  pair.bwd.setAllResultAttrs(gradAttrs);
  IRMapping bwdMap;
  bwdMap.map(bwdInputs, pair.bwd.getArguments());
  cloneInto(pair.bwd, bwdOps, bwdMap, argGrads);
  pair.bwdArgs = std::move(inputs.args);
  return pair;
}

//===----------------------------------------------------------------------===//
// Inference (dropout off)
//===----------------------------------------------------------------------===//

/// Makes function bodies dropout-free for the inference entries (`@eval`,
/// `@logits`), as PyTorch's `model.eval()`: every `tfm.dropout` becomes its
/// input, and a call to a function that contains dropout (itself or through
/// its callees) goes to that function's dropout-free clone `@B_infer`, made
/// once per callee. Functions without dropout are called as they are.
class InferenceCloner {
public:
  explicit InferenceCloner(SymbolTable &symbols) : symbols(symbols) {}

  /// Whether `func` or a function it calls (transitively) has a dropout.
  bool hasDropout(func::FuncOp func);

  /// Rewrites `body` in place as above, then erases the pure ops that only
  /// the dropouts read (e.g. a layer-index constant).
  LogicalResult stripDropout(Block &body);

private:
  struct Clone {
    func::FuncOp func;
    /// Argument indices of the original that the clone keeps (in order):
    /// an argument only dropout read (the step, a layer index) is dropped.
    SmallVector<unsigned> kept;
  };
  FailureOr<Clone> getClone(func::CallOp call, func::FuncOp callee);

  SymbolTable &symbols;
  DenseMap<Operation *, bool> dropoutMemo;
  DenseMap<Operation *, Clone> clones;
  /// Callees whose clone is being made: a call back into one is recursion.
  llvm::SmallPtrSet<Operation *, 4> inProgress;
};

bool InferenceCloner::hasDropout(func::FuncOp func) {
  if (func.isExternal())
    return false;
  auto [it, inserted] = dropoutMemo.try_emplace(func, false);
  if (!inserted)
    return it->second; // Known, or on the current path (recursion).
  bool found = false;
  func.walk([&](Operation *op) {
    if (isa<DropoutOp>(op)) {
      found = true;
    } else if (auto call = dyn_cast<func::CallOp>(op)) {
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
        found = hasDropout(callee);
    }
    return found ? WalkResult::interrupt() : WalkResult::advance();
  });
  dropoutMemo[func] = found;
  return found;
}

LogicalResult InferenceCloner::stripDropout(Block &body) {
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    if (auto dropout = dyn_cast<DropoutOp>(op)) {
      dropout.replaceAllUsesWith(dropout.getX());
      dropout.erase();
      continue;
    }
    auto call = dyn_cast<func::CallOp>(op);
    if (!call)
      continue;
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || !hasDropout(callee))
      continue;
    FailureOr<Clone> clone = getClone(call, callee);
    if (failed(clone))
      return failure();
    SmallVector<Value> operands;
    for (unsigned i : clone->kept)
      operands.push_back(call.getOperand(i));
    OpBuilder b(call);
    auto newCall =
        func::CallOp::create(b, call.getLoc(), clone->func, operands);
    newCall->setDiscardableAttrs(call->getDiscardableAttrDictionary());
    call.replaceAllUsesWith(newCall.getResults());
    call.erase();
  }
  eraseDeadOps(
      llvm::to_vector(llvm::make_pointer_range(body.without_terminator())));
  return success();
}

FailureOr<InferenceCloner::Clone>
InferenceCloner::getClone(func::CallOp call, func::FuncOp callee) {
  auto it = clones.find(callee);
  if (it != clones.end())
    return it->second;
  if (!inProgress.insert(callee).second)
    return call.emitOpError() << "recursive call to @" << call.getCallee()
                              << " cannot be made dropout-free";
  func::FuncOp func = callee.clone();
  func.setSymName((callee.getSymName() + "_infer").str());
  func.setPrivate();
  symbols.insert(func, std::next(Block::iterator(callee)));
  Block &body = func.front();
  SmallVector<bool> usedBefore = llvm::map_to_vector(
      body.getArguments(), [](BlockArgument arg) { return !arg.use_empty(); });
  if (failed(stripDropout(body))) {
    symbols.erase(func);
    return failure();
  }
  inProgress.erase(callee);
  Clone clone{func, {}};
  llvm::BitVector dropped(body.getNumArguments());
  for (BlockArgument arg : body.getArguments()) {
    if (usedBefore[arg.getArgNumber()] && arg.use_empty())
      dropped.set(arg.getArgNumber());
    else
      clone.kept.push_back(arg.getArgNumber());
  }
  if (failed(func.eraseArguments(dropped)))
    return failure();
  clones[callee] = clone;
  return clone;
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

StringAttr str(MLIRContext *ctx, const Twine &value) {
  return StringAttr::get(ctx, value);
}

/// What each argument of @forward is.
struct ForwardSignature {
  /// Argument index of the tokens, labels and (optional) step inputs.
  unsigned tokens = ~0u, labels = ~0u;
  std::optional<unsigned> step;
  /// Argument indices of the parameters, in order, and their names.
  SmallVector<unsigned> params;
  SmallVector<StringRef> names;
};

FailureOr<ForwardSignature> classifyForwardArgs(func::FuncOp forward) {
  ForwardSignature sig;
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i) {
    if (auto param = forward.getArgAttrOfType<StringAttr>(i, kParamAttrName)) {
      sig.params.push_back(i);
      sig.names.push_back(param.getValue());
      continue;
    }
    auto input = forward.getArgAttrOfType<StringAttr>(i, kInputAttrName);
    StringRef kind = input ? input.getValue() : "";
    if (kind == "tokens")
      sig.tokens = i;
    else if (kind == "labels")
      sig.labels = i;
    else if (kind == "step")
      sig.step = i;
    else
      return forward.emitError()
             << "argument #" << i
             << " of @forward must carry tfm.param or tfm.input = "
                "\"tokens\" | \"labels\" | \"step\"";
  }
  if (sig.tokens == ~0u || sig.labels == ~0u)
    return forward.emitError()
           << "@forward must have tfm.input = \"tokens\" and \"labels\" "
              "arguments";
  if (sig.params.empty())
    return forward.emitError() << "@forward has no tfm.param arguments";
  return sig;
}

/// Gradient accumulation (see the pass description): the ops of `body`
/// before `end` compute one microbatch from the id arguments `ids` (tokens,
/// labels, whose batch dim is widened here by `count`). They run once per
/// microbatch, each on its rows (`tfm.microbatch`); the uses of `outputs`
/// from `end` on then read the mean of those values over the microbatches
/// (sums accumulated after each microbatch, so that one microbatch's
/// activations are alive at a time, then scaled by `1 / count`; each sum
/// right after the op that produced its value, e.g. the layer's backward).
/// Dropout keys its masks on (seed, step, layer, site, element of the
/// microbatch's tensor), so every microbatch would drop the same elements.
/// Returns the layer-key constants among `ops` (scalar i64 constants read as
/// a dropout's `layer` or passed to a block call, which keys its dropouts on
/// it) and sets `stride` to one more than the largest key, so that
/// microbatch j can use the keys k + j * stride. Empty when no dropout has a
/// positive rate. Fails (with an error) on a dropout whose layer is not such
/// a constant.
FailureOr<SmallVector<arith::ConstantOp>>
findDropoutLayerKeys(ArrayRef<Operation *> ops, int64_t &stride) {
  SmallVector<arith::ConstantOp> keys;
  stride = 0;
  auto isKey = [](arith::ConstantOp constant) {
    auto type = dyn_cast<RankedTensorType>(constant.getType());
    return type && type.getRank() == 0 && type.getElementType().isInteger(64) &&
           llvm::all_of(constant->getUses(), [](OpOperand &use) {
             return isa<func::CallOp>(use.getOwner()) ||
                    (isa<DropoutOp, DropoutGradOp>(use.getOwner()) &&
                     use.getOperandNumber() == 2);
           });
  };
  bool dropout = false;
  for (Operation *op : ops) {
    if (!isa<DropoutOp, DropoutGradOp>(op) && !isa<func::CallOp>(op))
      continue;
    bool positive = false;
    if (auto d = dyn_cast<DropoutOp>(op))
      positive = d.getRate().convertToDouble() > 0;
    else if (auto d = dyn_cast<DropoutGradOp>(op))
      positive = d.getRate().convertToDouble() > 0;
    dropout |= positive;
    if (positive) {
      auto constant = op->getOperand(2).getDefiningOp<arith::ConstantOp>();
      if (!constant || !isKey(constant))
        return op->emitError()
               << "tfm-autodiff: microbatches with dropout need the dropout's "
                  "layer key to be an i64 constant used only as a layer key";
    }
  }
  if (!dropout) {
    // Dropout may sit inside the block functions only: look at their calls.
    for (Operation *op : ops)
      if (auto call = dyn_cast<func::CallOp>(op)) {
        auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
            call, call.getCalleeAttr());
        if (callee && callee
                          .walk([](Operation *inner) {
                            if (auto d = dyn_cast<DropoutOp>(inner))
                              if (d.getRate().convertToDouble() > 0)
                                return WalkResult::interrupt();
                            return WalkResult::advance();
                          })
                          .wasInterrupted())
          dropout = true;
      }
  }
  if (!dropout)
    return keys;
  for (Operation *op : ops)
    if (auto constant = dyn_cast<arith::ConstantOp>(op);
        constant && isKey(constant) && !constant.use_empty()) {
      auto value = cast<DenseIntElementsAttr>(constant.getValue());
      stride =
          std::max(stride, (*value.value_begin<APInt>()).getSExtValue() + 1);
      keys.push_back(constant);
    }
  return keys;
}

LogicalResult accumulateMicrobatches(Block &body, Operation *end,
                                     ArrayRef<BlockArgument> ids,
                                     ValueRange outputs, int64_t count) {
  SmallVector<Operation *> ops;
  for (Operation &op : body) {
    if (&op == end)
      break;
    ops.push_back(&op);
  }
  // Microbatch j keys its dropout masks on the layers k + j * stride, so that
  // the microbatches drop different elements (the runtime's key holds layers
  // below 2^16).
  int64_t stride = 0;
  FailureOr<SmallVector<arith::ConstantOp>> keys =
      findDropoutLayerKeys(ops, stride);
  if (failed(keys))
    return failure();
  constexpr int64_t kLayerKeyLimit = int64_t(1) << 16;
  if (!keys->empty() && count * stride > kLayerKeyLimit)
    return end->emitError()
           << "tfm-autodiff: " << count << " microbatches x " << stride
           << " dropout layer keys exceed the " << kLayerKeyLimit
           << " layer keys of the dropout RNG";
  llvm::DenseSet<Operation *> keyOps;
  for (arith::ConstantOp key : *keys)
    keyOps.insert(key);
  Location loc = end->getLoc();
  OpBuilder ob = OpBuilder::atBlockBegin(&body);
  llvm::DenseSet<Operation *> inside(ops.begin(), ops.end());
  // Microbatch 0 runs the original ops, on its rows.
  SmallVector<Value> firstRows;
  for (BlockArgument id : ids) {
    auto type = cast<RankedTensorType>(id.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[0] *= count;
    id.setType(RankedTensorType::get(shape, type.getElementType()));
    auto rows = MicrobatchOp::create(ob, id.getLoc(), id, 0, count);
    id.replaceAllUsesExcept(rows, rows);
    inside.insert(rows);
    firstRows.push_back(rows);
  }
  SmallVector<Value> sums(outputs.begin(), outputs.end());
  ob.setInsertionPoint(end);
  // The ops built for the current microbatch. They sit after every op of
  // the earlier ones, so the later of a sum and a value is found without
  // Operation::isBeforeInBlock: each insertion invalidates the block's
  // order, and recomputing it per microbatch made the pass quadratic in
  // `count` (9.5 s for 1,000 microbatches of a 2-layer model).
  llvm::DenseSet<Operation *> current;
  for (int64_t j = 1; j < count; ++j) {
    IRMapping map;
    current.clear();
    for (auto [id, first] : llvm::zip_equal(ids, firstRows)) {
      auto rows = MicrobatchOp::create(ob, id.getLoc(), id, j, count);
      map.map(first, rows.getResult());
      inside.insert(rows);
      current.insert(rows);
    }
    for (arith::ConstantOp key : *keys) {
      auto value = cast<DenseIntElementsAttr>(key.getValue());
      int64_t layer = (*value.value_begin<APInt>()).getSExtValue() + j * stride;
      auto shifted = arith::ConstantOp::create(
          ob, key.getLoc(),
          DenseElementsAttr::get(cast<ShapedType>(key.getType()),
                                 ob.getI64IntegerAttr(layer).getValue()));
      map.map(key.getResult(), shifted.getResult());
      inside.insert(shifted);
      current.insert(shifted);
    }
    for (Operation *op : ops)
      if (!keyOps.contains(op)) {
        Operation *clone = ob.clone(*op, map);
        inside.insert(clone);
        current.insert(clone);
      }
    for (auto [sum, out] : llvm::zip_equal(sums, outputs)) {
      Value value = map.lookupOrDefault(out);
      auto add = AddOp::create(ob, loc, sum, value);
      // Right after the op that produced this microbatch's value (a layer's
      // backward call): its gradients die there instead of all living to
      // the end of the microbatch, and the last microbatch's sum marks
      // when each layer's gradient is final (dist-bucket-collectives and
      // dist-overlap-collectives reduce it from there).
      Operation *after = nullptr;
      Operation *valueDef = value.getDefiningOp();
      if (valueDef && current.contains(valueDef)) {
        // The sum is older: an earlier microbatch's add or op.
        after = valueDef;
      } else {
        // A value that is not per microbatch (a block argument or an op
        // outside the microbatch): compare the block positions (rare).
        for (Value operand : {sum, value})
          if (Operation *def = operand.getDefiningOp();
              def && def->getBlock() == &body &&
              (!after || after->isBeforeInBlock(def)))
            after = def;
      }
      if (after)
        add->moveAfter(after);
      inside.insert(add);
      sum = add;
    }
  }
  for (auto [sum, out] : llvm::zip_equal(sums, outputs)) {
    auto mean = ScaleOp::create(ob, loc, sum, 1.0 / count);
    if (Operation *def = sum.getDefiningOp(); def && def->getBlock() == &body)
      mean->moveAfter(def);
    out.replaceUsesWithIf(mean, [&](OpOperand &use) {
      return !inside.contains(use.getOwner()) && use.getOwner() != mean;
    });
  }
  return success();
}

/// The tfm.input arguments `kinds` of `func`, in that order.
SmallVector<BlockArgument> inputArgs(func::FuncOp func,
                                     ArrayRef<StringRef> kinds) {
  SmallVector<BlockArgument> args;
  for (StringRef kind : kinds)
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      if (auto input = func.getArgAttrOfType<StringAttr>(i, kInputAttrName);
          input && input.getValue() == kind)
        args.push_back(func.getArgument(i));
  return args;
}

/// Sets `func`'s type from its entry block's argument types.
void syncArgumentTypes(func::FuncOp func) {
  func.setFunctionType(FunctionType::get(func.getContext(),
                                         func.front().getArgumentTypes(),
                                         func.getResultTypes()));
}

struct TfmAutodiffPass
    : public autoshard::tfm::impl::TfmAutodiffBase<TfmAutodiffPass> {
  using TfmAutodiffBase::TfmAutodiffBase;

  void runOnOperation() override;

private:
  LogicalResult buildTrainStep(Differentiator &diff, func::FuncOp forward,
                               const ForwardSignature &sig);
  FailureOr<func::FuncOp> buildEval(SymbolTable &symbols, func::FuncOp forward,
                                    const ForwardSignature &sig);
  LogicalResult buildLogits(SymbolTable &symbols, func::FuncOp forward,
                            func::FuncOp eval);
};

/// Index of the argument of `func` tagged `tfm.input = kind`, if any.
std::optional<unsigned> findInput(func::FuncOp func, StringRef kind) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (auto input = func.getArgAttrOfType<StringAttr>(i, kInputAttrName);
        input && input.getValue() == kind)
      return i;
  return std::nullopt;
}

/// Symbol DCE: erases the private functions nobody calls (e.g. the builder's
/// block functions when only their `_fwd`/`_bwd`/`_infer` versions are
/// called), repeatedly, as erasing a caller can orphan its callees.
void eraseUncalledPrivateFuncs(SymbolTable &symbols, ModuleOp module) {
  for (bool changed = true; changed;) {
    changed = false;
    for (auto func :
         llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (func.isPrivate() && SymbolTable::symbolKnownUseEmpty(func, module)) {
        symbols.erase(func);
        changed = true;
      }
    }
  }
}

/// Largest clip threshold: with it the clip coefficient is always 1 while
/// the global norm is still computed and reported.
static constexpr double kNoClipMaxNorm = 1e30;

/// The most microbatches per step tfm-autodiff builds.
static constexpr int64_t kMaxMicrobatches = 65536;

void TfmAutodiffPass::runOnOperation() {
  ModuleOp module = getOperation();
  // Check the options before any op is built: the ops' builders infer types
  // and would abort on an attribute their verifier rejects.
  auto badOption = [&](StringRef name, double value, StringRef range) {
    module.emitError() << "tfm-autodiff: option " << name << " must be in "
                       << range << ", found " << value;
    signalPassFailure();
  };
  // Finite values only: the runtime computes with them (an infinite decay
  // or epsilon turns every parameter into NaN at the first step).
  if (!(beta1 >= 0 && beta1 < 1))
    return badOption("beta1", beta1, "[0, 1)");
  if (!(beta2 >= 0 && beta2 < 1))
    return badOption("beta2", beta2, "[0, 1)");
  if (!(epsilon > 0 && std::isfinite(epsilon)))
    return badOption("epsilon", epsilon, "(0, inf), finite");
  if (!(weightDecay >= 0 && std::isfinite(weightDecay)))
    return badOption("weight-decay", weightDecay, "[0, inf), finite");
  // nanoGPT's grad_clip = 0 means no clipping.
  if (!(maxGradNorm >= 0 && std::isfinite(maxGradNorm)))
    return badOption("max-grad-norm", maxGradNorm,
                     "[0, inf), finite (0: no clipping)");
  // Each microbatch clones the step's forward and backward: far more than
  // any batch needs would only exhaust memory.
  if (microbatches < 1 || microbatches > kMaxMicrobatches) {
    module.emitError() << "tfm-autodiff: option microbatches must be in [1, "
                       << kMaxMicrobatches << "], found "
                       << int64_t(microbatches);
    return signalPassFailure();
  }
  Differentiator diff(module);
  auto forward = diff.getSymbols().lookup<func::FuncOp>("forward");
  if (!forward || forward.isExternal()) {
    module.emitError() << "tfm-autodiff needs a @forward function with a body";
    return signalPassFailure();
  }
  for (StringRef name : {"train_step", "eval", "logits"})
    if (diff.getSymbols().lookup(name)) {
      module.emitError() << "tfm-autodiff: the module already has @" << name;
      return signalPassFailure();
    }
  TypeRange results = forward.getResultTypes();
  auto lossType =
      results.size() == 1 ? dyn_cast<RankedTensorType>(results[0]) : nullptr;
  if (!lossType || lossType.getRank() != 0 ||
      !lossType.getElementType().isF32()) {
    InFlightDiagnostic diag = forward.emitError()
                              << "@forward must return one scalar loss of "
                                 "type tensor<f32>, found "
                              << results.size() << " result(s)";
    if (!results.empty())
      diag << ", the first of type " << results[0];
    return signalPassFailure();
  }
  FailureOr<ForwardSignature> sig = classifyForwardArgs(forward);
  if (failed(sig))
    return signalPassFailure();
  // @eval goes right after @forward and @logits right after @eval; then
  // @train_step right after @forward, so that the order is @train_step,
  // @eval, @logits once @forward is gone.
  SymbolTable &symbols = diff.getSymbols();
  if (microbatches > 1) {
    auto type =
        cast<RankedTensorType>(forward.getArgument(sig->tokens).getType());
    if (type.getRank() < 1) {
      forward.emitError() << "tfm-autodiff: microbatches needs batched tokens";
      return signalPassFailure();
    }
  }
  FailureOr<func::FuncOp> eval = buildEval(symbols, forward, *sig);
  if (failed(eval) || failed(buildLogits(symbols, forward, *eval)) ||
      failed(buildTrainStep(diff, forward, *sig)))
    return signalPassFailure();
  if (microbatches > 1) {
    // @train_step: everything before the global gradient norm is one
    // microbatch; the loss and the parameter gradients are averaged.
    auto step = symbols.lookup<func::FuncOp>("train_step");
    Block &body = step.front();
    auto sumSq = *step.getOps<SumSquaresOp>().begin();
    SmallVector<Value> outputs = {body.getTerminator()->getOperand(0)};
    llvm::append_range(outputs, sumSq->getOperands());
    if (failed(accumulateMicrobatches(body, sumSq,
                                      inputArgs(step, {"tokens", "labels"}),
                                      outputs, microbatches)))
      return signalPassFailure();
    syncArgumentTypes(step);
    // @eval: the mean of the microbatches' losses.
    Operation *ret = (*eval).front().getTerminator();
    if (failed(accumulateMicrobatches((*eval).front(), ret,
                                      inputArgs(*eval, {"tokens", "labels"}),
                                      ret->getOperand(0), microbatches)))
      return signalPassFailure();
    syncArgumentTypes(*eval);
    // The step's batch is M microbatches.
    Builder b(module.getContext());
    if (auto model = module->getAttrOfType<DictionaryAttr>(kModelAttrName)) {
      NamedAttrList attrs(model);
      if (auto batch = dyn_cast_or_null<IntegerAttr>(attrs.get("batch")))
        attrs.set("batch", b.getI64IntegerAttr(batch.getInt() * microbatches));
      module->setAttr(kModelAttrName, attrs.getDictionary(module.getContext()));
    }
    module->setAttr(kMicrobatchesAttrName, b.getI64IntegerAttr(microbatches));
  }
  // @eval replaces @forward as the eval entry: the public functions of the
  // result are exactly the runtime's entries.
  symbols.erase(forward);
  eraseUncalledPrivateFuncs(symbols, module);
}

LogicalResult TfmAutodiffPass::buildTrainStep(Differentiator &diff,
                                              func::FuncOp forward,
                                              const ForwardSignature &sig) {
  MLIRContext *ctx = &getContext();
  Location loc = forward.getLoc();
  auto scalarF32 = RankedTensorType::get({}, Float32Type::get(ctx));
  auto scalarI64 = RankedTensorType::get({}, IntegerType::get(ctx, 64));
  Builder b(ctx);
  unsigned numParams = sig.params.size();

  // Arguments: tokens, labels, step, lr, params, m per param, v per param.
  SmallVector<Type> argTypes = {forward.getArgument(sig.tokens).getType(),
                                forward.getArgument(sig.labels).getType(),
                                scalarI64, scalarF32};
  SmallVector<DictionaryAttr> argAttrs = {
      forward.getArgAttrDict(sig.tokens), forward.getArgAttrDict(sig.labels),
      b.getDictionaryAttr(b.getNamedAttr(kInputAttrName, str(ctx, "step"))),
      b.getDictionaryAttr(b.getNamedAttr(kInputAttrName, str(ctx, "lr")))};
  const unsigned firstParam = argTypes.size();
  SmallVector<Type> paramTypes;
  for (unsigned i : sig.params) {
    paramTypes.push_back(forward.getArgument(i).getType());
    argAttrs.push_back(forward.getArgAttrDict(i));
  }
  argTypes.append(paramTypes);
  for (StringRef kind : {"opt_m", "opt_v"}) {
    StringRef suffix = kind == "opt_m" ? ".exp_avg" : ".exp_avg_sq";
    for (StringRef name : sig.names) {
      argAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr(kStateAttrName, str(ctx, name + suffix)),
           b.getNamedAttr(kStateKindAttrName, str(ctx, kind)),
           b.getNamedAttr(kStateOfAttrName, str(ctx, name)),
           b.getNamedAttr(kInitAttrName, str(ctx, "zeros"))}));
    }
    argTypes.append(paramTypes);
  }

  // Results: loss, grad_norm, new params, new m, new v.
  SmallVector<Type> resultTypes = {scalarF32, scalarF32};
  SmallVector<DictionaryAttr> resultAttrs = {
      b.getDictionaryAttr(b.getNamedAttr(kOutputAttrName, str(ctx, "loss"))),
      b.getDictionaryAttr(
          b.getNamedAttr(kOutputAttrName, str(ctx, "grad_norm")))};
  for (StringRef suffix : {"", ".exp_avg", ".exp_avg_sq"}) {
    resultTypes.append(paramTypes);
    for (StringRef name : sig.names)
      resultAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(suffix.empty() ? kParamAttrName : kStateAttrName,
                         str(ctx, name + suffix))));
  }

  func::FuncOp step = createFunc(diff.getSymbols(), forward, "train_step",
                                 FunctionType::get(ctx, argTypes, resultTypes));
  step.setPublic();
  step.setAllArgAttrs(argAttrs);
  step.setAllResultAttrs(resultAttrs);
  ValueRange args = step.getArguments();
  Value stepArg = args[2], lr = args[3];
  ValueRange params = args.slice(firstParam, numParams);
  ValueRange ms = args.slice(firstParam + numParams, numParams);
  ValueRange vs = args.slice(firstParam + 2 * numParams, numParams);

  // The forward, with @forward's arguments mapped to ours.
  IRMapping map;
  map.map(forward.getArgument(sig.tokens), args[0]);
  map.map(forward.getArgument(sig.labels), args[1]);
  if (sig.step)
    map.map(forward.getArgument(*sig.step), stepArg);
  for (auto [i, param] : llvm::zip_equal(sig.params, params))
    map.map(forward.getArgument(i), param);
  Block &body = step.front();
  OpBuilder ob = OpBuilder::atBlockEnd(&body);
  for (Operation &op : forward.front().without_terminator())
    ob.clone(op, map);
  Value loss = map.lookup(forward.front().getTerminator()->getOperand(0));
  Value dloss = arith::ConstantOp::create(
      ob, loc, DenseElementsAttr::get(scalarF32, ob.getF32FloatAttr(1.0f)));
  auto ret = func::ReturnOp::create(ob, loc, ValueRange{loss});

  // The reverse pass, then clipping and AdamW after every backward op, so
  // that the old parameter values are dead when the updates run.
  BodyGradient gradient(diff, body);
  if (failed(gradient.run(loss, dloss)))
    return failure();
  SmallVector<Value> paramGrads;
  for (auto [k, i] : llvm::enumerate(sig.params)) {
    Value grad = gradient.argGrad(firstParam + k);
    if (!grad)
      return forward.emitError()
             << "parameter " << describeArg(forward, i)
             << " does not reach the loss, so it has no gradient";
    paramGrads.push_back(grad);
  }
  ob.setInsertionPoint(ret);
  Value sumSq = SumSquaresOp::create(ob, loc, paramGrads);
  double maxNorm = maxGradNorm == 0 ? kNoClipMaxNorm : maxGradNorm.getValue();
  auto clip = ClipCoefOp::create(ob, loc, sumSq, maxNorm);
  SmallVector<Value> yields = {loss, clip.getNorm()};
  SmallVector<Value> newMs, newVs;
  for (auto [param, grad, m, v] : llvm::zip_equal(params, paramGrads, ms, vs)) {
    // nanoGPT's grouping: matrices and embeddings decay, norms and biases
    // (rank < 2) do not.
    double decay = cast<RankedTensorType>(param.getType()).getRank() >= 2
                       ? weightDecay.getValue()
                       : 0.0;
    auto update = AdamwOp::create(ob, param.getLoc(), param, grad, m, v, lr,
                                  stepArg, clip.getCoef(), beta1.getValue(),
                                  beta2.getValue(), epsilon.getValue(), decay);
    yields.push_back(update.getNewParam());
    newMs.push_back(update.getNewM());
    newVs.push_back(update.getNewV());
  }
  llvm::append_range(yields, newMs);
  llvm::append_range(yields, newVs);
  ret->setOperands(yields);
  gradient.eraseDeadBackwardOps();
  return success();
}

/// `@eval`: a clone of `@forward` with dropout off (see InferenceCloner) and
/// without the step input when only dropout read it.
FailureOr<func::FuncOp>
TfmAutodiffPass::buildEval(SymbolTable &symbols, func::FuncOp forward,
                           const ForwardSignature &sig) {
  MLIRContext *ctx = &getContext();
  func::FuncOp eval = forward.clone();
  eval.setSymName("eval");
  eval.setPublic();
  symbols.insert(eval, std::next(Block::iterator(forward)));
  InferenceCloner cloner(symbols);
  if (failed(cloner.stripDropout(eval.front())))
    return failure();
  if (sig.step && eval.getArgument(*sig.step).use_empty() &&
      failed(eval.eraseArgument(*sig.step)))
    return failure();
  eval.setResultAttr(0, kOutputAttrName, str(ctx, "loss"));
  return eval;
}

/// `@logits`: `@eval` (dropout off) without the loss and the labels.
LogicalResult TfmAutodiffPass::buildLogits(SymbolTable &symbols,
                                           func::FuncOp forward,
                                           func::FuncOp eval) {
  if (auto losses = llvm::range_size(forward.getOps<CrossEntropyOp>());
      losses != 1)
    return forward.emitError()
           << "@forward must compute exactly one tfm.cross_entropy (at its "
              "top level) to derive @logits, found "
           << losses;
  MLIRContext *ctx = &getContext();
  func::FuncOp logits = eval.clone();
  logits.setSymName("logits");
  symbols.insert(logits, std::next(Block::iterator(eval)));

  Block &body = logits.front();
  Operation *ret = body.getTerminator();
  Value result = (*logits.getOps<CrossEntropyOp>().begin()).getLogits();
  ret->setOperands(result);
  // Drop the loss and everything only it needed (the labels, MoE aux
  // losses); block calls stay, as their hidden results are still used.
  eraseDeadOps(
      llvm::to_vector(llvm::make_pointer_range(body.without_terminator())));
  unsigned labels = *findInput(logits, "labels");
  if (!body.getArgument(labels).use_empty())
    return forward.emitError()
           << "the labels are used by more than tfm.cross_entropy, so "
              "@logits cannot drop them";
  if (failed(logits.eraseArgument(labels)))
    return failure();
  logits.setFunctionType(
      FunctionType::get(ctx, logits.getArgumentTypes(), result.getType()));
  logits.setResultAttr(0, kOutputAttrName, str(ctx, "logits"));
  return success();
}

} // namespace
