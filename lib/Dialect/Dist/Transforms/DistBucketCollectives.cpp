//===- DistBucketCollectives.cpp - coalesce collectives into buckets ------===//
//
// Implements `dist-bucket-collectives` (see Passes.td for the contract).
// Each block is scanned once per key (kind, mesh, axes, reduction, element
// type) in program order; a collective joins the open bucket when the
// merged collective can still be placed after every member's operand and
// before every use of a member's result, within the byte cap and without
// spanning a call. Each bucket of two or more becomes
// `dist.pack` -> one flat collective -> `dist.unpack`.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <limits>

namespace autoshard::dist {
#define GEN_PASS_DEF_DISTBUCKETCOLLECTIVES
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace autoshard::dist

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

constexpr int64_t kNoUse = std::numeric_limits<int64_t>::max();

/// The collectives the pass coalesces (blocking forms only).
bool isBucketable(Operation *op) {
  return isa_and_nonnull<AllReduceOp, AllGatherOp, ReduceScatterOp>(op);
}

bool isReduction(Operation *op) {
  return isa<AllReduceOp, ReduceScatterOp>(op);
}

/// What must be equal for two collectives to share one flat collective.
struct BucketKey {
  OperationName name;
  Attribute mesh, axes, reduction;
  Type elementType;

  bool operator==(const BucketKey &other) const {
    return name == other.name && mesh == other.mesh && axes == other.axes &&
           reduction == other.reduction && elementType == other.elementType;
  }
};

BucketKey getKey(Operation *op) {
  auto input = cast<RankedTensorType>(op->getOperand(0).getType());
  return {op->getName(), op->getAttr("mesh"), op->getAttr("axes"),
          op->getAttr("reduction"), input.getElementType()};
}

int64_t getBytes(RankedTensorType type) {
  return type.getNumElements() * static_cast<int64_t>(llvm::divideCeil(
                                     type.getElementTypeBitWidth(), 8));
}

struct Member {
  Operation *op;
  /// Position of the collective, of its operand's producer (-1: defined
  /// before the block) and of the first op of the block that uses its result
  /// (kNoUse: none).
  int64_t pos, defPos, usePos;
  /// The layer group (calls before it) the member belongs to: for a
  /// reduction that of the ops right after its operand's producer (where
  /// the bucket is placed, so each layer's gradients form their own
  /// bucket even when the partitioner left every reduction at the end of
  /// the step), for a gather that of the collective itself.
  int64_t group;
  /// Bytes of the full (unsharded) side: what the flat buffer holds per rank
  /// before a reduce-scatter or after an all-gather.
  int64_t bytes;
};

struct Bucket {
  BucketKey key;
  SmallVector<Member> members;
  int64_t maxDef = -1, minUse = kNoUse, group = 0, bytes = 0;

  void add(const Member &m) {
    if (members.empty())
      group = m.group;
    members.push_back(m);
    maxDef = std::max(maxDef, m.defPos);
    minUse = std::min(minUse, m.usePos);
    bytes += m.bytes;
  }
};

class BlockBucketer {
public:
  BlockBucketer(Block &block, int64_t bucketBytes, bool splitAtCalls,
                SymbolTableCollection &symbols)
      : block(block), bucketBytes(bucketBytes), splitAtCalls(splitAtCalls),
        symbols(symbols) {}

  /// Forms the buckets and rewrites them.
  LogicalResult run();

  /// Flat collectives created, and collectives removed (members minus the
  /// flat collectives that replace them).
  int64_t numBuckets = 0, numRemoved = 0;

private:
  std::optional<Member> getMember(Operation *op, const BucketKey &key);
  /// Buckets the collectives of `key` (one round; the others stay put).
  LogicalResult runKey(const BucketKey &key);
  bool canJoin(const Bucket &bucket, const Member &m) const;
  /// The layer group of a reduction: that of the ops right after the
  /// producer of its operand, or of the first operand down a chain of
  /// reductions that is not a reduction (0 when defined before the block).
  int64_t getReductionGroup(Operation *reduction) const;
  /// The layer group of an all-gather whose operand `producer` defines.
  int64_t getGatherGroup(Operation *gather, Operation *producer) const;
  LogicalResult rewrite(Bucket &bucket);

  Block &block;
  int64_t bucketBytes;
  bool splitAtCalls;
  SymbolTableCollection &symbols;
  DenseMap<Operation *, int64_t> positions;
  SmallVector<Operation *> ops;
  /// callsBefore[i] = number of calls among ops[0 .. i).
  SmallVector<int64_t> callsBefore;
};

std::optional<Member> BlockBucketer::getMember(Operation *op,
                                               const BucketKey &key) {
  if (!isBucketable(op) || !(getKey(op) == key))
    return std::nullopt;
  // Collectives of other keys stay where they are in this round, so a chain
  // through one of them is an ordinary dependency. A chain between two
  // collectives of this key would move both ends: it stays as it is.
  auto sameKey = [&](Operation *other) {
    return isBucketable(other) && getKey(other) == key;
  };
  Value input = op->getOperand(0);
  Operation *producer = input.getDefiningOp();
  if (producer && sameKey(producer))
    return std::nullopt;
  Member m{op, positions.lookup(op), -1, kNoUse, 0, 0};
  if (producer && producer->getBlock() == &block)
    m.defPos = positions.lookup(producer);
  if (isReduction(op))
    m.group = getReductionGroup(op);
  else
    m.group = getGatherGroup(op, producer);
  for (Operation *user : op->getResult(0).getUsers()) {
    Operation *ancestor = block.findAncestorOpInBlock(*user);
    if (!ancestor || sameKey(user))
      return std::nullopt;
    m.usePos = std::min(m.usePos, positions.lookup(ancestor));
  }
  auto in = cast<RankedTensorType>(input.getType());
  auto out = cast<RankedTensorType>(op->getResult(0).getType());
  m.bytes = std::max(getBytes(in), getBytes(out));
  return m;
}

int64_t BlockBucketer::getReductionGroup(Operation *reduction) const {
  // Through a chain of reductions (a norm's gradient all-reduced over tp,
  // then reduce-scattered over dp) to the op that computed the gradient:
  // the chain's own place is wherever the partitioner left it.
  Operation *producer = reduction->getOperand(0).getDefiningOp();
  while (producer && producer->getBlock() == &block && isBucketable(producer) &&
         isReduction(producer))
    producer = producer->getOperand(0).getDefiningOp();
  if (!producer || producer->getBlock() != &block)
    return 0;
  int64_t defPos = positions.lookup(producer);
  return callsBefore[defPos] + (isa<CallOpInterface>(producer) ? 1 : 0);
}

int64_t BlockBucketer::getGatherGroup(Operation *gather,
                                      Operation *producer) const {
  // A gather of what an update computed from reduced gradients (ZeRO-1/2:
  // the optimizer's new parameter shard) belongs to those gradients'
  // layer group, so the parameter gathers after the optimizer form one
  // bucket per layer, as the gradient reductions do, and each starts
  // behind the next buckets' updates (Megatron's per-bucket
  // overlap_param_gather) instead of all of them in one bucket at the end.
  int64_t group = -1;
  if (producer && producer->getBlock() == &block)
    for (Value operand : producer->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && def->getBlock() == &block && isBucketable(def) &&
          isReduction(def))
        group = std::max(group, getReductionGroup(def));
  return group >= 0 ? group : callsBefore[positions.lookup(gather)];
}

bool BlockBucketer::canJoin(const Bucket &bucket, const Member &m) const {
  if (std::max(bucket.maxDef, m.defPos) >= std::min(bucket.minUse, m.usePos))
    return false;
  if (bucketBytes > 0 && bucket.bytes + m.bytes > bucketBytes)
    return false;
  if (splitAtCalls && m.group != bucket.group)
    return false;
  return true;
}

LogicalResult BlockBucketer::rewrite(Bucket &bucket) {
  Operation *first = bucket.members.front().op;
  SmallVector<Location> locs;
  SmallVector<Value> inputs;
  SmallVector<Type> resultTypes;
  SmallVector<int64_t> dims;
  int64_t total = 0;
  for (const Member &m : bucket.members) {
    locs.push_back(m.op->getLoc());
    inputs.push_back(m.op->getOperand(0));
    resultTypes.push_back(m.op->getResult(0).getType());
    total +=
        cast<RankedTensorType>(m.op->getOperand(0).getType()).getNumElements();
    if (auto rs = dyn_cast<ReduceScatterOp>(m.op))
      dims.push_back(rs.getScatterDim());
    else if (auto ag = dyn_cast<AllGatherOp>(m.op))
      dims.push_back(ag.getGatherDim());
  }
  auto meshRef = cast<FlatSymbolRefAttr>(bucket.key.mesh);
  auto mesh = symbols.lookupNearestSymbolFrom<MeshOp>(first, meshRef);
  if (!mesh)
    return first->emitOpError() << "names no mesh " << meshRef;
  auto axes = cast<ArrayAttr>(bucket.key.axes);
  int64_t groupSize = mesh.getGroupSize(axes);

  OpBuilder builder(first->getContext());
  if (isReduction(first)) {
    // After the last producer of an operand.
    if (bucket.maxDef < 0)
      builder.setInsertionPointToStart(&block);
    else
      builder.setInsertionPointAfter(ops[bucket.maxDef]);
  } else {
    // Before the first consumer of a result.
    builder.setInsertionPoint(bucket.minUse == kNoUse ? block.getTerminator()
                                                      : ops[bucket.minUse]);
  }
  Location loc = builder.getFusedLoc(locs);
  Type elementType = bucket.key.elementType;
  auto flatType = [&](int64_t n) {
    return RankedTensorType::get({n}, elementType);
  };
  auto i64 = [&](int64_t v) { return builder.getI64IntegerAttr(v); };
  auto noDims = builder.getDenseI64ArrayAttr({});
  auto reduction = dyn_cast_or_null<ReductionKindAttr>(bucket.key.reduction);

  Operation *unpack = nullptr;
  if (isa<AllReduceOp>(first)) {
    Value flat =
        PackOp::create(builder, loc, flatType(total), inputs, i64(1), noDims);
    Value reduced = AllReduceOp::create(builder, loc, flatType(total), flat,
                                        meshRef, axes, reduction);
    unpack =
        UnpackOp::create(builder, loc, resultTypes, reduced, i64(1), noDims);
  } else if (isa<ReduceScatterOp>(first)) {
    // Segment r of the packed buffer holds every tensor's shard r, so the
    // flat reduce-scatter leaves each rank its own shards.
    Value flat =
        PackOp::create(builder, loc, flatType(total), inputs, i64(groupSize),
                       builder.getDenseI64ArrayAttr(dims));
    Value scattered =
        ReduceScatterOp::create(builder, loc, flatType(total / groupSize), flat,
                                meshRef, axes, i64(0), reduction);
    unpack =
        UnpackOp::create(builder, loc, resultTypes, scattered, i64(1), noDims);
  } else {
    // Segment g of the gathered buffer holds rank g's shards.
    Value flat =
        PackOp::create(builder, loc, flatType(total), inputs, i64(1), noDims);
    Value gathered = AllGatherOp::create(
        builder, loc, flatType(total * groupSize), flat, meshRef, axes, i64(0));
    unpack =
        UnpackOp::create(builder, loc, resultTypes, gathered, i64(groupSize),
                         builder.getDenseI64ArrayAttr(dims));
  }
  for (auto [m, result] : llvm::zip(bucket.members, unpack->getResults())) {
    m.op->getResult(0).replaceAllUsesWith(result);
    m.op->erase();
  }
  return success();
}

LogicalResult BlockBucketer::runKey(const BucketKey &key) {
  positions.clear();
  ops.clear();
  callsBefore.clear();
  for (Operation &op : block) {
    positions[&op] = static_cast<int64_t>(ops.size());
    callsBefore.push_back((callsBefore.empty() ? 0 : callsBefore.back()) +
                          (ops.empty()                        ? 0
                           : isa<CallOpInterface>(ops.back()) ? 1
                                                              : 0));
    ops.push_back(&op);
  }
  SmallVector<Bucket> buckets;
  std::optional<Bucket> open;
  for (Operation *op : ops) {
    std::optional<Member> m = getMember(op, key);
    if (!m)
      continue;
    if (open && canJoin(*open, *m)) {
      open->add(*m);
      continue;
    }
    if (open)
      buckets.push_back(std::move(*open));
    open = Bucket{key, {}};
    open->add(*m);
  }
  if (open)
    buckets.push_back(std::move(*open));
  for (Bucket &bucket : buckets) {
    if (bucket.members.size() < 2)
      continue;
    if (failed(rewrite(bucket)))
      return failure();
    ++numBuckets;
    numRemoved += static_cast<int64_t>(bucket.members.size()) - 1;
  }
  return success();
}

LogicalResult BlockBucketer::run() {
  // One round per key: positions are recomputed after each, so a bucket of
  // one key sees the buckets of the keys before it as ordinary ops. Gathers
  // go first (they move up to their first consumer, which lets a reduction
  // of what they gathered join a bucket), then the reductions; keys of one
  // kind in order of first appearance.
  SmallVector<BucketKey> keys;
  for (bool gathers : {true, false})
    for (Operation &op : block)
      if (isBucketable(&op) && isa<AllGatherOp>(&op) == gathers &&
          !llvm::is_contained(keys, getKey(&op)))
        keys.push_back(getKey(&op));
  for (const BucketKey &key : keys)
    if (failed(runKey(key)))
      return failure();
  return success();
}

struct DistBucketCollectivesPass
    : public dist::impl::DistBucketCollectivesBase<DistBucketCollectivesPass> {
  using DistBucketCollectivesBase::DistBucketCollectivesBase;

  void runOnOperation() override {
    if (bucketBytes < 0) {
      getOperation().emitError()
          << "dist-bucket-collectives: bucket-bytes must be >= 0 (0 = no "
             "limit), found "
          << static_cast<int64_t>(bucketBytes);
      return signalPassFailure();
    }
    SymbolTableCollection symbols;
    for (auto func : getOperation().getOps<func::FuncOp>())
      for (Block &block : func.getBody()) {
        BlockBucketer bucketer(block, bucketBytes, splitAtCalls, symbols);
        if (failed(bucketer.run()))
          return signalPassFailure();
        numBuckets += bucketer.numBuckets;
        numRemoved += bucketer.numRemoved;
      }
  }
};

} // namespace
