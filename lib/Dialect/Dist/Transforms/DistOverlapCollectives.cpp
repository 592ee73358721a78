//===- DistOverlapCollectives.cpp - reductions behind the next layers -----===//
//
// Implements `dist-overlap-collectives` (see Passes.td for the contract):
// each gradient reduction (blocking all-reduce / reduce-scatter, with the
// pack of its bucket) moves up to its operand's producer and becomes a
// `*_start` there, waited for before its first use but at most
// `overlap-calls` calls later, so that it runs behind the backward of the
// layers that follow (DDP / Megatron `overlap_grad_reduce` / FSDP2).
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "llvm/ADT/STLExtras.h"

namespace autoshard::dist {
#define GEN_PASS_DEF_DISTOVERLAPCOLLECTIVES
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace autoshard::dist

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

/// A reduction this pass may start early: blocking, and over a group whose
/// members all run this function (no pipeline axis: stage programs differ).
bool isCandidate(Operation *op, SymbolTableCollection &symbols) {
  if (!isa<AllReduceOp, ReduceScatterOp>(op))
    return false;
  auto comm = cast<CommOpInterface>(op);
  MeshOp mesh = lookupMesh(symbols, op, comm.getMeshAttr());
  return mesh && llvm::none_of(comm.getAxes(), [&](Attribute a) {
           return mesh.hasAxisRole(cast<StringAttr>(a).getValue(),
                                   AxisRole::Pipeline);
         });
}

/// Work a started collective can hide behind: a call (a layer) or a
/// tensor op of another dialect (dist ops only move data).
bool isCompute(Operation &op) {
  return isa<CallOpInterface>(op) ||
         (op.getDialect() && !isa<DistDialect>(op.getDialect()) &&
          !op.hasTrait<OpTrait::IsTerminator>() && op.getNumResults() > 0);
}

/// Moves `op` up to right after the last op of `block` that defines one of
/// its operands (the block start when none does). Returns true if it moved.
bool hoist(Operation *op) {
  Block *block = op->getBlock();
  Operation *last = nullptr;
  for (Value operand : op->getOperands()) {
    Operation *def = operand.getDefiningOp();
    if (!def)
      continue;
    Operation *ancestor = block->findAncestorOpInBlock(*def);
    if (ancestor && (!last || last->isBeforeInBlock(ancestor)))
      last = ancestor;
  }
  Operation *target = last ? last->getNextNode() : &block->front();
  if (target == op)
    return false;
  op->moveBefore(target);
  return true;
}

/// Moves `op` down to right before the first op of its block that uses one
/// of its results (the terminator when none does).
void sink(Operation *op) {
  Block *block = op->getBlock();
  Operation *first = block->getTerminator();
  for (Value result : op->getResults())
    for (Operation *user : result.getUsers()) {
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (ancestor && ancestor->isBeforeInBlock(first))
        first = ancestor;
    }
  if (first != op->getNextNode() && first != op)
    op->moveBefore(first);
}

struct DistOverlapCollectivesPass
    : public dist::impl::DistOverlapCollectivesBase<
          DistOverlapCollectivesPass> {
  using DistOverlapCollectivesBase::DistOverlapCollectivesBase;

  void runOnOperation() override {
    if (overlapCalls < 1) {
      getOperation().emitError()
          << "dist-overlap-collectives: overlap-calls must be >= 1, found "
          << static_cast<int64_t>(overlapCalls);
      return signalPassFailure();
    }
    SymbolTableCollection symbols;
    for (auto func : getOperation().getOps<func::FuncOp>())
      for (Block &block : func.getBody())
        runOnBlock(block, symbols);
  }

  void runOnBlock(Block &block, SymbolTableCollection &symbols) {
    // In program order, so that the start order stays the original
    // collective order (the same on every member of a group).
    SmallVector<Operation *> reductions;
    for (Operation &op : block)
      if (isCandidate(&op, symbols))
        reductions.push_back(&op);
    for (Operation *op : reductions) {
      // A bucket's pack (its only use is this collective) moves up first ...
      if (auto pack = op->getOperand(0).getDefiningOp<PackOp>())
        if (pack->getBlock() == &block && pack->hasOneUse())
          hoist(pack);
      if (hoist(op))
        ++numHoisted;
      // ... and the bucket's unpack moves down to the first use of what it
      // unpacks, so that the wait can too.
      for (Operation *user : op->getResult(0).getUsers())
        if (isa<UnpackOp>(user) && user->getBlock() == &block &&
            op->getResult(0).hasOneUse())
          sink(user);
      startEarly(op);
    }
  }

  /// Replaces `op` by a start at its place and a wait before its first use,
  /// no later than right after the `overlapCalls`-th call after it.
  void startEarly(Operation *op) {
    Block *block = op->getBlock();
    Value result = op->getResult(0);
    Operation *firstUse = nullptr;
    for (Operation *user : result.getUsers()) {
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (ancestor && (!firstUse || ancestor->isBeforeInBlock(firstUse)))
        firstUse = ancestor;
    }
    Operation *waitBefore = nullptr;
    int64_t calls = 0;
    bool work = false;
    for (Operation *it = op->getNextNode(); it; it = it->getNextNode()) {
      if (it == firstUse || it->hasTrait<OpTrait::IsTerminator>()) {
        waitBefore = it;
        break;
      }
      work |= isCompute(*it);
      if (isa<CallOpInterface>(it) && ++calls == overlapCalls) {
        waitBefore = it->getNextNode();
        break;
      }
    }
    if (!work || !waitBefore)
      return;
    OpBuilder builder(op);
    auto tensorType = cast<RankedTensorType>(result.getType());
    OperationState state(op->getLoc(),
                         cast<CommOpInterface>(op).getStartOpName());
    state.addOperands(op->getOperands());
    state.addAttributes(op->getAttrs());
    state.addTypes(AsyncType::get(op->getContext(), tensorType));
    Operation *start = builder.create(state);
    builder.setInsertionPoint(waitBefore);
    auto wait = WaitOp::create(builder, op->getLoc(), start->getResult(0));
    result.replaceAllUsesWith(wait.getResult());
    op->erase();
    ++numAsync;
  }
};

} // namespace
