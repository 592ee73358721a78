//===- DistPipelineSplit.cpp - Pipeline stages and their schedule ---------===//
//
// Splits each entry function of a partitioned module into one program per
// pipeline stage (plan `pp`), ordered by the plan's schedule (GPipe or
// 1F1B, lib/Pipeline), with point-to-point transfers between the stages.
// The algorithm is described in the pass documentation (Passes.td); the
// placement in short:
//
//  * units: the ops of microbatch j (those that depend on its rows, from
//    `tfm.microbatch`, or all of them with one microbatch) split into a
//    forward part F and a backward part B (the ops that depend on the
//    loss-gradient seed); the rest is the tail (gradient accumulation over
//    microbatches, the global norm, the optimizer);
//  * stages: the k-th block call of a microbatch's forward is layer k, its
//    backward call the layer of the forward residuals it reads; layers go
//    to stages in contiguous, equal ranges; other forward ops run on the
//    latest stage of their operands (the embedding on the first stage, the
//    head and loss on the last), backward ops on the earliest;
//  * the tail runs where its results are needed: every stage returns the
//    loss and the global norm, and updates the state it holds (a parameter
//    used on two stages, the tied embedding, is held and updated on both
//    from the same gradient). `tfm.sum_squares` is split into one partial
//    sum per stage (each gradient counted once, on its home stage) plus an
//    all-reduce over `pp`;
//  * transfers: a value a unit of another stage needs is sent
//    (`dist.send_start`, waited at the end of the program) right after the
//    producing unit and received at the start of the consuming unit, in
//    the producer's program order; values a tail needs from another stage
//    are sent and received at the start of the tails, in program order.
//    With every send asynchronous, an acyclic schedule cannot deadlock
//    (dist-verify-comm checks it).
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Dist/Transforms/Plan.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"
#include "autoshard/Pipeline/Schedule.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"

#include <map>

namespace autoshard::dist {
#define GEN_PASS_DEF_DISTPIPELINESPLIT
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace autoshard::dist

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

constexpr StringLiteral kPipelineAxis = "pp";

/// Where an op of the original entry runs.
struct Placement {
  enum Kind { Unit, Tail, Free } kind = Unit;
  int64_t microbatch = 0;
  bool backward = false;
  int64_t stage = -1; ///< Units; the home stage of a tail op (or -1).
};

/// Ops without operands (constants, `dist.axis_index`) are recomputed in
/// every program and unit that uses them.
bool isFree(Operation *op) {
  return op->getNumOperands() == 0 && op->getNumRegions() == 0 &&
         op->getNumResults() > 0;
}

/// The loss-gradient seeds: every backward op depends on one.
bool isBackwardSeed(Operation *op) {
  return isa<tfm::CrossEntropyGradOp, tfm::VocabCeGradOp>(op);
}

/// The state (parameter or optimizer state) an argument or result holds.
StringRef stateName(DictionaryAttr attrs) {
  if (!attrs)
    return {};
  if (auto name = attrs.getAs<StringAttr>("tfm.param"))
    return name.getValue();
  if (auto name = attrs.getAs<StringAttr>("tfm.state"))
    return name.getValue();
  return {};
}

class EntrySplitter {
public:
  EntrySplitter(func::FuncOp func, MeshOp mesh, int64_t numStages,
                int64_t numMicrobatches, pipeline::ScheduleKind kind)
      : func(func), mesh(mesh), numStages(numStages),
        numMicrobatches(numMicrobatches), kind(kind) {}

  /// Places every op, then builds one function per stage after `func`.
  LogicalResult run();
  /// The schedule the stages follow (§1.5 text), once run() succeeded.
  std::string scheduleText;
  bool backward() const { return hasBackward; }

private:
  LogicalResult place();
  LogicalResult assignLayers();
  void placeTail();
  LogicalResult computeDemand();
  void demand(Value value, int64_t stage);
  LogicalResult buildStage(int64_t stage,
                           const std::vector<pipeline::PipelineOp> &order);
  int64_t homeOf(Value value) const;
  bool isUnitValue(Value value) const;

  func::FuncOp func;
  MeshOp mesh;
  int64_t numStages, numMicrobatches;
  pipeline::ScheduleKind kind;
  bool hasBackward = false;

  SmallVector<Operation *> ops; ///< Top-level ops in program order.
  llvm::DenseMap<Operation *, unsigned> position;
  llvm::DenseMap<Operation *, Placement> placement;
  llvm::DenseMap<Operation *, int64_t> layerOf;
  int64_t numLayers = 0;

  /// Stages that hold each state (by name), and that need each entry arg.
  llvm::StringMap<llvm::SmallBitVector> holders;
  /// Per stage: the tail ops it runs, and the unit values it receives for
  /// its tail (from their home stage).
  SmallVector<llvm::SetVector<Operation *>> tailOps;
  SmallVector<llvm::SetVector<Value>> tailInputs;
  /// Per stage: the results of the entry it returns (indices).
  SmallVector<SmallVector<unsigned>> returned;
};

int64_t EntrySplitter::homeOf(Value value) const {
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

LogicalResult EntrySplitter::place() {
  Block &body = func.front();
  for (Operation &op : body.without_terminator()) {
    position[&op] = ops.size();
    ops.push_back(&op);
  }
  // Entries that take one microbatch (e.g. @logits) have no tfm.microbatch.
  numMicrobatches = 1;
  for (Operation *op : ops)
    if (auto mb = dyn_cast<tfm::MicrobatchOp>(op))
      numMicrobatches = mb.getCount();
  // Microbatch membership (bit j: depends on microbatch j's rows), the
  // backward flag and the tail seed (the global norm and what follows).
  llvm::DenseMap<Operation *, llvm::SmallBitVector> rows;
  llvm::DenseSet<Operation *> backward, tail;
  for (Operation *op : ops) {
    llvm::SmallBitVector bits(numMicrobatches);
    if (auto mb = dyn_cast<tfm::MicrobatchOp>(op))
      bits.set(mb.getIndex());
    bool bwd = isBackwardSeed(op), inTail = isa<tfm::SumSquaresOp>(op);
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def)
        continue;
      if (auto it = rows.find(def); it != rows.end())
        bits |= it->second;
      bwd |= backward.contains(def);
      inTail |= tail.contains(def);
    }
    rows[op] = bits;
    if (bwd)
      backward.insert(op);
    if (inTail || bits.count() > 1)
      tail.insert(op);
  }
  hasBackward = !backward.empty();
  // Units and tail; ops that depend on no microbatch go with their users.
  for (Operation *op : llvm::reverse(ops)) {
    Placement p;
    if (isFree(op)) {
      p.kind = Placement::Free;
    } else if (tail.contains(op)) {
      p.kind = Placement::Tail;
    } else if (numMicrobatches == 1 || rows[op].any()) {
      p.microbatch = numMicrobatches == 1 ? 0 : rows[op].find_first();
      p.backward = backward.contains(op);
    } else {
      // No microbatch rows (a position table, a ZeRO-3 parameter
      // all-gather): the forward of the first microbatch that uses it (every
      // schedule runs a stage's microbatches in order), else the tail.
      p.kind = Placement::Tail;
      p.microbatch = numMicrobatches;
      for (Operation *user : op->getUsers()) {
        auto it = placement.find(user);
        if (it != placement.end() && it->second.kind == Placement::Unit) {
          p.kind = Placement::Unit;
          p.microbatch = std::min(p.microbatch, it->second.microbatch);
          p.backward = false;
        }
      }
    }
    placement[op] = p;
  }
  return assignLayers();
}

LogicalResult EntrySplitter::assignLayers() {
  // Layers: forward block calls in order, per microbatch; a backward call
  // takes the largest layer of the forward calls whose results it reads.
  SmallVector<int64_t> nextLayer(numMicrobatches, 0);
  for (Operation *op : ops) {
    auto call = dyn_cast<func::CallOp>(op);
    Placement &p = placement[op];
    if (!call || p.kind != Placement::Unit)
      continue;
    if (!p.backward) {
      layerOf[op] = nextLayer[p.microbatch]++;
      continue;
    }
    int64_t layer = -1;
    for (Value operand : call.getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && isa<func::CallOp>(def) && !placement[def].backward)
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
           << "dist-pipeline-split: pp=" << numStages << " needs at least "
           << numStages << " block calls (layers) in @" << func.getSymName()
           << ", found " << numLayers;
  // Contiguous, equal layer ranges (the blocks cost the same).
  auto stageOfLayer = [&](int64_t layer) {
    return layer * numStages / numLayers;
  };
  // Forward ops run on the latest stage of their operands, backward ops on
  // the earliest; ops without a staged operand follow their users.
  for (Operation *op : ops) {
    Placement &p = placement[op];
    if (p.kind != Placement::Unit)
      continue;
    if (layerOf.count(op)) {
      p.stage = stageOfLayer(layerOf[op]);
      continue;
    }
    for (Value operand : op->getOperands()) {
      int64_t s = homeOf(operand);
      if (s < 0 || !isUnitValue(operand))
        continue;
      p.stage = p.stage < 0 ? s
                            : (p.backward ? std::min(p.stage, s)
                                          : std::max(p.stage, s));
    }
  }
  for (Operation *op : llvm::reverse(ops)) {
    Placement &p = placement[op];
    if (p.kind != Placement::Unit || p.stage >= 0)
      continue;
    for (Operation *user : op->getUsers()) {
      auto it = placement.find(user);
      if (it == placement.end() || it->second.kind != Placement::Unit ||
          it->second.stage < 0)
        continue;
      int64_t s = it->second.stage;
      p.stage = p.stage < 0 ? s : std::min(p.stage, s);
    }
    if (p.stage < 0)
      p.stage = 0;
  }
  placeTail();
  return success();
}

void EntrySplitter::placeTail() {
  // A tail op's home is the latest home of its operands (used to count each
  // gradient once in the split global norm).
  for (Operation *op : ops) {
    Placement &p = placement[op];
    if (p.kind != Placement::Tail)
      continue;
    for (Value operand : op->getOperands())
      p.stage = std::max(p.stage, homeOf(operand));
  }
}

void EntrySplitter::demand(Value value, int64_t stage) {
  Operation *op = value.getDefiningOp();
  if (!op)
    return;
  Placement p = placement.lookup(op);
  switch (p.kind) {
  case Placement::Free:
    return;
  case Placement::Unit:
    if (p.stage != stage)
      tailInputs[stage].insert(value);
    return;
  case Placement::Tail:
    if (tailOps[stage].contains(op))
      return;
    if (auto sumSq = dyn_cast<tfm::SumSquaresOp>(op)) {
      // Split: only the gradients homed on this stage.
      for (Value operand : sumSq->getOperands())
        if (homeOf(operand) == stage || homeOf(operand) < 0)
          demand(operand, stage);
    } else {
      for (Value operand : op->getOperands())
        demand(operand, stage);
    }
    tailOps[stage].insert(op);
    return;
  }
}

LogicalResult EntrySplitter::computeDemand() {
  tailOps.resize(numStages);
  tailInputs.resize(numStages);
  returned.resize(numStages);
  // Holders of the state arguments: the stages whose units use them (an
  // optimizer state goes with its parameter).
  llvm::StringMap<StringRef> stateOf;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    DictionaryAttr attrs = func.getArgAttrDict(i);
    StringRef name = stateName(attrs);
    if (name.empty())
      continue;
    llvm::SmallBitVector &h = holders[name];
    h.resize(numStages);
    for (Operation *user : func.getArgument(i).getUsers())
      if (Placement p = placement.lookup(user); p.kind == Placement::Unit)
        h.set(p.stage);
    if (auto of = attrs.getAs<StringAttr>("tfm.state_of"))
      stateOf[name] = of.getValue();
  }
  for (auto &[name, of] : stateOf)
    if (holders.count(of))
      holders[name] = holders[of];
  for (auto &entry : holders)
    if (entry.second.none())
      entry.second.set(0); // unused state: kept (and updated) on stage 0
  // Results: state on its holders, everything else on every stage.
  Operation *ret = func.front().getTerminator();
  for (unsigned r = 0, e = func.getNumResults(); r < e; ++r) {
    StringRef name = stateName(func.getResultAttrDict(r));
    for (int64_t s = 0; s < numStages; ++s) {
      if (!name.empty() && holders.count(name) && !holders[name].test(s))
        continue;
      returned[s].push_back(r);
      demand(ret->getOperand(r), s);
    }
  }
  // A tail op reads state only where the state is held (and updated);
  // anything else would read a copy that no stage keeps up to date.
  for (int64_t s = 0; s < numStages; ++s)
    for (Operation *op : tailOps[s])
      for (Value operand : op->getOperands())
        if (auto arg = dyn_cast<BlockArgument>(operand)) {
          StringRef name = stateName(func.getArgAttrDict(arg.getArgNumber()));
          if (!name.empty() && !holders[name].test(s))
            return op->emitError()
                   << "dist-pipeline-split: stage " << s << " of @"
                   << func.getSymName() << " would read state '" << name
                   << "', which it does not hold";
        }
  return success();
}

LogicalResult EntrySplitter::run() {
  if (failed(place()) || failed(computeDemand()))
    return failure();
  pipeline::OrError<pipeline::PipelineSchedule> schedule =
      hasBackward ? pipeline::buildSchedule(kind, numStages, numMicrobatches, 1)
                  : pipeline::buildSchedule(pipeline::ScheduleKind::GPipe,
                                            numStages, numMicrobatches, 1);
  if (!schedule)
    return func.emitError() << "dist-pipeline-split: " << schedule.error();
  scheduleText = pipeline::formatSchedule(*schedule);
  for (int64_t s = numStages - 1; s >= 0; --s) {
    std::vector<pipeline::PipelineOp> order;
    for (const pipeline::PipelineOp &op : (*schedule).rankOrders[s])
      if (hasBackward || op.kind == pipeline::PipelineOp::Kind::F)
        order.push_back(op);
    if (failed(buildStage(s, order)))
      return failure();
  }
  return success();
}

LogicalResult
EntrySplitter::buildStage(int64_t stage,
                          const std::vector<pipeline::PipelineOp> &order) {
  MLIRContext *ctx = func.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointAfter(func);
  // Arguments: the inputs, and the state this stage holds.
  SmallVector<unsigned> keptArgs;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    StringRef name = stateName(func.getArgAttrDict(i));
    if (name.empty() || holders[name].test(stage))
      keptArgs.push_back(i);
  }
  SmallVector<Type> argTypes, resultTypes;
  for (unsigned i : keptArgs)
    argTypes.push_back(func.getArgumentTypes()[i]);
  for (unsigned r : returned[stage])
    resultTypes.push_back(func.getResultTypes()[r]);
  auto fn = func::FuncOp::create(
      b, func.getLoc(), (func.getSymName() + "__pp" + Twine(stage)).str(),
      FunctionType::get(ctx, argTypes, resultTypes));
  for (auto [k, i] : llvm::enumerate(keptArgs))
    fn.setArgAttrs(k, func.getArgAttrDict(i));
  for (auto [k, r] : llvm::enumerate(returned[stage]))
    fn.setResultAttrs(k, func.getResultAttrDict(r));
  // Keep the function's own annotations (e.g. `dist.partitioned`).
  for (NamedAttribute attr : func->getDiscardableAttrs())
    fn->setAttr(attr.getName(), attr.getValue());
  fn->setAttr("dist.entry", b.getStringAttr(func.getSymName()));
  fn->setAttr("dist.pp_stage", b.getI64IntegerAttr(stage));
  Block *block = fn.addEntryBlock();
  b.setInsertionPointToEnd(block);

  IRMapping map;
  for (auto [k, i] : llvm::enumerate(keptArgs))
    map.map(func.getArgument(i), block->getArgument(k));
  FlatSymbolRefAttr meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  ArrayAttr ppAxes = b.getStrArrayAttr({kPipelineAxis});
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
                           ? (p.backward ? "B" : "F") + std::string(" mb=") +
                                 std::to_string(p.microbatch)
                           : std::string("tail");
    text += " value #" + std::to_string(position.lookup(def)) + ":" +
            std::to_string(cast<OpResult>(v).getResultNumber());
    return b.getStringAttr(text);
  };
  auto send = [&](Value v, int64_t to) {
    auto op =
        SendStartOp::create(b, loc, AsyncType::get(ctx, Type()), map.lookup(v),
                            meshRef, ppAxes, b.getI64IntegerAttr(to));
    op->setAttr("dist.tag", tag(v));
    sendHandles.push_back(op);
  };
  auto recv = [&](Value v, int64_t from) {
    auto op = RecvOp::create(b, loc, v.getType(), meshRef, ppAxes,
                             b.getI64IntegerAttr(from));
    op->setAttr("dist.tag", tag(v));
    map.map(v, op);
  };
  // Whether a unit of stage `t` reads `v`: then it was sent during the
  // units (once per stage), not with the tails.
  auto readByUnitsOf = [&](Value v, int64_t t) {
    return llvm::any_of(v.getUsers(), [&](Operation *user) {
      Placement p = placement.lookup(user);
      return p.kind == Placement::Unit && p.stage == t;
    });
  };
  // This stage's ops of each unit (microbatch, backward), in program order.
  std::map<std::pair<int64_t, bool>, SmallVector<Operation *>> unitOps;
  for (Operation *op : ops)
    if (Placement p = placement.lookup(op);
        p.kind == Placement::Unit && p.stage == stage)
      unitOps[{p.microbatch, p.backward}].push_back(op);

  for (const pipeline::PipelineOp &u : order) {
    ArrayRef<Operation *> unit =
        unitOps[{u.microbatch, u.kind != pipeline::PipelineOp::Kind::F}];
    // Inputs from other stages, in their producers' program order.
    llvm::SetVector<Value> remote;
    for (Operation *op : unit)
      for (Value operand : op->getOperands())
        if (isUnitValue(operand) && homeOf(operand) != stage &&
            !map.contains(operand))
          remote.insert(operand);
    SmallVector<Value> sorted(remote.begin(), remote.end());
    llvm::stable_sort(sorted, [&](Value a, Value c) {
      return position.lookup(a.getDefiningOp()) <
             position.lookup(c.getDefiningOp());
    });
    for (Value v : sorted)
      recv(v, homeOf(v));
    for (Operation *op : unit) {
      for (Value operand : op->getOperands())
        materialize(operand);
      Operation *clone = b.clone(*op, map);
      for (Value operand : clone->getOperands())
        if (operand.getParentRegion() != &fn.getBody())
          return op->emitError()
                 << "dist-pipeline-split: stage " << stage
                 << " runs this op before its operand is available there";
    }
    // Outputs other stages' units need, in program order, per stage.
    for (Operation *op : unit) {
      for (Value result : op->getResults()) {
        llvm::SmallBitVector to(numStages);
        for (Operation *user : result.getUsers())
          if (Placement p = placement.lookup(user);
              p.kind == Placement::Unit && p.stage != stage)
            to.set(p.stage);
        for (int64_t t : to.set_bits())
          send(result, t);
      }
    }
  }

  // Tail: first the unit values the tails need, sent and received in
  // program order (each pair agrees on the order), then the tail ops.
  for (Operation *op : ops) {
    for (Value result : op->getResults()) {
      if (!isUnitValue(result))
        continue;
      if (homeOf(result) == stage) {
        for (int64_t t = 0; t < numStages; ++t)
          if (t != stage && tailInputs[t].contains(result) &&
              !readByUnitsOf(result, t))
            send(result, t);
      } else if (tailInputs[stage].contains(result) &&
                 !readByUnitsOf(result, stage)) {
        recv(result, homeOf(result));
      }
    }
  }
  for (Operation *op : ops) {
    if (!tailOps[stage].contains(op))
      continue;
    for (Value operand : op->getOperands())
      materialize(operand);
    if (auto sumSq = dyn_cast<tfm::SumSquaresOp>(op)) {
      SmallVector<Value> own;
      for (Value operand : sumSq->getOperands())
        if (homeOf(operand) == stage || homeOf(operand) < 0)
          own.push_back(map.lookup(operand));
      Value partial;
      if (own.empty())
        partial = arith::ConstantOp::create(
            b, loc,
            DenseElementsAttr::get(cast<ShapedType>(sumSq.getType()),
                                   b.getF32FloatAttr(0.0f)));
      else
        partial = tfm::SumSquaresOp::create(b, sumSq.getLoc(), own);
      Value total = AllReduceOp::create(
          b, loc, partial.getType(), partial, meshRef, ppAxes,
          ReductionKindAttr::get(ctx, ReductionKind::Sum));
      map.map(sumSq.getResult(), total);
      continue;
    }
    b.clone(*op, map);
  }
  Operation *ret = func.front().getTerminator();
  SmallVector<Value> results;
  for (unsigned r : returned[stage]) {
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
             << "dist-pipeline-split: stage " << stage << " of @"
             << func.getSymName() << " returns a value it does not compute";
  return success();
}

struct DistPipelineSplitPass
    : public dist::impl::DistPipelineSplitBase<DistPipelineSplitPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto planAttr = module->getAttrOfType<DictionaryAttr>("dist.plan");
    if (!planAttr)
      return;
    llvm::Expected<Plan> plan = Plan::fromAttr(planAttr);
    if (!plan) {
      module.emitError() << "dist-pipeline-split: "
                         << llvm::toString(plan.takeError());
      return signalPassFailure();
    }
    if (plan->pp == 1)
      return;
    pipeline::OrError<pipeline::ScheduleKind> kind =
        pipeline::parseScheduleKind(plan->schedule);
    if (!kind) {
      module.emitError() << "dist-pipeline-split: " << kind.error();
      return signalPassFailure();
    }
    if (*kind != pipeline::ScheduleKind::GPipe &&
        *kind != pipeline::ScheduleKind::OneFOneB) {
      module.emitError() << "dist-pipeline-split: schedule=" << plan->schedule
                         << " is not supported yet (gpipe, 1f1b)";
      return signalPassFailure();
    }
    FailureOr<MeshOp> mesh = getSingleMesh(module, "dist-pipeline-split");
    if (failed(mesh))
      return signalPassFailure();
    if (!*mesh || !llvm::is_contained(
                      (*mesh).getAxisNames().getAsValueRange<StringAttr>(),
                      kPipelineAxis)) {
      module.emitError() << "dist-pipeline-split: plan pp=" << plan->pp
                         << " but the mesh has no 'pp' axis";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> entries;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn.isPublic() && !fn.isExternal())
        entries.push_back(fn);
    for (func::FuncOp fn : entries) {
      EntrySplitter splitter(fn, *mesh, plan->pp, plan->mb, *kind);
      if (failed(splitter.run()))
        return signalPassFailure();
      // The training schedule, for dist-explain's simulation.
      if (splitter.backward())
        module->setAttr(
            "dist.pipeline_schedule",
            StringAttr::get(module.getContext(), splitter.scheduleText));
      fn.erase();
    }
  }
};

} // namespace
