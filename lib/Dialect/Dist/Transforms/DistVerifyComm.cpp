//===- DistVerifyComm.cpp - Every rank's communication matches ------------===//
//
// Expands, for every rank of the mesh and every entry, the program that rank
// runs (a pipeline stage's function, calls inlined) into its sequence of
// point-to-point and collective events, and checks them with the pipeline
// library's verifier (lib/Pipeline/CommVerify; algorithms.md §1.6 checks C
// and D): FIFO matching of sends and receives per ordered pair of ranks,
// the same collectives in the same order within every group, and a
// simulated run that completes (sends asynchronous, receives and
// collectives blocking). A violation is a compile error naming the ranks
// and the first mismatched op.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Pipeline/CommVerify.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

#include <map>

namespace autoshard::dist {
#define GEN_PASS_DEF_DISTVERIFYCOMM
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace autoshard::dist

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

/// Row-major coordinates on a mesh.
struct MeshShape {
  SmallVector<std::string> axes;
  SmallVector<int64_t> sizes;

  int64_t numRanks() const {
    int64_t n = 1;
    for (int64_t s : sizes)
      n *= s;
    return n;
  }
  SmallVector<int64_t> coords(int64_t rank) const {
    SmallVector<int64_t> c(sizes.size());
    for (size_t i = sizes.size(); i-- > 0;) {
      c[i] = rank % sizes[i];
      rank /= sizes[i];
    }
    return c;
  }
  int64_t rankOf(ArrayRef<int64_t> c) const {
    int64_t r = 0;
    for (size_t i = 0; i < sizes.size(); ++i)
      r = r * sizes[i] + c[i];
    return r;
  }
  int64_t axis(StringRef name) const {
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i] == name)
        return i;
    return -1;
  }
  /// The rank with group index `index` in `rank`'s group over `groupAxes`.
  int64_t member(int64_t rank, ArrayRef<int64_t> groupAxes,
                 int64_t index) const {
    SmallVector<int64_t> c = coords(rank);
    for (size_t k = groupAxes.size(); k-- > 0;) {
      c[groupAxes[k]] = index % sizes[groupAxes[k]];
      index /= sizes[groupAxes[k]];
    }
    return rankOf(c);
  }
};

class Verifier {
public:
  Verifier(ModuleOp module, MeshOp mesh) : module(module), symbols(module) {
    for (auto [name, size] :
         llvm::zip(mesh.getAxisNames().getAsValueRange<StringAttr>(),
                   mesh.getAxisSizes())) {
      shape.axes.push_back(name.str());
      shape.sizes.push_back(size);
    }
    if (StringAttr pp = mesh.getAxisWithRole(AxisRole::Pipeline))
      pipelineAxis = shape.axis(pp.getValue());
  }

  LogicalResult run();

private:
  void expand(func::FuncOp fn, int64_t rank, pipeline::RankProgram &out,
              int depth);
  int64_t groupId(int64_t rank, ArrayRef<int64_t> groupAxes);
  SmallVector<int64_t> axesOf(CommOpInterface op);

  ModuleOp module;
  SymbolTable symbols;
  MeshShape shape;
  /// Index of the pipeline axis in `shape` (-1: none).
  int64_t pipelineAxis = -1;
  std::map<std::pair<SmallVector<int64_t>, SmallVector<int64_t>>, int64_t>
      groupIds;
  pipeline::CommGroups groups;
};

SmallVector<int64_t> Verifier::axesOf(CommOpInterface op) {
  SmallVector<int64_t> result;
  for (auto name : op.getAxes().getAsValueRange<StringAttr>())
    result.push_back(shape.axis(name));
  return result;
}

int64_t Verifier::groupId(int64_t rank, ArrayRef<int64_t> groupAxes) {
  // A group: its axes and the coordinates of its ranks on the other axes.
  SmallVector<int64_t> color = shape.coords(rank);
  for (int64_t a : groupAxes)
    color[a] = -1;
  auto key = std::make_pair(SmallVector<int64_t>(groupAxes), color);
  auto [it, inserted] = groupIds.try_emplace(key, groupIds.size());
  if (inserted) {
    int64_t size = 1;
    for (int64_t a : groupAxes)
      size *= shape.sizes[a];
    std::vector<int64_t> &members = groups[it->second];
    for (int64_t i = 0; i < size; ++i)
      members.push_back(shape.member(rank, groupAxes, i));
  }
  return it->second;
}

void Verifier::expand(func::FuncOp fn, int64_t rank, pipeline::RankProgram &out,
                      int depth) {
  int64_t index = 0;
  for (Operation &op : fn.front()) {
    std::string label = "rank " + std::to_string(rank) + " @" +
                        fn.getSymName().str() + " op #" +
                        std::to_string(index++) + " " +
                        op.getName().getStringRef().str();
    if (auto call = dyn_cast<func::CallOp>(op)) {
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
          callee && !callee.isExternal() && depth < 16)
        expand(callee, rank, out, depth + 1);
      continue;
    }
    auto comm = dyn_cast<CommOpInterface>(op);
    if (!comm)
      continue;
    SmallVector<int64_t> groupAxes = axesOf(comm);
    std::string type;
    llvm::raw_string_ostream os(type);
    StringRef tag;
    if (auto t = op.getAttrOfType<StringAttr>(kTagAttrName))
      tag = t.getValue();
    if (comm.getCommKind() == CommKind::Send) {
      os << tag << " " << op.getOperand(0).getType();
      int64_t peer = op.getAttrOfType<IntegerAttr>("peer").getInt();
      out.push_back(pipeline::CommEvent::send(
          shape.member(rank, groupAxes, peer), type, label));
    } else if (comm.getCommKind() == CommKind::Recv) {
      Type result = op.getResult(0).getType();
      if (auto async = dyn_cast<AsyncType>(result))
        result = async.getValueType();
      os << tag << " " << result;
      int64_t peer = op.getAttrOfType<IntegerAttr>("peer").getInt();
      out.push_back(pipeline::CommEvent::recv(
          shape.member(rank, groupAxes, peer), type, label));
    } else {
      os << op.getName().getStringRef();
      for (Type t : op.getOperandTypes())
        os << " " << t;
      out.push_back(pipeline::CommEvent::collective(groupId(rank, groupAxes),
                                                    type, label));
    }
  }
}

LogicalResult Verifier::run() {
  // Entries and the program each rank runs for them.
  llvm::StringMap<std::map<int64_t, func::FuncOp>> entries;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (!fn.isPublic() || fn.isExternal())
      continue;
    StringRef name = fn.getSymName();
    if (auto entry = fn->getAttrOfType<StringAttr>(kEntryAttrName))
      name = entry.getValue();
    int64_t stage = -1;
    if (auto s = fn->getAttrOfType<IntegerAttr>(kPpStageAttrName))
      stage = s.getInt();
    entries[name][stage] = fn;
  }
  for (auto &[name, stages] : entries) {
    std::vector<pipeline::RankProgram> programs(shape.numRanks());
    for (int64_t rank = 0; rank < shape.numRanks(); ++rank) {
      int64_t stage = stages.count(-1) || pipelineAxis < 0
                          ? -1
                          : shape.coords(rank)[pipelineAxis];
      auto it = stages.find(stage);
      if (it == stages.end())
        return module.emitError()
               << "dist-verify-comm: entry '" << name << "' has no program for "
               << "pipeline stage " << stage << " (rank " << rank << ")";
      expand(it->second, rank, programs[rank], 0);
    }
    std::vector<pipeline::CommViolation> violations =
        pipeline::verifyCommunication(programs, groups);
    if (!violations.empty())
      return module.emitError()
             << "dist-verify-comm: entry '" << name
             << "': " << pipeline::formatViolations(violations);
  }
  return success();
}

struct DistVerifyCommPass
    : public dist::impl::DistVerifyCommBase<DistVerifyCommPass> {
  void runOnOperation() override {
    markAllAnalysesPreserved();
    ModuleOp module = getOperation();
    FailureOr<MeshOp> mesh = getSingleMesh(module, "dist-verify-comm");
    if (failed(mesh))
      return signalPassFailure();
    if (!*mesh)
      return; // one device: nothing to match
    if (failed(Verifier(module, *mesh).run()))
      signalPassFailure();
  }
};

} // namespace
