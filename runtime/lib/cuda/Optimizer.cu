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

BoundKernel bindSumSquares(const KernelSignature &sig) {
  std::vector<SumSquaresTerm> terms = checkSumSquares(sig, DType::BF16, "cuda");
  const CudaContext &ctx = currentContext();
  cudaStream_t s = ctx.stream;
  unsigned maxBlocks = static_cast<unsigned>(ctx.numSMs) * 4;
  Scratch acc = scratch(sizeof(double));
  size_t result = terms.size();
  return [=](void *const *p) {
    AUTOSHARD_CUDA(cudaMemsetAsync(acc->data(), 0, sizeof(double), s));
    for (size_t i = 0; i < terms.size(); ++i) {
      if (terms[i].numel == 0)
        continue;
      unsigned blocks = std::min(gridFor(terms[i].numel, kThreads), maxBlocks);
      if (terms[i].dtype == DType::BF16)
        sumSquaresKernel<<<blocks, kThreads, 0, s>>>(
            in<bf16>(p[i]), terms[i].numel, acc->as<double>());
      else
        sumSquaresKernel<<<blocks, kThreads, 0, s>>>(
            in<float>(p[i]), terms[i].numel, acc->as<double>());
      AUTOSHARD_CUDA_LAUNCHED();
    }
    storeFloatKernel<<<1, 1, 0, s>>>(acc->as<double>(), out<float>(p[result]));
    AUTOSHARD_CUDA_LAUNCHED();
  };
}

/// norm = sqrt(sumsq), coef = min(1, maxNorm / (norm + 1e-6)).
__global__ void clipCoefKernel(const float *sumsq, double maxNorm, float *coef,
                               float *norm) {
  double n = sqrt(fmax(double(*sumsq), 0.0));
  *coef = static_cast<float>(fmin(1.0, maxNorm / (n + 1e-6)));
  *norm = static_cast<float>(n);
}

BoundKernel bindClipCoef(const KernelSignature &sig) {
  using Op = ops::ClipCoef;
  OperandIndex at(sig);
  double maxNorm = checkClipCoef(sig);
  cudaStream_t s = currentContext().stream;
  return [=](void *const *p) {
    clipCoefKernel<<<1, 1, 0, s>>>(in<float>(p[at(Op::sumsq)]), maxNorm,
                                   out<float>(p[at(Op::coef)]),
                                   out<float>(p[at(Op::norm)]));
    AUTOSHARD_CUDA_LAUNCHED();
  };
}

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

BoundKernel bindAdamw(const KernelSignature &sig) {
  using Op = ops::Adamw;
  OperandIndex at(sig);
  const TensorType &param = sig.arg(Op::param);
  AdamwShape a = checkAdamw(sig);
  int64_t n = a.numel;
  const CudaContext &ctx = currentContext();
  cudaStream_t s = ctx.stream;
  int *err = ctx.errorWord;
  unsigned maxBlocks = static_cast<unsigned>(ctx.numSMs) * 8;
  return withFloat(sig, param.dtype, "param", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      if (n == 0)
        return;
      unsigned blocks = std::min(gridFor(n, kThreads), maxBlocks);
      adamwKernel<T><<<blocks, kThreads, 0, s>>>(
          in<T>(p[at(Op::param)]), in<T>(p[at(Op::grad)]), in<T>(p[at(Op::m)]),
          in<T>(p[at(Op::v)]), out<T>(p[at(Op::new_param)]),
          out<T>(p[at(Op::new_m)]), out<T>(p[at(Op::new_v)]), n,
          in<float>(p[at(Op::lr)]), in<int64_t>(p[at(Op::step)]),
          in<float>(p[at(Op::grad_scale)]), a, err);
      AUTOSHARD_CUDA_LAUNCHED();
    };
  });
}

} // namespace

void registerOptimizerKernels(KernelTable &t) {
  t.add("sum_squares", bindSumSquares);
  t.add("clip_coef", bindClipCoef);
  t.add("adamw", bindAdamw);
}

} // namespace autoshard::runtime::cuda::kernels
