//===- ExplainReader.cpp - The dist-explain report read off a program -----===//
//
// Everything is read from the rt form of the program: the instruction
// streams (collectives, calls and function kinds: the ProgramProfile), the
// state table (`rt.state_def` with `rt.sharding`), the entries' input slots
// and the static memory plan. Axes are recognised by their role on the
// `dist.mesh`, never by name.
//
//===----------------------------------------------------------------------===//

#include "HeldState.h"

#include "autoshard/Dialect/Dist/Analysis/ExplainReader.h"
#include "autoshard/Dialect/Dist/Analysis/ProgramProfile.h"
#include "autoshard/Dialect/Dist/IR/DistAttrNames.h"
#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Rt/IR/RtOps.h"
#include "autoshard/Dialect/Tfm/IR/TfmAttrNames.h"
#include "autoshard/runtime/SequencePositions.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;
using namespace autoshard::dist::explain;
namespace json = llvm::json;

namespace {

/// "1.00, 1.00" for zig-zag order, "0.50, 1.50" for contiguous cp=2: per
/// rank of a ring of `cp` over `seq` positions (zig-zag order of
/// `zigzagChunks`, 0: contiguous), the causal query-key pairs its queries
/// see, over the mean (SequencePositions.h's mapping).
std::string causalWorkShares(int64_t seq, int64_t cp, int64_t zigzagChunks) {
  const int64_t rows = seq / cp;
  const double mean = double(seq) * double(seq + 1) / 2.0 / double(cp);
  SmallVector<std::string> shares;
  for (int64_t r = 0; r < cp; ++r) {
    double pairs = 0;
    for (int64_t i = 0; i < rows; ++i)
      pairs += double(
          autoshard::runtime::zigzagPosition(r * rows + i, seq, zigzagChunks) +
          1);
    shares.push_back(llvm::formatv("{0:F2}", pairs / mean).str());
  }
  return llvm::join(shares, ", ");
}

constexpr StringLiteral kTrainStep = "train_step";
/// Attributes rt-lower puts on state definitions and input slots.
constexpr StringLiteral kRtShardingAttrName = "rt.sharding";
constexpr StringLiteral kRtRoleAttrName = "rt.role";

std::string joinAxes(ArrayRef<std::string> axes) {
  return llvm::join(axes, ",");
}

/// `layers.3.attn.wq` -> `layers.*.attn.wq`: one name for a state of every
/// layer.
std::string namePattern(StringRef name) {
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  std::string out;
  for (auto [i, part] : llvm::enumerate(parts)) {
    if (i)
      out += '.';
    bool digits = !part.empty() && llvm::all_of(part, llvm::isDigit);
    out += digits ? std::string("*") : part.str();
  }
  return out;
}

DimAxes getDimAxes(dist::ShardingAttr sharding, unsigned rank) {
  DimAxes out(rank);
  if (!sharding)
    return out;
  for (unsigned d = 0; d < rank && d < sharding.getRank(); ++d)
    for (StringAttr axis : sharding.getDimAxes(d))
      out[d].push_back(axis.str());
  return out;
}

/// Whether a dim is split over an axis that satisfies `pred`; `dim` is set
/// to the first such dim.
bool usesAxis(const DimAxes &dimAxes, function_ref<bool(StringRef)> pred,
              unsigned *dim) {
  for (auto [d, axes] : llvm::enumerate(dimAxes))
    if (llvm::any_of(axes, [&](const std::string &a) { return pred(a); })) {
      if (dim)
        *dim = d;
      return true;
    }
  return false;
}

SmallVector<int64_t> getGlobalShape(rt::BufferType type, Attribute attr,
                                    Operation *from) {
  SmallVector<int64_t> shape(type.getShape());
  auto sharding = dyn_cast_or_null<dist::ShardingAttr>(attr);
  if (!sharding)
    return shape;
  dist::MeshOp mesh = dist::lookupMesh(from, sharding.getMesh());
  if (!mesh)
    return shape;
  RankedTensorType global = sharding.getGlobalType(type.getTensorType(), mesh);
  if (!global)
    return shape;
  return SmallVector<int64_t>(global.getShape());
}

int64_t getNumElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Reads one program into a Report (readReport).
class Explainer {
public:
  Explainer(ModuleOp module, Report &report)
      : module(module), profile(module), r(report) {}

  LogicalResult read(const RoleMap &roles);

private:
  void readHeader();
  void readStates(const RoleMap &roles);
  void readFunctions();
  void expand(StringRef entry);
  std::string classify(const CommRecord &c);
  void deriveStrategies();

  /// Whether `axis` has role `role` on the mesh.
  bool hasRole(StringRef axis, AxisRole role) {
    return mesh && mesh.hasAxisRole(axis, role);
  }
  /// Size of the mesh axis of role `role` (0 if the mesh has none).
  int64_t roleSize(AxisRole role);
  /// Whether a dim of `dimAxes` is split over the axis of role `role`; `dim`
  /// is set to that dim.
  bool usesRole(const DimAxes &dimAxes, AxisRole role,
                unsigned *dim = nullptr) {
    return usesAxis(
        dimAxes, [&](StringRef a) { return hasRole(a, role); }, dim);
  }
  /// The strategy family that owns `axis`, by its role (an axis without one:
  /// its name, upper case).
  std::string axisStrategy(StringRef axis);

  ModuleOp module;
  ProgramProfile profile;
  Report &r;
  /// The program's (first) mesh; null if it has none.
  MeshOp mesh;
  /// Per function, its collectives (those of its profile, classified).
  llvm::StringMap<std::vector<Collective>> collectives;
  /// Calls per step of the functions of the entry being expanded.
  llvm::StringMap<int64_t> calls;
  /// The rows of the entry being expanded.
  decltype(Report::rows) rows;
  /// Collectives tagged SP (for the SP row).
  SmallVector<const Collective *> spCollectives;
};

} // namespace

RoleMap explain::readEntryRoles(ModuleOp module) {
  RoleMap roles;
  llvm::StringMap<std::string> stateOf;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func.isPublic())
      continue;
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
      DictionaryAttr attrs = func.getArgAttrDict(i);
      if (!attrs)
        continue;
      auto role = attrs.getAs<StringAttr>(tfm::kRoleAttrName);
      if (auto param = attrs.getAs<StringAttr>(tfm::kParamAttrName))
        if (role)
          roles[param.getValue()] = role.str();
      if (auto state = attrs.getAs<StringAttr>(tfm::kStateAttrName))
        if (auto of = attrs.getAs<StringAttr>(tfm::kStateOfAttrName))
          stateOf[state.getValue()] = of.str();
    }
  }
  for (auto &entry : stateOf) {
    auto it = roles.find(entry.second);
    if (it != roles.end())
      roles[entry.first()] = it->second;
  }
  return roles;
}

namespace {

LogicalResult Explainer::read(const RoleMap &roles) {
  readHeader();
  readStates(roles);
  readFunctions();

  // The entry that a training step runs; else the first entry.
  SmallVector<rt::FuncOp> entries;
  for (auto func : module.getOps<rt::FuncOp>())
    if (func.isEntry())
      entries.push_back(func);
  if (entries.empty())
    return module.emitError()
           << "dist-explain: the program has no entry function";
  // With pp, each stage has its own program and state: report the stage
  // whose ranks need the most memory (held state + frame).
  auto rankBytes = [&](rt::FuncOp fn) {
    return fn.getFrameBytes().value_or(0) + getHeldState(module, fn).bytes;
  };
  rt::FuncOp step = entries.front();
  bool found = false;
  for (rt::FuncOp func : entries)
    if (*func.getEntry() == kTrainStep &&
        (!found || rankBytes(func) > rankBytes(step))) {
      step = func;
      found = true;
    }
  r.entry = step.getEntry()->str();
  if (auto stage = step.getPpStage()) {
    int64_t numStages = llvm::count_if(
        entries, [&](rt::FuncOp f) { return f.getEntry() == step.getEntry(); });
    r.ppStage = *stage;
    r.entryNote = ", pp stage " + std::to_string(*stage) +
                  ": the largest in memory of " + std::to_string(numStages) +
                  " stages";
    HeldState held = getHeldState(module, step);
    for (State &s : r.states)
      s.held = held.names.contains(s.name);
  }

  for (auto slot : step.getOps<rt::InputOp>()) {
    Slot s;
    s.role = slot.getRole().str();
    auto type = cast<rt::BufferType>(slot.getType());
    s.localShape.assign(type.getShape().begin(), type.getShape().end());
    Attribute sharding = slot->getAttr(kRtShardingAttrName);
    s.globalShape = getGlobalShape(type, sharding, slot);
    s.dimAxes = getDimAxes(dyn_cast_or_null<dist::ShardingAttr>(sharding),
                           type.getShape().size());
    r.inputs.push_back(std::move(s));
  }
  if (step.getFrameBytes()) {
    r.memory.planned = true;
    r.memory.frameBytes = *step.getFrameBytes();
    if (DictionaryAttr peak = step.getPeakBreakdownAttr())
      for (NamedAttribute entry : peak)
        if (auto value = dyn_cast<IntegerAttr>(entry.getValue()))
          r.memory.peak[entry.getName().str()] = value.getInt();
  }

  // Per step of the main entry, calls expanded.
  expand(step.getSymName());
  r.rows = rows;
  if (auto mode = module->getAttrOfType<StringAttr>(tfm::kRecomputeAttrName))
    r.recompute = mode.getValue().str();
  // The functions that recompute (tfm.func_kind, tfm.recompute).
  for (const FunctionProfile &f : profile.getFunctions())
    if (isa<rt::FuncOp>(f.op) && f.recomputes && calls.count(f.name))
      r.recomputeCalls.emplace_back(f.name.str(), calls[f.name]);
  for (const FunctionProfile &f : profile.getFunctions()) {
    const std::vector<Collective> &own = collectives[f.name];
    if (!isa<rt::FuncOp>(f.op) || own.empty() || !calls.count(f.name))
      continue;
    Report::PerFunction pf;
    pf.name = f.name.str();
    pf.calls = calls[f.name];
    for (const Collective &c : own) {
      std::string key = c.kind + "[" + joinAxes(c.axes) + "]";
      auto it = llvm::find_if(pf.perCall,
                              [&](const auto &e) { return e.first == key; });
      if (it == pf.perCall.end())
        pf.perCall.emplace_back(key, 1);
      else
        ++it->second;
    }
    r.perFunction.push_back(std::move(pf));
  }

  // The other entries, one total each.
  for (rt::FuncOp func : entries) {
    if (func == step)
      continue;
    expand(func.getSymName());
    int64_t count = 0, bytes = 0;
    for (auto &[key, row] : rows) {
      count += row.count;
      bytes += row.bytes;
    }
    std::string name = func.getEntry()->str();
    if (auto stage = func.getPpStage())
      name += " (pp stage " + std::to_string(*stage) + ")";
    r.otherEntries.emplace_back(name, count, bytes);
  }
  deriveStrategies();
  // A one-rank program is its own baseline.
  if (!r.baseline.present && r.worldSize == 1 && r.memory.planned) {
    Baseline &b = r.baseline;
    b.present = true;
    b.path = "this program";
    b.frameBytes = r.memory.frameBytes;
    b.peak = r.memory.peak;
    for (const State &s : r.states)
      b.stateBytes += s.localBytes;
  }
  return success();
}

void Explainer::readHeader() {
  if (auto model = module->getAttrOfType<DictionaryAttr>(tfm::kModelAttrName)) {
    for (NamedAttribute entry : model) {
      StringRef key = entry.getName().getValue();
      // A BoolAttr is an i1 IntegerAttr: asked first, `true` is not -1.
      if (auto s = dyn_cast<StringAttr>(entry.getValue()))
        r.model[key] = s.str();
      else if (auto b = dyn_cast<BoolAttr>(entry.getValue()))
        r.model[key] = b.getValue();
      else if (auto i = dyn_cast<IntegerAttr>(entry.getValue()))
        r.model[key] = i.getInt();
    }
    if (auto name = model.getAs<StringAttr>("name"))
      r.modelName = name.str();
  }
  if (auto plan = module->getAttrOfType<DictionaryAttr>(dist::kPlanAttrName)) {
    r.hasPlan = true;
    for (NamedAttribute entry : plan) {
      std::string value;
      if (auto i = dyn_cast<IntegerAttr>(entry.getValue()))
        value = std::to_string(i.getInt());
      else if (auto s = dyn_cast<StringAttr>(entry.getValue()))
        value = s.str();
      else
        continue;
      r.plan.emplace_back(entry.getName().str(), value);
      if (entry.getName() == "zero")
        r.zeroStage = cast<IntegerAttr>(entry.getValue()).getInt();
      if (entry.getName() == "sp")
        r.sequenceParallel = cast<IntegerAttr>(entry.getValue()).getInt();
    }
  }
  for (auto first : module.getOps<dist::MeshOp>()) {
    mesh = first;
    for (auto [name, size] :
         llvm::zip(mesh.getAxisNames(), mesh.getAxisSizes()))
      r.mesh.emplace_back(cast<StringAttr>(name).str(), size);
    r.worldSize = mesh.getNumDevices();
    break;
  }
  if (auto unsharded =
          module->getAttrOfType<ArrayAttr>(dist::kZeroUnshardedAttrName))
    for (Attribute name : unsharded)
      if (auto s = dyn_cast<StringAttr>(name))
        r.zeroUnsharded.push_back(s.str());
}

void Explainer::readStates(const RoleMap &roles) {
  for (auto def : module.getOps<rt::StateDefOp>()) {
    State s;
    s.name = def.getSymName().str();
    s.kind = rt::stringifyStateKind(def.getKind()).str();
    if (def.getOf())
      s.of = def.getOf()->str();
    if (auto role = def->getAttrOfType<StringAttr>(kRtRoleAttrName))
      s.role = role.str();
    else if (auto it = roles.find(s.name); it != roles.end())
      s.role = it->second;
    rt::BufferType type = def.getBufferType();
    s.localShape.assign(type.getShape().begin(), type.getShape().end());
    Attribute sharding = def->getAttr(kRtShardingAttrName);
    s.globalShape = getGlobalShape(type, sharding, def);
    s.dimAxes = getDimAxes(dyn_cast_or_null<dist::ShardingAttr>(sharding),
                           type.getShape().size());
    s.localBytes = type.getSizeInBytes();
    int64_t elementBytes =
        type.getNumElements() ? s.localBytes / type.getNumElements() : 0;
    s.globalBytes = getNumElements(s.globalShape) * elementBytes;
    r.states.push_back(std::move(s));
  }
  // Optimizer states inherit their parameter's role.
  llvm::StringMap<std::string> paramRoles;
  for (const State &s : r.states)
    if (s.kind == "param")
      paramRoles[s.name] = s.role;
  for (State &s : r.states)
    if (s.role.empty() && !s.of.empty())
      s.role = paramRoles.lookup(s.of);
}

void Explainer::readFunctions() {
  for (const FunctionProfile &f : profile.getFunctions()) {
    std::vector<Collective> &own = collectives[f.name];
    for (const CommRecord &comm : f.work.comms) {
      Collective c;
      c.kind = stringifyCommKind(comm.kind).str();
      c.axes.assign(comm.axes.begin(), comm.axes.end());
      c.shape = comm.shape;
      c.resultShape = comm.resultShape;
      c.bytes = comm.bytes;
      c.numElements = comm.numElements;
      c.dim = comm.dim;
      c.cause = classify(comm);
      own.push_back(std::move(c));
    }
  }
}

std::string Explainer::classify(const CommRecord &c) {
  if (c.numElements <= 1)
    return kScalarCause;
  CommKind kind = c.kind;
  // Context parallelism's ring attention: K/V chunks and their gradient
  // accumulators shifted around the cp ring.
  if (kind == CommKind::Ppermute && c.anyAxisHasRole(AxisRole::Context))
    return "CP ring";
  // Ulysses: q/k/v (and dout) from sequence chunks to head groups, the
  // attention's out (and dq/dk/dv) back.
  bool oneAxis = c.axes.size() == 1;
  if (kind == CommKind::AllToAll && oneAxis &&
      c.anyAxisHasRole(AxisRole::Context))
    return "CP Ulysses";
  // Token dispatch / combine of expert parallelism.
  if (kind == CommKind::AllToAll && oneAxis &&
      c.anyAxisHasRole(AxisRole::Expert))
    return "EP";
  // The data-parallel group is data x context (and expert, which folds over
  // data and carries the batch and the dense gradients too): context-
  // parallel ranks hold the same weights, sum the same gradients and share
  // ZeRO's shards.
  bool gathers = kind == CommKind::AllGather || kind == CommKind::ReduceScatter;
  bool dataOnly =
      c.allAxesHaveRoles({AxisRole::Data, AxisRole::Context, AxisRole::Expert});
  if (dataOnly && kind == CommKind::AllReduce)
    return "DP";
  if (dataOnly && r.zeroStage > 0 && gathers &&
      c.anyAxisHasRole(AxisRole::Data) == (roleSize(AxisRole::Data) > 1) &&
      c.anyAxisHasRole(AxisRole::Context) == (roleSize(AxisRole::Context) > 1))
    return "ZeRO-" + std::to_string(r.zeroStage);
  dataOnly = c.allAxesHaveRoles({AxisRole::Data, AxisRole::Expert});
  bool tpOnly = c.allAxesHaveRoles({AxisRole::Tensor});
  // Gathers and scatters over the data axis exist for ZeRO's storage
  // layouts (also when a tp-split tensor is stored split over {dp, tp}).
  if ((c.anyAxisHasRole(AxisRole::Data) ||
       c.anyAxisHasRole(AxisRole::Expert)) &&
      kind != CommKind::AllReduce && r.zeroStage > 0)
    return "ZeRO-" + std::to_string(r.zeroStage);
  if (dataOnly)
    return "DP";
  if (tpOnly) {
    if (r.sequenceParallel && gathers && c.dim && *c.dim == 1 &&
        c.shape.size() >= 3)
      return "SP";
    return "TP";
  }
  SmallVector<std::string> names;
  for (const std::string &axis : c.axes) {
    std::string name = axisStrategy(axis);
    if (!llvm::is_contained(names, name))
      names.push_back(name);
  }
  return names.empty() ? std::string("other") : llvm::join(names, "+");
}

void Explainer::expand(StringRef entry) {
  calls.clear();
  rows.clear();
  profile.walkCallTree(entry, [&](const FunctionProfile &f) {
    ++calls[f.name];
    for (const Collective &c : collectives[f.name]) {
      CollectiveRow &row =
          rows[{strategyOrder(c.cause), c.cause, c.kind, joinAxes(c.axes)}];
      ++row.count;
      row.bytes += c.bytes;
      if (c.cause == "SP")
        spCollectives.push_back(&c);
    }
  });
}

//===----------------------------------------------------------------------===//
// The strategy rows
//===----------------------------------------------------------------------===//

/// "attn_q, attn_k (8)": the roles (or name patterns) of `states`, in order
/// of first appearance, and their count.
std::string describeStates(ArrayRef<const State *> states) {
  SmallVector<std::string> names;
  for (const State *s : states) {
    std::string name = s->role.empty() ? namePattern(s->name) : s->role;
    if (!llvm::is_contained(names, name))
      names.push_back(name);
  }
  return llvm::join(names, ", ") + " (" + std::to_string(states.size()) + ")";
}

int64_t Explainer::roleSize(AxisRole role) {
  StringAttr axis = mesh ? mesh.getAxisWithRole(role) : StringAttr();
  return axis ? mesh.getAxisSize(axis.getValue()) : 0;
}

std::string Explainer::axisStrategy(StringRef axis) {
  std::optional<AxisRole> role = mesh ? mesh.getAxisRole(axis) : std::nullopt;
  if (!role)
    return axis.upper();
  switch (*role) {
  case AxisRole::Data:
    return "DP";
  case AxisRole::Context:
    return "CP";
  case AxisRole::Tensor:
    return "TP";
  case AxisRole::Expert:
    return "EP";
  case AxisRole::Pipeline:
    return "PP";
  }
  llvm_unreachable("unknown axis role");
}

void Explainer::deriveStrategies() {
  // The texts name the axes by their plan keys, as dist-apply-plan does.
  int64_t tp = roleSize(AxisRole::Tensor), cp = roleSize(AxisRole::Context),
          ep = roleSize(AxisRole::Expert);
  // The data-parallel degree: the data axis `dp`, times `ep` when expert
  // parallelism folds over the dp ranks (then `dp` is the expert-data-
  // parallel group).
  int64_t edp = std::max<int64_t>(roleSize(AxisRole::Data), 1);
  int64_t dp = ep > 1 ? edp * ep : roleSize(AxisRole::Data);
  std::string dataAxes = ep > 1 ? (edp > 1 ? "dp,ep" : "ep") : "dp";
  // The data-parallel group (gradient sums, ZeRO shards): the data axes x cp.
  std::string dataGroup =
      cp > 1 ? (dp > 1 ? dataAxes + " x cp" : "cp") : dataAxes;
  std::string dataDegree = cp > 1 ? (dp > 1 ? "dp*cp=" + std::to_string(dp * cp)
                                            : "cp=" + std::to_string(cp))
                                  : "dp=" + std::to_string(dp);
  auto onData = [&](const DimAxes &dimAxes) {
    return usesRole(dimAxes, AxisRole::Data) ||
           usesRole(dimAxes, AxisRole::Expert);
  };

  // "tokens dim 0 (16x64 -> 8x64), ...": the inputs split on an axis of
  // any of `roles` (the dim: that of the first role found).
  auto splitInputs = [&](ArrayRef<AxisRole> roles) {
    SmallVector<std::string> parts;
    for (const Slot &s : r.inputs) {
      unsigned dim;
      if (llvm::none_of(roles, [&](AxisRole role) {
            return usesRole(s.dimAxes, role, &dim);
          }))
        continue;
      parts.push_back(s.role + " dim " + std::to_string(dim) + " (" +
                      formatShape(s.globalShape) + " -> " +
                      formatShape(s.localShape) + ")");
    }
    return parts;
  };

  if (dp > 1) {
    SmallVector<std::string> parts =
        splitInputs({AxisRole::Data, AxisRole::Expert});
    std::string text = parts.empty() ? "no input split on " + dataAxes
                                     : "batch: " + llvm::join(parts, ", ");
    text += "; activations follow the batch; gradients are summed over " +
            dataGroup;
    if (ep > 1)
      text += edp > 1 ? " (expert weights: over dp, see EP)"
                      : " (expert weights: not at all, see EP)";
    r.strategies.push_back(StrategyRow{"DP", "dp=" + std::to_string(dp), text});
  }

  if (cp > 1) {
    SmallVector<std::string> parts = splitInputs({AxisRole::Context});
    bool ulysses = false;
    for (auto &[key, value] : r.plan)
      ulysses |= key == "cp_attention" && value == "ulysses";
    int64_t count = 0;
    for (auto &[key, row] : r.rows)
      if (std::get<1>(key) == (ulysses ? "CP Ulysses" : "CP ring"))
        count += row.count;
    bool zigzag = false;
    for (auto &[key, value] : r.plan)
      zigzag |= key == "cp_layout" && value == "zigzag";
    int64_t seq = 0;
    for (const Slot &slot : r.inputs) {
      unsigned dim;
      if (usesRole(slot.dimAxes, AxisRole::Context, &dim) && dim == 1)
        seq = slot.globalShape[dim];
    }
    std::string text = parts.empty() ? std::string("no input split on cp")
                                     : "sequence: " + llvm::join(parts, ", ");
    text += zigzag ? " (zig-zag order: rank r holds chunks r and " +
                         std::to_string(2 * cp - 1) + "-r of " +
                         std::to_string(2 * cp) + ")"
                   : std::string(" (contiguous chunks)");
    // Ulysses: every rank attends all positions of its heads (balanced).
    if (!ulysses && seq > 0 && seq % cp == 0 &&
        (!zigzag || seq % (2 * cp) == 0))
      text += "; causal attention work per cp rank (visible query-key pairs "
              "/ the balanced share): " +
              causalWorkShares(seq, cp, zigzag ? 2 * cp : 0);
    text += "; activations follow the sequence; ";
    if (ulysses)
      text += "attention: Ulysses, per layer 4 all-to-alls over cp forward "
              "(q, k, v to head groups, out back) and 4 backward (dout in, "
              "dq, dk, dv back; q, k, v, out and lse are saved as the "
              "attention saw them) (" +
              std::to_string(count) + " per step)";
    else
      text += "attention: ring attention, per layer 2(cp-1) = " +
              std::to_string(2 * (cp - 1)) +
              " K/V ppermutes forward, 2(cp-1) + 2cp = " +
              std::to_string(2 * (cp - 1) + 2 * cp) +
              " K/V and dK/dV ppermutes backward (" + std::to_string(count) +
              " per step)";
    text += "; rope, position embedding and dropout by global position; "
            "gradients are summed over " +
            dataGroup;
    r.strategies.push_back(StrategyRow{"CP", "cp=" + std::to_string(cp), text});
  }

  // EP: the expert weights' E dim on ep; the all-to-alls of dispatch and
  // combine.
  // The plan's ep: the mesh axis `ep` is only its dp part when the ep group
  // also folds over the cp ranks (then the experts are split on {ep, cp}).
  int64_t planEp = ep, planEtp = 1;
  for (auto &[k, value] : r.plan) {
    if (k == "ep")
      planEp = std::max<int64_t>(1, std::atoll(value.c_str()));
    if (k == "etp")
      planEtp = std::max<int64_t>(1, std::atoll(value.c_str()));
  }
  bool epOverCp = planEp > 1 && cp > 1;
  // With etp = 1 the ep group takes every tp rank too (Plan::ep).
  bool epOverTp = planEp > 1 && planEtp == 1 && tp > 1;
  if (planEp > 1) {
    SmallVector<const State *> experts;
    int64_t global = 0, local = 0, layers = 0, perRank = 0, all = 0;
    for (const State &s : r.states) {
      unsigned dim;
      // Expert weights by role: under ZeRO-3 the dense weights are stored
      // on {dp, ep} too.
      std::optional<tfm::Role> role = tfm::symbolizeRole(s.role);
      if (s.kind != "param" || !s.held || !role || !tfm::isExpertRole(*role) ||
          !(usesRole(s.dimAxes, AxisRole::Expert, &dim) ||
            (epOverCp && usesRole(s.dimAxes, AxisRole::Context, &dim)) ||
            (epOverTp && usesRole(s.dimAxes, AxisRole::Tensor, &dim) &&
             dim == 0)))
        continue;
      experts.push_back(&s);
      global += s.globalBytes;
      local += s.localBytes;
      layers += role == tfm::Role::ExpertGate;
      if (!s.globalShape.empty()) {
        all = s.globalShape[0];
        perRank = s.localShape[0];
      }
    }
    // Under ZeRO-3 the stored shard is also split over dp; each rank
    // computes with (gathers) its E/ep experts.
    std::string stored;
    if (perRank * planEp != all) {
      stored = " (stored: " + std::to_string(perRank) +
               ", gathered over dp before use)";
      perRank = all / planEp;
    }
    std::string text =
        experts.empty() ? std::string("no parameter split on ep")
                        : "experts (dim 0): " + describeStates(experts) + ", " +
                              std::to_string(all) + " -> " +
                              std::to_string(perRank) + " experts per rank" +
                              stored + "; expert parameters per rank " +
                              formatBytes(global) + " -> " + formatBytes(local);
    text += edp > 1 ? "; expert gradients summed over dp (the expert-data-"
                      "parallel group of " +
                          std::to_string(edp) + " ranks)"
                    : "; expert gradients not reduced (each expert on one "
                      "data-parallel rank)";
    int64_t count = 0, bytes = 0;
    for (auto &[key, row] : r.rows)
      if (std::get<1>(key) == "EP" && std::get<2>(key) == "all_to_all") {
        count += row.count;
        bytes += row.bytes;
      }
    int64_t mb = 1;
    for (auto &[k, value] : r.plan)
      if (k == "mb")
        mb = std::max<int64_t>(1, std::atoll(value.c_str()));
    if (ep > 1) {
      text += "; token dispatch / combine: " + std::to_string(count) +
              " all-to-alls over ep per step (" + formatBytes(bytes) + ")";
      if (layers > 0 && count % (layers * mb) == 0)
        text += ", " + std::to_string(count / (layers * mb)) +
                " per MoE layer per microbatch";
    }
    if (epOverCp)
      text += "; folded over the cp ranks too: the MoE layers see the "
              "sequence gathered over cp, each cp rank computes its experts' "
              "slots (a local slice in) and the expert outputs are gathered "
              "over cp (out)";
    if (epOverTp)
      text += "; folded over the tp ranks too (etp=1): the tp ranks route "
              "the same tokens, each computes its own experts' slots (a "
              "local slice in) and the expert outputs are gathered over tp "
              "(out)";
    if (planEtp > 1)
      text += "; each expert split over tp (etp=" + std::to_string(planEtp) +
              ", see TP)";
    r.strategies.push_back(
        StrategyRow{"EP", "ep=" + std::to_string(planEp), text});
  }

  // ZeRO: states split on the data-parallel group (optimizer states;
  // parameters for stage 3).
  SmallVector<const State *> optSharded, optAll, paramSharded;
  // Expert weights (split on ep by EP, not by ZeRO): their states count as
  // ZeRO-split only on dp.
  llvm::StringSet<> expertParams;
  for (const State &s : r.states)
    if (s.kind == "param" && usesRole(s.dimAxes, AxisRole::Expert))
      expertParams.insert(s.name);
  for (const State &s : r.states) {
    if (!s.held)
      continue;
    bool onGroup =
        expertParams.contains(s.of)
            ? usesRole(s.dimAxes, AxisRole::Data)
            : onData(s.dimAxes) || usesRole(s.dimAxes, AxisRole::Context);
    if (s.kind == "param") {
      // ZeRO-3's storage axes (an expert weight's `ep` is EP's split).
      if (usesRole(s.dimAxes, AxisRole::Data) ||
          usesRole(s.dimAxes, AxisRole::Context))
        paramSharded.push_back(&s);
      continue;
    }
    optAll.push_back(&s);
    if (onGroup)
      optSharded.push_back(&s);
  }
  if (dp * std::max<int64_t>(cp, 1) > 1 &&
      (r.zeroStage > 0 || !optSharded.empty())) {
    int64_t global = 0, local = 0;
    for (const State *s : optAll) {
      global += s->globalBytes;
      local += s->localBytes;
    }
    std::string text =
        "optimizer states m, v: " + std::to_string(optSharded.size()) + " of " +
        std::to_string(optAll.size()) + " split on " + dataGroup +
        (ep > 1 && edp > 1 ? " (expert states on dp)" : "");
    if (r.zeroStage >= 2)
      text += "; gradients reduce-scattered to that layout";
    if (!paramSharded.empty())
      text += "; parameters: " + describeStates(paramSharded) + " split on " +
              dataGroup + " (all-gathered before use)";
    if (!r.zeroUnsharded.empty())
      text += "; left replicated (no divisible dim): " +
              llvm::join(r.zeroUnsharded, ", ");
    text += "; optimizer state per rank " + formatBytes(global) + " -> " +
            formatBytes(local);
    std::string label = r.zeroStage > 0 ? "ZeRO-" + std::to_string(r.zeroStage)
                                        : std::string("ZeRO");
    r.strategies.push_back(StrategyRow{label, dataDegree, text});
  }

  if (tp > 1) {
    // Parameters by how tp splits them.
    SmallVector<const State *> columns, rowsSplit, expertRows, vocab, vectors,
        replicated, experts;
    int64_t global = 0, local = 0;
    for (const State &s : r.states) {
      if (s.kind != "param")
        continue;
      // Without dp (storage only, ZeRO-3): what tp alone does.
      unsigned dim;
      if (!usesRole(s.dimAxes, AxisRole::Tensor, &dim)) {
        replicated.push_back(&s);
        continue;
      }
      std::optional<tfm::Role> role = tfm::symbolizeRole(s.role);
      bool isExpert = role && tfm::isExpertRole(*role);
      // The expert dim on tp: EP's split (ep folded over tp).
      if (isExpert && dim == 0 && s.localShape.size() == 3) {
        experts.push_back(&s);
        continue;
      }
      global += s.globalBytes;
      local += s.localBytes;
      bool isVocab = role && tfm::isVocabRole(*role);
      if (isVocab)
        vocab.push_back(&s);
      else if (s.localShape.size() < 2)
        vectors.push_back(&s);
      else if (dim + 1 == s.localShape.size())
        columns.push_back(&s);
      else if (isExpert)
        expertRows.push_back(&s);
      else
        rowsSplit.push_back(&s);
    }
    SmallVector<std::string> parts;
    auto add = [&](StringRef what, ArrayRef<const State *> group) {
      if (!group.empty())
        parts.push_back(what.str() + ": " + describeStates(group));
    };
    add("columns (last dim)", columns);
    add("rows (dim 0)", rowsSplit);
    add("expert rows (dim 1, etp)", expertRows);
    add("experts (dim 0, see EP)", experts);
    add("vocab", vocab);
    add("vectors", vectors);
    add("replicated", replicated);
    std::string text = llvm::join(parts, "; ");
    text += "; split parameters per rank " + formatBytes(global) + " -> " +
            formatBytes(local);
    r.strategies.push_back(StrategyRow{"TP", "tp=" + std::to_string(tp), text});
  }

  if (r.sequenceParallel || !spCollectives.empty()) {
    std::string text;
    if (spCollectives.empty()) {
      text = "no sequence-parallel collective found";
    } else {
      // The residual stream between blocks: the operand of an all-gather
      // (sequence-split) and its result (full sequence).
      const Collective *gather = nullptr;
      for (const Collective *c : spCollectives)
        if (c->kind == "all_gather")
          gather = c;
      int64_t gathers = 0, scatters = 0;
      for (auto &[key, row] : r.rows) {
        if (std::get<1>(key) != "SP")
          continue;
        if (std::get<2>(key) == "all_gather")
          gathers += row.count;
        else if (std::get<2>(key) == "reduce_scatter")
          scatters += row.count;
      }
      text = "sequence dim 1 of the residual stream on tp";
      if (gather)
        text += " (" + formatShape(gather->resultShape) + " -> " +
                formatShape(gather->shape) + " per rank between blocks)";
      text += "; " + std::to_string(gathers) + " all-gathers and " +
              std::to_string(scatters) +
              " reduce-scatters per step instead of all-reduces";
    }
    r.strategies.push_back(StrategyRow{"SP", "tp=" + std::to_string(tp), text});
  }

  // Activation recomputation: no sharding, but it decides which
  // activations the memory plan keeps and adds forward work (and, under TP
  // and SP, the forward's collectives) to the backward.
  if (!r.recompute.empty() && r.recompute != "none") {
    std::string text =
        r.recompute == "full"
            ? "layers keep only their input; each layer's forward re-runs "
              "right before its backward"
            : "norms and elementwise activations are recomputed at the "
              "start of each layer's backward from the kept matmul and "
              "attention outputs";
    SmallVector<std::string> parts;
    for (auto &[name, count] : r.recomputeCalls)
      parts.push_back("@" + name + " x" + std::to_string(count));
    if (!parts.empty())
      text += " (" + llvm::join(parts, ", ") + " per step)";
    r.strategies.push_back(StrategyRow{"Recomp", r.recompute, text});
  }
}

} // namespace

LogicalResult explain::readReport(ModuleOp program, const RoleMap &roles,
                                  Report &report) {
  return Explainer(program, report).read(roles);
}

LogicalResult explain::readBaseline(StringRef path, Baseline &b,
                                    Operation *errorAt) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return errorAt->emitError() << "dist-explain: cannot read baseline '"
                                << path << "': " << buffer.getError().message();
  llvm::Expected<json::Value> value = json::parse((*buffer)->getBuffer());
  if (!value)
    return errorAt->emitError()
           << "dist-explain: baseline '" << path
           << "' is not JSON: " << llvm::toString(value.takeError());
  json::Object *top = value->getAsObject();
  json::Object *memory = top ? top->getObject("memory") : nullptr;
  if (!top || top->getString("format") != "autoshard-artifact" || !memory)
    return errorAt->emitError()
           << "dist-explain: baseline '" << path
           << "' is not an autoshard artifact with a 'memory' section";
  b.present = true;
  b.path = path.str();
  b.worldSize = top->getInteger("world_size").value_or(1);
  b.stateBytes = memory->getInteger("state_bytes").value_or(0);
  b.constantBytes = memory->getInteger("constant_bytes").value_or(0);
  if (json::Object *byKind = memory->getObject("state_breakdown"))
    for (auto &[key, v] : *byKind)
      if (auto i = v.getAsInteger())
        b.stateByKind[key.str()] = *i;
  if (json::Object *entries = memory->getObject("entries"))
    if (json::Object *train = entries->getObject(kTrainStep)) {
      b.frameBytes = train->getInteger("frame_bytes");
      if (json::Object *peak = train->getObject("breakdown_at_peak"))
        for (auto &[key, v] : *peak)
          if (auto i = v.getAsInteger())
            b.peak[key.str()] = *i;
    }
  return success();
}
