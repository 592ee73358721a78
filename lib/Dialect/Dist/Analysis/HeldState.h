//===- HeldState.h - The state a rank's program holds -----------*- C++ -*-===//
//
// Shared by the reader and the pipeline section of dist-explain.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_LIB_DIALECT_DIST_ANALYSIS_HELDSTATE_H
#define AUTOSHARD_LIB_DIALECT_DIST_ANALYSIS_HELDSTATE_H

#include "autoshard/Dialect/Rt/IR/RtOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSet.h"

namespace autoshard::dist::explain {

/// The persistent state a rank's program reads or writes (with pp, only its
/// stage's) and its bytes.
struct HeldState {
  llvm::StringSet<> names;
  int64_t bytes = 0;
};

inline HeldState getHeldState(mlir::ModuleOp module, rt::FuncOp fn) {
  HeldState held;
  fn.walk([&](rt::StateOp op) { held.names.insert(op.getName()); });
  for (auto &name : held.names)
    if (auto def = module.lookupSymbol<rt::StateDefOp>(name.getKey()))
      held.bytes += def.getBufferType().getSizeInBytes();
  return held;
}

} // namespace autoshard::dist::explain

#endif // AUTOSHARD_LIB_DIALECT_DIST_ANALYSIS_HELDSTATE_H
