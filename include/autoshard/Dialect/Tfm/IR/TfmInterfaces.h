//===- TfmInterfaces.h - Op knowledge for later passes ----------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_TFM_IR_TFMINTERFACES_H
#define AUTOSHARD_DIALECT_TFM_IR_TFMINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

namespace autoshard::tfm {

/// Cost of one op execution: `flops` in FLOP (multiply-add = 2), `bytes` in
/// bytes read plus written.
struct OpCost {
  double flops = 0;
  double bytes = 0;
};

} // namespace autoshard::tfm

#include "autoshard/Dialect/Tfm/IR/TfmInterfaces.h.inc"

#endif // AUTOSHARD_DIALECT_TFM_IR_TFMINTERFACES_H
