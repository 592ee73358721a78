//===- StagePartition.cpp - Cost-balanced layer-to-stage split ------------===//

#include "autoshard/Pipeline/StagePartition.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

using namespace autoshard::pipeline;

int64_t StagePartition::stageOf(int64_t layer) const {
  auto it = std::upper_bound(firstLayer.begin(), firstLayer.end(), layer);
  return static_cast<int64_t>(it - firstLayer.begin()) - 1;
}

namespace {

/// The objective of a partial split: the largest stage cost, then the
/// squared deviation of the layer counts from L/S (ties within 1e-9).
struct Score {
  double maxCost = std::numeric_limits<double>::infinity();
  double deviation = std::numeric_limits<double>::infinity();

  bool betterThan(const Score &other) const {
    double tolerance =
        1e-9 * std::max(std::abs(maxCost), std::abs(other.maxCost));
    if (maxCost < other.maxCost - tolerance)
      return true;
    if (maxCost > other.maxCost + tolerance)
      return false;
    return deviation < other.deviation - 1e-12;
  }
};

} // namespace

OrError<StagePartition>
autoshard::pipeline::partitionLayers(const std::vector<double> &layerCost,
                                     double firstExtra, double lastExtra,
                                     int64_t numStages) {
  auto numLayers = static_cast<int64_t>(layerCost.size());
  if (numStages < 1)
    return OrError<StagePartition>::failure(
        "stage partition: the number of stages must be >= 1, found " +
        std::to_string(numStages));
  if (numLayers < numStages)
    return OrError<StagePartition>::failure(
        "stage partition: " + std::to_string(numStages) +
        " stages need at least as many layers, found " +
        std::to_string(numLayers));
  for (int64_t l = 0; l < numLayers; ++l)
    if (!(layerCost[l] >= 0) || !std::isfinite(layerCost[l]))
      return OrError<StagePartition>::failure(
          "stage partition: layer " + std::to_string(l) + " has cost " +
          std::to_string(layerCost[l]) + " (expected finite and >= 0)");
  for (double extra : {firstExtra, lastExtra})
    if (!(extra >= 0) || !std::isfinite(extra))
      return OrError<StagePartition>::failure(
          "stage partition: first/last stage extra cost must be finite and "
          ">= 0, found " +
          std::to_string(extra));

  std::vector<double> prefix(numLayers + 1, 0);
  for (int64_t l = 0; l < numLayers; ++l)
    prefix[l + 1] = prefix[l] + layerCost[l];
  double mean = static_cast<double>(numLayers) / numStages;
  // best[s][l]: the best split of layers 0..l-1 into stages 0..s-1;
  // from[s][l]: the first layer of stage s-1 in it.
  std::vector<std::vector<Score>> best(numStages + 1,
                                       std::vector<Score>(numLayers + 1));
  std::vector<std::vector<int64_t>> from(
      numStages + 1, std::vector<int64_t>(numLayers + 1, -1));
  best[0][0] = Score{0, 0};
  for (int64_t s = 1; s <= numStages; ++s) {
    // Stage s-1 covers layers k..l-1; stages after it need >= 1 layer each.
    for (int64_t l = s; l <= numLayers - (numStages - s); ++l) {
      // Descending k: on a tie the earlier stages keep more layers.
      for (int64_t k = l - 1; k >= s - 1; --k) {
        const Score &before = best[s - 1][k];
        if (!std::isfinite(before.maxCost))
          continue;
        double cost = prefix[l] - prefix[k];
        if (s == 1)
          cost += firstExtra;
        if (s == numStages)
          cost += lastExtra;
        double count = static_cast<double>(l - k) - mean;
        Score candidate{std::max(before.maxCost, cost),
                        before.deviation + count * count};
        if (candidate.betterThan(best[s][l])) {
          best[s][l] = candidate;
          from[s][l] = k;
        }
      }
    }
  }
  StagePartition partition;
  partition.firstLayer.assign(numStages, 0);
  partition.stageCost.assign(numStages, 0);
  for (int64_t s = numStages, l = numLayers; s >= 1; --s) {
    int64_t k = from[s][l];
    partition.firstLayer[s - 1] = k;
    partition.stageCost[s - 1] = prefix[l] - prefix[k] +
                                 (s == 1 ? firstExtra : 0) +
                                 (s == numStages ? lastExtra : 0);
    l = k;
  }
  return partition;
}
