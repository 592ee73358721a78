//===- TrainPipeline.cpp - The autoshard-train pass pipeline --------------===//

#include "autoshard/Pipelines/TrainPipeline.h"

#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Dist/Transforms/Plan.h"
#include "autoshard/Dialect/Rt/Transforms/Passes.h"
#include "autoshard/Dialect/Tfm/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

/// The plan's microbatch count and recompute mode when autodiff runs and
/// the plan parses; else the defaults (1, none).
static std::pair<int64_t, std::string>
getPlanStepDefaults(const autoshard::TrainPipelineOptions &options) {
  if (!options.autodiff || options.plan.empty())
    return {1, "none"};
  llvm::Expected<autoshard::dist::Plan> plan =
      autoshard::dist::Plan::parse(options.plan);
  if (!plan) {
    llvm::consumeError(plan.takeError());
    return {1, "none"};
  }
  return {plan->mb, plan->recompute};
}

void autoshard::buildTrainPipeline(mlir::OpPassManager &pm,
                                   const TrainPipelineOptions &options) {
  auto [planMicrobatches, planRecompute] = getPlanStepDefaults(options);
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
    autodiff.microbatches = options.microbatches != 0
                                ? int64_t(options.microbatches)
                                : planMicrobatches;
    pm.addPass(tfm::createTfmAutodiff(autodiff));
  }
  std::string recomputeMode = options.recompute.empty()
                                  ? planRecompute
                                  : std::string(options.recompute);
  if (recomputeMode != "none") {
    tfm::TfmRecomputeOptions recompute;
    recompute.mode = recomputeMode;
    pm.addPass(tfm::createTfmRecompute(recompute));
  }
  if (!options.plan.empty()) {
    dist::DistPartitionPipelineOptions partition;
    partition.plan = options.plan;
    partition.scheduleFile = options.scheduleFile;
    partition.overlap = options.overlap;
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
