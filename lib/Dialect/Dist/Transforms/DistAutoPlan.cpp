//===- DistAutoPlan.cpp - Search the plan space with a cost model ---------===//
//
// `dist-auto-plan` (DESIGN.md §7). On a model module (tfm ops, global
// shapes, forward + loss, one function per distinct block):
//
// 1. Builds a one-block copy of the model (every call of a block function
//    but the first is bypassed), so that compile time does not grow with
//    depth.
// 2. For every layer-local configuration (tp, sp) and microbatch sizes 1
//    and 2, compiles the copy through tfm-autodiff, dist-apply-plan,
//    dist-propagate, dist-partition, rt-lower, rt-fuse-epilogues (as
//    scripts/train.sh builds it) and rt-plan-memory, and reads
//    off the per-rank program (its ProgramProfile): FLOPs and bytes of
//    every tfm op (TfmCostOpInterface), the tensor-parallel collectives of
//    the block functions and of each phase of train_step, the residuals
//    and the block input bytes, parameters per rank and the static memory
//    plan's peak activation bytes. Quantities are affine in the microbatch
//    size, so two compilations give every size exactly.
// 3. Hands the profiles to the planner library (lib/Planner), which
//    composes pp/dp/cp/ZeRO/schedule/recomputation analytically and
//    simulates the best candidates' pipeline schedule.
// 4. Writes the report (and optionally a Chrome trace) and records the
//    chosen plan as the module attribute `dist.auto_plan`. The IR is not
//    otherwise changed.
//
//===----------------------------------------------------------------------===//

#include "BackwardSplit.h"
#include "RunPassPipeline.h"

#include "autoshard/Dialect/Dist/Analysis/ProgramProfile.h"
#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Dist/Transforms/Plan.h"
#include "autoshard/Dialect/Rt/IR/RtDialect.h"
#include "autoshard/Dialect/Rt/Transforms/FrameLiveness.h"
#include "autoshard/Dialect/Rt/Transforms/Passes.h"
#include "autoshard/Dialect/Tfm/IR/TfmAttrNames.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"
#include "autoshard/Dialect/Tfm/Transforms/Passes.h"
#include "autoshard/Pipeline/Schedule.h"
#include "autoshard/Planner/Cluster.h"
#include "autoshard/Planner/Planner.h"
#include "autoshard/Report/PlannerHtml.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"

#include <chrono>

namespace autoshard::dist {
#define GEN_PASS_DEF_DISTAUTOPLAN
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace autoshard::dist

using namespace mlir;
namespace planner = autoshard::planner;
using autoshard::tfm::tensorBytes;
using autoshard::tfm::tensorElements;

namespace autoshard::dist {
namespace {

/// The planner's roofline of a costed op.
planner::OpKind opKind(tfm::RooflineKind kind) {
  switch (kind) {
  case tfm::RooflineKind::Gemm:
    return planner::OpKind::Gemm;
  case tfm::RooflineKind::Attention:
    return planner::OpKind::Attention;
  case tfm::RooflineKind::Memory:
    return planner::OpKind::Memory;
  }
  llvm_unreachable("unknown roofline kind");
}

/// One op measured at one microbatch size.
struct RawOp {
  planner::OpKind kind = planner::OpKind::Memory;
  std::string name;
  double flops = 0, bytes = 0;
  bool weightGrad = false;
  /// A gradient op (tfm::trait::Gradient).
  bool backward = false;
  /// The attention kernel's problem (attention ops).
  tfm::AttentionShape attention;
  /// GEMM problem shape (GEMMs; m = 0 otherwise).
  planner::GemmShape gemm;
};

/// One measurement (at one microbatch size) of a function profile.
struct RawFunction {
  std::vector<RawOp> ops;
  std::vector<std::tuple<planner::CollectiveKind, std::string, double>> comms;
};

struct RawProfile {
  RawFunction layerFwd, layerBwd, preFwd, preBwd, postFwd, postBwd;
  /// Full recomputation's re-run of the block forward (`@B_recompute_full`).
  RawFunction layerRecompute;
  double layerParams = 0, totalParams = 0;
  /// Of the non-block parameters, those the embedding reads and those the
  /// head reads (a tied embedding: both), and those only the head reads.
  double preParams = 0, postParams = 0, headOnlyParams = 0;
  /// Of those, the elements by which their gradients as accumulated are
  /// smaller (planner::LocalProfile::otherGradSliced).
  double otherGradSliced = 0, preGradSliced = 0, postGradSliced = 0;
  /// Parameter tensors: the block's, the non-block ones (embedding's,
  /// head's, all).
  double layerTensors = 0, preTensors = 0, postTensors = 0, otherTensors = 0;
  /// Of layerParams, the expert weights (elements per rank).
  double expertParams = 0;
  /// One entry per parameter of the step (its argument number): where it
  /// is read (a block, as an expert weight; the embedding, the head) and
  /// whether its gradient is reduced over the tensor-parallel axis on its
  /// way to the update (planner::GradientReduction).
  struct ParamGradient {
    unsigned arg = 0;
    double elements = 0;
    bool block = false, expert = false, pre = false, post = false;
    bool overTensor = false;
  };
  std::vector<ParamGradient> paramGradients;
  /// Bytes of the block forward's tfm.moe_dispatch results ([E, B, C, H]).
  double dispatch = 0;
  double residual = 0, boundary = 0, selective = 0, frame = 0;
  /// The train step's live gradient-category bytes at its memory peak
  /// (`peak_breakdown.grad`: parameter and activation gradients).
  double frameGrad = 0;
  /// Elements the block forward's dropouts (tfm.dropout, dropout_local)
  /// produce: where a framework keeps a mask per element.
  double dropout = 0;
  /// Bytes of the block backward call's operands that are all-gathered.
  double regather = 0;
  /// Elements of the step's parameters the first full-recomputation re-run
  /// call reads (planner::RecomputeProfile::rerunParams).
  double rerunParams = 0;
  /// Elements of the step's parameters W reads
  /// (planner::RecomputeProfile::weightParams).
  double weightParams = 0;
  /// Activation bytes of the first re-run call's frame in the split step
  /// (planner::RecomputeProfile::rerunFrameBytes).
  double rerunFrame = 0;
  /// Gradient bytes a deferred weight-gradient pass (W) of one block reads
  /// (planner::LocalProfile::weightGradInputBytes).
  double weightInputs = 0;
  /// Bytes W recomputes and reads (planner::RecomputeProfile::
  /// weightRecomputedBytes).
  double weightRecomputed = 0;
  /// Bytes the head's forward keeps for its backward
  /// (planner::LocalProfile::headKeptBytes).
  double headKept = 0;
  /// The block functions the step calls (their rt forms keep the names).
  std::string forwardName, backwardName, recomputeName;
  /// The one-block train step's name.
  std::string stepName;
  /// The step's live bytes per category at the largest-total op of each
  /// phase (planner::StepPhase order) of its static memory plan.
  std::array<rt::CategoryBytes, planner::kNumStepPhases> phases{};
  /// Bytes of the step's `tokens` input slot (one microbatch's token ids).
  double tokens = 0;
  /// Of each phase's gradient bytes, those of buffers the head produced.
  std::array<int64_t, planner::kNumStepPhases> headGrads{};
  /// Of each phase's activation bytes, those of collectives started for the
  /// next call (planner::PhaseMemory::nextCall).
  std::array<int64_t, planner::kNumStepPhases> nextCall{};
  std::array<int64_t, planner::kNumStepPhases> nextCallSent{};
};

/// The plan keys that compile a one-block profile's expert layout: ep
/// folded over exactly the tp ranks, or the experts split over them.
std::string expertPlanKeys(const planner::ProfileKey &key) {
  switch (key.experts) {
  case planner::ExpertLayout::Replicated:
    return "";
  case planner::ExpertLayout::OverTp:
    return ",ep=" + std::to_string(key.tp);
  case planner::ExpertLayout::TensorSplit:
    return ",etp=" + std::to_string(key.tp);
  }
  llvm_unreachable("unknown expert layout");
}

/// The planner's kind of a collective it models per layer (either form);
/// nullopt for the others.
std::optional<planner::CollectiveKind> collectiveKind(CommKind kind) {
  switch (kind) {
  case CommKind::AllReduce:
    return planner::CollectiveKind::AllReduce;
  case CommKind::AllGather:
    return planner::CollectiveKind::AllGather;
  case CommKind::ReduceScatter:
    return planner::CollectiveKind::ReduceScatter;
  case CommKind::AllToAll:
    return planner::CollectiveKind::AllToAll;
  default:
    return std::nullopt;
  }
}

/// Records `work` into `f`: every costed op, and the collectives over the
/// tensor-parallel axis only (the planner composes the other strategies'
/// communication itself).
void record(const WorkProfile &work, RawFunction &f) {
  for (const CostRecord &c : work.costs) {
    RawOp raw;
    raw.kind = opKind(c.roofline);
    raw.name = c.op->getName().getStringRef().str();
    raw.flops = c.cost.flops;
    raw.bytes = c.cost.bytes;
    raw.weightGrad = c.weightGradient;
    raw.backward = c.gradient;
    if (c.attention)
      raw.attention = *c.attention;
    if (c.gemm)
      raw.gemm =
          planner::GemmShape{c.gemm->batch, c.gemm->m, c.gemm->n, c.gemm->k};
    f.ops.push_back(std::move(raw));
  }
  for (const CommRecord &c : work.comms) {
    std::optional<planner::CollectiveKind> kind = collectiveKind(c.kind);
    if (!kind || !c.allAxesHaveRoles({AxisRole::Tensor}))
      continue;
    // nccl-tests S: the larger of operand and result (gathered /
    // pre-scatter buffer), the buffer for all-reduce.
    double bytes = std::max(double(c.bytes), double(c.resultBytes));
    f.comms.emplace_back(*kind, c.name.str(), bytes);
  }
}

/// The gradient that the update of parameter `param` (a step argument)
/// reads: the TfmParameterUpdateOpInterface op that updates it; null when
/// none does.
Value updateGradient(BlockArgument param) {
  for (Operation *user : param.getUsers()) {
    auto update = dyn_cast<tfm::TfmParameterUpdateOpInterface>(user);
    if (update && update.getUpdatedParameter() == param)
      return update.getParameterGradient();
  }
  return {};
}

/// The mesh axes, by role, that the reductions (all-reduce,
/// reduce-scatter) of `grad` span on its way back from the update to the
/// op that computed it: the chain of one-operand communication ops that
/// ends at `grad` (gathers of a sliced gradient pass through).
struct ReducedOver {
  bool tensor = false, context = false;
};
ReducedOver reducedOver(Value grad) {
  ReducedOver r;
  while (Operation *def = grad ? grad.getDefiningOp() : nullptr) {
    auto comm = dyn_cast<CommOpInterface>(def);
    if (!comm || def->getNumOperands() != 1)
      break;
    CommKind kind = comm.getCommKind();
    if (kind == CommKind::AllReduce || kind == CommKind::ReduceScatter) {
      auto mesh =
          SymbolTable::lookupNearestSymbolFrom<MeshOp>(def, comm.getMeshAttr());
      for (Attribute axis : comm.getAxes()) {
        std::optional<AxisRole> role =
            mesh ? mesh.getAxisRole(cast<StringAttr>(axis).getValue())
                 : std::nullopt;
        r.tensor |= role == AxisRole::Tensor;
        r.context |= role == AxisRole::Context;
      }
    }
    grad = def->getOperand(0);
  }
  return r;
}

/// Splits the first call of the block backward `backward` in `step` as a
/// zero-bubble schedule does (BackwardSplit.h): the results that reach only
/// the optimizer update, through collectives, form the weight part.
/// Returns the input and weight calls, or std::nullopt when the call is
/// left whole; `loss` is set to the step's loss op (or null).
std::optional<std::pair<func::CallOp, func::CallOp>>
splitFirstBackward(func::FuncOp step, StringRef backward,
                   BackwardCallSplitter &splitter, Operation *&loss) {
  func::CallOp call;
  loss = nullptr;
  for (Operation &op : step.getBody().front()) {
    if (!loss && op.hasTrait<tfm::trait::TrainingLoss>())
      loss = &op;
    if (auto c = dyn_cast<func::CallOp>(op);
        c && !call && c.getCallee() == backward)
      call = c;
  }
  if (!call || !loss)
    return std::nullopt;
  auto onlyOptimizer = [](Value v) {
    SmallVector<Value> work = {v};
    while (!work.empty()) {
      Value x = work.pop_back_val();
      for (Operation *user : x.getUsers()) {
        if (user->hasTrait<tfm::trait::OptimizerStep>())
          continue;
        if (!isa<CommOpInterface>(user))
          return false;
        llvm::append_range(work, user->getResults());
      }
    }
    return true;
  };
  llvm::SmallBitVector weight(call.getNumResults());
  for (auto [i, r] : llvm::enumerate(call.getResults()))
    if (!r.use_empty() && onlyOptimizer(r))
      weight.set(i);
  if (weight.none())
    return std::nullopt;
  return splitter.split(call, weight);
}

/// Reads into `p.weightInputs` the gradient bytes that the weight-gradient
/// part of the step's first block backward call reads when a zero-bubble
/// schedule defers it (splitFirstBackward): the values the input-gradient
/// part saves for it and the call's gradient operands (computed after the
/// loss: the block output's gradient). Works on a copy of `module`; 0 when
/// the call is left whole.
LogicalResult readWeightGradInputs(ModuleOp module,
                                   const FunctionProfile &stepProfile,
                                   const FunctionProfile &backward,
                                   RawProfile &p, std::string &err) {
  OwningOpRef<ModuleOp> copy = module.clone();
  auto step = dyn_cast_or_null<func::FuncOp>(SymbolTable::lookupSymbolIn(
      *copy, cast<func::FuncOp>(stepProfile.op).getSymName()));
  if (!step) {
    err = "the one-block train step cannot be copied";
    return failure();
  }
  Operation *loss = nullptr;
  BackwardCallSplitter splitter(*copy);
  auto parts = splitFirstBackward(step, backward.name, splitter, loss);
  if (!parts)
    return success();
  auto [input, weightCall] = *parts;
  auto weightFn = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      weightCall, weightCall.getCalleeAttr());
  // W's arguments that are gradients, and the values computed from them.
  llvm::DenseSet<Value> fromGrads;
  for (auto [i, v] : llvm::enumerate(weightCall.getOperands())) {
    Operation *def = v.getDefiningOp();
    if (def && (def == input || loss->isBeforeInBlock(def))) {
      p.weightInputs += tensorBytes(v.getType());
      if (weightFn && i < weightFn.getNumArguments())
        fromGrads.insert(weightFn.getArgument(i));
    }
  }
  if (!weightFn || weightFn.isExternal())
    return success();
  // The step's parameters W reads (each once).
  llvm::DenseSet<Value> params;
  for (auto [i, v] : llvm::enumerate(weightCall.getOperands())) {
    auto arg = dyn_cast<BlockArgument>(v);
    if (arg && arg.getOwner()->getParentOp() == step &&
        step.getArgAttr(arg.getArgNumber(), tfm::kParamAttrName) &&
        i < weightFn.getNumArguments() &&
        !weightFn.getArgument(i).use_empty() && params.insert(v).second)
      p.weightParams += tensorElements(v.getType());
  }
  // What W recomputes from forward values alone for its gradient ops
  // (selective recomputation's norms and activations, which only W reads,
  // move into W): values of costed ops that move bytes (not views).
  // Recomputed values W collects (sequence parallelism's norms, gathered)
  // count with their send buffers: dist-overlap-collectives starts those
  // collectives together, ahead of the gradient ops, so each input and
  // result is live until its wait.
  llvm::DenseSet<Value> counted;
  auto recomputed = [](Value v) {
    auto cost = v.getDefiningOp<tfm::TfmCostOpInterface>();
    return cost && cost.getCost().bytes > 0;
  };
  for (Operation &op : weightFn.getBody().front()) {
    if (llvm::none_of(op.getOperands(),
                      [&](Value v) { return fromGrads.contains(v); }))
      continue;
    fromGrads.insert(op.result_begin(), op.result_end());
    for (Value v : op.getOperands()) {
      if (fromGrads.contains(v) || !counted.insert(v).second)
        continue;
      if (recomputed(v)) {
        p.weightRecomputed += tensorBytes(v.getType());
        continue;
      }
      auto comm = v.getDefiningOp<CommOpInterface>();
      if (!comm || !llvm::all_of(comm->getOperands(), recomputed))
        continue;
      p.weightRecomputed += tensorBytes(v.getType());
      for (Value in : comm->getOperands())
        if (counted.insert(in).second)
          p.weightRecomputed += tensorBytes(in.getType());
    }
  }
  return success();
}

/// Reads into `p.headKept` the bytes that the step's part up to the loss
/// (tfm::trait::TrainingLoss) keeps for the head's backward: the values the
/// head backward's costed ops read that are computed by then (the block
/// output, the final norm's output, the logits) or are step inputs (the
/// labels); parameters are not counted.
void readHeadKept(const TrainStepProfile &s, RawProfile &p) {
  auto step = cast<func::FuncOp>(s.step->op);
  Operation *loss = nullptr;
  for (Operation &op : step.getBody().front())
    if (op.hasTrait<tfm::trait::TrainingLoss>()) {
      loss = &op;
      break;
    }
  if (!loss)
    return;
  llvm::DenseSet<Value> kept;
  for (const CostRecord &c : s.headBackward.costs)
    for (Value v : c.op->getOperands()) {
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        if (arg.getOwner()->getParentOp() != step ||
            step.getArgAttr(arg.getArgNumber(), tfm::kParamAttrName))
          continue;
      } else {
        Operation *def = v.getDefiningOp();
        if (def->getBlock() != loss->getBlock() ||
            (def != loss && loss->isBeforeInBlock(def)))
          continue;
      }
      if (kept.insert(v).second && isa<RankedTensorType>(v.getType()))
        p.headKept += tensorBytes(v.getType());
    }
}

/// The elements of the step's parameters that the first full-recomputation
/// re-run call reads (its operands that are parameter arguments of the step
/// and whose callee argument has a use; each once): what ZeRO-3 gathers for
/// that call (the re-run discards the block output, so the parameters only
/// it needs are passed as they are).
void readRerunParams(const TrainStepProfile &s, RawProfile &p) {
  if (!s.recompute)
    return;
  auto step = cast<func::FuncOp>(s.step->op);
  auto callee = cast<func::FuncOp>(s.recompute->op);
  for (const CallRecord &call : s.step->calls) {
    if (call.callee != s.recompute->name)
      continue;
    llvm::DenseSet<Value> seen;
    for (auto [i, v] : llvm::enumerate(call.op->getOperands())) {
      auto arg = dyn_cast<BlockArgument>(v);
      if (arg && arg.getOwner()->getParentOp() == step &&
          step.getArgAttr(arg.getArgNumber(), tfm::kParamAttrName) &&
          i < callee.getNumArguments() && !callee.getArgument(i).use_empty() &&
          seen.insert(v).second)
        p.rerunParams += tensorElements(v.getType());
    }
    return;
  }
}

/// Reads the per-rank program of the one-block model (func form, after
/// dist-partition).
LogicalResult readProgram(ModuleOp module, RawProfile &p, std::string &err) {
  ProgramProfile profile(module);
  llvm::Expected<TrainStepProfile> read = profile.getTrainStep();
  if (!read) {
    err = llvm::toString(read.takeError());
    return failure();
  }
  const TrainStepProfile &s = *read;
  p.forwardName = s.forward->name.str();
  p.backwardName = s.backward->name.str();
  p.stepName = s.step->name.str();
  if (s.recompute)
    p.recomputeName = s.recompute->name.str();
  readRerunParams(s, p);
  // What the block backward gathers of its arguments (sequence
  // parallelism's residuals): dist-hoist-argument-gathers moves those
  // gathers to the call, dist-overlap-collectives one call ahead.
  cast<func::FuncOp>(s.backward->op).walk([&](AllGatherOp gather) {
    auto arg = dyn_cast<BlockArgument>(gather->getOperand(0));
    if (arg && arg.hasOneUse() &&
        arg.getOwner()->getParentOp() == s.backward->op)
      p.regather += tensorBytes(gather->getResult(0).getType());
  });
  if (failed(readWeightGradInputs(module, *s.step, *s.backward, p, err)))
    return failure();
  readHeadKept(s, p);
  record(s.forward->work, p.layerFwd);
  record(s.backward->work, p.layerBwd);
  if (s.recompute)
    record(s.recompute->work, p.layerRecompute);
  record(s.embedding, p.preFwd);
  record(s.head, p.postFwd);
  record(s.headBackward, p.postBwd);
  record(s.embeddingBackward, p.preBwd);
  // Parameters per rank.
  auto step = cast<func::FuncOp>(s.step->op);
  auto fwd = cast<func::FuncOp>(s.forward->op);
  for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i)
    if (step.getArgAttr(i, tfm::kParamAttrName))
      p.totalParams += tensorElements(step.getArgument(i).getType());
  // The non-block parameters by the part of the step that reads them (a
  // pipeline's first stage holds the embedding's, its last the head's),
  // through the uncosted ops between (views, collectives).
  llvm::DenseSet<Operation *> pre, post;
  for (const CostRecord &c : s.embedding.costs)
    pre.insert(c.op);
  for (const WorkProfile *w : {&s.head, &s.headBackward})
    for (const CostRecord &c : w->costs)
      post.insert(c.op);
  for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i) {
    if (!step.getArgAttr(i, tfm::kParamAttrName))
      continue;
    bool block = false, expert = false, inPre = false, inPost = false;
    SmallVector<Value> work = {step.getArgument(i)};
    llvm::DenseSet<Operation *> seen;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (!seen.insert(user).second)
          continue;
        if (auto call = dyn_cast<func::CallOp>(user)) {
          block = true;
          // An expert weight: the block forward's argument role.
          if (call.getCallee() != fwd.getSymName())
            continue;
          for (OpOperand &use : call->getOpOperands()) {
            auto attr = use.get() == v
                            ? fwd.getArgAttrOfType<StringAttr>(
                                  use.getOperandNumber(), tfm::kRoleAttrName)
                            : StringAttr();
            std::optional<tfm::Role> role =
                attr ? tfm::symbolizeRole(attr.getValue()) : std::nullopt;
            expert |= role && tfm::isExpertRole(*role);
          }
        } else if (pre.contains(user)) {
          inPre = true;
        } else if (post.contains(user)) {
          inPost = true;
        } else {
          llvm::append_range(work, user->getResults());
        }
      }
    }
    double n = tensorElements(step.getArgument(i).getType());
    Value update = updateGradient(step.getArgument(i));
    p.paramGradients.push_back(
        {i, n, block, expert, inPre, inPost, reducedOver(update).tensor});
    if (block)
      continue;
    // The gradient as the backward produces it: the optimizer update's
    // gradient before the collectives that reduce or reassemble it (what
    // the microbatches' sums hold; a sliced gradient is gathered after the
    // last one).
    double sliced = 0;
    if (Value grad = update) {
      while (Operation *def = grad.getDefiningOp()) {
        if (!isa<CommOpInterface>(def) || def->getNumOperands() != 1)
          break;
        grad = def->getOperand(0);
      }
      sliced = std::max(0.0, n - tensorElements(grad.getType()));
    }
    p.otherGradSliced += sliced;
    p.preGradSliced += inPre ? sliced : 0;
    p.postGradSliced += inPost ? sliced : 0;
    p.preParams += inPre ? n : 0;
    p.postParams += inPost ? n : 0;
    p.headOnlyParams += inPost && !inPre ? n : 0;
    p.preTensors += inPre ? 1 : 0;
    p.postTensors += inPost ? 1 : 0;
    p.otherTensors += 1;
  }
  for (unsigned i = 0, e = fwd.getNumArguments(); i < e; ++i) {
    auto attr = fwd.getArgAttrOfType<StringAttr>(i, tfm::kRoleAttrName);
    if (!attr)
      continue;
    // Every argument with a role but the hidden state and the layer index.
    std::optional<tfm::Role> role = tfm::symbolizeRole(attr.getValue());
    if (role != tfm::Role::Hidden && role != tfm::Role::LayerIndex) {
      p.layerParams += tensorElements(fwd.getArgument(i).getType());
      p.layerTensors += 1;
    }
    if (role && tfm::isExpertRole(*role))
      p.expertParams += tensorElements(fwd.getArgument(i).getType());
  }
  // MoE: what expert parallelism's all-to-alls send. They are ragged
  // (docs/expert-parallelism.md): of each dispatch buffer [E, B, C, H] only
  // the rows routed travel, the S·K choices of each sequence at most (all
  // of them when dropless), E·C when fewer.
  fwd.walk([&](tfm::MoeDispatchOp op) {
    auto ids = cast<RankedTensorType>(op.getExpertIds().getType());
    double slots = static_cast<double>(op.getNumExperts() * op.getCapacity());
    double routed = static_cast<double>(ids.getDimSize(1) * ids.getDimSize(2));
    p.dispatch +=
        tensorBytes(op.getBuf().getType()) * std::min(1.0, routed / slots);
  });
  // Dropout outputs of the block forward (autoshard regenerates their
  // masks; Cluster::dropoutMaskBytes prices a framework that keeps them).
  fwd.walk([&](Operation *op) {
    if (isa<tfm::DropoutOp, tfm::DropoutLocalOp>(op))
      p.dropout += tensorElements(op->getResult(0).getType());
  });
  // Residuals: every result of the block forward but the block output.
  auto ret = cast<func::ReturnOp>(fwd.getBody().front().getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    double bytes = tensorBytes(v.getType());
    if (i == 0) {
      p.boundary = bytes;
      continue;
    }
    p.residual += bytes;
    // Selective recomputation keeps the attention's results.
    auto producer = v.getDefiningOp<tfm::TfmCostOpInterface>();
    if (producer && producer.getRooflineKind() == tfm::RooflineKind::Attention)
      p.selective += bytes;
  }
  return success();
}

/// Reads the live bytes of the planned one-block train step `step` per
/// phase (planner::StepPhase): the embedding before the block forward call,
/// that call, the head up to the first call of the block's backward (its
/// full-recomputation re-run, else the backward), those calls and what
/// runs between them, and the tail after the backward (embedding gradient,
/// gradient reduction, optimizer). Per phase: the breakdown at its op of
/// largest total, as rt-plan-memory's peak_breakdown is for the whole step.
LogicalResult readPhases(rt::FuncOp step, RawProfile &p, std::string &err) {
  FailureOr<SmallVector<rt::FrameUse>> uses = rt::getFrameUses(step);
  if (failed(uses)) {
    err = "the one-block train step's frame cannot be read";
    return failure();
  }
  Block &body = step.getBody().front();
  for (auto slot : step.getOps<rt::InputOp>())
    if (slot.getRole() == "tokens")
      p.tokens = double(cast<rt::BufferType>(slot.getType()).getSizeInBytes());
  int64_t forward = -1, firstBackward = -1, backward = -1;
  for (auto [index, op] : llvm::enumerate(body)) {
    auto call = dyn_cast<rt::CallOp>(op);
    if (!call)
      continue;
    StringRef callee = call.getCallee();
    int64_t at = index;
    if (forward < 0 && callee == p.forwardName)
      forward = at;
    if (firstBackward < 0 &&
        (callee == p.backwardName || callee == p.recomputeName))
      firstBackward = at;
    if (backward < 0 && callee == p.backwardName)
      backward = at;
  }
  if (forward < 0 || firstBackward < forward || backward < firstBackward) {
    err = llvm::formatv("the one-block train step does not call @{0} before "
                        "@{1}",
                        p.forwardName, p.backwardName);
    return failure();
  }
  auto phaseOf = [&](int64_t at) {
    using planner::StepPhase;
    if (at < forward)
      return StepPhase::Embedding;
    if (at == forward)
      return StepPhase::BlockForward;
    if (at < firstBackward)
      return StepPhase::Head;
    if (at <= backward)
      return StepPhase::BlockBackward;
    return StepPhase::Tail;
  };
  auto total = [](const rt::CategoryBytes &bytes) {
    int64_t sum = 0;
    for (int64_t b : bytes)
      sum += b;
    return sum;
  };
  for (int64_t at = 0, e = std::distance(body.begin(), body.end()); at < e;
       ++at) {
    rt::CategoryBytes live{};
    for (const rt::FrameUse &use : *uses)
      if (use.start <= at && at <= use.end)
        for (unsigned i = 0; i < live.size(); ++i)
          live[i] += use.bytes[i];
    unsigned phase = static_cast<unsigned>(phaseOf(at));
    if (total(live) <= total(p.phases[phase]))
      continue;
    p.phases[phase] = live;
    p.headGrads[phase] = 0;
    for (const rt::FrameUse &use : *uses)
      if (use.start <= at && at <= use.end &&
          phaseOf(use.start) == planner::StepPhase::Head)
        p.headGrads[phase] +=
            use.bytes[static_cast<unsigned>(rt::Category::Grad)];
  }
  return success();
}

/// The activation bytes live at the call at body op `at` of `step` that
/// reach the call `next` (its operands or what the kernels before it
/// compute them from), are no operand of the call at `at` and were first
/// named after the call before it (not a forward value kept for `next`):
/// collectives started for `next`. Returns them and, of them, those a
/// kernel wrote from none of them (a send buffer: a copy of its sources).
std::pair<int64_t, int64_t> startedForNextCall(rt::FuncOp step,
                                               ArrayRef<rt::FrameUse> uses,
                                               int64_t at, rt::CallOp next) {
  Block &body = step.getBody().front();
  llvm::SmallPtrSet<Operation *, 16> feeds;
  for (Value v : next.getOperands())
    if (Operation *root = rt::getBufferRoot(v))
      feeds.insert(root);
  // Backwards from `next`: a kernel that writes a buffer feeding it reads
  // buffers that feed it.
  for (Operation *op = next->getPrevNode(); op; op = op->getPrevNode())
    if (auto kernel = dyn_cast<rt::KernelOp>(op))
      if (llvm::any_of(kernel.getResults(), [&](Value v) {
            return feeds.contains(rt::getBufferRoot(v));
          }))
        for (Value v : kernel.getArgs())
          if (Operation *root = rt::getBufferRoot(v))
            feeds.insert(root);
  Operation *call = &*std::next(body.begin(), at);
  for (Value v : call->getOperands())
    feeds.erase(rt::getBufferRoot(v));
  int64_t previous = -1;
  for (auto [index, op] : llvm::enumerate(body))
    if (int64_t(index) < at && isa<rt::CallOp>(op))
      previous = index;
  llvm::SmallPtrSet<Operation *, 16> started;
  for (const rt::FrameUse &use : uses)
    if (use.start > previous && use.start <= at && at <= use.end &&
        feeds.contains(use.op))
      started.insert(use.op);
  // The send buffers: written by a kernel that reads no started buffer.
  llvm::SmallPtrSet<Operation *, 16> sent;
  for (Operation &op : body)
    if (auto kernel = dyn_cast<rt::KernelOp>(op))
      if (llvm::none_of(kernel.getArgs(), [&](Value v) {
            return started.contains(rt::getBufferRoot(v));
          }))
        for (Value v : kernel.getResults())
          if (started.contains(rt::getBufferRoot(v)))
            sent.insert(rt::getBufferRoot(v));
  const unsigned activation = static_cast<unsigned>(rt::Category::Activation);
  int64_t bytes = 0, sentBytes = 0;
  for (const rt::FrameUse &use : uses)
    if (started.contains(use.op)) {
      bytes += use.bytes[activation];
      sentBytes += sent.contains(use.op) ? use.bytes[activation] : 0;
    }
  return {bytes, sentBytes};
}

/// Reads into `p.phases[BlockInput]` the live bytes of the planned one-block
/// train step `step` whose block backward call a zero-bubble schedule split
/// (splitFirstBackward) at its input-gradient call `@<inputName>`, of its
/// gradient bytes those of buffers the head produced (as readPhases), and
/// of its activation bytes those started for the weight-gradient call
/// `@<weightName>` (its re-gathered residuals: nextCall), and into
/// `p.phases[BlockWeight]` its live bytes at that call.
LogicalResult readInputPhase(rt::FuncOp step, StringRef inputName,
                             StringRef weightName, RawProfile &p,
                             std::string &err) {
  FailureOr<SmallVector<rt::FrameUse>> uses = rt::getFrameUses(step);
  if (failed(uses)) {
    err = "the split one-block train step's frame cannot be read";
    return failure();
  }
  int64_t forward = -1, firstBackward = -1, input = -1, weightAt = -1;
  rt::CallOp weight;
  for (auto [index, op] : llvm::enumerate(step.getBody().front())) {
    auto call = dyn_cast<rt::CallOp>(op);
    if (!call)
      continue;
    StringRef callee = call.getCallee();
    if (forward < 0 && callee == p.forwardName)
      forward = index;
    if (firstBackward < 0 && (callee == inputName || callee == p.recomputeName))
      firstBackward = index;
    if (input < 0 && callee == inputName)
      input = index;
    if (!weight && callee == weightName) {
      weight = call;
      weightAt = index;
    }
  }
  if (forward < 0 || firstBackward < forward || input < firstBackward) {
    err = llvm::formatv("the split one-block train step does not call @{0} "
                        "before @{1}",
                        p.forwardName, inputName);
    return failure();
  }
  const unsigned phase = static_cast<unsigned>(planner::StepPhase::BlockInput);
  const unsigned grad = static_cast<unsigned>(rt::Category::Grad);
  p.phases[phase] = {};
  p.headGrads[phase] = 0;
  const unsigned activation = static_cast<unsigned>(rt::Category::Activation);
  for (const rt::FrameUse &use : *uses) {
    auto call = dyn_cast<rt::CallOp>(use.op);
    if (call && call.getCallee() == p.recomputeName && p.rerunFrame == 0)
      p.rerunFrame = double(use.bytes[activation]);
    if (use.start > input || input > use.end)
      continue;
    for (unsigned i = 0; i < use.bytes.size(); ++i)
      p.phases[phase][i] += use.bytes[i];
    if (use.start > forward && use.start < firstBackward)
      p.headGrads[phase] += use.bytes[grad];
  }
  if (!weight)
    return success();
  std::tie(p.nextCall[phase], p.nextCallSent[phase]) =
      startedForNextCall(step, *uses, input, weight);
  const unsigned weightPhase =
      static_cast<unsigned>(planner::StepPhase::BlockWeight);
  p.phases[weightPhase] = {};
  for (const rt::FrameUse &use : *uses)
    if (use.start <= weightAt && weightAt <= use.end)
      for (unsigned i = 0; i < use.bytes.size(); ++i)
        p.phases[weightPhase][i] += use.bytes[i];
  return success();
}

/// The parameters of `p` grouped by the mesh axes their gradients are
/// reduced over (planner::GradientReduction), one entry per distinct
/// (overTensor, overContext), in order of first appearance. `overContext`:
/// by step argument number, whether the one-block model partitioned with
/// cp = 2 reduces that gradient over the context axis (readContextReductions;
/// an argument it lacks, or no map: it does).
std::vector<planner::GradientReduction>
groupGradientReductions(const RawProfile &p,
                        const llvm::DenseMap<unsigned, bool> *overContext) {
  std::vector<planner::GradientReduction> groups;
  for (const RawProfile::ParamGradient &g : p.paramGradients) {
    bool context = true;
    if (overContext)
      if (auto it = overContext->find(g.arg); it != overContext->end())
        context = it->second;
    auto group = llvm::find_if(groups, [&](const auto &r) {
      return r.overTensor == g.overTensor && r.overContext == context;
    });
    if (group == groups.end()) {
      groups.push_back({});
      group = std::prev(groups.end());
      group->overTensor = g.overTensor;
      group->overContext = context;
    }
    if (g.block) {
      (g.expert ? group->layerExpert : group->layer) += g.elements;
      continue;
    }
    group->other += g.elements;
    group->pre += g.pre ? g.elements : 0;
    group->headOnly += g.post && !g.pre ? g.elements : 0;
  }
  return groups;
}

planner::FunctionProfile fit(const RawFunction &a, const RawFunction &b) {
  planner::FunctionProfile f;
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const RawOp &x = a.ops[i];
    // Without a second measurement (odd IR batch) every size-dependent
    // quantity is taken as proportional to b.
    RawOp doubled = x;
    doubled.flops *= 2;
    doubled.bytes *= 2;
    doubled.attention.batchHeads *= 2;
    const RawOp &y =
        i < b.ops.size() && b.ops[i].name == x.name ? b.ops[i] : doubled;
    planner::OpProfile op;
    op.kind = x.kind;
    op.name = x.name;
    op.weightGrad = x.weightGrad;
    op.backward = x.backward;
    op.attentionBatchHeads =
        planner::Affine::fit(x.attention.batchHeads, y.attention.batchHeads);
    op.attentionSeqQ = static_cast<double>(x.attention.seqQ);
    op.attentionSeqK = static_cast<double>(x.attention.seqK);
    op.attentionCausal = x.attention.causal;
    op.flops = planner::Affine::fit(x.flops, y.flops);
    op.bytes = planner::Affine::fit(x.bytes, y.bytes);
    if (x.gemm.m > 0) {
      // The token dimension (m, or k of a weight gradient) is the one that
      // doubles with the flops; the others stay.
      bool grows = y.flops > x.flops;
      auto dim = [&](double dx, double dy) {
        return grows && dy != dx ? planner::Affine::fit(dx, dy)
                                 : planner::Affine{dx, 0};
      };
      planner::GemmShape gy = &y == &doubled ? x.gemm : y.gemm;
      if (&y == &doubled) {
        // Proportional fallback: the token dimension is m for a matmul,
        // k for a weight gradient.
        (x.weightGrad ? gy.k : gy.m) *= 2;
      }
      op.gemmBatch = dim(x.gemm.batch, gy.batch);
      op.gemmM = dim(x.gemm.m, gy.m);
      op.gemmN = dim(x.gemm.n, gy.n);
      op.gemmK = dim(x.gemm.k, gy.k);
    }
    f.ops.push_back(op);
  }
  for (size_t i = 0; i < a.comms.size(); ++i) {
    planner::CommProfile c;
    auto &[kind, name, bytes] = a.comms[i];
    c.kind = kind;
    c.name = name;
    c.bytes = planner::Affine::fit(
        bytes, i < b.comms.size() ? std::get<2>(b.comms[i]) : 2 * bytes);
    f.comms.push_back(c);
  }
  return f;
}

/// Parses `key=value,...` of a candidate plan (the keys of Candidate::str).
/// `hasMbs` / `hasMb`: whether the text names `mbs` / `mb`.
FailureOr<planner::Candidate> parseCandidate(StringRef text, std::string &err,
                                             bool &hasMbs, bool &hasMb) {
  // The Plan syntax of dist-apply-plan (any known value, supported by the
  // compiler yet or not) plus the planner's microbatch size `mbs`.
  planner::Candidate c;
  hasMbs = hasMb = false;
  SmallVector<StringRef> items, rest;
  // Empty items kept: Plan::parse names them, as --plan does.
  text.split(items, ',', -1, /*KeepEmpty=*/true);
  for (StringRef item : items) {
    auto [key, value] = item.split('=');
    if (key.trim() != "mbs") {
      hasMb |= key.trim() == "mb";
      rest.push_back(item);
      continue;
    }
    hasMbs = true;
    if (value.trim().getAsInteger(10, c.mbs) || c.mbs < 1) {
      err = ("plan key 'mbs' needs an integer >= 1, got '" + value.trim() + "'")
                .str();
      return failure();
    }
  }
  llvm::Expected<Plan> plan =
      Plan::parse(llvm::join(rest, ","), /*onlySupported=*/false);
  if (!plan) {
    err = llvm::toString(plan.takeError());
    if (StringRef(err).contains("known keys"))
      err += " (evaluate= also takes mbs, the microbatch size)";
    return failure();
  }
  c.pp = plan->pp;
  c.dp = plan->dp;
  c.cp = plan->cp;
  c.tp = plan->tp;
  c.sp = plan->sp != 0;
  c.zero = plan->zero;
  c.ep = plan->ep;
  c.etp = plan->etp;
  c.mb = plan->mb;
  c.vpp = plan->vpp;
  c.schedule = plan->schedule;
  c.recompute = plan->recompute;
  c.cpAttention = plan->cpAttention;
  c.cpContiguous = c.cp > 1 && plan->cpLayout != "zigzag";
  return c;
}

struct DistAutoPlanPass
    : public dist::impl::DistAutoPlanBase<DistAutoPlanPass> {
  using DistAutoPlanBase::DistAutoPlanBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fail = [&](const Twine &message) {
      module.emitError() << "dist-auto-plan: " << message;
      signalPassFailure();
    };
    if (cluster.empty())
      return fail("the 'cluster' option (a cluster JSON file) is required");
    if (format != "text" && format != "json" && format != "html")
      return fail("format must be 'text', 'json' or 'html', found '" + format +
                  "'");
    llvm::Expected<planner::Cluster> machine = planner::loadCluster(cluster);
    if (!machine)
      return fail(llvm::toString(machine.takeError()));

    auto modelAttr = module->getAttrOfType<DictionaryAttr>(tfm::kModelAttrName);
    if (!modelAttr)
      return fail("the module has no tfm.model attribute (run on the model "
                  "builder's output, before tfm-autodiff)");
    auto getInt = [&](StringRef key) -> int64_t {
      if (auto a = modelAttr.getAs<IntegerAttr>(key))
        return a.getInt();
      return 0;
    };
    planner::ModelInfo model;
    if (auto name = modelAttr.getAs<StringAttr>("name"))
      model.name = name.str();
    model.layers = getInt("num_layers");
    model.hidden = getInt("hidden_size");
    model.heads = getInt("num_heads");
    model.kvHeads = getInt("num_kv_heads");
    model.ffn = getInt("ffn_hidden_size");
    model.vocab = getInt("padded_vocab_size");
    model.seq = getInt("seq_len");
    model.params = double(getInt("num_parameters"));
    int64_t irBatch = getInt("batch");
    if (model.layers <= 0 || irBatch <= 0 || model.heads <= 0)
      return fail("tfm.model lacks num_layers, batch or num_heads");
    if (auto dtype = modelAttr.getAs<StringAttr>("dtype"))
      model.elementBytes = dtype.getValue() == "f32"   ? 4
                           : dtype.getValue() == "f64" ? 8
                                                       : 2;

    planner::SearchOptions options;
    // Explicit values are checked (hasValue: given on the command line).
    if (gpus.hasValue() && nodes.hasValue())
      return fail(llvm::formatv("give nodes or gpus, not both (nodes={0} "
                                "gpus={1})",
                                nodes, gpus)
                      .str());
    if (gpus.hasValue() && gpus < 1)
      return fail(llvm::formatv("gpus must be >= 1, got {0}", gpus).str());
    if (nodes < 1)
      return fail(llvm::formatv("nodes must be >= 1, got {0}", nodes).str());
    if (batch.hasValue() && batch < 1)
      return fail(llvm::formatv("batch must be >= 1, got {0}", batch).str());
    if (top < 1)
      return fail(llvm::formatv("top must be >= 1, got {0}", top).str());
    // A negative count simulated nothing, as 0 does, without a word.
    if (simulateTop < 0)
      return fail(
          llvm::formatv("simulate-top must be >= 0, got {0}", simulateTop)
              .str());
    options.gpus = gpus.hasValue() ? gpus : nodes * machine->gpusPerNode;
    if (machine->singleNode && options.gpus > machine->gpusPerNode)
      return fail(llvm::formatv("cluster '{0}' is one node of {1} devices (it "
                                "has no 'inter_node' link), but the plan asks "
                                "for {2}",
                                machine->name, machine->gpusPerNode,
                                options.gpus)
                      .str());
    // Ranks that time-share a node (gpu.shares_node) each get a larger
    // share when the job has fewer of them.
    *machine = planner::forWorld(*machine, options.gpus);
    options.globalBatch = batch.hasValue() ? batch : irBatch;
    options.simulateTop = simulateTop;
    if (compilable) {
      // What dist-pipeline-split, tfm-recompute and the runtime build
      // today: every schedule the planner scores and every recomputation
      // mode; context parallelism in zig-zag order where
      // dist-zigzag-sequence builds it, else contiguous (scored with its
      // imbalance); expert
      // parallelism folded as dist-apply-plan builds it (over dp; under cp
      // over every cp rank and ep/cp dp ranks), with any ZeRO stage; each
      // pipeline stage's gradient reduction behind its last microbatch's
      // backward (dist-pipeline-split), the ZeRO-1/2 parameter gathers
      // behind the later buckets' optimizer updates and one data-parallel
      // bucket per layer group (dist-bucket-collectives).
      options.schedules = {"1f1b", "gpipe", "interleaved", "zb-h1", "zb-v"};
      options.cpZigzagWhereCompilable = true;
      options.epAsCompiled = true;
      options.paramGatherBehindOptimizer = true;
      options.dpBucketPerLayerGroup = true;
    }
    // Explicit restrictions of the search space (e.g. to what a published
    // run's software supported): intersected with the defaults above.
    {
      // An option given with no value (`schedules=`) is a mistake, not a
      // request for the default search.
      for (auto [given, empty, name] :
           {std::tuple{schedules.getNumOccurrences(), schedules.empty(),
                       "schedules"},
            {recomputes.getNumOccurrences(), recomputes.empty(), "recompute"},
            {zeroStages.getNumOccurrences(), zeroStages.empty(), "zero"},
            {cpDegrees.getNumOccurrences(), cpDegrees.empty(), "cp"},
            {cpAttentions.getNumOccurrences(), cpAttentions.empty(),
             "cp-attention"},
            {epDegrees.getNumOccurrences(), epDegrees.empty(), "ep"},
            {evaluatePlan.getNumOccurrences(), evaluatePlan.empty(),
             "evaluate"}})
        if (given > 0 && empty)
          return fail(llvm::formatv("option '{0}' is given without a value "
                                    "(leave it out for the default)",
                                    name)
                          .str());
      std::string err;
      if (failed(restrict(options.schedules, schedules, "schedules",
                          {"1f1b", "interleaved", "zb-h1", "zb-v", "gpipe"},
                          err)) ||
          failed(restrict(options.recomputes, recomputes, "recompute",
                          {"none", "selective", "full"}, err)) ||
          failed(restrictInts(options.zeroStages, zeroStages, "zero", 0, 3,
                              err)) ||
          failed(restrictInts(options.cpChoices, cpDegrees, "cp", 1,
                              int64_t(1) << 20, err)) ||
          failed(restrict(options.cpAttentions, cpAttentions, "cp-attention",
                          {"ring", "ulysses"}, err)) ||
          failed(restrictInts(options.epChoices, epDegrees, "ep", 1,
                              int64_t(1) << 20, err)))
        return fail(err);
      options.searchSp = searchSp;
      if (crossNode != "warn" && crossNode != "forbid")
        return fail(llvm::formatv("option 'cross-node': unknown value '{0}' "
                                  "(known: warn, forbid)",
                                  crossNode)
                        .str());
      options.forbidCrossNode = crossNode == "forbid";
    }
    if (!evaluatePlan.empty()) {
      std::string err;
      bool hasMbs = false, hasMb = false;
      FailureOr<planner::Candidate> plan =
          parseCandidate(evaluatePlan, err, hasMbs, hasMb);
      if (failed(plan))
        return fail("evaluate: " + err);
      int64_t world = plan->pp * plan->dp * plan->cp * plan->tp;
      if (world != options.gpus)
        return fail(
            llvm::formatv("evaluate: the plan uses pp*dp*cp*tp = {0} "
                          "GPUs, the job has {1} (gpus, else nodes x the "
                          "cluster's gpus_per_node)",
                          world, options.gpus));
      // As --plan reads it: mb microbatches (default 1) of the global batch
      // per replica, so the `as --plan:` line scores the plan it names;
      // `mbs` (the planner's microbatch size) instead fixes the size, and
      // mb follows unless it is also given and disagrees.
      if (hasMbs) {
        if (options.globalBatch % (plan->dp * plan->mbs))
          return fail(llvm::formatv("evaluate: global batch {0} is not a "
                                    "multiple of dp*mbs = {1}",
                                    options.globalBatch, plan->dp * plan->mbs));
        int64_t mb = options.globalBatch / (plan->dp * plan->mbs);
        if (hasMb && plan->mb != mb)
          return fail(llvm::formatv(
              "evaluate: mb={0} and mbs={1} disagree: dp*mbs*mb must be the "
              "global batch {2} (mb={3} with mbs={1})",
              plan->mb, plan->mbs, options.globalBatch, mb));
        plan->mb = mb;
      } else {
        if (options.globalBatch % (plan->dp * plan->mb))
          return fail(llvm::formatv("evaluate: global batch {0} is not a "
                                    "multiple of dp*mb = {1}",
                                    options.globalBatch, plan->dp * plan->mb));
        plan->mbs = options.globalBatch / (plan->dp * plan->mb);
      }
      options.fixed = true;
      options.fixedPlan = *plan;
      // Scored as the compiler builds it, as the search does with
      // compilable=true (the ZeRO-1/2 gather behind the optimizer).
      options.fixedPlan.pipelineReductionInTail =
          options.pipelineReductionInTail;
      options.fixedPlan.paramGatherBehindOptimizer =
          options.paramGatherBehindOptimizer;
      options.fixedPlan.dpBucketPerLayerGroup = options.dpBucketPerLayerGroup;
    }

    // MoE: the experts per layer (every tfm.moe_dispatch of the model
    // builder has the same count).
    module.walk([&](tfm::MoeDispatchOp op) {
      model.experts = std::max(model.experts, int64_t(op.getNumExperts()));
    });

    // Model FLOPs per sequence (project convention: 3 × forward GEMM and
    // attention FLOPs on global shapes).
    model.flopsPerSequence = 3 * forwardFlops(module) / double(irBatch);

    // One-block copy of the model.
    OwningOpRef<ModuleOp> oneBlock = module.clone();
    if (failed(truncateToOneBlock(*oneBlock)))
      return fail("cannot reduce the model to one block per block function");

    // The context parallelism (cp > 1) the plans of a tp degree use: the
    // evaluated plan's, or each cp, attention mode (Ulysses where the heads
    // split over tp·cp) and chunk layout the search scores.
    auto contextParallelSpecs = [&](int64_t tp) {
      std::vector<planner::Candidate> specs;
      if (options.fixed) {
        if (options.fixedPlan.cp > 1)
          specs.push_back(options.fixedPlan);
        return specs;
      }
      for (int64_t cp : options.cpChoices) {
        if (cp <= 1 || options.gpus % (tp * cp))
          continue;
        for (const std::string &attention : options.cpAttentions) {
          if (attention != "ring" &&
              (model.heads % (tp * cp) || model.kvHeads % (tp * cp)))
            continue;
          planner::Candidate c;
          c.cp = cp;
          c.cpAttention = attention;
          c.cpContiguous = options.cpZigzagWhereCompilable
                               ? model.seq % (2 * cp) != 0
                               : options.cpContiguous;
          specs.push_back(c);
        }
      }
      return specs;
    };

    // Compile the layer-local configurations.
    std::map<planner::ProfileKey, planner::LocalProfile> profiles;
    auto start = std::chrono::steady_clock::now();
    int64_t compiled = 0;
    std::vector<planner::ProfileKey> configs;
    if (options.fixed) {
      configs.push_back({options.fixedPlan.tp, options.fixedPlan.sp,
                         options.fixedPlan.expertLayout()});
    } else {
      // An MoE block under tp > 1 also compiles with ep folded over the tp
      // ranks and with the experts split over them (etp = tp).
      using planner::ExpertLayout;
      SmallVector<ExpertLayout, 3> layouts = {ExpertLayout::Replicated};
      if (model.experts > 0) {
        if (llvm::any_of(options.epChoices, [](int64_t ep) { return ep > 1; }))
          layouts.push_back(ExpertLayout::OverTp);
        layouts.push_back(ExpertLayout::TensorSplit);
      }
      for (int64_t tp = 1; tp <= machine->gpusPerNode && tp <= options.gpus;
           tp *= 2) {
        if (options.gpus % tp)
          continue;
        for (ExpertLayout layout : layouts) {
          if (tp == 1 && layout != ExpertLayout::Replicated)
            continue;
          configs.push_back({tp, false, layout});
          if (tp > 1 && options.searchSp)
            configs.push_back({tp, true, layout});
        }
      }
    }
    // Recomputation modes compiled besides none: those the search (or the
    // evaluated plan) uses. A mode that does not compile falls back to the
    // analytic recomputation model.
    std::vector<std::string> modes = {"none"};
    for (StringRef mode : {"selective", "full"})
      if (options.fixed ? options.fixedPlan.recompute == mode
                        : llvm::is_contained(options.recomputes, mode))
        modes.push_back(mode.str());
    int64_t sizes = irBatch % 2 == 0 ? 2 : 1;
    auto fitv = [&](double x, double y) {
      return sizes == 1 ? planner::Affine{0, x} : planner::Affine::fit(x, y);
    };
    auto fitPhases = [&](const RawProfile &x, const RawProfile &y) {
      planner::StepMemory phases;
      for (unsigned i = 0; i < planner::kNumStepPhases; ++i) {
        const rt::CategoryBytes &u = x.phases[i], &v = y.phases[i];
        auto cat = [](const rt::CategoryBytes &c, rt::Category k) {
          return double(c[static_cast<unsigned>(k)]);
        };
        auto other = [&](const rt::CategoryBytes &c) {
          return cat(c, rt::Category::Workspace) + cat(c, rt::Category::Io);
        };
        phases[i].activation = fitv(cat(u, rt::Category::Activation),
                                    cat(v, rt::Category::Activation));
        phases[i].grad =
            fitv(cat(u, rt::Category::Grad), cat(v, rt::Category::Grad));
        phases[i].other = fitv(other(u), other(v));
        phases[i].headGrad =
            fitv(double(x.headGrads[i]), double(y.headGrads[i]));
        phases[i].nextCall = fitv(double(x.nextCall[i]), double(y.nextCall[i]));
        phases[i].nextCallSent =
            fitv(double(x.nextCallSent[i]), double(y.nextCallSent[i]));
      }
      return phases;
    };
    auto fitf = [&](const RawFunction &x, const RawFunction &y) {
      if (sizes == 2)
        return fit(x, y);
      RawFunction doubled = x; // Proportional fallback: see fit().
      return fit(x, doubled);
    };
    // The split one-block step (its I call's memory) is compiled only where
    // a zero-bubble schedule may be scored: it costs one more lowering per
    // profile.
    auto splits = [](StringRef name) {
      auto kind = pipeline::parseScheduleKind(name.str());
      return kind && pipeline::splitsBackward(*kind);
    };
    readSplitBackward =
        machine->gradBufferInFrame &&
        (options.fixed
             ? options.fixedPlan.pp > 1 && splits(options.fixedPlan.schedule)
             : options.gpus > 1 && llvm::any_of(options.schedules, splits));
    // Which gradients each rank sums over its chunk of the sequence under
    // context parallelism (reduced over dp×cp) and which it does not (a
    // position embedding's: over dp): read once, when a plan scored may
    // have cp > 1 (a partitioning only, not counted as a block
    // compilation). Without it every gradient counts as reduced over dp×cp.
    std::optional<llvm::DenseMap<unsigned, bool>> overContext;
    if (options.fixed ? options.fixedPlan.cp > 1
                      : llvm::any_of(options.cpChoices,
                                     [](int64_t cp) { return cp > 1; })) {
      overContext.emplace();
      std::string err;
      if (failed(readContextReductions(*oneBlock, *overContext, err)))
        overContext.reset();
    }
    for (const planner::ProfileKey &key : configs) {
      auto [tp, sp, layout] = key;
      // What does not compile with replicated experts (tp not dividing the
      // heads, ...) fails alike with the other layouts: one reason is enough.
      auto replicated =
          profiles.find({tp, sp, planner::ExpertLayout::Replicated});
      if (layout != planner::ExpertLayout::Replicated &&
          replicated != profiles.end() && !replicated->second.error.empty())
        continue;
      planner::LocalProfile prof;
      prof.tp = tp;
      prof.sp = sp;
      for (const std::string &mode : modes) {
        RawProfile raw[2];
        std::string error;
        for (int64_t i = 0; i < sizes && error.empty(); ++i) {
          int64_t b = i + 1;
          std::string err;
          ++compiled;
          if (failed(compileAndRead(*oneBlock, irBatch / b, key, mode,
                                    machine->gradBufferInFrame, raw[i], err)))
            error =
                llvm::formatv("tp={0}{1}{2}{3}: {4}", tp, sp ? ",sp=1" : "",
                              expertPlanKeys(key),
                              mode == "none" ? "" : ",recompute=" + mode, err)
                    .str();
        }
        if (sizes == 1)
          raw[1] = raw[0];
        RawProfile &a = raw[0], &b = raw[1];
        if (mode == "none") {
          prof.error = error;
          if (!error.empty())
            break;
        } else {
          planner::RecomputeProfile &rc =
              mode == "full" ? prof.full : prof.selective;
          rc.error = error;
          rc.compiled = error.empty();
          if (!rc.compiled)
            continue;
          rc.layerFwd = fitf(a.layerFwd, b.layerFwd);
          rc.layerBwd = fitf(a.layerBwd, b.layerBwd);
          rc.layerRecompute = fitf(a.layerRecompute, b.layerRecompute);
          rc.residualBytes = fitv(a.residual, b.residual);
          rc.frameActivationBytes = fitv(a.frame, b.frame);
          rc.phases = fitPhases(a, b);
          rc.regatherBytes = fitv(a.regather, b.regather);
          rc.rerunParams = a.rerunParams;
          rc.weightParams = a.weightParams;
          rc.rerunFrameBytes = fitv(a.rerunFrame, b.rerunFrame);
          rc.weightRecomputedBytes =
              fitv(a.weightRecomputed, b.weightRecomputed);
          continue;
        }
        prof.layerFwd = fitf(a.layerFwd, b.layerFwd);
        prof.layerBwd = fitf(a.layerBwd, b.layerBwd);
        prof.preFwd = fitf(a.preFwd, b.preFwd);
        prof.preBwd = fitf(a.preBwd, b.preBwd);
        prof.postFwd = fitf(a.postFwd, b.postFwd);
        prof.postBwd = fitf(a.postBwd, b.postBwd);
        prof.layerParams = a.layerParams;
        prof.otherParams = std::max(0.0, a.totalParams - a.layerParams);
        prof.preParams = a.preParams;
        prof.postParams = a.postParams;
        prof.headOnlyParams = a.headOnlyParams;
        prof.otherGradSliced = a.otherGradSliced;
        prof.preGradSliced = a.preGradSliced;
        prof.postGradSliced = a.postGradSliced;
        prof.layerParamTensors = a.layerTensors;
        prof.preParamTensors = a.preTensors;
        prof.postParamTensors = a.postTensors;
        prof.otherParamTensors = a.otherTensors;
        prof.expertParams = a.expertParams;
        prof.gradientReductions =
            groupGradientReductions(a, overContext ? &*overContext : nullptr);
        prof.dispatchBytes = fitv(a.dispatch, b.dispatch);
        prof.residualBytes = fitv(a.residual, b.residual);
        prof.boundaryBytes = fitv(a.boundary, b.boundary);
        prof.selectiveSavedBytes = fitv(a.selective, b.selective);
        prof.frameActivationBytes = fitv(a.frame, b.frame);
        prof.frameGradBytes = fitv(a.frameGrad, b.frameGrad);
        prof.stepParamBytes = a.totalParams * model.elementBytes;
        prof.dropoutElements = fitv(a.dropout, b.dropout);
        prof.phases = fitPhases(a, b);
        prof.regatherBytes = fitv(a.regather, b.regather);
        prof.tokenBytes = fitv(a.tokens, b.tokens);
        prof.weightGradInputBytes = fitv(a.weightInputs, b.weightInputs);
        prof.headKeptBytes = fitv(a.headKept, b.headKept);
      }
      // Under context parallelism the block's attention holds its own
      // buffers (ring attention's K/V chunks in flight and their
      // gradients, Ulysses' all-to-all results): where the static memory
      // plan is compared, the step is compiled with each cp the search
      // scores and read per phase. One that does not compile falls back to
      // the step without cp at 1/cp of the tokens.
      if (machine->gradBufferInFrame && prof.error.empty())
        for (const planner::Candidate &cp : contextParallelSpecs(key.tp))
          for (const std::string &mode : modes) {
            if (mode != "none" && !prof.recompute(mode))
              continue;
            std::string keys = planner::contextParallelPlanKeys(cp);
            RawProfile raw[2];
            std::string err;
            bool ok = true;
            for (int64_t i = 0; i < sizes && ok; ++i) {
              ++compiled;
              ok = succeeded(compileAndRead(*oneBlock, irBatch / (i + 1), key,
                                            mode, /*perRank=*/true, raw[i], err,
                                            keys));
            }
            if (!ok)
              continue;
            if (sizes == 1)
              raw[1] = raw[0];
            planner::LocalProfile::ContextParallelMemory &mem =
                prof.contextParallelMemory[{keys, mode}];
            mem.phases = fitPhases(raw[0], raw[1]);
            mem.otherGradSliced = raw[0].otherGradSliced;
            mem.preGradSliced = raw[0].preGradSliced;
            mem.postGradSliced = raw[0].postGradSliced;
            mem.regatherBytes = fitv(raw[0].regather, raw[1].regather);
            mem.weightGradInputBytes =
                fitv(raw[0].weightInputs, raw[1].weightInputs);
            mem.rerunFrameBytes = fitv(raw[0].rerunFrame, raw[1].rerunFrame);
          }
      profiles[key] = std::move(prof);
    }
    double compileSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();

    planner::SearchResult result =
        planner::search(*machine, model, profiles, options);
    result.stats.compiled = compiled;
    result.stats.compileSeconds = compileSeconds;

    std::string text;
    if (format == "json") {
      text = planner::formatReportJson(*machine, model, result, options, top);
    } else if (format == "html") {
      llvm::raw_string_ostream os(text);
      report::writePlannerHtml(*machine, model, result, options, top, os);
    } else {
      text = planner::formatReport(*machine, model, result, options, top);
    }
    if (failed(writeFile(report, text)))
      return signalPassFailure();
    if (!trace.empty() && !result.best.empty() &&
        failed(writeFile(trace, planner::chromeTrace(result.best.front()))))
      return signalPassFailure();
    // An evaluated plan the compiler cannot build is bad input, not a
    // result (one that does not fit is a result: the report says by how
    // much).
    if (options.fixed && result.best.empty())
      for (const auto &[family, why] : result.rejected)
        if (llvm::StringRef(why).starts_with("invalid")) {
          module.emitError()
              << "dist-auto-plan: evaluate=" << evaluatePlan << " is " << why;
          return signalPassFailure();
        }
    if (!result.best.empty() && !result.best.front().crossNode.empty())
      module.emitWarning() << "dist-auto-plan: the "
                           << (options.fixed ? "evaluated" : "chosen")
                           << " plan relies on groups that span nodes: "
                           << llvm::join(result.best.front().crossNode, "; ")
                           << " (cross-node=forbid rejects such plans)";
    if (!result.best.empty())
      module->setAttr(
          kAutoPlanAttrName,
          StringAttr::get(module.getContext(), result.best.front().plan.str()));
    markAllAnalysesPreserved();
  }

  /// Keeps the entries of `space` listed in `allowed` (all when `allowed`
  /// is empty); a value outside `known` is an error naming it.
  static LogicalResult restrict(std::vector<std::string> &space,
                                ArrayRef<std::string> allowed, StringRef option,
                                ArrayRef<StringRef> known, std::string &err) {
    if (allowed.empty())
      return success();
    for (const std::string &value : allowed)
      if (!llvm::is_contained(known, value)) {
        err = llvm::formatv("option '{0}': unknown value '{1}' (known: {2})",
                            option, value, llvm::join(known, ", "));
        return failure();
      }
    llvm::erase_if(space, [&](const std::string &value) {
      return !llvm::is_contained(allowed, value);
    });
    return success();
  }
  static LogicalResult restrictInts(std::vector<int64_t> &space,
                                    ArrayRef<int64_t> allowed, StringRef option,
                                    int64_t lo, int64_t hi, std::string &err) {
    if (allowed.empty())
      return success();
    for (int64_t value : allowed)
      if (value < lo || value > hi) {
        err = llvm::formatv("option '{0}': {1} is out of range [{2}, {3}]",
                            option, value, lo, hi);
        return failure();
      } else if (!llvm::is_contained(space, value)) {
        std::vector<std::string> searched;
        for (int64_t v : space)
          searched.push_back(std::to_string(v));
        err = llvm::formatv("option '{0}': {1} is not a degree the search "
                            "covers (searched: {2})",
                            option, value, llvm::join(searched, ", "));
        return failure();
      }
    llvm::erase_if(space, [&](int64_t value) {
      return !llvm::is_contained(allowed, value);
    });
    return success();
  }

  LogicalResult writeFile(StringRef path, StringRef text) {
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &error);
    if (!file)
      return getOperation().emitError() << "dist-auto-plan: " << error;
    file->os() << text;
    file->keep();
    return success();
  }

  /// Forward FLOPs (GEMM + attention) of the public `forward`, block
  /// calls expanded.
  double forwardFlops(ModuleOp module) {
    ProgramProfile profile(module);
    const FunctionProfile *fwd = profile.lookup("forward");
    if (!fwd)
      return 0;
    auto flopsOf = [](const FunctionProfile &f) {
      double total = 0;
      for (const CostRecord &c : f.work.costs)
        if (c.roofline != tfm::RooflineKind::Memory)
          total += c.cost.flops;
      return total;
    };
    double total = flopsOf(*fwd);
    for (const CallRecord &call : fwd->calls)
      if (const FunctionProfile *callee = profile.lookup(call.callee))
        total += flopsOf(*callee);
    return total;
  }

  /// Keeps the first call of every block function in `forward`; later calls
  /// are bypassed (result := hidden operand) and their weights dropped.
  LogicalResult truncateToOneBlock(ModuleOp module) {
    auto fwd = module.lookupSymbol<func::FuncOp>("forward");
    if (!fwd)
      return failure();
    llvm::StringSet<> seen;
    SmallVector<func::CallOp> drop;
    fwd.walk([&](func::CallOp call) {
      if (!seen.insert(call.getCallee()).second)
        drop.push_back(call);
    });
    for (func::CallOp call : drop) {
      if (call.getNumResults() == 0 || call.getNumOperands() == 0 ||
          call.getOperand(0).getType() != call.getResult(0).getType())
        return failure();
      // Further results must be scalar side losses (an MoE block's
      // load-balancing loss, summed over the layers): a dropped block adds 0.
      OpBuilder b(call);
      for (Value extra : call.getResults().drop_front()) {
        auto type = dyn_cast<RankedTensorType>(extra.getType());
        if (!type || type.getRank() != 0 ||
            !isa<FloatType>(type.getElementType()))
          return failure();
        extra.replaceAllUsesWith(mlir::arith::ConstantOp::create(
            b, call.getLoc(),
            DenseElementsAttr::get(
                type, b.getFloatAttr(type.getElementType(), 0.0))));
      }
      call.getResult(0).replaceAllUsesWith(call.getOperand(0));
      call.erase();
    }
    // Drop dead ops (layer-index constants) and unused arguments.
    for (Operation &op :
         llvm::make_early_inc_range(llvm::reverse(fwd.getBody().front())))
      if (op.use_empty() && !op.hasTrait<OpTrait::IsTerminator>() &&
          isPure(&op))
        op.erase();
    llvm::BitVector unused(fwd.getNumArguments());
    for (unsigned i = 0, e = fwd.getNumArguments(); i < e; ++i)
      if (fwd.getArgument(i).use_empty() &&
          fwd.getArgAttr(i, tfm::kParamAttrName))
        unused.set(i);
    if (failed(fwd.eraseArguments(unused)))
      return failure();
    return success();
  }

  /// Reads into `overContext`, by step argument number, whether the
  /// one-block model partitioned with cp = 2 (tfm-autodiff and
  /// dist-partition, as compileAndRead reads its programs) reduces each
  /// parameter's gradient over the context-parallel axis (reducedOver): a
  /// gradient each rank sums over its chunk of the sequence. Fails, with
  /// the reason in `err`, when it does not partition so (e.g. an odd
  /// sequence length).
  LogicalResult
  readContextReductions(ModuleOp oneBlock,
                        llvm::DenseMap<unsigned, bool> &overContext,
                        std::string &err) {
    OwningOpRef<ModuleOp> copy = oneBlock.clone();
    auto partition = [&](OpPassManager &pm) {
      pm.addPass(tfm::createTfmAutodiff());
      DistPartitionPipelineOptions options;
      options.plan = "cp=2";
      options.stopAfterPartition = true;
      buildDistPartitionPipeline(pm, options);
    };
    if (failed(dist::runPassPipeline(*copy, partition, err)))
      return failure();
    ProgramProfile profile(*copy);
    llvm::Expected<TrainStepProfile> read = profile.getTrainStep();
    if (!read) {
      err = llvm::toString(read.takeError());
      return failure();
    }
    auto step = cast<func::FuncOp>(read->step->op);
    for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i)
      if (step.getArgAttr(i, tfm::kParamAttrName))
        overContext[i] =
            reducedOver(updateGradient(step.getArgument(i))).context;
    return success();
  }

  /// Compiles the one-block model with plan dp=`dp`,tp,sp (and the plan
  /// keys `extraKeys`, e.g. context parallelism's) and
  /// recomputation `mode` (tfm-recompute right after tfm-autodiff, as
  /// scripts/train.sh does; nothing for "none") and reads it: its per-rank
  /// functions after dist-partition, then its static memory plan, with
  /// `perRank` (a cluster whose gradients live in the frame: the plan is
  /// compared with the compiled program's) after the per-rank passes a
  /// compile runs (buildDistPerRankPipeline: bucketed, prefetched
  /// collectives), else right after dist-partition.
  /// Whether compileAndRead also reads the one-block step with its block
  /// backward split (StepPhase::BlockInput): a zero-bubble schedule may be
  /// scored.
  bool readSplitBackward = true;

  LogicalResult compileAndRead(ModuleOp oneBlock, int64_t dp,
                               const planner::ProfileKey &key, StringRef mode,
                               bool perRank, RawProfile &raw, std::string &err,
                               StringRef extraKeys = "") {
    OwningOpRef<ModuleOp> copy = oneBlock.clone();
    std::string plan = llvm::formatv("dp={0},tp={1},sp={2}{3}", dp, key.tp,
                                     key.sp ? 1 : 0, expertPlanKeys(key));
    if (!extraKeys.empty())
      plan += "," + extraKeys.str();
    if (mode != "none")
      plan += ",recompute=" + mode.str();
    auto partition = [&](OpPassManager &pm) {
      pm.addPass(tfm::createTfmAutodiff());
      if (mode != "none") {
        tfm::TfmRecomputeOptions recompute;
        recompute.mode = mode.str();
        pm.addPass(tfm::createTfmRecompute(recompute));
      }
      DistPartitionPipelineOptions options;
      options.plan = plan;
      options.stopAfterPartition = true;
      buildDistPartitionPipeline(pm, options);
    };
    if (failed(dist::runPassPipeline(*copy, partition, err)))
      return failure();
    if (failed(readProgram(*copy, raw, err)))
      return failure();
    auto lower = [&](OpPassManager &pm) {
      if (perRank)
        buildDistPerRankPipeline(pm, /*overlap=*/true);
      rt::buildRtLoweringPipeline(pm, /*fuseEpilogues=*/true);
    };
    // The same step with its block backward split as a zero-bubble schedule
    // runs it: the memory plan at its input-gradient call.
    OwningOpRef<ModuleOp> split = copy->clone();
    if (auto step = readSplitBackward
                        ? split->lookupSymbol<func::FuncOp>(raw.stepName)
                        : nullptr) {
      Operation *loss = nullptr;
      BackwardCallSplitter splitter(*split);
      if (auto parts =
              splitFirstBackward(step, raw.backwardName, splitter, loss)) {
        std::string input = parts->first.getCallee().str();
        std::string weight = parts->second.getCallee().str();
        if (failed(dist::runPassPipeline(*split, lower, err)))
          return failure();
        for (auto rtStep : split->getOps<rt::FuncOp>())
          if (rtStep.isEntry() && *rtStep.getEntry() == "train_step" &&
              failed(readInputPhase(rtStep, input, weight, raw, err)))
            return failure();
      }
    }
    if (failed(dist::runPassPipeline(*copy, lower, err)))
      return failure();
    for (auto step : copy->getOps<rt::FuncOp>()) {
      if (!step.isEntry() || *step.getEntry() != "train_step")
        continue;
      if (DictionaryAttr peak = step.getPeakBreakdownAttr()) {
        if (auto act = peak.getAs<IntegerAttr>("activation"))
          raw.frame = double(act.getInt());
        if (auto grad = peak.getAs<IntegerAttr>("grad"))
          raw.frameGrad = double(grad.getInt());
      }
      if (failed(readPhases(step, raw, err)))
        return failure();
    }
    return success();
  }
};

} // namespace
} // namespace autoshard::dist
