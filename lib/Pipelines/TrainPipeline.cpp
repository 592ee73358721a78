//===- TrainPipeline.cpp - The autoshard-train pass pipeline --------------===//

#include "autoshard/Pipelines/TrainPipeline.h"

#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Rt/Transforms/Passes.h"
#include "autoshard/Dialect/Tfm/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

void autoshard::buildTrainPipeline(mlir::OpPassManager &pm,
                                   const TrainPipelineOptions &options) {
  if (options.precision != "f32") {
    tfm::TfmMixedPrecisionOptions precision;
    precision.computeType = options.precision;
    pm.addPass(tfm::createTfmMixedPrecision(precision));
  }
  if (options.autodiff) {
    tfm::TfmAutodiffOptions autodiff;
    autodiff.beta1 = options.beta1;
    autodiff.beta2 = options.beta2;
    autodiff.epsilon = options.epsilon;
    autodiff.weightDecay = options.weightDecay;
    autodiff.maxGradNorm = options.maxGradNorm;
    autodiff.microbatches = options.microbatches;
    pm.addPass(tfm::createTfmAutodiff(autodiff));
  }
  if (options.recompute != "none") {
    tfm::TfmRecomputeOptions recompute;
    recompute.mode = options.recompute;
    pm.addPass(tfm::createTfmRecompute(recompute));
  }
  if (!options.plan.empty()) {
    dist::DistPartitionPipelineOptions partition;
    partition.plan = options.plan;
    partition.scheduleFile = options.scheduleFile;
    dist::buildDistPartitionPipeline(pm, partition);
  }
  rt::buildRtLoweringPipeline(pm, options.fuseEpilogues);
  if (!options.output.empty()) {
    rt::RtExportOptions exportOptions;
    exportOptions.output = options.output;
    pm.addPass(rt::createRtExport(exportOptions));
  }
}

void autoshard::registerTrainPipeline() {
  mlir::PassPipelineRegistration<TrainPipelineOptions>(
      "autoshard-train",
      "The whole compile: [tfm-mixed-precision], tfm-autodiff, "
      "[tfm-recompute], [the dist passes of a plan], rt-lower, "
      "[rt-fuse-epilogues], rt-plan-memory, [rt-export]",
      buildTrainPipeline);
}
