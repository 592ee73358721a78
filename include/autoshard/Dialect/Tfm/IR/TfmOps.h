//===- TfmOps.h - Transformer graph ops -------------------------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_TFM_IR_TFMOPS_H
#define AUTOSHARD_DIALECT_TFM_IR_TFMOPS_H

#include "autoshard/Dialect/Tfm/IR/TfmAttrs.h"
#include "autoshard/Dialect/Tfm/IR/TfmDialect.h"
#include "autoshard/Dialect/Tfm/IR/TfmInterfaces.h"
#include "autoshard/Dialect/Tfm/IR/TfmTraits.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace autoshard::tfm {

/// Starts a diagnostic for a violated shape rule: `op->emitOpError()` when
/// verifying, an error at the op's location when a builder infers types.
using EmitErrorFn = llvm::function_ref<mlir::InFlightDiagnostic()>;

/// `type` as a float tensor, or null: the values that carry gradients and
/// that mixed precision retypes (ids, labels, step and layer indices are
/// integer tensors).
inline mlir::RankedTensorType getFloatTensorType(mlir::Type type) {
  auto tensor = llvm::dyn_cast<mlir::RankedTensorType>(type);
  return tensor && llvm::isa<mlir::FloatType>(tensor.getElementType())
             ? tensor
             : nullptr;
}

} // namespace autoshard::tfm

#define GET_OP_CLASSES
#include "autoshard/Dialect/Tfm/IR/TfmOps.h.inc"

#endif // AUTOSHARD_DIALECT_TFM_IR_TFMOPS_H
