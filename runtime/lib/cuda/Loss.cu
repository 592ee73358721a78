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

#include <algorithm>

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

/// Checks logits [..., V] and labels [...]; returns {tokens, classes, vocab}.
struct CeShape {
  int64_t tokens, classes, vocab;
};

CeShape lossShape(const KernelSignature &sig, size_t first) {
  const TensorType &logits = sig.args[first], &labels = sig.args[first + 1];
  expectRank(sig, logits, 1, "logits");
  std::vector<int64_t> lead(logits.shape.begin(), logits.shape.end() - 1);
  if (labels.shape != lead)
    sig.fail("labels " + labels.str() + " must have the leading dims of " +
             "logits " + logits.str());
  CeShape s;
  s.tokens = labels.numel();
  s.classes = logits.shape.back();
  s.vocab = sig.attrs->has("vocab_size") ? sig.attrs->getI64("vocab_size")
                                         : s.classes;
  if (s.vocab < 1 || s.vocab > s.classes)
    sig.fail("attribute 'vocab_size' must be in [1, " +
             std::to_string(s.classes) + "], found " + std::to_string(s.vocab));
  if (s.tokens < 1)
    sig.fail("needs at least one token");
  return s;
}

BoundKernel bindCrossEntropy(const KernelSignature &sig) {
  CeShape s = lossShape(sig, 0);
  expectScalar(sig, sig.results[0], DType::F32, "loss");
  const CudaContext &ctx = currentContext();
  cudaStream_t st = ctx.stream;
  int *err = ctx.errorWord;
  Scratch perToken = scratch(s.tokens * sizeof(double));
  return withFloat(sig, sig.args[0].dtype, "logits", [&](auto t) {
    using T = decltype(t);
    return withId(sig, sig.args[1].dtype, "labels", [&](auto i) -> BoundKernel {
      using I = decltype(i);
      return [=](void *const *p) {
        ceForwardKernel<T, I><<<s.tokens, kRowThreads, 0, st>>>(
            in<T>(p[0]), in<I>(p[1]), s.classes, s.vocab,
            perToken->as<double>(), err);
        AUTOSHARD_CUDA_LAUNCHED();
        meanKernel<<<1, 1024, 0, st>>>(perToken->as<double>(), s.tokens,
                                       double(s.tokens), out<float>(p[2]));
        AUTOSHARD_CUDA_LAUNCHED();
      };
    });
  });
}

BoundKernel bindCrossEntropyGrad(const KernelSignature &sig) {
  expectScalar(sig, sig.args[0], DType::F32, "dloss");
  CeShape s = lossShape(sig, 1);
  expectType(sig, sig.results[0], sig.args[1], "dlogits");
  const CudaContext &ctx = currentContext();
  cudaStream_t st = ctx.stream;
  int *err = ctx.errorWord;
  return withFloat(sig, sig.args[1].dtype, "logits", [&](auto t) {
    using T = decltype(t);
    return withId(sig, sig.args[2].dtype, "labels", [&](auto i) -> BoundKernel {
      using I = decltype(i);
      return [=](void *const *p) {
        ceGradKernel<T, I><<<s.tokens, kRowThreads, 0, st>>>(
            in<float>(p[0]), in<T>(p[1]), in<I>(p[2]), s.classes, s.vocab,
            double(s.tokens), out<T>(p[3]), err);
        AUTOSHARD_CUDA_LAUNCHED();
      };
    });
  });
}

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

struct VocabShape {
  int64_t tokens, classes, vocabSize;
  std::vector<int64_t> lead;
};

VocabShape vocabShape(const KernelSignature &sig, const TensorType &logits) {
  expectRank(sig, logits, 1, "logits");
  VocabShape s;
  s.lead.assign(logits.shape.begin(), logits.shape.end() - 1);
  s.tokens = product(logits.shape, 0, logits.shape.size() - 1);
  s.classes = logits.shape.back();
  s.vocabSize =
      sig.attrs->has("vocab_size") ? sig.attrs->getI64("vocab_size") : 0;
  if (s.vocabSize < 1)
    sig.fail("attribute 'vocab_size' must be >= 1, found " +
             std::to_string(s.vocabSize));
  if (s.classes < 1)
    sig.fail("logits " + logits.str() + " must have a vocabulary dim >= 1");
  return s;
}

void expectLabels(const KernelSignature &sig, const TensorType &labels,
                  const VocabShape &s, const TensorType &logits) {
  if (labels.shape != s.lead)
    sig.fail("labels " + labels.str() + " must have the leading dims of " +
             "logits " + logits.str());
}

std::vector<int64_t> statsShape(std::vector<int64_t> lead) {
  lead.push_back(2);
  return lead;
}

BoundKernel bindVocabCeMax(const KernelSignature &sig) {
  const TensorType &logits = sig.args[0];
  VocabShape s = vocabShape(sig, logits);
  expectScalar(sig, sig.args[1], DType::I64, "shard");
  expectType(sig, sig.results[0], typeOf(DType::F32, s.lead), resultName(0));
  cudaStream_t st = currentContext().stream;
  return withFloat(sig, logits.dtype, "logits", [=](auto t) -> BoundKernel {
    using T = decltype(t);
    return [=](void *const *p) {
      if (s.tokens == 0)
        return;
      vocabMaxKernel<T><<<s.tokens, kRowThreads, 0, st>>>(
          in<T>(p[0]), s.classes, s.vocabSize, in<int64_t>(p[1]),
          out<float>(p[2]));
      AUTOSHARD_CUDA_LAUNCHED();
    };
  });
}

BoundKernel bindVocabCeStats(const KernelSignature &sig) {
  const TensorType &logits = sig.args[0], &labels = sig.args[1];
  VocabShape s = vocabShape(sig, logits);
  expectLabels(sig, labels, s, logits);
  expectType(sig, sig.args[2], typeOf(DType::F32, s.lead), "max");
  expectScalar(sig, sig.args[3], DType::I64, "shard");
  expectType(sig, sig.results[0], typeOf(DType::F32, statsShape(s.lead)),
             resultName(0));
  const CudaContext &ctx = currentContext();
  cudaStream_t st = ctx.stream;
  int *err = ctx.errorWord;
  return withFloat(sig, logits.dtype, "logits", [&](auto t) {
    using T = decltype(t);
    return withId(sig, labels.dtype, "labels", [&](auto i) -> BoundKernel {
      using I = decltype(i);
      return [=](void *const *p) {
        if (s.tokens == 0)
          return;
        vocabStatsKernel<T, I><<<s.tokens, kRowThreads, 0, st>>>(
            in<T>(p[0]), in<I>(p[1]), in<float>(p[2]), s.classes, s.vocabSize,
            in<int64_t>(p[3]), out<float>(p[4]), err);
        AUTOSHARD_CUDA_LAUNCHED();
      };
    });
  });
}

BoundKernel bindVocabCeLoss(const KernelSignature &sig) {
  const TensorType &stats = sig.args[0], &max = sig.args[1];
  expectType(sig, max, typeOf(DType::F32, max.shape), "max");
  expectType(sig, stats, typeOf(DType::F32, statsShape(max.shape)), "stats");
  expectScalar(sig, sig.results[0], DType::F32, "loss");
  int64_t tokens = max.numel();
  int64_t numTokens = sig.attrs->getI64("num_tokens");
  if (numTokens < std::max<int64_t>(tokens, 1))
    sig.fail("attribute 'num_tokens' must be >= the local token count " +
             std::to_string(tokens) + " (and >= 1), found " +
             std::to_string(numTokens));
  cudaStream_t st = currentContext().stream;
  return [=](void *const *p) {
    vocabLossKernel<<<1, 1024, 0, st>>>(in<float>(p[0]), in<float>(p[1]),
                                        tokens, double(numTokens),
                                        out<float>(p[2]));
    AUTOSHARD_CUDA_LAUNCHED();
  };
}

BoundKernel bindVocabCeGrad(const KernelSignature &sig) {
  expectScalar(sig, sig.args[0], DType::F32, "dloss");
  const TensorType &logits = sig.args[1], &labels = sig.args[2];
  VocabShape s = vocabShape(sig, logits);
  expectLabels(sig, labels, s, logits);
  expectType(sig, sig.args[3], typeOf(DType::F32, s.lead), "max");
  expectType(sig, sig.args[4], typeOf(DType::F32, statsShape(s.lead)), "stats");
  expectScalar(sig, sig.args[5], DType::I64, "shard");
  expectType(sig, sig.results[0], logits, "dlogits");
  int64_t numTokens = sig.attrs->getI64("num_tokens");
  if (numTokens < std::max<int64_t>(s.tokens, 1))
    sig.fail("attribute 'num_tokens' must be >= the local token count " +
             std::to_string(s.tokens) + " (and >= 1), found " +
             std::to_string(numTokens));
  const CudaContext &ctx = currentContext();
  cudaStream_t st = ctx.stream;
  int *err = ctx.errorWord;
  return withFloat(sig, logits.dtype, "logits", [&](auto t) {
    using T = decltype(t);
    return withId(sig, labels.dtype, "labels", [&](auto i) -> BoundKernel {
      using I = decltype(i);
      return [=](void *const *p) {
        if (s.tokens == 0)
          return;
        vocabGradKernel<T, I><<<s.tokens, kRowThreads, 0, st>>>(
            in<float>(p[0]), in<T>(p[1]), in<I>(p[2]), in<float>(p[3]),
            in<float>(p[4]), s.classes, s.vocabSize, in<int64_t>(p[5]),
            double(numTokens), out<T>(p[6]), err);
        AUTOSHARD_CUDA_LAUNCHED();
      };
    });
  });
}

} // namespace

void registerLossKernels(KernelTable &t) {
  t.add("cross_entropy", bindCrossEntropy);
  t.add("cross_entropy_grad", bindCrossEntropyGrad);
  t.add("vocab_ce_max", bindVocabCeMax);
  t.add("vocab_ce_stats", bindVocabCeStats);
  t.add("vocab_ce_loss", bindVocabCeLoss);
  t.add("vocab_ce_grad", bindVocabCeGrad);
}

} // namespace autoshard::runtime::cuda::kernels
