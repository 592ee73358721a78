//===- DistAttrs.h - Sharding attributes ------------------------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_DIST_IR_DISTATTRS_H
#define AUTOSHARD_DIALECT_DIST_IR_DISTATTRS_H

#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "autoshard/Dialect/Dist/IR/DistEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "autoshard/Dialect/Dist/IR/DistAttrs.h.inc"

#endif // AUTOSHARD_DIALECT_DIST_IR_DISTATTRS_H
