//===- Sequence.cu - Embeddings, RoPE and dropout -------------------------===//
//
// Token / position / vocab-parallel embeddings and their scatter-add
// backward (fp32 atomics; a bf16 table accumulates in an fp32 scratch copy),
// RoPE with the CPU backend's cos/sin table (computed on the host in double,
// uploaded once), and dropout with the Philox masks of
// autoshard/runtime/Philox.h, so the GPU drops exactly the CPU's elements.
// Semantics as runtime/include/autoshard/runtime/cpu/{Embedding, Rope,
// Dropout, VocabParallel}.h.
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/Philox.h"

#include "CudaCommon.h"
#include "DeviceMath.cuh"

#include <algorithm>
#include <cmath>

namespace autoshard::runtime::cuda::kernels {
namespace {

constexpr int kThreads = 256;

unsigned blocksFor(int64_t n) {
  return std::min<unsigned>(gridFor(n, kThreads), 65535u * 8);
}

//===----------------------------------------------------------------------===//
// Embeddings
//===----------------------------------------------------------------------===//

/// out[i, :] = table[ids[i] - offset, :] when that row is in [0, rows);
/// otherwise zeros, and (`strict`) an error, or (vocab-parallel) an error
/// for a negative id only. `shard` (device i64) sets offset = shard * rows.
template <typename T, typename I>
__global__ void embeddingKernel(const I *ids, int64_t n, const T *table,
                                int64_t rows, int64_t hidden, T *out,
                                const int64_t *shard, bool strict, int *err) {
  int64_t offset = shard ? *shard * rows : 0;
  AUTOSHARD_GRID_LOOP(e, n * hidden) {
    int64_t i = e / hidden, h = e - i * hidden;
    int64_t id = static_cast<int64_t>(ids[i]);
    int64_t row = id - offset;
    bool ok = row >= 0 && row < rows;
    if (!ok && h == 0 && (strict || id < 0))
      raise(err, strict ? kErrEmbeddingId : kErrNegativeId);
    out[e] = ok ? table[row * hidden + h] : fromF<T>(0.0f);
  }
}

template <typename I>
__global__ void embeddingGradKernel(const I *ids, int64_t n, const float *dy32,
                                    const void *dyAny, bool dyIsBf16,
                                    int64_t rows, int64_t hidden, float *acc,
                                    const int64_t *shard, bool strict,
                                    int *err) {
  int64_t offset = shard ? *shard * rows : 0;
  AUTOSHARD_GRID_LOOP(e, n * hidden) {
    int64_t i = e / hidden, h = e - i * hidden;
    int64_t id = static_cast<int64_t>(ids[i]);
    int64_t row = id - offset;
    if (row < 0 || row >= rows) {
      if (h == 0 && (strict || id < 0))
        raise(err, strict ? kErrEmbeddingId : kErrNegativeId);
      continue;
    }
    float v = dyIsBf16 ? __bfloat162float(static_cast<const bf16 *>(dyAny)[e])
                       : dy32[e];
    atomicAdd(acc + row * hidden + h, v);
  }
}

__global__ void toBf16Kernel(const float *x, bf16 *y, int64_t n) {
  AUTOSHARD_GRID_LOOP(i, n) { y[i] = __float2bfloat16_rn(x[i]); }
}

template <typename T, typename I>
BoundKernel embeddingFwd(const KernelSignature &sig, int64_t n, int64_t vocab,
                         int64_t hidden, bool vocabParallel) {
  const CudaContext &ctx = currentContext();
  cudaStream_t s = ctx.stream;
  int *err = ctx.errorWord;
  return [=](void *const *p) {
    if (n * hidden == 0)
      return;
    embeddingKernel<T, I><<<blocksFor(n * hidden), kThreads, 0, s>>>(
        in<I>(p[0]), n, in<T>(p[1]), vocab, hidden,
        out<T>(p[vocabParallel ? 3 : 2]),
        vocabParallel ? in<int64_t>(p[2]) : nullptr, !vocabParallel, err);
    AUTOSHARD_CUDA_LAUNCHED();
  };
}

template <typename T, typename I>
BoundKernel embeddingBwd(const KernelSignature &sig, int64_t n, int64_t vocab,
                         int64_t hidden, bool vocabParallel) {
  const CudaContext &ctx = currentContext();
  cudaStream_t s = ctx.stream;
  int *err = ctx.errorWord;
  constexpr bool isBf16 = std::is_same_v<T, bf16>;
  Scratch acc = scratch(isBf16 ? vocab * hidden * int64_t(sizeof(float)) : 0);
  return [=](void *const *p) {
    T *dtable = out<T>(p[vocabParallel ? 3 : 2]);
    float *sum = isBf16 ? acc->as<float>() : reinterpret_cast<float *>(dtable);
    AUTOSHARD_CUDA(cudaMemsetAsync(sum, 0, vocab * hidden * sizeof(float), s));
    if (n * hidden > 0) {
      embeddingGradKernel<I><<<blocksFor(n * hidden), kThreads, 0, s>>>(
          in<I>(p[0]), n, isBf16 ? nullptr : in<float>(p[1]), p[1], isBf16,
          vocab, hidden, sum, vocabParallel ? in<int64_t>(p[2]) : nullptr,
          !vocabParallel, err);
      AUTOSHARD_CUDA_LAUNCHED();
    }
    if constexpr (isBf16) {
      toBf16Kernel<<<blocksFor(vocab * hidden), kThreads, 0, s>>>(
          sum, reinterpret_cast<bf16 *>(dtable), vocab * hidden);
      AUTOSHARD_CUDA_LAUNCHED();
    }
  };
}

/// embedding / vocab_embedding (`VocabParallel`) and their gradients
/// (`Grad`): the shared checks, then the kernel of the table's element type
/// (the table is operand 1, the result or dy).
template <bool Grad, bool VocabParallel>
BoundKernel bindEmbedding(const KernelSignature &sig) {
  EmbeddingShape s = Grad ? checkEmbeddingGrad(sig, VocabParallel)
                          : checkEmbedding(sig, VocabParallel);
  const char *what = Grad ? "dy" : "table";
  return withFloat(sig, sig.args[1].dtype, what, [&](auto t) -> BoundKernel {
    using T = decltype(t);
    return withId(sig, sig.args[0].dtype, "ids", [&](auto i) -> BoundKernel {
      using I = decltype(i);
      if constexpr (Grad)
        return embeddingBwd<T, I>(sig, s.numIds, s.vocab, s.hidden,
                                  VocabParallel);
      else
        return embeddingFwd<T, I>(sig, s.numIds, s.vocab, s.hidden,
                                  VocabParallel);
    });
  });
}

/// dtable[s, h] = sum_o dy[o, s, h] for s < seqLen, 0 after.
template <typename T>
__global__ void positionGradKernel(const T *dy, int64_t outer, int64_t seqLen,
                                   int64_t hidden, int64_t positions,
                                   T *dtable) {
  AUTOSHARD_GRID_LOOP(e, positions * hidden) {
    float acc = 0.0f;
    if (e < seqLen * hidden)
      for (int64_t o = 0; o < outer; ++o)
        acc += toF(dy[o * seqLen * hidden + e]);
    dtable[e] = fromF<T>(acc);
  }
}

BoundKernel bindPositionEmbedding(const KernelSignature &sig) {
  using Op = ops::PositionEmbedding;
  OperandIndex at(sig);
  PositionEmbeddingShape shape = checkPositionEmbedding(sig);
  if (shape.seqLen < 1 || shape.seqLen > shape.positions)
    sig.fail("seq_len " + std::to_string(shape.seqLen) +
             " is out of range [1, " + std::to_string(shape.positions) + "]");
  int64_t bytes = sig.result(Op::out).bytes();
  cudaStream_t s = currentContext().stream;
  return [=](void *const *p) {
    copyAsync(p[at(Op::out)], p[at(Op::table)], bytes, s);
  };
}

BoundKernel bindPositionEmbeddingGrad(const KernelSignature &sig) {
  using Op = ops::PositionEmbeddingGrad;
  OperandIndex at(sig);
  PositionEmbeddingShape shape = checkPositionEmbeddingGrad(sig);
  int64_t outer = shape.outer, seqLen = shape.seqLen, hidden = shape.hidden,
          positions = shape.positions;
  if (seqLen > positions)
    sig.fail("seq_len " + std::to_string(seqLen) + " exceeds num_positions " +
             std::to_string(positions));
  cudaStream_t s = currentContext().stream;
  return withFloat(sig, sig.arg(Op::dy).dtype, "dy",
                   [=](auto t) -> BoundKernel {
                     using T = decltype(t);
                     return [=](void *const *p) {
                       if (positions * hidden == 0)
                         return;
                       positionGradKernel<T>
                           <<<blocksFor(positions * hidden), kThreads, 0, s>>>(
                               in<T>(p[at(Op::dy)]), outer, seqLen, hidden,
                               positions, out<T>(p[at(Op::dtable)]));
                       AUTOSHARD_CUDA_LAUNCHED();
                     };
                   });
}

//===----------------------------------------------------------------------===//
// RoPE
//===----------------------------------------------------------------------===//

/// Rotates the (i, i + D/2) pairs of every [b, p, n] row by the table's
/// angle of (p, i): cs[p * half + i] = (cos, sign * sin).
/// `shard` (device i64; null for rope) offsets the positions by shard * seq
/// (rope_local: the table covers the whole sequence).
template <typename T>
__global__ void ropeKernel(const T *x, T *y, const float2 *cs, int64_t rows,
                           int64_t seq, int64_t heads, int64_t half,
                           const int64_t *shard) {
  const int64_t offset = shard ? *shard * seq : 0;
  AUTOSHARD_GRID_LOOP(e, rows * half) {
    int64_t row = e / half, i = e - row * half;
    int64_t pos = offset + (row / heads) % seq;
    float2 c = cs[pos * half + i];
    const T *xr = x + row * 2 * half;
    T *yr = y + row * 2 * half;
    float x1 = toF(xr[i]), x2 = toF(xr[i + half]);
    yr[i] = fromF<T>(x1 * c.x - x2 * c.y);
    yr[i + half] = fromF<T>(x2 * c.x + x1 * c.y);
  }
}

/// rope / rope_grad, and with `Local` rope_local / rope_local_grad (operand
/// 1 is the shard; the table covers seq_len positions and the kernel reads
/// the shard on the device; the shard must be in 0..seq_len/seq - 1, as
/// dist.axis_index over the sequence's axes guarantees).
template <bool Grad, bool Local = false>
BoundKernel bindRope(const KernelSignature &sig) {
  const TensorType &x = sig.args[0];
  RopeDims shape;
  int64_t positions;
  if constexpr (Local) {
    RopeLocalDims local = checkRopeLocal(sig, Grad);
    shape = local.rope;
    positions = local.seqLen;
  } else {
    shape = checkRope(sig, Grad);
    positions = shape.seq;
  }
  int64_t batch = shape.batch, seq = shape.seq, heads = shape.heads,
          headDim = shape.headDim;
  double theta = shape.theta;
  if (headDim < 2) // the shared check allows an empty head dim
    sig.fail("needs an even head dim and theta > 0, found " + x.str() +
             " and theta " + std::to_string(theta));
  int64_t half = headDim / 2;
  // The CPU kernel's table (Rope.cpp): angles in double, rounded to fp32.
  std::vector<float2> table(std::max<int64_t>(positions * half, 1));
  double sign = Grad ? -1.0 : 1.0;
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t i = 0; i < half; ++i) {
      double invFreq = std::pow(theta, -2.0 * static_cast<double>(i) / headDim);
      double angle = static_cast<double>(p) * invFreq;
      table[p * half + i] =
          make_float2(static_cast<float>(std::cos(angle)),
                      static_cast<float>(sign * std::sin(angle)));
    }
  Scratch cs = scratch(table.size() * sizeof(float2));
  AUTOSHARD_CUDA(cudaMemcpy(cs->data(), table.data(),
                            table.size() * sizeof(float2),
                            cudaMemcpyHostToDevice));
  int64_t rows = batch * seq * heads;
  cudaStream_t s = currentContext().stream;
  return withFloat(sig, x.dtype, "x", [=](auto t) -> BoundKernel {
    using T = decltype(t);
    return [=](void *const *p) {
      if (rows * half == 0)
        return;
      ropeKernel<T><<<blocksFor(rows * half), kThreads, 0, s>>>(
          in<T>(p[0]), out<T>(p[Local ? 2 : 1]), cs->as<float2>(), rows, seq,
          heads, half, Local ? in<int64_t>(p[1]) : nullptr);
      AUTOSHARD_CUDA_LAUNCHED();
    };
  });
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

/// A block of a global tensor (dropout_local): local shape, global
/// row-major strides, and the shard operands setting each sharded dim's
/// offset (shard * local size).
struct DropoutGeometry {
  int rank = 0;
  int64_t shape[16];
  int64_t globalStride[16];
  int numShards = 0;
  int shardDim[16];
  const int64_t *shard[16];
};

template <typename T>
__global__ void dropoutKernel(const T *x, T *y, int64_t n, const int64_t *step,
                              const int64_t *layer, uint64_t seed, int site,
                              uint32_t threshold, float keepScale,
                              DropoutGeometry g, int *err) {
  int64_t st = *step, ly = *layer;
  if (st < 0 || st >= (int64_t(1) << 32) || ly < 0 || ly >= (1 << 16)) {
    if (blockIdx.x == 0 && threadIdx.x == 0)
      raise(err, kErrDropoutRange);
    return;
  }
  DropoutStream stream;
  stream.key = philoxKey(seed);
  stream.step = static_cast<uint32_t>(st);
  stream.layerSite = static_cast<uint32_t>(ly << 16 | site);
  stream.threshold = threshold;
  int64_t offset[16];
  for (int d = 0; d < g.rank; ++d)
    offset[d] = 0;
  for (int k = 0; k < g.numShards; ++k)
    offset[g.shardDim[k]] = *g.shard[k] * g.shape[g.shardDim[k]];
  AUTOSHARD_GRID_LOOP(i, n) {
    uint64_t index = static_cast<uint64_t>(i);
    if (g.numShards > 0) {
      int64_t rest = i, global = 0;
      for (int d = g.rank - 1; d >= 0; --d) {
        global += (rest % g.shape[d] + offset[d]) * g.globalStride[d];
        rest /= g.shape[d];
      }
      index = static_cast<uint64_t>(global);
    }
    bool keep = stream.keep(index);
    y[i] = keep ? fromF<T>(toF(x[i]) * keepScale) : fromF<T>(0.0f);
  }
}

template <bool Local> BoundKernel bindDropout(const KernelSignature &sig) {
  DropoutShape drop = checkDropout(sig, Local);
  int64_t n = drop.numel;
  double rate = drop.rate;
  int64_t site = drop.site;
  if (!(rate >= 0.0 && rate < 1.0))
    sig.fail("rate must be in [0, 1), found " + std::to_string(rate));
  if (site < 0 || site >= (1 << 16))
    sig.fail("site must be in [0, 2^16), found " + std::to_string(site));
  DropoutGeometry g;
  if (Local) {
    if (drop.shape.size() > 16)
      sig.fail("rank over 16");
    g.rank = static_cast<int>(drop.shape.size());
    g.numShards = static_cast<int>(drop.shardDims.size());
    for (int k = 0; k < g.numShards; ++k)
      g.shardDim[k] = static_cast<int>(drop.shardDims[k]);
    int64_t stride = 1;
    for (int d = g.rank - 1; d >= 0; --d) {
      g.shape[d] = drop.shape[d];
      g.globalStride[d] = stride;
      stride *= drop.globalShape[d];
    }
  }
  uint32_t threshold = static_cast<uint32_t>(std::ceil(rate * 16777216.0));
  float keepScale = static_cast<float>(1.0 / (1.0 - rate));
  uint64_t seed = sig.seed;
  const CudaContext &ctx = currentContext();
  cudaStream_t s = ctx.stream;
  int *err = ctx.errorWord;
  size_t result = sig.args.size();
  return withFloat(sig, sig.args[0].dtype, "x", [=](auto t) -> BoundKernel {
    using T = decltype(t);
    return [=](void *const *p) {
      if (n == 0)
        return;
      DropoutGeometry geo = g;
      for (int k = 0; k < geo.numShards; ++k)
        geo.shard[k] = in<int64_t>(p[3 + k]);
      dropoutKernel<T><<<blocksFor(n), kThreads, 0, s>>>(
          in<T>(p[0]), out<T>(p[result]), n, in<int64_t>(p[1]),
          in<int64_t>(p[2]), seed, static_cast<int>(site), threshold, keepScale,
          geo, err);
      AUTOSHARD_CUDA_LAUNCHED();
    };
  });
}

} // namespace

void registerSequenceKernels(KernelTable &t) {
  t.add("embedding", bindEmbedding<false, false>);
  t.add("embedding_grad", bindEmbedding<true, false>);
  t.add("position_embedding", bindPositionEmbedding);
  t.add("position_embedding_grad", bindPositionEmbeddingGrad);
  t.add("vocab_embedding", bindEmbedding<false, true>);
  t.add("vocab_embedding_grad", bindEmbedding<true, true>);
  t.add("rope", bindRope<false>);
  t.add("rope_grad", bindRope<true>);
  t.add("rope_local", bindRope<false, true>);
  t.add("rope_local_grad", bindRope<true, true>);
  // Forward and backward apply the same mask and scale.
  t.add("dropout", bindDropout<false>);
  t.add("dropout_grad", bindDropout<false>);
  t.add("dropout_local", bindDropout<true>);
  t.add("dropout_local_grad", bindDropout<true>);
}

} // namespace autoshard::runtime::cuda::kernels
