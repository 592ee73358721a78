//===- Optimizer.cu - Global gradient norm and AdamW ----------------------===//
//
// sum_squares (variadic) accumulates every operand's sum of squares into one
// device double (block reductions + one double atomic per block), clip_coef
// is a one-thread kernel, and AdamW (Loshchilov, Hutter 2019; the update of
// torch.optim.AdamW) is elementwise with lr, step and grad_scale read from
// device memory; bf16 parameters and states are updated in fp32 and rounded
// once. Semantics as runtime/include/autoshard/runtime/cpu/Optimizer.h.
//
//===----------------------------------------------------------------------===//

#include "CudaCommon.h"
#include "DeviceMath.cuh"

#include <algorithm>

namespace autoshard::runtime::cuda::kernels {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void sumSquaresKernel(const T *x, int64_t n, double *acc) {
  __shared__ double shared[32];
  double s = 0.0;
  AUTOSHARD_GRID_LOOP(i, n) {
    double v = toF(x[i]);
    s += v * v;
  }
  s = blockSum(s, shared);
  if (threadIdx.x == 0)
    atomicAdd(acc, s);
}

__global__ void storeFloatKernel(const double *acc, float *out) {
  *out = static_cast<float>(*acc);
}

} // namespace

template <> BoundKernel bind<ops::SumSquares>(const KernelSignature &sig) {
  using Op = ops::SumSquares;
  std::vector<SumSquaresTerm> terms = checkSumSquares(sig, DType::BF16, "cuda");
  const CudaContext &ctx = currentContext();
  cudaStream_t s = ctx.stream;
  unsigned maxBlocks = static_cast<unsigned>(ctx.numSMs) * 4;
  Scratch acc = scratch(sizeof(double));
  return bindOperands(sig, [=](Operands o) {
    AUTOSHARD_CUDA(cudaMemsetAsync(acc->data(), 0, sizeof(double), s));
    for (size_t i = 0; i < terms.size(); ++i) {
      if (terms[i].numel == 0)
        continue;
      unsigned blocks = std::min(gridFor(terms[i].numel, kThreads), maxBlocks);
      void *term = o.at(Op::inputs, static_cast<int>(i));
      if (terms[i].dtype == DType::BF16)
        sumSquaresKernel<<<blocks, kThreads, 0, s>>>(
            in<bf16>(term), terms[i].numel, acc->as<double>());
      else
        sumSquaresKernel<<<blocks, kThreads, 0, s>>>(
            in<float>(term), terms[i].numel, acc->as<double>());
      AUTOSHARD_CUDA_LAUNCHED();
    }
    storeFloatKernel<<<1, 1, 0, s>>>(acc->as<double>(),
                                     o.out<float>(Op::result));
    AUTOSHARD_CUDA_LAUNCHED();
  });
}

namespace {

/// norm = sqrt(sumsq), coef = min(1, maxNorm / (norm + 1e-6)); NaN stays
/// NaN in both (fmax/fmin would drop it), so that shard-run sees the
/// diverged step in grad_norm.
__global__ void clipCoefKernel(const float *sumsq, double maxNorm, float *coef,
                               float *norm) {
  double s = double(*sumsq);
  double n = s != s ? s : sqrt(fmax(s, 0.0));
  *coef = static_cast<float>(n != n ? n : fmin(1.0, maxNorm / (n + 1e-6)));
  *norm = static_cast<float>(n);
}

} // namespace

template <> BoundKernel bind<ops::ClipCoef>(const KernelSignature &sig) {
  using Op = ops::ClipCoef;
  double maxNorm = checkClipCoef(sig);
  cudaStream_t s = currentContext().stream;
  return bindOperands(sig, [=](Operands o) {
    clipCoefKernel<<<1, 1, 0, s>>>(o.in<float>(Op::sumsq), maxNorm,
                                   o.out<float>(Op::coef),
                                   o.out<float>(Op::norm));
    AUTOSHARD_CUDA_LAUNCHED();
  });
}

namespace {

template <typename T>
__global__ void adamwKernel(const T *param, const T *grad, const T *m,
                            const T *v, T *newParam, T *newM, T *newV,
                            int64_t n, const float *lr, const int64_t *step,
                            const float *gradScale, AdamwShape a, int *err) {
  // Per-step constants, as the CPU kernel computes them (in double).
  __shared__ float c[4]; // decay, stepSize, invSqrtBc2, gradScale
  if (threadIdx.x == 0) {
    int64_t t = *step;
    if (t < 1) {
      raise(err, kErrAdamStep);
      t = 1;
    }
    double l = *lr;
    c[0] = static_cast<float>(1.0 - l * a.weightDecay);
    c[1] = static_cast<float>(l / (1.0 - pow(a.beta1, double(t))));
    c[2] = static_cast<float>(1.0 / sqrt(1.0 - pow(a.beta2, double(t))));
    c[3] = *gradScale;
  }
  __syncthreads();
  const float decay = c[0], stepSize = c[1], invSqrtBc2 = c[2], gs = c[3];
  const float b1 = static_cast<float>(a.beta1),
              b2 = static_cast<float>(a.beta2);
  const float omb1 = static_cast<float>(1.0 - a.beta1);
  const float omb2 = static_cast<float>(1.0 - a.beta2);
  const float eps = static_cast<float>(a.epsilon);
  AUTOSHARD_GRID_LOOP(i, n) {
    float g = toF(grad[i]) * gs;
    float mi = b1 * toF(m[i]) + omb1 * g;
    float vi = b2 * toF(v[i]) + omb2 * g * g;
    float denom = sqrtf(vi) * invSqrtBc2 + eps;
    newParam[i] = fromF<T>(toF(param[i]) * decay - stepSize * mi / denom);
    newM[i] = fromF<T>(mi);
    newV[i] = fromF<T>(vi);
  }
}

} // namespace

template <> BoundKernel bind<ops::Adamw>(const KernelSignature &sig) {
  using Op = ops::Adamw;
  AdamwShape a = checkAdamw(sig);
  int64_t n = a.numel;
  const CudaContext &ctx = currentContext();
  cudaStream_t s = ctx.stream;
  int *err = ctx.errorWord;
  unsigned maxBlocks = static_cast<unsigned>(ctx.numSMs) * 8;
  return withFloat.bind(sig, Op::param, [=](auto t, Operands o) {
    using T = decltype(t);
    if (n == 0)
      return;
    unsigned blocks = std::min(gridFor(n, kThreads), maxBlocks);
    adamwKernel<T><<<blocks, kThreads, 0, s>>>(
        o.in(Op::param, t), o.in(Op::grad, t), o.in(Op::m, t), o.in(Op::v, t),
        o.out(Op::new_param, t), o.out(Op::new_m, t), o.out(Op::new_v, t), n,
        o.in<float>(Op::lr), o.in<int64_t>(Op::step),
        o.in<float>(Op::grad_scale), a, err);
    AUTOSHARD_CUDA_LAUNCHED();
  });
}

void registerOptimizerKernels(KernelTable &t) {
  addBinders<ops::SumSquares, ops::ClipCoef, ops::Adamw>(t);
}

} // namespace autoshard::runtime::cuda::kernels
