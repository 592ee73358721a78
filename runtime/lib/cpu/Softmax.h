//===- Softmax.h - Row softmax helpers shared by the CPU kernels -*- C++
//-*-===//

#ifndef AUTOSHARD_RUNTIME_LIB_CPU_SOFTMAX_H
#define AUTOSHARD_RUNTIME_LIB_CPU_SOFTMAX_H

#include "VecMath.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace autoshard::runtime::cpu::detail {

/// log sum_j exp(x[j]) over x[0..n), n >= 1, max-shifted, in double.
template <typename T> double logSumExp(const T *x, int64_t n) {
#if AUTOSHARD_HAVE_SLEEF_AVX2
  if constexpr (std::is_same_v<T, float>)
    if (hasAvx2Fma())
      return avx2::logSumExp(x, n);
#endif
  const double maxValue = *std::max_element(x, x + n);
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j)
    sum += std::exp(static_cast<double>(x[j]) - maxValue);
  return maxValue + std::log(sum);
}

/// p[0..n) = softmax(x[0..n)), computed in double.
template <typename T> void softmax(const T *x, int64_t n, double *p) {
  const double lse = logSumExp(x, n);
  for (int64_t j = 0; j < n; ++j)
    p[j] = std::exp(static_cast<double>(x[j]) - lse);
}

/// dx[0..n) = p * (dp - <p, dp>): the softmax vector-Jacobian product.
template <typename T>
void softmaxBackward(const double *p, const double *dp, int64_t n, T *dx) {
  double dot = 0.0;
  for (int64_t j = 0; j < n; ++j)
    dot += p[j] * dp[j];
  for (int64_t j = 0; j < n; ++j)
    dx[j] = static_cast<T>(p[j] * (dp[j] - dot));
}

} // namespace autoshard::runtime::cpu::detail

#endif // AUTOSHARD_RUNTIME_LIB_CPU_SOFTMAX_H
