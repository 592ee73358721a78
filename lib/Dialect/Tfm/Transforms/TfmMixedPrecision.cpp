//===- TfmMixedPrecision.cpp - bf16 compute, f32 master weights -----------===//
//
// `tfm-mixed-precision` rewrites the model builder's f32 forward (before
// `tfm-autodiff`) so that it computes in a 16-bit float type while every
// parameter stays f32; the policy is in Passes.td. The rewrite is local:
// ops are visited in program order, each op's float operands are cast (with
// `tfm.cast`) to the type its policy class computes in, and its result types
// are recomputed from the new operand types (the op's own type inference,
// so the rewrite knows no shape rule). A block function called from an
// entry is rewritten once for the types its calls pass; its f32 parameter
// arguments are cast inside it, at each use.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Tfm/IR/TfmAttrNames.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"
#include "autoshard/Dialect/Tfm/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <type_traits>

namespace autoshard::tfm {
#define GEN_PASS_DEF_TFMMIXEDPRECISION
#include "autoshard/Dialect/Tfm/Transforms/Passes.h.inc"
} // namespace autoshard::tfm

using namespace mlir;
using namespace autoshard::tfm;

namespace {

RankedTensorType withElement(RankedTensorType type, Type element) {
  return RankedTensorType::get(type.getShape(), element);
}

/// The ops that run in f32 whatever the compute type (torch.autocast's
/// "autocast to float32" list, Megatron's fp32 softmax / norms / loss):
/// normalisation statistics, the loss softmax and the MoE router softmax
/// and its auxiliary loss.
bool runsInF32(Operation *op) {
  return isa<LayerNormOp, RmsNormOp, CrossEntropyOp, MoeRouterOp, MoeAuxLossOp>(
      op);
}

/// The f32 ops whose (non-scalar float) results are activations that flow
/// on: they are cast back to the compute type right after the op, once.
bool castsResultsBack(Operation *op) { return isa<LayerNormOp, RmsNormOp>(op); }

//===----------------------------------------------------------------------===//
// Result type inference through each op's computeResultTypes
//===----------------------------------------------------------------------===//

template <typename T, typename = void> struct HasCompute : std::false_type {};
template <typename T>
struct HasCompute<T, std::void_t<decltype(&T::computeResultTypes)>>
    : std::true_type {};

template <typename OpT>
bool tryInfer(Operation *op, SmallVectorImpl<Type> &types, LogicalResult &ok) {
  if constexpr (HasCompute<OpT>::value) {
    if (auto typed = dyn_cast<OpT>(op)) {
      typename OpT::Adaptor adaptor(typed);
      ok = OpT::computeResultTypes([op] { return op->emitOpError(); }, adaptor,
                                   types);
      return true;
    }
  }
  return false;
}

template <typename... OpTs>
bool inferAny(Operation *op, SmallVectorImpl<Type> &types, LogicalResult &ok) {
  return (tryInfer<OpTs>(op, types, ok) || ...);
}

/// Recomputes the result types of tfm op `op` from its (new) operand types.
/// Ops with an explicit result type (reshape, broadcast) keep their shapes
/// and take the element type of their operand; tfm.cast keeps its type.
LogicalResult updateResultTypes(Operation *op) {
  if (isa<CastOp>(op))
    return success();
  if (isa<ReshapeOp, BroadcastOp>(op)) {
    Type element =
        cast<RankedTensorType>(op->getOperand(0).getType()).getElementType();
    op->getResult(0).setType(withElement(
        cast<RankedTensorType>(op->getResult(0).getType()), element));
    return success();
  }
  SmallVector<Type> types;
  LogicalResult ok = failure();
  bool known = inferAny<
#define GET_OP_LIST
#include "autoshard/Dialect/Tfm/IR/TfmOps.cpp.inc"
      >(op, types, ok);
  if (!known)
    return op->emitOpError()
           << "has no type inference; tfm-mixed-precision cannot retype it";
  if (failed(ok))
    return failure();
  for (auto [result, type] : llvm::zip_equal(op->getResults(), types))
    result.setType(type);
  return success();
}

//===----------------------------------------------------------------------===//
// The rewrite
//===----------------------------------------------------------------------===//

class MixedPrecision {
public:
  MixedPrecision(ModuleOp module, FloatType compute)
      : module(module), symbols(module), compute(compute),
        f32(Float32Type::get(module.getContext())) {}

  /// Rewrites entry `func` (its signature stays as it is).
  LogicalResult runEntry(func::FuncOp func) {
    for (BlockArgument arg : func.getArguments()) {
      auto param =
          func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamAttrName);
      RankedTensorType type = getFloatTensorType(arg.getType());
      if (param && type && !type.getElementType().isF32())
        return func.emitError()
               << "parameter '" << param.getValue() << "' is " << type
               << "; tfm-mixed-precision keeps f32 master weights, so the "
               << "model must be built in f32";
    }
    if (failed(rewriteBody(func)))
      return failure();
    // The entry keeps its result types (the loss is f32 already).
    auto ret = cast<func::ReturnOp>(func.front().getTerminator());
    OpBuilder b(ret);
    for (auto [operand, type] :
         llvm::zip_equal(ret->getOpOperands(), func.getResultTypes()))
      if (operand.get().getType() != type)
        operand.set(castTo(b, ret->getLoc(), operand.get(),
                           cast<RankedTensorType>(type).getElementType()));
    return success();
  }

private:
  /// `value` converted to element type `element` (a new tfm.cast).
  Value castTo(OpBuilder &b, Location loc, Value value, Type element) {
    auto type = cast<RankedTensorType>(value.getType());
    return CastOp::create(b, loc, withElement(type, element), value);
  }

  /// The element type `op` computes in, or null for ops that keep their
  /// operand types (non-tfm ops, ops without float operands, and scalar
  /// arithmetic such as adding the MoE auxiliary loss to the loss).
  Type computeTypeOf(Operation *op) {
    if (!isa<TfmDialect>(op->getDialect()))
      return nullptr;
    if (runsInF32(op))
      return f32;
    bool tensorOperand = false;
    for (Value operand : op->getOperands())
      if (RankedTensorType t = getFloatTensorType(operand.getType()))
        tensorOperand |= t.getRank() > 0;
    return tensorOperand ? Type(compute) : Type();
  }

  LogicalResult rewriteOp(Operation *op) {
    if (auto call = dyn_cast<func::CallOp>(op))
      return rewriteCall(call);
    Type element = computeTypeOf(op);
    if (!element)
      return success();
    OpBuilder b(op);
    // One cast per (value, op): a parameter used twice by one op is cast
    // once; used by two ops it is cast at each (so that each use's
    // gradient is converted back to f32 before the uses are summed). The
    // operands of an f32 op that are f32 already (norm weights) stay as
    // they are.
    llvm::SmallDenseMap<Value, Value, 4> casts;
    for (OpOperand &operand : op->getOpOperands()) {
      RankedTensorType type = getFloatTensorType(operand.get().getType());
      if (!type || type.getElementType() == element)
        continue;
      Value &converted = casts[operand.get()];
      if (!converted)
        converted = castTo(b, op->getLoc(), operand.get(), element);
      operand.set(converted);
    }
    if (failed(updateResultTypes(op)))
      return failure();
    if (!castsResultsBack(op))
      return success();
    b.setInsertionPointAfter(op);
    for (Value result : op->getResults()) {
      RankedTensorType type = getFloatTensorType(result.getType());
      if (!type || type.getRank() == 0 || type.getElementType() == compute)
        continue;
      Value back = castTo(b, op->getLoc(), result, compute);
      result.replaceAllUsesExcept(back, back.getDefiningOp());
    }
    return success();
  }

  /// A call to a block function: the callee is rewritten for the operand
  /// types of the call (once; every call must pass the same types), and the
  /// call takes its new result types.
  LogicalResult rewriteCall(func::CallOp call) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || callee.isExternal())
      return call.emitOpError() << "calls '" << call.getCallee()
                                << "', which has no body to rewrite";
    SmallVector<Type> argTypes(call.getOperandTypes());
    auto it = rewritten.find(callee);
    if (it != rewritten.end()) {
      if (it->second != argTypes)
        return call.emitOpError()
               << "passes other types to '" << call.getCallee()
               << "' than an earlier call after the precision policy; "
               << "tfm-mixed-precision rewrites a block function once";
    } else {
      if (callee.isPublic())
        return call.emitOpError()
               << "calls public function '" << call.getCallee()
               << "'; block functions must be private";
      rewritten[callee] = argTypes;
      for (auto [arg, type] : llvm::zip_equal(callee.getArguments(), argTypes))
        arg.setType(type);
      if (failed(rewriteBody(callee)))
        return failure();
      auto ret = cast<func::ReturnOp>(callee.front().getTerminator());
      callee.setFunctionType(FunctionType::get(callee.getContext(), argTypes,
                                               ret->getOperandTypes()));
    }
    for (auto [result, type] :
         llvm::zip_equal(call.getResults(), callee.getResultTypes()))
      result.setType(type);
    return success();
  }

  LogicalResult rewriteBody(func::FuncOp func) {
    if (!func.getBody().hasOneBlock())
      return func.emitError() << "tfm-mixed-precision expects a single block";
    // Collect first: rewriting inserts casts around each op.
    SmallVector<Operation *> ops;
    for (Operation &op : func.front().without_terminator())
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (op->getNumRegions() != 0)
        return op->emitOpError()
               << "has regions; tfm-mixed-precision expects straight-line "
               << "model functions";
      if (failed(rewriteOp(op)))
        return failure();
    }
    return success();
  }

  ModuleOp module;
  SymbolTable symbols;
  FloatType compute;
  FloatType f32;
  /// Block functions already rewritten, with the argument types they got.
  llvm::DenseMap<func::FuncOp, SmallVector<Type>> rewritten;
};

struct TfmMixedPrecisionPass
    : public autoshard::tfm::impl::TfmMixedPrecisionBase<
          TfmMixedPrecisionPass> {
  using TfmMixedPrecisionBase::TfmMixedPrecisionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    FloatType compute;
    StringRef type = computeType;
    if (type == "bf16")
      compute = BFloat16Type::get(ctx);
    else if (type == "f16")
      compute = Float16Type::get(ctx);
    else {
      module.emitError() << "tfm-mixed-precision: compute-type must be bf16 "
                            "or f16, found '"
                         << type << "'";
      return signalPassFailure();
    }
    if (module->hasAttr(kMixedPrecisionAttrName)) {
      module.emitError() << "tfm-mixed-precision: the module is already "
                            "mixed precision ("
                         << kMixedPrecisionAttrName << " is set)";
      return signalPassFailure();
    }
    // Forward ops only: gradient and optimizer ops (no VJP rule) mean that
    // tfm-autodiff already ran, and its AdamW would see 16-bit gradients.
    WalkResult walk = module.walk([&](Operation *op) {
      if (isa<TfmDialect>(op->getDialect()) && !isa<TfmVJPOpInterface>(op)) {
        op->emitOpError() << "is not a forward op: tfm-mixed-precision runs "
                             "on the model (before tfm-autodiff)";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    MixedPrecision rewrite(module, compute);
    bool any = false;
    for (auto func :
         llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (func.isPrivate() || func.isExternal())
        continue;
      any = true;
      if (failed(rewrite.runEntry(func)))
        return signalPassFailure();
    }
    if (!any) {
      module.emitError() << "tfm-mixed-precision: no public function (the "
                            "model's @forward) to rewrite";
      return signalPassFailure();
    }
    module->setAttr(kMixedPrecisionAttrName, StringAttr::get(ctx, type));
  }
};

} // namespace
