//===- RtOps.cpp - Runtime program ops ------------------------------------===//

#include "autoshard/Dialect/Rt/IR/RtOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

using namespace mlir;
using namespace autoshard::rt;

#include "autoshard/Dialect/Rt/IR/RtEnums.cpp.inc"

#define GET_OP_CLASSES
#include "autoshard/Dialect/Rt/IR/RtOps.cpp.inc"

std::optional<int64_t> autoshard::rt::getPlannedOffset(Operation *op) {
  // Locals and slots name it `offset`, calls `frame_offset`.
  auto offset = op->getAttrOfType<IntegerAttr>(isa<CallOp>(op) ? "frame_offset"
                                                               : "offset");
  if (!offset)
    return std::nullopt;
  return offset.getInt();
}

Operation *autoshard::rt::getBufferRoot(Value buffer) {
  while (auto view = buffer.getDefiningOp<ViewOp>())
    buffer = view.getSource();
  return buffer.getDefiningOp();
}

/// Checks that a planned `offset` is aligned; whether it fits the frame is
/// checked by the function, which knows the frame size.
static LogicalResult verifyOffset(Operation *op, std::optional<int64_t> offset,
                                  StringRef what) {
  if (offset && *offset % RtDialect::kAlignment != 0)
    return op->emitOpError()
           << what << " must be a multiple of " << RtDialect::kAlignment
           << " bytes, found " << *offset;
  return success();
}

//===----------------------------------------------------------------------===//
// StateDefOp
//===----------------------------------------------------------------------===//

/// Symbols print as `@name`; MLIR prints an empty one as
/// `@<<INVALID EMPTY SYMBOL>>`, so definitions must have a name.
static LogicalResult verifySymbolName(Operation *op, StringRef name) {
  if (name.empty())
    return op->emitOpError() << "needs a name, found an empty one (@\"\")";
  return success();
}

LogicalResult StateDefOp::verify() {
  if (failed(verifySymbolName(*this, getSymName())))
    return failure();
  bool isNormal = getInit() == InitKind::Normal;
  if (isNormal != getInitStd().has_value())
    return emitOpError() << "'std' must be given exactly when init is "
                            "'normal'; init is '"
                         << stringifyInitKind(getInit()) << "'"
                         << (getInitStd() ? " with a std" : " without std");
  if (std::optional<llvm::APFloat> given = getInitStd()) {
    double value = given->convertToDouble();
    if (!(value >= 0 && std::isfinite(value)))
      return emitOpError() << "std must be finite and >= 0, found " << value;
  }
  bool isParam = getKind() == StateKind::Param;
  if (isParam == getOf().has_value())
    return emitOpError() << "a '" << stringifyStateKind(getKind()) << "' state "
                         << (isParam ? "cannot name" : "must name")
                         << " the parameter it belongs to with 'of'";
  if (getWeightDecay() && !isParam)
    return emitOpError() << "only a 'param' state can have 'decay', found '"
                         << stringifyStateKind(getKind()) << "'";
  if (std::optional<ArrayRef<int64_t>> logical = getLogicalShape()) {
    size_t rank = getBufferType().getShape().size();
    if (logical->size() != rank)
      return emitOpError() << "logical shape must have the buffer's rank "
                           << rank << ", found rank " << logical->size();
    if (llvm::any_of(*logical, [](int64_t d) { return d < 0; }))
      return emitOpError() << "logical shape dims must be >= 0";
  }
  return success();
}

LogicalResult StateDefOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (!getOf())
    return success();
  auto param = symbols.lookupNearestSymbolFrom<StateDefOp>(*this, getOfAttr());
  if (!param || param.getKind() != StateKind::Param)
    return emitOpError() << "'of' must name a 'param' rt.state_def, found '@"
                         << getOfAttr().getValue() << "'";
  // Sharded states (`rt.sharding`, from a partitioned program) hold local
  // blocks: ZeRO shards a moment but not its parameter, so only the element
  // type and rank must agree (rt-export checks the global shapes).
  if (param->hasAttr("rt.sharding") || (*this)->hasAttr("rt.sharding")) {
    if (param.getBufferType().getElementType() !=
            getBufferType().getElementType() ||
        param.getBufferType().getShape().size() !=
            getBufferType().getShape().size())
      return emitOpError() << "type " << getType()
                           << " differs in element type or rank from that "
                              "of its parameter "
                           << getOfAttr() << ", '" << param.getType() << "'";
    return success();
  }
  if (param.getType() != getType())
    return emitOpError() << "type " << getType()
                         << " differs from that of its parameter "
                         << param.getSymNameAttr() << ", " << param.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// FuncOp
//===----------------------------------------------------------------------===//

void FuncOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                   FunctionType type) {
  state.addAttribute(SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addAttribute(getFunctionTypeAttrName(state.name), TypeAttr::get(type));
  state.addRegion();
}

ParseResult FuncOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildFuncType =
      [](Builder &builder, ArrayRef<Type> argTypes, ArrayRef<Type> results,
         function_interface_impl::VariadicFlag,
         std::string &) { return builder.getFunctionType(argTypes, results); };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false,
      getFunctionTypeAttrName(result.name), buildFuncType,
      getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name));
}

void FuncOp::print(OpAsmPrinter &p) {
  function_interface_impl::printFunctionOp(
      p, *this, /*isVariadic=*/false, getFunctionTypeAttrName(),
      getArgAttrsAttrName(), getResAttrsAttrName());
}

LogicalResult FuncOp::verify() {
  if (failed(verifySymbolName(*this, getSymName())))
    return failure();
  if (!getResultTypes().empty())
    return emitOpError() << "must have no results (outputs are passed as "
                            "arguments), found "
                         << getResultTypes().size();
  for (auto [i, type] : llvm::enumerate(getArgumentTypes()))
    if (!isa<BufferType>(type))
      return emitOpError() << "argument " << i
                           << " must be an !rt.buffer, found " << type;
  if (isEntry() && !getArgumentTypes().empty())
    return emitOpError() << "entry '" << *getEntry()
                         << "' must have no arguments (it reads I/O slots and "
                            "state), found "
                         << getArgumentTypes().size();
  if (auto breakdown = getPeakBreakdown()) {
    for (NamedAttribute entry : *breakdown) {
      if (!symbolizeCategory(entry.getName().getValue()))
        return emitOpError()
               << "peak_breakdown key '" << entry.getName().getValue()
               << "' is not a category";
      if (!isa<IntegerAttr>(entry.getValue()))
        return emitOpError()
               << "peak_breakdown value of '" << entry.getName().getValue()
               << "' must be an integer, found " << entry.getValue();
    }
  }
  return verifyOffset(*this, getFrameBytes(), "frame_bytes");
}

LogicalResult FuncOp::verifyRegions() {
  Block &body = getBody().front();
  llvm::StringSet<> inputs, outputs;
  std::optional<int64_t> frameBytes = getFrameBytes();
  for (Operation &op : body) {
    if (auto input = dyn_cast<InputOp>(op);
        input && !inputs.insert(input.getRole()).second)
      return input.emitOpError()
             << "input role '" << input.getRole() << "' appears twice";
    if (auto output = dyn_cast<OutputOp>(op);
        output && !outputs.insert(output.getRole()).second)
      return output.emitOpError()
             << "output role '" << output.getRole() << "' appears twice";
    if (!isFrameBuffer(&op))
      continue;
    std::optional<int64_t> offset = getPlannedOffset(&op);
    auto type = cast<BufferType>(op.getResult(0).getType());
    if (offset.has_value() != frameBytes.has_value())
      return op.emitOpError()
             << (frameBytes ? "has no offset but its function is planned "
                              "(it has frame_bytes)"
                            : "has an offset but its function is not planned "
                              "(no frame_bytes)");
    if (offset && *offset + type.getSizeInBytes() > *frameBytes)
      return op.emitOpError()
             << "bytes [" << *offset << ", " << *offset + type.getSizeInBytes()
             << ") exceed the function's frame_bytes " << *frameBytes;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

LogicalResult AllocOp::verify() {
  if (getCategory() == Category::Io)
    return emitOpError() << "category 'io' is reserved for rt.input/rt.output "
                            "slots";
  return verifyOffset(*this, getOffset(), "offset");
}

/// Slots only make sense where the runtime fills and reads them.
static LogicalResult verifySlot(Operation *op, std::optional<int64_t> offset) {
  auto func = dyn_cast_or_null<FuncOp>(op->getParentOp());
  if (!func)
    return op->emitOpError() << "must be inside an rt.func";
  if (!func.isEntry())
    return op->emitOpError() << "is only allowed in an entry function; '"
                             << func.getSymName() << "' has no 'entry'";
  return verifyOffset(op, offset, "offset");
}

LogicalResult InputOp::verify() { return verifySlot(*this, getOffset()); }
LogicalResult OutputOp::verify() { return verifySlot(*this, getOffset()); }

LogicalResult ViewOp::verify() {
  auto source = cast<BufferType>(getSource().getType());
  auto result = cast<BufferType>(getType());
  if (source.getElementType() != result.getElementType())
    return emitOpError() << "element type " << result.getElementType()
                         << " differs from the source's "
                         << source.getElementType();
  if (source.getNumElements() != result.getNumElements())
    return emitOpError() << "element count " << result.getNumElements()
                         << " differs from the source's "
                         << source.getNumElements();
  return success();
}

LogicalResult StateOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto def = symbols.lookupNearestSymbolFrom<StateDefOp>(*this, getNameAttr());
  if (!def)
    return emitOpError() << "'" << getName()
                         << "' does not name an rt.state_def";
  if (def.getType() != getType())
    return emitOpError() << "type " << getType() << " differs from state '"
                         << getName() << "' declared as " << def.getType();
  return success();
}

void ConstOp::build(OpBuilder &builder, OperationState &state,
                    ElementsAttr value) {
  build(builder, state, BufferType::get(value.getShapedType()), value);
}

// `rt.const dense<3> : tensor<i64>`: the buffer type is that of the value.
ParseResult ConstOp::parse(OpAsmParser &parser, OperationState &result) {
  ElementsAttr value;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseAttribute(value, "value", result.attributes) ||
      parser.parseOptionalAttrDict(result.attributes))
    return failure();
  // A value no buffer can hold (e.g. of i60) is an error here, not an
  // invalid type (found by fuzzing, issue 19).
  auto type = BufferType::getChecked([&] { return parser.emitError(loc); },
                                     value.getShapedType());
  if (!type)
    return failure();
  result.addTypes(type);
  return success();
}

void ConstOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printAttribute(getValue());
  p.printOptionalAttrDict((*this)->getAttrs(), {"value"});
}

LogicalResult ConstOp::verify() {
  if (!isa<DenseElementsAttr>(getValue()))
    return emitOpError() << "value must be a dense elements attribute, found "
                         << getValue();
  // Compared field by field: the value's type (e.g. of i31, in the generic
  // form) need not make a valid buffer type (found by fuzzing, issue 19).
  ShapedType value = getValue().getShapedType();
  if (value.getShape() != getType().getShape() ||
      value.getElementType() != getType().getElementType())
    return emitOpError() << "type " << getType()
                         << " differs from the value's type " << value;
  return success();
}

//===----------------------------------------------------------------------===//
// Instructions
//===----------------------------------------------------------------------===//

LogicalResult KernelOp::verify() {
  StringRef name = getKernel();
  // Communication kernels carry the dist op's name (`dist.all_reduce`),
  // which no tfm kernel name can clash with.
  bool isComm = name.consume_front("dist.");
  if (name.empty() || !llvm::all_of(name, [](char c) {
        return llvm::isLower(c) || llvm::isDigit(c) || c == '_';
      }))
    return emitOpError() << "kernel name must be a non-empty [a-z0-9_] "
                            "identifier (optionally prefixed by 'dist.'), "
                            "found '"
                         << getKernel() << "'";
  name = getKernel();
  // A send (and the wait of a send) writes nothing.
  if (getResults().empty() && !isComm)
    return emitOpError() << "kernel '" << name << "' must have a result";
  for (auto [i, result] : llvm::enumerate(getResults())) {
    Operation *root = getBufferRoot(result);
    if (isa_and_nonnull<ConstOp, InputOp>(root))
      return emitOpError() << "result " << i << " of kernel '" << name
                           << "' is read-only memory (" << root->getName()
                           << ")";
  }
  return success();
}

LogicalResult CallOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto callee = symbols.lookupNearestSymbolFrom<FuncOp>(*this, getCalleeAttr());
  if (!callee)
    return emitOpError() << "'" << getCallee() << "' does not name an rt.func";
  if (callee.isEntry())
    return emitOpError() << "cannot call entry function '" << getCallee()
                         << "'";
  ArrayRef<Type> argTypes = callee.getArgumentTypes();
  if (argTypes.size() != getOperands().size())
    return emitOpError() << "passes " << getOperands().size()
                         << " buffers but '" << getCallee() << "' takes "
                         << argTypes.size();
  for (auto [i, pair] : llvm::enumerate(llvm::zip(getOperandTypes(), argTypes)))
    if (std::get<0>(pair) != std::get<1>(pair))
      return emitOpError() << "operand " << i << " has type "
                           << std::get<0>(pair) << " but '" << getCallee()
                           << "' expects " << std::get<1>(pair);
  if (failed(verifyOffset(*this, getFrameOffset(), "frame_offset")))
    return failure();
  // HasParent<FuncOp> is checked first when the whole module verifies; a
  // direct call of this hook (SymbolTable::verifySymbolUses) may come first.
  auto caller = dyn_cast_or_null<FuncOp>((*this)->getParentOp());
  if (!caller)
    return emitOpError() << "must be inside an rt.func";
  if (getFrameOffset().has_value() != caller.isPlanned())
    return emitOpError() << (caller.isPlanned()
                                 ? "has no frame_offset but its function is "
                                   "planned (it has frame_bytes)"
                                 : "has a frame_offset but its function is "
                                   "not planned (no frame_bytes)");
  if (!getFrameOffset())
    return success();
  if (!callee.isPlanned())
    return emitOpError() << "is planned but its callee '" << getCallee()
                         << "' is not (no frame_bytes)";
  int64_t end = *getFrameOffset() + *callee.getFrameBytes();
  if (end > *caller.getFrameBytes())
    return emitOpError() << "callee frame [" << *getFrameOffset() << ", " << end
                         << ") exceeds the caller's frame_bytes "
                         << *caller.getFrameBytes();
  return success();
}
