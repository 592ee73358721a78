//===- RtDialect.cpp - Per-rank runtime program dialect -------------------===//

#include "autoshard/Dialect/Rt/IR/RtDialect.h"
#include "autoshard/Dialect/Rt/IR/RtOps.h"
#include "autoshard/Dialect/Rt/IR/RtTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace autoshard::rt;

#include "autoshard/Dialect/Rt/IR/RtOpsDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "autoshard/Dialect/Rt/IR/RtOpsTypes.cpp.inc"

void RtDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "autoshard/Dialect/Rt/IR/RtOpsTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "autoshard/Dialect/Rt/IR/RtOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// BufferType
//===----------------------------------------------------------------------===//

// `!rt.buffer<2x8xf32>` / `!rt.buffer<f32>`: the tensor type's syntax, so
// that shapes read the same at every level of the compiler.
Type BufferType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType) || parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); }, parser.getContext(),
                    shape, elementType);
}

void BufferType::print(AsmPrinter &printer) const {
  printer << '<';
  for (int64_t dim : getShape())
    printer << dim << 'x';
  printer << getElementType() << '>';
}

LogicalResult BufferType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<int64_t> shape, Type elementType) {
  for (int64_t dim : shape)
    if (dim < 0)
      return emitError() << "buffer dims must be static and >= 0, found "
                         << dim;
  if (!elementType.isIntOrFloat() ||
      elementType.getIntOrFloatBitWidth() % 8 != 0)
    return emitError() << "buffer element type must be an integer or float "
                          "of whole bytes, found "
                       << elementType;
  return success();
}

int64_t BufferType::getNumElements() const {
  int64_t n = 1;
  for (int64_t dim : getShape())
    n *= dim;
  return n;
}

int64_t BufferType::getSizeInBytes() const {
  return getNumElements() * (getElementType().getIntOrFloatBitWidth() / 8);
}

RankedTensorType BufferType::getTensorType() const {
  return RankedTensorType::get(getShape(), getElementType());
}
