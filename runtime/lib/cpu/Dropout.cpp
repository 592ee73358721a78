//===- Dropout.cpp - CPU dropout kernels ----------------------------------===//

#include "autoshard/runtime/cpu/Dropout.h"

#include "Check.h"
#include "Instantiate.h"

#include <cmath>

namespace autoshard::runtime::cpu {
namespace {

void checkRange(const char *what, int64_t value, int64_t bound) {
  if (value < 0 || value >= bound)
    detail::fail("dropout", std::string(what) + " " + std::to_string(value) +
                                " is out of range [0, " +
                                std::to_string(bound) + ")");
}

/// out = in * keep * 1 / (1 - rate); dropout's forward and backward are the
/// same linear map.
template <typename T>
void applyMask(const T *in, T *out, int64_t numel,
               const DropoutParams &params) {
  detail::checkAtLeast("dropout", "numel", numel, 0);
  const DropoutStream stream = makeDropoutStream(params);
  const T keepScale = static_cast<T>(1.0 / (1.0 - params.rate));
  const uint64_t first = static_cast<uint64_t>(params.indexOffset);
  int64_t i = 0;
  while (i < numel) {
    const uint64_t index = first + static_cast<uint64_t>(i);
    const PhiloxBlock bits = stream.block(index >> 2);
    // The elements of this block of four that lie in [i, numel).
    for (uint64_t w = index & 3; w < 4 && i < numel; ++w, ++i)
      out[i] =
          (bits.word[w] >> 8) >= stream.threshold ? in[i] * keepScale : T(0);
  }
}

} // namespace

DropoutStream makeDropoutStream(const DropoutParams &params) {
  if (!(params.rate >= 0.0 && params.rate < 1.0))
    detail::fail("dropout",
                 "rate must be in [0, 1), got " + std::to_string(params.rate));
  checkRange("step", params.step, int64_t(1) << 32);
  checkRange("layer", params.layer, int64_t(1) << 16);
  checkRange("site", params.site, int64_t(1) << 16);
  detail::checkAtLeast("dropout", "index offset", params.indexOffset, 0);
  DropoutStream stream;
  stream.key = philoxKey(params.seed);
  stream.step = static_cast<uint32_t>(params.step);
  stream.layerSite = static_cast<uint32_t>(params.layer << 16 | params.site);
  stream.threshold = static_cast<uint32_t>(std::ceil(params.rate * 16777216.0));
  return stream;
}

template <typename T>
void dropout(const T *x, T *y, int64_t numel, const DropoutParams &params) {
  applyMask(x, y, numel, params);
}

template <typename T>
void dropoutGrad(const T *dy, T *dx, int64_t numel,
                 const DropoutParams &params) {
  applyMask(dy, dx, numel, params);
}

#define INSTANTIATE(T)                                                         \
  template void dropout<T>(const T *, T *, int64_t, const DropoutParams &);    \
  template void dropoutGrad<T>(const T *, T *, int64_t, const DropoutParams &);
AUTOSHARD_FOR_EACH_FLOAT(INSTANTIATE)

} // namespace autoshard::runtime::cpu
