//===- Optimizer.h - CPU gradient clipping and AdamW kernels ----*- C++ -*-===//

#ifndef AUTOSHARD_RUNTIME_CPU_OPTIMIZER_H
#define AUTOSHARD_RUNTIME_CPU_OPTIMIZER_H

#include <cstdint>

namespace autoshard::runtime::cpu {

/// tfm.sum_squares of one tensor: sum of x[i]^2 over `numel` elements,
/// accumulated in double. The variadic op is the sum over its operands.
template <typename T> double sumSquares(const T *x, int64_t numel);

/// Result of tfm.clip_coef.
struct ClipCoef {
  double coef;
  double norm;
};

/// tfm.clip_coef (global-norm clipping as torch.nn.utils.clip_grad_norm_):
/// norm = sqrt(sumsq), coef = min(1, maxNorm / (norm + 1e-6)); a NaN sumsq
/// gives NaN for both (a diverged step, reported by shard-run). Throws
/// std::invalid_argument unless maxNorm > 0 and sumsq is >= 0 or NaN.
ClipCoef clipCoef(double sumsq, double maxNorm);

/// Scalars and attributes of tfm.adamw. step is 1-based (bias correction);
/// gradScale multiplies the gradient first (the clip coefficient).
struct AdamWParams {
  double lr = 0.0;
  int64_t step = 1;
  double gradScale = 1.0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weightDecay = 0.0;
};

/// tfm.adamw (Loshchilov, Hutter 2019, decoupled weight decay; the update of
/// torch.optim.AdamW): g = gradScale * grad, m' = b1 m + (1 - b1) g,
/// v' = b2 v + (1 - b2) g^2, p' = p - lr * wd * p - lr * (m' / (1 - b1^t)) /
/// (sqrt(v' / (1 - b2^t)) + eps). The caller disables decay for a tensor by
/// passing weightDecay = 0. Outputs may alias the matching inputs (in-place
/// update). Throws std::invalid_argument when step < 1.
template <typename T, typename G>
void adamw(const T *param, const G *grad, const T *m, const T *v, T *newParam,
           T *newM, T *newV, int64_t numel, const AdamWParams &params);

} // namespace autoshard::runtime::cpu

#endif // AUTOSHARD_RUNTIME_CPU_OPTIMIZER_H
