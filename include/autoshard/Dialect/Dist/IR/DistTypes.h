//===- DistTypes.h - Distribution types -------------------------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_DIST_IR_DISTTYPES_H
#define AUTOSHARD_DIALECT_DIST_IR_DISTTYPES_H

#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "autoshard/Dialect/Dist/IR/DistOpsTypes.h.inc"

#endif // AUTOSHARD_DIALECT_DIST_IR_DISTTYPES_H
