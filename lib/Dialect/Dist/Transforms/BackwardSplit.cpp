//===- BackwardSplit.cpp - Input/weight-gradient split of calls -----------===//

#include "BackwardSplit.h"

#include "autoshard/Dialect/Tfm/IR/TfmAttrs.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

bool isOperandFree(Operation *op) {
  return op->getNumOperands() == 0 && op->getNumRegions() == 0;
}

/// Adds the ops `roots` depend on within the block (through operands) to
/// `slice`, stopping at ops in `stop` (except operand-free ones).
void collectSlice(ArrayRef<Value> roots, llvm::DenseSet<Operation *> &slice,
                  const llvm::DenseSet<Operation *> *stop) {
  SmallVector<Value> worklist(roots.begin(), roots.end());
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || slice.contains(def))
      continue;
    if (stop && stop->contains(def) && !isOperandFree(def))
      continue;
    slice.insert(def);
    for (Value operand : def->getOperands())
      worklist.push_back(operand);
  }
}

} // namespace

std::optional<BackwardCallSplitter::Parts>
BackwardCallSplitter::splitCallee(func::FuncOp callee,
                                  const llvm::SmallBitVector &weightResults) {
  if (callee.isExternal() || !llvm::hasSingleElement(callee.getBody()))
    return std::nullopt;
  Block &body = callee.front();
  for (Operation &op : body.without_terminator())
    if (op.getNumRegions() != 0)
      return std::nullopt;
  Operation *ret = body.getTerminator();
  SmallVector<Value> inputRoots, weightRoots;
  for (auto [i, value] : llvm::enumerate(ret->getOperands()))
    (weightResults.test(i) ? weightRoots : inputRoots).push_back(value);

  llvm::DenseSet<Operation *> inputOps, weightOps;
  collectSlice(inputRoots, inputOps, nullptr);
  collectSlice(weightRoots, weightOps, &inputOps);
  bool ownWork = llvm::any_of(
      weightOps, [&](Operation *op) { return !isOperandFree(op); });
  if (!ownWork)
    return std::nullopt;
  // Values of the input part the weight part reads (block arguments are
  // passed to both calls).
  llvm::SetVector<Value> saved;
  auto needs = [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (def && !weightOps.contains(def))
      saved.insert(v);
  };
  for (Operation &op : body.without_terminator())
    if (weightOps.contains(&op))
      llvm::for_each(op.getOperands(), needs);
  llvm::for_each(weightRoots, needs);

  MLIRContext *ctx = callee.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointAfter(callee);
  auto makePart = [&](StringRef suffix, TypeRange argTypes,
                      TypeRange resultTypes) {
    auto fn = func::FuncOp::create(
        b, callee.getLoc(), (callee.getSymName() + suffix).str(),
        FunctionType::get(ctx, argTypes, resultTypes));
    fn.setPrivate();
    for (unsigned i = 0, e = callee.getNumArguments(); i < e; ++i)
      fn.setArgAttrs(i, callee.getArgAttrDict(i));
    for (NamedAttribute attr : callee->getDiscardableAttrs())
      fn->setAttr(attr.getName(), attr.getValue());
    symbols.insert(fn); // renames on a clash
    fn.addEntryBlock();
    return fn;
  };

  // Clones the ops of `body` in `ops` into `part` (values mapped by `map`)
  // and makes `part` return its copies of `results`.
  auto fillPart = [&](func::FuncOp part, IRMapping &map,
                      const llvm::DenseSet<Operation *> &ops,
                      ArrayRef<Value> results) {
    OpBuilder pb = OpBuilder::atBlockEnd(&part.front());
    for (Operation &op : body.without_terminator())
      if (ops.contains(&op))
        pb.clone(op, map);
    SmallVector<Value> mapped;
    for (Value v : results)
      mapped.push_back(map.lookup(v));
    func::ReturnOp::create(pb, ret->getLoc(), mapped);
  };

  SmallVector<Value> inputValues(inputRoots);
  llvm::append_range(inputValues, saved);
  func::FuncOp input = makePart("__input", callee.getArgumentTypes(),
                                ValueRange(inputValues).getTypes());
  tfm::setFuncKind(input, tfm::FuncKind::InputGrad);
  {
    IRMapping map;
    map.map(body.getArguments(), input.getArguments());
    fillPart(input, map, inputOps, inputValues);
  }

  SmallVector<Type> weightArgs(callee.getArgumentTypes());
  llvm::append_range(weightArgs, ValueRange(saved.getArrayRef()).getTypes());
  b.setInsertionPointAfter(input);
  func::FuncOp weight =
      makePart("__weight", weightArgs, ValueRange(weightRoots).getTypes());
  tfm::setFuncKind(weight, tfm::FuncKind::WeightGrad);
  {
    IRMapping map;
    unsigned numArgs = callee.getNumArguments();
    map.map(body.getArguments(), weight.getArguments().take_front(numArgs));
    for (auto [k, v] : llvm::enumerate(saved))
      map.map(v, weight.getArgument(numArgs + k));
    fillPart(weight, map, weightOps, weightRoots);
  }
  return Parts{input, weight};
}

std::optional<std::pair<func::CallOp, func::CallOp>>
BackwardCallSplitter::split(func::CallOp call,
                            const llvm::SmallBitVector &weightResults) {
  if (weightResults.none() || weightResults.all())
    return std::nullopt;
  auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
  if (!callee)
    return std::nullopt;
  std::string mask;
  for (unsigned i = 0, e = weightResults.size(); i < e; ++i)
    mask += weightResults.test(i) ? '1' : '0';
  auto key = std::make_pair(callee.getSymName().str(), mask);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, splitCallee(callee, weightResults)).first;
  if (!it->second)
    return std::nullopt;
  Parts parts = *it->second;

  OpBuilder b(call);
  auto inputCall =
      func::CallOp::create(b, call.getLoc(), parts.input, call.getOperands());
  unsigned numInputResults = call.getNumResults() - weightResults.count();
  SmallVector<Value> weightOperands(call.getOperands());
  llvm::append_range(weightOperands,
                     inputCall.getResults().drop_front(numInputResults));
  auto weightCall =
      func::CallOp::create(b, call.getLoc(), parts.weight, weightOperands);
  for (NamedAttribute attr : call->getDiscardableAttrs()) {
    inputCall->setAttr(attr.getName(), attr.getValue());
    weightCall->setAttr(attr.getName(), attr.getValue());
  }
  inputCall->setAttr(kBackwardPartAttrName, b.getStringAttr("input"));
  weightCall->setAttr(kBackwardPartAttrName, b.getStringAttr("weight"));
  unsigned nextInput = 0, nextWeight = 0;
  for (unsigned i = 0, e = call.getNumResults(); i < e; ++i)
    call.getResult(i).replaceAllUsesWith(
        weightResults.test(i) ? weightCall.getResult(nextWeight++)
                              : inputCall.getResult(nextInput++));
  call.erase();
  return std::make_pair(inputCall, weightCall);
}
