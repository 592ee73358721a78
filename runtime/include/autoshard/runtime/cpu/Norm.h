//===- Norm.h - CPU layer_norm and rms_norm kernels -------------*- C++ -*-===//
//
// Normalisation over the last dim: x is [rows, hidden], row-major. Row
// statistics are accumulated in double. The backward kernels recompute the
// statistics from x (nothing is saved by the forward).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_CPU_NORM_H
#define AUTOSHARD_RUNTIME_CPU_NORM_H

#include <cstdint>

namespace autoshard::runtime::cpu {

/// tfm.layer_norm (Ba, Kiros, Hinton 2016): y = (x - mean) / sqrt(var + eps)
/// * gamma + beta per row, var the biased (population) variance. gamma and
/// beta are [hidden]; beta may be null (no bias).
template <typename T>
void layerNorm(const T *x, const T *gamma, const T *beta, T *y, int64_t rows,
               int64_t hidden, double epsilon);

/// tfm.layer_norm_grad: given dy and x [rows, hidden] and gamma [hidden],
/// writes dx [rows, hidden], dgamma [hidden] and dbeta [hidden] (dbeta may be
/// null when the forward had no beta). dx = rstd * (g - mean(g) - xhat *
/// mean(g * xhat)) with g = dy * gamma, xhat the normalised x.
template <typename T>
void layerNormGrad(const T *dy, const T *x, const T *gamma, T *dx, T *dgamma,
                   T *dbeta, int64_t rows, int64_t hidden, double epsilon);

/// tfm.rms_norm (Zhang, Sennrich 2019): y = x / sqrt(mean(x^2) + eps) * gamma
/// per row; gamma is [hidden].
template <typename T>
void rmsNorm(const T *x, const T *gamma, T *y, int64_t rows, int64_t hidden,
             double epsilon);

/// tfm.rms_norm_grad: writes dx [rows, hidden] and dgamma [hidden].
/// dx = r * (g - x * r^2 * mean(g * x)) with g = dy * gamma,
/// r = 1 / sqrt(mean(x^2) + eps).
template <typename T>
void rmsNormGrad(const T *dy, const T *x, const T *gamma, T *dx, T *dgamma,
                 int64_t rows, int64_t hidden, double epsilon);

} // namespace autoshard::runtime::cpu

#endif // AUTOSHARD_RUNTIME_CPU_NORM_H
