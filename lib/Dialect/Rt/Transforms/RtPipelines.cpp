//===- RtPipelines.cpp - The rt lowering pipeline -------------------------===//

#include "autoshard/Dialect/Rt/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

void autoshard::rt::buildRtLoweringPipeline(mlir::OpPassManager &pm,
                                            bool fuseEpilogues) {
  pm.addPass(createRtLower());
  if (fuseEpilogues)
    pm.addPass(createRtFuseEpilogues());
  pm.addPass(createRtPlanMemory());
}
