//===- LRSchedule.cpp - Learning-rate schedule ----------------------------===//

#include "autoshard/runtime/train/LRSchedule.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace autoshard::runtime {

double LRSchedule::at(int64_t step) const {
  if (step < warmupSteps)
    return maxLR * double(step + 1) / double(warmupSteps + 1);
  if (step > decaySteps)
    return minLR;
  double span = double(decaySteps - warmupSteps);
  double ratio = span > 0 ? double(step - warmupSteps) / span : 1.0;
  double coeff = 0.5 * (1.0 + std::cos(M_PI * ratio));
  return minLR + coeff * (maxLR - minLR);
}

void LRSchedule::validate() const {
  auto fail = [](const std::string &msg) { throw std::invalid_argument(msg); };
  if (!(maxLR > 0))
    fail("learning rate must be > 0, found " + std::to_string(maxLR));
  if (minLR < 0 || minLR > maxLR)
    fail("min_lr must be in [0, lr=" + std::to_string(maxLR) + "], found " +
         std::to_string(minLR));
  if (warmupSteps < 0)
    fail("warmup_iters must be >= 0, found " + std::to_string(warmupSteps));
  if (decaySteps < warmupSteps)
    fail("lr_decay_iters (" + std::to_string(decaySteps) +
         ") must be >= warmup_iters (" + std::to_string(warmupSteps) + ")");
}

} // namespace autoshard::runtime
