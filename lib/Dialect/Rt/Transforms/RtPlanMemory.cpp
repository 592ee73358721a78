//===- RtPlanMemory.cpp - static frame planning for rt functions ----------===//
//
// Implements `rt-plan-memory` (see Passes.td). A function's frame holds its
// locals, its I/O slots and, during a call, the callee's frame. Liveness is
// by instruction index in the (straight-line) body; placement is greedy first
// fit. The plan is then checked from the IR alone, so that a planner bug
// fails the pass instead of corrupting memory at run time.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Rt/IR/RtOps.h"
#include "autoshard/Dialect/Rt/Transforms/FrameLiveness.h"
#include "autoshard/Dialect/Rt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace autoshard::rt {
#define GEN_PASS_DEF_RTPLANMEMORY
#include "autoshard/Dialect/Rt/Transforms/Passes.h.inc"
} // namespace autoshard::rt

using namespace mlir;
using namespace autoshard::rt;

namespace {

/// Something that occupies bytes of a frame while it is live: a local
/// (`rt.alloc`), an I/O slot, or the callee frame of a call.
struct FrameItem {
  Operation *op;
  int64_t bytes;
  /// Inclusive indices of the first and last ops that need the bytes.
  int64_t start, end;
  /// Offset recorded in the IR (0 when none yet).
  int64_t offset;

  bool isLiveWith(const FrameItem &other) const {
    return start <= other.end && other.start <= end;
  }
  bool overlaps(const FrameItem &other) const {
    return bytes > 0 && other.bytes > 0 &&
           offset < other.offset + other.bytes && other.offset < offset + bytes;
  }
};

void recordOffset(Operation *op, int64_t offset) {
  StringRef name = isa<CallOp>(op) ? "frame_offset" : "offset";
  op->setAttr(name, Builder(op->getContext()).getI64IntegerAttr(offset));
}

/// The breakdown category of an item that is not a call.
Category getCategory(Operation *op) {
  if (auto alloc = dyn_cast<AllocOp>(op))
    return alloc.getCategory();
  return Category::Io;
}

int64_t getTotal(const CategoryBytes &bytes) {
  int64_t total = 0;
  for (int64_t b : bytes)
    total += b;
  return total;
}

/// The frame items of `func` with their live ranges, in program order.
/// Callees must be planned (their frame size is the call's item size).
FailureOr<SmallVector<FrameItem>> computeFrameItems(FuncOp func) {
  Block &body = func.getBody().front();
  int64_t numOps = std::distance(body.begin(), body.end());
  SmallVector<FrameItem> items;
  DenseMap<Operation *, unsigned> itemOf;
  llvm::SmallPtrSet<Operation *, 32> named;
  for (auto [index, opRef] : llvm::enumerate(body)) {
    Operation *op = &opRef;
    int64_t at = index;
    if (isFrameBuffer(op)) {
      // Slots are filled before the first instruction and read after the
      // last; a local needs its bytes from the first to the last instruction
      // that names it, and only at its own position until one does (where a
      // never-used one stays).
      bool isSlot = !isa<AllocOp>(op);
      if (!isSlot)
        itemOf[op] = items.size();
      items.push_back(
          {op, cast<BufferType>(op->getResult(0).getType()).getSizeInBytes(),
           isSlot ? 0 : at, isSlot ? numOps - 1 : at,
           getPlannedOffset(op).value_or(0)});
    } else if (auto call = dyn_cast<CallOp>(op)) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<FuncOp>(
          call, call.getCalleeAttr());
      if (!callee || !callee.isPlanned())
        return call.emitOpError() << "callee '" << call.getCallee()
                                  << "' is not a planned rt.func";
      items.push_back({op, *callee.getFrameBytes(), at, at,
                       getPlannedOffset(op).value_or(0)});
    }
    if (!isa<KernelOp, CallOp>(op))
      continue;
    // An instruction that names a local (or a view of it) keeps it live.
    for (Value operand : op->getOperands()) {
      Operation *root = getBufferRoot(operand);
      auto it = root ? itemOf.find(root) : itemOf.end();
      if (it == itemOf.end())
        continue;
      FrameItem &item = items[it->second];
      if (named.insert(root).second)
        item.start = at;
      item.end = at;
    }
  }
  return items;
}

/// Describes an item for diagnostics.
std::string describe(const FrameItem &item) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto call = dyn_cast<CallOp>(item.op))
    os << "the frame of the call to '" << call.getCallee() << "'";
  else
    os << "the '" << item.op->getName() << "' buffer";
  os << " (bytes [" << item.offset << ", " << item.offset + item.bytes
     << "), live at instructions " << item.start << ".." << item.end << ")";
  return text;
}

/// Checks the plan recorded in the IR of `func`: every item inside the
/// frame and aligned, no two items live at once sharing a byte. This does
/// not trust the planner: it reads offsets back from the IR.
LogicalResult checkPlan(FuncOp func) {
  if (!func.isPlanned())
    return func.emitOpError() << "is not planned (no frame_bytes)";
  FailureOr<SmallVector<FrameItem>> items = computeFrameItems(func);
  if (failed(items))
    return failure();
  int64_t frameBytes = *func.getFrameBytes();
  for (auto [i, item] : llvm::enumerate(*items)) {
    if (!getPlannedOffset(item.op))
      return item.op->emitOpError() << "has no planned offset";
    if (item.offset % RtDialect::kAlignment != 0 ||
        item.offset + item.bytes > frameBytes)
      return item.op->emitOpError()
             << "memory plan is wrong: " << describe(item)
             << " is misaligned or exceeds frame_bytes " << frameBytes;
    for (const FrameItem &other : ArrayRef(*items).drop_front(i + 1)) {
      if (!item.isLiveWith(other) || !item.overlaps(other))
        continue;
      InFlightDiagnostic diag = other.op->emitOpError()
                                << "memory plan is wrong: " << describe(other)
                                << " overlaps " << describe(item)
                                << " while both are live";
      diag.attachNote(item.op->getLoc()) << "the other buffer";
      return diag;
    }
  }
  return success();
}

/// First fit in program order: each item goes to the lowest aligned offset
/// free of every already placed item whose live range meets its own.
/// Returns the frame size.
int64_t placeItems(MutableArrayRef<FrameItem> items) {
  SmallVector<FrameItem *> order =
      llvm::map_to_vector(items, [](FrameItem &item) { return &item; });
  // Stable: among items that become live together, the larger first (less
  // fragmentation), then program order.
  llvm::stable_sort(order, [](const FrameItem *a, const FrameItem *b) {
    if (a->start != b->start)
      return a->start < b->start;
    return a->bytes > b->bytes;
  });
  SmallVector<FrameItem *> placed;
  int64_t frameBytes = 0;
  for (FrameItem *item : order) {
    SmallVector<FrameItem *> conflicts;
    for (FrameItem *other : placed)
      if (item->isLiveWith(*other) && other->bytes > 0)
        conflicts.push_back(other);
    llvm::sort(conflicts, [](const FrameItem *a, const FrameItem *b) {
      return a->offset < b->offset;
    });
    int64_t candidate = 0;
    for (FrameItem *other : conflicts) {
      if (other->offset >= candidate + item->bytes)
        break;
      candidate = std::max(candidate, alignBytes(other->offset + other->bytes));
    }
    item->offset = candidate;
    frameBytes = std::max(frameBytes, alignBytes(candidate + item->bytes));
    placed.push_back(item);
  }
  return frameBytes;
}

/// Live bytes per category at the instruction where `func`'s live bytes
/// peak, with each call's callee peak counted at the call.
FailureOr<CategoryBytes> computePeakBreakdown(FuncOp func) {
  FailureOr<SmallVector<FrameUse>> uses = getFrameUses(func);
  if (failed(uses))
    return failure();
  int64_t numOps = std::distance(func.getBody().front().begin(),
                                 func.getBody().front().end());
  CategoryBytes peak{};
  for (int64_t at = 0; at < numOps; ++at) {
    CategoryBytes live{};
    for (const FrameUse &use : *uses)
      if (use.start <= at && at <= use.end)
        for (unsigned i = 0; i < live.size(); ++i)
          live[i] += use.bytes[i];
    if (getTotal(live) > getTotal(peak))
      peak = live;
  }
  return peak;
}

/// Orders the functions of `module` callees first; fails on recursion.
FailureOr<SmallVector<FuncOp>> getCalleesFirstOrder(ModuleOp module) {
  enum class Mark { Visiting, Done };
  DenseMap<Operation *, Mark> marks;
  SmallVector<FuncOp> order;
  std::function<LogicalResult(FuncOp)> visit =
      [&](FuncOp func) -> LogicalResult {
    auto [it, inserted] = marks.try_emplace(func, Mark::Visiting);
    if (!inserted) {
      if (it->second == Mark::Done)
        return success();
      return func.emitOpError() << "is recursive; a static frame cannot be "
                                   "planned for it";
    }
    WalkResult result = func.walk([&](CallOp call) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<FuncOp>(
          call, call.getCalleeAttr());
      if (!callee)
        return WalkResult::advance(); // Reported by the verifier.
      return failed(visit(callee)) ? WalkResult::interrupt()
                                   : WalkResult::advance();
    });
    if (result.wasInterrupted())
      return failure();
    marks[func] = Mark::Done;
    order.push_back(func);
    return success();
  };
  for (FuncOp func : module.getOps<FuncOp>())
    if (failed(visit(func)))
      return failure();
  return order;
}

LogicalResult planFunction(FuncOp func) {
  FailureOr<SmallVector<FrameItem>> items = computeFrameItems(func);
  if (failed(items))
    return failure();
  int64_t frameBytes = placeItems(*items);
  for (const FrameItem &item : *items)
    recordOffset(item.op, item.offset);
  Builder builder(func.getContext());
  func.setFrameBytesAttr(builder.getI64IntegerAttr(frameBytes));

  FailureOr<CategoryBytes> peak = computePeakBreakdown(func);
  if (failed(peak))
    return failure();
  SmallVector<NamedAttribute> entries;
  for (unsigned i = 0; i < peak->size(); ++i)
    entries.push_back(
        builder.getNamedAttr(stringifyCategory(static_cast<Category>(i)),
                             builder.getI64IntegerAttr((*peak)[i])));
  func.setPeakBreakdownAttr(builder.getDictionaryAttr(entries));
  return checkPlan(func);
}

struct RtPlanMemoryPass
    : public autoshard::rt::impl::RtPlanMemoryBase<RtPlanMemoryPass> {
  using RtPlanMemoryBase::RtPlanMemoryBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (verifyOnly) {
      for (FuncOp func : module.getOps<FuncOp>())
        if (failed(checkPlan(func)))
          return signalPassFailure();
      return;
    }
    FailureOr<SmallVector<FuncOp>> order = getCalleesFirstOrder(module);
    if (failed(order))
      return signalPassFailure();
    for (FuncOp func : *order)
      if (failed(planFunction(func)))
        return signalPassFailure();
  }
};

} // namespace

FailureOr<SmallVector<FrameUse>> autoshard::rt::getFrameUses(FuncOp func) {
  FailureOr<SmallVector<FrameItem>> items = computeFrameItems(func);
  if (failed(items))
    return failure();
  SmallVector<FrameUse> uses;
  for (const FrameItem &item : *items) {
    FrameUse use{item.op, item.start, item.end, {}};
    if (auto call = dyn_cast<CallOp>(item.op)) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<FuncOp>(
          call, call.getCalleeAttr());
      if (DictionaryAttr peak = callee.getPeakBreakdownAttr())
        for (NamedAttribute entry : peak)
          if (std::optional<Category> category =
                  symbolizeCategory(entry.getName().getValue()))
            use.bytes[static_cast<unsigned>(*category)] +=
                cast<IntegerAttr>(entry.getValue()).getInt();
    } else {
      use.bytes[static_cast<unsigned>(getCategory(item.op))] = item.bytes;
    }
    uses.push_back(use);
  }
  return uses;
}
