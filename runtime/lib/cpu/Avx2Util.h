//===- Avx2Util.h - Helpers of the AVX2 + FMA kernel files ------*- C++ -*-===//
//
// Included only by files compiled with -mavx2 -mfma.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_LIB_CPU_AVX2UTIL_H
#define AUTOSHARD_RUNTIME_LIB_CPU_AVX2UTIL_H

#include <immintrin.h>

#include <cstdint>

namespace autoshard::runtime::cpu::detail::avx2 {

/// Lane mask of the first `n` (0..8) floats of a vector: a tail goes
/// through the same vector code as the body (maskload reads nothing past
/// the end), so an element's result does not depend on where it sits.
inline __m256i tailMask(int64_t n) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lane);
}

/// The 8 floats at p (only the first n when n < 8; the rest 0).
inline __m256 load8(const float *p, int64_t n) {
  return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, tailMask(n));
}

inline void store8(float *p, __m256 v, int64_t n) {
  if (n >= 8)
    _mm256_storeu_ps(p, v);
  else
    _mm256_maskstore_ps(p, tailMask(n), v);
}

/// The 8 floats of v widened to double: lanes 0-3 in lo, 4-7 in hi.
inline void widen(__m256 v, __m256d &lo, __m256d &hi) {
  lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
  hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
}

/// Adds the 8 floats of v, widened to double, to the two 4-double
/// accumulators.
inline void accumulate(__m256d &lo, __m256d &hi, __m256 v) {
  __m256d vl, vh;
  widen(v, vl, vh);
  lo = _mm256_add_pd(lo, vl);
  hi = _mm256_add_pd(hi, vh);
}

/// (lo + hi) summed over its 4 lanes in a fixed order.
inline double horizontalSum(__m256d lo, __m256d hi) {
  const __m256d s = _mm256_add_pd(lo, hi);
  alignas(32) double l[4];
  _mm256_store_pd(l, s);
  return (l[0] + l[1]) + (l[2] + l[3]);
}

} // namespace autoshard::runtime::cpu::detail::avx2

#endif // AUTOSHARD_RUNTIME_LIB_CPU_AVX2UTIL_H
