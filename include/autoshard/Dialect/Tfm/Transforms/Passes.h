//===- Passes.h - tfm transformations ---------------------------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_TFM_TRANSFORMS_PASSES_H
#define AUTOSHARD_DIALECT_TFM_TRANSFORMS_PASSES_H

#include "autoshard/Dialect/Tfm/IR/TfmDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace autoshard::tfm {

#define GEN_PASS_DECL
#include "autoshard/Dialect/Tfm/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "autoshard/Dialect/Tfm/Transforms/Passes.h.inc"

} // namespace autoshard::tfm

#endif // AUTOSHARD_DIALECT_TFM_TRANSFORMS_PASSES_H
