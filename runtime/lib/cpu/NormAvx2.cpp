//===- NormAvx2.cpp - layer_norm and rms_norm rows for AVX2 + FMA ---------===//
//
// Compiled with -mavx2 -mfma; called only when hasAvx2Fma() (Norm.cpp). The
// formulas are those of the scalar templates in Norm.cpp; the row sums are
// taken in double, 8 lanes then the lanes in a fixed order, so a row's
// result depends on its length only (not on the thread count or on which
// rows a rank holds).
//
//===----------------------------------------------------------------------===//

#include "Avx2Util.h"
#include "VecMath.h"

#include <cmath>

namespace autoshard::runtime::cpu::detail::avx2 {
namespace {

/// Mean and 1 / sqrt(var + eps) of one row (two passes, in double).
void rowStats(const float *x, int64_t n, double epsilon, double &mean,
              double &rstd) {
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  for (int64_t i = 0; i < n; i += 8)
    accumulate(lo, hi, load8(x + i, n - i));
  mean = horizontalSum(lo, hi) / n;
  const __m256d m = _mm256_set1_pd(mean);
  lo = hi = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256d dl, dh;
    widen(_mm256_loadu_ps(x + i), dl, dh);
    dl = _mm256_sub_pd(dl, m);
    dh = _mm256_sub_pd(dh, m);
    lo = _mm256_fmadd_pd(dl, dl, lo);
    hi = _mm256_fmadd_pd(dh, dh, hi);
  }
  double sq = horizontalSum(lo, hi);
  for (; i < n; ++i) {
    const double d = x[i] - mean;
    sq += d * d;
  }
  rstd = 1.0 / std::sqrt(sq / n + epsilon);
}

/// sum over the row of a[i] * b[i] * c[i] (c null: of a[i] * b[i]), the
/// products and the sum in double (as the scalar template: a float x^2
/// overflows from |x| ~ 1.8e19).
double dot(const float *a, const float *b, const float *c, int64_t n) {
  __m256d accLo = _mm256_setzero_pd(), accHi = _mm256_setzero_pd();
  for (int64_t i = 0; i < n; i += 8) {
    const int64_t k = n - i;
    __m256d aLo, aHi, bLo, bHi;
    widen(load8(a + i, k), aLo, aHi);
    widen(load8(b + i, k), bLo, bHi);
    __m256d pLo = _mm256_mul_pd(aLo, bLo), pHi = _mm256_mul_pd(aHi, bHi);
    if (c) {
      __m256d cLo, cHi;
      widen(load8(c + i, k), cLo, cHi);
      pLo = _mm256_mul_pd(pLo, cLo);
      pHi = _mm256_mul_pd(pHi, cHi);
    }
    accLo = _mm256_add_pd(accLo, pLo);
    accHi = _mm256_add_pd(accHi, pHi);
  }
  return horizontalSum(accLo, accHi);
}

} // namespace

void layerNormRow(const float *x, const float *gamma, const float *beta,
                  float *y, int64_t n, double epsilon) {
  double mean, rstd;
  rowStats(x, n, epsilon, mean, rstd);
  const __m256 m = _mm256_set1_ps(static_cast<float>(mean));
  const __m256 r = _mm256_set1_ps(static_cast<float>(rstd));
  for (int64_t i = 0; i < n; i += 8) {
    const int64_t k = n - i;
    const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(load8(x + i, k), m), r);
    const __m256 b = beta ? load8(beta + i, k) : _mm256_setzero_ps();
    store8(y + i, _mm256_fmadd_ps(xhat, load8(gamma + i, k), b), k);
  }
}

void layerNormGradRow(const float *dy, const float *x, const float *gamma,
                      float *dx, float *pgamma, float *pbeta, int64_t n,
                      double epsilon) {
  double mean, rstd;
  rowStats(x, n, epsilon, mean, rstd);
  const __m256 m = _mm256_set1_ps(static_cast<float>(mean));
  const __m256 r = _mm256_set1_ps(static_cast<float>(rstd));
  // g = dy * gamma; mean(g) and mean(g * xhat). Lanes past the end load 0
  // for dy, so they add nothing.
  __m256d gLo = _mm256_setzero_pd(), gHi = _mm256_setzero_pd();
  __m256d gxLo = _mm256_setzero_pd(), gxHi = _mm256_setzero_pd();
  for (int64_t i = 0; i < n; i += 8) {
    const int64_t k = n - i;
    const __m256 d = load8(dy + i, k);
    const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(load8(x + i, k), m), r);
    const __m256 g = _mm256_mul_ps(d, load8(gamma + i, k));
    accumulate(gLo, gHi, g);
    // g * xhat in double, as the scalar template.
    __m256d g0, g1, x0, x1;
    widen(g, g0, g1);
    widen(xhat, x0, x1);
    gxLo = _mm256_fmadd_pd(g0, x0, gxLo);
    gxHi = _mm256_fmadd_pd(g1, x1, gxHi);
    store8(pgamma + i, _mm256_fmadd_ps(d, xhat, load8(pgamma + i, k)), k);
    if (pbeta)
      store8(pbeta + i, _mm256_add_ps(load8(pbeta + i, k), d), k);
  }
  const __m256 meanG =
      _mm256_set1_ps(static_cast<float>(horizontalSum(gLo, gHi) / n));
  const __m256 meanGXhat =
      _mm256_set1_ps(static_cast<float>(horizontalSum(gxLo, gxHi) / n));
  for (int64_t i = 0; i < n; i += 8) {
    const int64_t k = n - i;
    const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(load8(x + i, k), m), r);
    const __m256 g = _mm256_mul_ps(load8(dy + i, k), load8(gamma + i, k));
    const __m256 t =
        _mm256_sub_ps(_mm256_sub_ps(g, meanG), _mm256_mul_ps(xhat, meanGXhat));
    store8(dx + i, _mm256_mul_ps(r, t), k);
  }
}

void rmsNormRow(const float *x, const float *gamma, float *y, int64_t n,
                double epsilon) {
  const double scale = 1.0 / std::sqrt(dot(x, x, nullptr, n) / n + epsilon);
  const __m256 s = _mm256_set1_ps(static_cast<float>(scale));
  for (int64_t i = 0; i < n; i += 8) {
    const int64_t k = n - i;
    store8(
        y + i,
        _mm256_mul_ps(_mm256_mul_ps(load8(x + i, k), s), load8(gamma + i, k)),
        k);
  }
}

void rmsNormGradRow(const float *dy, const float *x, const float *gamma,
                    float *dx, float *pgamma, int64_t n, double epsilon) {
  const double scale = 1.0 / std::sqrt(dot(x, x, nullptr, n) / n + epsilon);
  const __m256 s = _mm256_set1_ps(static_cast<float>(scale));
  const __m256 coef = _mm256_set1_ps(
      static_cast<float>(scale * scale * dot(dy, gamma, x, n) / n));
  for (int64_t i = 0; i < n; i += 8) {
    const int64_t k = n - i;
    const __m256 d = load8(dy + i, k), xv = load8(x + i, k);
    store8(pgamma + i,
           _mm256_fmadd_ps(_mm256_mul_ps(d, xv), s, load8(pgamma + i, k)), k);
    const __m256 t = _mm256_sub_ps(_mm256_mul_ps(d, load8(gamma + i, k)),
                                   _mm256_mul_ps(xv, coef));
    store8(dx + i, _mm256_mul_ps(s, t), k);
  }
}

} // namespace autoshard::runtime::cpu::detail::avx2
