//===- DistOverlapCollectives.cpp - reductions behind the next layers -----===//
//
// Implements `dist-overlap-collectives` (see Passes.td for the contract):
// each collective of the selected kinds (blocking all-reduce,
// reduce-scatter, all-gather, all-to-all; with the pack of its bucket)
// moves up to its operand's producer and becomes a `*_start` there, waited
// for before its first use but at most `overlap-calls` calls later, so that
// it runs behind the work that does not need it: a gradient reduction
// behind the backward of the layers that follow (DDP / Megatron
// `overlap_grad_reduce` / FSDP2), a ZeRO-1/2 parameter all-gather behind
// the optimizer of the next buckets (Megatron's `overlap_param_gather`), a
// ZeRO-3 parameter or SP re-gather behind the block's earlier GEMMs.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Tfm/IR/TfmInterfaces.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

namespace autoshard::dist {
#define GEN_PASS_DEF_DISTOVERLAPCOLLECTIVES
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace autoshard::dist

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

/// A collective this pass may start early: blocking, of one of `kinds`, and
/// over a group whose members all run this function (no pipeline axis:
/// stage programs differ).
bool isCandidate(Operation *op, ArrayRef<CommKind> kinds,
                 SymbolTableCollection &symbols) {
  auto comm = dyn_cast<CommOpInterface>(op);
  if (!comm || comm.isAsync() || !llvm::is_contained(kinds, comm.getCommKind()))
    return false;
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
/// its operands (the block start when none does), and after the ops of
/// `moved` there (so that collectives keep their program order among
/// themselves). Returns true if it moved.
bool hoist(Operation *op, const llvm::DenseSet<Operation *> &moved) {
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
  while (target != op && moved.contains(target))
    target = target->getNextNode();
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
    if (latencyBoundBytes < 0) {
      getOperation().emitError()
          << "dist-overlap-collectives: latency-bound-bytes must be >= 0, "
             "found "
          << static_cast<int64_t>(latencyBoundBytes);
      return signalPassFailure();
    }
    selected.clear();
    if (kinds.empty())
      selected = {CommKind::AllReduce, CommKind::ReduceScatter,
                  CommKind::AllGather, CommKind::AllToAll};
    for (const std::string &name : kinds) {
      std::optional<CommKind> kind = symbolizeCommKind(name);
      if (!kind ||
          (*kind != CommKind::AllReduce && *kind != CommKind::ReduceScatter &&
           *kind != CommKind::AllGather && *kind != CommKind::AllToAll)) {
        getOperation().emitError()
            << "dist-overlap-collectives: kinds lists '" << name
            << "'; expected all_reduce, reduce_scatter, all_gather or "
               "all_to_all";
        return signalPassFailure();
      }
      selected.push_back(*kind);
    }
    SymbolTableCollection symbols;
    for (auto func : getOperation().getOps<func::FuncOp>())
      for (Block &block : func.getBody())
        runOnBlock(block, symbols);
  }

  void runOnBlock(Block &block, SymbolTableCollection &symbols) {
    // In program order, so that the start order stays the original
    // collective order (the same on every member of a group).
    SmallVector<Operation *> collectives;
    for (Operation &op : block)
      if (isCandidate(&op, selected, symbols))
        collectives.push_back(&op);
    llvm::DenseSet<Operation *> moved;
    for (Operation *op : collectives) {
      PackOp pack = op->getOperand(0).getDefiningOp<PackOp>();
      if (pack && (pack->getBlock() != &block || !pack->hasOneUse()))
        pack = nullptr;
      // The bucket's unpack moves down to the first use of what it unpacks,
      // so that the wait can too.
      for (Operation *user : op->getResult(0).getUsers())
        if (isa<UnpackOp>(user) && user->getBlock() == &block &&
            op->getResult(0).hasOneUse())
          sink(user);
      if (cast<CommOpInterface>(op).getCommKind() == CommKind::AllGather) {
        if (prefetch(op, pack, moved))
          ++numHoisted;
      } else {
        // A reduction's bucket pack (its only use) moves up first.
        if (pack) {
          hoist(pack, moved);
          moved.insert(pack);
        }
        if (hoist(op, moved))
          ++numHoisted;
      }
      moved.insert(startEarly(op));
    }
  }

  /// Moves the all-gather `op` (with its bucket's `pack`, if any) up to
  /// `overlapCalls` calls before the first use of its result, or to right
  /// after the producers of its operands when they come later: a prefetch
  /// (FSDP2 gathers the next layer's weights during the current one), not
  /// further, so that no more than that many layers' gathered tensors are
  /// alive at once. Returns true if it moved.
  bool prefetch(Operation *op, PackOp pack,
                const llvm::DenseSet<Operation *> &moved) {
    Block *block = op->getBlock();
    Operation *firstUse = block->getTerminator();
    for (Operation *user : op->getResult(0).getUsers())
      if (Operation *ancestor = block->findAncestorOpInBlock(*user))
        if (ancestor->isBeforeInBlock(firstUse))
          firstUse = ancestor;
    Operation *source = pack ? pack.getOperation() : op;
    Operation *last = nullptr; // the last producer of what moves
    for (Value operand : source->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (Operation *ancestor = block->findAncestorOpInBlock(*def))
          if (!last || last->isBeforeInBlock(ancestor))
            last = ancestor;
    Operation *target = firstUse;
    int64_t calls = 0;
    for (Operation *it = firstUse->getPrevNode(); it && it != last;
         it = it->getPrevNode()) {
      if (it == source || it == op)
        continue;
      target = it;
      if (isa<CallOpInterface>(it) && ++calls == overlapCalls)
        break;
    }
    while (target != op && moved.contains(target))
      target = target->getNextNode();
    if (target == op || !target->isBeforeInBlock(op))
      return false;
    op->moveBefore(target);
    if (pack)
      pack->moveBefore(op);
    return true;
  }

  /// Replaces `op` by a start at its place and a wait before its first use,
  /// no later than right after the `overlapCalls`-th call after it. Returns
  /// the start (`op` itself when it stays blocking).
  Operation *startEarly(Operation *op) {
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
    // A latency-bound collective (a loss, a norm's bias gradients) holds
    // no memory worth bounding: it is waited for at its first use only.
    const bool bounded = !isLatencyBound(result);
    for (Operation *it = op->getNextNode(); it; it = it->getNextNode()) {
      if (it == firstUse || it->hasTrait<OpTrait::IsTerminator>()) {
        waitBefore = it;
        break;
      }
      work |= isCompute(*it);
      if (bounded && isa<CallOpInterface>(it) && ++calls == overlapCalls) {
        waitBefore = it->getNextNode();
        break;
      }
    }
    if (!work || !waitBefore)
      return op;
    // A pipeline stage sends what the call computed to its neighbour right
    // after it: the wait goes after those sends (they only start), so that
    // the neighbour stage does not wait for this group's collective too.
    while (waitBefore != firstUse && isa<SendStartOp>(waitBefore))
      waitBefore = waitBefore->getNextNode();
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
    return start;
  }

  /// Whether `value`'s bytes are known and at most latency-bound-bytes.
  bool isLatencyBound(Value value) const {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    return type && type.hasStaticShape() &&
           type.getElementType().isIntOrFloat() &&
           tfm::tensorBytes(type) <= double(latencyBoundBytes);
  }

  SmallVector<CommKind> selected;
};

} // namespace
