//===- Norm.cpp - CPU layer_norm and rms_norm kernels ---------------------===//

#include "autoshard/runtime/cpu/Norm.h"

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

void checkNormShape(const char *op, int64_t rows, int64_t hidden,
                    double epsilon) {
  detail::checkAtLeast(op, "rows", rows, 0);
  detail::checkAtLeast(op, "hidden", hidden, 1);
  if (!(epsilon >= 0.0))
    detail::fail(op, "epsilon must be >= 0, got " + std::to_string(epsilon));
}

/// Mean and reciprocal standard deviation of one row (two-pass, in double).
struct RowStats {
  double mean;
  double rstd;
};

template <typename T>
RowStats layerNormStats(const T *x, int64_t hidden, double epsilon) {
  double sum = 0.0;
  for (int64_t h = 0; h < hidden; ++h)
    sum += x[h];
  const double mean = sum / hidden;
  double sq = 0.0;
  for (int64_t h = 0; h < hidden; ++h) {
    const double d = x[h] - mean;
    sq += d * d;
  }
  return {mean, 1.0 / std::sqrt(sq / hidden + epsilon)};
}

/// 1 / sqrt(mean(x^2) + eps) of one row, in double.
template <typename T>
double rmsNormScale(const T *x, int64_t hidden, double epsilon) {
  double sq = 0.0;
  for (int64_t h = 0; h < hidden; ++h)
    sq += static_cast<double>(x[h]) * x[h];
  return 1.0 / std::sqrt(sq / hidden + epsilon);
}

/// Rows per parallel chunk: about kElementwiseGrain elements.
int64_t rowGrain(int64_t hidden) {
  return std::max<int64_t>(1, detail::kElementwiseGrain / hidden);
}

/// Runs rowFn(r, dgammaPartial, dbetaPartial) for every row, chunks of rows
/// in parallel, each chunk summing its rows' parameter gradients into a
/// zeroed partial of its own; the partials are then added in chunk order
/// into dgamma (and dbeta), so the sums do not depend on the thread count.
template <typename T, typename RowFn>
void rowsWithParamGrads(int64_t rows, int64_t hidden, T *dgamma, T *dbeta,
                        RowFn rowFn) {
  const int64_t grain = rowGrain(hidden);
  const int64_t chunks = detail::chunkCount(rows, grain);
  const int64_t perChunk = hidden * (dbeta ? 2 : 1);
  std::vector<T> partials(static_cast<size_t>(chunks * perChunk), T(0));
  detail::parallelChunks(rows, grain, [&](int64_t c, int64_t b, int64_t e) {
    T *pg = partials.data() + c * perChunk;
    T *pb = dbeta ? pg + hidden : nullptr;
    for (int64_t r = b; r < e; ++r)
      rowFn(r, pg, pb);
  });
  std::fill(dgamma, dgamma + hidden, T(0));
  if (dbeta)
    std::fill(dbeta, dbeta + hidden, T(0));
  for (int64_t c = 0; c < chunks; ++c) {
    const T *pg = partials.data() + c * perChunk;
    for (int64_t h = 0; h < hidden; ++h)
      dgamma[h] += pg[h];
    if (dbeta)
      for (int64_t h = 0; h < hidden; ++h)
        dbeta[h] += pg[hidden + h];
  }
}

/// Runs rowFn(r) for every row, chunks of rows in parallel.
template <typename RowFn>
void parallelRows(int64_t rows, int64_t hidden, RowFn rowFn) {
  detail::parallelChunks(rows, rowGrain(hidden),
                         [&](int64_t, int64_t b, int64_t e) {
                           for (int64_t r = b; r < e; ++r)
                             rowFn(r);
                         });
}

} // namespace

template <typename T>
void layerNorm(const T *x, const T *gamma, const T *beta, T *y, int64_t rows,
               int64_t hidden, double epsilon) {
  checkNormShape("layer_norm", rows, hidden, epsilon);
#if AUTOSHARD_HAVE_SLEEF_AVX2
  if constexpr (std::is_same_v<T, float>)
    if (detail::hasAvx2Fma())
      return parallelRows(rows, hidden, [&](int64_t r) {
        detail::avx2::layerNormRow(x + r * hidden, gamma, beta, y + r * hidden,
                                   hidden, epsilon);
      });
#endif
  parallelRows(rows, hidden, [&](int64_t r) {
    const T *xr = x + r * hidden;
    T *yr = y + r * hidden;
    const RowStats s = layerNormStats(xr, hidden, epsilon);
    const T mean = static_cast<T>(s.mean), rstd = static_cast<T>(s.rstd);
    for (int64_t h = 0; h < hidden; ++h)
      yr[h] = (xr[h] - mean) * rstd * gamma[h] + (beta ? beta[h] : T(0));
  });
}

template <typename T>
void layerNormGrad(const T *dy, const T *x, const T *gamma, T *dx, T *dgamma,
                   T *dbeta, int64_t rows, int64_t hidden, double epsilon) {
  checkNormShape("layer_norm_grad", rows, hidden, epsilon);
#if AUTOSHARD_HAVE_SLEEF_AVX2
  if constexpr (std::is_same_v<T, float>)
    if (detail::hasAvx2Fma())
      return rowsWithParamGrads(
          rows, hidden, dgamma, dbeta, [&](int64_t r, T *pgamma, T *pbeta) {
            detail::avx2::layerNormGradRow(dy + r * hidden, x + r * hidden,
                                           gamma, dx + r * hidden, pgamma,
                                           pbeta, hidden, epsilon);
          });
#endif
  rowsWithParamGrads(
      rows, hidden, dgamma, dbeta, [&](int64_t r, T *pgamma, T *pbeta) {
        const T *xr = x + r * hidden, *dyr = dy + r * hidden;
        T *dxr = dx + r * hidden;
        const RowStats s = layerNormStats(xr, hidden, epsilon);
        const T mean = static_cast<T>(s.mean), rstd = static_cast<T>(s.rstd);
        // g = dy * gamma; need mean(g) and mean(g * xhat).
        double sumG = 0.0, sumGXhat = 0.0;
        for (int64_t h = 0; h < hidden; ++h) {
          const T xhat = (xr[h] - mean) * rstd;
          const T g = dyr[h] * gamma[h];
          sumG += g;
          sumGXhat += static_cast<double>(g) * xhat;
          pgamma[h] += dyr[h] * xhat;
          if (pbeta)
            pbeta[h] += dyr[h];
        }
        const T meanG = static_cast<T>(sumG / hidden);
        const T meanGXhat = static_cast<T>(sumGXhat / hidden);
        for (int64_t h = 0; h < hidden; ++h) {
          const T xhat = (xr[h] - mean) * rstd;
          dxr[h] = rstd * (dyr[h] * gamma[h] - meanG - xhat * meanGXhat);
        }
      });
}

template <typename T>
void rmsNorm(const T *x, const T *gamma, T *y, int64_t rows, int64_t hidden,
             double epsilon) {
  checkNormShape("rms_norm", rows, hidden, epsilon);
#if AUTOSHARD_HAVE_SLEEF_AVX2
  if constexpr (std::is_same_v<T, float>)
    if (detail::hasAvx2Fma())
      return parallelRows(rows, hidden, [&](int64_t r) {
        detail::avx2::rmsNormRow(x + r * hidden, gamma, y + r * hidden, hidden,
                                 epsilon);
      });
#endif
  parallelRows(rows, hidden, [&](int64_t r) {
    const T *xr = x + r * hidden;
    T *yr = y + r * hidden;
    const T scale = static_cast<T>(rmsNormScale(xr, hidden, epsilon));
    for (int64_t h = 0; h < hidden; ++h)
      yr[h] = xr[h] * scale * gamma[h];
  });
}

template <typename T>
void rmsNormGrad(const T *dy, const T *x, const T *gamma, T *dx, T *dgamma,
                 int64_t rows, int64_t hidden, double epsilon) {
  checkNormShape("rms_norm_grad", rows, hidden, epsilon);
#if AUTOSHARD_HAVE_SLEEF_AVX2
  if constexpr (std::is_same_v<T, float>)
    if (detail::hasAvx2Fma())
      return rowsWithParamGrads(rows, hidden, dgamma, static_cast<T *>(nullptr),
                                [&](int64_t r, T *pgamma, T *) {
                                  detail::avx2::rmsNormGradRow(
                                      dy + r * hidden, x + r * hidden, gamma,
                                      dx + r * hidden, pgamma, hidden, epsilon);
                                });
#endif
  rowsWithParamGrads(rows, hidden, dgamma, static_cast<T *>(nullptr),
                     [&](int64_t r, T *pgamma, T *) {
                       const T *xr = x + r * hidden, *dyr = dy + r * hidden;
                       T *dxr = dx + r * hidden;
                       const double scale = rmsNormScale(xr, hidden, epsilon);
                       const T s = static_cast<T>(scale);
                       double sumGX = 0.0;
                       for (int64_t h = 0; h < hidden; ++h) {
                         sumGX +=
                             static_cast<double>(dyr[h]) * gamma[h] * xr[h];
                         pgamma[h] += dyr[h] * xr[h] * s;
                       }
                       const T coef =
                           static_cast<T>(scale * scale * sumGX / hidden);
                       for (int64_t h = 0; h < hidden; ++h)
                         dxr[h] = s * (dyr[h] * gamma[h] - xr[h] * coef);
                     });
}

#define INSTANTIATE(T)                                                         \
  template void layerNorm<T>(const T *, const T *, const T *, T *, int64_t,    \
                             int64_t, double);                                 \
  template void layerNormGrad<T>(const T *, const T *, const T *, T *, T *,    \
                                 T *, int64_t, int64_t, double);               \
  template void rmsNorm<T>(const T *, const T *, T *, int64_t, int64_t,        \
                           double);                                            \
  template void rmsNormGrad<T>(const T *, const T *, const T *, T *, T *,      \
                               int64_t, int64_t, double);
AUTOSHARD_FOR_EACH_FLOAT(INSTANTIATE)

} // namespace autoshard::runtime::cpu
