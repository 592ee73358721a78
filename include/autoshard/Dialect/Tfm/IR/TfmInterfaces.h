//===- TfmInterfaces.h - Op knowledge for later passes ----------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_TFM_IR_TFMINTERFACES_H
#define AUTOSHARD_DIALECT_TFM_IR_TFMINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace autoshard::tfm {

/// How sharding a factor of an op's iteration space behaves.
enum class FactorKind {
  /// Operands and results split alike; no communication (batch, heads).
  PassThrough,
  /// Summed over inside the op: sharding it leaves results partial (sum).
  Reduction,
  /// Must be whole on every rank (e.g. the normalised dim of layer_norm).
  NeedsReplication,
};

/// Factor-based sharding rule of one op (GSPMD/Shardy style).
/// `operandDims[i][d]` is the factor index of dim `d` of operand `i`, or -1
/// when that dim is not tied to any factor; likewise `resultDims`.
struct ShardingRule {
  llvm::SmallVector<int64_t> factorSizes;
  llvm::SmallVector<FactorKind> factorKinds;
  llvm::SmallVector<llvm::SmallVector<int64_t>> operandDims;
  llvm::SmallVector<llvm::SmallVector<int64_t>> resultDims;
};

/// Cost of one op execution: `flops` in FLOP (multiply-add = 2), `bytes` in
/// bytes read plus written.
struct OpCost {
  double flops = 0;
  double bytes = 0;
};

} // namespace autoshard::tfm

#include "autoshard/Dialect/Tfm/IR/TfmInterfaces.h.inc"

#endif // AUTOSHARD_DIALECT_TFM_IR_TFMINTERFACES_H
