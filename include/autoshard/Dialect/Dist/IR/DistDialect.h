//===- DistDialect.h - Distribution dialect ---------------------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_DIST_IR_DISTDIALECT_H
#define AUTOSHARD_DIALECT_DIST_IR_DISTDIALECT_H

#include "autoshard/Dialect/Dist/IR/DistAttrNames.h"
#include "mlir/IR/Dialect.h"

#include "autoshard/Dialect/Dist/IR/DistOpsDialect.h.inc"

#endif // AUTOSHARD_DIALECT_DIST_IR_DISTDIALECT_H
