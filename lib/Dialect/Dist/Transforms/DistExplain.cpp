//===- DistExplain.cpp - What a plan does, read off the compiled program --===//
//
// `dist-explain`: for each strategy of the plan, what is split on which mesh
// axis; the collectives the partitioner inserted (count and bytes per
// training step per rank, attributed to a strategy); the memory per rank
// with and without the plan. An analysis: the module is not changed.
//
// Everything is read from the rt form of the program (instruction streams,
// state table, static memory plan); a module still in func form (right after
// dist-partition) is lowered on a copy with
// `rt-lower,rt-fuse-epilogues,rt-plan-memory` (as scripts/train.sh builds it),
// and the builder's roles are read from its entry functions first.
//
//===----------------------------------------------------------------------===//

#include "RunPassPipeline.h"

#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Rt/IR/RtOps.h"
#include "autoshard/Dialect/Rt/Transforms/Passes.h"
#include "autoshard/Dialect/Tfm/IR/TfmAttrNames.h"
#include "autoshard/Pipeline/Schedule.h"
#include "autoshard/Pipeline/Simulate.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

#include <map>
#include <vector>

namespace autoshard::dist {
#define GEN_PASS_DEF_DISTEXPLAIN
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace autoshard::dist

using namespace mlir;
using namespace autoshard;
namespace json = llvm::json;

namespace {

constexpr StringLiteral kTrainStep = "train_step";
constexpr StringLiteral kScalarCause = "loss/grad norm";

//===----------------------------------------------------------------------===//
// What the report is made of
//===----------------------------------------------------------------------===//

/// A persistent state (parameter or optimizer state) of the program.
struct State {
  std::string name, kind, role, of;
  SmallVector<int64_t> localShape, globalShape;
  int64_t localBytes = 0, globalBytes = 0;
  /// Per dim, the mesh axes it is split over.
  SmallVector<SmallVector<std::string>> dimAxes;
  /// Whether the reported rank holds it (with pp, a rank holds only its
  /// pipeline stage's state).
  bool held = true;
};

/// An input or output slot of the train step.
struct Slot {
  std::string role;
  SmallVector<int64_t> localShape, globalShape;
  SmallVector<SmallVector<std::string>> dimAxes;
};

/// One communication instruction of a function.
struct Collective {
  std::string kind;
  SmallVector<std::string> axes;
  SmallVector<int64_t> shape, resultShape;
  int64_t bytes = 0, numElements = 0;
  std::optional<int64_t> dim;
  std::string cause;
};

struct Function {
  std::vector<Collective> collectives;
  SmallVector<std::string> callees;
};

/// A row of the collectives table.
struct CollectiveRow {
  int64_t count = 0, bytes = 0;
};

struct Memory {
  bool planned = false;
  int64_t frameBytes = 0;
  /// category -> live bytes at the peak (activation, grad, workspace, io).
  std::map<std::string, int64_t> peak;
};

struct Baseline {
  bool present = false;
  std::string path;
  int64_t worldSize = 1;
  int64_t stateBytes = 0, constantBytes = 0;
  std::map<std::string, int64_t> stateByKind;
  std::optional<int64_t> frameBytes;
  std::map<std::string, int64_t> peak;
};

struct Report {
  std::string modelName;
  json::Object model;
  /// The plan's keys, in the module attribute's order.
  SmallVector<std::pair<std::string, std::string>> plan;
  bool hasPlan = false;
  SmallVector<std::pair<std::string, int64_t>> mesh;
  int64_t worldSize = 1;
  int64_t zeroStage = 0;
  bool sequenceParallel = false;
  bool rolesFromEntries = false;
  std::vector<State> states;
  std::vector<Slot> inputs;
  SmallVector<std::string> zeroUnsharded;
  std::string entry;
  /// With pp: the stage whose program is reported, and a note saying so.
  std::optional<int64_t> ppStage;
  std::string entryNote;
  /// (cause rank, cause, op, axes) -> count and bytes, per step per rank.
  std::map<std::tuple<int, std::string, std::string, std::string>,
           CollectiveRow>
      rows;
  /// Functions with collectives of their own: name, calls per step,
  /// per-call collectives (op[axes] -> count).
  struct PerFunction {
    std::string name;
    int64_t calls = 0;
    /// Per call: "op[axes]" -> count, in order of appearance.
    std::vector<std::pair<std::string, int64_t>> perCall;
  };
  std::vector<PerFunction> perFunction;
  /// Other entries: name, collectives, bytes.
  std::vector<std::tuple<std::string, int64_t, int64_t>> otherEntries;
  Memory memory;
  Baseline baseline;
  /// Strategy rows: label, axis, text.
  std::vector<std::tuple<std::string, std::string, std::string>> strategies;
  /// Activation recomputation (the module's `tfm.recompute`, set by
  /// tfm-recompute) and the functions that recompute (full: the re-runs,
  /// selective: the backward functions), with their calls per step.
  std::string recompute;
  std::vector<std::pair<std::string, int64_t>> recomputeCalls;
};

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::string formatShape(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, "x");
  return s;
}

std::string formatBytes(int64_t bytes) {
  std::string s;
  llvm::raw_string_ostream os(s);
  double b = static_cast<double>(bytes);
  if (bytes < 1024)
    os << bytes << " B";
  else if (bytes < 1024 * 1024)
    os << llvm::format("%.2f KiB", b / 1024);
  else if (bytes < int64_t(1024) * 1024 * 1024)
    os << llvm::format("%.2f MiB", b / (1024 * 1024));
  else
    os << llvm::format("%.2f GiB", b / (1024 * 1024 * 1024));
  return s;
}

/// Order of the strategies in the collectives table.
int causeRank(StringRef cause) {
  if (cause == "DP")
    return 0;
  if (cause.starts_with("ZeRO"))
    return 1;
  if (cause == "TP")
    return 2;
  if (cause == "SP")
    return 3;
  if (cause == kScalarCause)
    return 5;
  return 4;
}

std::string joinAxes(ArrayRef<std::string> axes) {
  return llvm::join(axes, ",");
}

/// Axis -> the strategy family that owns it (by the names dist-apply-plan
/// gives the mesh axes).
std::string axisStrategy(StringRef axis) {
  if (axis == "dp")
    return "DP";
  if (axis == "tp")
    return "TP";
  return axis.upper();
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

SmallVector<SmallVector<std::string>> getDimAxes(dist::ShardingAttr sharding,
                                                 unsigned rank) {
  SmallVector<SmallVector<std::string>> out(rank);
  if (!sharding)
    return out;
  for (unsigned d = 0; d < rank && d < sharding.getRank(); ++d)
    for (StringAttr axis : sharding.getDimAxes(d))
      out[d].push_back(axis.str());
  return out;
}

bool usesAxis(ArrayRef<SmallVector<std::string>> dimAxes, StringRef axis,
              unsigned *dim = nullptr) {
  for (auto [d, axes] : llvm::enumerate(dimAxes))
    if (llvm::is_contained(axes, axis)) {
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

//===----------------------------------------------------------------------===//
// Reading the program
//===----------------------------------------------------------------------===//

/// The persistent state a rank's program reads or writes (with pp, only its
/// stage's) and its bytes.
struct HeldState {
  llvm::StringSet<> names;
  int64_t bytes = 0;
};

HeldState getHeldState(ModuleOp module, rt::FuncOp fn) {
  HeldState held;
  fn.walk([&](rt::StateOp op) { held.names.insert(op.getName()); });
  for (auto &name : held.names)
    if (auto def = module.lookupSymbol<rt::StateDefOp>(name.getKey()))
      held.bytes += def.getBufferType().getSizeInBytes();
  return held;
}

class Explainer {
public:
  Explainer(ModuleOp module, Report &report) : module(module), r(report) {}

  /// Reads the builder's roles off the entry functions of a func-form
  /// module (before rt-lower drops them).
  static void readRoles(ModuleOp module, llvm::StringMap<std::string> &roles);

  LogicalResult read(const llvm::StringMap<std::string> &roles);

private:
  void readHeader();
  void readStates(const llvm::StringMap<std::string> &roles);
  void readFunctions();
  void expand(StringRef func, int64_t times);
  std::string classify(const Collective &c);
  /// Size of a mesh axis (0 if the mesh has none).
  int64_t axisSize(StringRef axis) const;
  void deriveStrategies();

  ModuleOp module;
  Report &r;
  llvm::StringMap<Function> functions;
  llvm::StringMap<int64_t> calls;
  /// The rows of the entry being expanded.
  decltype(Report::rows) rows;
  /// Collectives tagged SP (for the SP row).
  SmallVector<const Collective *> spCollectives;
};

void Explainer::readRoles(ModuleOp module,
                          llvm::StringMap<std::string> &roles) {
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
}

LogicalResult Explainer::read(const llvm::StringMap<std::string> &roles) {
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
    Attribute sharding = slot->getAttr("rt.sharding");
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
  calls.clear();
  rows.clear();
  expand(step.getSymName(), 1);
  r.rows = rows;
  if (auto mode = module->getAttrOfType<StringAttr>(tfm::kRecomputeAttrName))
    r.recompute = mode.getValue().str();
  for (auto func : module.getOps<rt::FuncOp>())
    if ((func.getSymName().contains("_recompute_") ||
         func.getSymName().contains("_selective_bwd")) &&
        calls.count(func.getSymName()))
      r.recomputeCalls.emplace_back(func.getSymName().str(),
                                    calls[func.getSymName()]);
  for (auto func : module.getOps<rt::FuncOp>()) {
    const Function &f = functions[func.getSymName()];
    if (f.collectives.empty() || !calls.count(func.getSymName()))
      continue;
    Report::PerFunction pf;
    pf.name = func.getSymName().str();
    pf.calls = calls[func.getSymName()];
    for (const Collective &c : f.collectives) {
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
    calls.clear();
    rows.clear();
    expand(func.getSymName(), 1);
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
  return success();
}

void Explainer::readHeader() {
  if (auto model = module->getAttrOfType<DictionaryAttr>(tfm::kModelAttrName)) {
    for (NamedAttribute entry : model) {
      StringRef key = entry.getName().getValue();
      if (auto s = dyn_cast<StringAttr>(entry.getValue()))
        r.model[key] = s.str();
      else if (auto i = dyn_cast<IntegerAttr>(entry.getValue()))
        r.model[key] = i.getInt();
      else if (auto b = dyn_cast<BoolAttr>(entry.getValue()))
        r.model[key] = b.getValue();
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
  for (auto mesh : module.getOps<dist::MeshOp>()) {
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

void Explainer::readStates(const llvm::StringMap<std::string> &roles) {
  for (auto def : module.getOps<rt::StateDefOp>()) {
    State s;
    s.name = def.getSymName().str();
    s.kind = rt::stringifyStateKind(def.getKind()).str();
    if (def.getOf())
      s.of = def.getOf()->str();
    if (auto role = def->getAttrOfType<StringAttr>("rt.role"))
      s.role = role.str();
    else if (auto it = roles.find(s.name); it != roles.end())
      s.role = it->second;
    rt::BufferType type = def.getBufferType();
    s.localShape.assign(type.getShape().begin(), type.getShape().end());
    Attribute sharding = def->getAttr("rt.sharding");
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

/// The first tensor of a flat buffer of a bucketed collective
/// (dist-bucket-collectives) on its full and its per-rank side, its
/// split dim, and the largest tensor's element count: a bucketed collective
/// is described by its members, not by the flat buffer.
struct BucketMember {
  SmallVector<int64_t> full, shard;
  std::optional<int64_t> dim;
  int64_t maxElements = 0;
};

/// Reads the layout of a `dist.pack` / `dist.unpack` kernel whose unpacked
/// side is `tensors`.
static BucketMember readBucketMember(rt::KernelOp kernel, ValueRange tensors) {
  BucketMember m;
  int64_t groups = 1;
  SmallVector<int64_t> dims;
  if (DictionaryAttr attrs = kernel.getAttrsAttr()) {
    if (auto g = attrs.getAs<IntegerAttr>("num_groups"))
      groups = g.getInt();
    if (auto d = attrs.getAs<DenseI64ArrayAttr>("scatter_dims"))
      llvm::append_range(dims, d.asArrayRef());
  }
  for (Value tensor : tensors)
    m.maxElements = std::max(
        m.maxElements, cast<rt::BufferType>(tensor.getType()).getNumElements());
  if (tensors.empty())
    return m;
  auto shape = cast<rt::BufferType>(tensors.front().getType()).getShape();
  m.full.assign(shape.begin(), shape.end());
  m.shard = m.full;
  if (!dims.empty() && groups > 0 && dims.front() >= 0 &&
      dims.front() < static_cast<int64_t>(m.full.size())) {
    m.dim = dims.front();
    m.shard[*m.dim] /= groups;
  }
  return m;
}

void Explainer::readFunctions() {
  for (auto func : module.getOps<rt::FuncOp>()) {
    Function &f = functions[func.getSymName()];
    // Flat buffers: packed before a reduction, unpacked after a gather.
    DenseMap<Value, BucketMember> packed, unpacked;
    func.walk([&](rt::KernelOp kernel) {
      if (kernel.getKernel() == "dist.pack" && kernel.getResults().size() == 1)
        packed[kernel.getResults().front()] =
            readBucketMember(kernel, kernel.getArgs());
      else if (kernel.getKernel() == "dist.unpack" &&
               kernel.getArgs().size() == 1)
        unpacked[kernel.getArgs().front()] =
            readBucketMember(kernel, kernel.getResults());
    });
    func.walk([&](Operation *op) {
      if (auto call = dyn_cast<rt::CallOp>(op)) {
        f.callees.push_back(call.getCallee().str());
        return;
      }
      auto kernel = dyn_cast<rt::KernelOp>(op);
      if (!kernel)
        return;
      StringRef name = kernel.getKernel();
      if (!name.consume_front("dist."))
        return;
      // Local ops and the completion of an async op move no data.
      if (name == "wait" || name == "shard_slice" || name == "axis_index" ||
          name == "pack" || name == "unpack")
        return;
      name.consume_back("_start");
      Collective c;
      c.kind = name.str();
      DictionaryAttr attrs = kernel.getAttrsAttr();
      if (attrs) {
        if (auto axes = attrs.getAs<ArrayAttr>("axes"))
          for (Attribute axis : axes)
            if (auto s = dyn_cast<StringAttr>(axis))
              c.axes.push_back(s.str());
        for (StringRef key : {"gather_dim", "scatter_dim", "split_dim"})
          if (auto dim = attrs.getAs<IntegerAttr>(key)) {
            c.dim = dim.getInt();
            break;
          }
      }
      Value data = !kernel.getArgs().empty()      ? kernel.getArgs().front()
                   : !kernel.getResults().empty() ? kernel.getResults().front()
                                                  : Value();
      if (data) {
        auto type = cast<rt::BufferType>(data.getType());
        c.shape.assign(type.getShape().begin(), type.getShape().end());
        c.bytes = type.getSizeInBytes();
        c.numElements = type.getNumElements();
      }
      if (!kernel.getResults().empty()) {
        auto type = cast<rt::BufferType>(kernel.getResults().front().getType());
        c.resultShape.assign(type.getShape().begin(), type.getShape().end());
      }
      // A bucketed collective: classified by its tensors (bytes stay those
      // of the flat buffer).
      auto inPack = data ? packed.find(data) : packed.end();
      auto outUnpack = kernel.getResults().empty()
                           ? unpacked.end()
                           : unpacked.find(kernel.getResults().front());
      // A gather's tensors are in its unpack (its pack has no split dims).
      bool gathered = outUnpack != unpacked.end() &&
                      (c.kind == "all_gather" || inPack == packed.end());
      const BucketMember *member = gathered                 ? &outUnpack->second
                                   : inPack != packed.end() ? &inPack->second
                                                            : nullptr;
      if (member) {
        c.shape = gathered ? member->shard : member->full;
        c.resultShape = gathered ? member->full : member->shard;
        c.numElements = member->maxElements;
        if (member->dim)
          c.dim = member->dim;
      }
      c.cause = classify(c);
      f.collectives.push_back(std::move(c));
    });
  }
}

std::string Explainer::classify(const Collective &c) {
  if (c.numElements <= 1)
    return kScalarCause.str();
  // Context parallelism's ring attention: K/V chunks and their gradient
  // accumulators shifted around the cp ring.
  if (c.kind == "ppermute" && llvm::is_contained(c.axes, "cp"))
    return "CP ring";
  // Ulysses: q/k/v (and dout) from sequence chunks to head groups, the
  // attention's out (and dq/dk/dv) back.
  if (c.kind == "all_to_all" && c.axes.size() == 1 && c.axes[0] == "cp")
    return "CP Ulysses";
  // Token dispatch / combine of expert parallelism.
  if (c.kind == "all_to_all" && c.axes.size() == 1 && c.axes[0] == "ep")
    return "EP";
  // The data-parallel group is dp x cp (and ep, which folds over dp and
  // carries the batch and the dense gradients too): context-parallel ranks
  // hold the same weights, sum the same gradients and share ZeRO's shards.
  auto isData = [](StringRef a) { return a == "dp" || a == "cp" || a == "ep"; };
  bool dataOnly = !c.axes.empty() && llvm::all_of(c.axes, isData);
  if (dataOnly && c.kind == "all_reduce")
    return "DP";
  if (dataOnly && r.zeroStage > 0 &&
      (c.kind == "all_gather" || c.kind == "reduce_scatter") &&
      llvm::is_contained(c.axes, "dp") == (axisSize("dp") > 1) &&
      llvm::is_contained(c.axes, "cp") == (axisSize("cp") > 1))
    return "ZeRO-" + std::to_string(r.zeroStage);
  dataOnly = !c.axes.empty() && llvm::all_of(c.axes, [](StringRef a) {
    return a == "dp" || a == "ep";
  });
  bool tpOnly = !c.axes.empty() &&
                llvm::all_of(c.axes, [](StringRef a) { return a == "tp"; });
  // Gathers and scatters over dp exist for ZeRO's storage layouts (also
  // when a tp-split tensor is stored split over {dp, tp}).
  if ((llvm::is_contained(c.axes, "dp") || llvm::is_contained(c.axes, "ep")) &&
      c.kind != "all_reduce" && r.zeroStage > 0)
    return "ZeRO-" + std::to_string(r.zeroStage);
  if (dataOnly)
    return "DP";
  if (tpOnly) {
    if (r.sequenceParallel &&
        (c.kind == "all_gather" || c.kind == "reduce_scatter") && c.dim &&
        *c.dim == 1 && c.shape.size() >= 3)
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

void Explainer::expand(StringRef funcName, int64_t times) {
  auto it = functions.find(funcName);
  if (it == functions.end())
    return;
  calls[funcName] += times;
  for (const Collective &c : it->second.collectives) {
    CollectiveRow &row =
        rows[{causeRank(c.cause), c.cause, c.kind, joinAxes(c.axes)}];
    row.count += times;
    row.bytes += times * c.bytes;
    if (c.cause == "SP")
      spCollectives.push_back(&c);
  }
  for (const std::string &callee : it->second.callees)
    expand(callee, times);
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

int64_t Explainer::axisSize(StringRef axis) const {
  for (auto &[name, size] : r.mesh)
    if (name == axis)
      return size;
  return 0;
}

void Explainer::deriveStrategies() {
  int64_t tp = axisSize("tp"), cp = axisSize("cp"), ep = axisSize("ep");
  // The data-parallel degree: the mesh axis `dp`, times `ep` when expert
  // parallelism folds over the dp ranks (then `dp` is the expert-data-
  // parallel group).
  int64_t edp = std::max<int64_t>(axisSize("dp"), 1);
  int64_t dp = ep > 1 ? edp * ep : axisSize("dp");
  std::string dataAxes = ep > 1 ? (edp > 1 ? "dp,ep" : "ep") : "dp";
  // The data-parallel group (gradient sums, ZeRO shards): the data axes x cp.
  std::string dataGroup =
      cp > 1 ? (dp > 1 ? dataAxes + " x cp" : "cp") : dataAxes;
  std::string dataDegree = cp > 1 ? (dp > 1 ? "dp*cp=" + std::to_string(dp * cp)
                                            : "cp=" + std::to_string(cp))
                                  : "dp=" + std::to_string(dp);
  auto onData = [&](ArrayRef<SmallVector<std::string>> dimAxes,
                    unsigned *dim = nullptr) {
    return usesAxis(dimAxes, "dp", dim) || usesAxis(dimAxes, "ep", dim);
  };

  // "tokens dim 0 (16x64 -> 8x64), ...": the inputs split on any of `axes`.
  auto splitInputs = [&](ArrayRef<StringRef> axes) {
    SmallVector<std::string> parts;
    for (const Slot &s : r.inputs) {
      unsigned dim;
      if (llvm::none_of(
              axes, [&](StringRef a) { return usesAxis(s.dimAxes, a, &dim); }))
        continue;
      parts.push_back(s.role + " dim " + std::to_string(dim) + " (" +
                      formatShape(s.globalShape) + " -> " +
                      formatShape(s.localShape) + ")");
    }
    return parts;
  };

  if (dp > 1) {
    SmallVector<std::string> parts = splitInputs({"dp", "ep"});
    std::string text = parts.empty() ? "no input split on " + dataAxes
                                     : "batch: " + llvm::join(parts, ", ");
    text += "; activations follow the batch; gradients are summed over " +
            dataGroup;
    if (ep > 1)
      text += edp > 1 ? " (expert weights: over dp, see EP)"
                      : " (expert weights: not at all, see EP)";
    r.strategies.emplace_back("DP", "dp=" + std::to_string(dp), text);
  }

  if (cp > 1) {
    SmallVector<std::string> parts = splitInputs({"cp"});
    bool ulysses = false;
    for (auto &[key, value] : r.plan)
      ulysses |= key == "cp_attention" && value == "ulysses";
    int64_t count = 0;
    for (auto &[key, row] : r.rows)
      if (std::get<1>(key) == (ulysses ? "CP Ulysses" : "CP ring"))
        count += row.count;
    std::string text = parts.empty() ? std::string("no input split on cp")
                                     : "sequence: " + llvm::join(parts, ", ");
    text += " (contiguous chunks); activations follow the sequence; ";
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
    r.strategies.emplace_back("CP", "cp=" + std::to_string(cp), text);
  }

  // EP: the expert weights' E dim on ep; the all-to-alls of dispatch and
  // combine.
  // The plan's ep: the mesh axis `ep` is only its dp part when the ep group
  // also folds over the cp ranks (then the experts are split on {ep, cp}).
  int64_t planEp = ep;
  for (auto &[k, value] : r.plan)
    if (k == "ep")
      planEp = std::max<int64_t>(1, std::atoll(value.c_str()));
  bool epOverCp = planEp > 1 && cp > 1;
  if (planEp > 1) {
    SmallVector<const State *> experts;
    int64_t global = 0, local = 0, layers = 0, perRank = 0, all = 0;
    for (const State &s : r.states) {
      unsigned dim;
      // Expert weights by role: under ZeRO-3 the dense weights are stored
      // on {dp, ep} too.
      if (s.kind != "param" || !s.held ||
          !StringRef(s.role).starts_with("expert_") ||
          !(usesAxis(s.dimAxes, "ep", &dim) ||
            (epOverCp && usesAxis(s.dimAxes, "cp", &dim))))
        continue;
      experts.push_back(&s);
      global += s.globalBytes;
      local += s.localBytes;
      layers += s.role == "expert_gate";
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
    r.strategies.emplace_back("EP", "ep=" + std::to_string(planEp), text);
  }

  // ZeRO: states split on the data-parallel group (optimizer states;
  // parameters for stage 3).
  SmallVector<const State *> optSharded, optAll, paramSharded;
  // Expert weights (split on ep by EP, not by ZeRO): their states count as
  // ZeRO-split only on dp.
  llvm::StringSet<> expertParams;
  for (const State &s : r.states)
    if (s.kind == "param" && usesAxis(s.dimAxes, "ep"))
      expertParams.insert(s.name);
  for (const State &s : r.states) {
    if (!s.held)
      continue;
    bool onGroup = expertParams.contains(s.of)
                       ? usesAxis(s.dimAxes, "dp")
                       : onData(s.dimAxes) || usesAxis(s.dimAxes, "cp");
    if (s.kind == "param") {
      // ZeRO-3's storage axes (an expert weight's `ep` is EP's split).
      if (usesAxis(s.dimAxes, "dp") || usesAxis(s.dimAxes, "cp"))
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
    r.strategies.emplace_back(label, dataDegree, text);
  }

  if (tp > 1) {
    // Parameters by how tp splits them.
    SmallVector<const State *> columns, rowsSplit, vocab, vectors, replicated;
    int64_t global = 0, local = 0;
    for (const State &s : r.states) {
      if (s.kind != "param")
        continue;
      // Without dp (storage only, ZeRO-3): what tp alone does.
      unsigned dim;
      if (!usesAxis(s.dimAxes, "tp", &dim)) {
        replicated.push_back(&s);
        continue;
      }
      global += s.globalBytes;
      local += s.localBytes;
      bool isVocab = s.role == "embedding" || s.role == "lm_head";
      if (isVocab)
        vocab.push_back(&s);
      else if (s.localShape.size() < 2)
        vectors.push_back(&s);
      else if (dim + 1 == s.localShape.size())
        columns.push_back(&s);
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
    add("vocab", vocab);
    add("vectors", vectors);
    add("replicated", replicated);
    std::string text = llvm::join(parts, "; ");
    text += "; split parameters per rank " + formatBytes(global) + " -> " +
            formatBytes(local);
    r.strategies.emplace_back("TP", "tp=" + std::to_string(tp), text);
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
    r.strategies.emplace_back("SP", "tp=" + std::to_string(tp), text);
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
    r.strategies.emplace_back("Recomp", r.recompute, text);
  }
}

//===----------------------------------------------------------------------===//
// Baseline (the one-rank artifact)
//===----------------------------------------------------------------------===//

LogicalResult readBaseline(StringRef path, Baseline &b, ModuleOp module) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return module.emitError() << "dist-explain: cannot read baseline '" << path
                              << "': " << buffer.getError().message();
  llvm::Expected<json::Value> value = json::parse((*buffer)->getBuffer());
  if (!value)
    return module.emitError()
           << "dist-explain: baseline '" << path
           << "' is not JSON: " << llvm::toString(value.takeError());
  json::Object *top = value->getAsObject();
  json::Object *memory = top ? top->getObject("memory") : nullptr;
  if (!top || top->getString("format") != "autoshard-artifact" || !memory)
    return module.emitError()
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

//===----------------------------------------------------------------------===//
// Writing the report
//===----------------------------------------------------------------------===//

/// The memory table: (label, with plan, without plan or -1 for n/a).
struct MemoryRow {
  /// Key in the JSON report, label in the text one.
  std::string key, label;
  int64_t with = 0;
  std::optional<int64_t> without;
};

std::vector<MemoryRow> memoryRows(const Report &r) {
  std::vector<MemoryRow> rows;
  std::map<std::string, std::pair<int64_t, int64_t>> byKind;
  // Without the plan one device holds every state; with pp a rank holds
  // only its stage's.
  for (const State &s : r.states) {
    auto &[local, global] = byKind[s.kind];
    if (s.held)
      local += s.localBytes;
    global += s.globalBytes;
  }
  int64_t stateWith = 0, stateWithout = 0;
  for (auto [kind, label] :
       {std::pair<StringRef, StringRef>{"param", "state: params"},
        {"opt_m", "state: optimizer m"},
        {"opt_v", "state: optimizer v"}}) {
    auto [local, global] = byKind[kind.str()];
    rows.push_back({"state_" + kind.str(), label.str(), local, global});
    stateWith += local;
    stateWithout += global;
  }
  rows.push_back({"state_total", "state: total", stateWith, stateWithout});
  std::optional<int64_t> frameWithout;
  if (r.baseline.present && r.baseline.frameBytes)
    frameWithout = *r.baseline.frameBytes;
  if (r.memory.planned) {
    rows.push_back(
        {"frame", "transient: frame", r.memory.frameBytes, frameWithout});
    int64_t liveWith = 0, liveWithout = 0;
    for (auto &[category, bytes] : r.memory.peak)
      liveWith += bytes;
    for (auto &[category, bytes] : r.baseline.peak)
      liveWithout += bytes;
    for (auto &[category, bytes] : r.memory.peak) {
      std::optional<int64_t> without;
      if (r.baseline.present) {
        auto it = r.baseline.peak.find(category);
        without = it == r.baseline.peak.end() ? 0 : it->second;
      }
      rows.push_back(
          {"peak_" + category, "  at peak: " + category, bytes, without});
    }
    std::optional<int64_t> live;
    if (r.baseline.present)
      live = liveWithout;
    rows.push_back(
        {"peak_live_total", "  at peak: live total", liveWith, live});
    std::optional<int64_t> total;
    if (frameWithout)
      total = stateWithout + *frameWithout;
    rows.push_back({"total", "total: state + frame",
                    stateWith + r.memory.frameBytes, total});
  }
  return rows;
}

void writeText(const Report &r, llvm::raw_ostream &os) {
  os << "dist-explain: "
     << (r.modelName.empty() ? std::string("(unnamed model)") : r.modelName)
     << "\n";
  os << "plan: ";
  if (!r.hasPlan) {
    os << "none (no dist.plan)";
  } else {
    // The keys of this issue's strategies first, then the others.
    SmallVector<StringRef> main = {"dp", "tp", "sp", "zero"};
    for (auto &[k, value] : r.plan)
      if (k == "ep" && value != "1")
        main.push_back("ep");
    auto valueOf = [&](StringRef key) {
      for (auto &[k, value] : r.plan)
        if (k == key)
          return StringRef(value);
      return StringRef();
    };
    if (valueOf("cp") != "1" && !valueOf("cp").empty())
      main.insert(main.begin() + 1, "cp");
    if (valueOf("pp") != "1" && !valueOf("pp").empty())
      main.insert(main.begin(), {"pp", "vpp", "schedule"});
    if (valueOf("mb") != "1" && !valueOf("mb").empty())
      main.push_back("mb");
    SmallVector<std::string> parts, others;
    for (StringRef key : main)
      for (auto &[k, value] : r.plan)
        if (k == key)
          parts.push_back(k + "=" + value);
    for (auto &[k, value] : r.plan)
      if (!llvm::is_contained(main, k))
        others.push_back(k + "=" + value);
    os << llvm::join(parts, ",");
    if (!others.empty())
      os << " (also " << llvm::join(others, ",") << ")";
  }
  os << "\nmesh: ";
  if (r.mesh.empty()) {
    os << "none";
  } else {
    SmallVector<std::string> parts;
    for (auto &[name, size] : r.mesh)
      parts.push_back(name + "=" + std::to_string(size));
    os << "[" << llvm::join(parts, ", ") << "]";
  }
  os << ", world size " << r.worldSize << "\n";
  if (const json::Value *params = r.model.get("num_parameters"))
    if (auto n = params->getAsInteger()) {
      os << "model: " << *n << " parameters";
      for (StringRef key : {"num_layers", "hidden_size", "num_heads"})
        if (auto v = r.model.getInteger(key))
          os << ", " << key << " " << *v;
      if (auto b = r.model.getInteger("batch"))
        if (auto s = r.model.getInteger("seq_len"))
          os << ", batch " << *b << " x seq " << *s;
      os << "\n";
    }

  os << "\nstrategies (what is split on which axis, from the entry's "
        "shardings";
  os << (r.rolesFromEntries ? "; roles from tfm.role" : "") << ")\n";
  if (r.strategies.empty())
    os << "  none: every tensor is replicated\n";
  for (auto &[label, axis, text] : r.strategies)
    os << "  " << llvm::left_justify(label, 7) << " "
       << llvm::left_justify(axis, 5) << " " << text << "\n";

  os << "\ncollectives per " << r.entry << r.entryNote
     << (r.entryNote.empty() ? "" : ",")
     << " per rank (calls expanded; bytes = local operand)\n";
  os << "  " << llvm::left_justify("strategy", 15) << " "
     << llvm::left_justify("op", 15) << " " << llvm::left_justify("axes", 6)
     << " " << llvm::right_justify("count", 6) << " "
     << llvm::right_justify("bytes/step", 12) << "\n";
  int64_t totalCount = 0, totalBytes = 0;
  for (auto &[key, row] : r.rows) {
    auto &[rank, cause, op, axes] = key;
    os << "  " << llvm::left_justify(cause, 15) << " "
       << llvm::left_justify(op, 15) << " " << llvm::left_justify(axes, 6)
       << " " << llvm::right_justify(std::to_string(row.count), 6) << " "
       << llvm::right_justify(formatBytes(row.bytes), 12) << "\n";
    totalCount += row.count;
    totalBytes += row.bytes;
  }
  os << "  " << llvm::left_justify("total", 38) << " "
     << llvm::right_justify(std::to_string(totalCount), 6) << " "
     << llvm::right_justify(formatBytes(totalBytes), 12) << "\n";
  if (!r.perFunction.empty()) {
    os << "  per call:\n";
    for (const Report::PerFunction &f : r.perFunction) {
      SmallVector<std::string> parts;
      for (auto &[key, count] : f.perCall)
        parts.push_back(key + " x" + std::to_string(count));
      os << "    " << f.name << " (called " << f.calls
         << "x): " << llvm::join(parts, ", ") << "\n";
    }
  }
  for (auto &[name, count, bytes] : r.otherEntries)
    os << "  entry " << name << ": " << count << " collectives, "
       << formatBytes(bytes) << " per call\n";

  os << "\nmemory per rank (" << r.entry << r.entryNote << ")";
  os << "\n  " << llvm::left_justify("", 24) << " "
     << llvm::right_justify("with plan", 12) << " "
     << llvm::right_justify("without", 12) << " "
     << llvm::right_justify("ratio", 6) << "\n";
  for (const MemoryRow &row : memoryRows(r)) {
    os << "  " << llvm::left_justify(row.label, 24) << " "
       << llvm::right_justify(formatBytes(row.with), 12) << " "
       << llvm::right_justify(
              row.without ? formatBytes(*row.without) : std::string("n/a"), 12);
    if (row.without && *row.without > 0)
      os << " "
         << llvm::right_justify(
                llvm::formatv("{0:F2}", double(row.with) / double(*row.without))
                    .str(),
                6);
    os << "\n";
  }
  os << "  without = one rank: state from the global shapes x element size";
  if (r.baseline.present)
    os << "; transient from " << r.baseline.path << " (world size "
       << r.baseline.worldSize << ", state there "
       << formatBytes(r.baseline.stateBytes) << ")";
  else if (r.memory.planned)
    os << "; transient n/a (pass baseline=<one-rank artifact.json>)";
  os << "\n";
  if (!r.memory.planned)
    os << "  transient: not planned\n";
}

json::Value toJson(const Report &r) {
  json::Object top;
  top["model"] = json::Object(r.model);
  json::Object plan;
  for (auto &[key, value] : r.plan) {
    long long i;
    if (!StringRef(value).getAsInteger(10, i))
      plan[key] = int64_t(i);
    else
      plan[key] = value;
  }
  top["plan"] = std::move(plan);
  json::Array axes, sizes;
  for (auto &[name, size] : r.mesh) {
    axes.push_back(name);
    sizes.push_back(size);
  }
  top["mesh"] =
      json::Object{{"axes", std::move(axes)}, {"sizes", std::move(sizes)}};
  top["world_size"] = r.worldSize;
  json::Array strategies;
  for (auto &[label, axis, text] : r.strategies)
    strategies.push_back(
        json::Object{{"strategy", label}, {"axis", axis}, {"split", text}});
  top["strategies"] = std::move(strategies);
  json::Array collectives;
  for (auto &[key, row] : r.rows) {
    auto &[rank, cause, op, axesName] = key;
    json::Array axesList;
    for (StringRef axis : llvm::split(axesName, ","))
      if (!axis.empty())
        axesList.push_back(axis.str());
    collectives.push_back(json::Object{{"strategy", cause},
                                       {"op", op},
                                       {"axes", std::move(axesList)},
                                       {"count", row.count},
                                       {"bytes", row.bytes}});
  }
  top["entry"] = r.entry;
  if (r.ppStage)
    top["pp_stage"] = *r.ppStage;
  top["collectives"] = std::move(collectives);
  json::Object perFunction;
  for (const Report::PerFunction &f : r.perFunction) {
    json::Object perCall;
    for (auto &[key, count] : f.perCall)
      perCall[key] = count;
    perFunction[f.name] =
        json::Object{{"calls", f.calls}, {"per_call", std::move(perCall)}};
  }
  top["functions"] = std::move(perFunction);
  json::Object others;
  for (auto &[name, count, bytes] : r.otherEntries)
    others[name] = json::Object{{"count", count}, {"bytes", bytes}};
  top["other_entries"] = std::move(others);
  // Bytes per rank with the plan and without it (null: unknown).
  json::Object memory;
  for (const MemoryRow &row : memoryRows(r))
    memory[row.key] =
        json::Object{{"with", row.with},
                     {"without", row.without ? json::Value(*row.without)
                                             : json::Value(nullptr)}};
  if (r.baseline.present)
    memory["baseline"] = r.baseline.path;
  top["memory"] = std::move(memory);
  return top;
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// Pipeline parallelism: what each stage holds and the unit-cost simulation
/// of the schedule the stages were compiled to (`dist.pipeline_schedule`,
/// recorded by dist-pipeline-split): makespan, bubble (algorithms.md §1.2,
/// both conventions) and peak in-flight activations per rank.
void writePipeline(ModuleOp module, llvm::raw_ostream &os) {
  auto text =
      module->getAttrOfType<StringAttr>(dist::kPipelineScheduleAttrName);
  if (!text)
    return;
  pipeline::OrError<pipeline::PipelineSchedule> schedule =
      pipeline::parseSchedule(text.getValue(), "compiled");
  if (!schedule) {
    os << "\npipeline: cannot read dist.pipeline_schedule: " << schedule.error()
       << "\n";
    return;
  }
  const pipeline::PipelineSchedule &sch = *schedule;
  std::string kind = "?";
  if (auto plan = module->getAttrOfType<DictionaryAttr>(dist::kPlanAttrName))
    if (auto name = plan.getAs<StringAttr>("schedule"))
      kind = name.getValue().str();
  int64_t vpp = sch.numRanks ? sch.numStages / sch.numRanks : 1;
  os << "\npipeline (pp=" << sch.numRanks << ", " << sch.numStages
     << " stages, " << sch.numMicrobatches << " microbatches, schedule " << kind
     << ")\n";
  // The layers of each stage and their cost (dist-pipeline-split's split).
  auto stages =
      module->getAttrOfType<DictionaryAttr>(dist::kPipelineStagesAttrName);
  ArrayRef<int64_t> firstLayer, stageFlops;
  int64_t numLayers = 0;
  if (stages) {
    firstLayer = stages.getAs<DenseI64ArrayAttr>("first_layer").asArrayRef();
    stageFlops = stages.getAs<DenseI64ArrayAttr>("flops").asArrayRef();
    numLayers = stages.getAs<IntegerAttr>("num_layers").getInt();
  }
  if (static_cast<int64_t>(firstLayer.size()) == sch.numStages &&
      stageFlops.size() == firstLayer.size()) {
    os << "  stages (layers split by FLOPs of microbatch 0, forward + "
          "backward; embedding on the first, final norm + head + loss on "
          "the last):\n";
    for (int64_t st = 0; st < sch.numStages; ++st) {
      int64_t first = firstLayer[st];
      int64_t last =
          (st + 1 < sch.numStages ? firstLayer[st + 1] : numLayers) - 1;
      std::string layers =
          first == last ? llvm::formatv("layer {0}", first).str()
                        : llvm::formatv("layers {0}-{1}", first, last).str();
      os << llvm::formatv("    stage {0} on rank {1}: {2}{3}, {4:F1} "
                          "MFLOP\n",
                          st, sch.stageToRank[st], layers,
                          st == 0                   ? " + embedding"
                          : st + 1 == sch.numStages ? " + head, loss"
                                                    : "",
                          stageFlops[st] / 1e6);
    }
  }
  // Per rank: the state it holds and the largest train_step frame.
  for (auto fn : module.getOps<rt::FuncOp>()) {
    if (!fn.getPpStage() || fn.getEntry() != StringRef("train_step"))
      continue;
    HeldState held = getHeldState(module, fn);
    int64_t frame = fn.getFrameBytes().value_or(0);
    os << "  rank " << *fn.getPpStage() << " (" << fn.getSymName()
       << "): state " << formatBytes(held.bytes) << " held ("
       << held.names.size() << " tensors), frame " << formatBytes(frame)
       << ", total " << formatBytes(held.bytes + frame) << "\n";
  }
  os << "  per-rank order (algorithms.md §1.5 format):\n";
  std::string order = pipeline::formatSchedule(sch);
  for (StringRef line : llvm::split(StringRef(order).trim(), '\n'))
    os << "    " << line << "\n";
  bool split = llvm::any_of(sch.rankOrders, [](const auto &ops) {
    return llvm::any_of(ops, [](const pipeline::PipelineOp &op) {
      return op.kind == pipeline::PipelineOp::Kind::I;
    });
  });
  pipeline::SimulationResult sim =
      pipeline::simulateSchedule(sch, pipeline::SimulationOptions());
  if (sim.deadlocked) {
    os << "  unit-cost simulation: DEADLOCK: " << sim.deadlockReport << "\n";
    return;
  }
  double p = sch.numRanks, m = sch.numMicrobatches;
  // The ideal bubble of the schedule family (algorithms.md §1.2).
  double ideal = (p - 1) / m;
  std::string formula = "(p-1)/m";
  if (split && vpp == 1) {
    ideal = (p - 1) / (3 * m);
    formula = "(p-1)/(3m), ZB-H1";
  } else if (kind == "interleaved") {
    ideal = (p - 1) / (vpp * m);
    formula = "(p-1)/(v*m)";
  }
  os << llvm::formatv("  unit-cost simulation ({0} per stage-microbatch, no "
                      "communication time): makespan {1}, bubble {2:F3} of "
                      "the ideal time ({3} = {4:F3}), {5:F3} of the wall "
                      "time\n",
                      split ? "F=1, I=1, W=1" : "F=1, B=2", sim.makespan,
                      sim.idleOverBusy, formula, ideal, sim.idleOverMakespan);
  os << "  peak in-flight activations per rank (microbatches): [";
  llvm::interleaveComma(sim.peakActivations, os);
  os << "]\n";
  // The same schedule with each stage's ops weighted by its FLOPs (F:B =
  // 1:2, I = W = B/2), normalized to the mean stage: what an unbalanced
  // split costs.
  if (static_cast<int64_t>(stageFlops.size()) == sch.numStages) {
    double mean = 0;
    for (int64_t f : stageFlops)
      mean += static_cast<double>(f) / sch.numStages;
    if (mean > 0) {
      pipeline::SimulationOptions weighted;
      for (int64_t f : stageFlops) {
        double w = static_cast<double>(f) / mean;
        pipeline::OpCosts c;
        c.forward = w;
        c.backward = 2 * w;
        c.inputGrad = w;
        c.weightGrad = w;
        weighted.stageCosts.push_back(c);
      }
      pipeline::SimulationResult ws = pipeline::simulateSchedule(sch, weighted);
      if (!ws.deadlocked)
        os << llvm::formatv("  FLOP-weighted simulation (stage costs "
                            "relative to the mean stage): makespan {0:F2}, "
                            "bubble {1:F3} of the ideal time\n",
                            ws.makespan, ws.idleOverBusy);
    }
  }
}

struct DistExplainPass : public dist::impl::DistExplainBase<DistExplainPass> {
  using DistExplainBase::DistExplainBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (format != "text" && format != "json") {
      module.emitError() << "dist-explain: format must be 'text' or 'json', "
                            "found '"
                         << format << "'";
      return signalPassFailure();
    }

    // The rt form, planned: lower / plan a copy if needed.
    bool hasRt = !module.getOps<rt::FuncOp>().empty();
    bool planned =
        hasRt && llvm::all_of(module.getOps<rt::FuncOp>(),
                              [](rt::FuncOp f) { return f.isPlanned(); });
    llvm::StringMap<std::string> roles;
    Report report;
    OwningOpRef<ModuleOp> copy;
    ModuleOp program = module;
    if (!hasRt) {
      Explainer::readRoles(module, roles);
      report.rolesFromEntries = !roles.empty();
    }
    if (!planned) {
      copy = module.clone();
      auto lower = [&](OpPassManager &pm) {
        if (hasRt)
          pm.addPass(rt::createRtPlanMemory());
        else
          rt::buildRtLoweringPipeline(pm, /*fuseEpilogues=*/true);
      };
      if (failed(lowerCopy(*copy, lower,
                           hasRt
                               ? "rt-plan-memory"
                               : "rt-lower,rt-fuse-epilogues,rt-plan-memory")))
        return signalPassFailure();
      program = *copy;
    }

    if (!baseline.empty() &&
        failed(readBaseline(baseline, report.baseline, module)))
      return signalPassFailure();
    Explainer explainer(program, report);
    if (failed(explainer.read(roles)))
      return signalPassFailure();
    // A one-rank program is its own baseline.
    if (!report.baseline.present && report.worldSize == 1 &&
        report.memory.planned) {
      Baseline &b = report.baseline;
      b.present = true;
      b.path = "this program";
      b.frameBytes = report.memory.frameBytes;
      b.peak = report.memory.peak;
      for (const State &s : report.states)
        b.stateBytes += s.localBytes;
    }

    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(output, &error);
    if (!file) {
      module.emitError() << "dist-explain: " << error;
      return signalPassFailure();
    }
    if (format == "json") {
      file->os() << llvm::formatv("{0:2}", toJson(report)) << "\n";
    } else {
      writeText(report, file->os());
      writePipeline(program, file->os());
    }
    file->keep();
    markAllAnalysesPreserved();
  }

  /// Runs the passes `build` adds (named `pipeline` in the error) on
  /// `copy`, reporting its first error on the module.
  LogicalResult lowerCopy(ModuleOp copy,
                          llvm::function_ref<void(OpPassManager &)> build,
                          StringRef pipeline) {
    std::string error;
    if (failed(dist::runPassPipeline(copy, build, error)))
      return getOperation().emitError()
             << "dist-explain: " << pipeline
             << " failed on a copy of the module (run dist-explain after "
                "rt-plan-memory to see the error in place): "
             << error;
    return success();
  }
};

} // namespace
