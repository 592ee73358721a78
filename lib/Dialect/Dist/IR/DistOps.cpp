//===- DistOps.cpp - Distribution ops -------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace autoshard::dist;

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

// dist.mesh @name [axis = size, ...]
ParseResult MeshOp::parse(OpAsmParser &parser, OperationState &result) {
  StringAttr name;
  if (parser.parseSymbolName(name, SymbolTable::getSymbolAttrName(),
                             result.attributes))
    return failure();
  SmallVector<Attribute> names;
  SmallVector<int64_t> sizes;
  auto parseAxis = [&]() -> ParseResult {
    std::string axis;
    int64_t size;
    if (parser.parseKeywordOrString(&axis) || parser.parseEqual() ||
        parser.parseInteger(size))
      return failure();
    names.push_back(parser.getBuilder().getStringAttr(axis));
    sizes.push_back(size);
    return success();
  };
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Square, parseAxis) ||
      parser.parseOptionalAttrDict(result.attributes))
    return failure();
  Builder &b = parser.getBuilder();
  result.addAttribute(getAxisNamesAttrName(result.name), b.getArrayAttr(names));
  result.addAttribute(getAxisSizesAttrName(result.name),
                      b.getDenseI64ArrayAttr(sizes));
  return success();
}

void MeshOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printSymbolName(getSymName());
  p << " [";
  llvm::interleaveComma(llvm::zip(getAxisNames(), getAxisSizes()), p,
                        [&](auto it) {
                          p << cast<StringAttr>(std::get<0>(it)).getValue()
                            << " = " << std::get<1>(it);
                        });
  p << "]";
  p.printOptionalAttrDict((*this)->getAttrs(),
                          {getSymNameAttrName(), getAxisNamesAttrName(),
                           getAxisSizesAttrName()});
}

LogicalResult MeshOp::verify() {
  if (getAxisNames().size() != getAxisSizes().size())
    return emitOpError() << "has " << getAxisNames().size() << " axis names but "
                         << getAxisSizes().size() << " axis sizes";
  if (getAxisNames().empty())
    return emitOpError() << "must have at least one axis";
  llvm::DenseSet<StringRef> seen;
  for (auto [nameAttr, size] : llvm::zip(getAxisNames(), getAxisSizes())) {
    StringRef name = cast<StringAttr>(nameAttr).getValue();
    if (!seen.insert(name).second)
      return emitOpError() << "axis '" << name << "' is declared twice";
    if (size < 1)
      return emitOpError() << "axis '" << name
                           << "' must have size >= 1, found " << size;
  }
  return success();
}

#define GET_OP_CLASSES
#include "autoshard/Dialect/Dist/IR/DistOps.cpp.inc"
