//===- DistApplyPlan.cpp - Mesh and seed shardings from a plan ------------===//
//
// Turns a plan (Plan.h) into `dist.mesh @mesh`, the `dist.plan` module
// attribute and `dist.sharding` seeds on the entry functions' arguments and
// results, chosen by the builder's role attributes (spec/sharding.md §1).
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Dist/Transforms/Plan.h"
#include "autoshard/Dialect/Tfm/IR/TfmAttrNames.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace autoshard::dist {
#define GEN_PASS_DEF_DISTAPPLYPLAN
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace autoshard::dist

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

constexpr StringLiteral kMeshName = "mesh";

/// Per dim, the axes it is split over.
using DimAxes = SmallVector<SmallVector<StringRef>>;

StringRef getStrAttr(DictionaryAttr attrs, StringRef name) {
  if (!attrs)
    return {};
  if (auto s = attrs.getAs<StringAttr>(name))
    return s.getValue();
  return {};
}

/// A weight tensor parallelism splits by columns (Megatron's
/// column-parallel linears).
bool isColumnRole(std::optional<tfm::Role> role) {
  using tfm::Role;
  return role == Role::AttnQ || role == Role::AttnK || role == Role::AttnV ||
         role == Role::MlpUp || role == Role::MlpGate;
}

class Seeder {
public:
  Seeder(ModuleOp module, const Plan &plan)
      : module(module), plan(plan), ctx(module.getContext()),
        meshRef(FlatSymbolRefAttr::get(ctx, kMeshName)) {}

  LogicalResult run();

private:
  ShardingAttr toAttr(const DimAxes &dims) {
    SmallVector<ArrayAttr> attrs;
    for (const auto &axes : dims) {
      SmallVector<Attribute> names;
      for (StringRef axis : axes)
        names.push_back(StringAttr::get(ctx, axis));
      attrs.push_back(ArrayAttr::get(ctx, names));
    }
    return ShardingAttr::get(ctx, meshRef, attrs);
  }
  /// The name of the plan's mesh axis of role `role`.
  static StringRef axisName(AxisRole role) { return Plan::getAxisName(role); }
  int64_t axisSize(StringRef name) const {
    for (const Plan::MeshAxis &meshAxis : plan.getMeshAxes())
      if (meshAxis.name == name)
        return meshAxis.size;
    return 1;
  }
  int64_t product(ArrayRef<StringRef> axes) const {
    int64_t p = 1;
    for (StringRef axis : axes)
      p *= axisSize(axis);
    return p;
  }
  /// The mesh axes of the data-parallel ranks, major to minor: `dp`, then
  /// `ep` when expert parallelism folds over them (the batch is split on
  /// these, and dense gradients are reduced over them).
  SmallVector<StringRef> dataAxes() const {
    SmallVector<StringRef> axes;
    if (plan.getExpertDataParallel() > 1)
      axes.push_back(axisName(AxisRole::Data));
    if (plan.getExpertParallelOverDp() > 1)
      axes.push_back(axisName(AxisRole::Expert));
    return axes;
  }
  /// The mesh axes of the ep group, major to minor: `ep` (its dp part),
  /// `cp` (every cp rank of a sequence) under context parallelism and `tp`
  /// (every tp rank) when the experts are not split over it (etp = 1).
  SmallVector<StringRef> expertAxes() const {
    SmallVector<StringRef> axes;
    if (plan.ep > 1 && plan.getExpertParallelOverDp() > 1)
      axes.push_back(axisName(AxisRole::Expert));
    if (plan.getExpertParallelOverCp() > 1)
      axes.push_back(axisName(AxisRole::Context));
    if (plan.getExpertParallelOverTp() > 1)
      axes.push_back(axisName(AxisRole::Tensor));
    return axes;
  }
  LogicalResult checkModelDims();
  FailureOr<DimAxes> paramSharding(func::FuncOp fn, unsigned index);
  SmallVector<StringRef> zeroAxes(bool expert) const;
  void addZero(DimAxes &dims, ArrayRef<int64_t> shape, StringRef name,
               bool expert);
  void constrainExperts(func::FuncOp fn);
  LogicalResult constrainUlysses(func::FuncOp fn);
  LogicalResult seedFunction(func::FuncOp fn);
  void constrainGradients(func::FuncOp fn);
  LogicalResult constrainSequence(func::FuncOp fn);

  ModuleOp module;
  const Plan &plan;
  MLIRContext *ctx;
  FlatSymbolRefAttr meshRef;
  /// Parameter / state name -> its seed, for the matching results.
  llvm::StringMap<DimAxes> byName;
  /// Parameters / states that are expert weights (sharded on `ep`; ZeRO on
  /// the expert-data-parallel axis `dp` only).
  llvm::StringSet<> expertNames;
  llvm::SmallVector<std::string> zeroUnsharded;
  llvm::StringSet<> zeroUnshardedSet;
};

/// Checks the model-level divisibility rules of TP and EP from `tfm.model`
/// and the MoE ops.
LogicalResult Seeder::checkModelDims() {
  auto model = module->getAttrOfType<DictionaryAttr>(tfm::kModelAttrName);
  if (plan.ep > 1) {
    int64_t experts = 0;
    module.walk([&](tfm::MoeDispatchOp op) {
      experts = std::max<int64_t>(experts, op.getNumExperts());
    });
    if (experts == 0)
      return module.emitError()
             << "plan ep=" << plan.ep
             << ": the model has no experts (no tfm.moe_dispatch); expert "
                "parallelism needs an MoE model (use ep=1)";
    WalkResult walk = module.walk([&](tfm::MoeDispatchOp op) {
      if (op.getNumExperts() % plan.ep == 0)
        return WalkResult::advance();
      op.emitError() << "plan ep=" << plan.ep
                     << ": the model's num_experts = " << op.getNumExperts()
                     << " is not divisible by ep";
      return WalkResult::interrupt();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  if (plan.tp == 1)
    return success();
  if (!model)
    return success();
  for (StringRef key : {"num_heads", "num_kv_heads", "ffn_hidden_size",
                        "padded_vocab_size", "num_experts"}) {
    auto value = model.getAs<IntegerAttr>(key);
    if (!value || key == "num_experts")
      continue;
    if (value.getInt() % plan.tp != 0)
      return module.emitError()
             << "plan tp=" << plan.tp << ": the model's " << key << " = "
             << value.getInt() << " is not divisible by tp"
             << (key == "padded_vocab_size"
                     ? " (pad the vocabulary: --vocab-multiple)"
                     : "");
  }
  return success();
}

/// The ZeRO group's axes in mesh order: the data-parallel axes (`dp`, and
/// `ep` under expert parallelism) and `cp` (context-parallel ranks hold the
/// same weights and sum the same gradients, so Megatron's distributed
/// optimizer shards over DP x CP), those of size > 1. For an expert weight
/// only `dp`, its expert-data-parallel group (`ep`, and `cp` when the ep
/// group folds over it, split the experts themselves).
SmallVector<StringRef> Seeder::zeroAxes(bool expert) const {
  SmallVector<StringRef> axes = dataAxes();
  if (expert)
    llvm::erase(axes, axisName(AxisRole::Expert));
  if (plan.cp > 1 && !(expert && plan.ep > 1))
    axes.push_back(axisName(AxisRole::Context));
  return axes;
}

/// Adds the ZeRO axes (`zeroAxes`) as the minor axes of the first dim (dim 0
/// preferred) that stays divisible; records `name` when no dim is. Minor, as
/// Megatron's distributed optimizer does: the state is the rank's TP shard
/// split over the ZeRO group, so a TP-sharded gradient is reduced to it by
/// one reduce-scatter over the group and the updated parameter is restored
/// by one all-gather over it.
void Seeder::addZero(DimAxes &dims, ArrayRef<int64_t> shape, StringRef name,
                     bool expert) {
  SmallVector<StringRef> group = zeroAxes(expert);
  if (group.empty())
    return;
  int64_t size = product(group);
  for (unsigned d = 0; d < dims.size(); ++d) {
    if (shape[d] % (product(dims[d]) * size) != 0)
      continue;
    llvm::append_range(dims[d], group);
    return;
  }
  if (zeroUnshardedSet.insert(name).second)
    zeroUnsharded.push_back(name.str());
}

/// TP seed of parameter argument `index` by its role.
FailureOr<DimAxes> Seeder::paramSharding(func::FuncOp fn, unsigned index) {
  DictionaryAttr attrs = fn.getArgAttrDict(index);
  auto type = cast<RankedTensorType>(fn.getArgumentTypes()[index]);
  DimAxes dims(type.getRank());
  StringRef role = getStrAttr(attrs, tfm::kRoleAttrName);
  std::optional<tfm::Role> kind = tfm::symbolizeRole(role);
  StringRef name = getStrAttr(attrs, tfm::kParamAttrName);
  bool isBias = kind == tfm::Role::Bias;
  if (plan.tp > 1) {
    std::optional<unsigned> dim;
    if (isColumnRole(kind) || kind == tfm::Role::LmHead)
      dim = type.getRank() - 1;
    else if (kind == tfm::Role::AttnOut || kind == tfm::Role::MlpDown ||
             kind == tfm::Role::Embedding)
      dim = 0;
    else if (isBias && isColumnRole(tfm::symbolizeRole(
                           getStrAttr(attrs, tfm::kBiasOfAttrName))))
      dim = type.getRank() - 1;
    if (dim && type.getRank() >= 1) {
      if (type.getRank() != (isBias ? 1 : 2))
        return fn.emitError()
               << "plan tp=" << plan.tp << ": parameter '" << name
               << "' with role '" << role << "' has rank " << type.getRank()
               << ", expected " << (isBias ? 1 : 2);
      if (type.getDimSize(*dim) % plan.tp != 0)
        return fn.emitError()
               << "plan tp=" << plan.tp << ": dim " << *dim << " (size "
               << type.getDimSize(*dim) << ") of parameter '" << name
               << "' (role '" << role << "') is not divisible by tp"
               << (kind && tfm::isVocabRole(*kind)
                       ? " (pad the vocabulary: --vocab-multiple)"
                       : "");
      dims[*dim].push_back(axisName(AxisRole::Tensor));
    }
  }
  if (plan.etp > 1 && kind && tfm::isExpertRole(*kind)) {
    // Expert tensor parallelism: every expert split as a Megatron MLP, the
    // up and gate projections `[E, H, F]` by columns, the down projection
    // `[E, F, H]` by rows (its result is partial over tp).
    unsigned ffnDim = *kind == tfm::Role::ExpertDown ? 1 : 2;
    if (type.getRank() != 3)
      return fn.emitError()
             << "plan etp=" << plan.etp << ": expert weight '" << name
             << "' (role '" << role << "') has rank " << type.getRank()
             << ", expected 3 ([E, H, F] or [E, F, H])";
    if (type.getDimSize(ffnDim) % plan.etp != 0)
      return fn.emitError()
             << "plan etp=" << plan.etp << ": the ffn dim " << ffnDim
             << " (size " << type.getDimSize(ffnDim) << ") of expert weight '"
             << name << "' (role '" << role << "') is not divisible by etp";
    dims[ffnDim].push_back(axisName(AxisRole::Tensor));
  }
  if (plan.ep > 1 && kind && tfm::isExpertRole(*kind)) {
    // Expert parallelism: each ep rank holds E/ep whole experts.
    if (type.getRank() < 1 || type.getDimSize(0) % plan.ep != 0)
      return fn.emitError()
             << "plan ep=" << plan.ep << ": the expert dim 0 (size "
             << (type.getRank() ? type.getDimSize(0) : 0) << ") of parameter '"
             << name << "' (role '" << role << "') is not divisible by ep";
    SmallVector<StringRef> group = expertAxes();
    dims[0].insert(dims[0].begin(), group.begin(), group.end());
    expertNames.insert(name);
  }
  if (plan.zero == 3)
    addZero(dims, type.getShape(), name, expertNames.contains(name));
  return dims;
}

LogicalResult Seeder::seedFunction(func::FuncOp fn) {
  StringRef attrName = DistDialect::getShardingAttrName();
  // The forward-only entry that returns logits (sampling) takes whole
  // sequences: the sampler feeds a growing context, so under CP each cp rank
  // runs it on the whole sequence (no ring); the training entries split it.
  bool wholeSequences = false;
  for (unsigned r = 0, e = fn.getNumResults(); r < e; ++r)
    wholeSequences |=
        getStrAttr(fn.getResultAttrDict(r), tfm::kOutputAttrName) == "logits";
  // Parameters first, so that states can copy their parameter's sharding.
  SmallVector<std::pair<unsigned, DimAxes>> seeds;
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
    DictionaryAttr attrs = fn.getArgAttrDict(i);
    if (getStrAttr(attrs, tfm::kParamAttrName).empty())
      continue;
    FailureOr<DimAxes> dims = paramSharding(fn, i);
    if (failed(dims))
      return failure();
    byName[getStrAttr(attrs, tfm::kParamAttrName)] = *dims;
    seeds.emplace_back(i, *dims);
  }
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
    DictionaryAttr attrs = fn.getArgAttrDict(i);
    auto type = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[i]);
    if (!type || !getStrAttr(attrs, tfm::kParamAttrName).empty())
      continue;
    DimAxes dims(type.getRank());
    StringRef input = getStrAttr(attrs, tfm::kInputAttrName);
    StringRef state = getStrAttr(attrs, tfm::kStateAttrName);
    if ((input == "tokens" || input == "labels") && type.getRank() >= 1 &&
        plan.dp > 1) {
      // The batch is split over every data-parallel rank: `dp`, and `ep`
      // when expert parallelism folds over them.
      if (type.getDimSize(0) % plan.dp != 0)
        return fn.emitError()
               << "plan dp=" << plan.dp << ": the batch dim of input '" << input
               << "' (size " << type.getDimSize(0)
               << ") is not divisible by dp";
      // Each rank's rows must hold whole groups of mb rows (tfm.microbatch
      // of the step's batch; @logits takes one microbatch, unsliced).
      bool sliced =
          llvm::any_of(fn.getArgument(i).getUsers(),
                       [](Operation *u) { return isa<tfm::MicrobatchOp>(u); });
      if (sliced && type.getDimSize(0) % (plan.dp * plan.mb) != 0)
        return fn.emitError() << "plan dp=" << plan.dp << ",mb=" << plan.mb
                              << ": the microbatch of input '" << input << "' ("
                              << type.getDimSize(0) / plan.mb
                              << " rows) is not divisible by dp";
      dims[0] = dataAxes();
    }
    if ((input == "tokens" || input == "labels") && type.getRank() >= 2 &&
        plan.cp > 1 && !wholeSequences) {
      // CP: the sequence dim, contiguous chunks (rank i of cp holds
      // positions [i S/cp, (i+1) S/cp)).
      if (type.getDimSize(1) % plan.cp != 0)
        return fn.emitError()
               << "plan cp=" << plan.cp << ": the sequence dim of input '"
               << input << "' (size " << type.getDimSize(1)
               << ") is not divisible by cp";
      dims[1].push_back(axisName(AxisRole::Context));
    } else if (!state.empty()) {
      StringRef of = getStrAttr(attrs, tfm::kStateOfAttrName);
      bool expert = expertNames.contains(of);
      if (expert)
        expertNames.insert(state);
      auto it = byName.find(of);
      if (it != byName.end() && it->second.size() == dims.size()) {
        dims = it->second;
        // ZeRO-3 parameters already carry dp; states follow them.
        if (plan.zero >= 1 && plan.zero < 3)
          addZero(dims, type.getShape(), state, expert);
        else if (plan.zero == 3 && llvm::none_of(dims, [&](const auto &axes) {
                   return llvm::any_of(axes, [&](StringRef axis) {
                     return llvm::is_contained(zeroAxes(false), axis);
                   });
                 }))
          addZero(dims, type.getShape(), state, expert);
      } else if (plan.zero >= 1) {
        addZero(dims, type.getShape(), state, expert);
      }
      byName[state] = dims;
    }
    seeds.emplace_back(i, dims);
  }
  for (auto &[i, dims] : seeds) {
    ShardingAttr seed = toAttr(dims);
    DictionaryAttr attrs = fn.getArgAttrDict(i);
    auto annotated = fn.getArgAttrOfType<ShardingAttr>(i, attrName);
    bool hasRole = !getStrAttr(attrs, tfm::kParamAttrName).empty() ||
                   !getStrAttr(attrs, tfm::kStateAttrName).empty() ||
                   !getStrAttr(attrs, tfm::kInputAttrName).empty();
    if (annotated && !hasRole)
      continue; // the user's layout for an argument the plan has no say on
    if (annotated && annotated != seed) {
      StringRef name = getStrAttr(attrs, tfm::kParamAttrName);
      if (name.empty())
        name = getStrAttr(attrs, tfm::kStateAttrName);
      if (name.empty())
        name = getStrAttr(attrs, tfm::kInputAttrName);
      return fn.emitError()
             << "dist-apply-plan: conflicting annotation: argument #" << i
             << " ('" << name << "') of @" << fn.getSymName()
             << " is annotated " << annotated << " in the IR, but plan '"
             << plan.str() << "' lays it out as " << seed
             << "; the plan decides the layout of parameters, optimizer "
                "states and inputs (remove the annotation or change the plan)";
    }
    fn.setArgAttr(i, attrName, seed);
  }
  // Results: state outputs copy their argument's sharding, scalar outputs
  // are replicated, the rest is left to dist-propagate.
  for (unsigned r = 0, e = fn.getNumResults(); r < e; ++r) {
    DictionaryAttr attrs = fn.getResultAttrDict(r);
    auto type = dyn_cast<RankedTensorType>(fn.getResultTypes()[r]);
    if (!type)
      continue;
    StringRef name = getStrAttr(attrs, tfm::kParamAttrName);
    if (name.empty())
      name = getStrAttr(attrs, tfm::kStateAttrName);
    if (!name.empty()) {
      auto it = byName.find(name);
      if (it != byName.end() &&
          it->second.size() == static_cast<size_t>(type.getRank()))
        fn.setResultAttr(r, attrName, toAttr(it->second));
    } else if (type.getRank() == 0) {
      fn.setResultAttr(r, attrName, toAttr({}));
    } else if (getStrAttr(attrs, tfm::kOutputAttrName) == "logits") {
      // Whole rows for sampling: the vocabulary-parallel logits are gathered
      // over tp once, at the end of the forward-only entry (training never
      // gathers them); the batch stays on dp.
      DimAxes dims(type.getRank());
      if (plan.dp > 1 && type.getDimSize(0) % plan.dp == 0)
        dims[0] = dataAxes();
      fn.setResultAttr(r, attrName, toAttr(dims));
    }
  }
  return success();
}

/// ZeRO >= 2: pins each parameter's final gradient (the gradient its
/// optimizer update reads, tfm::TfmParameterUpdateOpInterface) to the
/// sharding of its optimizer state, right after the gradient is produced.
void Seeder::constrainGradients(func::FuncOp fn) {
  StringRef attrName = DistDialect::getShardingAttrName();
  SmallVector<tfm::TfmParameterUpdateOpInterface> updates;
  fn.walk(
      [&](tfm::TfmParameterUpdateOpInterface op) { updates.push_back(op); });
  for (tfm::TfmParameterUpdateOpInterface op : updates) {
    SmallVector<Value, 2> states = op.getOptimizerStates();
    auto state = states.empty() ? BlockArgument()
                                : dyn_cast<BlockArgument>(states.front());
    if (!state || state.getOwner() != &fn.getBody().front())
      continue;
    auto sharding =
        fn.getArgAttrOfType<ShardingAttr>(state.getArgNumber(), attrName);
    if (!sharding || sharding.isReplicated())
      continue;
    Value grad = op.getParameterGradient();
    OpBuilder b(ctx);
    if (Operation *def = grad.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(&fn.getBody().front());
    auto constraint =
        ShardingConstraintOp::create(b, op.getLoc(), grad, sharding);
    grad.replaceAllUsesExcept(constraint.getResult(), constraint);
  }
}

/// EP: pins the MoE capacity buffers `[E, B, C, H]` on both sides of each
/// boundary between the token side and the expert side: the token layout
/// `[{}, {dp, ep}, {}, {}]` (the sequences of each rank, as the tokens) and
/// the expert layout `[{ep}, {dp}, {}, {}]` (each rank holds its E/ep
/// experts' slots of the sequences of its expert-data-parallel group). The
/// boundaries are the result of `tfm.moe_dispatch` (token, then expert), the
/// `buf` operand of `tfm.moe_combine` (expert, then token), the `dbuf` result
/// of `tfm.moe_combine_grad` (token, then expert) and the `dbuf` operand of
/// `tfm.moe_dispatch_grad` (expert, then token); `tfm.moe_combine_grad`'s
/// `buf` operand (the forward's saved expert outputs) is pinned to the token
/// layout, as the forward saves it.
/// Routing, dispatch and combine thus run on each rank's own sequences
/// (exactly the 1-rank ops restricted to them), the expert matmuls follow
/// the expert weights (`E` on `ep`), and dist-partition derives one
/// `dist.all_to_all` over `ep` at each boundary (four per MoE layer).
/// Each constraint says that the buffer is ragged along `C` (each slot's
/// tokens first, then zero rows): those all-to-alls move only the rows in
/// use (dropless MoE without worst-case traffic; issue 18).
void Seeder::constrainExperts(func::FuncOp fn) {
  constexpr uint64_t kCapacityDim = 2; // [E, B, C, H]
  auto bufType = [&](Value v) -> RankedTensorType {
    auto buf = dyn_cast<RankedTensorType>(v.getType());
    if (!buf || buf.getRank() != 4 || buf.getDimSize(0) % plan.ep != 0 ||
        buf.getDimSize(1) % plan.dp != 0)
      return {};
    return buf;
  };
  auto tokenLayout = [&]() {
    DimAxes dims(4);
    dims[1] = dataAxes();
    return toAttr(dims);
  };
  auto expertLayout = [&]() {
    DimAxes dims(4);
    dims[0] = expertAxes();
    if (plan.getExpertDataParallel() > 1)
      dims[1].push_back(axisName(AxisRole::Data));
    return toAttr(dims);
  };
  // Operand `i` of `op` through constraints to `layouts` (in order).
  auto pinOperand = [&](Operation *op, unsigned i,
                        ArrayRef<ShardingAttr> layouts) {
    if (!bufType(op->getOperand(i)))
      return;
    OpBuilder b(op);
    for (ShardingAttr s : layouts) {
      auto c =
          ShardingConstraintOp::create(b, op->getLoc(), op->getOperand(i), s);
      c.setRaggedDim(kCapacityDim);
      op->setOperand(i, c.getResult());
    }
  };
  // The users of `result` through constraints to `layouts` (in order).
  auto pinResult = [&](Value result, ArrayRef<ShardingAttr> layouts) {
    if (!bufType(result))
      return;
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : result.getUses())
      uses.push_back(&use);
    OpBuilder b(ctx);
    b.setInsertionPointAfter(result.getDefiningOp());
    Value v = result;
    for (ShardingAttr s : layouts) {
      auto c = ShardingConstraintOp::create(b, result.getLoc(), v, s);
      c.setRaggedDim(kCapacityDim);
      b.setInsertionPointAfter(c);
      v = c.getResult();
    }
    for (OpOperand *use : uses)
      use->set(v);
  };
  ShardingAttr token = tokenLayout(), expert = expertLayout();
  // Expert -> token when the ep group spans dp and cp or tp ranks: first
  // gather the cp and tp parts (their ranks hold the same sequences), then
  // one all-to-all over `ep`; without the middle step the resharder gathers
  // over all of them and slices (ep x the volume).
  SmallVector<ShardingAttr, 3> expertToToken = {expert, token};
  if (plan.getExpertParallelOverDp() > 1 && expertAxes().size() > 1) {
    DimAxes middle(4);
    middle[0].push_back(axisName(AxisRole::Expert));
    if (plan.getExpertDataParallel() > 1)
      middle[1].push_back(axisName(AxisRole::Data));
    expertToToken.insert(expertToToken.begin() + 1, toAttr(middle));
  }
  SmallVector<Operation *> ops;
  fn.walk([&](Operation *op) {
    if (isa<tfm::MoeDispatchOp, tfm::MoeCombineOp, tfm::MoeCombineGradOp,
            tfm::MoeDispatchGradOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    if (auto d = dyn_cast<tfm::MoeDispatchOp>(op)) {
      pinResult(d.getBuf(), {token, expert});
    } else if (auto c = dyn_cast<tfm::MoeCombineOp>(op)) {
      // Every use of the expert outputs, so that a forward that saves them
      // for the backward's `tfm.moe_combine_grad` saves the token layout
      // (one all-to-all, not two).
      if (c.getBuf().getDefiningOp())
        pinResult(c.getBuf(), expertToToken);
      else
        pinOperand(op, 0, expertToToken);
    } else if (auto g = dyn_cast<tfm::MoeCombineGradOp>(op)) {
      pinOperand(op, 1, {token});
      pinResult(g.getDbuf(), {token, expert});
    } else if (isa<tfm::MoeDispatchGradOp>(op)) {
      pinOperand(op, 0, expertToToken);
    }
  }
}

/// Ulysses (cp_attention=ulysses; DeepSpeed-Ulysses, Jacobs et al. 2023,
/// algorithms.md §2.5): pins each `tfm.attention`'s q/k/v and each
/// `tfm.attention_grad`'s tensor operands first to the sequence layout
/// (`[B, S, H, D]` as `[{data}, {cp}, {tp}, {}]`, lse `[{data}, {tp}, {cp}]`)
/// and then to the head layout (`[{data}, {}, {tp, cp}, {}]`, lse
/// `[{data}, {tp, cp}, {}]`), and their results the other way round. Each
/// pair of constraints becomes one `dist.all_to_all` over `cp` in
/// dist-partition (the resharder moves `cp` from the sequence dim to the
/// head dim), and the attention between them is the ordinary per-head op on
/// whole sequences: causal masks, scale and lse need nothing new. The
/// sequence pins keep the head split from propagating into the
/// projections and RoPE, which stay on sequence chunks.
LogicalResult Seeder::constrainUlysses(func::FuncOp fn) {
  int64_t split = plan.tp * plan.cp;
  // `[B, S, H, D]` (or lse `[B, H, S]`) in the two layouts.
  auto layouts = [&](RankedTensorType type, bool isLse) {
    DimAxes seq(type.getRank()), heads(type.getRank());
    SmallVector<StringRef> data = dataAxes();
    if (!data.empty() && type.getDimSize(0) % product(data) == 0)
      seq[0] = heads[0] = data;
    unsigned headDim = isLse ? 1 : 2, seqDim = isLse ? 2 : 1;
    if (plan.tp > 1)
      seq[headDim].push_back(axisName(AxisRole::Tensor));
    seq[seqDim].push_back(axisName(AxisRole::Context));
    heads[headDim] = seq[headDim];
    heads[headDim].push_back(axisName(AxisRole::Context));
    return std::make_pair(toAttr(seq), toAttr(heads));
  };
  auto checkHeads = [&](Operation *op, Value v,
                        StringRef what) -> LogicalResult {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getDimSize(2) % split == 0 && type.getDimSize(1) % plan.cp == 0)
      return success();
    if (type.getDimSize(1) % plan.cp != 0)
      return op->emitError()
             << "plan cp=" << plan.cp << ",cp_attention=ulysses: the sequence "
             << "length " << type.getDimSize(1) << " is not divisible by cp";
    return op->emitError() << "plan cp=" << plan.cp
                           << ",cp_attention=ulysses: " << what << " has "
                           << type.getDimSize(2) << " heads, not divisible by "
                           << (plan.tp > 1 ? "tp*cp=" : "cp=") << split
                           << " (Ulysses splits the heads over tp and cp; use "
                              "cp_attention=ring or a smaller cp)";
  };
  // Value in the sequence layout -> the same value in the head layout,
  // where this function already has it (a forward attention's q/k/v and
  // out/lse), so that a backward in the same function (full recompute) and
  // the forward's saved tensors reuse it instead of another all-to-all.
  llvm::DenseMap<Value, Value> headOf;
  auto pinOperand = [&](Operation *op, unsigned i, bool isLse) {
    Value v = op->getOperand(i);
    if (Value head = headOf.lookup(v)) {
      op->setOperand(i, head);
      return;
    }
    auto [seq, heads] = layouts(cast<RankedTensorType>(v.getType()), isLse);
    OpBuilder b(op);
    // A block argument (a tensor the forward saved) takes whichever layout
    // the forward returns it in: only the head pin.
    SmallVector<ShardingAttr, 2> pins;
    if (!isa<BlockArgument>(v))
      pins.push_back(seq);
    pins.push_back(heads);
    for (ShardingAttr s : pins) {
      auto c =
          ShardingConstraintOp::create(b, op->getLoc(), op->getOperand(i), s);
      op->setOperand(i, c.getResult());
    }
    headOf[v] = op->getOperand(i);
  };
  SmallVector<ShardingConstraintOp> backPins;
  auto pinResult = [&](Value result, bool isLse) {
    if (result.use_empty()) // e.g. lse outside training: no all-to-all
      return;
    auto [seq, heads] =
        layouts(cast<RankedTensorType>(result.getType()), isLse);
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : result.getUses())
      uses.push_back(&use);
    OpBuilder b(ctx);
    b.setInsertionPointAfter(result.getDefiningOp());
    auto head = ShardingConstraintOp::create(b, result.getLoc(), result, heads);
    b.setInsertionPointAfter(head);
    auto back = ShardingConstraintOp::create(b, result.getLoc(), head, seq);
    for (OpOperand *use : uses)
      use->set(back);
    headOf[back] = head;
    backPins.push_back(back);
  };
  SmallVector<Operation *> ops;
  fn.walk([&](Operation *op) {
    if (isa<tfm::AttentionOp, tfm::AttentionGradOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    if (auto attn = dyn_cast<tfm::AttentionOp>(op)) {
      if (failed(checkHeads(op, attn.getQ(), "the attention's query")) ||
          failed(checkHeads(op, attn.getK(), "the attention's key/value")))
        return failure();
      for (unsigned i = 0; i < 3; ++i)
        pinOperand(op, i, /*isLse=*/false);
      pinResult(attn.getOut(), /*isLse=*/false);
      pinResult(attn.getLse(), /*isLse=*/true);
    } else {
      auto grad = cast<tfm::AttentionGradOp>(op);
      if (failed(checkHeads(op, grad.getQ(), "the attention's query")) ||
          failed(checkHeads(op, grad.getK(), "the attention's key/value")))
        return failure();
      // dout, q, k, v, out, lse.
      for (unsigned i = 0; i < 6; ++i)
        pinOperand(op, i, /*isLse=*/i == 5);
      for (Value r : op->getResults())
        pinResult(r, /*isLse=*/false);
    }
  }
  // The forward saves q/k/v/out/lse for the backward in the head layout
  // (Megatron and DeepSpeed keep the attention's inputs and outputs as the
  // attention saw them): the backward then needs all-to-alls only for dout
  // in and dq/dk/dv out.
  fn.walk([&](func::ReturnOp ret) {
    for (OpOperand &operand : ret->getOpOperands())
      if (Value head = headOf.lookup(operand.get()))
        operand.set(head);
  });
  // A result only saved (lse) no longer goes back to the sequence layout.
  for (ShardingConstraintOp back : backPins)
    if (back->use_empty())
      back->erase();
  return success();
}

/// SP: pins the hidden state into and out of each block call (and its
/// gradient in and out of each backward call) to `[{dp}, {tp}, {}]`
/// (`[{dp}, {cp, tp}, {}]` with context parallelism).
LogicalResult Seeder::constrainSequence(func::FuncOp fn) {
  SymbolTable symbols(module);
  SmallVector<func::CallOp> calls;
  fn.walk([&](func::CallOp call) { calls.push_back(call); });
  for (func::CallOp call : calls) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee)
      continue;
    std::optional<unsigned> hiddenArg;
    for (unsigned i = 0, e = callee.getNumArguments(); i < e; ++i)
      if (tfm::getRole(callee.getArgAttrDict(i)) == tfm::Role::Hidden) {
        hiddenArg = i;
        break;
      }
    if (!hiddenArg)
      continue;
    auto hiddenType =
        dyn_cast<RankedTensorType>(callee.getArgumentTypes()[*hiddenArg]);
    if (!hiddenType || hiddenType.getRank() != 3)
      continue;
    if (hiddenType.getDimSize(1) % (plan.cp * plan.tp) != 0)
      return call.emitError()
             << "plan sp=1: the sequence dim (size " << hiddenType.getDimSize(1)
             << ") of the hidden state is not divisible by "
             << (plan.cp > 1 ? "cp*tp=" : "tp=") << plan.cp * plan.tp;
    DimAxes dims(3);
    if (plan.dp > 1 && hiddenType.getDimSize(0) % plan.dp == 0)
      dims[0] = dataAxes();
    // CP splits the sequence first (contiguous chunks per cp rank), SP
    // splits each chunk on tp.
    if (plan.cp > 1)
      dims[1].push_back(axisName(AxisRole::Context));
    dims[1].push_back(axisName(AxisRole::Tensor));
    ShardingAttr sharding = toAttr(dims);
    OpBuilder b(call);
    // Operands: hidden-role args, and the leading unannotated gradients of
    // a backward function (`dy`, before its first annotated argument).
    bool leading = true;
    for (unsigned i = 0, e = call.getNumOperands(); i < e; ++i) {
      DictionaryAttr attrs = callee.getArgAttrDict(i);
      bool annotated = attrs && !attrs.empty();
      if (annotated)
        leading = false;
      bool isHidden = tfm::getRole(attrs) == tfm::Role::Hidden;
      bool isDy =
          leading && tfm::getFuncKind(callee) == tfm::FuncKind::Backward;
      if ((!isHidden && !isDy) || call.getOperand(i).getType() != hiddenType)
        continue;
      if (auto prev = call.getOperand(i).getDefiningOp<ShardingConstraintOp>())
        if (prev.getSharding() == sharding)
          continue;
      auto c = ShardingConstraintOp::create(b, call.getLoc(),
                                            call.getOperand(i), sharding);
      call->setOperand(i, c.getResult());
    }
    // Results: hidden-role results, else (a forward or plain block without
    // result attrs) result 0.
    b.setInsertionPointAfter(call);
    bool anyResultAttrs = false;
    for (unsigned r = 0, e = callee.getNumResults(); r < e; ++r) {
      DictionaryAttr attrs = callee.getResultAttrDict(r);
      anyResultAttrs |= attrs && !attrs.empty();
    }
    for (unsigned r = 0, e = call.getNumResults(); r < e; ++r) {
      bool isHidden =
          tfm::getRole(callee.getResultAttrDict(r)) == tfm::Role::Hidden ||
          (!anyResultAttrs && r == 0);
      Value result = call.getResult(r);
      if (!isHidden || result.getType() != hiddenType)
        continue;
      auto c = ShardingConstraintOp::create(b, call.getLoc(), result, sharding);
      result.replaceAllUsesExcept(c.getResult(), c);
    }
  }
  return success();
}

LogicalResult Seeder::run() {
  if (failed(checkModelDims()))
    return failure();
  OpBuilder b(ctx);
  SmallVector<Attribute> names, roles;
  SmallVector<int64_t> sizes;
  for (const Plan::MeshAxis &meshAxis : plan.getMeshAxes()) {
    names.push_back(b.getStringAttr(meshAxis.name));
    sizes.push_back(meshAxis.size);
    roles.push_back(AxisRoleAttr::get(ctx, meshAxis.role));
  }
  ArrayAttr roleAttr = b.getArrayAttr(roles);
  // A mesh the user declared (to annotate values on it) must be the plan's.
  if (Operation *existing = SymbolTable::lookupSymbolIn(module, kMeshName)) {
    auto mesh = dyn_cast<MeshOp>(existing);
    if (!mesh)
      return existing->emitError()
             << "dist-apply-plan: the module already has a symbol @"
             << kMeshName << " that is not a dist.mesh";
    // Without roles it takes the plan's (the passes after find axes by
    // role).
    if (mesh.getAxisNames() != b.getArrayAttr(names) ||
        mesh.getAxisSizes() != ArrayRef<int64_t>(sizes) ||
        (mesh.getAxisRolesAttr() && mesh.getAxisRolesAttr() != roleAttr)) {
      InFlightDiagnostic diag = mesh.emitError()
                                << "dist-apply-plan: the module's mesh @"
                                << kMeshName << " does not match plan '"
                                << plan.str() << "', whose mesh is [";
      llvm::interleaveComma(plan.getMeshAxes(), diag, [&](auto meshAxis) {
        diag << meshAxis.name << " = " << meshAxis.size << " : "
             << stringifyAxisRole(meshAxis.role);
      });
      return diag << "]";
    }
    mesh.setAxisRolesAttr(roleAttr);
  } else {
    b.setInsertionPointToStart(module.getBody());
    MeshOp::create(b, module.getLoc(), b.getStringAttr(kMeshName),
                   b.getArrayAttr(names), b.getDenseI64ArrayAttr(sizes),
                   roleAttr);
  }
  module->setAttr(kPlanAttrName, plan.toAttr(ctx));

  SmallVector<func::FuncOp> entries;
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn.isPublic() && !fn.isExternal())
      entries.push_back(fn);
  for (func::FuncOp fn : entries)
    if (failed(seedFunction(fn)))
      return failure();
  if (plan.ep > 1)
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal())
        constrainExperts(fn);
  if (plan.cpAttention == "ulysses")
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal() && failed(constrainUlysses(fn)))
        return failure();
  for (func::FuncOp fn : entries) {
    if (plan.zero >= 2)
      constrainGradients(fn);
    if (plan.sp == 1 && failed(constrainSequence(fn)))
      return failure();
  }
  if (!zeroUnsharded.empty()) {
    SmallVector<Attribute> list;
    for (const std::string &name : zeroUnsharded)
      list.push_back(b.getStringAttr(name));
    module->setAttr(kZeroUnshardedAttrName, b.getArrayAttr(list));
  }
  return success();
}

struct DistApplyPlanPass
    : public dist::impl::DistApplyPlanBase<DistApplyPlanPass> {
  using DistApplyPlanBase::DistApplyPlanBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::Expected<Plan> parsed = Plan::parse(plan);
    if (!parsed) {
      module.emitError() << "dist-apply-plan: "
                         << llvm::toString(parsed.takeError());
      return signalPassFailure();
    }
    // Microbatching is built by tfm-autodiff (the forward is differentiated
    // per microbatch); the plan must name the same count.
    int64_t microbatches = 1;
    if (auto attr =
            module->getAttrOfType<IntegerAttr>(tfm::kMicrobatchesAttrName))
      microbatches = attr.getInt();
    if (parsed->mb != microbatches) {
      module.emitError() << "dist-apply-plan: plan mb=" << parsed->mb
                         << ", but the train step was differentiated for "
                         << microbatches
                         << " microbatch(es) (build the model at the "
                            "microbatch's batch and run tfm-autodiff with "
                            "microbatches="
                         << parsed->mb << ")";
      return signalPassFailure();
    }
    // Recomputation is built by tfm-recompute (after tfm-autodiff); the
    // plan must name the mode the module was rewritten for.
    auto recomputeAttr =
        module->getAttrOfType<StringAttr>(tfm::kRecomputeAttrName);
    StringRef recompute = recomputeAttr ? recomputeAttr.getValue() : "none";
    if (parsed->recompute != recompute) {
      module.emitError() << "dist-apply-plan: plan recompute="
                         << parsed->recompute
                         << ", but the module's tfm.recompute is " << recompute
                         << (recomputeAttr ? "" : " (absent)")
                         << "; run tfm-recompute with mode="
                         << parsed->recompute << " after tfm-autodiff";
      return signalPassFailure();
    }
    if (parsed->isTrivial())
      return;
    Seeder seeder(module, *parsed);
    if (failed(seeder.run()))
      signalPassFailure();
  }
};

} // namespace
