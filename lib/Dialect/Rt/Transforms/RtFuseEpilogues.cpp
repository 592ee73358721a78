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
// A GEMM whose product goes through gelu (MLP up-projection, forward) or
// gelu_grad (its input gradient, backward) fuses the same way: the kernel
// activates each panel of the product while it is still in cache, and the
// backward's product temporary disappears.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Rt/IR/RtOps.h"
#include "autoshard/Dialect/Rt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
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

/// Whether `kernel` starts or completes an asynchronous collective: its
/// kernel name is a dist op's name (rt-lower) whose op has the
/// AsyncCommunication trait.
bool isAsyncComm(KernelOp kernel) {
  std::optional<RegisteredOperationName> op =
      RegisteredOperationName::lookup(kernel.getKernel(), kernel.getContext());
  return op && op->hasTrait<autoshard::dist::trait::AsyncCommunication>();
}

/// Whether the reads of `matmul`'s lhs and rhs may move down to `to` (a
/// later op of its block): every op in between is a buffer definition or a
/// kernel (no call, no asynchronous collective) that writes neither operand
/// and passes `allowed`.
bool canDelayOperandReads(
    KernelOp matmul, Operation *to, BufferAliases &aliases,
    llvm::function_ref<bool(KernelOp)> allowed = [](KernelOp) {
      return true;
    }) {
  Value a = matmul.getArgs()[0], b = matmul.getArgs()[1];
  for (Operation *op = matmul->getNextNode(); op != to;
       op = op->getNextNode()) {
    if (isa<AllocOp, ViewOp, StateOp, ConstOp, InputOp, OutputOp>(op))
      continue;
    auto kernel = dyn_cast<KernelOp>(op);
    if (!kernel || isAsyncComm(kernel) || !allowed(kernel))
      return false;
    for (Value written : kernel.getResults())
      if (aliases.mayAlias(written, a) || aliases.mayAlias(written, b))
        return false;
  }
  return true;
}

/// A `matmul` kernel of two operands and one result, the only form the
/// fusions start from.
bool isPlainMatmul(KernelOp kernel) {
  return kernel.getKernel() == "matmul" && kernel.getArgs().size() == 2 &&
         kernel.getResults().size() == 1;
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
  if (!isPlainMatmul(matmul))
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
  if (aliases.mayAlias(r, a) || aliases.mayAlias(r, b) ||
      !canDelayOperandReads(matmul, add, aliases))
    return std::nullopt;
  return Candidate{matmul, add, c, bias};
}

/// A matmul whose product `t` is gelu's x or gelu_grad's dy.
struct ActivationCandidate {
  KernelOp matmul, act;
  /// gelu only: `t` is read elsewhere too (the saved pre-activation), so
  /// the fused kernel still writes it, as its second result.
  bool keepProduct;
};

/// Whether `v` may share bytes with any operand of `kernel`.
bool touches(KernelOp kernel, Value v, BufferAliases &aliases) {
  return llvm::any_of(kernel->getOperands(),
                      [&](Value o) { return aliases.mayAlias(o, v); });
}

/// The gelu / gelu_grad fusion `matmul` allows, or nothing (Passes.td).
std::optional<ActivationCandidate> matchActivation(KernelOp matmul,
                                                   BufferAliases &aliases) {
  if (!isPlainMatmul(matmul))
    return std::nullopt;
  Value t = matmul.getResults()[0];
  // The activation: the first kernel after the matmul in its block that
  // names t.
  KernelOp act;
  for (Operation *op = matmul->getNextNode(); op && !act;
       op = op->getNextNode())
    if (auto kernel = dyn_cast<KernelOp>(op))
      if (llvm::is_contained(kernel->getOperands(), t))
        act = kernel;
  if (!act)
    return std::nullopt;
  StringRef name = act.getKernel();
  bool grad = name == "gelu_grad";
  if ((name != "gelu" && !grad) || act.getResults().size() != 1 ||
      act.getArgs().size() != (grad ? 2u : 1u) || act.getArgs()[0] != t ||
      (grad && act.getArgs()[1] == t) ||
      llvm::is_contained(act.getResults(), t))
    return std::nullopt;
  if (DictionaryAttr attrs = act.getAttrsAttr())
    if (llvm::any_of(attrs, [](NamedAttribute a) {
          return a.getName() != "tanh_approx";
        }))
      return std::nullopt;
  Value r = act.getResults()[0];
  if (r.getType() != t.getType() ||
      (grad && act.getArgs()[1].getType() != t.getType()))
    return std::nullopt;
  // Without a second reader the product need not be written at all; only
  // a temporary (an alloc) can be known to have none.
  bool onlyTemporary =
      t.getDefiningOp<AllocOp>() && llvm::hasNItems(t.getUses(), 2);
  if (grad && !onlyTemporary)
    return std::nullopt;
  bool keepProduct = !onlyTemporary;
  Value a = matmul.getArgs()[0], b = matmul.getArgs()[1];
  if (aliases.mayAlias(r, a) || aliases.mayAlias(r, b) ||
      aliases.mayAlias(r, t) || (grad && aliases.mayAlias(r, act.getArgs()[1])))
    return std::nullopt;
  // A kept t is written later now: nothing in between may read or write it.
  if (!canDelayOperandReads(matmul, act, aliases, [&](KernelOp kernel) {
        return !keepProduct || !touches(kernel, t, aliases);
      }))
    return std::nullopt;
  return ActivationCandidate{matmul, act, keepProduct};
}

/// Replaces the candidate's two kernels by one matmul at the activation's
/// place: (a, b) -> (r[, t]) for gelu, (a, b, x) -> (dx) for gelu_grad.
void fuseActivation(ActivationCandidate c) {
  OpBuilder builder(c.act);
  bool grad = c.act.getKernel() == "gelu_grad";
  SmallVector<NamedAttribute> attrs;
  if (DictionaryAttr old = c.matmul.getAttrsAttr())
    llvm::append_range(attrs, old.getValue());
  if (DictionaryAttr old = c.act.getAttrsAttr())
    llvm::append_range(attrs, old.getValue());
  attrs.push_back(builder.getNamedAttr(
      "epilogue", builder.getStringAttr(grad ? "gelu_grad" : "gelu")));
  SmallVector<Value> args(c.matmul.getArgs());
  if (grad)
    args.push_back(c.act.getArgs()[1]);
  Value t = c.matmul.getResults()[0];
  SmallVector<Value> results(c.act.getResults());
  if (c.keepProduct)
    results.push_back(t);
  KernelOp::create(builder, c.act.getLoc(), builder.getStringAttr("matmul"),
                   args, results, builder.getDictionaryAttr(attrs));
  c.act.erase();
  c.matmul.erase();
  if (!c.keepProduct)
    t.getDefiningOp()->erase();
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
    for (KernelOp matmul : matmuls) {
      if (std::optional<Candidate> c = matchCandidate(matmul, aliases))
        fuse(*c);
      else if (std::optional<ActivationCandidate> c =
                   matchActivation(matmul, aliases))
        fuseActivation(*c);
    }
  }
};

} // namespace
