//===- TrainPipeline.h - The autoshard-train pass pipeline ------*- C++ -*-===//
//
// The one compile of a training program, written once: model IR (tfm) ->
// train step -> sharded per-rank program -> planned rt program -> artifact.
// `shard-opt model.mlir --autoshard-train="plan=dp=2,tp=2 output=model.json"`
// runs it; scripts and the planner build the same passes through the
// builders each stage exports (dist::buildDistPartitionPipeline,
// rt::buildRtLoweringPipeline), as Shardy's addPropagationPipeline and
// IREE's buildStream*PassPipeline do.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_PIPELINES_TRAINPIPELINE_H
#define AUTOSHARD_PIPELINES_TRAINPIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace autoshard {

/// Options of `autoshard-train` (their defaults are the passes' own).
struct TrainPipelineOptions
    : public mlir::PassPipelineOptions<TrainPipelineOptions> {
  Option<bool> autodiff{*this, "autodiff",
                        llvm::cl::desc("Differentiate the model first "
                                       "(false: the input is a train step)"),
                        llvm::cl::init(true)};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("f32, or bf16 / f16 compute with f32 master weights "
                     "(tfm-mixed-precision, before tfm-autodiff)"),
      llvm::cl::init("f32")};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("AdamW beta1"),
                       llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("AdamW beta2"),
                       llvm::cl::init(0.95)};
  Option<double> epsilon{*this, "epsilon", llvm::cl::desc("AdamW epsilon"),
                         llvm::cl::init(1e-8)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("AdamW weight decay"),
                             llvm::cl::init(0.1)};
  Option<double> maxGradNorm{
      *this, "max-grad-norm",
      llvm::cl::desc("Global gradient-norm clip (0: none)"),
      llvm::cl::init(1.0)};
  Option<int64_t> microbatches{
      *this, "microbatches",
      llvm::cl::desc("Microbatches accumulated per step (tfm-autodiff); 0: "
                     "the plan's mb= key, else 1"),
      llvm::cl::init(0)};
  Option<std::string> recompute{
      *this, "recompute",
      llvm::cl::desc("Activation recomputation: none, selective or full "
                     "(tfm-recompute, after tfm-autodiff); empty: the plan's "
                     "recompute= key with autodiff, else none"),
      llvm::cl::init("")};
  Option<std::string> plan{
      *this, "plan",
      llvm::cl::desc("Parallel plan (dist-apply-plan's syntax); empty: one "
                     "device, no dist passes"),
      llvm::cl::init("")};
  Option<std::string> scheduleFile{
      *this, "schedule-file",
      llvm::cl::desc("Per-rank pipeline order (dist-schedule)"),
      llvm::cl::init("")};
  Option<bool> overlap{
      *this, "overlap",
      llvm::cl::desc("Start collectives early to hide them behind compute "
                     "(dist-hoist-argument-gathers, "
                     "dist-overlap-collectives); false: every collective "
                     "blocks where the partitioner put it"),
      llvm::cl::init(true)};
  Option<bool> fuseEpilogues{
      *this, "fuse-epilogues",
      llvm::cl::desc("Fold adds and gelus into their GEMMs "
                     "(rt-fuse-epilogues)"),
      llvm::cl::init(true)};
  Option<std::string> output{
      *this, "output",
      llvm::cl::desc("Artifact file (rt-export); empty: no export"),
      llvm::cl::init("")};
};

/// Adds the passes of `autoshard-train` to `pm` (a module pass manager):
/// [tfm-mixed-precision], [tfm-autodiff, [tfm-recompute]], [the dist
/// partition pipeline for `plan`], the rt lowering pipeline, [rt-export].
/// With autodiff, `microbatches` = 0 and `recompute` = "" take the plan's
/// `mb=` and `recompute=` keys, so a user states them once, in the plan.
/// A plan that does not parse adds the defaults (1, none): dist-apply-plan
/// then reports the plan's error; an option that contradicts the plan is
/// dist-apply-plan's mismatch error ("plan recompute=X, but the module's
/// tfm.recompute is Y").
void buildTrainPipeline(mlir::OpPassManager &pm,
                        const TrainPipelineOptions &options);

/// Registers `autoshard-train` with the pass registry (shard-opt).
void registerTrainPipeline();

} // namespace autoshard

#endif // AUTOSHARD_PIPELINES_TRAINPIPELINE_H
