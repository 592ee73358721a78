//===- Rope.cpp - CPU rotary position embedding kernels -------------------===//

#include "autoshard/runtime/cpu/Rope.h"

#include "Check.h"
#include "Instantiate.h"

#include <cmath>
#include <vector>

namespace autoshard::runtime::cpu {
namespace {

/// Rotates every (i, i + D/2) pair of x by sign * angle(position, i).
template <typename T>
void rotate(const char *op, const T *x, T *y, const RopeShape &s, double sign) {
  detail::checkAtLeast(op, "batch", s.batch, 0);
  detail::checkAtLeast(op, "seq", s.seq, 0);
  detail::checkAtLeast(op, "heads", s.heads, 0);
  detail::checkAtLeast(op, "head dim", s.headDim, 2);
  detail::checkAtLeast(op, "position offset", s.positionOffset, 0);
  if (s.headDim % 2 != 0)
    detail::fail(op, "head dim must be even, got " + std::to_string(s.headDim));
  if (!(s.theta > 0.0))
    detail::fail(op, "theta must be > 0, got " + std::to_string(s.theta));
  const int64_t half = s.headDim / 2;

  // cos/sin table [seq, half], computed once per call in double.
  std::vector<T> cosTable(s.seq * half), sinTable(s.seq * half);
  for (int64_t p = 0; p < s.seq; ++p) {
    const double position = static_cast<double>(
        zigzagPosition(s.positionOffset + p, s.seqLen, s.zigzagChunks));
    for (int64_t i = 0; i < half; ++i) {
      const double invFreq =
          std::pow(s.theta, -2.0 * static_cast<double>(i) / s.headDim);
      const double angle = position * invFreq;
      cosTable[p * half + i] = static_cast<T>(std::cos(angle));
      sinTable[p * half + i] = static_cast<T>(sign * std::sin(angle));
    }
  }

  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t p = 0; p < s.seq; ++p) {
      const T *c = cosTable.data() + p * half;
      const T *sn = sinTable.data() + p * half;
      for (int64_t n = 0; n < s.heads; ++n) {
        const int64_t base = ((b * s.seq + p) * s.heads + n) * s.headDim;
        const T *xr = x + base;
        T *yr = y + base;
        for (int64_t i = 0; i < half; ++i) {
          const T x1 = xr[i], x2 = xr[i + half];
          yr[i] = x1 * c[i] - x2 * sn[i];
          yr[i + half] = x2 * c[i] + x1 * sn[i];
        }
      }
    }
}

} // namespace

template <typename T> void rope(const T *x, T *y, const RopeShape &shape) {
  rotate("rope", x, y, shape, 1.0);
}

template <typename T>
void ropeGrad(const T *dy, T *dx, const RopeShape &shape) {
  rotate("rope_grad", dy, dx, shape, -1.0);
}

#define INSTANTIATE(T)                                                         \
  template void rope<T>(const T *, T *, const RopeShape &);                    \
  template void ropeGrad<T>(const T *, T *, const RopeShape &);
AUTOSHARD_FOR_EACH_FLOAT(INSTANTIATE)

} // namespace autoshard::runtime::cpu
