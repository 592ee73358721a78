//===- RtFuseEpilogues.cpp - Fold adds into the GEMM that feeds them ------===//
//
// Implements `rt-fuse-epilogues` (see Passes.td). Most GEMMs of a
// Transformer are followed at once by an add (the residual stream, the
// input gradient of a block's two branches, a bias); a GEMM with beta = 1
// does that add while it writes its result, so the temporary between the
// two kernels, its bytes in the frame and a read and a write of the whole
// result disappear.
//
// The rewrite moves the GEMM's reads of its operands from the matmul to
// the add, and starts writing the add's result while the GEMM's operands
// are still read: it is correct only if nothing writes those operands in
// between and the result does not alias them. Both questions are answered
// by an alias analysis over buffer roots (BufferAliases below) that follows
// rt.views and, for a callee's arguments, every call site. What the pass
// cannot see through (calls, asynchronous collectives in flight) stops it.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Rt/IR/RtOps.h"
#include "autoshard/Dialect/Rt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace autoshard::rt {
#define GEN_PASS_DEF_RTFUSEEPILOGUES
#include "autoshard/Dialect/Rt/Transforms/Passes.h.inc"
} // namespace autoshard::rt

using namespace mlir;
using namespace autoshard::rt;

namespace {

/// The memory a buffer value may denote, as a set of roots: the op of a
/// local, slot or constant, or the name attribute of a state (two rt.state
/// ops of one name are the same memory). `unknown` stands for any memory.
struct Locations {
  llvm::SmallPtrSet<const void *, 4> roots;
  bool unknown = false;

  void merge(const Locations &other) {
    unknown |= other.unknown;
    roots.insert(other.roots.begin(), other.roots.end());
  }
  bool intersects(const Locations &other) const {
    if (unknown || other.unknown)
      return true;
    return llvm::any_of(
        roots, [&](const void *root) { return other.roots.count(root); });
  }
};

/// May-alias queries over the rt functions of a module. Buffers are whole:
/// an rt.view is its source's memory read with another shape, and two
/// distinct roots never share bytes while both are live (the memory plan
/// guarantees it). So two values alias exactly when their roots do, and a
/// function argument denotes whatever any call passes in its place.
class BufferAliases {
public:
  explicit BufferAliases(ModuleOp module) {
    module.walk(
        [&](CallOp call) { callsTo[call.getCalleeAttr()].push_back(call); });
  }

  bool mayAlias(Value a, Value b) {
    return getLocations(a).intersects(getLocations(b));
  }

  Locations getLocations(Value buffer) {
    while (auto view = buffer.getDefiningOp<ViewOp>())
      buffer = view.getSource();
    Locations result;
    if (auto arg = dyn_cast<BlockArgument>(buffer)) {
      auto func = dyn_cast<FuncOp>(arg.getOwner()->getParentOp());
      if (!func)
        result.unknown = true;
      else
        result = getArgLocations(func, arg.getArgNumber());
      return result;
    }
    Operation *root = buffer.getDefiningOp();
    if (auto state = dyn_cast<StateOp>(root))
      result.roots.insert(state.getNameAttr().getAttr().getAsOpaquePointer());
    else if (isa<AllocOp, InputOp, OutputOp, ConstOp>(root))
      result.roots.insert(root);
    else
      result.unknown = true;
    return result;
  }

private:
  /// The union of what the callers pass as argument `index` of `func`; any
  /// memory when `func` has no known caller or is reached recursively.
  Locations getArgLocations(FuncOp func, unsigned index) {
    auto key = std::make_pair(func.getOperation(), index);
    if (auto it = argCache.find(key); it != argCache.end())
      return it->second;
    // Provisional answer while the callers are visited (recursion).
    argCache[key].unknown = true;
    Locations result;
    auto calls = callsTo.find(FlatSymbolRefAttr::get(func.getSymNameAttr()));
    if (calls == callsTo.end() || calls->second.empty())
      result.unknown = true;
    else
      for (CallOp call : calls->second)
        result.merge(getLocations(call.getOperands()[index]));
    argCache[key] = result;
    return result;
  }

  DenseMap<Attribute, SmallVector<CallOp>> callsTo;
  DenseMap<std::pair<Operation *, unsigned>, Locations> argCache;
};

/// Whether `op` starts or completes an asynchronous collective.
bool isAsyncComm(KernelOp kernel) {
  StringRef name = kernel.getKernel();
  return name == "dist.wait" ||
         (name.starts_with("dist.") && name.ends_with("_start"));
}

/// A matmul whose result is added to `addend` by `add`.
struct Candidate {
  KernelOp matmul, add;
  Value addend;
  bool bias;
};

/// The fusion `matmul` allows, or nothing (the conditions of Passes.td).
std::optional<Candidate> matchCandidate(KernelOp matmul,
                                        BufferAliases &aliases) {
  if (matmul.getKernel() != "matmul" || matmul.getArgs().size() != 2 ||
      matmul.getResults().size() != 1)
    return std::nullopt;
  Value t = matmul.getResults()[0];
  if (!t.getDefiningOp<AllocOp>())
    return std::nullopt;
  // Uses of t: this result and exactly one operand of one add.
  KernelOp add;
  for (OpOperand &use : t.getUses()) {
    if (use.getOwner() == matmul.getOperation())
      continue;
    auto user = dyn_cast<KernelOp>(use.getOwner());
    if (add || !user)
      return std::nullopt;
    add = user;
  }
  if (!add || !llvm::hasNItems(t.getUses(), 2) || add.getKernel() != "add" ||
      add.getArgs().size() != 2 || add.getResults().size() != 1 ||
      add.getAttrs() || add->getBlock() != matmul->getBlock() ||
      !matmul->isBeforeInBlock(add))
    return std::nullopt;
  // add(t, c) or add(c, t); t is named once (hasNItems above).
  bool tFirst = add.getArgs()[0] == t;
  if (!tFirst && add.getArgs()[1] != t)
    return std::nullopt;
  Value c = add.getArgs()[tFirst ? 1 : 0], r = add.getResults()[0];
  auto tType = cast<BufferType>(t.getType());
  auto cType = cast<BufferType>(c.getType());
  if (r.getType() != tType)
    return std::nullopt;
  bool bias = false;
  if (cType != tType) {
    // Only add(t, bias[n]): the suffix-broadcast form of the add kernel.
    bias = tFirst && cType.getShape().size() == 1 &&
           cType.getElementType() == tType.getElementType() &&
           cType.getShape()[0] == tType.getShape().back();
    if (!bias)
      return std::nullopt;
  }
  Value a = matmul.getArgs()[0], b = matmul.getArgs()[1];
  if (aliases.mayAlias(r, a) || aliases.mayAlias(r, b))
    return std::nullopt;
  for (Operation *op = matmul->getNextNode(); op != add.getOperation();
       op = op->getNextNode()) {
    if (isa<AllocOp, ViewOp, StateOp, ConstOp, InputOp, OutputOp>(op))
      continue;
    auto kernel = dyn_cast<KernelOp>(op);
    if (!kernel || isAsyncComm(kernel))
      return std::nullopt;
    for (Value written : kernel.getResults())
      if (aliases.mayAlias(written, a) || aliases.mayAlias(written, b))
        return std::nullopt;
  }
  return Candidate{matmul, add, c, bias};
}

/// Replaces the candidate's two kernels by one matmul at the add's place.
void fuse(Candidate c) {
  OpBuilder builder(c.add);
  SmallVector<NamedAttribute> attrs;
  if (DictionaryAttr old = c.matmul.getAttrsAttr())
    llvm::append_range(attrs, old.getValue());
  if (c.bias)
    attrs.push_back(
        builder.getNamedAttr("epilogue", builder.getStringAttr("bias")));
  SmallVector<Value> args(c.matmul.getArgs());
  args.push_back(c.addend);
  KernelOp::create(builder, c.add.getLoc(), builder.getStringAttr("matmul"),
                   args, c.add.getResults(),
                   attrs.empty() ? DictionaryAttr()
                                 : builder.getDictionaryAttr(attrs));
  Operation *alloc = c.matmul.getResults()[0].getDefiningOp();
  c.add.erase();
  c.matmul.erase();
  alloc->erase();
}

struct RtFuseEpiloguesPass
    : public autoshard::rt::impl::RtFuseEpiloguesBase<RtFuseEpiloguesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (FuncOp func : module.getOps<FuncOp>())
      if (func.isPlanned()) {
        func.emitOpError() << "is already planned (frame_bytes): "
                              "rt-fuse-epilogues must run before "
                              "rt-plan-memory";
        return signalPassFailure();
      }
    // Fusing a pair only removes writes between other pairs and leaves every
    // root in place, so the analysis stays valid; each candidate is still
    // matched on the current IR.
    BufferAliases aliases(module);
    SmallVector<KernelOp> matmuls;
    module.walk([&](KernelOp kernel) {
      if (kernel.getKernel() == "matmul")
        matmuls.push_back(kernel);
    });
    for (KernelOp matmul : matmuls)
      if (std::optional<Candidate> c = matchCandidate(matmul, aliases))
        fuse(*c);
  }
};

} // namespace
