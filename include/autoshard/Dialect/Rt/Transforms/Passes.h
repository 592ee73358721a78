//===- Passes.h - rt passes -------------------------------------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_RT_TRANSFORMS_PASSES_H
#define AUTOSHARD_DIALECT_RT_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace autoshard::rt {

#define GEN_PASS_DECL
#include "autoshard/Dialect/Rt/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "autoshard/Dialect/Rt/Transforms/Passes.h.inc"

} // namespace autoshard::rt

#endif // AUTOSHARD_DIALECT_RT_TRANSFORMS_PASSES_H
