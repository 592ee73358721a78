//===- Norm.cpp - CPU layer_norm and rms_norm kernels ---------------------===//

#include "autoshard/runtime/cpu/Norm.h"

#include "Check.h"
#include "Instantiate.h"

#include <algorithm>
#include <cmath>

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

} // namespace

template <typename T>
void layerNorm(const T *x, const T *gamma, const T *beta, T *y, int64_t rows,
               int64_t hidden, double epsilon) {
  checkNormShape("layer_norm", rows, hidden, epsilon);
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * hidden;
    T *yr = y + r * hidden;
    const RowStats s = layerNormStats(xr, hidden, epsilon);
    const T mean = static_cast<T>(s.mean), rstd = static_cast<T>(s.rstd);
    for (int64_t h = 0; h < hidden; ++h)
      yr[h] = (xr[h] - mean) * rstd * gamma[h] + (beta ? beta[h] : T(0));
  }
}

template <typename T>
void layerNormGrad(const T *dy, const T *x, const T *gamma, T *dx, T *dgamma,
                   T *dbeta, int64_t rows, int64_t hidden, double epsilon) {
  checkNormShape("layer_norm_grad", rows, hidden, epsilon);
  std::fill(dgamma, dgamma + hidden, T(0));
  if (dbeta)
    std::fill(dbeta, dbeta + hidden, T(0));
  for (int64_t r = 0; r < rows; ++r) {
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
      dgamma[h] += dyr[h] * xhat;
      if (dbeta)
        dbeta[h] += dyr[h];
    }
    const T meanG = static_cast<T>(sumG / hidden);
    const T meanGXhat = static_cast<T>(sumGXhat / hidden);
    for (int64_t h = 0; h < hidden; ++h) {
      const T xhat = (xr[h] - mean) * rstd;
      dxr[h] = rstd * (dyr[h] * gamma[h] - meanG - xhat * meanGXhat);
    }
  }
}

template <typename T>
void rmsNorm(const T *x, const T *gamma, T *y, int64_t rows, int64_t hidden,
             double epsilon) {
  checkNormShape("rms_norm", rows, hidden, epsilon);
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * hidden;
    T *yr = y + r * hidden;
    const T scale = static_cast<T>(rmsNormScale(xr, hidden, epsilon));
    for (int64_t h = 0; h < hidden; ++h)
      yr[h] = xr[h] * scale * gamma[h];
  }
}

template <typename T>
void rmsNormGrad(const T *dy, const T *x, const T *gamma, T *dx, T *dgamma,
                 int64_t rows, int64_t hidden, double epsilon) {
  checkNormShape("rms_norm_grad", rows, hidden, epsilon);
  std::fill(dgamma, dgamma + hidden, T(0));
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * hidden, *dyr = dy + r * hidden;
    T *dxr = dx + r * hidden;
    const double scale = rmsNormScale(xr, hidden, epsilon);
    const T s = static_cast<T>(scale);
    double sumGX = 0.0;
    for (int64_t h = 0; h < hidden; ++h) {
      sumGX += static_cast<double>(dyr[h]) * gamma[h] * xr[h];
      dgamma[h] += dyr[h] * xr[h] * s;
    }
    const T coef = static_cast<T>(scale * scale * sumGX / hidden);
    for (int64_t h = 0; h < hidden; ++h)
      dxr[h] = s * (dyr[h] * gamma[h] - xr[h] * coef);
  }
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
