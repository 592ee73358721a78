//===- RtOps.h - Runtime program ops ----------------------------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_RT_IR_RTOPS_H
#define AUTOSHARD_DIALECT_RT_IR_RTOPS_H

#include "autoshard/Dialect/Rt/IR/RtDialect.h"
#include "autoshard/Dialect/Rt/IR/RtTypes.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "autoshard/Dialect/Rt/IR/RtEnums.h.inc"

#define GET_OP_CLASSES
#include "autoshard/Dialect/Rt/IR/RtOps.h.inc"

namespace autoshard::rt {

/// The op that gives `buffer` its memory: follows `rt.view`s to the root
/// (an alloc, slot, state or const op), or null for a function argument.
mlir::Operation *getBufferRoot(mlir::Value buffer);

/// Whether `op` defines a buffer in its function's frame: a local
/// (`rt.alloc`) or an I/O slot (`rt.input`, `rt.output`).
inline bool isFrameBuffer(mlir::Operation *op) {
  return mlir::isa<AllocOp, InputOp, OutputOp>(op);
}

/// The planned offset of a frame buffer, or the frame offset of a call;
/// nothing before planning.
std::optional<int64_t> getPlannedOffset(mlir::Operation *op);

/// Rounds `bytes` up to the dialect's alignment.
inline int64_t alignBytes(int64_t bytes) {
  int64_t a = RtDialect::kAlignment;
  return (bytes + a - 1) / a * a;
}

} // namespace autoshard::rt

#endif // AUTOSHARD_DIALECT_RT_IR_RTOPS_H
