//===- RtLower.cpp - tfm functions to rt instruction streams --------------===//
//
// Implements `rt-lower` (see Passes.td for the contract). Each function is
// lowered in one walk over its body: destinations of returned values are
// decided first, so that producers write straight into output slots, state
// buffers and the caller's buffers instead of into a temporary plus a copy.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/IR/DistTypes.h"
#include "autoshard/Dialect/Rt/IR/RtOps.h"
#include "autoshard/Dialect/Rt/Transforms/Passes.h"
#include "autoshard/Dialect/Tfm/IR/TfmAttrNames.h"
#include "autoshard/Dialect/Tfm/IR/TfmDialect.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

namespace autoshard::rt {
#define GEN_PASS_DEF_RTLOWER
#include "autoshard/Dialect/Rt/Transforms/Passes.h.inc"
} // namespace autoshard::rt

using namespace mlir;
using namespace autoshard;
using namespace autoshard::rt;

namespace {

/// The runtime's name for the entry that public function `func` implements:
/// its own name (tfm-autodiff emits `@train_step`, `@eval`, `@logits`), or
/// for one stage of a pipelined entry the entry's (`dist.entry`).
StringRef getEntryName(func::FuncOp func) {
  if (auto entry = func->getAttrOfType<StringAttr>(dist::kEntryAttrName))
    return entry.getValue();
  return func.getSymName();
}

bool isEntry(func::FuncOp func) { return func.isPublic(); }

/// The state that argument or result attributes `attrs` name, if any.
StringAttr getStateName(DictionaryAttr attrs) {
  if (!attrs)
    return {};
  if (auto name = attrs.getAs<StringAttr>(tfm::kParamAttrName))
    return name;
  return attrs.getAs<StringAttr>(tfm::kStateAttrName);
}

/// Kernel name of a tfm op: the op name without the dialect prefix.
StringRef getKernelName(Operation *op) { return op->getName().stripDialect(); }

/// The `dist.sharding` arg/result attribute that dist-partition leaves on
/// entry functions (the layout of a state or an I/O slot), and the
/// attribute that carries it on `rt.state_def` / `rt.input` / `rt.output`
/// for rt-export (`dist.sharding` itself is verified as the sharding of an
/// op's tensor results, which these ops do not have).
constexpr StringLiteral kRtShardingAttr = "rt.sharding";

bool isDistOp(Operation *op) {
  return op->getDialect() && op->getDialect()->getNamespace() ==
                                 dist::DistDialect::getDialectNamespace();
}

/// Copies the `dist.sharding` attribute of `attrs` (if any) onto `op`.
void copySharding(DictionaryAttr attrs, Operation *op) {
  if (Attribute sharding =
          attrs ? attrs.get(dist::kShardingAttrName) : Attribute())
    op->setAttr(kRtShardingAttr, sharding);
}

bool isTfmOp(Operation *op) {
  return op->getDialect() && op->getDialect()->getNamespace() ==
                                 tfm::TfmDialect::getDialectNamespace();
}

/// Optimizer statistics: scalars that are neither forward values nor
/// gradients.
bool isWorkspaceOp(Operation *op) {
  return op->hasTrait<tfm::trait::OptimizerStatistic>();
}

/// Declares the module's state tensors (`rt.state_def`) from the tagged
/// arguments of entry functions; several entries share one declaration.
class StateTable {
public:
  StateTable(ModuleOp module) : module(module) {}

  /// Declares (or checks against the earlier declaration) the state that
  /// argument `index` of `func` holds.
  FailureOr<StateDefOp> declare(func::FuncOp func, unsigned index);

private:
  ModuleOp module;
  llvm::StringMap<StateDefOp> defs;
  /// Insertion point: after the previous declaration, so that the table
  /// keeps the order of first appearance.
  Operation *last = nullptr;
};

FailureOr<StateDefOp> StateTable::declare(func::FuncOp func, unsigned index) {
  DictionaryAttr attrs = func.getArgAttrDict(index);
  StringAttr name = getStateName(attrs);
  auto type = BufferType::get(
      cast<RankedTensorType>(func.getFunctionType().getInput(index)));
  auto emitError = [&] {
    return func.emitOpError()
           << "argument " << index << " (state '" << name.getValue() << "'): ";
  };
  if (name.getValue().empty())
    return emitError() << "the state needs a name ('" << tfm::kParamAttrName
                       << "' or '" << tfm::kStateAttrName
                       << "'), found an empty one";
  if (StateDefOp existing = defs.lookup(name)) {
    if (existing.getType() != type)
      return emitError() << "type " << type << " differs from the type "
                         << existing.getType() << " it has in another function";
    Attribute sharding = attrs.get(dist::kShardingAttrName),
              other = existing->getAttr(kRtShardingAttr);
    if (sharding != other) {
      InFlightDiagnostic diag = emitError() << "sharding ";
      if (sharding)
        diag << sharding;
      else
        diag << "(none)";
      diag << " differs from the sharding ";
      if (other)
        diag << other;
      else
        diag << "(none)";
      return diag << " it has in another function";
    }
    return existing;
  }

  bool isParam = attrs.contains(tfm::kParamAttrName);
  StateKind kind = StateKind::Param;
  FlatSymbolRefAttr of;
  if (!isParam) {
    auto kindName = attrs.getAs<StringAttr>(tfm::kStateKindAttrName);
    std::optional<StateKind> parsed =
        kindName ? symbolizeStateKind(kindName.getValue()) : std::nullopt;
    if (!kindName)
      return emitError() << "missing '" << tfm::kStateKindAttrName
                         << "' (\"opt_m\" or \"opt_v\")";
    if (!parsed || *parsed == StateKind::Param)
      return emitError() << "'" << tfm::kStateKindAttrName
                         << "' must be \"opt_m\" or \"opt_v\", found "
                         << kindName;
    kind = *parsed;
    auto ofName = attrs.getAs<StringAttr>(tfm::kStateOfAttrName);
    if (!ofName || ofName.getValue().empty())
      return emitError() << "missing '" << tfm::kStateOfAttrName
                         << "' (the parameter it belongs to)";
    of = FlatSymbolRefAttr::get(ofName);
  }
  auto initName = attrs.getAs<StringAttr>(tfm::kInitAttrName);
  std::optional<InitKind> init =
      initName ? symbolizeInitKind(initName.getValue()) : std::nullopt;
  if (!initName)
    return emitError() << "missing '" << tfm::kInitAttrName
                       << "' (\"normal\", \"zeros\" or \"ones\": how the "
                          "runtime initialises the state; the model builder "
                          "sets it on every parameter)";
  if (!init)
    return emitError() << "'" << tfm::kInitAttrName
                       << "' must be \"normal\", \"zeros\" or \"ones\", found "
                       << initName;
  FloatAttr std;
  if (*init == InitKind::Normal) {
    std = attrs.getAs<FloatAttr>(tfm::kInitStdAttrName);
    if (!std)
      return emitError() << "init \"normal\" needs a float '"
                         << tfm::kInitStdAttrName << "'";
  }

  // A padded vocabulary: the init keys on the unpadded (logical) shape and
  // zeroes the padding, so the padded model starts as the unpadded one.
  DenseI64ArrayAttr logical;
  if (auto vocab = attrs.getAs<IntegerAttr>(tfm::kVocabSizeAttrName);
      vocab && *init != InitKind::Zeros) {
    auto localType =
        cast<RankedTensorType>(func.getFunctionType().getInput(index));
    RankedTensorType globalType = localType;
    if (auto sharding =
            attrs.getAs<dist::ShardingAttr>(dist::kShardingAttrName)) {
      dist::MeshOp mesh = dist::lookupMesh(func, sharding.getMesh());
      if (!mesh)
        return emitError() << "sharding names no dist.mesh";
      globalType = sharding.getGlobalType(localType, mesh);
      if (!globalType)
        return emitError() << "global shape overflows";
    }
    int64_t rank = globalType.getRank();
    int64_t dim = tfm::getRole(attrs) == tfm::Role::LmHead ? rank - 1 : 0;
    SmallVector<int64_t> shape(globalType.getShape());
    if (rank == 0 || vocab.getInt() < 1 || vocab.getInt() > shape[dim])
      return emitError() << "'" << tfm::kVocabSizeAttrName << "' "
                         << vocab.getInt() << " must be in [1, "
                         << (rank ? shape[dim] : 0)
                         << "] (the padded vocabulary dim " << dim << " of "
                         << globalType << ")";
    shape[dim] = vocab.getInt();
    if (shape != globalType.getShape())
      logical = DenseI64ArrayAttr::get(module.getContext(), shape);
  }

  OpBuilder builder(module.getContext());
  if (last)
    builder.setInsertionPointAfter(last);
  else
    builder.setInsertionPointToStart(module.getBody());
  // nanoGPT decays matrices (and embeddings), not gains and biases.
  bool decay = isParam && type.getShape().size() >= 2;
  MLIRContext *ctx = module.getContext();
  auto def = StateDefOp::create(
      builder, func.getLoc(), name, StateKindAttr::get(ctx, kind), of,
      InitKindAttr::get(ctx, *init),
      std ? builder.getF64FloatAttr(std.getValueAsDouble()) : FloatAttr(),
      logical, decay ? builder.getUnitAttr() : UnitAttr(), TypeAttr::get(type));
  copySharding(attrs, def);
  last = def;
  defs[name] = def;
  return def;
}

/// Lowers one func.func into a new rt.func placed before it.
class FunctionLowering {
public:
  FunctionLowering(func::FuncOp func, StateTable &states,
                   const llvm::StringMap<func::FuncOp> &funcs)
      : func(func), states(states), funcs(funcs), builder(func) {}

  LogicalResult lower();

private:
  LogicalResult createFunction();
  LogicalResult mapEntryArguments();
  LogicalResult assignDestinations();
  bool place(Value value, Value buffer);
  LogicalResult checkInPlaceUpdate(Value oldState, StringAttr name,
                                   Value newValue);
  LogicalResult lowerOp(Operation *op);
  LogicalResult lowerDistOp(Operation *op, ArrayRef<Value> operandBuffers);
  Value getResultBuffer(Value result);
  Category getCategory(Value result);
  Value getOrCreateState(func::FuncOp func, unsigned index);

  func::FuncOp func;
  StateTable &states;
  /// The module's functions by name (their rt replacements share the names
  /// while the pass runs, so symbol lookups would be ambiguous).
  const llvm::StringMap<func::FuncOp> &funcs;
  OpBuilder builder;
  rt::FuncOp target;
  /// The buffer of each tensor value lowered so far.
  DenseMap<Value, Value> buffers;
  /// Buffers decided in advance for returned values (and the reshape
  /// sources of returned values).
  DenseMap<Value, Value> destinations;
  /// Returned values that could not be computed in place: (value, buffer).
  SmallVector<std::pair<Value, Value>> copies;
  /// Tensor values that are gradients (see getCategory).
  DenseSet<Value> gradients;
  /// State buffers of an entry by state name.
  llvm::StringMap<Value> stateBuffers;
  /// An asynchronous collective in flight: its handle number (unique in the
  /// function) and the buffers of its start kernel.
  struct Pending {
    int64_t handle;
    SmallVector<Value> args, results;
  };
  DenseMap<Value, Pending> pending;
  int64_t nextHandle = 0;
  bool isBackward = false;
};

/// A sharded function must be per-rank: the `dist.sharding` of an argument
/// or result describes the global layout of a LOCAL value only once
/// `dist-partition` has rewritten the function (`dist.partitioned`). Before
/// that, its shapes are global and lowering it would run every rank on the
/// whole tensors while the artifact says they are shards.
LogicalResult checkPartitioned(func::FuncOp func) {
  if (func->hasAttr(dist::DistDialect::getPartitionedAttrName()))
    return success();
  auto fail = [&](const Twine &where) {
    return func.emitOpError()
           << "carries '" << dist::kShardingAttrName << "' (" << where
           << ") but is not partitioned (no '"
           << dist::DistDialect::getPartitionedAttrName()
           << "'): its shapes are global; run --dist-partition before "
              "rt-lower";
  };
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (func.getArgAttr(i, dist::kShardingAttrName))
      return fail("argument " + Twine(i));
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    if (func.getResultAttr(i, dist::kShardingAttrName))
      return fail("result " + Twine(i));
  Operation *annotated = nullptr;
  func.walk([&](Operation *op) {
    if (!op->hasAttr(dist::kShardingAttrName))
      return WalkResult::advance();
    annotated = op;
    return WalkResult::interrupt();
  });
  if (annotated)
    return fail("op '" + annotated->getName().getStringRef() + "'");
  return success();
}

LogicalResult FunctionLowering::createFunction() {
  if (func.isExternal())
    return func.emitOpError() << "has no body; rt-lower needs every function "
                                 "defined";
  if (!func.getBody().hasOneBlock())
    return func.emitOpError() << "must have a single block";
  if (failed(checkPartitioned(func)))
    return failure();
  for (Type type : llvm::concat<const Type>(func.getArgumentTypes(),
                                            func.getResultTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape())
      return func.emitOpError() << "has a non-static-tensor argument or "
                                   "result type "
                                << type;
  }
  SmallVector<Type> argTypes;
  if (!isEntry(func))
    for (Type type : llvm::concat<const Type>(func.getArgumentTypes(),
                                              func.getResultTypes()))
      argTypes.push_back(BufferType::get(cast<RankedTensorType>(type)));
  target = rt::FuncOp::create(builder, func.getLoc(), func.getSymName(),
                              builder.getFunctionType(argTypes, {}));
  if (isEntry(func)) {
    target.setEntry(getEntryName(func));
    if (auto stage = func->getAttrOfType<IntegerAttr>(dist::kPpStageAttrName))
      target.setPpStageAttr(builder.getI64IntegerAttr(stage.getInt()));
  }
  // What the function computes, kept for the analyses of the rt form
  // (ProgramProfile).
  for (StringRef name : {tfm::kFuncKindAttrName, tfm::kRecomputeAttrName})
    if (Attribute attr = func->getAttr(name))
      target->setAttr(name, attr);
  Block *body = builder.createBlock(&target.getBody());
  for (Type type : argTypes)
    body->addArgument(type, func.getLoc());
  isBackward = tfm::isGradientFunc(func);
  return success();
}

Value FunctionLowering::getOrCreateState(func::FuncOp func, unsigned index) {
  StringAttr name = getStateName(func.getArgAttrDict(index));
  Value &buffer = stateBuffers[name];
  if (!buffer) {
    FailureOr<StateDefOp> def = states.declare(func, index);
    if (failed(def))
      return {};
    buffer = StateOp::create(builder, func.getLoc(), def->getBufferType(),
                             FlatSymbolRefAttr::get(name));
  }
  return buffer;
}

LogicalResult FunctionLowering::mapEntryArguments() {
  for (BlockArgument arg : func.getArguments()) {
    unsigned index = arg.getArgNumber();
    DictionaryAttr attrs = func.getArgAttrDict(index);
    auto type = BufferType::get(cast<RankedTensorType>(arg.getType()));
    if (auto role =
            attrs ? attrs.getAs<StringAttr>(tfm::kInputAttrName) : nullptr) {
      auto input = InputOp::create(builder, arg.getLoc(), type, role,
                                   /*offset=*/nullptr);
      copySharding(attrs, input);
      buffers[arg] = input;
      continue;
    }
    if (!getStateName(attrs))
      return func.emitOpError()
             << "entry argument " << index << " has none of '"
             << tfm::kInputAttrName << "', '" << tfm::kParamAttrName << "', '"
             << tfm::kStateAttrName << "' (the runtime cannot fill it)";
    Value state = getOrCreateState(func, index);
    if (!state)
      return failure();
    buffers[arg] = state;
  }
  return success();
}

/// Makes `value` be computed directly into `buffer`. Returns false when it
/// cannot be (an argument, a constant, or a value that already has a
/// destination): the caller then copies it.
bool FunctionLowering::place(Value value, Value buffer) {
  Operation *producer = value.getDefiningOp();
  if (!producer || destinations.count(value) ||
      isa<arith::ConstantOp>(producer))
    return false;
  if (auto reshape = dyn_cast<tfm::ReshapeOp>(producer)) {
    // The reshape's source is computed into a view of the destination, so
    // that the reshape itself stays free.
    Value source = reshape->getOperand(0);
    auto view = ViewOp::create(
        builder, reshape.getLoc(),
        BufferType::get(cast<RankedTensorType>(source.getType())), buffer);
    if (!place(source, view)) {
      view.erase();
      return false;
    }
  }
  destinations[value] = buffer;
  return true;
}

/// Returns the op that writes `value`'s buffer: the producer at the root of
/// its chain of reshapes.
static Operation *getWriter(Value value) {
  Operation *op = value.getDefiningOp();
  while (auto reshape = dyn_cast_or_null<tfm::ReshapeOp>(op))
    op = reshape->getOperand(0).getDefiningOp();
  // An asynchronous collective writes its result between start and wait.
  if (auto wait = dyn_cast_or_null<dist::WaitOp>(op))
    op = wait.getHandle().getDefiningOp();
  return op;
}

/// Collects the uses that read `value` or a reshape of it.
static void collectReads(Value value, SmallVectorImpl<OpOperand *> &reads) {
  for (OpOperand &use : value.getUses()) {
    if (isa<tfm::ReshapeOp>(use.getOwner()))
      collectReads(use.getOwner()->getResult(0), reads);
    else
      reads.push_back(&use);
  }
}

LogicalResult FunctionLowering::checkInPlaceUpdate(Value oldState,
                                                   StringAttr name,
                                                   Value newValue) {
  Operation *writer = getWriter(newValue);
  SmallVector<OpOperand *> reads;
  collectReads(oldState, reads);
  for (OpOperand *read : reads) {
    Operation *reader = read->getOwner();
    // Returning the old value as the state itself is no read: the state is
    // then unchanged (and not updated here). As anything else, the return
    // reads it after the body, so after the update.
    if (isa<func::ReturnOp>(reader) && read->get() == oldState &&
        getStateName(func.getResultAttrDict(read->getOperandNumber())) == name)
      continue;
    if (reader == writer && isa<func::CallOp>(writer))
      return writer->emitOpError()
             << "both reads and writes state '" << name.getValue()
             << "'; a callee may overwrite an argument before it has read it, "
                "so an in-place update must be a single kernel";
    if (writer->isBeforeInBlock(reader)) {
      InFlightDiagnostic diag =
          reader->emitOpError()
          << "reads the old value of state '" << name.getValue() << "' after '"
          << writer->getName()
          << "' has updated it in place (the new value is returned as that "
             "state)";
      diag.attachNote(writer->getLoc()) << "updated in place here";
      return diag;
    }
  }
  return success();
}

LogicalResult FunctionLowering::assignDestinations() {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  unsigned numInputs = func.getNumArguments();
  for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
    Value buffer;
    DictionaryAttr attrs = func.getResultAttrDict(index);
    if (!isEntry(func)) {
      buffer = target.getArgument(numInputs + index);
    } else if (auto role = attrs ? attrs.getAs<StringAttr>(tfm::kOutputAttrName)
                                 : nullptr) {
      auto type = BufferType::get(cast<RankedTensorType>(value.getType()));
      auto output = OutputOp::create(builder, ret.getLoc(), type, role,
                                     /*offset=*/nullptr);
      copySharding(attrs, output);
      buffer = output;
    } else if (StringAttr name = getStateName(attrs)) {
      buffer = stateBuffers.lookup(name);
      if (!buffer)
        return func.emitOpError()
               << "result " << index << " updates state '" << name.getValue()
               << "', which is not an argument of the function";
      // Returning the state's own argument: it is unchanged.
      if (buffers.lookup(value) == buffer)
        continue;
      auto oldState = llvm::find_if(func.getArguments(), [&](Value arg) {
        return buffers.lookup(arg) == buffer;
      });
      if (place(value, buffer) &&
          failed(checkInPlaceUpdate(*oldState, name, value)))
        return failure();
      if (!destinations.count(value))
        copies.emplace_back(value, buffer);
      continue;
    } else {
      return func.emitOpError()
             << "entry result " << index << " has neither '"
             << tfm::kOutputAttrName << "' nor '" << tfm::kParamAttrName
             << "'/'" << tfm::kStateAttrName << "'";
    }
    if (!place(value, buffer))
      copies.emplace_back(value, buffer);
  }
  return success();
}

Category FunctionLowering::getCategory(Value result) {
  Operation *producer = result.getDefiningOp();
  if (result.use_empty() || (producer && isWorkspaceOp(producer)))
    return Category::Workspace;
  return gradients.contains(result) ? Category::Grad : Category::Activation;
}

Value FunctionLowering::getResultBuffer(Value result) {
  if (Value buffer = destinations.lookup(result))
    return buffer;
  auto type = BufferType::get(cast<RankedTensorType>(result.getType()));
  return AllocOp::create(
      builder, result.getLoc(), type,
      CategoryAttr::get(builder.getContext(), getCategory(result)),
      /*offset=*/nullptr);
}

LogicalResult FunctionLowering::lowerOp(Operation *op) {
  if (!isTfmOp(op) && !isDistOp(op) &&
      !isa<func::CallOp, func::ReturnOp, arith::ConstantOp>(op))
    return op->emitOpError() << "cannot be lowered by rt-lower (supported: "
                                "tfm ops, dist collectives, arith.constant, "
                                "func.call, func.return)";
  // Gradients flow from the seed through every op they reach; gradient ops
  // and backward functions produce them outright.
  bool isGradient =
      isBackward || llvm::any_of(op->getOperands(), [&](Value operand) {
        return gradients.contains(operand);
      });
  if (auto call = dyn_cast<func::CallOp>(op))
    isGradient |= tfm::isGradientFunc(funcs.lookup(call.getCallee()));
  else
    isGradient |= op->hasTrait<tfm::trait::Gradient>();
  if (isGradient)
    gradients.insert(op->result_begin(), op->result_end());

  auto operandBuffers =
      llvm::map_to_vector(op->getOperands(), [&](Value operand) {
        return buffers.lookup(operand);
      });
  Location loc = op->getLoc();

  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    for (auto [value, buffer] : copies)
      // A materialised `reshape` (same shape) is the runtime's copy.
      KernelOp::create(builder, loc, builder.getStringAttr("reshape"),
                       ValueRange{buffers.lookup(value)}, ValueRange{buffer},
                       /*attrs=*/nullptr);
    ReturnOp::create(builder, loc);
    return success();
  }
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    auto value = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!value || !isa<RankedTensorType>(value.getType()))
      return op->emitOpError() << "rt-lower supports only dense tensor "
                                  "constants, found "
                               << constant.getValue();
    buffers[constant] = ConstOp::create(builder, loc, value);
    return success();
  }
  if (auto reshape = dyn_cast<tfm::ReshapeOp>(op)) {
    Value result = reshape->getResult(0);
    Value buffer = destinations.lookup(result);
    if (!buffer)
      buffer = ViewOp::create(
          builder, loc,
          BufferType::get(cast<RankedTensorType>(result.getType())),
          operandBuffers[0]);
    buffers[result] = buffer;
    return success();
  }

  if (isDistOp(op))
    return lowerDistOp(op, operandBuffers);

  auto results = llvm::map_to_vector(
      op->getResults(), [&](Value result) { return getResultBuffer(result); });
  for (auto [result, buffer] : llvm::zip(op->getResults(), results))
    buffers[result] = buffer;

  if (auto call = dyn_cast<func::CallOp>(op)) {
    func::FuncOp callee = funcs.lookup(call.getCallee());
    if (!callee || isEntry(callee))
      return op->emitOpError() << "calls '" << call.getCallee()
                               << "', which is not a private func.func (only "
                                  "non-entry functions can be called)";
    SmallVector<Value> args(operandBuffers);
    llvm::append_range(args, results);
    rt::CallOp::create(builder, loc, call.getCalleeAttr(), args,
                       /*frame_offset=*/nullptr);
    return success();
  }
  // A tfm op. Inherent attributes only: discardable ones (`dist.sharding`,
  // ...) are compiler annotations, not kernel parameters.
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute attr : op->getAttrs())
    if (!attr.getName().getValue().contains('.'))
      attrs.push_back(attr);
  KernelOp::create(builder, loc, builder.getStringAttr(getKernelName(op)),
                   operandBuffers, results,
                   attrs.empty() ? nullptr : builder.getDictionaryAttr(attrs));
  return success();
}

/// Kernel attributes of a dist op: its inherent attributes but the mesh
/// (the artifact has one mesh), with the reduction as a string.
static DictionaryAttr getDistKernelAttrs(Operation *op, OpBuilder &builder) {
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute attr : op->getAttrs()) {
    StringRef name = attr.getName().getValue();
    if (name == "mesh" || name.contains('.'))
      continue;
    if (auto kind = dyn_cast<dist::ReductionKindAttr>(attr.getValue()))
      attrs.push_back(builder.getNamedAttr(
          name, builder.getStringAttr(
                    dist::stringifyReductionKind(kind.getValue()))));
    else
      attrs.push_back(attr);
  }
  return builder.getDictionaryAttr(attrs);
}

LogicalResult FunctionLowering::lowerDistOp(Operation *op,
                                            ArrayRef<Value> operandBuffers) {
  Location loc = op->getLoc();
  // The artifact's kernel name is the dist op name itself (`dist.all_reduce`,
  // `dist.all_gather_start`, `dist.wait`, ...): it cannot clash with a tfm
  // kernel (e.g. the tensor op `broadcast`).
  StringAttr kernel = builder.getStringAttr(op->getName().getStringRef());

  if (auto wait = dyn_cast<dist::WaitOp>(op)) {
    auto it = pending.find(wait.getHandle());
    if (it == pending.end())
      return op->emitOpError()
             << "waits on a handle that no dist.*_start of this function "
                "started (rt-lower needs start and wait in one function)";
    Pending started = it->second;
    SmallVector<Value> args(started.args);
    llvm::append_range(args, started.results);
    KernelOp::create(builder, loc, kernel, args, started.results,
                     builder.getDictionaryAttr(builder.getNamedAttr(
                         "handle", builder.getI64IntegerAttr(started.handle))));
    if (wait.getResult())
      buffers[wait.getResult()] = started.results.front();
    return success();
  }

  if (op->getNumRegions() != 0 ||
      isa<dist::MeshOp, dist::ShardingConstraintOp, dist::ReshardOp>(op))
    return op->emitOpError()
           << "cannot be lowered by rt-lower (global-shape dist ops must be "
              "removed by dist-partition first)";

  DictionaryAttr attrs = getDistKernelAttrs(op, builder);
  SmallVector<Value> results;
  bool isStart = op->getNumResults() == 1 &&
                 isa<dist::AsyncType>(op->getResult(0).getType());
  // An all-reduce of a bucket's flat buffer (a `dist.pack` nothing else
  // reads) reduces in place (MPI_IN_PLACE, NCCL in-place): one buffer per
  // bucket instead of two, also while a started one is in flight.
  Value inPlace;
  if (isa<dist::AllReduceOp, dist::AllReduceStartOp>(op) &&
      op->getOperand(0).getDefiningOp<dist::PackOp>() &&
      op->getOperand(0).hasOneUse())
    inPlace = operandBuffers.front();
  if (!isStart) {
    // Any number of results (`dist.unpack` has one per tensor).
    for (Value result : op->getResults()) {
      Value buffer = destinations.lookup(result);
      results.push_back(buffer    ? buffer
                        : inPlace ? inPlace
                                  : getResultBuffer(result));
      buffers[result] = results.back();
    }
    KernelOp::create(builder, loc, kernel, operandBuffers, results, attrs);
    return success();
  }

  // A `_start`: its one user must be the `dist.wait` of this block.
  Value handle = op->getResult(0);
  if (!handle.hasOneUse() || !isa<dist::WaitOp>(*handle.getUsers().begin()) ||
      handle.getUsers().begin()->getBlock() != op->getBlock())
    return op->emitOpError()
           << "handle must have exactly one use, a dist.wait in the same "
              "function";
  auto wait = cast<dist::WaitOp>(*handle.getUsers().begin());
  if (Value value = wait.getResult()) {
    // Written by the start (in flight until the wait): the wait's value's
    // destination, or a new buffer.
    Value buffer = destinations.lookup(value);
    if (!buffer)
      buffer = inPlace;
    if (!buffer) {
      Category category = value.use_empty()            ? Category::Workspace
                          : gradients.contains(handle) ? Category::Grad
                                                       : Category::Activation;
      buffer = AllocOp::create(
          builder, loc,
          BufferType::get(cast<RankedTensorType>(value.getType())),
          CategoryAttr::get(builder.getContext(), category),
          /*offset=*/nullptr);
    }
    results.push_back(buffer);
  }
  int64_t number = nextHandle++;
  SmallVector<NamedAttribute> withHandle(attrs.getValue());
  withHandle.push_back(
      builder.getNamedAttr("handle", builder.getI64IntegerAttr(number)));
  KernelOp::create(builder, loc, kernel, operandBuffers, results,
                   builder.getDictionaryAttr(withHandle));
  pending[handle] = {number, SmallVector<Value>(operandBuffers), results};
  return success();
}

LogicalResult FunctionLowering::lower() {
  if (failed(createFunction()))
    return failure();
  builder.setInsertionPointToStart(&target.getBody().front());
  if (isEntry(func)) {
    if (failed(mapEntryArguments()))
      return failure();
  } else {
    for (BlockArgument arg : func.getArguments())
      buffers[arg] = target.getArgument(arg.getArgNumber());
  }
  if (failed(assignDestinations()))
    return failure();
  for (Operation &op : func.getBody().front())
    if (failed(lowerOp(&op)))
      return failure();
  return success();
}

struct RtLowerPass : public rt::impl::RtLowerBase<RtLowerPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // A pipelined plan must have been split into stage programs; otherwise
    // every rank would run the whole model and the pp axis would be idle.
    if (auto plan =
            module->getAttrOfType<DictionaryAttr>(dist::kPlanAttrName)) {
      auto pp = plan.getAs<IntegerAttr>("pp");
      bool split = llvm::any_of(module.getOps<func::FuncOp>(), [](auto fn) {
        return fn->hasAttr(dist::kPpStageAttrName);
      });
      if (pp && pp.getInt() > 1 && !split) {
        module.emitError() << "rt-lower: the plan has pp=" << pp.getInt()
                           << ", but the entries are not split into pipeline "
                              "stages (run --dist-pipeline-split after "
                              "--dist-partition)";
        return signalPassFailure();
      }
    }
    StateTable states(module);
    auto funcs = llvm::to_vector(module.getOps<func::FuncOp>());
    llvm::StringMap<func::FuncOp> byName;
    for (func::FuncOp func : funcs)
      byName[func.getSymName()] = func;
    for (func::FuncOp func : funcs) {
      FunctionLowering lowering(func, states, byName);
      if (failed(lowering.lower()))
        return signalPassFailure();
    }
    for (func::FuncOp func : funcs)
      func.erase();
  }
};

} // namespace
