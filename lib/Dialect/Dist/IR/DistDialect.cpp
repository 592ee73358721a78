//===- DistDialect.cpp - Distribution dialect -----------------------------===//

#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "autoshard/Dialect/Dist/IR/DistOps.h"

using namespace mlir;
using namespace autoshard::dist;

#include "autoshard/Dialect/Dist/IR/DistOpsDialect.cpp.inc"

void DistDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "autoshard/Dialect/Dist/IR/DistOps.cpp.inc"
      >();
}
