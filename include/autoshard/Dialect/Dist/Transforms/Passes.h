//===- Passes.h - dist passes -----------------------------------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_DIST_TRANSFORMS_PASSES_H
#define AUTOSHARD_DIALECT_DIST_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <string>

namespace autoshard::dist {

#define GEN_PASS_DECL
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"

/// Options of buildDistPartitionPipeline.
struct DistPartitionPipelineOptions {
  std::string plan; ///< dist-apply-plan's `plan`.
  std::string
      scheduleFile; ///< dist-schedule's `file`; empty: no dist-schedule.
  /// Stop after dist-partition (dist-auto-plan's one-block profiles);
  /// otherwise go on to the per-rank program.
  bool stopAfterPartition = false;
  /// dist-hoist-argument-gathers and dist-overlap-collectives (collectives
  /// started early); false: blocking collectives only.
  bool overlap = true;
};

/// A train step sharded for a plan: dist-apply-plan, dist-schedule (with a
/// schedule file), dist-propagate, dist-partition, then dist-pipeline-split,
/// [dist-hoist-argument-gathers], dist-bucket-collectives,
/// [dist-overlap-collectives] and dist-verify-comm
/// (DESIGN.md section 4 gives the order and why).
void buildDistPartitionPipeline(mlir::OpPassManager &pm,
                                const DistPartitionPipelineOptions &options);

/// The passes of buildDistPartitionPipeline after dist-partition:
/// dist-pipeline-split, [dist-hoist-argument-gathers],
/// dist-bucket-collectives, [dist-overlap-collectives] (the bracketed ones
/// when `overlap`) and dist-verify-comm. dist-auto-plan runs them on a
/// one-block profile after reading its per-rank functions, so that the
/// profile's static memory plan is the compiled program's.
void buildDistPerRankPipeline(mlir::OpPassManager &pm, bool overlap);

} // namespace autoshard::dist

#endif // AUTOSHARD_DIALECT_DIST_TRANSFORMS_PASSES_H
