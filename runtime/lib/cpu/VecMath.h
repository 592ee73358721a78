//===- VecMath.h - Vectorised float math of the CPU kernels -----*- C++ -*-===//
//
// Float loops over contiguous arrays with SLEEF's vector functions (Shibata,
// Petrogalli 2020, "SLEEF: A Portable Vectorized Library of C Standard
// Mathematical Functions"; the 1.0-ULP variants) on AVX2 + FMA. Available
// only when hasAvx2Fma(): callers keep the scalar templates as the fallback
// and as the fp64 oracle of the tests. Each function handles any n >= 0
// (the tail goes through one padded vector, so every element is computed the
// same way wherever it sits).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_LIB_CPU_VECMATH_H
#define AUTOSHARD_RUNTIME_LIB_CPU_VECMATH_H

#include <cstdint>

namespace autoshard::runtime::cpu::detail {

/// True when this CPU runs AVX2 and FMA (checked once, by CPUID).
bool hasAvx2Fma();

namespace avx2 {
/// y = 0.5 x (1 + erf(x / sqrt 2)).
void geluExact(const float *x, float *y, int64_t n);
/// dx = dy * (Phi(x) + x phi(x)).
void geluExactGrad(const float *dy, const float *x, float *dx, int64_t n);
/// y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
void geluTanh(const float *x, float *y, int64_t n);
/// dx = dy * d/dx geluTanh(x).
void geluTanhGrad(const float *dy, const float *x, float *dx, int64_t n);
/// y = x sigmoid(x).
void silu(const float *x, float *y, int64_t n);
/// dx = dy * s (1 + x (1 - s)), s = sigmoid(x).
void siluGrad(const float *dy, const float *x, float *dx, int64_t n);
/// y = silu(gate) * up.
void swiglu(const float *gate, const float *up, float *y, int64_t n);
/// dgate = dy * up * silu'(gate), dup = dy * silu(gate).
void swigluGrad(const float *dy, const float *gate, const float *up,
                float *dgate, float *dup, int64_t n);
/// x[i] = exp(x[i] - shift) in place; returns the sum of the results
/// (summed in 8 lanes, then the lanes in order).
float expShiftSum(float *x, int64_t n, float shift);
/// The largest of x[0..n), n >= 1 (NaN-free input: max is exact in any
/// order).
float maxOf(const float *x, int64_t n);
/// x[i] *= factor.
void scale(float *x, int64_t n, float factor);
/// log sum_j exp(x[j]) over n >= 1 floats, max-shifted, in double (4 lanes,
/// then in order).
double logSumExp(const float *x, int64_t n);
/// dx[c] = scale * (exp(x[c] - lse) - [c == label]) for c < n, in double:
/// one row of cross_entropy_grad.
void crossEntropyGradRow(const float *x, int64_t n, double lse, int64_t label,
                         double scale, float *dx);

// NormAvx2.cpp: one row of `n` floats (Norm.h gives the formulas); pgamma
// and pbeta accumulate the row's parameter gradients (pbeta may be null).
void layerNormRow(const float *x, const float *gamma, const float *beta,
                  float *y, int64_t n, double epsilon);
void layerNormGradRow(const float *dy, const float *x, const float *gamma,
                      float *dx, float *pgamma, float *pbeta, int64_t n,
                      double epsilon);
void rmsNormRow(const float *x, const float *gamma, float *y, int64_t n,
                double epsilon);
void rmsNormGradRow(const float *dy, const float *x, const float *gamma,
                    float *dx, float *pgamma, int64_t n, double epsilon);

// OptimizerAvx2.cpp.
/// Sum of x[i]^2 over n floats, in double (8 lanes, then in order).
double sumSquares(const float *x, int64_t n);
/// AdamW's per-step constants, computed once per call (Optimizer.cpp).
struct AdamWConstants {
  float gradScale, beta1, beta2, oneMinusBeta1, oneMinusBeta2, decay, stepSize,
      invSqrtBc2, eps;
};
/// One chunk of AdamW (Optimizer.h's adamw, float parameters and grads).
void adamw(const float *param, const float *grad, const float *m,
           const float *v, float *newParam, float *newM, float *newV, int64_t n,
           const AdamWConstants &c);
} // namespace avx2

} // namespace autoshard::runtime::cpu::detail

#endif // AUTOSHARD_RUNTIME_LIB_CPU_VECMATH_H
