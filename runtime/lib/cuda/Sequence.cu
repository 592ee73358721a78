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

/// embedding / vocab_embedding (`VocabParallel`: the shard operand offsets
/// the ids); the kernel of the table's element type.
template <typename Op, bool VocabParallel>
BoundKernel bindEmbedding(const KernelSignature &sig) {
  EmbeddingShape e = checkEmbedding(sig, VocabParallel);
  int64_t n = e.numIds, vocab = e.vocab, hidden = e.hidden;
  const CudaContext &ctx = currentContext();
  cudaStream_t s = ctx.stream;
  int *err = ctx.errorWord;
  return withFloat.bindWithIds(
      sig, Op::table, Op::ids, [=](auto t, auto i, Operands o) {
        const int64_t *shard = nullptr;
        if constexpr (VocabParallel)
          shard = o.in<int64_t>(Op::shard);
        launchGridLoop(n * hidden, s, embeddingKernel<decltype(t), decltype(i)>,
                       o.in(Op::ids, i), n, o.in(Op::table, t), vocab, hidden,
                       o.out(Op::out, t), shard, !VocabParallel, err);
      });
}

/// embedding_grad / vocab_embedding_grad of table element type T (a bf16
/// table accumulates in an fp32 scratch copy) and id type I.
template <typename Op, bool VocabParallel, typename T, typename I>
BoundKernel embeddingBwd(const KernelSignature &sig, int64_t n, int64_t vocab,
                         int64_t hidden) {
  const CudaContext &ctx = currentContext();
  cudaStream_t s = ctx.stream;
  int *err = ctx.errorWord;
  constexpr bool isBf16 = std::is_same_v<T, bf16>;
  Scratch acc = scratch(isBf16 ? vocab * hidden * int64_t(sizeof(float)) : 0);
  return bindOperands(sig, [=](Operands o) {
    T *dtable = o.out<T>(Op::dtable);
    float *sum = isBf16 ? acc->as<float>() : reinterpret_cast<float *>(dtable);
    AUTOSHARD_CUDA(cudaMemsetAsync(sum, 0, vocab * hidden * sizeof(float), s));
    const int64_t *shard = nullptr;
    if constexpr (VocabParallel)
      shard = o.in<int64_t>(Op::shard);
    launchGridLoop(n * hidden, s, embeddingGradKernel<I>, o.in<I>(Op::ids), n,
                   isBf16 ? nullptr : o.in<float>(Op::dy), o[Op::dy], isBf16,
                   vocab, hidden, sum, shard, !VocabParallel, err);
    if constexpr (isBf16) {
      toBf16Kernel<<<gridLoopBlocks(vocab * hidden), kGridLoopThreads, 0, s>>>(
          sum, reinterpret_cast<bf16 *>(dtable), vocab * hidden);
      AUTOSHARD_CUDA_LAUNCHED();
    }
  });
}

/// embedding_grad / vocab_embedding_grad: the kernel of dy's element type.
template <typename Op, bool VocabParallel>
BoundKernel bindEmbeddingGrad(const KernelSignature &sig) {
  EmbeddingShape e = checkEmbeddingGrad(sig, VocabParallel);
  return withFloatAndId(sig, Op::dy, Op::ids, [&](auto t, auto i) {
    return embeddingBwd<Op, VocabParallel, decltype(t), decltype(i)>(
        sig, e.numIds, e.vocab, e.hidden);
  });
}

/// dtable[s, h] = sum_o dy[o, p, h] for s < seqLen, 0 after, where p is
/// the row holding position s (p = s unless the sequence is in zig-zag
/// order of `zigzag` chunks, SequencePositions.h).
template <typename T>
__global__ void positionGradKernel(const T *dy, int64_t outer, int64_t seqLen,
                                   int64_t hidden, int64_t positions,
                                   int64_t zigzag, T *dtable) {
  AUTOSHARD_GRID_LOOP(e, positions * hidden) {
    float acc = 0.0f;
    if (e < seqLen * hidden) {
      int64_t row = zigzagIndex(e / hidden, seqLen, zigzag);
      int64_t at = row * hidden + e % hidden;
      for (int64_t o = 0; o < outer; ++o)
        acc += toF(dy[o * seqLen * hidden + at]);
    }
    dtable[e] = fromF<T>(acc);
  }
}

/// out[p, h] = table[zigzagPosition(p), h]: the rows of a sequence in
/// zig-zag order of `zigzag` chunks.
template <typename T>
__global__ void positionRowsKernel(const T *table, int64_t seqLen,
                                   int64_t hidden, int64_t zigzag, T *out) {
  AUTOSHARD_GRID_LOOP(e, seqLen * hidden) {
    int64_t p = e / hidden;
    out[e] = table[zigzagPosition(p, seqLen, zigzag) * hidden + e % hidden];
  }
}

} // namespace

template <> BoundKernel bind<ops::Embedding>(const KernelSignature &sig) {
  return bindEmbedding<ops::Embedding, false>(sig);
}

template <> BoundKernel bind<ops::EmbeddingGrad>(const KernelSignature &sig) {
  return bindEmbeddingGrad<ops::EmbeddingGrad, false>(sig);
}

template <> BoundKernel bind<ops::VocabEmbedding>(const KernelSignature &sig) {
  return bindEmbedding<ops::VocabEmbedding, true>(sig);
}

template <>
BoundKernel bind<ops::VocabEmbeddingGrad>(const KernelSignature &sig) {
  return bindEmbeddingGrad<ops::VocabEmbeddingGrad, true>(sig);
}

template <>
BoundKernel bind<ops::PositionEmbedding>(const KernelSignature &sig) {
  using Op = ops::PositionEmbedding;
  PositionEmbeddingShape shape = checkPositionEmbedding(sig);
  if (shape.seqLen < 1 || shape.seqLen > shape.positions)
    sig.fail("seq_len " + std::to_string(shape.seqLen) +
             " is out of range [1, " + std::to_string(shape.positions) + "]");
  int64_t bytes = sig.result(Op::out).bytes();
  cudaStream_t s = currentContext().stream;
  if (shape.zigzagChunks > 0) {
    int64_t seqLen = shape.seqLen, hidden = shape.hidden,
            zigzag = shape.zigzagChunks;
    return withFloat.bind(sig, Op::table, [=](auto t, Operands o) {
      launchGridLoop(seqLen * hidden, s, positionRowsKernel<decltype(t)>,
                     o.in(Op::table, t), seqLen, hidden, zigzag,
                     o.out(Op::out, t));
    });
  }
  return bindOperands(
      sig, [=](Operands o) { copyAsync(o[Op::out], o[Op::table], bytes, s); });
}

template <>
BoundKernel bind<ops::PositionEmbeddingGrad>(const KernelSignature &sig) {
  using Op = ops::PositionEmbeddingGrad;
  PositionEmbeddingShape shape = checkPositionEmbeddingGrad(sig);
  int64_t outer = shape.outer, seqLen = shape.seqLen, hidden = shape.hidden,
          positions = shape.positions, zigzag = shape.zigzagChunks;
  if (seqLen > positions)
    sig.fail("seq_len " + std::to_string(seqLen) + " exceeds num_positions " +
             std::to_string(positions));
  cudaStream_t s = currentContext().stream;
  return withFloat.bind(sig, Op::dy, [=](auto t, Operands o) {
    launchGridLoop(positions * hidden, s, positionGradKernel<decltype(t)>,
                   o.in(Op::dy, t), outer, seqLen, hidden, positions, zigzag,
                   o.out(Op::dtable, t));
  });
}

namespace {

/// withFloat.bind over `typed`, the first arg, named x in the message by
/// the forward and the backward op alike (the backward's is dy): the two
/// share one binder.
template <typename Slot, typename Run>
BoundKernel bindNamingX(const KernelSignature &sig, Slot typed, Run run) {
  return withFloat(sig, sig.type(typed).dtype, "x", [&](auto t) {
    return bindOperands(sig, [=](Operands o) { run(t, o); });
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

/// rope / rope_grad (`Op` from `input` to `output`), and with `Local`
/// rope_local / rope_local_grad (with the shard; the table covers seq_len
/// positions and the kernel reads the shard on the device; the shard must
/// be in 0..seq_len/seq - 1, as dist.axis_index over the sequence's axes
/// guarantees).
template <typename Op, bool Grad, bool Local>
BoundKernel bindRope(const KernelSignature &sig, ArgSlot input,
                     ResultSlot output) {
  const TensorType &x = sig.arg(input);
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
      // Row p of a sequence in zig-zag order holds position pi(p).
      double angle = static_cast<double>(
                         zigzagPosition(p, positions, shape.zigzagChunks)) *
                     invFreq;
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
  return bindNamingX(sig, input, [=](auto t, Operands o) {
    const int64_t *shard = nullptr;
    if constexpr (Local)
      shard = o.in<int64_t>(Op::shard);
    launchGridLoop(rows * half, s, ropeKernel<decltype(t)>, o.in(input, t),
                   o.out(output, t), cs->as<float2>(), rows, seq, heads, half,
                   shard);
  });
}

} // namespace

template <> BoundKernel bind<ops::Rope>(const KernelSignature &sig) {
  using Op = ops::Rope;
  return bindRope<Op, false, false>(sig, Op::x, Op::y);
}

template <> BoundKernel bind<ops::RopeGrad>(const KernelSignature &sig) {
  using Op = ops::RopeGrad;
  return bindRope<Op, true, false>(sig, Op::dy, Op::dx);
}

template <> BoundKernel bind<ops::RopeLocal>(const KernelSignature &sig) {
  using Op = ops::RopeLocal;
  return bindRope<Op, false, true>(sig, Op::x, Op::y);
}

template <> BoundKernel bind<ops::RopeLocalGrad>(const KernelSignature &sig) {
  using Op = ops::RopeLocalGrad;
  return bindRope<Op, true, true>(sig, Op::dy, Op::dx);
}

namespace {

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
  /// > 0: dim rank - 2 is a sequence of seqLen positions in zig-zag order
  /// (its coordinate keys the mask as the original position).
  int64_t zigzagChunks = 0, seqLen = 0;
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
    if (g.numShards > 0 || g.zigzagChunks > 0) {
      int64_t rest = i, global = 0;
      for (int d = g.rank - 1; d >= 0; --d) {
        int64_t c = rest % g.shape[d] + offset[d];
        if (g.zigzagChunks > 0 && d == g.rank - 2)
          c = zigzagPosition(c, g.seqLen, g.zigzagChunks);
        global += c * g.globalStride[d];
        rest /= g.shape[d];
      }
      index = static_cast<uint64_t>(global);
    }
    bool keep = stream.keep(index);
    y[i] = keep ? fromF<T>(toF(x[i]) * keepScale) : fromF<T>(0.0f);
  }
}

/// dropout / dropout_grad (`Op` from `input` to `output`; forward and backward
/// apply the same mask and scale), and with `Local` dropout_local /
/// dropout_local_grad (with the shards).
template <typename Op, bool Local>
BoundKernel bindDropout(const KernelSignature &sig, ArgSlot input,
                        ResultSlot output) {
  DropoutShape drop = checkDropout(sig, Local);
  int64_t n = drop.numel;
  double rate = drop.rate;
  int64_t site = drop.site;
  if (!(rate >= 0.0 && rate < 1.0))
    sig.fail("rate must be in [0, 1), found " + std::to_string(rate));
  if (site < 0 || site >= (1 << 16))
    sig.fail("site must be in [0, 2^16), found " + std::to_string(site));
  DropoutGeometry g;
  if (Local || drop.zigzagChunks > 0) {
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
    g.zigzagChunks = drop.zigzagChunks;
    if (g.zigzagChunks > 0)
      g.seqLen = drop.globalShape[g.rank - 2];
  }
  uint32_t threshold = static_cast<uint32_t>(std::ceil(rate * 16777216.0));
  float keepScale = static_cast<float>(1.0 / (1.0 - rate));
  uint64_t seed = sig.seed;
  const CudaContext &ctx = currentContext();
  cudaStream_t s = ctx.stream;
  int *err = ctx.errorWord;
  return bindNamingX(sig, input, [=](auto t, Operands o) {
    DropoutGeometry geo = g;
    if constexpr (Local)
      for (int k = 0; k < geo.numShards; ++k)
        geo.shard[k] = in<int64_t>(o.at(Op::shards, k));
    launchGridLoop(n, s, dropoutKernel<decltype(t)>, o.in(input, t),
                   o.out(output, t), n, o.in<int64_t>(Op::step),
                   o.in<int64_t>(Op::layer), seed, static_cast<int>(site),
                   threshold, keepScale, geo, err);
  });
}

} // namespace

template <> BoundKernel bind<ops::Dropout>(const KernelSignature &sig) {
  using Op = ops::Dropout;
  return bindDropout<Op, false>(sig, Op::x, Op::y);
}

template <> BoundKernel bind<ops::DropoutGrad>(const KernelSignature &sig) {
  using Op = ops::DropoutGrad;
  return bindDropout<Op, false>(sig, Op::dy, Op::dx);
}

template <> BoundKernel bind<ops::DropoutLocal>(const KernelSignature &sig) {
  using Op = ops::DropoutLocal;
  return bindDropout<Op, true>(sig, Op::x, Op::y);
}

template <>
BoundKernel bind<ops::DropoutLocalGrad>(const KernelSignature &sig) {
  using Op = ops::DropoutLocalGrad;
  return bindDropout<Op, true>(sig, Op::dy, Op::dx);
}

void registerSequenceKernels(KernelTable &t) {
  addBinders<ops::Embedding, ops::EmbeddingGrad, ops::PositionEmbedding,
             ops::PositionEmbeddingGrad, ops::VocabEmbedding,
             ops::VocabEmbeddingGrad, ops::Rope, ops::RopeGrad, ops::RopeLocal,
             ops::RopeLocalGrad, ops::Dropout, ops::DropoutGrad,
             ops::DropoutLocal, ops::DropoutLocalGrad>(t);
}

} // namespace autoshard::runtime::cuda::kernels
