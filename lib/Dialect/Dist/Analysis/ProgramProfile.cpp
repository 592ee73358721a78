//===- ProgramProfile.cpp - What each function of a program does ---------===//
//
// Both forms are read through one view of an op (name, attributes, operands,
// results): a dist op in func form and the `rt.kernel` rt-lower makes of it
// carry the same name and attributes, so one reader serves both.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/Analysis/ProgramProfile.h"

#include "autoshard/Dialect/Rt/IR/RtOps.h"
#include "autoshard/Dialect/Tfm/IR/TfmAttrNames.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

/// An op as the reader sees it in either form: a dist op, or the
/// `rt.kernel` that runs one.
struct OpView {
  Operation *op;
  StringRef name;
  DictionaryAttr attrs;
  ValueRange operands, results;
};

/// The name of the dist op `op` is or runs.
StringRef getOpName(Operation *op) {
  if (auto kernel = dyn_cast<rt::KernelOp>(op))
    return kernel.getKernel();
  return op->getName().getStringRef();
}

OpView getView(Operation *op) {
  if (auto kernel = dyn_cast<rt::KernelOp>(op))
    return {op, kernel.getKernel(), kernel.getAttrsAttr(), kernel.getArgs(),
            kernel.getResults()};
  return {op, op->getName().getStringRef(), op->getAttrDictionary(),
          op->getOperands(), op->getResults()};
}

/// Shape, elements and bytes of a tensor or rt buffer value.
struct TensorInfo {
  ArrayRef<int64_t> shape;
  int64_t elements = 0, bytes = 0;
};

std::optional<TensorInfo> getTensorInfo(Type type) {
  if (auto buffer = dyn_cast<rt::BufferType>(type))
    return TensorInfo{buffer.getShape(), buffer.getNumElements(),
                      buffer.getSizeInBytes()};
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      !tensor.getElementType().isIntOrFloat())
    return std::nullopt;
  int64_t elements = tensor.getNumElements();
  return TensorInfo{
      tensor.getShape(), elements,
      elements * ((tensor.getElementType().getIntOrFloatBitWidth() + 7) / 8)};
}

/// The first tensor of a flat buffer of a bucketed collective on its full
/// and its per-rank side, its split dim, and the largest tensor's element
/// count.
struct BucketMember {
  SmallVector<int64_t> full, shard;
  std::optional<int64_t> dim;
  int64_t maxElements = 0;
};

/// Reads the layout of a `dist.pack` / `dist.unpack` whose unpacked side is
/// `tensors`.
BucketMember readBucketMember(const OpView &view, ValueRange tensors) {
  BucketMember m;
  int64_t groups = 1;
  SmallVector<int64_t> dims;
  if (view.attrs) {
    if (auto g = view.attrs.getAs<IntegerAttr>("num_groups"))
      groups = g.getInt();
    if (auto d = view.attrs.getAs<DenseI64ArrayAttr>("scatter_dims"))
      llvm::append_range(dims, d.asArrayRef());
  }
  for (Value tensor : tensors)
    if (std::optional<TensorInfo> info = getTensorInfo(tensor.getType()))
      m.maxElements = std::max(m.maxElements, info->elements);
  if (tensors.empty())
    return m;
  std::optional<TensorInfo> first = getTensorInfo(tensors.front().getType());
  if (!first)
    return m;
  m.full.assign(first->shape.begin(), first->shape.end());
  m.shard = m.full;
  if (!dims.empty() && groups > 0 && dims.front() >= 0 &&
      dims.front() < static_cast<int64_t>(m.full.size())) {
    m.dim = dims.front();
    m.shard[*m.dim] /= groups;
  }
  return m;
}

/// Reads one function's body.
class FunctionReader {
public:
  FunctionReader(Operation *fn, MeshOp firstMesh)
      : fn(fn), firstMesh(firstMesh) {}

  FunctionProfile read();

private:
  void readBuckets();
  std::optional<CommRecord> readComm(Operation *op);

  Operation *fn;
  MeshOp firstMesh;
  /// Flat buffers: packed before a reduction, unpacked after a gather.
  DenseMap<Value, BucketMember> packed, unpacked;
};

void FunctionReader::readBuckets() {
  fn->walk([&](Operation *op) {
    StringRef name = getOpName(op);
    if (name != PackOp::getOperationName() &&
        name != UnpackOp::getOperationName())
      return;
    OpView view = getView(op);
    if (name == PackOp::getOperationName() && view.results.size() == 1)
      packed[view.results.front()] = readBucketMember(view, view.operands);
    else if (name == UnpackOp::getOperationName() && view.operands.size() == 1)
      unpacked[view.operands.front()] = readBucketMember(view, view.results);
  });
}

std::optional<CommRecord> FunctionReader::readComm(Operation *op) {
  // The op itself, or the one a kernel runs.
  std::optional<RegisteredOperationName> opName =
      isa<rt::KernelOp>(op)
          ? RegisteredOperationName::lookup(getOpName(op), fn->getContext())
          : op->getRegisteredInfo();
  auto *comm = opName ? opName->getInterface<CommOpInterface>() : nullptr;
  if (!comm)
    return std::nullopt;
  OpView view = getView(op);
  CommRecord c;
  c.op = op;
  c.kind = comm->getCommKind();
  c.name = view.name;
  c.async = opName->hasTrait<dist::trait::AsyncCommunication>();
  // The rt form keeps no mesh (an artifact has one).
  if (auto commOp = dyn_cast<CommOpInterface>(op))
    c.mesh = lookupMesh(op, commOp.getMeshAttr());
  else
    c.mesh = firstMesh;
  if (view.attrs) {
    if (auto axes = view.attrs.getAs<ArrayAttr>("axes"))
      for (Attribute axis : axes)
        if (auto s = dyn_cast<StringAttr>(axis))
          c.axes.push_back(s.str());
    for (StringRef key : {"gather_dim", "scatter_dim", "split_dim"})
      if (auto dim = view.attrs.getAs<IntegerAttr>(key)) {
        c.dim = dim.getInt();
        break;
      }
  }
  Value data = !view.operands.empty()  ? view.operands.front()
               : !view.results.empty() ? view.results.front()
                                       : Value();
  if (std::optional<TensorInfo> info =
          data ? getTensorInfo(data.getType()) : std::nullopt) {
    c.shape.assign(info->shape.begin(), info->shape.end());
    c.bytes = info->bytes;
    c.numElements = info->elements;
  }
  if (!view.results.empty())
    if (std::optional<TensorInfo> info =
            getTensorInfo(view.results.front().getType())) {
      c.resultShape.assign(info->shape.begin(), info->shape.end());
      c.resultBytes = info->bytes;
    }
  // A bucketed collective: described by its tensors (bytes stay those of
  // the flat buffer).
  auto inPack = data ? packed.find(data) : packed.end();
  auto outUnpack = view.results.empty() ? unpacked.end()
                                        : unpacked.find(view.results.front());
  // A gather's tensors are in its unpack (its pack has no split dims).
  bool gathered = outUnpack != unpacked.end() &&
                  (c.kind == CommKind::AllGather || inPack == packed.end());
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
  return c;
}

CostRecord readCost(tfm::TfmCostOpInterface op) {
  CostRecord c;
  c.op = op;
  c.roofline = op.getRooflineKind();
  c.cost = op.getCost();
  c.gemm = op.getGemmShape();
  c.attention = op.getAttentionShape();
  c.gradient = op->hasTrait<tfm::trait::Gradient>();
  c.weightGradient = op->hasTrait<tfm::trait::WeightGradient>();
  return c;
}

FunctionProfile FunctionReader::read() {
  FunctionProfile f;
  f.op = fn;
  f.name = SymbolTable::getSymbolName(fn).getValue();
  f.kind = tfm::getFuncKind(fn);
  f.recomputes = f.kind == tfm::FuncKind::Recompute ||
                 fn->hasAttr(tfm::kRecomputeAttrName);
  if (auto func = dyn_cast<func::FuncOp>(fn))
    f.entry = func.isPublic();
  else if (auto func = dyn_cast<rt::FuncOp>(fn))
    f.entry = func.isEntry();
  readBuckets();
  fn->walk([&](Operation *op) {
    if (op == fn)
      return;
    if (auto call = dyn_cast<func::CallOp>(op))
      f.calls.push_back(
          {op, call.getCallee(), op->hasAttr(tfm::kRecomputeAttrName)});
    else if (auto call = dyn_cast<rt::CallOp>(op))
      f.calls.push_back({op, call.getCallee(), false});
    else if (auto cost = dyn_cast<tfm::TfmCostOpInterface>(op))
      f.work.costs.push_back(readCost(cost));
    else if (std::optional<CommRecord> comm = readComm(op))
      f.work.comms.push_back(std::move(*comm));
  });
  return f;
}

} // namespace

bool CommRecord::allAxesHaveRoles(ArrayRef<AxisRole> roles) const {
  MeshOp m = mesh; // Op accessors are not const.
  return m && !axes.empty() && llvm::all_of(axes, [&](const std::string &a) {
           return llvm::any_of(
               roles, [&](AxisRole role) { return m.hasAxisRole(a, role); });
         });
}

bool CommRecord::anyAxisHasRole(AxisRole role) const {
  MeshOp m = mesh;
  return m && llvm::any_of(axes, [&](const std::string &a) {
           return m.hasAxisRole(a, role);
         });
}

ProgramProfile::ProgramProfile(Operation *op) {
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    return;
  MeshOp firstMesh;
  for (MeshOp mesh : module.getOps<MeshOp>()) {
    firstMesh = mesh;
    break;
  }
  for (Operation &fn : module.getBody()->getOperations()) {
    if (!isa<func::FuncOp, rt::FuncOp>(fn))
      continue;
    index[SymbolTable::getSymbolName(&fn).getValue()] = functions.size();
    functions.push_back(FunctionReader(&fn, firstMesh).read());
  }
}

const FunctionProfile *ProgramProfile::lookup(StringRef name) const {
  auto it = index.find(name);
  return it == index.end() ? nullptr : &functions[it->second];
}

void ProgramProfile::walkCallTree(
    StringRef root,
    llvm::function_ref<void(const FunctionProfile &)> visit) const {
  const FunctionProfile *f = lookup(root);
  if (!f)
    return;
  visit(*f);
  for (const CallRecord &call : f->calls)
    walkCallTree(call.callee, visit);
}

llvm::StringMap<int64_t> ProgramProfile::getCallCounts(StringRef root) const {
  llvm::StringMap<int64_t> counts;
  walkCallTree(root, [&](const FunctionProfile &f) { ++counts[f.name]; });
  return counts;
}

llvm::Expected<TrainStepProfile>
ProgramProfile::getTrainStep(StringRef entry) const {
  TrainStepProfile s;
  s.step = lookup(entry);
  if (!s.step)
    return llvm::createStringError("the compiled program has no " + entry);
  // Block calls (by tfm.func_kind): @B_fwd / @B_bwd; with tfm-recompute
  // mode=selective @B_selective_fwd / @B_selective_bwd; with mode=full
  // @B_full_fwd, @B_bwd and the re-run `call @B_recompute_full
  // {tfm.recompute}` before it.
  auto kindOf = [&](const CallRecord &call) -> std::optional<tfm::FuncKind> {
    const FunctionProfile *callee = lookup(call.callee);
    return callee ? callee->kind : std::nullopt;
  };
  for (const CallRecord &call : s.step->calls) {
    std::optional<tfm::FuncKind> kind = kindOf(call);
    if (!s.recompute && (call.recompute || kind == tfm::FuncKind::Recompute)) {
      s.recompute = lookup(call.callee);
      continue;
    }
    if (!s.forward && kind == tfm::FuncKind::Forward)
      s.forward = lookup(call.callee);
    if (!s.backward && kind == tfm::FuncKind::Backward)
      s.backward = lookup(call.callee);
  }
  if (!s.forward || !s.backward)
    return llvm::createStringError(
        "no block forward/backward functions (*_fwd, *_bwd) in " + entry);

  // The step's own ops by phase (see TrainStepProfile): its top-level
  // ops, whose records the step's profile holds.
  DenseMap<Operation *, const CostRecord *> costs;
  DenseMap<Operation *, const CommRecord *> comms;
  for (const CostRecord &c : s.step->work.costs)
    costs[c.op] = &c;
  for (const CommRecord &c : s.step->work.comms)
    comms[c.op] = &c;
  DenseMap<Operation *, const CallRecord *> calls;
  for (const CallRecord &c : s.step->calls)
    calls[c.op] = &c;
  WorkProfile *phase = &s.embedding;
  bool lossSeen = false;
  for (Operation &op : s.step->op->getRegion(0).front()) {
    if (const CallRecord *call = calls.lookup(&op)) {
      std::optional<tfm::FuncKind> kind = kindOf(*call);
      if (kind == tfm::FuncKind::Forward)
        phase = lossSeen ? &s.headBackward : &s.head;
      else if (kind == tfm::FuncKind::Backward)
        phase = &s.embeddingBackward;
      continue;
    }
    if (op.hasTrait<tfm::trait::OptimizerStep>())
      continue;
    if (const CostRecord *cost = costs.lookup(&op))
      phase->costs.push_back(*cost);
    else if (const CommRecord *comm = comms.lookup(&op))
      phase->comms.push_back(*comm);
    if (phase == &s.head && op.hasTrait<tfm::trait::TrainingLoss>()) {
      lossSeen = true;
      phase = &s.headBackward;
    }
  }
  return s;
}
