//===- DistVerifyComm.cpp - Every rank's communication matches ------------===//
//
// Expands, for the ranks of the mesh and every entry, the program that rank
// runs (a pipeline stage's function, calls inlined) into its sequence of
// point-to-point and collective events, and checks them with the pipeline
// library's verifier (lib/Pipeline/CommVerify; algorithms.md §1.6 checks C
// and D): FIFO matching of sends and receives per ordered pair of ranks,
// the same collectives in the same order within every group, and a
// simulated run that completes (sends asynchronous, receives and
// collectives blocking). A violation is a compile error naming the ranks
// and the first mismatched op.
//
// Symmetry: one rank per class. The function a rank runs depends only on
// its coordinate on the pipeline axis, and its events depend on its other
// coordinates only through the peers and groups they name. Call an axis
// other than the pipeline axis that no send or receive names *symmetric*
// (in every plan dp, tp, cp and ep are: only pipeline transfers are point to
// point). The pass checks the mesh with every symmetric axis at size 1, and
// that is exact:
//  - Ranks that differ only on symmetric coordinates run the same program,
//    and no message crosses between them (a send keeps the sender's
//    coordinates on the axes it does not name). So the world is one copy of
//    the reduced mesh per assignment of the symmetric coordinates, and the
//    copies meet only in collectives whose axes include a symmetric axis.
//  - Such a collective's members share their pipeline coordinate, so they
//    run the same program and enter their group's collectives in the same
//    order with the same signatures: check C holds for these groups by
//    construction. In the reduced mesh the group is one copy's part of it.
//  - Check D: the blocking semantics is monotone (an enabled event stays
//    enabled until it runs), so whether a run completes does not depend on
//    the order events run in. If the reduced mesh completes, running every
//    copy in lockstep completes the world (a collective spread over copies
//    is reached by all of them at the same step); if the world completes,
//    its run restricted to one copy is a completed run of the reduced mesh
//    (a collective that fired had that copy's members there).
// The violations are therefore those of the reduced mesh. Each names a real
// rank (coordinate 0 on the symmetric axes); every rank that differs from
// it only on those axes has the same violation. A plan with dp = 1,048,576
// is checked on its pp ranks (bench/verify_scale.sh prints the times).
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

/// The most events the pass expands (all checked ranks together): about
/// 200 bytes each, so at most about 1 GB. Real plans need far fewer once
/// the symmetric axes are reduced (a pp = 64 program with 1000 microbatches
/// has a few hundred thousand).
constexpr int64_t kMaxEvents = int64_t(1) << 22;

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

/// A communication op of a function (calls inlined) before it is placed on
/// a rank: what does not depend on the rank.
struct EventTemplate {
  pipeline::CommEvent::Kind kind;
  /// Mesh axis indices of the op's group.
  SmallVector<int64_t, 2> axes;
  /// Send/recv: the peer's index in the group.
  int64_t peer = -1;
  std::string signature;
  /// "@fn op #i dist.send", the label after the rank.
  std::string where;
};
using ProgramTemplate = std::vector<EventTemplate>;

class Verifier {
public:
  Verifier(ModuleOp module, MeshOp mesh)
      : module(module), mesh(mesh), symbols(module) {
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
  FailureOr<SmallVector<int64_t>> axesOf(CommOpInterface op);
  LogicalResult reduceSymmetricAxes();
  FailureOr<const ProgramTemplate *> templateOf(func::FuncOp fn);
  int64_t groupId(int64_t rank, ArrayRef<int64_t> groupAxes);
  /// The world rank that reduced rank `rank` stands for.
  int64_t worldRank(int64_t rank) const {
    return shape.rankOf(reduced.coords(rank));
  }

  ModuleOp module;
  MeshOp mesh;
  SymbolTable symbols;
  /// The mesh, and the mesh the pass checks (symmetric axes at size 1).
  MeshShape shape, reduced;
  /// The symmetric axes of size > 1 (for messages).
  SmallVector<std::string> symmetricAxes;
  /// Index of the pipeline axis in `shape` (-1: none).
  int64_t pipelineAxis = -1;
  /// Each function's events, calls inlined (std::map: stable references).
  std::map<Operation *, ProgramTemplate> templates;
  llvm::DenseSet<Operation *> expanding;
  std::map<std::pair<SmallVector<int64_t>, SmallVector<int64_t>>, int64_t>
      groupIds;
  pipeline::CommGroups groups;
};

FailureOr<SmallVector<int64_t>> Verifier::axesOf(CommOpInterface op) {
  SmallVector<int64_t> result;
  for (auto name : op.getAxes().getAsValueRange<StringAttr>()) {
    int64_t axis = shape.axis(name);
    if (axis < 0)
      return op->emitOpError()
             << "names axis '" << name << "', which mesh @" << mesh.getSymName()
             << " (the module's mesh) does not have";
    result.push_back(axis);
  }
  return result;
}

LogicalResult Verifier::reduceSymmetricAxes() {
  SmallVector<bool> pointToPoint(shape.sizes.size(), false);
  for (auto fn : module.getOps<func::FuncOp>()) {
    WalkResult walk = fn.walk([&](CommOpInterface op) {
      CommKind kind = op.getCommKind();
      if (kind != CommKind::Send && kind != CommKind::Recv)
        return WalkResult::advance();
      FailureOr<SmallVector<int64_t>> axes = axesOf(op);
      if (failed(axes))
        return WalkResult::interrupt();
      for (int64_t axis : *axes)
        pointToPoint[axis] = true;
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  reduced = shape;
  for (size_t i = 0; i < shape.sizes.size(); ++i) {
    if (pointToPoint[i] || int64_t(i) == pipelineAxis || shape.sizes[i] == 1)
      continue;
    reduced.sizes[i] = 1;
    symmetricAxes.push_back(shape.axes[i]);
  }
  return success();
}

FailureOr<const ProgramTemplate *> Verifier::templateOf(func::FuncOp fn) {
  if (auto it = templates.find(fn); it != templates.end())
    return &it->second;
  if (!expanding.insert(fn).second)
    return fn.emitOpError()
           << "dist-verify-comm: @" << fn.getSymName()
           << " calls itself (directly or through its callees); a rank's "
              "program must be finite";
  ProgramTemplate program;
  int64_t index = 0;
  for (Operation &op : fn.front()) {
    int64_t opIndex = index++;
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal())
        continue;
      FailureOr<const ProgramTemplate *> inner = templateOf(callee);
      if (failed(inner))
        return failure();
      if (int64_t(program.size() + (*inner)->size()) > kMaxEvents)
        return call.emitOpError()
               << "dist-verify-comm: @" << fn.getSymName() << " has more than "
               << kMaxEvents << " communication ops once its calls are "
               << "inlined, more than the pass checks";
      program.insert(program.end(), (*inner)->begin(), (*inner)->end());
      continue;
    }
    auto comm = dyn_cast<CommOpInterface>(op);
    if (!comm)
      continue;
    EventTemplate event;
    FailureOr<SmallVector<int64_t>> axes = axesOf(comm);
    if (failed(axes))
      return failure();
    event.axes.assign(axes->begin(), axes->end());
    event.where = "@" + fn.getSymName().str() + " op #" +
                  std::to_string(opIndex) + " " +
                  op.getName().getStringRef().str();
    llvm::raw_string_ostream os(event.signature);
    StringRef tag;
    if (auto t = op.getAttrOfType<StringAttr>(kTagAttrName))
      tag = t.getValue();
    CommKind kind = comm.getCommKind();
    if (kind == CommKind::Send || kind == CommKind::Recv) {
      auto peer = op.getAttrOfType<IntegerAttr>("peer");
      if (!peer)
        return op.emitOpError() << "dist-verify-comm: a "
                                << (kind == CommKind::Send ? "send" : "recv")
                                << " needs an integer 'peer'";
      event.peer = peer.getInt();
    }
    if (kind == CommKind::Send) {
      event.kind = pipeline::CommEvent::Kind::Send;
      os << tag << " " << op.getOperand(0).getType();
    } else if (kind == CommKind::Recv) {
      event.kind = pipeline::CommEvent::Kind::Recv;
      Type result = op.getResult(0).getType();
      if (auto async = dyn_cast<AsyncType>(result))
        result = async.getValueType();
      os << tag << " " << result;
    } else {
      event.kind = pipeline::CommEvent::Kind::Collective;
      os << op.getName().getStringRef();
      for (Type t : op.getOperandTypes())
        os << " " << t;
    }
    program.push_back(std::move(event));
    if (int64_t(program.size()) > kMaxEvents)
      return op.emitOpError() << "dist-verify-comm: @" << fn.getSymName()
                              << " has more than " << kMaxEvents
                              << " communication ops, more than the pass "
                                 "checks";
  }
  expanding.erase(fn);
  return &(templates[fn] = std::move(program));
}

int64_t Verifier::groupId(int64_t rank, ArrayRef<int64_t> groupAxes) {
  // A group: its axes and the coordinates of its ranks on the other axes.
  SmallVector<int64_t> color = reduced.coords(rank);
  for (int64_t a : groupAxes)
    color[a] = -1;
  auto key = std::make_pair(SmallVector<int64_t>(groupAxes), color);
  auto [it, inserted] = groupIds.try_emplace(key, groupIds.size());
  if (inserted) {
    int64_t size = 1;
    for (int64_t a : groupAxes)
      size *= reduced.sizes[a];
    std::vector<int64_t> &members = groups[it->second];
    for (int64_t i = 0; i < size; ++i)
      members.push_back(reduced.member(rank, groupAxes, i));
  }
  return it->second;
}

LogicalResult Verifier::run() {
  if (failed(reduceSymmetricAxes()))
    return failure();
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
  int64_t numRanks = reduced.numRanks();
  auto name = [&](int64_t rank) { return std::to_string(worldRank(rank)); };
  for (auto &[entry, stages] : entries) {
    // Every stage has its program (checked per stage, not per rank: the
    // pipeline axis may be long).
    bool staged = pipelineAxis >= 0 && !stages.count(-1);
    int64_t first = staged ? 0 : -1;
    int64_t end = staged ? shape.sizes[pipelineAxis] : 0;
    for (int64_t stage = first; stage < end; ++stage) {
      if (stages.count(stage))
        continue;
      SmallVector<int64_t> coords(shape.sizes.size(), 0);
      if (staged)
        coords[pipelineAxis] = stage;
      return module.emitError()
             << "dist-verify-comm: entry '" << entry << "' has no program for "
             << "pipeline stage " << stage << " (rank " << shape.rankOf(coords)
             << ")";
    }
    auto stageOf = [&](int64_t rank) {
      return staged ? reduced.coords(rank)[pipelineAxis] : -1;
    };
    int64_t total = 0;
    std::map<int64_t, const ProgramTemplate *> programOf;
    for (auto &[stage, fn] : stages) {
      FailureOr<const ProgramTemplate *> program = templateOf(fn);
      if (failed(program))
        return failure();
      programOf[stage] = *program;
    }
    for (int64_t rank = 0; rank < numRanks; ++rank)
      total += programOf[stageOf(rank)]->size();
    if (total > kMaxEvents)
      return module.emitError()
             << "dist-verify-comm: entry '" << entry << "' needs " << total
             << " communication events over " << numRanks
             << " ranks (after the symmetry reduction), more than the "
             << kMaxEvents << " the pass checks";
    std::vector<pipeline::RankProgram> programs(numRanks);
    for (int64_t rank = 0; rank < numRanks; ++rank) {
      std::string prefix = "rank " + name(rank) + " ";
      pipeline::RankProgram &out = programs[rank];
      const ProgramTemplate &program = *programOf[stageOf(rank)];
      out.reserve(program.size());
      for (const EventTemplate &event : program) {
        std::string label = prefix + event.where;
        switch (event.kind) {
        case pipeline::CommEvent::Kind::Send:
          out.push_back(pipeline::CommEvent::send(
              reduced.member(rank, event.axes, event.peer), event.signature,
              std::move(label)));
          break;
        case pipeline::CommEvent::Kind::Recv:
          out.push_back(pipeline::CommEvent::recv(
              reduced.member(rank, event.axes, event.peer), event.signature,
              std::move(label)));
          break;
        default:
          out.push_back(pipeline::CommEvent::collective(
              groupId(rank, event.axes), event.signature, std::move(label)));
          break;
        }
      }
    }
    std::vector<pipeline::CommViolation> violations =
        pipeline::verifyCommunication(programs, groups, name);
    if (violations.empty())
      continue;
    // (Declared before the diagnostic, which holds a reference to it.)
    std::string text = pipeline::formatViolations(violations);
    while (!text.empty() && text.back() == '\n')
      text.pop_back();
    InFlightDiagnostic diag = module.emitError() << "dist-verify-comm: entry '"
                                                 << entry << "': " << text;
    if (!symmetricAxes.empty()) {
      diag << " (checked on " << numRanks << " of " << shape.numRanks()
           << " ranks: axes ";
      llvm::interleaveComma(symmetricAxes, diag);
      diag << " carry no point-to-point transfer, so every rank that "
              "differs from a rank named above only on them runs the same "
              "program and has the same violation)";
    }
    return failure();
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
