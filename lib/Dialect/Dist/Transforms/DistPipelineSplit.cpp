//===- DistPipelineSplit.cpp - Pipeline stages and their schedule ---------===//
//
// Splits each entry function of a partitioned module into one program per
// pipeline rank (plan `pp`), each running its model chunks (`vpp` per
// rank) in the order of the plan's schedule (lib/Pipeline: GPipe, 1F1B,
// interleaved 1F1B, looped BFS, ZB-H1, ZB-V), with point-to-point
// transfers between the ranks. The algorithm is described in the pass
// documentation (Passes.td); the placement in short:
//
//  * units: the ops of microbatch j (those that depend on its rows, from
//    `tfm.microbatch`, or from the inputs that are not state with one
//    microbatch) split into a forward part F and a backward part B (the
//    ops that depend on the loss-gradient seed, and forward re-runs marked
//    `tfm.recompute`); for
//    the zero-bubble schedules B is cut into I (input gradient) and W
//    (weight gradient: backward ops only the tail reads; block calls are
//    cut in two, BackwardSplit.h). An op over several microbatches that
//    reads no argument (the gradient accumulation, its reduction) runs in
//    the unit its stage runs last among them; the rest is the tail (the
//    global norm, the optimizer);
//  * stages: the k-th block call of a microbatch's forward is layer k, its
//    backward call the layer of the forward residuals it reads; layers go
//    to the pp*vpp stages (model chunks) in contiguous ranges balanced by
//    cost (TfmCostOpInterface FLOPs, the embedding counted on the first
//    stage and the head and loss on the last; pipeline/StagePartition.h);
//    stage c runs on rank stageToRank[c] of the schedule; other forward
//    ops run on the latest stage of their operands, backward ops on the
//    earliest; ops that read only arguments (a ZeRO-3 parameter
//    all-gather) are copied to every rank whose units use them, so each of
//    those ranks holds the parameter;
//  * the tail runs where its results are needed: every rank returns the
//    loss and the global norm, and updates the state it holds (a parameter
//    used on two ranks, the tied embedding, is held and updated on both
//    from the same gradient; another entry may read state only where the
//    training step holds it). `tfm.sum_squares` is split into one partial
//    sum per rank (each gradient counted once, on its home rank) plus an
//    all-reduce over `pp`;
//  * transfers: a value a unit on another rank needs is sent
//    (`dist.send_start`) right after the producing unit and received at
//    the start of the consuming unit, in the producer's program order;
//    values a tail needs from another rank are sent and received at the
//    start of the tails, in program order. A send is waited where it can
//    no longer block (after a later message from its peer that the peer
//    sent after receiving it), else at the end; with every send
//    asynchronous, an acyclic schedule cannot deadlock (dist-verify-comm
//    checks it).
//
//===----------------------------------------------------------------------===//

#include "BackwardSplit.h"

#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Dist/Transforms/Plan.h"
#include "autoshard/Dialect/Tfm/IR/TfmAttrNames.h"
#include "autoshard/Dialect/Tfm/IR/TfmInterfaces.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"
#include "autoshard/Pipeline/Schedule.h"
#include "autoshard/Pipeline/StagePartition.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"

#include <cmath>
#include <map>
#include <tuple>

namespace autoshard::dist {
#define GEN_PASS_DEF_DISTPIPELINESPLIT
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace autoshard::dist

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

using UnitKind = pipeline::PipelineOp::Kind;

/// Where an op of the original entry runs.
struct Placement {
  enum Kind { Unit, Tail, Free } kind = Unit;
  int64_t microbatch = 0;
  /// F for forward ops; B, or I / W when the schedule splits the backward.
  UnitKind part = UnitKind::F;
  /// Units: the stage (model chunk) that runs the op; tail ops: the stage
  /// of the operands they read last (or -1).
  int64_t stage = -1;

  bool backward() const { return part != UnitKind::F; }
};

/// Ops without operands (constants, `dist.axis_index`) are recomputed in
/// every program and unit that uses them.
bool isFree(Operation *op) {
  return op->getNumOperands() == 0 && op->getNumRegions() == 0 &&
         op->getNumResults() > 0;
}

/// The loss-gradient seeds: every backward op depends on one.
bool isBackwardSeed(Operation *op) {
  return op->hasTrait<tfm::trait::LossGradientSeed>();
}

/// A reduction whose result adds up partial results over its operands
/// (the global gradient norm's sum of squares): split over the ranks.
bool isSplitSum(Operation *op) {
  return op->hasTrait<tfm::trait::SumOverOperands>();
}

/// Whether `op` reads an argument of its function (state, or an input
/// such as the learning rate) directly.
bool readsArgument(Operation *op) {
  return llvm::any_of(op->getOperands(),
                      [](Value v) { return isa<BlockArgument>(v); });
}

/// The state (parameter or optimizer state) an argument or result holds.
StringRef stateName(DictionaryAttr attrs) {
  if (!attrs)
    return {};
  if (auto name = attrs.getAs<StringAttr>(tfm::kParamAttrName))
    return name.getValue();
  if (auto name = attrs.getAs<StringAttr>(tfm::kStateAttrName))
    return name.getValue();
  return {};
}

/// The stage -> rank map of `kind` for p ranks and v stages per rank.
std::vector<int64_t> stageMap(pipeline::ScheduleKind kind, int64_t numRanks,
                              int64_t stagesPerRank) {
  if (kind == pipeline::ScheduleKind::ZBV)
    return pipeline::vStageToRank(numRanks);
  return pipeline::loopStageToRank(numRanks, stagesPerRank);
}

/// FLOPs of an op (TfmCostOpInterface), a call counted as its callee's ops.
double flopsOf(Operation *op, SymbolTableCollection &symbols,
               unsigned depth = 0) {
  if (auto cost = dyn_cast<tfm::TfmCostOpInterface>(op))
    return cost.getCost().flops;
  double flops = 0;
  if (auto call = dyn_cast<func::CallOp>(op)) {
    auto callee = symbols.lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (callee && !callee.isExternal() && depth < 16)
      callee.walk([&](Operation *inner) {
        if (inner != callee.getOperation() && !isa<func::CallOp>(inner))
          if (auto cost = dyn_cast<tfm::TfmCostOpInterface>(inner))
            flops += cost.getCost().flops;
        if (isa<func::CallOp>(inner))
          flops += flopsOf(inner, symbols, depth + 1);
      });
  }
  return flops;
}

class EntrySplitter {
public:
  /// `given`: the training schedule dist-schedule chose (or a user's), or
  /// null to build the one of `kind`.
  EntrySplitter(func::FuncOp func, MeshOp mesh, int64_t numRanks,
                int64_t stagesPerRank, pipeline::ScheduleKind kind,
                const pipeline::PipelineSchedule *given,
                BackwardCallSplitter &callSplitter)
      : func(func), mesh(mesh), numRanks(numRanks),
        stagesPerRank(stagesPerRank), numStages(numRanks * stagesPerRank),
        kind(kind), given(given), callSplitter(callSplitter) {}

  /// Places every op in units and tail and finds the layers (cutting
  /// backward calls into I and W for the zero-bubble schedules).
  LogicalResult analyze();
  /// Per-layer cost (FLOPs of microbatch 0's forward and backward) and the
  /// cost of the ops before the first layer (`first`: the embedding and its
  /// backward) and after the last (`last`: final norm, head, loss).
  void layerCosts(std::vector<double> &costs, double &first, double &last);
  int64_t getNumLayers() const { return numLayers; }
  /// Builds one function per rank after `func`, with layers on stages as
  /// `partition` says.
  LogicalResult run(const pipeline::StagePartition &partition);

  /// The schedule the ranks follow (§1.5 text), once run() succeeded.
  std::string scheduleText;
  bool backward() const { return hasBackward; }
  func::FuncOp getFunc() const { return func; }
  /// Once run() succeeded: the ranks that hold each state, and those whose
  /// units read it.
  const llvm::StringMap<llvm::SmallBitVector> &getHolders() const {
    return holders;
  }
  const llvm::StringMap<llvm::SmallBitVector> &getReaders() const {
    return readers;
  }

private:
  LogicalResult place();
  LogicalResult classifyBackward(bool allowSplit, bool &didSplit);
  LogicalResult assignLayers();
  LogicalResult assignStages(const pipeline::StagePartition &partition);
  /// Copies each op without a staged operand that units of several ranks
  /// use, one per rank; returns whether it copied any.
  bool replicateOnUserRanks();
  void placeTail();
  /// Moves each op over several microbatches (`combining`) to the unit of
  /// the one among them that its stage runs last in `orders` (the last in
  /// most schedules, the first in looped BFS, whose backward runs the
  /// microbatches in reverse).
  void
  placeCombining(const std::vector<std::vector<pipeline::PipelineOp>> &orders);
  LogicalResult computeDemand();
  void demand(Value value, int64_t rank);
  LogicalResult buildRank(int64_t rank,
                          const std::vector<pipeline::PipelineOp> &order);
  /// The stage (model chunk) of a unit or tail value, or -1.
  int64_t stageOf(Value value) const;
  /// The rank of a value's stage, or -1.
  int64_t rankOf(Value value) const {
    int64_t stage = stageOf(value);
    return stage < 0 ? -1 : stageToRank[stage];
  }
  bool isUnitValue(Value value) const;
  /// The rank whose unit runs `op`, or -1 when `op` is not a placed unit op
  /// (a tail op, a free op, the terminator or any op outside `placement`).
  int64_t unitRank(Operation *op) const {
    auto it = placement.find(op);
    if (it == placement.end() || it->second.kind != Placement::Unit ||
        it->second.stage < 0)
      return -1;
    return stageToRank[it->second.stage];
  }

  func::FuncOp func;
  MeshOp mesh;
  int64_t numRanks, stagesPerRank, numStages;
  int64_t numMicrobatches = 1;
  pipeline::ScheduleKind kind;
  const pipeline::PipelineSchedule *given;
  BackwardCallSplitter &callSplitter;
  bool hasBackward = false;
  std::vector<int64_t> stageToRank;

  SmallVector<Operation *> ops; ///< Top-level ops in program order.
  llvm::DenseMap<Operation *, unsigned> position;
  llvm::DenseMap<Operation *, Placement> placement;
  /// Unit ops over several microbatches (gradient accumulation, the loss
  /// mean): the microbatches they read.
  llvm::DenseMap<Operation *, llvm::SmallBitVector> combining;
  llvm::DenseMap<Operation *, int64_t> layerOf;
  int64_t numLayers = 0;

  /// Ranks that hold each state (by name), and those whose units read it.
  llvm::StringMap<llvm::SmallBitVector> holders, readers;
  /// Per rank: the tail ops it runs, and the unit values it receives for
  /// its tail (from their home rank).
  SmallVector<llvm::SetVector<Operation *>> tailOps;
  SmallVector<llvm::SetVector<Value>> tailInputs;
  /// Per rank: the results of the entry it returns (indices).
  SmallVector<SmallVector<unsigned>> returned;
  /// Per rank: the ops of each of its units (stage, microbatch, kind), in
  /// program order.
  using UnitKey = std::tuple<int64_t, int64_t, UnitKind>;
  std::vector<std::map<UnitKey, SmallVector<Operation *>>> unitOps;
  /// sendSequence[from][to]: the unit values `from` sends `to`, in order.
  std::vector<std::vector<SmallVector<Value>>> sendSequence;
  /// The ranks other than `rank` whose units read `value`.
  llvm::SmallBitVector unitReaders(Value value, int64_t rank) const;
};

int64_t EntrySplitter::stageOf(Value value) const {
  Operation *op = value.getDefiningOp();
  if (!op)
    return -1;
  auto it = placement.find(op);
  return it == placement.end() ? -1 : it->second.stage;
}

bool EntrySplitter::isUnitValue(Value value) const {
  Operation *op = value.getDefiningOp();
  return op && placement.lookup(op).kind == Placement::Unit;
}

LogicalResult EntrySplitter::analyze() {
  if (failed(place()))
    return failure();
  return assignLayers();
}

LogicalResult EntrySplitter::place() {
  ops.clear();
  position.clear();
  placement.clear();
  layerOf.clear();
  Block &body = func.front();
  for (Operation &op : body.without_terminator()) {
    position[&op] = ops.size();
    ops.push_back(&op);
  }
  // Entries that take one microbatch (e.g. @logits) have no tfm.microbatch.
  numMicrobatches = 1;
  bool sliced = false;
  for (Operation *op : ops)
    if (auto mb = dyn_cast<tfm::MicrobatchOp>(op)) {
      numMicrobatches = mb.getCount();
      sliced = true;
    }
  // Microbatch membership (bit j: depends on microbatch j's rows), the
  // backward flag and the tail seed (the global norm and what follows).
  llvm::DenseMap<Operation *, llvm::SmallBitVector> rows;
  llvm::DenseSet<Operation *> backward, tail;
  for (Operation *op : ops) {
    llvm::SmallBitVector bits(numMicrobatches);
    if (auto mb = dyn_cast<tfm::MicrobatchOp>(op))
      bits.set(mb.getIndex());
    bool bwd = isBackwardSeed(op) || op->hasAttr(tfm::kRecomputeAttrName);
    bool inTail = isSplitSum(op);
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      // Without tfm.microbatch the one microbatch's rows are the inputs
      // that are not state (tokens, labels).
      if (!def && !sliced &&
          stateName(
              func.getArgAttrDict(cast<BlockArgument>(operand).getArgNumber()))
              .empty())
        bits.set(0);
      if (!def)
        continue;
      if (auto it = rows.find(def); it != rows.end())
        bits |= it->second;
      bwd |= backward.contains(def) && !def->hasAttr(tfm::kRecomputeAttrName);
      inTail |= tail.contains(def);
    }
    if (bwd && !sliced)
      bits.set(0);
    rows[op] = bits;
    if (bwd)
      backward.insert(op);
    // An op over several microbatches that reads no state (the gradient
    // accumulation, its scaling, the data-parallel reductions of the sum,
    // the loss's mean) runs in the unit of its last microbatch, so a
    // layer's gradient is complete, and its reduction can start, right
    // after that layer's last backward instead of in the tail; whatever
    // reads state (the optimizer) stays in the tail.
    if (inTail || (bits.count() > 1 && readsArgument(op)))
      tail.insert(op);
  }
  hasBackward = llvm::any_of(ops, isBackwardSeed);
  combining.clear();
  // Units and tail; ops that depend on no microbatch go with their users.
  for (Operation *op : llvm::reverse(ops)) {
    Placement p;
    if (isFree(op)) {
      p.kind = Placement::Free;
    } else if (tail.contains(op)) {
      p.kind = Placement::Tail;
    } else if (rows[op].any()) {
      // (Over several microbatches: the last for now, placeCombining.)
      p.microbatch = rows[op].find_last();
      if (rows[op].count() > 1)
        combining[op] = rows[op];
      p.part = backward.contains(op) ? UnitKind::B : UnitKind::F;
    } else {
      // No microbatch rows (a position table, a ZeRO-3 parameter
      // all-gather, a ZeRO-1 parameter slice): the forward of the first
      // microbatch that uses it (every schedule runs a stage's microbatches
      // in order), else the tail, also with one microbatch (else the slice
      // of a later stage's parameter for the optimizer would be placed on
      // stage 0, which would then hold and update that parameter too).
      p.kind = Placement::Tail;
      p.microbatch = numMicrobatches;
      for (Operation *user : op->getUsers()) {
        auto it = placement.find(user);
        if (it != placement.end() && it->second.kind == Placement::Unit) {
          p.kind = Placement::Unit;
          p.microbatch = std::min(p.microbatch, it->second.microbatch);
          p.part = UnitKind::F;
        }
      }
    }
    placement[op] = p;
  }
  return success();
}

LogicalResult EntrySplitter::classifyBackward(bool allowSplit, bool &didSplit) {
  // I (input gradient): the backward ops of a unit that a value leaving
  // the unit depends on (the gradient the previous stage waits for, the
  // LM head's share of a tied embedding's gradient); W (weight gradient):
  // the rest of the unit's backward ops, whose results only the tail
  // (accumulation, norm, optimizer) reads. A call of which I needs only some
  // results is cut in two (BackwardSplit.h). A first stage sends nothing
  // back, so its backward is all W.
  llvm::DenseSet<Operation *> input;
  SmallVector<std::pair<func::CallOp, llvm::SmallBitVector>> toSplit;
  for (Operation *op : llvm::reverse(ops)) {
    Placement &p = placement[op];
    if (p.kind != Placement::Unit || !p.backward())
      continue;
    llvm::SmallBitVector usedByInput(op->getNumResults());
    for (auto [i, result] : llvm::enumerate(op->getResults()))
      for (Operation *user : result.getUsers()) {
        Placement u = placement.lookup(user);
        if (u.kind != Placement::Unit)
          continue;
        // Another microbatch's backward on the same stage (the gradient
        // accumulation) does not make a weight gradient an input gradient.
        bool sameStage =
            u.stage == p.stage && u.backward() &&
            (u.microbatch == p.microbatch || combining.count(user));
        if (!sameStage || input.contains(user))
          usedByInput.set(i);
      }
    if (usedByInput.none() && op->getNumResults() > 0) {
      p.part = UnitKind::W;
      continue;
    }
    input.insert(op);
    p.part = UnitKind::I;
    auto call = dyn_cast<func::CallOp>(op);
    if (allowSplit && call && !call->hasAttr(kBackwardPartAttrName) &&
        !usedByInput.all())
      toSplit.emplace_back(call, usedByInput.flip());
  }
  for (auto &[call, mask] : toSplit)
    didSplit |= callSplitter.split(call, mask).has_value();
  return success();
}

LogicalResult EntrySplitter::assignLayers() {
  // Layers: forward block calls in order, per microbatch. A forward re-run
  // (tfm.recompute) repeats the forward call with the same operands; a
  // backward call takes the largest layer of the forward calls (or re-runs)
  // whose results it reads.
  SmallVector<int64_t> nextLayer(numMicrobatches, 0);
  std::map<std::pair<int64_t, SmallVector<void *>>, int64_t> forwardCalls;
  auto operandKey = [](func::CallOp call) {
    SmallVector<void *> key;
    for (Value v : call.getOperands())
      key.push_back(v.getAsOpaquePointer());
    return key;
  };
  for (Operation *op : ops) {
    auto call = dyn_cast<func::CallOp>(op);
    Placement &p = placement[op];
    if (!call || p.kind != Placement::Unit)
      continue;
    if (!p.backward()) {
      layerOf[op] = nextLayer[p.microbatch]++;
      forwardCalls[{p.microbatch, operandKey(call)}] = layerOf[op];
      continue;
    }
    if (call->hasAttr(tfm::kRecomputeAttrName)) {
      auto it = forwardCalls.find({p.microbatch, operandKey(call)});
      if (it == forwardCalls.end())
        return call.emitError()
               << "dist-pipeline-split: forward re-run (tfm.recompute) of @"
               << call.getCallee()
               << " matches no forward block call with the same operands, "
                  "so its layer (and stage) is unknown";
      layerOf[op] = it->second;
      continue;
    }
    int64_t layer = -1;
    for (Value operand : call.getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && isa<func::CallOp>(def) &&
          (!placement[def].backward() || def->hasAttr(tfm::kRecomputeAttrName)))
        layer = std::max(layer, layerOf.lookup(def));
    if (layer < 0)
      return call.emitError()
             << "dist-pipeline-split: backward call to @" << call.getCallee()
             << " reads no forward block call's results, so its layer (and "
                "stage) is unknown";
    layerOf[op] = layer;
  }
  numLayers = nextLayer[0];
  for (int64_t j = 1; j < numMicrobatches; ++j)
    if (nextLayer[j] != numLayers)
      return func.emitError()
             << "dist-pipeline-split: microbatch " << j << " of @"
             << func.getSymName() << " has " << nextLayer[j]
             << " block calls, microbatch 0 " << numLayers;
  if (numLayers < numStages)
    return func.emitError()
           << "dist-pipeline-split: pp=" << numRanks
           << (stagesPerRank > 1 ? " x vpp=" + std::to_string(stagesPerRank)
                                 : std::string())
           << " needs at least " << numStages << " block calls (layers) in @"
           << func.getSymName() << ", found " << numLayers;
  return success();
}

void EntrySplitter::layerCosts(std::vector<double> &costs, double &first,
                               double &last) {
  SymbolTableCollection symbols;
  costs.assign(numLayers, 0);
  first = last = 0;
  // The embedding (before the first forward layer) and its backward (after
  // the last backward layer) go to the first stage; the rest of microbatch
  // 0's non-layer work (final norm, head, loss and their backward) to the
  // last stage.
  unsigned firstForward = ~0u, lastBackward = 0;
  for (Operation *op : ops) {
    Placement p = placement.lookup(op);
    if (!layerOf.count(op) || p.microbatch != 0)
      continue;
    if (!p.backward())
      firstForward = std::min(firstForward, position[op]);
    else
      lastBackward = std::max(lastBackward, position[op]);
  }
  for (Operation *op : ops) {
    Placement p = placement.lookup(op);
    if (p.kind != Placement::Unit || p.microbatch != 0)
      continue;
    double flops = flopsOf(op, symbols);
    if (auto it = layerOf.find(op); it != layerOf.end())
      costs[it->second] += flops;
    else if (p.backward() ? position[op] > lastBackward
                          : position[op] < firstForward)
      first += flops;
    else
      last += flops;
  }
}

LogicalResult
EntrySplitter::assignStages(const pipeline::StagePartition &partition) {
  // Forward ops run on the latest stage of their operands, backward ops on
  // the earliest; ops without a staged operand follow their users.
  for (;;) {
    for (Operation *op : ops) {
      Placement &p = placement[op];
      if (p.kind != Placement::Unit)
        continue;
      if (layerOf.count(op)) {
        p.stage = partition.stageOf(layerOf[op]);
        continue;
      }
      for (Value operand : op->getOperands()) {
        int64_t s = stageOf(operand);
        if (s < 0 || !isUnitValue(operand))
          continue;
        p.stage = p.stage < 0 ? s
                              : (p.backward() ? std::min(p.stage, s)
                                              : std::max(p.stage, s));
      }
    }
    if (!replicateOnUserRanks())
      break;
    // The copies are new ops: place everything again.
    if (failed(place()) || failed(assignLayers()))
      return failure();
  }
  placeTail();
  return success();
}

bool EntrySplitter::replicateOnUserRanks() {
  // An op without a staged operand reads only arguments and constants (a
  // ZeRO-3 parameter all-gather, a position table): it runs on the earliest
  // stage of its users. When units of several ranks use it, each of those
  // ranks gets its own copy (on its earliest using stage) rather than the
  // value by a send: then a state it reads (the embedding tied to the LM
  // head, all-gathered on both stages) is used, so held and updated, on
  // every rank that uses it (computeDemand), in every entry alike.
  bool replicated = false;
  for (Operation *op : llvm::reverse(ops)) {
    Placement p = placement.lookup(op);
    if (p.kind != Placement::Unit || p.stage >= 0)
      continue;
    // rank -> (earliest stage, first microbatch) of its units using `op`.
    std::map<int64_t, std::pair<int64_t, int64_t>> users;
    for (Operation *user : op->getUsers()) {
      auto it = placement.find(user);
      if (it == placement.end() || it->second.kind != Placement::Unit ||
          it->second.stage < 0)
        continue;
      const Placement &u = it->second;
      auto [entry, inserted] =
          users.try_emplace(stageToRank[u.stage], u.stage, u.microbatch);
      if (!inserted) {
        entry->second.first = std::min(entry->second.first, u.stage);
        entry->second.second = std::min(entry->second.second, u.microbatch);
      }
    }
    int64_t home = -1;
    for (auto &[rank, first] : users)
      if (home < 0 || first.first < users[home].first)
        home = rank;
    for (auto &[rank, first] : users) {
      if (rank == home)
        continue;
      OpBuilder b(op);
      Operation *copy = b.clone(*op);
      for (auto [from, to] : llvm::zip(op->getResults(), copy->getResults()))
        from.replaceUsesWithIf(to, [&, rank = rank](OpOperand &use) {
          Placement u = placement.lookup(use.getOwner());
          return u.kind == Placement::Unit && u.stage >= 0 &&
                 stageToRank[u.stage] == rank;
        });
      Placement c = p;
      c.stage = first.first;
      c.microbatch = first.second;
      placement[copy] = c;
      replicated = true;
    }
    p.stage = home < 0 ? 0 : users[home].first;
    placement[op] = p;
  }
  return replicated;
}

void EntrySplitter::placeCombining(
    const std::vector<std::vector<pipeline::PipelineOp>> &orders) {
  for (auto &[op, bits] : combining) {
    Placement &p = placement[op];
    if (p.kind != Placement::Unit || p.stage < 0)
      continue;
    const std::vector<pipeline::PipelineOp> &order =
        orders[stageToRank[p.stage]];
    int64_t last = -1;
    for (auto [i, u] : llvm::enumerate(order))
      if (u.stage == p.stage && u.kind == p.part && u.microbatch >= 0 &&
          u.microbatch < static_cast<int64_t>(bits.size()) &&
          bits.test(u.microbatch))
        last = static_cast<int64_t>(i);
    if (last >= 0)
      p.microbatch = order[last].microbatch;
  }
}

void EntrySplitter::placeTail() {
  // A tail op's home is the latest stage of its operands (used to count each
  // gradient once in the split global norm).
  for (Operation *op : ops) {
    Placement &p = placement[op];
    if (p.kind != Placement::Tail)
      continue;
    for (Value operand : op->getOperands())
      p.stage = std::max(p.stage, stageOf(operand));
  }
}

void EntrySplitter::demand(Value value, int64_t rank) {
  Operation *op = value.getDefiningOp();
  if (!op)
    return;
  Placement p = placement.lookup(op);
  switch (p.kind) {
  case Placement::Free:
    return;
  case Placement::Unit:
    if (rankOf(value) != rank)
      tailInputs[rank].insert(value);
    return;
  case Placement::Tail:
    if (tailOps[rank].contains(op))
      return;
    if (isSplitSum(op)) {
      // Split: only the gradients homed on this rank.
      for (Value operand : op->getOperands())
        if (rankOf(operand) == rank || rankOf(operand) < 0)
          demand(operand, rank);
    } else {
      for (Value operand : op->getOperands())
        demand(operand, rank);
    }
    tailOps[rank].insert(op);
    return;
  }
}

LogicalResult EntrySplitter::computeDemand() {
  tailOps.assign(numRanks, {});
  tailInputs.assign(numRanks, {});
  returned.assign(numRanks, {});
  holders.clear();
  readers.clear();
  // Holders of the state arguments: the ranks whose units use them (an
  // optimizer state goes with its parameter).
  llvm::StringMap<StringRef> stateOf;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    DictionaryAttr attrs = func.getArgAttrDict(i);
    StringRef name = stateName(attrs);
    if (name.empty())
      continue;
    llvm::SmallBitVector &h = holders[name];
    h.resize(numRanks);
    for (Operation *user : func.getArgument(i).getUsers())
      if (int64_t r = unitRank(user); r >= 0)
        h.set(r);
    readers[name] = h;
    if (auto of = attrs.getAs<StringAttr>(tfm::kStateOfAttrName))
      stateOf[name] = of.getValue();
  }
  for (auto &[name, of] : stateOf)
    if (holders.count(of))
      holders[name] = holders[of];
  for (auto &entry : holders)
    if (entry.second.none())
      entry.second.set(0); // unused state: kept (and updated) on rank 0
  // Results: state on its holders, everything else on every rank.
  Operation *ret = func.front().getTerminator();
  for (unsigned r = 0, e = func.getNumResults(); r < e; ++r) {
    StringRef name = stateName(func.getResultAttrDict(r));
    for (int64_t rank = 0; rank < numRanks; ++rank) {
      if (!name.empty() && holders.count(name) && !holders[name].test(rank))
        continue;
      returned[rank].push_back(r);
      demand(ret->getOperand(r), rank);
    }
  }
  // A tail op reads state only where the state is held (and updated);
  // anything else would read a copy that no rank keeps up to date.
  for (int64_t rank = 0; rank < numRanks; ++rank)
    for (Operation *op : tailOps[rank])
      for (Value operand : op->getOperands())
        if (auto arg = dyn_cast<BlockArgument>(operand)) {
          StringRef name = stateName(func.getArgAttrDict(arg.getArgNumber()));
          if (!name.empty() && !holders[name].test(rank))
            return op->emitError()
                   << "dist-pipeline-split: rank " << rank << " of @"
                   << func.getSymName() << " would read state '" << name
                   << "', which it does not hold";
        }
  return success();
}

LogicalResult EntrySplitter::run(const pipeline::StagePartition &partition) {
  if (partition.firstLayer.size() != static_cast<size_t>(numStages) ||
      partition.firstLayer.back() >= numLayers)
    return func.emitError()
           << "dist-pipeline-split: @" << func.getSymName() << " has "
           << numLayers
           << " block calls (layers), which does not fit the stage split of "
              "the module's training step";
  std::vector<std::vector<pipeline::PipelineOp>> orders(numRanks);
  bool splitBackward = false;
  if (hasBackward) {
    pipeline::OrError<pipeline::PipelineSchedule> schedule =
        given ? pipeline::OrError<pipeline::PipelineSchedule>(*given)
              : pipeline::buildSchedule(kind, numRanks, numMicrobatches,
                                        stagesPerRank);
    if (!schedule)
      return func.emitError() << "dist-pipeline-split: " << schedule.error();
    if (schedule->numRanks != numRanks || schedule->numStages != numStages ||
        schedule->numMicrobatches != numMicrobatches)
      return func.emitError()
             << "dist-pipeline-split: dist.pipeline_schedule has "
             << schedule->numRanks << " ranks, " << schedule->numStages
             << " stages and " << schedule->numMicrobatches
             << " microbatches, but @" << func.getSymName() << " needs "
             << numRanks << ", " << numStages << " and " << numMicrobatches;
    scheduleText = pipeline::formatSchedule(*schedule);
    stageToRank = schedule->stageToRank;
    orders = schedule->rankOrders;
    pipeline::OrError<bool> split = pipeline::backwardIsSplit(*schedule);
    if (!split)
      return func.emitError() << "dist-pipeline-split: dist.pipeline_schedule: "
                              << split.error();
    splitBackward = *split;
  } else {
    // Forward only (eval, logits): every rank runs its stages in increasing
    // order, microbatches in order; the (stage, microbatch) order is a
    // topological order of all ranks' ops together, so it cannot deadlock.
    stageToRank =
        given ? given->stageToRank : stageMap(kind, numRanks, stagesPerRank);
    for (int64_t stage = 0; stage < numStages; ++stage)
      for (int64_t j = 0; j < numMicrobatches; ++j)
        orders[stageToRank[stage]].push_back({UnitKind::F, stage, j});
  }
  if (failed(assignStages(partition)))
    return failure();
  if (hasBackward && splitBackward) {
    bool didSplit = false;
    if (failed(classifyBackward(/*allowSplit=*/true, didSplit)))
      return failure();
    // The cut calls are new ops: place them, then mark I and W again.
    if (didSplit && (failed(place()) || failed(assignLayers()) ||
                     failed(assignStages(partition)) ||
                     failed(classifyBackward(/*allowSplit=*/false, didSplit))))
      return failure();
  }
  placeCombining(orders);
  if (failed(computeDemand()))
    return failure();
  // Each rank's units, and what every rank sends every other during them,
  // in the sender's program order (the receiver takes them in that order).
  unitOps.assign(numRanks, {});
  for (Operation *op : ops)
    if (int64_t r = unitRank(op); r >= 0) {
      Placement p = placement.lookup(op);
      unitOps[r][{p.stage, p.microbatch, p.part}].push_back(op);
    }
  sendSequence.assign(numRanks, std::vector<SmallVector<Value>>(numRanks));
  for (int64_t from = 0; from < numRanks; ++from)
    for (const pipeline::PipelineOp &u : orders[from])
      for (Operation *op : unitOps[from][{u.stage, u.microbatch, u.kind}])
        for (Value result : op->getResults()) {
          // (A named vector: set_bits() of a temporary would iterate over a
          // destroyed one.)
          llvm::SmallBitVector readers = unitReaders(result, from);
          for (int64_t to : readers.set_bits())
            sendSequence[from][to].push_back(result);
        }
  for (int64_t rank = numRanks - 1; rank >= 0; --rank)
    if (failed(buildRank(rank, orders[rank])))
      return failure();
  return success();
}

llvm::SmallBitVector EntrySplitter::unitReaders(Value value,
                                                int64_t rank) const {
  llvm::SmallBitVector to(numRanks);
  for (Operation *user : value.getUsers())
    if (int64_t r = unitRank(user); r >= 0 && r != rank)
      to.set(r);
  return to;
}

LogicalResult
EntrySplitter::buildRank(int64_t rank,
                         const std::vector<pipeline::PipelineOp> &order) {
  MLIRContext *ctx = func.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointAfter(func);
  // Arguments: the inputs, and the state this rank holds.
  SmallVector<unsigned> keptArgs;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    StringRef name = stateName(func.getArgAttrDict(i));
    if (name.empty() || holders[name].test(rank))
      keptArgs.push_back(i);
  }
  SmallVector<Type> argTypes, resultTypes;
  for (unsigned i : keptArgs)
    argTypes.push_back(func.getArgumentTypes()[i]);
  for (unsigned r : returned[rank])
    resultTypes.push_back(func.getResultTypes()[r]);
  auto fn = func::FuncOp::create(
      b, func.getLoc(), (func.getSymName() + "__pp" + Twine(rank)).str(),
      FunctionType::get(ctx, argTypes, resultTypes));
  for (auto [k, i] : llvm::enumerate(keptArgs))
    fn.setArgAttrs(k, func.getArgAttrDict(i));
  for (auto [k, r] : llvm::enumerate(returned[rank]))
    fn.setResultAttrs(k, func.getResultAttrDict(r));
  // Keep the function's own annotations (e.g. `dist.partitioned`).
  for (NamedAttribute attr : func->getDiscardableAttrs())
    fn->setAttr(attr.getName(), attr.getValue());
  fn->setAttr(kEntryAttrName, b.getStringAttr(func.getSymName()));
  fn->setAttr(kPpStageAttrName, b.getI64IntegerAttr(rank));
  SmallVector<int64_t> ownStages;
  for (int64_t stage = 0; stage < numStages; ++stage)
    if (stageToRank[stage] == rank)
      ownStages.push_back(stage);
  fn->setAttr(kPpChunksAttrName, b.getDenseI64ArrayAttr(ownStages));
  Block *block = fn.addEntryBlock();
  b.setInsertionPointToEnd(block);

  IRMapping map;
  for (auto [k, i] : llvm::enumerate(keptArgs))
    map.map(func.getArgument(i), block->getArgument(k));
  FlatSymbolRefAttr meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  ArrayAttr ppAxes = b.getArrayAttr({mesh.getAxisWithRole(AxisRole::Pipeline)});
  Location loc = func.getLoc();
  SmallVector<Value> sendHandles;

  // Clones a free op (constant, axis index) once, at its first use.
  auto materialize = [&](Value v) {
    if (map.contains(v))
      return;
    Operation *def = v.getDefiningOp();
    if (def && placement.lookup(def).kind == Placement::Free)
      b.clone(*def, map);
  };
  // Both ends of a transfer carry the same tag naming the value (its unit
  // and its position in the original entry), which dist-verify-comm matches.
  auto tag = [&](Value v) {
    Operation *def = v.getDefiningOp();
    Placement p = placement.lookup(def);
    std::string text = p.kind == Placement::Unit
                           ? std::string(1, pipeline::opKindLetter(p.part)) +
                                 " mb=" + std::to_string(p.microbatch)
                           : std::string("tail");
    text += " value #" + std::to_string(position.lookup(def)) + ":" +
            std::to_string(cast<OpResult>(v).getResultNumber());
    return b.getStringAttr(text);
  };
  auto send = [&](Value v, int64_t to) -> LogicalResult {
    if (!map.contains(v))
      return func.emitError()
             << "dist-pipeline-split: rank " << rank << " of @"
             << func.getSymName()
             << " would send a value it does not compute (its unit is not in "
                "the rank's schedule)";
    auto op =
        SendStartOp::create(b, loc, AsyncType::get(ctx, Type()), map.lookup(v),
                            meshRef, ppAxes, b.getI64IntegerAttr(to));
    op->setAttr(kTagAttrName, tag(v));
    sendHandles.push_back(op);
    return success();
  };
  auto recv = [&](Value v, int64_t from) {
    auto op = RecvOp::create(b, loc, v.getType(), meshRef, ppAxes,
                             b.getI64IntegerAttr(from));
    op->setAttr(kTagAttrName, tag(v));
    map.map(v, op);
  };
  // Whether a unit of rank `t` reads `v`: then it was sent during the
  // units (once per rank), not with the tails.
  auto readByUnitsOf = [&](Value v, int64_t t) {
    return llvm::any_of(v.getUsers(),
                        [&](Operation *user) { return unitRank(user) == t; });
  };
  // How far into each sender's sequence this rank has received. A unit
  // takes what it needs from a sender together with everything that sender
  // sent it before (sends and receives of a pair match in order, and a
  // sender may produce values in another order than this rank reads them).
  SmallVector<unsigned> received(numRanks, 0);
  for (const pipeline::PipelineOp &u : order) {
    ArrayRef<Operation *> unit = unitOps[rank][{u.stage, u.microbatch, u.kind}];
    SmallVector<unsigned> upTo(numRanks, 0);
    for (Operation *op : unit)
      for (Value operand : op->getOperands()) {
        if (!isUnitValue(operand) || rankOf(operand) == rank ||
            map.contains(operand))
          continue;
        int64_t from = rankOf(operand);
        ArrayRef<Value> sequence = sendSequence[from][rank];
        auto it = llvm::find(sequence, operand);
        if (it == sequence.end())
          return op->emitError()
                 << "dist-pipeline-split: rank " << rank << " ("
                 << pipeline::formatOp(u) << ") reads a value of rank " << from
                 << " that no unit of rank " << from << " sends";
        upTo[from] = std::max<unsigned>(upTo[from], it - sequence.begin() + 1);
      }
    for (int64_t from = 0; from < numRanks; ++from)
      for (; received[from] < upTo[from]; ++received[from])
        recv(sendSequence[from][rank][received[from]], from);
    for (Operation *op : unit) {
      for (Value operand : op->getOperands())
        materialize(operand);
      Operation *clone = b.clone(*op, map);
      for (Value operand : clone->getOperands())
        if (operand.getParentRegion() != &fn.getBody())
          return op->emitError() << "dist-pipeline-split: rank " << rank
                                 << " runs this op (" << pipeline::formatOp(u)
                                 << ") before its operand is available there";
    }
    // Outputs other ranks' units need, in program order, per rank.
    for (Operation *op : unit)
      for (Value result : op->getResults()) {
        llvm::SmallBitVector readers = unitReaders(result, rank);
        for (int64_t t : readers.set_bits())
          if (failed(send(result, t)))
            return failure();
      }
  }

  // Tail: first the unit values the tails need, sent and received in
  // program order (each pair agrees on the order), then the tail ops.
  for (Operation *op : ops) {
    for (Value result : op->getResults()) {
      if (!isUnitValue(result))
        continue;
      if (rankOf(result) == rank) {
        for (int64_t t = 0; t < numRanks; ++t)
          if (t != rank && tailInputs[t].contains(result) &&
              !readByUnitsOf(result, t) && failed(send(result, t)))
            return failure();
      } else if (tailInputs[rank].contains(result) &&
                 !readByUnitsOf(result, rank)) {
        recv(result, rankOf(result));
      }
    }
  }
  for (Operation *op : ops) {
    if (!tailOps[rank].contains(op))
      continue;
    for (Value operand : op->getOperands())
      materialize(operand);
    if (isSplitSum(op)) {
      SmallVector<Value> own;
      for (Value operand : op->getOperands())
        if (rankOf(operand) == rank || rankOf(operand) < 0)
          own.push_back(map.lookup(operand));
      Type type = op->getResult(0).getType();
      Value partial;
      if (own.empty())
        partial = arith::ConstantOp::create(
            b, loc, cast<TypedAttr>(b.getZeroAttr(type)));
      else
        partial = b.create(op->getLoc(), op->getName().getIdentifier(), own,
                           op->getResultTypes(), op->getAttrs())
                      ->getResult(0);
      Value total = AllReduceOp::create(
          b, loc, partial.getType(), partial, meshRef, ppAxes,
          ReductionKindAttr::get(ctx, ReductionKind::Sum));
      map.map(op->getResult(0), total);
      continue;
    }
    b.clone(*op, map);
  }
  Operation *ret = func.front().getTerminator();
  SmallVector<Value> results;
  for (unsigned r : returned[rank]) {
    Value v = ret->getOperand(r);
    materialize(v);
    results.push_back(map.lookupOrDefault(v));
  }
  for (Value h : sendHandles)
    WaitOp::create(b, loc, h);
  func::ReturnOp::create(b, loc, results);
  for (Value v : results)
    if (v.getParentBlock() != block)
      return func.emitError()
             << "dist-pipeline-split: rank " << rank << " of @"
             << func.getSymName() << " returns a value it does not compute";
  return success();
}

/// Moves each send's wait from the end of its program to the earliest point
/// where it cannot block: right after the first later receive from the same
/// peer that the peer sends after receiving this message (then the peer has
/// posted its receive, so the send completes). The sent buffer stays live
/// until the wait (rt-lower), so this frees e.g. a 1F1B stage's sent
/// activation at the microbatch's backward instead of at the end of the
/// step. `rankFns[r]` is rank r's program of one entry.
void placeSendWaits(MutableArrayRef<func::FuncOp> rankFns) {
  struct Transfer {
    Operation *op;
    int64_t peer;
    StringRef tag;
    bool isSend;
  };
  std::vector<std::vector<Transfer>> transfers(rankFns.size());
  for (auto [rank, fn] : llvm::enumerate(rankFns))
    for (Operation &op : fn.front()) {
      auto tag = op.getAttrOfType<StringAttr>(kTagAttrName);
      if (auto send = dyn_cast<SendStartOp>(op); send && tag)
        transfers[rank].push_back(
            {&op, static_cast<int64_t>(send.getPeer()), tag, true});
      else if (auto recv = dyn_cast<RecvOp>(op); recv && tag)
        transfers[rank].push_back(
            {&op, static_cast<int64_t>(recv.getPeer()), tag, false});
    }
  // Position of (peer, tag, isSend) in a rank's transfer list.
  auto indexOf = [&](int64_t rank, int64_t peer, StringRef tag, bool isSend) {
    for (auto [i, t] : llvm::enumerate(transfers[rank]))
      if (t.peer == peer && t.tag == tag && t.isSend == isSend)
        return static_cast<int64_t>(i);
    return int64_t(-1);
  };
  for (auto [rank, list] : llvm::enumerate(transfers)) {
    for (auto [i, send] : llvm::enumerate(list)) {
      if (!send.isSend || send.peer < 0 ||
          send.peer >= static_cast<int64_t>(rankFns.size()))
        continue;
      int64_t received = indexOf(send.peer, rank, send.tag, false);
      if (received < 0)
        continue;
      for (const Transfer &later : ArrayRef(list).drop_front(i + 1)) {
        if (later.isSend || later.peer != send.peer)
          continue;
        if (indexOf(send.peer, rank, later.tag, true) > received) {
          Value handle = send.op->getResult(0);
          if (handle.hasOneUse())
            if (auto wait = dyn_cast<WaitOp>(*handle.getUsers().begin()))
              wait->moveAfter(later.op);
          break;
        }
      }
    }
  }
}

struct DistPipelineSplitPass
    : public dist::impl::DistPipelineSplitBase<DistPipelineSplitPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<std::optional<Plan>> read =
        Plan::fromModule(module, "dist-pipeline-split");
    if (failed(read))
      return signalPassFailure();
    std::optional<Plan> &plan = *read;
    if (!plan || plan->pp == 1)
      return;
    pipeline::OrError<pipeline::ScheduleKind> kind =
        pipeline::parseScheduleKind(plan->schedule);
    if (!kind) {
      module.emitError() << "dist-pipeline-split: " << kind.error();
      return signalPassFailure();
    }
    FailureOr<MeshOp> mesh = getSingleMesh(module, "dist-pipeline-split");
    if (failed(mesh))
      return signalPassFailure();
    if (!*mesh || !(*mesh).getAxisWithRole(AxisRole::Pipeline)) {
      module.emitError() << "dist-pipeline-split: plan pp=" << plan->pp
                         << " but the mesh has no pipeline axis (role "
                            "pipeline)";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> entries;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn.isPublic() && !fn.isExternal())
        entries.push_back(fn);
    // The schedule dist-schedule recorded (possibly a user's), if it ran.
    std::optional<pipeline::PipelineSchedule> given;
    if (auto text =
            module->getAttrOfType<StringAttr>(kPipelineScheduleAttrName)) {
      pipeline::OrError<pipeline::PipelineSchedule> parsed =
          pipeline::parseSchedule(text.getValue().str(), "dist-schedule");
      if (!parsed) {
        module.emitError() << "dist-pipeline-split: dist.pipeline_schedule: "
                           << parsed.error();
        return signalPassFailure();
      }
      given = std::move(*parsed);
    }
    BackwardCallSplitter callSplitter(module);
    std::vector<std::unique_ptr<EntrySplitter>> splitters;
    for (func::FuncOp fn : entries) {
      splitters.push_back(std::make_unique<EntrySplitter>(
          fn, *mesh, plan->pp, plan->vpp, *kind, given ? &*given : nullptr,
          callSplitter));
      if (failed(splitters.back()->analyze()))
        return signalPassFailure();
    }
    if (splitters.empty())
      return;
    // One layer -> stage split for all entries (they share the state), by
    // the cost of the training step (forward and backward) when there is
    // one.
    EntrySplitter *reference = splitters.front().get();
    for (auto &splitter : splitters)
      if (splitter->backward()) {
        reference = splitter.get();
        break;
      }
    std::vector<double> costs;
    double first = 0, last = 0;
    reference->layerCosts(costs, first, last);
    pipeline::OrError<pipeline::StagePartition> partition =
        pipeline::partitionLayers(costs, first, last, plan->pp * plan->vpp);
    if (!partition) {
      module.emitError() << "dist-pipeline-split: " << partition.error();
      return signalPassFailure();
    }
    for (auto [fn, splitter] : llvm::zip(entries, splitters)) {
      if (failed(splitter->run(*partition)))
        return signalPassFailure();
      SmallVector<func::FuncOp> rankFns;
      for (int64_t rank = 0; rank < plan->pp; ++rank)
        rankFns.push_back(module.lookupSymbol<func::FuncOp>(
            (fn.getSymName() + "__pp" + Twine(rank)).str()));
      placeSendWaits(rankFns);
      // The training schedule, for dist-explain's simulation.
      if (splitter->backward())
        module->setAttr(
            kPipelineScheduleAttrName,
            StringAttr::get(module.getContext(), splitter->scheduleText));
    }
    // A rank that reads a state in another entry (eval, logits) must hold
    // it in the training step, which updates it there; else that entry (and
    // the saved parameters) would read a copy that no step updates.
    EntrySplitter *train = nullptr;
    for (auto &splitter : splitters)
      if (splitter->backward()) {
        train = splitter.get();
        break;
      }
    if (train) {
      for (auto &splitter : splitters) {
        if (splitter.get() == train)
          continue;
        func::FuncOp fn = splitter->getFunc();
        for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
          StringRef name = stateName(fn.getArgAttrDict(i));
          auto it = train->getHolders().find(name);
          if (name.empty() || it == train->getHolders().end())
            continue;
          llvm::SmallBitVector stale = splitter->getReaders().lookup(name);
          stale.reset(it->second);
          if (stale.none())
            continue;
          fn.emitError() << "dist-pipeline-split: rank " << stale.find_first()
                         << " of @" << fn.getSymName() << " reads state '"
                         << name << "', which @"
                         << train->getFunc().getSymName()
                         << " does not hold (and update) on that rank";
          return signalPassFailure();
        }
      }
    }
    for (func::FuncOp fn : entries)
      fn.erase();
    // The layer ranges of the stages and their costs, for dist-explain.
    Builder b(module.getContext());
    SmallVector<int64_t> stageCost;
    for (double cost : partition->stageCost)
      stageCost.push_back(static_cast<int64_t>(std::llround(cost)));
    module->setAttr(
        kPipelineStagesAttrName,
        b.getDictionaryAttr(
            {b.getNamedAttr("first_layer",
                            b.getDenseI64ArrayAttr(partition->firstLayer)),
             b.getNamedAttr("num_layers",
                            b.getI64IntegerAttr(reference->getNumLayers())),
             b.getNamedAttr("flops", b.getDenseI64ArrayAttr(stageCost))}));
  }
};

} // namespace
