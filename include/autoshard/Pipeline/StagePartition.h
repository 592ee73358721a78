//===- StagePartition.h - Cost-balanced layer-to-stage split ----*- C++ -*-===//
//
// Splits a stack of layers into contiguous pipeline stages so that the most
// expensive stage is as cheap as possible (the pipeline's step time is set
// by its slowest stage). MLIR-free; used by dist-pipeline-split and the
// planner.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_PIPELINE_STAGEPARTITION_H
#define AUTOSHARD_PIPELINE_STAGEPARTITION_H

#include "autoshard/Pipeline/Schedule.h"

#include <cstdint>
#include <vector>

namespace autoshard::pipeline {

/// A split of L layers into S contiguous stages.
struct StagePartition {
  /// firstLayer[s] is the first layer of stage s; stage s runs layers
  /// firstLayer[s] .. firstLayer[s+1]-1 (the last one up to L-1). S entries,
  /// firstLayer[0] = 0, strictly increasing (every stage gets >= 1 layer).
  std::vector<int64_t> firstLayer;
  /// The cost of each stage (its layers, plus `firstExtra` on stage 0 and
  /// `lastExtra` on stage S-1), in the unit of the input costs.
  std::vector<double> stageCost;

  /// The stage that runs `layer`.
  int64_t stageOf(int64_t layer) const;
};

/// Splits layers of cost `layerCost` (any unit: FLOPs, seconds; one entry
/// per layer, >= 0) into `numStages` contiguous stages of >= 1 layer each,
/// minimizing the largest stage cost, where the first stage also pays
/// `firstExtra` (e.g. the embedding) and the last `lastExtra` (e.g. the
/// final norm, LM head and loss: Megatron-LM's
/// --account-for-loss-in-pipeline-split, Narayanan et al. 2021 §3). Among
/// splits with the same largest cost (within a relative 1e-9) the one
/// closest to equal layer counts is chosen, so equal layers without extras
/// split evenly (the first stages take the remainder, like
/// layer * S / L rounding). Exact dynamic program, O(S·L²).
/// Errors: numStages < 1, fewer layers than stages, a negative or
/// non-finite cost; the message names the value.
OrError<StagePartition> partitionLayers(const std::vector<double> &layerCost,
                                        double firstExtra, double lastExtra,
                                        int64_t numStages);

} // namespace autoshard::pipeline

#endif // AUTOSHARD_PIPELINE_STAGEPARTITION_H
