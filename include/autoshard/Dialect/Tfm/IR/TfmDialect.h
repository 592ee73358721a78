//===- TfmDialect.h - Transformer graph dialect -----------------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_TFM_IR_TFMDIALECT_H
#define AUTOSHARD_DIALECT_TFM_IR_TFMDIALECT_H

#include "mlir/IR/Dialect.h"

#include "autoshard/Dialect/Tfm/IR/TfmOpsDialect.h.inc"

#endif // AUTOSHARD_DIALECT_TFM_IR_TFMDIALECT_H
