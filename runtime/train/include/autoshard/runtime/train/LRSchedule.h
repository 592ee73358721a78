//===- LRSchedule.h - Learning-rate schedule --------------------*- C++ -*-===//

#ifndef AUTOSHARD_RUNTIME_TRAIN_LRSCHEDULE_H
#define AUTOSHARD_RUNTIME_TRAIN_LRSCHEDULE_H

#include <cstdint>

namespace autoshard::runtime {

/// Linear warmup then cosine decay to `minLR`, constant after `decaySteps`
/// (nanoGPT `train.py:get_lr`). Rates are in the optimizer's units (per
/// step); steps are 0-based iteration numbers.
struct LRSchedule {
  double maxLR = 1e-3;
  double minLR = 1e-4;
  int64_t warmupSteps = 100;
  int64_t decaySteps = 2000;

  /// Learning rate at iteration `step`.
  double at(int64_t step) const;
  /// Throws std::invalid_argument naming the field if the schedule is
  /// inconsistent (negative rates, minLR > maxLR, warmup > decay).
  void validate() const;
};

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_TRAIN_LRSCHEDULE_H
