//===- Activation.cpp - CPU activation kernels ----------------------------===//

#include "autoshard/runtime/cpu/Activation.h"

#include "Check.h"
#include "Instantiate.h"
#include "OneDnnEltwise.h"
#include "Parallel.h"
#include "VecMath.h"

#include <cmath>
#include <type_traits>

namespace autoshard::runtime::cpu {
namespace {

constexpr double kSqrtHalf = 0.70710678118654752440;    // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr double kSqrt2OverPi = 0.79788456080286535588; // sqrt(2 / pi)
constexpr double kGeluTanhCubic = 0.044715;

using detail::kElementwiseGrain;
using detail::parallelChunks;

/// y[i] = f(x[i]); the functor is inlined, no per-element indirect call.
template <typename T, typename F>
void mapUnary(const char *op, const T *x, T *y, int64_t numel, F f) {
  detail::checkAtLeast(op, "numel", numel, 0);
  parallelChunks(numel, kElementwiseGrain, [&](int64_t, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      y[i] = f(x[i]);
  });
}

/// dx[i] = dy[i] * f'(x[i]).
template <typename T, typename F>
void mapGrad(const char *op, const T *dy, const T *x, T *dx, int64_t numel,
             F derivative) {
  detail::checkAtLeast(op, "numel", numel, 0);
  parallelChunks(numel, kElementwiseGrain, [&](int64_t, int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      dx[i] = dy[i] * derivative(x[i]);
  });
}

/// Runs the vector loop vec(offset, count) over the chunks of [0, numel).
template <typename V> void vectorChunks(const char *op, int64_t numel, V vec) {
  detail::checkAtLeast(op, "numel", numel, 0);
  parallelChunks(numel, kElementwiseGrain,
                 [&](int64_t, int64_t b, int64_t e) { vec(b, e - b); });
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

// With s = sigmoid(2u): 0.5 (1 + tanh u) = s and 1 - tanh^2 u = 4 s (1 - s),
// which do not cancel for u << 0 (the tanh form loses all digits in float
// there).
template <typename T> T geluTanh(T x) {
  const T inner = T(kSqrt2OverPi) * (x + T(kGeluTanhCubic) * x * x * x);
  return x * sigmoid(T(2) * inner);
}

template <typename T> T geluTanhDerivative(T x) {
  const T inner = T(kSqrt2OverPi) * (x + T(kGeluTanhCubic) * x * x * x);
  const T s = sigmoid(T(2) * inner);
  const T dInner = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluTanhCubic) * x * x);
  return s + T(2) * x * s * (T(1) - s) * dInner;
}

/// Runs the float SLEEF loop `loop(offset, count)` over the chunks of
/// [0, numel) and returns true when T is float and this build and CPU have
/// AVX2 + FMA; otherwise does nothing and returns false. `loop` takes `auto`
/// offsets so that its body is instantiated only for float.
template <typename T, typename L>
bool vectorLoop(const char *op, int64_t numel, L loop) {
#if AUTOSHARD_HAVE_SLEEF_AVX2
  if constexpr (std::is_same_v<T, float>) {
    if (detail::hasAvx2Fma()) {
      vectorChunks(op, numel, loop);
      return true;
    }
  }
#endif
  (void)op, (void)numel, (void)loop;
  return false;
}

} // namespace

template <typename T>
void gelu(const T *x, T *y, int64_t numel, bool tanhApprox) {
  detail::checkAtLeast("gelu", "numel", numel, 0);
#if AUTOSHARD_HAVE_ONEDNN
  if constexpr (std::is_same_v<T, float>)
    if (!tanhApprox && detail::hasOneDnn())
      return detail::oneDnnGeluErf(x, y, numel);
#endif
  if (vectorLoop<T>("gelu", numel, [&](auto at, int64_t n) {
        (tanhApprox ? detail::avx2::geluTanh
                    : detail::avx2::geluExact)(x + at, y + at, n);
      }))
    return;
  if (tanhApprox)
    mapUnary("gelu", x, y, numel, geluTanh<T>);
  else
    mapUnary("gelu", x, y, numel, geluExact<T>);
}

template <typename T>
void geluGrad(const T *dy, const T *x, T *dx, int64_t numel, bool tanhApprox) {
  detail::checkAtLeast("gelu_grad", "numel", numel, 0);
#if AUTOSHARD_HAVE_ONEDNN
  if constexpr (std::is_same_v<T, float>)
    if (!tanhApprox && detail::hasOneDnn())
      return detail::oneDnnGeluErfGrad(dy, x, dx, numel);
#endif
  if (vectorLoop<T>("gelu_grad", numel, [&](auto at, int64_t n) {
        (tanhApprox ? detail::avx2::geluTanhGrad
                    : detail::avx2::geluExactGrad)(dy + at, x + at, dx + at, n);
      }))
    return;
  if (tanhApprox)
    mapGrad("gelu_grad", dy, x, dx, numel, geluTanhDerivative<T>);
  else
    mapGrad("gelu_grad", dy, x, dx, numel, geluExactDerivative<T>);
}

template <typename T> void silu(const T *x, T *y, int64_t numel) {
  if (vectorLoop<T>("silu", numel, [&](auto at, int64_t n) {
        detail::avx2::silu(x + at, y + at, n);
      }))
    return;
  mapUnary("silu", x, y, numel, siluValue<T>);
}

template <typename T>
void siluGrad(const T *dy, const T *x, T *dx, int64_t numel) {
  if (vectorLoop<T>("silu_grad", numel, [&](auto at, int64_t n) {
        detail::avx2::siluGrad(dy + at, x + at, dx + at, n);
      }))
    return;
  mapGrad("silu_grad", dy, x, dx, numel, siluDerivative<T>);
}

template <typename T>
void swiglu(const T *gate, const T *up, T *y, int64_t numel) {
  if (vectorLoop<T>("swiglu", numel, [&](auto at, int64_t n) {
        detail::avx2::swiglu(gate + at, up + at, y + at, n);
      }))
    return;
  vectorChunks("swiglu", numel, [&](int64_t at, int64_t n) {
    for (int64_t i = at; i < at + n; ++i)
      y[i] = siluValue(gate[i]) * up[i];
  });
}

template <typename T>
void swigluGrad(const T *dy, const T *gate, const T *up, T *dgate, T *dup,
                int64_t numel) {
  if (vectorLoop<T>("swiglu_grad", numel, [&](auto at, int64_t n) {
        detail::avx2::swigluGrad(dy + at, gate + at, up + at, dgate + at,
                                 dup + at, n);
      }))
    return;
  vectorChunks("swiglu_grad", numel, [&](int64_t at, int64_t n) {
    for (int64_t i = at; i < at + n; ++i) {
      const T g = gate[i];
      const T d = dy[i];
      dgate[i] = d * up[i] * siluDerivative(g);
      dup[i] = d * siluValue(g);
    }
  });
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
