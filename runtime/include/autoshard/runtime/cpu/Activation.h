//===- Activation.h - CPU activation kernels --------------------*- C++ -*-===//
//
// Elementwise activations over `numel` contiguous elements, and their
// gradients (dx = dy * f'(x)).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_CPU_ACTIVATION_H
#define AUTOSHARD_RUNTIME_CPU_ACTIVATION_H

#include <cstdint>

namespace autoshard::runtime::cpu {

/// tfm.gelu (Hendrycks, Gimpel 2016). Exact: y = x * Phi(x) =
/// 0.5 x (1 + erf(x / sqrt 2)). With tanhApprox (GPT-2's "gelu_new"):
/// y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <typename T>
void gelu(const T *x, T *y, int64_t numel, bool tanhApprox);

/// tfm.gelu_grad: dx = dy * gelu'(x) for the same variant as gelu().
template <typename T>
void geluGrad(const T *dy, const T *x, T *dx, int64_t numel, bool tanhApprox);

/// tfm.silu (Elfwing et al. 2017, "swish"): y = x * sigmoid(x).
template <typename T> void silu(const T *x, T *y, int64_t numel);

/// tfm.silu_grad: dx = dy * s * (1 + x (1 - s)), s = sigmoid(x).
template <typename T>
void siluGrad(const T *dy, const T *x, T *dx, int64_t numel);

/// tfm.swiglu (Shazeer 2020, "GLU Variants Improve Transformer"):
/// y = silu(gate) * up, all of the same shape.
template <typename T>
void swiglu(const T *gate, const T *up, T *y, int64_t numel);

/// tfm.swiglu_grad: dgate = dy * up * silu'(gate), dup = dy * silu(gate).
template <typename T>
void swigluGrad(const T *dy, const T *gate, const T *up, T *dgate, T *dup,
                int64_t numel);

} // namespace autoshard::runtime::cpu

#endif // AUTOSHARD_RUNTIME_CPU_ACTIVATION_H
