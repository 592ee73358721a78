//===- DistOps.h - Distribution ops -----------------------------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_DIST_IR_DISTOPS_H
#define AUTOSHARD_DIALECT_DIST_IR_DISTOPS_H

#include "autoshard/Dialect/Dist/IR/DistAttrs.h"
#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "autoshard/Dialect/Dist/IR/DistOps.h.inc"

#endif // AUTOSHARD_DIALECT_DIST_IR_DISTOPS_H
