//===- DistPipelines.cpp - The dist partition pipeline --------------------===//

#include "autoshard/Dialect/Dist/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

void autoshard::dist::buildDistPartitionPipeline(
    mlir::OpPassManager &pm, const DistPartitionPipelineOptions &options) {
  DistApplyPlanOptions plan;
  plan.plan = options.plan;
  pm.addPass(createDistApplyPlan(plan));
  if (!options.scheduleFile.empty()) {
    DistScheduleOptions schedule;
    schedule.file = options.scheduleFile;
    pm.addPass(createDistSchedule(schedule));
  }
  pm.addPass(createDistPropagate());
  pm.addPass(createDistZigzagSequence());
  pm.addPass(createDistPartition());
  if (!options.stopAfterPartition)
    buildDistPerRankPipeline(pm, options.overlap);
}

void autoshard::dist::buildDistPerRankPipeline(mlir::OpPassManager &pm,
                                               bool overlap) {
  pm.addPass(createDistPipelineSplit());
  if (overlap)
    pm.addPass(createDistHoistArgumentGathers());
  pm.addPass(createDistBucketCollectives());
  if (overlap)
    pm.addPass(createDistOverlapCollectives());
  pm.addPass(createDistVerifyComm());
}
