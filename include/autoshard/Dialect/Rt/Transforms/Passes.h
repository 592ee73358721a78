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

/// The rt form of a train step, planned: rt-lower, rt-fuse-epilogues when
/// `fuseEpilogues`, then rt-plan-memory. What a compile runs before
/// rt-export; dist-auto-plan and dist-explain lower their copies with it.
void buildRtLoweringPipeline(mlir::OpPassManager &pm, bool fuseEpilogues);

} // namespace autoshard::rt

#endif // AUTOSHARD_DIALECT_RT_TRANSFORMS_PASSES_H
