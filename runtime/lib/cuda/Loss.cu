//===- Loss.cu - Softmax cross-entropy, global and vocab-parallel ---------===//
//
// One thread block per token row: max-shifted log-sum-exp over the real
// (unpadded) classes, fp32 exponentials; the mean over tokens is a second,
// single-block reduction in double (deterministic). The vocab-parallel ops
// compute per-shard statistics (max, sum of exp, label logit) that the
// program all-reduces across the tensor-parallel group (Megatron-LM's
// vocab-parallel cross-entropy). Semantics as
// runtime/include/autoshard/runtime/cpu/{Loss, VocabParallel}.h.
//
//===----------------------------------------------------------------------===//

#include "CudaCommon.h"
#include "DeviceMath.cuh"

namespace autoshard::runtime::cuda::kernels {
namespace {

constexpr int kRowThreads = 256;

/// Number of real classes of a shard: vocabSize - shard * classes, clamped
/// to [0, classes].
__device__ __forceinline__ int64_t realClasses(int64_t vocabSize,
                                               int64_t classes,
                                               const int64_t *shard) {
  int64_t offset = shard ? *shard * classes : 0;
  int64_t real = vocabSize - offset;
  return real < 0 ? 0 : (real > classes ? classes : real);
}

template <typename T>
__device__ float rowMax(const T *row, int64_t n, float *shared) {
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x)
    m = fmaxf(m, toF(row[c]));
  return blockMax(m, shared);
}

template <typename T>
__device__ float rowSumExp(const T *row, int64_t n, float max, float *shared) {
  float s = 0.0f;
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x)
    s += expf(toF(row[c]) - max);
  return blockSum(s, shared);
}

/// perToken[t] = lse(row[0, vocab)) - row[label].
template <typename T, typename I>
__global__ void ceForwardKernel(const T *logits, const I *labels,
                                int64_t classes, int64_t vocab,
                                double *perToken, int *err) {
  __shared__ float shared[32];
  const T *row = logits + blockIdx.x * classes;
  float max = rowMax(row, vocab, shared);
  float sum = rowSumExp(row, vocab, max, shared);
  if (threadIdx.x == 0) {
    int64_t label = static_cast<int64_t>(labels[blockIdx.x]);
    double v = 0.0;
    if (label < 0 || label >= vocab)
      raise(err, kErrLabel);
    else
      v = double(max) + log(double(sum)) - double(toF(row[label]));
    perToken[blockIdx.x] = v;
  }
}

/// out = sum(x[0, n)) / denom, one block.
__global__ void meanKernel(const double *x, int64_t n, double denom,
                           float *out) {
  __shared__ double shared[32];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    s += x[i];
  s = blockSum(s, shared);
  if (threadIdx.x == 0)
    *out = static_cast<float>(s / denom);
}

template <typename T, typename I>
__global__ void ceGradKernel(const float *dloss, const T *logits,
                             const I *labels, int64_t classes, int64_t vocab,
                             double tokens, T *dlogits, int *err) {
  __shared__ float shared[32];
  const T *row = logits + blockIdx.x * classes;
  T *drow = dlogits + blockIdx.x * classes;
  float max = rowMax(row, vocab, shared);
  float sum = rowSumExp(row, vocab, max, shared);
  float lse = max + logf(sum);
  float perToken = static_cast<float>(*dloss / tokens);
  int64_t label = static_cast<int64_t>(labels[blockIdx.x]);
  if (threadIdx.x == 0 && (label < 0 || label >= vocab))
    raise(err, kErrLabel);
  __syncthreads(); // the row may be dlogits (in place)
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
    float g = 0.0f;
    if (c < vocab) {
      float p = expf(toF(row[c]) - lse);
      g = perToken * (c == label ? p - 1.0f : p);
    }
    drow[c] = fromF<T>(g);
  }
}

/// The kernels need at least one token (a block each).
void expectTokens(const KernelSignature &sig, const CrossEntropyDims &s) {
  if (s.tokens < 1)
    sig.fail("needs at least one token");
}

} // namespace

template <> BoundKernel bind<ops::CrossEntropy>(const KernelSignature &sig) {
  using Op = ops::CrossEntropy;
  CrossEntropyDims s = checkCrossEntropy(sig);
  expectTokens(sig, s);
  const CudaContext &ctx = currentContext();
  cudaStream_t st = ctx.stream;
  int *err = ctx.errorWord;
  Scratch perToken = scratch(s.tokens * sizeof(double));
  return withFloat.bindWithIds(
      sig, Op::logits, Op::labels, [=](auto t, auto i, Operands o) {
        ceForwardKernel<decltype(t), decltype(i)>
            <<<s.tokens, kRowThreads, 0, st>>>(
                o.in(Op::logits, t), o.in(Op::labels, i), s.classes,
                s.vocabSize, perToken->as<double>(), err);
        AUTOSHARD_CUDA_LAUNCHED();
        meanKernel<<<1, 1024, 0, st>>>(perToken->as<double>(), s.tokens,
                                       double(s.tokens),
                                       o.out<float>(Op::loss));
        AUTOSHARD_CUDA_LAUNCHED();
      });
}

template <>
BoundKernel bind<ops::CrossEntropyGrad>(const KernelSignature &sig) {
  using Op = ops::CrossEntropyGrad;
  CrossEntropyDims s = checkCrossEntropyGrad(sig);
  expectTokens(sig, s);
  const CudaContext &ctx = currentContext();
  cudaStream_t st = ctx.stream;
  int *err = ctx.errorWord;
  return withFloat.bindWithIds(
      sig, Op::logits, Op::labels, [=](auto t, auto i, Operands o) {
        ceGradKernel<decltype(t), decltype(i)>
            <<<s.tokens, kRowThreads, 0, st>>>(
                o.in<float>(Op::dloss), o.in(Op::logits, t),
                o.in(Op::labels, i), s.classes, s.vocabSize, double(s.tokens),
                o.out(Op::dlogits, t), err);
        AUTOSHARD_CUDA_LAUNCHED();
      });
}

namespace {

//===----------------------------------------------------------------------===//
// Vocab-parallel
//===----------------------------------------------------------------------===//

template <typename T>
__global__ void vocabMaxKernel(const T *logits, int64_t classes,
                               int64_t vocabSize, const int64_t *shard,
                               float *max) {
  __shared__ float shared[32];
  int64_t real = realClasses(vocabSize, classes, shard);
  float m = rowMax(logits + blockIdx.x * classes, real, shared);
  if (threadIdx.x == 0)
    max[blockIdx.x] = m; // -inf when the shard holds no real class
}

template <typename T, typename I>
__global__ void vocabStatsKernel(const T *logits, const I *labels,
                                 const float *max, int64_t classes,
                                 int64_t vocabSize, const int64_t *shard,
                                 float *stats, int *err) {
  __shared__ float shared[32];
  int64_t real = realClasses(vocabSize, classes, shard);
  const T *row = logits + blockIdx.x * classes;
  float sum = rowSumExp(row, real, max[blockIdx.x], shared);
  if (threadIdx.x == 0) {
    int64_t label = static_cast<int64_t>(labels[blockIdx.x]);
    if (label < 0 || label >= vocabSize)
      raise(err, kErrLabel);
    int64_t local = label - *shard * classes;
    stats[2 * blockIdx.x] = sum;
    stats[2 * blockIdx.x + 1] =
        local >= 0 && local < real ? toF(row[local]) : 0.0f;
  }
}

__global__ void vocabLossKernel(const float *stats, const float *max,
                                int64_t tokens, double numTokens, float *loss) {
  __shared__ double shared[32];
  double s = 0.0;
  for (int64_t t = threadIdx.x; t < tokens; t += blockDim.x)
    s += log(double(stats[2 * t])) + double(max[t]) - double(stats[2 * t + 1]);
  s = blockSum(s, shared);
  if (threadIdx.x == 0)
    *loss = static_cast<float>(s / numTokens);
}

template <typename T, typename I>
__global__ void vocabGradKernel(const float *dloss, const T *logits,
                                const I *labels, const float *max,
                                const float *stats, int64_t classes,
                                int64_t vocabSize, const int64_t *shard,
                                double numTokens, T *dlogits, int *err) {
  int64_t real = realClasses(vocabSize, classes, shard);
  const T *row = logits + blockIdx.x * classes;
  T *drow = dlogits + blockIdx.x * classes;
  float m = max[blockIdx.x], sum = stats[2 * blockIdx.x];
  float perToken = static_cast<float>(*dloss / numTokens);
  int64_t label = static_cast<int64_t>(labels[blockIdx.x]);
  if (threadIdx.x == 0 && (label < 0 || label >= vocabSize))
    raise(err, kErrLabel);
  int64_t local = label - *shard * classes;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
    float g = 0.0f;
    if (c < real) {
      float p = expf(toF(row[c]) - m) / sum;
      g = perToken * (c == local ? p - 1.0f : p);
    }
    drow[c] = fromF<T>(g); // each element is read before it is written
  }
}

} // namespace

template <> BoundKernel bind<ops::VocabCeMax>(const KernelSignature &sig) {
  using Op = ops::VocabCeMax;
  VocabCeDims s = checkVocabCeMax(sig);
  cudaStream_t st = currentContext().stream;
  return withFloat.bind(sig, Op::logits, [=](auto t, Operands o) {
    if (s.tokens == 0)
      return;
    vocabMaxKernel<decltype(t)><<<s.tokens, kRowThreads, 0, st>>>(
        o.in(Op::logits, t), s.classes, s.vocabSize, o.in<int64_t>(Op::shard),
        o.out<float>(Op::max));
    AUTOSHARD_CUDA_LAUNCHED();
  });
}

template <> BoundKernel bind<ops::VocabCeStats>(const KernelSignature &sig) {
  using Op = ops::VocabCeStats;
  VocabCeDims s = checkVocabCeStats(sig);
  const CudaContext &ctx = currentContext();
  cudaStream_t st = ctx.stream;
  int *err = ctx.errorWord;
  return withFloat.bindWithIds(
      sig, Op::logits, Op::labels, [=](auto t, auto i, Operands o) {
        if (s.tokens == 0)
          return;
        vocabStatsKernel<decltype(t), decltype(i)>
            <<<s.tokens, kRowThreads, 0, st>>>(
                o.in(Op::logits, t), o.in(Op::labels, i), o.in<float>(Op::max),
                s.classes, s.vocabSize, o.in<int64_t>(Op::shard),
                o.out<float>(Op::stats), err);
        AUTOSHARD_CUDA_LAUNCHED();
      });
}

template <> BoundKernel bind<ops::VocabCeLoss>(const KernelSignature &sig) {
  using Op = ops::VocabCeLoss;
  VocabCeDims s = checkVocabCeLoss(sig);
  int64_t tokens = s.tokens, numTokens = s.numTokens;
  cudaStream_t st = currentContext().stream;
  return bindOperands(sig, [=](Operands o) {
    vocabLossKernel<<<1, 1024, 0, st>>>(
        o.in<float>(Op::stats), o.in<float>(Op::max), tokens, double(numTokens),
        o.out<float>(Op::loss));
    AUTOSHARD_CUDA_LAUNCHED();
  });
}

template <> BoundKernel bind<ops::VocabCeGrad>(const KernelSignature &sig) {
  using Op = ops::VocabCeGrad;
  VocabCeDims s = checkVocabCeGrad(sig);
  int64_t numTokens = s.numTokens;
  const CudaContext &ctx = currentContext();
  cudaStream_t st = ctx.stream;
  int *err = ctx.errorWord;
  return withFloat.bindWithIds(
      sig, Op::logits, Op::labels, [=](auto t, auto i, Operands o) {
        if (s.tokens == 0)
          return;
        vocabGradKernel<decltype(t), decltype(i)>
            <<<s.tokens, kRowThreads, 0, st>>>(
                o.in<float>(Op::dloss), o.in(Op::logits, t),
                o.in(Op::labels, i), o.in<float>(Op::max),
                o.in<float>(Op::stats), s.classes, s.vocabSize,
                o.in<int64_t>(Op::shard), double(numTokens),
                o.out(Op::dlogits, t), err);
        AUTOSHARD_CUDA_LAUNCHED();
      });
}

void registerLossKernels(KernelTable &t) {
  addBinders<ops::CrossEntropy, ops::CrossEntropyGrad, ops::VocabCeMax,
             ops::VocabCeStats, ops::VocabCeLoss, ops::VocabCeGrad>(t);
}

} // namespace autoshard::runtime::cuda::kernels
