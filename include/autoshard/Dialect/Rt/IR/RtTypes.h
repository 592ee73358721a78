//===- RtTypes.h - Runtime program types ------------------------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_RT_IR_RTTYPES_H
#define AUTOSHARD_DIALECT_RT_IR_RTTYPES_H

#include "autoshard/Dialect/Rt/IR/RtDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "autoshard/Dialect/Rt/IR/RtOpsTypes.h.inc"

#endif // AUTOSHARD_DIALECT_RT_IR_RTTYPES_H
