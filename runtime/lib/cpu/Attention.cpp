//===- Attention.cpp - CPU scaled dot-product attention kernels -----------===//
//
// Per (batch, query head) and block of kQueryBlock query rows:
//   S = scale * Q_blk K^T                       (GEMM, strided rows)
//   forward:  P = softmax(S masked), lse = log-sum-exp per row, O = P V
//   backward: P = exp(S - lse), dV += P^T dO, dP = dO V^T,
//             dS = P * (dP - rowsum(dO * O)), dQ = scale dS K,
//             dK += scale dS^T Q_blk
// (FlashAttention-2, Dao 2023, algorithm 2, with the whole key range of a
// block materialised; causal blocks only read keys up to their last row.)
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/cpu/Attention.h"

#include "Blas.h"
#include "Check.h"
#include "Parallel.h"
#include "VecMath.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace autoshard::runtime::cpu {
namespace {

constexpr int64_t kQueryBlock = 64;

void checkShape(const char *op, const AttentionShape &s) {
  detail::checkAtLeast(op, "batch", s.batch, 0);
  detail::checkAtLeast(op, "query length", s.seqQ, 0);
  detail::checkAtLeast(op, "key length", s.seqK, 1);
  detail::checkAtLeast(op, "heads", s.heads, 1);
  detail::checkAtLeast(op, "kv heads", s.kvHeads, 1);
  detail::checkAtLeast(op, "head dim", s.headDim, 1);
  if (s.heads % s.kvHeads != 0)
    detail::fail(op, "heads (" + std::to_string(s.heads) +
                         ") must be a multiple of kv heads (" +
                         std::to_string(s.kvHeads) + ")");
  if (s.causal && s.seqQ != s.seqK)
    detail::fail(op, "causal attention needs equal query and key lengths, "
                     "got " +
                         std::to_string(s.seqQ) + " and " +
                         std::to_string(s.seqK));
  if (!(s.scale > 0.0))
    detail::fail(op, "scale must be > 0, got " + std::to_string(s.scale));
}

/// Pointers and leading dims of one (batch, query head) problem and its
/// current query block, straight into the [B, S, heads, D] layouts.
struct HeadBlock {
  int64_t qOffset;  // element offset of (b, i0, n, 0) in q/out/dq/dout
  int64_t kvOffset; // element offset of (b, 0, g, 0) in k/v/dk/dv
  int64_t ldq;      // heads * headDim
  int64_t ldkv;     // kvHeads * headDim
  int64_t rows;     // query rows in this block
  int64_t cols;     // keys this block can see
  int64_t lseOffset;
  int64_t firstRow;

  /// Keys visible to row r of the block (0 for a row that sees none).
  int64_t visible(const AttentionShape &s, int64_t r) const {
    if (!s.causal)
      return cols;
    return std::clamp<int64_t>(s.qOffset + firstRow + r - s.kOffset + 1, 0,
                               cols);
  }
};

/// Calls fn(block, scratch) for every (batch, head, query block). The
/// (batch, kv head) pairs run in parallel: each owns its rows of dK and dV,
/// so no two threads write the same element and the result does not depend
/// on the thread count. `scratch` is a kQueryBlock x seqK buffer per pair
/// (two of them: scratch and scratch + kQueryBlock * seqK).
template <typename T, typename Fn>
void forEachBlock(const AttentionShape &s, Fn fn) {
  const int64_t group = s.heads / s.kvHeads;
  const int64_t pairs = s.batch * s.kvHeads;
  const int64_t scratchNumel = 2 * kQueryBlock * s.seqK;
  detail::parallelChunks(pairs, 1, [&](int64_t pair, int64_t, int64_t) {
    std::vector<T> scratch(scratchNumel);
    const int64_t b = pair / s.kvHeads, g = pair % s.kvHeads;
    for (int64_t n = g * group; n < (g + 1) * group; ++n)
      for (int64_t i0 = 0; i0 < s.seqQ; i0 += kQueryBlock) {
        HeadBlock blk;
        blk.rows = std::min(kQueryBlock, s.seqQ - i0);
        // Causal: keys up to the block's last row (global positions).
        blk.cols = s.causal
                       ? std::clamp<int64_t>(
                             s.qOffset + i0 + blk.rows - s.kOffset, 0, s.seqK)
                       : s.seqK;
        blk.ldq = s.heads * s.headDim;
        blk.ldkv = s.kvHeads * s.headDim;
        blk.qOffset = ((b * s.seqQ + i0) * s.heads + n) * s.headDim;
        blk.kvOffset = (b * s.seqK * s.kvHeads + n / group) * s.headDim;
        blk.lseOffset = (b * s.heads + n) * s.seqQ + i0;
        blk.firstRow = i0;
        fn(blk, scratch.data());
      }
  });
}

/// row[j] = exp(row[j] - shift) for j < n; returns their sum.
template <typename T> T expShiftSum(T *row, int64_t n, T shift) {
#if AUTOSHARD_HAVE_SLEEF_AVX2
  if constexpr (std::is_same_v<T, float>) {
    if (detail::hasAvx2Fma())
      return detail::avx2::expShiftSum(row, n, shift);
  }
#endif
  T sum = T(0);
  for (int64_t j = 0; j < n; ++j) {
    row[j] = std::exp(row[j] - shift);
    sum += row[j];
  }
  return sum;
}

/// scores [rows, cols] = scale * Q_blk K^T.
template <typename T>
void blockScores(const T *q, const T *k, const HeadBlock &blk,
                 const AttentionShape &s, T *scores) {
  detail::gemm<T>(false, true, blk.rows, blk.cols, s.headDim,
                  static_cast<T>(s.scale), q + blk.qOffset, blk.ldq,
                  k + blk.kvOffset, blk.ldkv, T(0), scores, blk.cols);
}

} // namespace

template <typename T, typename L>
void attention(const T *q, const T *k, const T *v, T *out, L *lse,
               const AttentionShape &shape) {
  checkShape("attention", shape);
  forEachBlock<T>(shape, [&](const HeadBlock &blk, T *scores) {
    if (blk.cols == 0) { // a block that sees no key (causal block skipping)
      for (int64_t r = 0; r < blk.rows; ++r) {
        std::fill_n(out + blk.qOffset + r * blk.ldq, shape.headDim, T(0));
        lse[blk.lseOffset + r] = -std::numeric_limits<L>::infinity();
      }
      return;
    }
    blockScores(q, k, blk, shape, scores);
    for (int64_t r = 0; r < blk.rows; ++r) {
      T *row = scores + r * blk.cols;
      const int64_t visible = blk.visible(shape, r);
      if (visible == 0) {
        std::fill(row, row + blk.cols, T(0));
        lse[blk.lseOffset + r] = -std::numeric_limits<L>::infinity();
        continue;
      }
      const T maxScore = *std::max_element(row, row + visible);
      const T sum = expShiftSum(row, visible, maxScore);
      const T inv = T(1) / sum;
      for (int64_t j = 0; j < visible; ++j)
        row[j] *= inv;
      std::fill(row + visible, row + blk.cols, T(0));
      lse[blk.lseOffset + r] = static_cast<L>(maxScore + std::log(sum));
    }
    detail::gemm<T>(false, false, blk.rows, shape.headDim, blk.cols, T(1),
                    scores, blk.cols, v + blk.kvOffset, blk.ldkv, T(0),
                    out + blk.qOffset, blk.ldq);
  });
}

template <typename T, typename L>
void attentionGrad(const T *dout, const T *q, const T *k, const T *v,
                   const T *out, const L *lse, T *dq, T *dk, T *dv,
                   const AttentionShape &shape) {
  checkShape("attention_grad", shape);
  const int64_t kvNumel =
      shape.batch * shape.seqK * shape.kvHeads * shape.headDim;
  std::fill(dk, dk + kvNumel, T(0));
  std::fill(dv, dv + kvNumel, T(0));
  const T scale = static_cast<T>(shape.scale);
  forEachBlock<T>(shape, [&](const HeadBlock &blk, T *scratch) {
    if (blk.cols == 0) { // no visible key: dq = 0, nothing for dk, dv
      for (int64_t r = 0; r < blk.rows; ++r)
        std::fill_n(dq + blk.qOffset + r * blk.ldq, shape.headDim, T(0));
      return;
    }
    T *p = scratch;
    T *dp = scratch + kQueryBlock * shape.seqK;
    blockScores(q, k, blk, shape, p);
    for (int64_t r = 0; r < blk.rows; ++r) {
      T *row = p + r * blk.cols;
      const int64_t visible = blk.visible(shape, r);
      const T rowLse = static_cast<T>(lse[blk.lseOffset + r]);
      expShiftSum(row, visible, rowLse);
      std::fill(row + visible, row + blk.cols, T(0));
    }
    const T *doutBlk = dout + blk.qOffset;
    // dV += P^T dO.
    detail::gemm<T>(true, false, blk.cols, shape.headDim, blk.rows, T(1), p,
                    blk.cols, doutBlk, blk.ldq, T(1), dv + blk.kvOffset,
                    blk.ldkv);
    // dP = dO V^T.
    detail::gemm<T>(false, true, blk.rows, blk.cols, shape.headDim, T(1),
                    doutBlk, blk.ldq, v + blk.kvOffset, blk.ldkv, T(0), dp,
                    blk.cols);
    // dS = P * (dP - D), D = rowsum(dO * O); masked entries have P = 0.
    for (int64_t r = 0; r < blk.rows; ++r) {
      const T *doRow = doutBlk + r * blk.ldq;
      const T *oRow = out + blk.qOffset + r * blk.ldq;
      T delta = T(0);
      for (int64_t d = 0; d < shape.headDim; ++d)
        delta += doRow[d] * oRow[d];
      T *dpRow = dp + r * blk.cols;
      const T *pRow = p + r * blk.cols;
      for (int64_t j = 0; j < blk.cols; ++j)
        dpRow[j] = pRow[j] * (dpRow[j] - delta);
    }
    // dQ = scale dS K; dK += scale dS^T Q.
    detail::gemm<T>(false, false, blk.rows, shape.headDim, blk.cols, scale, dp,
                    blk.cols, k + blk.kvOffset, blk.ldkv, T(0),
                    dq + blk.qOffset, blk.ldq);
    detail::gemm<T>(true, false, blk.cols, shape.headDim, blk.rows, scale, dp,
                    blk.cols, q + blk.qOffset, blk.ldq, T(1), dk + blk.kvOffset,
                    blk.ldkv);
  });
}

template <typename T, typename L>
void attentionMerge(const T *outA, const L *lseA, const T *outB, const L *lseB,
                    T *out, L *lse, int64_t batch, int64_t seq, int64_t heads,
                    int64_t headDim) {
  detail::checkAtLeast("attention_merge", "batch", batch, 0);
  detail::checkAtLeast("attention_merge", "seq", seq, 0);
  detail::checkAtLeast("attention_merge", "heads", heads, 1);
  detail::checkAtLeast("attention_merge", "head dim", headDim, 1);
  const L negInf = -std::numeric_limits<L>::infinity();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t n = 0; n < heads; ++n)
      for (int64_t i = 0; i < seq; ++i) {
        const int64_t at = (b * heads + n) * seq + i;
        const int64_t row = ((b * seq + i) * heads + n) * headDim;
        const L a = lseA[at], c = lseB[at];
        // Weights exp(lse_x - lse); a -inf side weighs 0 (and two -inf
        // sides stay -inf with out 0, never NaN).
        T wa = T(0), wb = T(0);
        L merged = negInf;
        if (a != negInf || c != negInf) {
          const L hi = std::max(a, c), lo = std::min(a, c);
          merged = lo == negInf ? hi : hi + std::log1p(std::exp(lo - hi));
          wa = a == negInf ? T(0) : static_cast<T>(std::exp(a - merged));
          wb = c == negInf ? T(0) : static_cast<T>(std::exp(c - merged));
        }
        for (int64_t d = 0; d < headDim; ++d)
          out[row + d] = wa * outA[row + d] + wb * outB[row + d];
        lse[at] = merged;
      }
}

#define INSTANTIATE(T, L)                                                      \
  template void attention<T, L>(const T *, const T *, const T *, T *, L *,     \
                                const AttentionShape &);                       \
  template void attentionGrad<T, L>(const T *, const T *, const T *,           \
                                    const T *, const T *, const L *, T *, T *, \
                                    T *, const AttentionShape &);              \
  template void attentionMerge<T, L>(const T *, const L *, const T *,          \
                                     const L *, T *, L *, int64_t, int64_t,    \
                                     int64_t, int64_t);
INSTANTIATE(float, float)
INSTANTIATE(double, float)
INSTANTIATE(double, double)

} // namespace autoshard::runtime::cpu
