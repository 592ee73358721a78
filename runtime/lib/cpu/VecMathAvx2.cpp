//===- VecMathAvx2.cpp - SLEEF float loops for AVX2 + FMA -----------------===//
//
// Compiled with -mavx2 -mfma; called only when hasAvx2Fma() (VecMath.cpp).
// The formulas are those of the scalar templates in Activation.cpp.
//
//===----------------------------------------------------------------------===//

#include "VecMath.h"

#include <immintrin.h>
#include <sleef.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace autoshard::runtime::cpu::detail::avx2 {
namespace {

constexpr int kLanes = 8;

__m256 splat(float v) { return _mm256_set1_ps(v); }

/// Runs f(in[NI]) -> out[NO] over 8-float vectors of NI inputs and NO
/// outputs; the tail goes through zero-padded buffers.
template <int NI, int NO, typename F>
void mapVectors(const float *const (&in)[NI], float *const (&out)[NO],
                int64_t n, F f) {
  __m256 vin[NI], vout[NO];
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int a = 0; a < NI; ++a)
      vin[a] = _mm256_loadu_ps(in[a] + i);
    f(vin, vout);
    for (int a = 0; a < NO; ++a)
      _mm256_storeu_ps(out[a] + i, vout[a]);
  }
  if (i == n)
    return;
  const size_t bytes = static_cast<size_t>(n - i) * sizeof(float);
  alignas(32) float buf[kLanes];
  for (int a = 0; a < NI; ++a) {
    std::memset(buf, 0, sizeof(buf));
    std::memcpy(buf, in[a] + i, bytes);
    vin[a] = _mm256_load_ps(buf);
  }
  f(vin, vout);
  for (int a = 0; a < NO; ++a) {
    _mm256_store_ps(buf, vout[a]);
    std::memcpy(out[a] + i, buf, bytes);
  }
}

constexpr float kSqrtHalf = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
constexpr float kSqrt2OverPi = 0.79788456080286535588f;
constexpr float kGeluTanhCubic = 0.044715f;

__m256 sigmoid(__m256 x) {
  const __m256 one = splat(1.0f);
  return _mm256_div_ps(
      one, _mm256_add_ps(one, Sleef_expf8_u10avx2(
                                  _mm256_sub_ps(_mm256_setzero_ps(), x))));
}

/// Phi(x) = 0.5 (1 + erf(x / sqrt 2)).
/// (For x << 0 this cancels as the scalar template does; erf's absolute
/// error there is far below float's resolution of the result's scale.)
__m256 normalCdf(__m256 x) {
  const __m256 half = splat(0.5f);
  return _mm256_fmadd_ps(
      half, Sleef_erff8_u10avx2(_mm256_mul_ps(x, splat(kSqrtHalf))), half);
}

/// sqrt(2/pi) (x + 0.044715 x^3).
__m256 tanhInner(__m256 x) {
  const __m256 x2 = _mm256_mul_ps(x, x);
  return _mm256_mul_ps(
      splat(kSqrt2OverPi),
      _mm256_fmadd_ps(_mm256_mul_ps(splat(kGeluTanhCubic), x2), x, x));
}

} // namespace

void geluExact(const float *x, float *y, int64_t n) {
  mapVectors<1, 1>({x}, {y}, n, [](const __m256 *v, __m256 *o) {
    o[0] = _mm256_mul_ps(v[0], normalCdf(v[0]));
  });
}

void geluExactGrad(const float *dy, const float *x, float *dx, int64_t n) {
  mapVectors<2, 1>({dy, x}, {dx}, n, [](const __m256 *v, __m256 *o) {
    const __m256 xv = v[1];
    const __m256 pdf = _mm256_mul_ps(splat(kInvSqrt2Pi),
                                     Sleef_expf8_u10avx2(_mm256_mul_ps(
                                         splat(-0.5f), _mm256_mul_ps(xv, xv))));
    o[0] = _mm256_mul_ps(v[0], _mm256_fmadd_ps(xv, pdf, normalCdf(xv)));
  });
}

void geluTanh(const float *x, float *y, int64_t n) {
  mapVectors<1, 1>({x}, {y}, n, [](const __m256 *v, __m256 *o) {
    const __m256 two = splat(2.0f);
    o[0] = _mm256_mul_ps(v[0], sigmoid(_mm256_mul_ps(two, tanhInner(v[0]))));
  });
}

void geluTanhGrad(const float *dy, const float *x, float *dx, int64_t n) {
  mapVectors<2, 1>({dy, x}, {dx}, n, [](const __m256 *v, __m256 *o) {
    const __m256 xv = v[1], one = splat(1.0f), two = splat(2.0f);
    const __m256 s = sigmoid(_mm256_mul_ps(two, tanhInner(xv)));
    const __m256 dInner = _mm256_mul_ps(
        splat(kSqrt2OverPi),
        _mm256_fmadd_ps(splat(3 * kGeluTanhCubic), _mm256_mul_ps(xv, xv), one));
    // s + 2 x s (1 - s) dInner
    const __m256 right =
        _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(two, xv), s),
                      _mm256_mul_ps(_mm256_sub_ps(one, s), dInner));
    o[0] = _mm256_mul_ps(v[0], _mm256_add_ps(s, right));
  });
}

void silu(const float *x, float *y, int64_t n) {
  mapVectors<1, 1>({x}, {y}, n, [](const __m256 *v, __m256 *o) {
    o[0] = _mm256_mul_ps(v[0], sigmoid(v[0]));
  });
}

namespace {
/// s (1 + x (1 - s)).
__m256 siluDerivative(__m256 x) {
  const __m256 one = splat(1.0f);
  const __m256 s = sigmoid(x);
  return _mm256_mul_ps(s, _mm256_fmadd_ps(x, _mm256_sub_ps(one, s), one));
}
} // namespace

void siluGrad(const float *dy, const float *x, float *dx, int64_t n) {
  mapVectors<2, 1>({dy, x}, {dx}, n, [](const __m256 *v, __m256 *o) {
    o[0] = _mm256_mul_ps(v[0], siluDerivative(v[1]));
  });
}

void swiglu(const float *gate, const float *up, float *y, int64_t n) {
  mapVectors<2, 1>({gate, up}, {y}, n, [](const __m256 *v, __m256 *o) {
    o[0] = _mm256_mul_ps(_mm256_mul_ps(v[0], sigmoid(v[0])), v[1]);
  });
}

void swigluGrad(const float *dy, const float *gate, const float *up,
                float *dgate, float *dup, int64_t n) {
  mapVectors<3, 2>(
      {dy, gate, up}, {dgate, dup}, n, [](const __m256 *v, __m256 *o) {
        const __m256 g = v[1];
        o[0] = _mm256_mul_ps(_mm256_mul_ps(v[0], v[2]), siluDerivative(g));
        o[1] = _mm256_mul_ps(v[0], _mm256_mul_ps(g, sigmoid(g)));
      });
}

float expShiftSum(float *x, int64_t n, float shift) {
  const __m256 s = splat(shift);
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m256 e =
        Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
    _mm256_storeu_ps(x + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  alignas(32) float lanes[kLanes];
  if (i < n) {
    // Padding lanes are -inf: exp gives 0 and the sum is unchanged.
    for (int a = 0; a < kLanes; ++a)
      lanes[a] = i + a < n ? x[i + a] : -__builtin_inff();
    const __m256 e =
        Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_load_ps(lanes), s));
    acc = _mm256_add_ps(acc, e);
    _mm256_store_ps(lanes, e);
    std::memcpy(x + i, lanes, static_cast<size_t>(n - i) * sizeof(float));
  }
  _mm256_store_ps(lanes, acc);
  float sum = 0.0f;
  for (float lane : lanes)
    sum += lane;
  return sum;
}

float maxOf(const float *x, int64_t n) {
  __m256 m = splat(-__builtin_inff());
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
  alignas(32) float lanes[kLanes];
  _mm256_store_ps(lanes, m);
  float out = lanes[0];
  for (int a = 1; a < kLanes; ++a)
    out = std::max(out, lanes[a]);
  for (; i < n; ++i)
    out = std::max(out, x[i]);
  return out;
}

void scale(float *x, int64_t n, float factor) {
  const __m256 f = splat(factor);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), f));
  for (; i < n; ++i)
    x[i] *= factor;
}

namespace {
/// exp(double(x[i..i+4)) - shift) for the first `k` (<= 4) lanes; lanes
/// past k give 0.
__m256d expShifted4(const float *x, int64_t k, __m256d shift) {
  __m128 v;
  if (k >= 4) {
    v = _mm_loadu_ps(x);
  } else {
    const __m128i lane = _mm_setr_epi32(0, 1, 2, 3);
    v = _mm_maskload_ps(
        x, _mm_cmpgt_epi32(_mm_set1_epi32(static_cast<int>(k)), lane));
  }
  __m256d d = _mm256_sub_pd(_mm256_cvtps_pd(v), shift);
  if (k < 4) {
    const __m256d lane = _mm256_setr_pd(0, 1, 2, 3);
    const __m256d valid =
        _mm256_cmp_pd(lane, _mm256_set1_pd(static_cast<double>(k)), _CMP_LT_OQ);
    d = _mm256_blendv_pd(_mm256_set1_pd(-__builtin_inf()), d, valid);
  }
  return Sleef_expd4_u10avx2(d);
}
} // namespace

double logSumExp(const float *x, int64_t n) {
  const double m = maxOf(x, n);
  const __m256d shift = _mm256_set1_pd(m);
  __m256d acc = _mm256_setzero_pd();
  for (int64_t i = 0; i < n; i += 4)
    acc = _mm256_add_pd(acc, expShifted4(x + i, n - i, shift));
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, acc);
  return m + std::log((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]));
}

void crossEntropyGradRow(const float *x, int64_t n, double lse, int64_t label,
                         double scale, float *dx) {
  const __m256d shift = _mm256_set1_pd(lse), s = _mm256_set1_pd(scale);
  const __m256d lane = _mm256_setr_pd(0, 1, 2, 3);
  const __m256d one = _mm256_set1_pd(1.0);
  for (int64_t i = 0; i < n; i += 4) {
    const int64_t k = n - i;
    __m256d p = expShifted4(x + i, k, shift);
    // p - 1 in the label's lane.
    const __m256d isLabel =
        _mm256_cmp_pd(_mm256_add_pd(lane, _mm256_set1_pd(double(i))),
                      _mm256_set1_pd(double(label)), _CMP_EQ_OQ);
    p = _mm256_sub_pd(p, _mm256_and_pd(isLabel, one));
    const __m128 out = _mm256_cvtpd_ps(_mm256_mul_pd(s, p));
    if (k >= 4) {
      _mm_storeu_ps(dx + i, out);
    } else {
      alignas(16) float buf[4];
      _mm_store_ps(buf, out);
      std::memcpy(dx + i, buf, static_cast<size_t>(k) * sizeof(float));
    }
  }
}

} // namespace autoshard::runtime::cpu::detail::avx2
