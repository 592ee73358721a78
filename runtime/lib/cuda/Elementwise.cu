//===- Elementwise.cu - Activations, broadcasting binaries, reductions ----===//
//
// GELU (exact and tanh), SiLU, SwiGLU and their gradients; add/sub/mul with
// a suffix-broadcast rhs; scale; reduce_sum / broadcast over any dims;
// reshape (a device copy when not in place). Semantics as the CPU kernels
// (runtime/include/autoshard/runtime/cpu/Activation.h, Elementwise.h); math
// in fp32.
//
//===----------------------------------------------------------------------===//

#include "CudaCommon.h"
#include "DeviceMath.cuh"

#include <algorithm>

namespace autoshard::runtime::cuda::kernels {
namespace {

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

constexpr float kSqrtHalf = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
constexpr float kSqrt2OverPi = 0.79788456080286535588f;
constexpr float kGeluTanhCubic = 0.044715f;

__device__ __forceinline__ float sigmoidF(float x) {
  return 1.0f / (1.0f + expf(-x));
}
__device__ __forceinline__ float siluF(float x) { return x * sigmoidF(x); }
__device__ __forceinline__ float siluDerivF(float x) {
  float s = sigmoidF(x);
  return s * (1.0f + x * (1.0f - s));
}
__device__ __forceinline__ float geluF(float x, bool approx) {
  if (approx) {
    float inner = kSqrt2OverPi * (x + kGeluTanhCubic * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
  }
  return 0.5f * x * (1.0f + erff(x * kSqrtHalf));
}
__device__ __forceinline__ float geluDerivF(float x, bool approx) {
  if (approx) {
    float inner = kSqrt2OverPi * (x + kGeluTanhCubic * x * x * x);
    float t = tanhf(inner);
    float dInner = kSqrt2OverPi * (1.0f + 3.0f * kGeluTanhCubic * x * x);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * dInner;
  }
  float cdf = 0.5f * (1.0f + erff(x * kSqrtHalf));
  float pdf = kInvSqrt2Pi * expf(-0.5f * x * x);
  return cdf + x * pdf;
}

enum class Act { Gelu, GeluTanh, Silu };

template <typename T, Act A>
__global__ void actKernel(const T *x, T *y, int64_t n) {
  AUTOSHARD_GRID_LOOP(i, n) {
    float v = toF(x[i]);
    float r = A == Act::Silu ? siluF(v) : geluF(v, A == Act::GeluTanh);
    y[i] = fromF<T>(r);
  }
}

template <typename T, Act A>
__global__ void actGradKernel(const T *dy, const T *x, T *dx, int64_t n) {
  AUTOSHARD_GRID_LOOP(i, n) {
    float v = toF(x[i]);
    float d =
        A == Act::Silu ? siluDerivF(v) : geluDerivF(v, A == Act::GeluTanh);
    dx[i] = fromF<T>(toF(dy[i]) * d);
  }
}

template <typename T>
__global__ void swigluKernel(const T *gate, const T *up, T *y, int64_t n) {
  AUTOSHARD_GRID_LOOP(i, n) {
    y[i] = fromF<T>(siluF(toF(gate[i])) * toF(up[i]));
  }
}

template <typename T>
__global__ void swigluGradKernel(const T *dy, const T *gate, const T *up,
                                 T *dgate, T *dup, int64_t n) {
  AUTOSHARD_GRID_LOOP(i, n) {
    float g = toF(gate[i]), d = toF(dy[i]);
    float dg = d * toF(up[i]) * siluDerivF(g);
    float du = d * siluF(g);
    dgate[i] = fromF<T>(dg);
    dup[i] = fromF<T>(du);
  }
}

/// gelu / silu (Op: x -> y) with activation A.
template <typename Op, Act A> BoundKernel bindAct(const KernelSignature &sig) {
  int64_t n = expectAllLikeArg0(sig);
  cudaStream_t s = currentContext().stream;
  return withFloat.bind(sig, Op::x, [=](auto t, Operands o) {
    launchGridLoop(n, s, actKernel<decltype(t), A>, o.in(Op::x, t),
                   o.out(Op::y, t), n);
  });
}

/// gelu_grad / silu_grad (Op: dy, x -> dx) with activation A.
template <typename Op, Act A>
BoundKernel bindActGrad(const KernelSignature &sig) {
  int64_t n = expectAllLikeArg0(sig);
  cudaStream_t s = currentContext().stream;
  return withFloat.bind(sig, Op::dy, [=](auto t, Operands o) {
    launchGridLoop(n, s, actGradKernel<decltype(t), A>, o.in(Op::dy, t),
                   o.in(Op::x, t), o.out(Op::dx, t), n);
  });
}

} // namespace

template <> BoundKernel bind<ops::Gelu>(const KernelSignature &sig) {
  return sig.attrs->getFlag("tanh_approx")
             ? bindAct<ops::Gelu, Act::GeluTanh>(sig)
             : bindAct<ops::Gelu, Act::Gelu>(sig);
}

template <> BoundKernel bind<ops::GeluGrad>(const KernelSignature &sig) {
  return sig.attrs->getFlag("tanh_approx")
             ? bindActGrad<ops::GeluGrad, Act::GeluTanh>(sig)
             : bindActGrad<ops::GeluGrad, Act::Gelu>(sig);
}

template <> BoundKernel bind<ops::Silu>(const KernelSignature &sig) {
  return bindAct<ops::Silu, Act::Silu>(sig);
}

template <> BoundKernel bind<ops::SiluGrad>(const KernelSignature &sig) {
  return bindActGrad<ops::SiluGrad, Act::Silu>(sig);
}

template <> BoundKernel bind<ops::Swiglu>(const KernelSignature &sig) {
  using Op = ops::Swiglu;
  int64_t n = expectAllLikeArg0(sig);
  cudaStream_t s = currentContext().stream;
  return withFloat.bind(sig, Op::gate, [=](auto t, Operands o) {
    launchGridLoop(n, s, swigluKernel<decltype(t)>, o.in(Op::gate, t),
                   o.in(Op::up, t), o.out(Op::y, t), n);
  });
}

template <> BoundKernel bind<ops::SwigluGrad>(const KernelSignature &sig) {
  using Op = ops::SwigluGrad;
  int64_t n = expectAllLikeArg0(sig);
  cudaStream_t s = currentContext().stream;
  return withFloat.bind(sig, Op::dy, [=](auto t, Operands o) {
    launchGridLoop(n, s, swigluGradKernel<decltype(t)>, o.in(Op::dy, t),
                   o.in(Op::gate, t), o.in(Op::up, t), o.out(Op::dgate, t),
                   o.out(Op::dup, t), n);
  });
}

namespace {

//===----------------------------------------------------------------------===//
// Binary ops, scale
//===----------------------------------------------------------------------===//

enum class Bin { Add, Sub, Mul };

template <typename T, Bin B>
__global__ void binaryKernel(const T *a, const T *b, T *o, int64_t n,
                             int64_t m) {
  AUTOSHARD_GRID_LOOP(i, n) {
    float x = toF(a[i]), y = toF(b[m == n ? i : i % m]);
    o[i] = fromF<T>(B == Bin::Add ? x + y : B == Bin::Sub ? x - y : x * y);
  }
}

/// add / sub / mul (Op: lhs, rhs -> result) with operation B.
template <typename Op, Bin B>
BoundKernel bindBinary(const KernelSignature &sig) {
  BinaryShape shape = checkBinary(sig);
  int64_t n = shape.numel, m = shape.rhsNumel;
  cudaStream_t s = currentContext().stream;
  return withFloat.bind(sig, Op::lhs, [=](auto t, Operands o) {
    launchGridLoop(n, s, binaryKernel<decltype(t), B>, o.in(Op::lhs, t),
                   o.in(Op::rhs, t), o.out(Op::result, t), n, m);
  });
}

template <typename T>
__global__ void scaleKernel(const T *x, T *o, int64_t n, float f) {
  AUTOSHARD_GRID_LOOP(i, n) { o[i] = fromF<T>(f * toF(x[i])); }
}

} // namespace

template <> BoundKernel bind<ops::Add>(const KernelSignature &sig) {
  return bindBinary<ops::Add, Bin::Add>(sig);
}

template <> BoundKernel bind<ops::Sub>(const KernelSignature &sig) {
  return bindBinary<ops::Sub, Bin::Sub>(sig);
}

template <> BoundKernel bind<ops::Mul>(const KernelSignature &sig) {
  return bindBinary<ops::Mul, Bin::Mul>(sig);
}

template <> BoundKernel bind<ops::Scale>(const KernelSignature &sig) {
  using Op = ops::Scale;
  ScaleShape shape = checkScale(sig);
  int64_t n = shape.numel;
  float factor = static_cast<float>(shape.factor);
  cudaStream_t s = currentContext().stream;
  return withFloat.bind(sig, Op::x, [=](auto t, Operands o) {
    launchGridLoop(n, s, scaleKernel<decltype(t)>, o.in(Op::x, t),
                   o.out(Op::result, t), n, factor);
  });
}

namespace {

//===----------------------------------------------------------------------===//
// reduce_sum and broadcast
//===----------------------------------------------------------------------===//

/// The full shape split into kept dims (the output's) and reduced dims, with
/// the full shape's strides of each: element (kept k, reduced r) is at
/// sum(kept coords * keptStride) + sum(reduced coords * redStride).
struct DimSplit {
  int numKept = 0, numRed = 0;
  int64_t keptSize[16], keptStride[16];
  int64_t redSize[16], redStride[16];
  int64_t keptNumel = 1, redNumel = 1;
};

DimSplit splitDims(const std::vector<int64_t> &shape,
                   const std::vector<int64_t> &dims) {
  DimSplit d;
  std::vector<int64_t> stride(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    stride[i - 1] = stride[i] * shape[i];
  for (size_t i = 0; i < shape.size(); ++i) {
    bool red = std::find(dims.begin(), dims.end(), int64_t(i)) != dims.end();
    if (red) {
      d.redSize[d.numRed] = shape[i];
      d.redStride[d.numRed++] = stride[i];
      d.redNumel *= shape[i];
    } else {
      d.keptSize[d.numKept] = shape[i];
      d.keptStride[d.numKept++] = stride[i];
      d.keptNumel *= shape[i];
    }
  }
  return d;
}

__device__ __forceinline__ int64_t offsetOf(int64_t linear, int n,
                                            const int64_t *size,
                                            const int64_t *stride) {
  int64_t off = 0;
  for (int d = n - 1; d >= 0; --d) {
    off += (linear % size[d]) * stride[d];
    linear /= size[d];
  }
  return off;
}

/// Block (32, 8): x over 32 consecutive outputs, y splits the reduction;
/// fp32 accumulation, then a shared-memory sum over y.
template <typename T>
__global__ void reduceSumKernel(const T *x, T *out, DimSplit d) {
  __shared__ float part[8][33];
  int64_t o = blockIdx.x * int64_t(32) + threadIdx.x;
  float acc = 0.0f;
  if (o < d.keptNumel) {
    int64_t base = offsetOf(o, d.numKept, d.keptSize, d.keptStride);
    for (int64_t r = threadIdx.y; r < d.redNumel; r += blockDim.y)
      acc += toF(x[base + offsetOf(r, d.numRed, d.redSize, d.redStride)]);
  }
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && o < d.keptNumel) {
    float sum = 0.0f;
    for (int y = 0; y < blockDim.y; ++y)
      sum += part[y][threadIdx.x];
    out[o] = fromF<T>(sum);
  }
}

/// Each output element reads its kept coordinates' x element.
template <typename T>
__global__ void broadcastKernel(const T *x, T *out, int64_t n, int rank,
                                DimSplit d, int64_t *unused) {
  (void)unused;
  AUTOSHARD_GRID_LOOP(i, n) {
    // i -> full coords; x index from the kept coords (row-major in x).
    // keptStride here holds x's strides; keptSize the full-shape position.
    int64_t rest = i, xi = 0;
    for (int k = rank - 1; k >= 0; --k) {
      int64_t c = rest % d.redSize[k]; // full shape sizes
      rest /= d.redSize[k];
      xi += c * d.keptStride[k]; // 0 for broadcast dims
    }
    out[i] = x[xi];
  }
}

/// The kernels index with at most 16 dims.
void expectRankAtMost16(const KernelSignature &sig, size_t rank) {
  if (rank > 16)
    sig.fail("rank over 16");
}

} // namespace

template <> BoundKernel bind<ops::ReduceSum>(const KernelSignature &sig) {
  using Op = ops::ReduceSum;
  const TensorType &x = sig.arg(Op::x);
  std::vector<int64_t> dims = checkReduceSum(sig);
  expectRankAtMost16(sig, x.shape.size());
  DimSplit split = splitDims(x.shape, dims);
  cudaStream_t s = currentContext().stream;
  return withFloat.bind(sig, Op::x, [=](auto t, Operands o) {
    using T = decltype(t);
    if (split.keptNumel == 0)
      return;
    dim3 block(32, 8);
    reduceSumKernel<T><<<gridFor(split.keptNumel, 32), block, 0, s>>>(
        o.in(Op::x, t), o.out(Op::result, t), split);
    AUTOSHARD_CUDA_LAUNCHED();
  });
}

template <> BoundKernel bind<ops::Broadcast>(const KernelSignature &sig) {
  using Op = ops::Broadcast;
  const TensorType &y = sig.result(Op::result);
  std::vector<int64_t> dims = checkBroadcast(sig);
  expectRankAtMost16(sig, y.shape.size());
  // redSize = full sizes; keptStride = x's stride of each full dim (0 when
  // broadcast).
  DimSplit d;
  int rank = static_cast<int>(y.shape.size());
  int64_t stride = 1;
  for (int k = rank - 1; k >= 0; --k) {
    d.redSize[k] = y.shape[k];
    bool bcast = std::find(dims.begin(), dims.end(), int64_t(k)) != dims.end();
    d.keptStride[k] = bcast ? 0 : stride;
    if (!bcast)
      stride *= y.shape[k];
  }
  int64_t n = y.numel();
  cudaStream_t s = currentContext().stream;
  return withFloat.bind(sig, Op::result, [=](auto t, Operands o) {
    launchGridLoop(n, s, broadcastKernel<decltype(t)>, o.in(Op::x, t),
                   o.out(Op::result, t), n, rank, d, nullptr);
  });
}

template <> BoundKernel bind<ops::Reshape>(const KernelSignature &sig) {
  using Op = ops::Reshape;
  int64_t bytes = checkReshape(sig);
  cudaStream_t s = currentContext().stream;
  return bindOperands(
      sig, [=](Operands o) { copyAsync(o[Op::y], o[Op::x], bytes, s); });
}

/// tfm.microbatch: rows `index, index + count, ...` of x (any element
/// type), one strided 2-D copy.
template <> BoundKernel bind<ops::Microbatch>(const KernelSignature &sig) {
  using Op = ops::Microbatch;
  MicrobatchShape shape = checkMicrobatch(sig);
  int64_t index = shape.index, count = shape.count, rows = shape.rows,
          rowBytes = shape.rowBytes;
  cudaStream_t s = currentContext().stream;
  return bindOperands(sig, [=](Operands o) {
    if (rows == 0 || rowBytes == 0)
      return;
    AUTOSHARD_CUDA(cudaMemcpy2DAsync(
        o[Op::result], rowBytes,
        static_cast<const char *>(o[Op::x]) + index * rowBytes,
        count * rowBytes, rowBytes, rows, cudaMemcpyDeviceToDevice, s));
  });
}

void registerElementwiseKernels(KernelTable &t) {
  addBinders<ops::Gelu, ops::GeluGrad, ops::Silu, ops::SiluGrad, ops::Swiglu,
             ops::SwigluGrad, ops::Add, ops::Sub, ops::Mul, ops::Scale,
             ops::ReduceSum, ops::Broadcast, ops::Reshape, ops::Microbatch>(t);
}

} // namespace autoshard::runtime::cuda::kernels
