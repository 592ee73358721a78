//===- Moe.cu - Mixture-of-experts routing, dispatch and combine ----------===//
//
// Top-k softmax routing and its gradient, the Switch-Transformer
// load-balancing loss (Fedus, Zoph, Shazeer 2021) and capacity-based token
// permutation, with the CPU backend's slot rule (runtime/include/autoshard/
// runtime/cpu/Moe.h): within each sequence, (token, choice) pairs take their
// expert's next free slot in order, dropped beyond the capacity. Slots are
// assigned by one thread per sequence (the rule is sequential), then every
// copy / weighted sum runs one thread per element. Router math per token in
// double, at most 256 experts.
//
//===----------------------------------------------------------------------===//

#include "CudaCommon.h"
#include "DeviceMath.cuh"

#include <algorithm>

namespace autoshard::runtime::cuda::kernels {
namespace {

constexpr int kMaxExperts = 256;

template <typename T>
__device__ void softmaxRow(const T *x, int64_t e, double *p) {
  double m = -INFINITY;
  for (int64_t j = 0; j < e; ++j)
    m = fmax(m, double(toF(x[j])));
  double s = 0.0;
  for (int64_t j = 0; j < e; ++j) {
    p[j] = exp(double(toF(x[j])) - m);
    s += p[j];
  }
  for (int64_t j = 0; j < e; ++j)
    p[j] /= s;
}

/// dx = p * (dp - <p, dp>).
template <typename T>
__device__ void softmaxBackwardRow(const double *p, const double *dp, int64_t e,
                                   T *dx) {
  double dot = 0.0;
  for (int64_t j = 0; j < e; ++j)
    dot += p[j] * dp[j];
  for (int64_t j = 0; j < e; ++j)
    dx[j] = fromF<T>(static_cast<float>(p[j] * (dp[j] - dot)));
}

template <typename T, typename I>
__global__ void routerKernel(const T *logits, T *gates, I *ids, MoeDims s,
                             bool renorm) {
  AUTOSHARD_GRID_LOOP(t, s.batch * s.seq) {
    double p[kMaxExperts];
    bool taken[kMaxExperts];
    softmaxRow(logits + t * s.numExperts, s.numExperts, p);
    for (int64_t x = 0; x < s.numExperts; ++x)
      taken[x] = false;
    double total = 0.0;
    for (int64_t j = 0; j < s.topK; ++j) {
      int64_t best = -1;
      for (int64_t x = 0; x < s.numExperts; ++x)
        if (!taken[x] && (best < 0 || p[x] > p[best]))
          best = x;
      taken[best] = true;
      ids[t * s.topK + j] = static_cast<I>(best);
      total += p[best];
    }
    for (int64_t j = 0; j < s.topK; ++j) {
      double g = p[static_cast<int64_t>(ids[t * s.topK + j])];
      gates[t * s.topK + j] =
          fromF<T>(static_cast<float>(renorm ? g / total : g));
    }
  }
}

template <typename T, typename I>
__global__ void routerGradKernel(const T *dgates, const T *logits, const I *ids,
                                 T *dlogits, MoeDims s, bool renorm, int *err) {
  AUTOSHARD_GRID_LOOP(t, s.batch * s.seq) {
    double p[kMaxExperts], dp[kMaxExperts];
    const I *id = ids + t * s.topK;
    const T *dg = dgates + t * s.topK;
    bool bad = false;
    for (int64_t j = 0; j < s.topK; ++j)
      bad = bad || id[j] < 0 || id[j] >= s.numExperts;
    if (bad) {
      raise(err, kErrExpertId);
      continue;
    }
    softmaxRow(logits + t * s.numExperts, s.numExperts, p);
    for (int64_t x = 0; x < s.numExperts; ++x)
      dp[x] = 0.0;
    if (!renorm) {
      for (int64_t j = 0; j < s.topK; ++j)
        dp[id[j]] += toF(dg[j]);
    } else {
      double z = 0.0, dot = 0.0;
      for (int64_t j = 0; j < s.topK; ++j)
        z += p[id[j]];
      for (int64_t j = 0; j < s.topK; ++j)
        dot += toF(dg[j]) * p[id[j]] / z;
      for (int64_t j = 0; j < s.topK; ++j)
        dp[id[j]] += (toF(dg[j]) - dot) / z;
    }
    softmaxBackwardRow(p, dp, s.numExperts, dlogits + t * s.numExperts);
  }
}

/// frac[b, e] = (pairs of sequence b routed to e) / (seq * topK).
template <typename I>
__global__ void fractionsKernel(const I *ids, MoeDims s, double *frac,
                                int *err) {
  AUTOSHARD_GRID_LOOP(b, s.batch) {
    double *f = frac + b * s.numExperts;
    for (int64_t x = 0; x < s.numExperts; ++x)
      f[x] = 0.0;
    int64_t perSeq = s.seq * s.topK;
    for (int64_t c = b * perSeq; c < (b + 1) * perSeq; ++c) {
      int64_t e = static_cast<int64_t>(ids[c]);
      if (e < 0 || e >= s.numExperts) {
        raise(err, kErrExpertId);
        continue;
      }
      f[e] += 1.0 / double(perSeq);
    }
  }
}

/// perToken[t] = sum_e f[b, e] p[t, e].
template <typename T>
__global__ void auxLossTokenKernel(const T *logits, const double *frac,
                                   MoeDims s, double *perToken) {
  AUTOSHARD_GRID_LOOP(t, s.batch * s.seq) {
    double p[kMaxExperts];
    softmaxRow(logits + t * s.numExperts, s.numExperts, p);
    const double *f = frac + (t / s.seq) * s.numExperts;
    double v = 0.0;
    for (int64_t x = 0; x < s.numExperts; ++x)
      v += f[x] * p[x];
    perToken[t] = v;
  }
}

__global__ void scaledSumKernel(const double *x, int64_t n, double factor,
                                float *out) {
  __shared__ double shared[32];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    s += x[i];
  s = blockSum(s, shared);
  if (threadIdx.x == 0)
    *out = static_cast<float>(s * factor);
}

template <typename T>
__global__ void auxLossGradKernel(const float *dloss, const T *logits,
                                  const double *frac, MoeDims s, double factor,
                                  T *dlogits) {
  AUTOSHARD_GRID_LOOP(t, s.batch * s.seq) {
    double p[kMaxExperts], dp[kMaxExperts];
    double coef = double(*dloss) * factor;
    softmaxRow(logits + t * s.numExperts, s.numExperts, p);
    const double *f = frac + (t / s.seq) * s.numExperts;
    for (int64_t x = 0; x < s.numExperts; ++x)
      dp[x] = coef * f[x];
    softmaxBackwardRow(p, dp, s.numExperts, dlogits + t * s.numExperts);
  }
}

/// slots[c] = capacity slot of choice c or -1 (dropped / bad id).
template <typename I>
__global__ void slotsKernel(const I *ids, MoeDims s, int32_t *slots, int *err) {
  AUTOSHARD_GRID_LOOP(b, s.batch) {
    int32_t used[kMaxExperts];
    for (int64_t x = 0; x < s.numExperts; ++x)
      used[x] = 0;
    // Tokens in original order (row zigzagIndex(pos) holds position pos).
    for (int64_t pos = 0; pos < s.seq; ++pos) {
      int64_t t = zigzagIndex(pos, s.seq, s.zigzagChunks);
      for (int64_t j = 0; j < s.topK; ++j) {
        int64_t c = (b * s.seq + t) * s.topK + j;
        int64_t e = static_cast<int64_t>(ids[c]);
        if (e < 0 || e >= s.numExperts) {
          raise(err, kErrExpertId);
          slots[c] = -1;
          continue;
        }
        int32_t slot = used[e]++;
        slots[c] = slot < s.capacity ? slot : -1;
        if (s.dropless && slot >= s.capacity)
          raise(err, kErrMoeOverflow);
      }
    }
  }
}

__device__ __forceinline__ int64_t bufferRow(const MoeDims &s, int64_t expert,
                                             int64_t b, int64_t slot) {
  return ((expert * s.batch + b) * s.capacity + slot) * s.hidden;
}

/// Dispatch: buf[slot row] = x[token]; one thread per (choice, h).
template <typename T, typename I>
__global__ void dispatchKernel(const T *x, const I *ids, const int32_t *slots,
                               T *buf, MoeDims s) {
  AUTOSHARD_GRID_LOOP(e, s.batch * s.seq * s.topK * s.hidden) {
    int64_t c = e / s.hidden, h = e - c * s.hidden;
    int32_t slot = slots[c];
    if (slot < 0)
      continue;
    int64_t token = c / s.topK, b = token / s.seq;
    buf[bufferRow(s, static_cast<int64_t>(ids[c]), b, slot) + h] =
        x[token * s.hidden + h];
  }
}

/// dispatch_grad (gates null) / combine: y[token, h] = sum over kept choices
/// of (gate *) buf[slot row, h].
template <typename T, typename I>
__global__ void gatherKernel(const T *buf, const T *gates, const I *ids,
                             const int32_t *slots, T *y, MoeDims s) {
  AUTOSHARD_GRID_LOOP(e, s.batch * s.seq * s.hidden) {
    int64_t token = e / s.hidden, h = e - token * s.hidden;
    int64_t b = token / s.seq;
    float acc = 0.0f;
    for (int64_t j = 0; j < s.topK; ++j) {
      int64_t c = token * s.topK + j;
      int32_t slot = slots[c];
      if (slot < 0)
        continue;
      float v =
          toF(buf[bufferRow(s, static_cast<int64_t>(ids[c]), b, slot) + h]);
      acc += gates ? toF(gates[c]) * v : v;
    }
    y[e] = fromF<T>(acc);
  }
}

/// combine_grad: dbuf[slot row] = gate * dy[token]; one thread per
/// (choice, h).
template <typename T, typename I>
__global__ void combineGradBufKernel(const T *dy, const T *gates, const I *ids,
                                     const int32_t *slots, T *dbuf, MoeDims s) {
  AUTOSHARD_GRID_LOOP(e, s.batch * s.seq * s.topK * s.hidden) {
    int64_t c = e / s.hidden, h = e - c * s.hidden;
    int32_t slot = slots[c];
    if (slot < 0)
      continue;
    int64_t token = c / s.topK, b = token / s.seq;
    dbuf[bufferRow(s, static_cast<int64_t>(ids[c]), b, slot) + h] =
        fromF<T>(toF(gates[c]) * toF(dy[token * s.hidden + h]));
  }
}

/// dgates[c] = <dy[token], buf[slot row]>; one warp per choice.
template <typename T, typename I>
__global__ void combineGradGateKernel(const T *dy, const T *buf, const I *ids,
                                      const int32_t *slots, T *dgates,
                                      MoeDims s) {
  int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  int lane = threadIdx.x & 31;
  int64_t choices = s.batch * s.seq * s.topK;
  if (warp >= choices)
    return;
  int32_t slot = slots[warp];
  float dot = 0.0f;
  if (slot >= 0) {
    int64_t token = warp / s.topK, b = token / s.seq;
    const T *row = buf + bufferRow(s, static_cast<int64_t>(ids[warp]), b, slot);
    for (int64_t h = lane; h < s.hidden; h += 32)
      dot += toF(dy[token * s.hidden + h]) * toF(row[h]);
  }
  dot = warpSum(dot);
  if (lane == 0)
    dgates[warp] = fromF<T>(dot);
}

//===----------------------------------------------------------------------===//
// Binders
//===----------------------------------------------------------------------===//

/// The kernels' limit on the experts (a per-thread array), for the ops
/// with logits.
void expectLogitsLimit(const KernelSignature &sig, const MoeDims &s) {
  if (s.numExperts > kMaxExperts)
    sig.fail("the cuda backend routes at most " + std::to_string(kMaxExperts) +
             " experts, found " + std::to_string(s.numExperts));
}

/// The kernels' limits for the ops with an expert buffer.
void expectBufferLimits(const KernelSignature &sig, const MoeDims &s) {
  if (s.numExperts > kMaxExperts)
    sig.fail("the cuda backend routes at most " + std::to_string(kMaxExperts) +
             " experts");
  if (s.capacity < 1)
    sig.fail("capacity must be >= 1");
}

/// Runs the slot assignment into `slots` (one int32 per choice).
template <typename I>
void assignSlots(cudaStream_t st, const I *ids, const MoeDims &s,
                 int32_t *slots, int *err) {
  slotsKernel<I><<<gridFor(s.batch, 64), 64, 0, st>>>(ids, s, slots, err);
  AUTOSHARD_CUDA_LAUNCHED();
}

/// moe_aux_loss (`Grad`: moe_aux_loss_grad).
template <typename Op, bool Grad>
BoundKernel bindAuxLoss(const KernelSignature &sig) {
  MoeDims s = Grad ? checkMoeAuxLossGrad(sig) : checkMoeAuxLoss(sig);
  expectLogitsLimit(sig, s);
  if (s.batch < 1 || s.seq < 1)
    sig.fail("needs batch >= 1 and seq >= 1");
  const CudaContext &ctx = currentContext();
  cudaStream_t st = ctx.stream;
  int *err = ctx.errorWord;
  Scratch frac = scratch(s.batch * s.numExperts * sizeof(double));
  Scratch perToken = scratch(Grad ? 0 : s.batch * s.seq * sizeof(double));
  double factor = double(s.numExperts) / double(s.seq * s.batch);
  return bindMoe<Op>(
      sig, withFloat, Op::logits, [=](auto t, auto i, Operands o) {
        using T = decltype(t);
        int64_t tokens = s.batch * s.seq;
        fractionsKernel<decltype(i)><<<gridFor(s.batch, 64), 64, 0, st>>>(
            o.in(Op::expert_ids, i), s, frac->as<double>(), err);
        AUTOSHARD_CUDA_LAUNCHED();
        if constexpr (Grad) {
          auxLossGradKernel<T><<<gridFor(tokens, 128), 128, 0, st>>>(
              o.in<float>(Op::dloss), o.in(Op::logits, t), frac->as<double>(),
              s, factor, o.out(Op::dlogits, t));
        } else {
          auxLossTokenKernel<T><<<gridFor(tokens, 128), 128, 0, st>>>(
              o.in(Op::logits, t), frac->as<double>(), s,
              perToken->as<double>());
          AUTOSHARD_CUDA_LAUNCHED();
          scaledSumKernel<<<1, 1024, 0, st>>>(perToken->as<double>(), tokens,
                                              factor, o.out<float>(Op::loss));
        }
        AUTOSHARD_CUDA_LAUNCHED();
      });
}

} // namespace

template <> BoundKernel bind<ops::MoeRouter>(const KernelSignature &sig) {
  using Op = ops::MoeRouter;
  MoeDims s = checkMoeRouter(sig);
  expectLogitsLimit(sig, s);
  bool renorm = s.renormalize;
  cudaStream_t st = currentContext().stream;
  return bindMoe<Op>(sig, withFloat, Op::logits,
                     [=](auto t, auto i, Operands o) {
                       if (s.batch * s.seq == 0)
                         return;
                       routerKernel<decltype(t), decltype(i)>
                           <<<gridFor(s.batch * s.seq, 128), 128, 0, st>>>(
                               o.in(Op::logits, t), o.out(Op::gates, t),
                               o.out(Op::expert_ids, i), s, renorm);
                       AUTOSHARD_CUDA_LAUNCHED();
                     });
}

template <> BoundKernel bind<ops::MoeRouterGrad>(const KernelSignature &sig) {
  using Op = ops::MoeRouterGrad;
  MoeDims s = checkMoeRouterGrad(sig);
  expectLogitsLimit(sig, s);
  bool renorm = s.renormalize;
  const CudaContext &ctx = currentContext();
  cudaStream_t st = ctx.stream;
  int *err = ctx.errorWord;
  return bindMoe<Op>(
      sig, withFloat, Op::logits, [=](auto t, auto i, Operands o) {
        if (s.batch * s.seq == 0)
          return;
        routerGradKernel<decltype(t), decltype(i)>
            <<<gridFor(s.batch * s.seq, 128), 128, 0, st>>>(
                o.in(Op::dgates, t), o.in(Op::logits, t),
                o.in(Op::expert_ids, i), o.out(Op::dlogits, t), s, renorm, err);
        AUTOSHARD_CUDA_LAUNCHED();
      });
}

template <> BoundKernel bind<ops::MoeAuxLoss>(const KernelSignature &sig) {
  return bindAuxLoss<ops::MoeAuxLoss, false>(sig);
}

template <> BoundKernel bind<ops::MoeAuxLossGrad>(const KernelSignature &sig) {
  return bindAuxLoss<ops::MoeAuxLossGrad, true>(sig);
}

template <> BoundKernel bind<ops::MoeDispatch>(const KernelSignature &sig) {
  using Op = ops::MoeDispatch;
  const TensorType &ids = sig.arg(Op::expert_ids);
  MoeDims s = checkMoeDispatch(sig);
  expectBufferLimits(sig, s);
  const CudaContext &ctx = currentContext();
  cudaStream_t st = ctx.stream;
  int *err = ctx.errorWord;
  Scratch slots = scratch(std::max<int64_t>(ids.numel(), 1) * 4);
  int64_t bufBytes = sig.result(Op::buf).bytes();
  return bindMoe<Op>(sig, withFloat, Op::x, [=](auto t, auto i, Operands o) {
    AUTOSHARD_CUDA(cudaMemsetAsync(o[Op::buf], 0, bufBytes, st));
    int64_t n = s.batch * s.seq * s.topK * s.hidden;
    if (n == 0)
      return;
    assignSlots(st, o.in(Op::expert_ids, i), s, slots->as<int32_t>(), err);
    launchGridLoop(n, st, dispatchKernel<decltype(t), decltype(i)>,
                   o.in(Op::x, t), o.in(Op::expert_ids, i),
                   slots->as<int32_t>(), o.out(Op::buf, t), s);
  });
}

template <> BoundKernel bind<ops::MoeDispatchGrad>(const KernelSignature &sig) {
  using Op = ops::MoeDispatchGrad;
  const TensorType &ids = sig.arg(Op::expert_ids);
  MoeDims s = checkMoeDispatchGrad(sig);
  expectBufferLimits(sig, s);
  const CudaContext &ctx = currentContext();
  cudaStream_t st = ctx.stream;
  int *err = ctx.errorWord;
  Scratch slots = scratch(std::max<int64_t>(ids.numel(), 1) * 4);
  return bindMoe<Op>(sig, withFloat, Op::dbuf, [=](auto t, auto i, Operands o) {
    int64_t n = s.batch * s.seq * s.hidden;
    if (n == 0)
      return;
    assignSlots(st, o.in(Op::expert_ids, i), s, slots->as<int32_t>(), err);
    launchGridLoop(n, st, gatherKernel<decltype(t), decltype(i)>,
                   o.in(Op::dbuf, t), nullptr, o.in(Op::expert_ids, i),
                   slots->as<int32_t>(), o.out(Op::dx, t), s);
  });
}

template <> BoundKernel bind<ops::MoeCombine>(const KernelSignature &sig) {
  using Op = ops::MoeCombine;
  MoeDims s = checkMoeCombine(sig);
  expectBufferLimits(sig, s);
  const CudaContext &ctx = currentContext();
  cudaStream_t st = ctx.stream;
  int *err = ctx.errorWord;
  Scratch slots =
      scratch(std::max<int64_t>(sig.arg(Op::expert_ids).numel(), 1) * 4);
  return bindMoe<Op>(sig, withFloat, Op::buf, [=](auto t, auto i, Operands o) {
    int64_t n = s.batch * s.seq * s.hidden;
    if (n == 0)
      return;
    assignSlots(st, o.in(Op::expert_ids, i), s, slots->as<int32_t>(), err);
    launchGridLoop(n, st, gatherKernel<decltype(t), decltype(i)>,
                   o.in(Op::buf, t), o.in(Op::gates, t),
                   o.in(Op::expert_ids, i), slots->as<int32_t>(),
                   o.out(Op::y, t), s);
  });
}

template <> BoundKernel bind<ops::MoeCombineGrad>(const KernelSignature &sig) {
  using Op = ops::MoeCombineGrad;
  MoeDims s = checkMoeCombineGrad(sig);
  expectBufferLimits(sig, s);
  const TensorType &buf = sig.arg(Op::buf);
  const CudaContext &ctx = currentContext();
  cudaStream_t st = ctx.stream;
  int *err = ctx.errorWord;
  Scratch slots =
      scratch(std::max<int64_t>(sig.arg(Op::expert_ids).numel(), 1) * 4);
  int64_t bufBytes = buf.bytes();
  return bindMoe<Op>(sig, withFloat, Op::buf, [=](auto t, auto i, Operands o) {
    using T = decltype(t);
    using I = decltype(i);
    AUTOSHARD_CUDA(cudaMemsetAsync(o[Op::dbuf], 0, bufBytes, st));
    int64_t choices = s.batch * s.seq * s.topK;
    if (choices == 0)
      return;
    assignSlots(st, o.in(Op::expert_ids, i), s, slots->as<int32_t>(), err);
    launchGridLoop(choices * s.hidden, st, combineGradBufKernel<T, I>,
                   o.in(Op::dy, t), o.in(Op::gates, t), o.in(Op::expert_ids, i),
                   slots->as<int32_t>(), o.out(Op::dbuf, t), s);
    combineGradGateKernel<T, I><<<gridFor(choices * 32, 256), 256, 0, st>>>(
        o.in(Op::dy, t), o.in(Op::buf, t), o.in(Op::expert_ids, i),
        slots->as<int32_t>(), o.out(Op::dgates, t), s);
    AUTOSHARD_CUDA_LAUNCHED();
  });
}

void registerMoeKernels(KernelTable &t) {
  addBinders<ops::MoeRouter, ops::MoeRouterGrad, ops::MoeAuxLoss,
             ops::MoeAuxLossGrad, ops::MoeDispatch, ops::MoeDispatchGrad,
             ops::MoeCombine, ops::MoeCombineGrad>(t);
}

} // namespace autoshard::runtime::cuda::kernels
