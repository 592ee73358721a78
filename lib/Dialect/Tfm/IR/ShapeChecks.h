//===- ShapeChecks.h - Shape rules shared by the tfm op definitions -*- C++
//-*-===//
//
// Diagnostics helpers of the tfm shape functions (TfmOps.cpp), shared with
// the local ops that partitioning adds (TfmVocabParallelOps.cpp) so that both
// word their errors the same way. Private to the tfm IR library.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_LIB_DIALECT_TFM_IR_SHAPECHECKS_H
#define AUTOSHARD_LIB_DIALECT_TFM_IR_SHAPECHECKS_H

#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

#include <limits>
#include <string>

namespace autoshard::tfm::checks {

/// Operand types are checked by ODS before `verify()` runs, and builders are
/// handed tensors, so every tfm operand is a ranked tensor.
inline mlir::RankedTensorType tensorOf(mlir::Value value) {
  return llvm::cast<mlir::RankedTensorType>(value.getType());
}

/// A shape as `[2, 3, 4]`, for diagnostics.
std::string shapeStr(llvm::ArrayRef<int64_t> shape);

/// Checks `1 <= value <= max`; `maxSource` says where `max` comes from. With
/// no maximum only `>= 1` is checked.
mlir::LogicalResult
checkCount(EmitErrorFn emitError, llvm::StringRef name, int64_t value,
           int64_t max = std::numeric_limits<int64_t>::max(),
           llvm::StringRef maxSource = "");

/// `type` must be `[leading..., X]`: e.g. logits against the labels' shape.
mlir::LogicalResult checkLeadingDims(EmitErrorFn emitError,
                                     llvm::StringRef name,
                                     mlir::RankedTensorType type,
                                     llvm::StringRef leadingName,
                                     llvm::ArrayRef<int64_t> leading);

/// Checks a whole operand type at once; `source` says where `expected` comes
/// from, e.g. "type of x".
mlir::LogicalResult checkType(EmitErrorFn emitError, llvm::StringRef name,
                              mlir::Type actual, mlir::Type expected,
                              llvm::StringRef source);

} // namespace autoshard::tfm::checks

#endif // AUTOSHARD_LIB_DIALECT_TFM_IR_SHAPECHECKS_H
