//===- RtDialect.h - Per-rank runtime program dialect -----------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_RT_IR_RTDIALECT_H
#define AUTOSHARD_DIALECT_RT_IR_RTDIALECT_H

#include "mlir/IR/Dialect.h"

#include "autoshard/Dialect/Rt/IR/RtOpsDialect.h.inc"

#endif // AUTOSHARD_DIALECT_RT_IR_RTDIALECT_H
