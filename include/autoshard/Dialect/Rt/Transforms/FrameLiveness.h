//===- FrameLiveness.h - What a planned rt frame holds when -----*- C++ -*-===//
//
// The liveness that rt-plan-memory plans a function's frame with, for the
// tools that read a planned program's memory over time (dist-auto-plan
// reads the one-block program's live bytes per phase of the step).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_RT_TRANSFORMS_FRAMELIVENESS_H
#define AUTOSHARD_DIALECT_RT_TRANSFORMS_FRAMELIVENESS_H

#include "autoshard/Dialect/Rt/IR/RtOps.h"

#include "llvm/ADT/SmallVector.h"

#include <array>

namespace autoshard::rt {

/// Bytes per memory category, indexed by Category (activation, grad,
/// workspace, io).
using CategoryBytes = std::array<int64_t, 4>;

/// Something that occupies a function's frame for a range of its body: a
/// local (`rt.alloc`), an I/O slot, or a call (its callee's peak breakdown,
/// at the call only).
struct FrameUse {
  mlir::Operation *op;
  /// Inclusive indices of the first and last body ops it is live at.
  int64_t start, end;
  CategoryBytes bytes;
};

/// The frame uses of `func` in program order, with rt-plan-memory's
/// liveness: a local is live from the first to the last instruction that
/// names it (or a view of it), a slot for the whole body, a call's callee
/// frame at the call. Callees must be planned. The live bytes at body op i
/// are the sum over the uses with start <= i <= end; `peak_breakdown` is
/// that sum at the op where its total is largest.
mlir::FailureOr<llvm::SmallVector<FrameUse>> getFrameUses(FuncOp func);

} // namespace autoshard::rt

#endif // AUTOSHARD_DIALECT_RT_TRANSFORMS_FRAMELIVENESS_H
