//===- Attention.cu - Fused causal attention, forward and backward --------===//
//
// FlashAttention-style kernels (Dao et al. 2022; FlashAttention-2, Dao 2023):
// the score matrix is never stored. Forward: each warp owns a few query rows
// and streams 32-key tiles of K and V through shared memory, keeping an
// online softmax (running max m, running sum l, unnormalised output) per row;
// it writes out = acc / l and lse = m + log l (the backward, and ring
// attention, need lse). Backward (FlashAttention-2, algorithm 2, split into
// two passes so no atomics are needed): delta_i = <dO_i, O_i>; a dQ pass
// (query rows own the warps, keys stream) and a dK/dV pass (key rows own the
// warps, queries of every head of the kv group stream), both recomputing
// P = exp(scale q.k - lse). GQA (Ainslie et al. 2023): query head n reads kv
// head n / (heads / kvHeads). Layouts as the CPU kernel
// (runtime/include/autoshard/runtime/cpu/Attention.h): q, out [B, Sq, H, D];
// k, v [B, Sk, KV, D]; lse [B, H, Sq] (f32). fp32 math on SIMT cores, head
// dim at most 128. attention_block(_grad) (ring attention, algorithms.md
// §2.2) run the same kernels on a block of a longer sequence: the chunk index
// is read on the device and the causal mask compares global positions, so a
// block no query can see does no work. attention_merge is the log-sum-exp
// merge of two partial results (§2.1).
//
//===----------------------------------------------------------------------===//

#include "CudaCommon.h"
#include "DeviceMath.cuh"

namespace autoshard::runtime::cuda::kernels {
namespace {

constexpr int kMaxD = 128;
constexpr int kPerLane = kMaxD / 32; // d = lane + 32 k
constexpr int kWarps = 4;
constexpr int kTile = 32; // keys (or queries) per streamed tile

struct Dims {
  int64_t batch, seqQ, seqK, heads, kvHeads, headDim;
  bool causal;
  float scale;
  /// attention_block: q's chunk index (device i64; null for attention), the
  /// ring step and the chunk count.
  const int64_t *chunk = nullptr;
  int64_t kvStep = 0, numChunks = 1;
  /// The sequence's zig-zag order (SequencePositions.h; 0: original).
  int64_t zigzagChunks = 0;
};

/// The original positions of q's and k's rows (row 0 at 0 for attention;
/// attention_block: chunk c and (c - kv_step) mod num_chunks, contiguous or
/// in zig-zag order). Both increase over their rows (checked on the host).
struct Offsets {
  SequencePositions q, k;
};
__device__ __forceinline__ Offsets offsetsOf(const Dims &s) {
  if (!s.chunk)
    return {{0, s.seqQ, 0}, {0, s.seqK, 0}};
  int64_t c = *s.chunk;
  int64_t kc = ((c - s.kvStep) % s.numChunks + s.numChunks) % s.numChunks;
  int64_t seqLen = s.numChunks * s.seqQ;
  return {{c * s.seqQ, seqLen, s.zigzagChunks},
          {kc * s.seqK, seqLen, s.zigzagChunks}};
}

/// Key j is visible to query i (local rows) under the mask.
__device__ __forceinline__ bool sees(const Dims &s, const Offsets &o, int64_t i,
                                     int64_t j) {
  return i < s.seqQ && j < s.seqK && (!s.causal || o.k.at(j) <= o.q.at(i));
}

/// Keys [0, end) can be visible to the query rows up to lastRow.
__device__ __forceinline__ int64_t keyEndOf(const Dims &s, const Offsets &o,
                                            int64_t lastRow) {
  if (!s.causal)
    return s.seqK;
  return o.k.countAtOrBefore(o.q.at(lastRow), s.seqK);
}

__device__ __forceinline__ int64_t qIndex(const Dims &s, int64_t b, int64_t i,
                                          int64_t n) {
  return ((b * s.seqQ + i) * s.heads + n) * s.headDim;
}
__device__ __forceinline__ int64_t kvIndex(const Dims &s, int64_t b, int64_t j,
                                           int64_t g) {
  return ((b * s.seqK + j) * s.kvHeads + g) * s.headDim;
}

/// Loads `rows` rows of headDim elements (row r at src + index(r)) into
/// dst[r][0..D) (row pitch `pitch`), zero for rows past `valid`.
template <typename T, typename Index>
__device__ void loadTile(float *dst, int pitch, int rows, int64_t valid,
                         int64_t D, const T *src, Index index) {
  for (int e = threadIdx.x; e < rows * D; e += blockDim.x) {
    int r = e / D, d = e - r * D;
    dst[r * pitch + d] = r < valid ? toF(src[index(r) + d]) : 0.0f;
  }
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

template <typename T, int R>
__global__ void __launch_bounds__(kWarps * 32)
    attentionFwdKernel(const T *q, const T *k, const T *v, T *out, float *lse,
                       Dims s) {
  constexpr int kRows = kWarps * R;
  __shared__ float sQ[kRows][kMaxD];
  __shared__ float sK[kTile][kMaxD + 1];
  __shared__ float sV[kTile][kMaxD];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t b = blockIdx.z, n = blockIdx.y, g = n / (s.heads / s.kvHeads);
  const int64_t i0 = blockIdx.x * int64_t(kRows);
  const int64_t D = s.headDim;
  loadTile(&sQ[0][0], kMaxD, kRows, s.seqQ - i0, D, q,
           [&](int r) { return qIndex(s, b, i0 + r, n); });

  float m[R], l[R], acc[R][kPerLane];
  for (int r = 0; r < R; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
    for (int c = 0; c < kPerLane; ++c)
      acc[r][c] = 0.0f;
  }
  const Offsets o = offsetsOf(s);
  int64_t lastRow = min(i0 + kRows, s.seqQ) - 1;
  int64_t keyEnd = keyEndOf(s, o, lastRow);
  for (int64_t j0 = 0; j0 < keyEnd; j0 += kTile) {
    __syncthreads();
    loadTile(&sK[0][0], kMaxD + 1, kTile, s.seqK - j0, D, k,
             [&](int r) { return kvIndex(s, b, j0 + r, g); });
    loadTile(&sV[0][0], kMaxD, kTile, s.seqK - j0, D, v,
             [&](int r) { return kvIndex(s, b, j0 + r, g); });
    __syncthreads();
    const int64_t j = j0 + lane;
    for (int r = 0; r < R; ++r) {
      const int row = warp * R + r;
      const int64_t i = i0 + row;
      bool visible = sees(s, o, i, j);
      float score = -INFINITY;
      if (visible) {
        float dot = 0.0f;
        for (int d = 0; d < D; ++d)
          dot += sQ[row][d] * sK[lane][d];
        score = dot * s.scale;
      }
      float mNew = fmaxf(m[r], warpMax(score));
      if (mNew == -INFINITY)
        continue; // nothing visible yet
      float p = visible ? expf(score - mNew) : 0.0f;
      float correction = expf(m[r] - mNew); // 0 when m was -inf
      l[r] = l[r] * correction + warpSum(p);
      m[r] = mNew;
      for (int c = 0; c < kPerLane; ++c)
        acc[r][c] *= correction;
      for (int jj = 0; jj < kTile; ++jj) {
        float pj = __shfl_sync(0xffffffffu, p, jj);
        for (int c = 0; c < kPerLane; ++c) {
          int d = lane + 32 * c;
          if (d < D)
            acc[r][c] += pj * sV[jj][d];
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    const int64_t i = i0 + warp * R + r;
    if (i >= s.seqQ)
      continue;
    float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    T *o = out + qIndex(s, b, i, n);
    for (int c = 0; c < kPerLane; ++c) {
      int d = lane + 32 * c;
      if (d < D)
        o[d] = fromF<T>(acc[r][c] * inv);
    }
    if (lane == 0)
      lse[(b * s.heads + n) * s.seqQ + i] = m[r] + logf(l[r]);
  }
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

/// delta[b, n, i] = <dO, O> of row (b, i, n); one warp per row.
template <typename T>
__global__ void attentionDeltaKernel(const T *dout, const T *out, float *delta,
                                     Dims s) {
  int64_t row = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  int lane = threadIdx.x & 31;
  int64_t rows = s.batch * s.heads * s.seqQ;
  if (row >= rows)
    return;
  int64_t i = row % s.seqQ, n = (row / s.seqQ) % s.heads,
          b = row / (s.seqQ * s.heads);
  int64_t base = qIndex(s, b, i, n);
  float dot = 0.0f;
  for (int64_t d = lane; d < s.headDim; d += 32)
    dot += toF(dout[base + d]) * toF(out[base + d]);
  dot = warpSum(dot);
  if (lane == 0)
    delta[row] = dot;
}

/// dQ_i = scale sum_j dS_ij k_j, dS = P (dP - delta), dP = dO v^T.
template <typename T, int R>
__global__ void __launch_bounds__(kWarps * 32)
    attentionDqKernel(const T *dout, const T *q, const T *k, const T *v,
                      const float *lse, const float *delta, T *dq, Dims s) {
  constexpr int kRows = kWarps * R;
  __shared__ float sQ[kRows][kMaxD];
  __shared__ float sDO[kRows][kMaxD];
  __shared__ float sK[kTile][kMaxD + 1];
  __shared__ float sV[kTile][kMaxD + 1];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t b = blockIdx.z, n = blockIdx.y, g = n / (s.heads / s.kvHeads);
  const int64_t i0 = blockIdx.x * int64_t(kRows);
  const int64_t D = s.headDim;
  auto qRow = [&](int r) { return qIndex(s, b, i0 + r, n); };
  loadTile(&sQ[0][0], kMaxD, kRows, s.seqQ - i0, D, q, qRow);
  loadTile(&sDO[0][0], kMaxD, kRows, s.seqQ - i0, D, dout, qRow);
  float rowLse[R], rowDelta[R], acc[R][kPerLane];
  for (int r = 0; r < R; ++r) {
    int64_t i = i0 + warp * R + r;
    int64_t at = (b * s.heads + n) * s.seqQ + i;
    rowLse[r] = i < s.seqQ ? lse[at] : 0.0f;
    rowDelta[r] = i < s.seqQ ? delta[at] : 0.0f;
    for (int c = 0; c < kPerLane; ++c)
      acc[r][c] = 0.0f;
  }
  const Offsets o = offsetsOf(s);
  int64_t lastRow = min(i0 + kRows, s.seqQ) - 1;
  int64_t keyEnd = keyEndOf(s, o, lastRow);
  for (int64_t j0 = 0; j0 < keyEnd; j0 += kTile) {
    __syncthreads();
    auto kvRow = [&](int r) { return kvIndex(s, b, j0 + r, g); };
    loadTile(&sK[0][0], kMaxD + 1, kTile, s.seqK - j0, D, k, kvRow);
    loadTile(&sV[0][0], kMaxD + 1, kTile, s.seqK - j0, D, v, kvRow);
    __syncthreads();
    const int64_t j = j0 + lane;
    for (int r = 0; r < R; ++r) {
      const int row = warp * R + r;
      const int64_t i = i0 + row;
      bool visible = sees(s, o, i, j);
      float ds = 0.0f;
      if (visible) {
        float qk = 0.0f, dp = 0.0f;
        for (int d = 0; d < D; ++d) {
          qk += sQ[row][d] * sK[lane][d];
          dp += sDO[row][d] * sV[lane][d];
        }
        float p = expf(qk * s.scale - rowLse[r]);
        ds = p * (dp - rowDelta[r]);
      }
      for (int jj = 0; jj < kTile; ++jj) {
        float dsj = __shfl_sync(0xffffffffu, ds, jj);
        for (int c = 0; c < kPerLane; ++c) {
          int d = lane + 32 * c;
          if (d < D)
            acc[r][c] += dsj * sK[jj][d];
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    const int64_t i = i0 + warp * R + r;
    if (i >= s.seqQ)
      continue;
    T *o = dq + qIndex(s, b, i, n);
    for (int c = 0; c < kPerLane; ++c) {
      int d = lane + 32 * c;
      if (d < D)
        o[d] = fromF<T>(acc[r][c] * s.scale);
    }
  }
}

/// dV_j = sum_i P_ij dO_i, dK_j = scale sum_i dS_ij q_i over the queries of
/// every head of kv head g.
template <typename T, int R>
__global__ void __launch_bounds__(kWarps * 32)
    attentionDkvKernel(const T *dout, const T *q, const T *k, const T *v,
                       const float *lse, const float *delta, T *dk, T *dv,
                       Dims s) {
  constexpr int kRows = kWarps * R;
  __shared__ float sK[kRows][kMaxD];
  __shared__ float sV[kRows][kMaxD];
  __shared__ float sQ[kTile][kMaxD + 1];
  __shared__ float sDO[kTile][kMaxD + 1];
  __shared__ float sLse[kTile], sDelta[kTile];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t b = blockIdx.z, g = blockIdx.y;
  const int64_t group = s.heads / s.kvHeads;
  const int64_t j0 = blockIdx.x * int64_t(kRows);
  const int64_t D = s.headDim;
  auto kvRow = [&](int r) { return kvIndex(s, b, j0 + r, g); };
  loadTile(&sK[0][0], kMaxD, kRows, s.seqK - j0, D, k, kvRow);
  loadTile(&sV[0][0], kMaxD, kRows, s.seqK - j0, D, v, kvRow);
  float accK[R][kPerLane], accV[R][kPerLane];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < kPerLane; ++c)
      accK[r][c] = accV[r][c] = 0.0f;
  // Causal: the first query that can see key j0 (global positions).
  const Offsets o = offsetsOf(s);
  int64_t first = o.q.countAtOrBefore(o.k.at(j0) - 1, s.seqQ);
  int64_t queryStart = s.causal && first > 0 ? (first / kTile) * kTile : 0;
  for (int64_t n = g * group; n < (g + 1) * group; ++n)
    for (int64_t i0 = queryStart; i0 < s.seqQ; i0 += kTile) {
      __syncthreads();
      auto qRow = [&](int r) { return qIndex(s, b, i0 + r, n); };
      loadTile(&sQ[0][0], kMaxD + 1, kTile, s.seqQ - i0, D, q, qRow);
      loadTile(&sDO[0][0], kMaxD + 1, kTile, s.seqQ - i0, D, dout, qRow);
      if (threadIdx.x < kTile) {
        int64_t i = i0 + threadIdx.x;
        int64_t at = (b * s.heads + n) * s.seqQ + i;
        sLse[threadIdx.x] = i < s.seqQ ? lse[at] : 0.0f;
        sDelta[threadIdx.x] = i < s.seqQ ? delta[at] : 0.0f;
      }
      __syncthreads();
      const int64_t i = i0 + lane;
      for (int r = 0; r < R; ++r) {
        const int row = warp * R + r;
        const int64_t j = j0 + row;
        bool visible = sees(s, o, i, j);
        float p = 0.0f, ds = 0.0f;
        if (visible) {
          float qk = 0.0f, dp = 0.0f;
          for (int d = 0; d < D; ++d) {
            qk += sQ[lane][d] * sK[row][d];
            dp += sDO[lane][d] * sV[row][d];
          }
          p = expf(qk * s.scale - sLse[lane]);
          ds = p * (dp - sDelta[lane]);
        }
        for (int ii = 0; ii < kTile; ++ii) {
          float pi = __shfl_sync(0xffffffffu, p, ii);
          float dsi = __shfl_sync(0xffffffffu, ds, ii);
          for (int c = 0; c < kPerLane; ++c) {
            int d = lane + 32 * c;
            if (d < D) {
              accV[r][c] += pi * sDO[ii][d];
              accK[r][c] += dsi * sQ[ii][d];
            }
          }
        }
      }
    }
  for (int r = 0; r < R; ++r) {
    const int64_t j = j0 + warp * R + r;
    if (j >= s.seqK)
      continue;
    int64_t base = kvIndex(s, b, j, g);
    for (int c = 0; c < kPerLane; ++c) {
      int d = lane + 32 * c;
      if (d < D) {
        dk[base + d] = fromF<T>(accK[r][c] * s.scale);
        dv[base + d] = fromF<T>(accV[r][c]);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Merge of two partial results
//===----------------------------------------------------------------------===//

/// One warp per (b, n, i) row: lse = log(exp(a) + exp(c)) computed stably,
/// out = exp(a - lse) outA + exp(c - lse) outB; a -inf side weighs 0.
template <typename T>
__global__ void attentionMergeKernel(const T *outA, const float *lseA,
                                     const T *outB, const float *lseB, T *out,
                                     float *lse, int64_t batch, int64_t seq,
                                     int64_t heads, int64_t headDim) {
  int64_t row = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  int lane = threadIdx.x & 31;
  if (row >= batch * heads * seq)
    return;
  int64_t i = row % seq, n = (row / seq) % heads, b = row / (seq * heads);
  float a = lseA[row], c = lseB[row];
  float merged = -INFINITY, wa = 0.0f, wb = 0.0f;
  if (a != -INFINITY || c != -INFINITY) {
    float hi = fmaxf(a, c), lo = fminf(a, c);
    merged = lo == -INFINITY ? hi : hi + log1pf(expf(lo - hi));
    wa = a == -INFINITY ? 0.0f : expf(a - merged);
    wb = c == -INFINITY ? 0.0f : expf(c - merged);
  }
  int64_t base = ((b * seq + i) * heads + n) * headDim;
  for (int64_t d = lane; d < headDim; d += 32)
    out[base + d] =
        fromF<T>(wa * toF(outA[base + d]) + wb * toF(outB[base + d]));
  __syncwarp();
  if (lane == 0)
    lse[row] = merged;
}

//===----------------------------------------------------------------------===//
// Binders
//===----------------------------------------------------------------------===//

constexpr int kFwdRows = 4; // query rows per warp, forward
constexpr int kBwdRows = 2; // rows per warp, backward passes

/// The kernels' limits on top of the shared checks (scale > 0, head dims
/// 1..kMaxD, at least one key, an f32 lse) and their dims.
Dims kernelDims(const KernelSignature &sig, const AttentionDims &a,
                const TensorType &lse) {
  if (!(a.scale > 0))
    sig.fail("scale must be > 0");
  if (a.headDim < 1 || a.headDim > kMaxD)
    sig.fail("the cuda backend's attention supports head dims 1.." +
             std::to_string(kMaxD) + ", found " + std::to_string(a.headDim));
  if (a.seqK < 1)
    sig.fail("needs at least one key");
  expectType(sig, lse, typeOf(DType::F32, {a.batch, a.heads, a.seqQ}), "lse");
  return Dims{a.batch,   a.seqQ,    a.seqK,   a.heads,
              a.kvHeads, a.headDim, a.causal, static_cast<float>(a.scale)};
}

dim3 gridOf(int64_t rows, int rowsPerBlock, int64_t heads, int64_t batch) {
  return dim3(gridFor(rows, rowsPerBlock), static_cast<unsigned>(heads),
              static_cast<unsigned>(batch));
}

/// attention / attention_block (`Block`: with the chunk index).
template <typename Op, bool Block>
BoundKernel bindAttention(const KernelSignature &sig) {
  AttentionDims a = Block ? checkAttentionBlock(sig) : checkAttention(sig);
  Dims s = kernelDims(sig, a, sig.result(Op::lse));
  s.kvStep = a.kvStep;
  s.numChunks = a.numChunks;
  s.zigzagChunks = a.zigzagChunks;
  cudaStream_t st = currentContext().stream;
  return withFloat.bind(sig, Op::q, [=](auto t, Operands o) {
    using T = decltype(t);
    if (s.batch * s.seqQ * s.heads == 0)
      return;
    Dims d = s;
    if constexpr (Block)
      d.chunk = o.in<int64_t>(Op::chunk);
    attentionFwdKernel<T, kFwdRows>
        <<<gridOf(s.seqQ, kWarps * kFwdRows, s.heads, s.batch), kWarps * 32, 0,
           st>>>(o.in(Op::q, t), o.in(Op::k, t), o.in(Op::v, t),
                 o.out(Op::out, t), o.out<float>(Op::lse), d);
    AUTOSHARD_CUDA_LAUNCHED();
  });
}

/// attention_grad / attention_block_grad (`Block`: with the chunk index).
template <typename Op, bool Block>
BoundKernel bindAttentionGrad(const KernelSignature &sig) {
  AttentionDims a =
      Block ? checkAttentionBlockGrad(sig) : checkAttentionGrad(sig);
  Dims s0 = kernelDims(sig, a, sig.arg(Op::lse));
  s0.kvStep = a.kvStep;
  s0.numChunks = a.numChunks;
  s0.zigzagChunks = a.zigzagChunks;
  cudaStream_t st = currentContext().stream;
  Scratch delta =
      scratch(std::max<int64_t>(s0.batch * s0.heads * s0.seqQ, 1) * 4);
  int64_t kvBytes = sig.arg(Op::k).bytes();
  return withFloat.bind(sig, Op::q, [=](auto t, Operands o) {
    using T = decltype(t);
    Dims s = s0;
    if constexpr (Block)
      s.chunk = o.in<int64_t>(Op::chunk);
    int64_t rows = s.batch * s.heads * s.seqQ;
    if (rows == 0) {
      AUTOSHARD_CUDA(cudaMemsetAsync(o[Op::dk], 0, kvBytes, st));
      AUTOSHARD_CUDA(cudaMemsetAsync(o[Op::dv], 0, kvBytes, st));
      return;
    }
    attentionDeltaKernel<T><<<gridFor(rows * 32, 256), 256, 0, st>>>(
        o.in(Op::dout, t), o.in(Op::out, t), delta->as<float>(), s);
    AUTOSHARD_CUDA_LAUNCHED();
    attentionDqKernel<T, kBwdRows>
        <<<gridOf(s.seqQ, kWarps * kBwdRows, s.heads, s.batch), kWarps * 32, 0,
           st>>>(o.in(Op::dout, t), o.in(Op::q, t), o.in(Op::k, t),
                 o.in(Op::v, t), o.in<float>(Op::lse), delta->as<float>(),
                 o.out(Op::dq, t), s);
    AUTOSHARD_CUDA_LAUNCHED();
    attentionDkvKernel<T, kBwdRows>
        <<<gridOf(s.seqK, kWarps * kBwdRows, s.kvHeads, s.batch), kWarps * 32,
           0, st>>>(o.in(Op::dout, t), o.in(Op::q, t), o.in(Op::k, t),
                    o.in(Op::v, t), o.in<float>(Op::lse), delta->as<float>(),
                    o.out(Op::dk, t), o.out(Op::dv, t), s);
    AUTOSHARD_CUDA_LAUNCHED();
  });
}

} // namespace

template <> BoundKernel bind<ops::Attention>(const KernelSignature &sig) {
  return bindAttention<ops::Attention, false>(sig);
}

template <> BoundKernel bind<ops::AttentionGrad>(const KernelSignature &sig) {
  return bindAttentionGrad<ops::AttentionGrad, false>(sig);
}

template <> BoundKernel bind<ops::AttentionBlock>(const KernelSignature &sig) {
  return bindAttention<ops::AttentionBlock, true>(sig);
}

template <>
BoundKernel bind<ops::AttentionBlockGrad>(const KernelSignature &sig) {
  return bindAttentionGrad<ops::AttentionBlockGrad, true>(sig);
}

template <> BoundKernel bind<ops::AttentionMerge>(const KernelSignature &sig) {
  using Op = ops::AttentionMerge;
  AttentionMergeDims d = checkAttentionMerge(sig);
  if (d.lseType != DType::F32)
    sig.fail("the cuda backend's attention_merge needs an f32 lse");
  cudaStream_t st = currentContext().stream;
  return withFloat.bind(sig, Op::out_a, [=](auto t, Operands o) {
    int64_t rows = d.batch * d.heads * d.seq;
    if (rows == 0)
      return;
    attentionMergeKernel<decltype(t)><<<gridFor(rows * 32, 256), 256, 0, st>>>(
        o.in(Op::out_a, t), o.in<float>(Op::lse_a), o.in(Op::out_b, t),
        o.in<float>(Op::lse_b), o.out(Op::out, t), o.out<float>(Op::lse),
        d.batch, d.seq, d.heads, d.headDim);
    AUTOSHARD_CUDA_LAUNCHED();
  });
}

void registerAttentionKernels(KernelTable &t) {
  addBinders<ops::Attention, ops::AttentionGrad, ops::AttentionBlock,
             ops::AttentionBlockGrad, ops::AttentionMerge>(t);
}

} // namespace autoshard::runtime::cuda::kernels
