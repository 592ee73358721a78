//===- TfmOps.h - Transformer graph ops -------------------------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_TFM_IR_TFMOPS_H
#define AUTOSHARD_DIALECT_TFM_IR_TFMOPS_H

#include "autoshard/Dialect/Tfm/IR/TfmDialect.h"
#include "autoshard/Dialect/Tfm/IR/TfmInterfaces.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "autoshard/Dialect/Tfm/IR/TfmOps.h.inc"

#endif // AUTOSHARD_DIALECT_TFM_IR_TFMOPS_H
