//===- DistAttrs.cpp - Sharding attributes --------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistAttrs.h"
#include "autoshard/Dialect/Dist/IR/DistDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace autoshard::dist;

#include "autoshard/Dialect/Dist/IR/DistEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "autoshard/Dialect/Dist/IR/DistAttrs.cpp.inc"

// Registered here, beside the attributes' definitions (DESIGN.md §10).
void DistDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "autoshard/Dialect/Dist/IR/DistAttrs.cpp.inc"
      >();
}
