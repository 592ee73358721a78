//===- Activation.cpp - CPU activation kernels ----------------------------===//

#include "autoshard/runtime/cpu/Activation.h"

#include "Check.h"
#include "Instantiate.h"

#include <cmath>

namespace autoshard::runtime::cpu {
namespace {

constexpr double kSqrtHalf = 0.70710678118654752440;    // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr double kSqrt2OverPi = 0.79788456080286535588; // sqrt(2 / pi)
constexpr double kGeluTanhCubic = 0.044715;

/// y[i] = f(x[i]); the functor is inlined, no per-element indirect call.
template <typename T, typename F>
void mapUnary(const char *op, const T *x, T *y, int64_t numel, F f) {
  detail::checkAtLeast(op, "numel", numel, 0);
  for (int64_t i = 0; i < numel; ++i)
    y[i] = f(x[i]);
}

/// dx[i] = dy[i] * f'(x[i]).
template <typename T, typename F>
void mapGrad(const char *op, const T *dy, const T *x, T *dx, int64_t numel,
             F derivative) {
  detail::checkAtLeast(op, "numel", numel, 0);
  for (int64_t i = 0; i < numel; ++i)
    dx[i] = dy[i] * derivative(x[i]);
}

template <typename T> T sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }

template <typename T> T siluValue(T x) { return x * sigmoid(x); }

template <typename T> T siluDerivative(T x) {
  const T s = sigmoid(x);
  return s * (T(1) + x * (T(1) - s));
}

template <typename T> T geluExact(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * T(kSqrtHalf)));
}

template <typename T> T geluExactDerivative(T x) {
  const T cdf = T(0.5) * (T(1) + std::erf(x * T(kSqrtHalf)));
  const T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * x * x);
  return cdf + x * pdf;
}

template <typename T> T geluTanh(T x) {
  const T inner = T(kSqrt2OverPi) * (x + T(kGeluTanhCubic) * x * x * x);
  return T(0.5) * x * (T(1) + std::tanh(inner));
}

template <typename T> T geluTanhDerivative(T x) {
  const T inner = T(kSqrt2OverPi) * (x + T(kGeluTanhCubic) * x * x * x);
  const T t = std::tanh(inner);
  const T dInner = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluTanhCubic) * x * x);
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * dInner;
}

} // namespace

template <typename T>
void gelu(const T *x, T *y, int64_t numel, bool tanhApprox) {
  if (tanhApprox)
    mapUnary("gelu", x, y, numel, geluTanh<T>);
  else
    mapUnary("gelu", x, y, numel, geluExact<T>);
}

template <typename T>
void geluGrad(const T *dy, const T *x, T *dx, int64_t numel, bool tanhApprox) {
  if (tanhApprox)
    mapGrad("gelu_grad", dy, x, dx, numel, geluTanhDerivative<T>);
  else
    mapGrad("gelu_grad", dy, x, dx, numel, geluExactDerivative<T>);
}

template <typename T> void silu(const T *x, T *y, int64_t numel) {
  mapUnary("silu", x, y, numel, siluValue<T>);
}

template <typename T>
void siluGrad(const T *dy, const T *x, T *dx, int64_t numel) {
  mapGrad("silu_grad", dy, x, dx, numel, siluDerivative<T>);
}

template <typename T>
void swiglu(const T *gate, const T *up, T *y, int64_t numel) {
  detail::checkAtLeast("swiglu", "numel", numel, 0);
  for (int64_t i = 0; i < numel; ++i)
    y[i] = siluValue(gate[i]) * up[i];
}

template <typename T>
void swigluGrad(const T *dy, const T *gate, const T *up, T *dgate, T *dup,
                int64_t numel) {
  detail::checkAtLeast("swiglu_grad", "numel", numel, 0);
  for (int64_t i = 0; i < numel; ++i) {
    const T g = gate[i];
    const T d = dy[i];
    dgate[i] = d * up[i] * siluDerivative(g);
    dup[i] = d * siluValue(g);
  }
}

#define INSTANTIATE(T)                                                         \
  template void gelu<T>(const T *, T *, int64_t, bool);                        \
  template void geluGrad<T>(const T *, const T *, T *, int64_t, bool);         \
  template void silu<T>(const T *, T *, int64_t);                              \
  template void siluGrad<T>(const T *, const T *, T *, int64_t);               \
  template void swiglu<T>(const T *, const T *, T *, int64_t);                 \
  template void swigluGrad<T>(const T *, const T *, const T *, T *, T *,       \
                              int64_t);
AUTOSHARD_FOR_EACH_FLOAT(INSTANTIATE)

} // namespace autoshard::runtime::cpu
