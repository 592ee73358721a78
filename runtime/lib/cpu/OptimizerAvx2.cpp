//===- OptimizerAvx2.cpp - AdamW and sum of squares for AVX2 + FMA --------===//
//
// Compiled with -mavx2 -mfma; called only when hasAvx2Fma() (Optimizer.cpp),
// on one chunk of Parallel.h's fixed chunks at a time. The formulas are those
// of the scalar templates in Optimizer.cpp.
//
//===----------------------------------------------------------------------===//

#include "Avx2Util.h"
#include "VecMath.h"

namespace autoshard::runtime::cpu::detail::avx2 {

double sumSquares(const float *x, int64_t n) {
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  for (int64_t i = 0; i < n; i += 8) {
    __m256d vl, vh;
    widen(load8(x + i, n - i), vl, vh);
    lo = _mm256_fmadd_pd(vl, vl, lo);
    hi = _mm256_fmadd_pd(vh, vh, hi);
  }
  return horizontalSum(lo, hi);
}

void adamw(const float *param, const float *grad, const float *m,
           const float *v, float *newParam, float *newM, float *newV, int64_t n,
           const AdamWConstants &c) {
  const __m256 gradScale = _mm256_set1_ps(c.gradScale);
  const __m256 beta1 = _mm256_set1_ps(c.beta1), beta2 = _mm256_set1_ps(c.beta2);
  const __m256 oneMinusBeta1 = _mm256_set1_ps(c.oneMinusBeta1);
  const __m256 oneMinusBeta2 = _mm256_set1_ps(c.oneMinusBeta2);
  const __m256 decay = _mm256_set1_ps(c.decay);
  const __m256 stepSize = _mm256_set1_ps(c.stepSize);
  const __m256 invSqrtBc2 = _mm256_set1_ps(c.invSqrtBc2);
  const __m256 eps = _mm256_set1_ps(c.eps);
  for (int64_t i = 0; i < n; i += 8) {
    const int64_t k = n - i;
    const __m256 g = _mm256_mul_ps(load8(grad + i, k), gradScale);
    const __m256 mi = _mm256_fmadd_ps(beta1, load8(m + i, k),
                                      _mm256_mul_ps(oneMinusBeta1, g));
    const __m256 vi =
        _mm256_fmadd_ps(beta2, load8(v + i, k),
                        _mm256_mul_ps(_mm256_mul_ps(oneMinusBeta2, g), g));
    const __m256 denom = _mm256_fmadd_ps(_mm256_sqrt_ps(vi), invSqrtBc2, eps);
    const __m256 update = _mm256_div_ps(_mm256_mul_ps(stepSize, mi), denom);
    store8(newParam + i, _mm256_fmsub_ps(load8(param + i, k), decay, update),
           k);
    store8(newM + i, mi, k);
    store8(newV + i, vi, k);
  }
}

} // namespace autoshard::runtime::cpu::detail::avx2
