//===- Norm.cu - layer_norm and rms_norm, forward and backward ------------===//
//
// One thread block per row for the row statistics and dx (fp32 accumulation,
// two passes over the row: mean, then the centred sum of squares); the
// backward saves (mean, rstd) per row in scratch memory and a second kernel
// reduces dgamma / dbeta over rows, 32 columns per block. Semantics as
// runtime/include/autoshard/runtime/cpu/Norm.h (LayerNorm: Ba et al. 2016;
// RMSNorm: Zhang, Sennrich 2019).
//
//===----------------------------------------------------------------------===//

#include "CudaCommon.h"
#include "DeviceMath.cuh"

namespace autoshard::runtime::cuda::kernels {
namespace {

constexpr int kRowThreads = 256;

template <typename T>
__device__ void rowMeanRstd(const T *xr, int64_t hidden, float eps, bool rms,
                            float *shared, float &mean, float &rstd) {
  float sum = 0.0f;
  if (!rms) {
    for (int64_t h = threadIdx.x; h < hidden; h += blockDim.x)
      sum += toF(xr[h]);
    mean = blockSum(sum, shared) / hidden;
  } else {
    mean = 0.0f;
  }
  float sq = 0.0f;
  for (int64_t h = threadIdx.x; h < hidden; h += blockDim.x) {
    float d = toF(xr[h]) - mean;
    sq += d * d;
  }
  rstd = rsqrtf(blockSum(sq, shared) / hidden + eps);
}

template <typename T>
__global__ void normKernel(const T *x, const T *gamma, const T *beta, T *y,
                           int64_t hidden, float eps, bool rms) {
  __shared__ float shared[32];
  const T *xr = x + blockIdx.x * hidden;
  T *yr = y + blockIdx.x * hidden;
  float mean, rstd;
  rowMeanRstd(xr, hidden, eps, rms, shared, mean, rstd);
  for (int64_t h = threadIdx.x; h < hidden; h += blockDim.x) {
    float v = (toF(xr[h]) - mean) * rstd * toF(gamma[h]);
    if (beta)
      v += toF(beta[h]);
    yr[h] = fromF<T>(v);
  }
}

/// dx of one row; saves (mean, rstd).
template <typename T>
__global__ void normGradRowKernel(const T *dy, const T *x, const T *gamma,
                                  T *dx, float2 *stats, int64_t hidden,
                                  float eps, bool rms) {
  __shared__ float shared[32];
  const T *xr = x + blockIdx.x * hidden, *dyr = dy + blockIdx.x * hidden;
  T *dxr = dx + blockIdx.x * hidden;
  float mean, rstd;
  rowMeanRstd(xr, hidden, eps, rms, shared, mean, rstd);
  float sumG = 0.0f, sumGXhat = 0.0f;
  for (int64_t h = threadIdx.x; h < hidden; h += blockDim.x) {
    float xhat = (toF(xr[h]) - mean) * rstd;
    float g = toF(dyr[h]) * toF(gamma[h]);
    sumG += g;
    sumGXhat += g * xhat;
  }
  float meanG = rms ? 0.0f : blockSum(sumG, shared) / hidden;
  float meanGXhat = blockSum(sumGXhat, shared) / hidden;
  // LayerNorm: dx = rstd (g - mean(g) - xhat mean(g xhat)); RMSNorm (mean
  // 0, xhat = x r): dx = r (g - x r^2 mean(g x)) = r (g - xhat mean(g xhat)).
  for (int64_t h = threadIdx.x; h < hidden; h += blockDim.x) {
    float xhat = (toF(xr[h]) - mean) * rstd;
    float g = toF(dyr[h]) * toF(gamma[h]);
    dxr[h] = fromF<T>(rstd * (g - meanG - xhat * meanGXhat));
  }
  if (threadIdx.x == 0)
    stats[blockIdx.x] = make_float2(mean, rstd);
}

/// dgamma[h] = sum_r dy xhat, dbeta[h] = sum_r dy; block (32, 8).
template <typename T>
__global__ void normGradColKernel(const T *dy, const T *x, const float2 *stats,
                                  T *dgamma, T *dbeta, int64_t rows,
                                  int64_t hidden) {
  __shared__ float pg[8][33], pb[8][33];
  int64_t h = blockIdx.x * int64_t(32) + threadIdx.x;
  float g = 0.0f, b = 0.0f;
  if (h < hidden)
    for (int64_t r = threadIdx.y; r < rows; r += blockDim.y) {
      float2 s = stats[r];
      float d = toF(dy[r * hidden + h]);
      g += d * (toF(x[r * hidden + h]) - s.x) * s.y;
      b += d;
    }
  pg[threadIdx.y][threadIdx.x] = g;
  pb[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && h < hidden) {
    float sg = 0.0f, sb = 0.0f;
    for (int y = 0; y < blockDim.y; ++y) {
      sg += pg[y][threadIdx.x];
      sb += pb[y][threadIdx.x];
    }
    dgamma[h] = fromF<T>(sg);
    if (dbeta)
      dbeta[h] = fromF<T>(sb);
  }
}

/// The kernels' limits on top of the shared checks: hidden >= 1 and
/// epsilon >= 0; returns epsilon.
float checkLimits(const KernelSignature &sig, const NormShape &shape) {
  if (shape.hidden < 1)
    sig.fail("hidden must be >= 1");
  if (!(shape.epsilon >= 0.0))
    sig.fail("epsilon must be >= 0, found " + std::to_string(shape.epsilon));
  return static_cast<float>(shape.epsilon);
}

/// layer_norm (optional beta) / rms_norm (`Rms`: no beta).
template <typename Op, bool Rms>
BoundKernel bindNorm(const KernelSignature &sig) {
  NormShape shape = checkNorm(sig);
  int64_t rows = shape.rows, hidden = shape.hidden;
  float eps = checkLimits(sig, shape);
  bool hasBeta = !Rms && sig.args.size() == 3;
  cudaStream_t s = currentContext().stream;
  return withFloat.bind(sig, Op::x, [=](auto t, Operands o) {
    using T = decltype(t);
    if (rows == 0)
      return;
    const T *beta = nullptr;
    if constexpr (!Rms)
      beta = hasBeta ? o.in(Op::beta, t) : nullptr;
    normKernel<T>
        <<<rows, kRowThreads, 0, s>>>(o.in(Op::x, t), o.in(Op::gamma, t), beta,
                                      o.out(Op::y, t), hidden, eps, Rms);
    AUTOSHARD_CUDA_LAUNCHED();
  });
}

/// layer_norm_grad / rms_norm_grad (`Rms`: no dbeta).
template <typename Op, bool Rms>
BoundKernel bindNormGrad(const KernelSignature &sig) {
  NormShape shape = checkNormGrad(sig, /*withBeta=*/!Rms);
  int64_t rows = shape.rows, hidden = shape.hidden;
  float eps = checkLimits(sig, shape);
  cudaStream_t s = currentContext().stream;
  Scratch stats = scratch(std::max<int64_t>(rows, 1) * sizeof(float2));
  int64_t gammaBytes = sig.arg(Op::gamma).bytes();
  return withFloat.bind(sig, Op::dy, [=](auto t, Operands o) {
    using T = decltype(t);
    T *dbeta = nullptr;
    if constexpr (!Rms)
      dbeta = o.out(Op::dbeta, t);
    if (rows == 0) {
      AUTOSHARD_CUDA(cudaMemsetAsync(o[Op::dgamma], 0, gammaBytes, s));
      if (dbeta)
        AUTOSHARD_CUDA(cudaMemsetAsync(dbeta, 0, gammaBytes, s));
      return;
    }
    normGradRowKernel<T><<<rows, kRowThreads, 0, s>>>(
        o.in(Op::dy, t), o.in(Op::x, t), o.in(Op::gamma, t), o.out(Op::dx, t),
        stats->as<float2>(), hidden, eps, Rms);
    AUTOSHARD_CUDA_LAUNCHED();
    normGradColKernel<T><<<gridFor(hidden, 32), dim3(32, 8), 0, s>>>(
        o.in(Op::dy, t), o.in(Op::x, t), stats->as<float2>(),
        o.out(Op::dgamma, t), dbeta, rows, hidden);
    AUTOSHARD_CUDA_LAUNCHED();
  });
}

} // namespace

template <> BoundKernel bind<ops::LayerNorm>(const KernelSignature &sig) {
  return bindNorm<ops::LayerNorm, false>(sig);
}

template <> BoundKernel bind<ops::LayerNormGrad>(const KernelSignature &sig) {
  return bindNormGrad<ops::LayerNormGrad, false>(sig);
}

template <> BoundKernel bind<ops::RmsNorm>(const KernelSignature &sig) {
  return bindNorm<ops::RmsNorm, true>(sig);
}

template <> BoundKernel bind<ops::RmsNormGrad>(const KernelSignature &sig) {
  return bindNormGrad<ops::RmsNormGrad, true>(sig);
}

void registerNormKernels(KernelTable &t) {
  addBinders<ops::LayerNorm, ops::LayerNormGrad, ops::RmsNorm,
             ops::RmsNormGrad>(t);
}

} // namespace autoshard::runtime::cuda::kernels
