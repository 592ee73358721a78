//===- Passes.h - dist passes -----------------------------------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_DIST_TRANSFORMS_PASSES_H
#define AUTOSHARD_DIALECT_DIST_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace autoshard::dist {

#define GEN_PASS_DECL
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"

} // namespace autoshard::dist

#endif // AUTOSHARD_DIALECT_DIST_TRANSFORMS_PASSES_H
