//===- Optimizer.cpp - CPU gradient clipping and AdamW kernels ------------===//

#include "autoshard/runtime/cpu/Optimizer.h"

#include "Check.h"
#include "Instantiate.h"
#include "Parallel.h"
#include "VecMath.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

namespace autoshard::runtime::cpu {

namespace {
/// Sum of x[i]^2 over one chunk, in double.
template <typename T> double chunkSumSquares(const T *x, int64_t n) {
#if AUTOSHARD_HAVE_SLEEF_AVX2
  if constexpr (std::is_same_v<T, float>)
    if (detail::hasAvx2Fma())
      return detail::avx2::sumSquares(x, n);
#endif
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += static_cast<double>(x[i]) * x[i];
  return sum;
}
} // namespace

template <typename T> double sumSquares(const T *x, int64_t numel) {
  detail::checkAtLeast("sum_squares", "numel", numel, 0);
  // Per-chunk sums added in chunk order: the same on any thread count.
  const int64_t grain = detail::kElementwiseGrain;
  std::vector<double> partial(detail::chunkCount(numel, grain), 0.0);
  detail::parallelChunks(numel, grain, [&](int64_t c, int64_t b, int64_t e) {
    partial[c] = chunkSumSquares(x + b, e - b);
  });
  double sum = 0.0;
  for (double p : partial)
    sum += p;
  return sum;
}

ClipCoef clipCoef(double sumsq, double maxNorm) {
  if (!(maxNorm > 0.0))
    detail::fail("clip_coef",
                 "max_norm must be > 0, got " + std::to_string(maxNorm));
  if (sumsq < 0.0)
    detail::fail("clip_coef",
                 "sum of squares must be >= 0, got " + std::to_string(sumsq));
  // A diverged gradient (NaN or infinite sum) passes through as its norm,
  // so that shard-run's check of grad_norm reports the step (or skips it)
  // rather than this kernel failing.
  const double norm = std::sqrt(sumsq);
  if (std::isnan(norm))
    return {norm, norm};
  return {std::min(1.0, maxNorm / (norm + 1e-6)), norm};
}

template <typename T, typename G>
void adamw(const T *param, const G *grad, const T *m, const T *v, T *newParam,
           T *newM, T *newV, int64_t numel, const AdamWParams &p) {
  detail::checkAtLeast("adamw", "numel", numel, 0);
  detail::checkAtLeast("adamw", "step", p.step, 1);
  const double t = static_cast<double>(p.step);
  const T beta1 = static_cast<T>(p.beta1), beta2 = static_cast<T>(p.beta2);
  const T oneMinusBeta1 = static_cast<T>(1.0 - p.beta1);
  const T oneMinusBeta2 = static_cast<T>(1.0 - p.beta2);
  const T gradScale = static_cast<T>(p.gradScale);
  // p' = p * (1 - lr wd) - stepSize * m' / (sqrt(v') / sqrt(bc2) + eps), the
  // arrangement of torch.optim.AdamW.
  const T decay = static_cast<T>(1.0 - p.lr * p.weightDecay);
  const T stepSize = static_cast<T>(p.lr / (1.0 - std::pow(p.beta1, t)));
  const T invSqrtBc2 =
      static_cast<T>(1.0 / std::sqrt(1.0 - std::pow(p.beta2, t)));
  const T eps = static_cast<T>(p.epsilon);
#if AUTOSHARD_HAVE_SLEEF_AVX2
  if constexpr (std::is_same_v<T, float> && std::is_same_v<G, float>)
    if (detail::hasAvx2Fma()) {
      const detail::avx2::AdamWConstants c{gradScale,     beta1,         beta2,
                                           oneMinusBeta1, oneMinusBeta2, decay,
                                           stepSize,      invSqrtBc2,    eps};
      return detail::parallelChunks(
          numel, detail::kElementwiseGrain, [&](int64_t, int64_t b, int64_t e) {
            detail::avx2::adamw(param + b, grad + b, m + b, v + b, newParam + b,
                                newM + b, newV + b, e - b, c);
          });
    }
#endif
  detail::parallelChunks(
      numel, detail::kElementwiseGrain, [&](int64_t, int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const T g = static_cast<T>(grad[i]) * gradScale;
          const T mi = beta1 * m[i] + oneMinusBeta1 * g;
          const T vi = beta2 * v[i] + oneMinusBeta2 * g * g;
          const T denom = std::sqrt(vi) * invSqrtBc2 + eps;
          newParam[i] = param[i] * decay - stepSize * mi / denom;
          newM[i] = mi;
          newV[i] = vi;
        }
      });
}

#define INSTANTIATE(T) template double sumSquares<T>(const T *, int64_t);
AUTOSHARD_FOR_EACH_FLOAT(INSTANTIATE)
#undef INSTANTIATE

#define INSTANTIATE(T, G)                                                      \
  template void adamw<T, G>(const T *, const G *, const T *, const T *, T *,   \
                            T *, T *, int64_t, const AdamWParams &);
INSTANTIATE(float, float)
INSTANTIATE(double, double)
INSTANTIATE(float, double)
INSTANTIATE(double, float)

} // namespace autoshard::runtime::cpu
