//===- Dropout.h - CPU dropout kernels --------------------------*- C++ -*-===//
//
// Inverted dropout (Srivastava et al. 2014) with a plan-independent mask drawn
// from Philox-4x32-10 (see autoshard/runtime/Philox.h for the stream layout).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_CPU_DROPOUT_H
#define AUTOSHARD_RUNTIME_CPU_DROPOUT_H

#include "autoshard/runtime/Philox.h"

#include <cstdint>

namespace autoshard::runtime::cpu {

/// Parameters of tfm.dropout / tfm.dropout_grad. rate in [0, 1); step in
/// [0, 2^32); layer and site in [0, 2^16). The tensor's element i has global
/// element index indexOffset + i (a shard of a contiguous range passes its
/// offset).
struct DropoutParams {
  double rate = 0.0;
  uint64_t seed = 0;
  int64_t step = 0;
  int64_t layer = 0;
  int64_t site = 0;
  int64_t indexOffset = 0;
};

/// The Philox stream of `params`. Throws std::invalid_argument when the rate,
/// step, layer, site or offset is out of range.
DropoutStream makeDropoutStream(const DropoutParams &params);

/// tfm.dropout: y = x * keep / (1 - rate) over `numel` elements, keep drawn
/// per global element index. y may alias x.
template <typename T>
void dropout(const T *x, T *y, int64_t numel, const DropoutParams &params);

/// tfm.dropout_grad: dx = dy * keep / (1 - rate) with the forward's mask.
/// dx may alias dy.
template <typename T>
void dropoutGrad(const T *dy, T *dx, int64_t numel,
                 const DropoutParams &params);

} // namespace autoshard::runtime::cpu

#endif // AUTOSHARD_RUNTIME_CPU_DROPOUT_H
