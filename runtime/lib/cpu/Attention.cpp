//===- Attention.cpp - CPU scaled dot-product attention kernels -----------===//
//
// FlashAttention-2 (Dao 2023), blocked over queries and keys. Per (batch,
// query head) and block of kAttentionQueryBlock (64) query rows, the keys the
// block can see are visited in blocks of kAttentionKeyBlock (512) columns:
//   S_j = scale * Q_blk K_j^T                   (GEMM, strided rows)
//   forward (algorithm 1): online softmax over the key blocks with a running
//     max m and sum l per row; O is rescaled by exp(m_old - m_new) when the
//     max grows, lse = m + log l. In the last key block P is scaled by 1 / l
//     before O += P V and O by exp(m_old - m_new) / l, so that a block whose
//     keys fit in one key block computes exactly the plain softmax:
//     P = exp(S - max) / sum, O = P V (bitwise the kernel without key blocks).
//   backward (algorithm 2): D = rowsum(dO * O) once per query block; per key
//     block P = exp(S_j - lse), dV_j += P^T dO, dP = dO V_j^T,
//     dS = P * (dP - D), dQ += scale dS K_j (the first key block overwrites),
//     dK_j += scale dS^T Q_blk.
// Causal: a query block only visits keys up to its last row (key blocks above
// the diagonal are skipped), the diagonal block is masked per row. Scratch is
// 2 x 64 x min(512, seqK) elements per (batch, kv head) pair, whatever seqK.
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

constexpr int64_t kQueryBlock = kAttentionQueryBlock;
constexpr int64_t kKeyBlock = kAttentionKeyBlock;

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
  if (s.causal &&
      (!s.qPos.increasingOver(s.seqQ) || !s.kPos.increasingOver(s.seqK)))
    detail::fail(op, "causal attention on zig-zag positions needs blocks "
                     "within one rank's chunk pair, got query rows from " +
                         std::to_string(s.qPos.start) + " and key rows from " +
                         std::to_string(s.kPos.start) + " of " +
                         std::to_string(s.qPos.seqLen) + " in " +
                         std::to_string(s.qPos.zigzagChunks) + " chunks");
}

/// Columns of a score block: min(kKeyBlock, seqK) (the scratch's row length).
int64_t keyBlockCols(const AttentionShape &s) {
  return std::min(kKeyBlock, s.seqK);
}

/// Pointers and leading dims of one (batch, query head) problem and its
/// current query block, straight into the [B, S, heads, D] layouts.
struct HeadBlock {
  int64_t qOffset;  // element offset of (b, i0, n, 0) in q/out/dq/dout
  int64_t kvOffset; // element offset of (b, 0, g, 0) in k/v/dk/dv
  int64_t ldq;      // heads * headDim
  int64_t ldkv;     // kvHeads * headDim
  int64_t rows;     // query rows in this block
  int64_t cols;     // keys this block can see (a prefix of the key range)
  int64_t lseOffset;
  int64_t firstRow;

  /// Keys visible to row r of the block (0 for a row that sees none).
  int64_t visible(const AttentionShape &s, int64_t r) const {
    if (!s.causal)
      return cols;
    return std::min(s.kPos.countAtOrBefore(s.qPos.at(firstRow + r), s.seqK),
                    cols);
  }
};

/// Key columns [first, first + cols) of a query block: cols <= kKeyBlock.
struct KeyBlock {
  int64_t first;
  int64_t cols;
  bool isFirst, isLast;

  /// Element offset of key `first` in k/v/dk/dv, from the head's kvOffset.
  int64_t kvOffset(const HeadBlock &blk) const {
    return blk.kvOffset + first * blk.ldkv;
  }
  /// Columns of this key block that row r sees (visibility is a prefix).
  int64_t visible(const HeadBlock &blk, const AttentionShape &s,
                  int64_t r) const {
    return std::clamp<int64_t>(blk.visible(s, r) - first, 0, cols);
  }
};

/// Calls fn(kb) for the key blocks of `blk`, in key order. Keys past
/// blk.cols (above the causal diagonal) are never visited.
template <typename Fn> void forEachKeyBlock(const HeadBlock &blk, Fn fn) {
  for (int64_t j0 = 0; j0 < blk.cols; j0 += kKeyBlock) {
    KeyBlock kb;
    kb.first = j0;
    kb.cols = std::min(kKeyBlock, blk.cols - j0);
    kb.isFirst = j0 == 0;
    kb.isLast = j0 + kb.cols == blk.cols;
    fn(kb);
  }
}

/// Calls onPair(batch, kv head), then fn(block, scratch) for every (batch,
/// head, query block) of that pair. The (batch, kv head) pairs run in parallel:
/// each owns its rows of dK and dV, so no two threads write the same element
/// and the result does not depend on the thread count. `scratch` is two
/// kQueryBlock x keyBlockCols(s) buffers per pair (scratch and scratch +
/// kQueryBlock * keyBlockCols(s)), independent of seqK beyond one key block.
template <typename T, typename PairFn, typename Fn>
void forEachBlock(const AttentionShape &s, PairFn onPair, Fn fn) {
  const int64_t group = s.heads / s.kvHeads;
  const int64_t pairs = s.batch * s.kvHeads;
  const size_t scratchNumel = 2 * kQueryBlock * keyBlockCols(s);
  detail::parallelChunks(pairs, 1, [&](int64_t pair, int64_t, int64_t) {
    // One scratch per thread, kept between calls: a fresh 2 x 64 x 512
    // buffer per pair cost more than the pair's softmax at short sequences.
    thread_local std::vector<T> scratch;
    if (scratch.size() < scratchNumel)
      scratch.resize(scratchNumel);
    const int64_t b = pair / s.kvHeads, g = pair % s.kvHeads;
    onPair(b, g);
    for (int64_t n = g * group; n < (g + 1) * group; ++n)
      for (int64_t i0 = 0; i0 < s.seqQ; i0 += kQueryBlock) {
        HeadBlock blk;
        blk.rows = std::min(kQueryBlock, s.seqQ - i0);
        // Causal: keys up to the block's last row (global positions).
        blk.cols =
            s.causal
                ? s.kPos.countAtOrBefore(s.qPos.at(i0 + blk.rows - 1), s.seqK)
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

/// max of row[0..n), n >= 1.
template <typename T> T rowMaxOf(const T *row, int64_t n) {
#if AUTOSHARD_HAVE_SLEEF_AVX2
  if constexpr (std::is_same_v<T, float>) {
    if (detail::hasAvx2Fma())
      return detail::avx2::maxOf(row, n);
  }
#endif
  return *std::max_element(row, row + n);
}

/// row[j] *= factor for j < n.
template <typename T> void scaleRow(T *row, int64_t n, T factor) {
#if AUTOSHARD_HAVE_SLEEF_AVX2
  if constexpr (std::is_same_v<T, float>) {
    if (detail::hasAvx2Fma())
      return detail::avx2::scale(row, n, factor);
  }
#endif
  for (int64_t j = 0; j < n; ++j)
    row[j] *= factor;
}

/// scores [rows, kb.cols] (leading dim kb.cols) = scale * Q_blk K_kb^T.
template <typename T>
void blockScores(const T *q, const T *k, const HeadBlock &blk,
                 const KeyBlock &kb, const AttentionShape &s, T *scores) {
  detail::gemm<T>(false, true, blk.rows, kb.cols, s.headDim,
                  static_cast<T>(s.scale), q + blk.qOffset, blk.ldq,
                  k + kb.kvOffset(blk), blk.ldkv, T(0), scores, kb.cols);
}

} // namespace

template <typename T, typename L>
void attention(const T *q, const T *k, const T *v, T *out, L *lse,
               const AttentionShape &shape) {
  checkShape("attention", shape);
  constexpr T negInf = -std::numeric_limits<T>::infinity();
  auto nothingPerPair = [](int64_t, int64_t) {};
  forEachBlock<T>(shape, nothingPerPair, [&](const HeadBlock &blk, T *scores) {
    T *outBlk = out + blk.qOffset;
    if (blk.cols == 0) { // a block that sees no key (causal block skipping)
      for (int64_t r = 0; r < blk.rows; ++r) {
        std::fill_n(outBlk + r * blk.ldq, shape.headDim, T(0));
        lse[blk.lseOffset + r] = -std::numeric_limits<L>::infinity();
      }
      return;
    }
    // Per row: running max m, running sum l of exp(S - m) over the key
    // blocks so far, and the factor the O accumulator is scaled by before
    // this key block's P V is added.
    T rowMax[kQueryBlock], rowSum[kQueryBlock], outScale[kQueryBlock];
    forEachKeyBlock(blk, [&](const KeyBlock &kb) {
      blockScores(q, k, blk, kb, shape, scores);
      for (int64_t r = 0; r < blk.rows; ++r) {
        T *row = scores + r * kb.cols;
        const int64_t visible = kb.visible(blk, shape, r);
        if (kb.isFirst) {
          rowMax[r] = negInf;
          rowSum[r] = T(0);
        }
        T alpha = T(1); // exp(m_old - m_new): 1 while the max holds
        if (visible > 0) {
          const T blockMax = rowMaxOf(row, visible);
          // A row that saw keys before keeps a finite max; rows see a
          // prefix of the keys, so only the first key block starts one.
          const bool fresh = rowMax[r] == negInf;
          const T newMax = fresh ? blockMax : std::max(rowMax[r], blockMax);
          const T sum = expShiftSum(row, visible, newMax);
          if (fresh) {
            alpha = T(0);
            rowSum[r] = sum;
          } else {
            alpha = std::exp(rowMax[r] - newMax);
            rowSum[r] = alpha * rowSum[r] + sum;
          }
          rowMax[r] = newMax;
        }
        std::fill(row + visible, row + kb.cols, T(0));
        if (kb.isLast) {
          if (blk.visible(shape, r) == 0) { // the row sees no key at all
            alpha = T(0);
            lse[blk.lseOffset + r] = -std::numeric_limits<L>::infinity();
          } else {
            // Normalise here, not after the last GEMM: with one key block
            // this is the plain softmax, P = exp(S - max) / sum, O = P V.
            const T inv = T(1) / rowSum[r];
            scaleRow(row, visible, inv);
            alpha *= inv;
            lse[blk.lseOffset + r] =
                static_cast<L>(rowMax[r] + std::log(rowSum[r]));
          }
        }
        outScale[r] = alpha;
      }
      if (!kb.isFirst)
        for (int64_t r = 0; r < blk.rows; ++r)
          if (outScale[r] != T(1)) {
            T *oRow = outBlk + r * blk.ldq;
            for (int64_t d = 0; d < shape.headDim; ++d)
              oRow[d] *= outScale[r];
          }
      // O = P V (first key block), else O = diag(outScale) O + P V.
      detail::gemm<T>(false, false, blk.rows, shape.headDim, kb.cols, T(1),
                      scores, kb.cols, v + kb.kvOffset(blk), blk.ldkv,
                      kb.isFirst ? T(0) : T(1), outBlk, blk.ldq);
    });
  });
}

template <typename T, typename L>
void attentionGrad(const T *dout, const T *q, const T *k, const T *v,
                   const T *out, const L *lse, T *dq, T *dk, T *dv,
                   const AttentionShape &shape) {
  checkShape("attention_grad", shape);
  const T scale = static_cast<T>(shape.scale);
  const int64_t ldkv = shape.kvHeads * shape.headDim;
  // Each pair zeroes its own rows of dK and dV (in parallel), then its
  // query blocks accumulate into them.
  auto zeroPair = [&](int64_t b, int64_t g) {
    for (int64_t j = 0; j < shape.seqK; ++j) {
      const int64_t at = (b * shape.seqK + j) * ldkv + g * shape.headDim;
      std::fill_n(dk + at, shape.headDim, T(0));
      std::fill_n(dv + at, shape.headDim, T(0));
    }
  };
  forEachBlock<T>(shape, zeroPair, [&](const HeadBlock &blk, T *scratch) {
    if (blk.cols == 0) { // no visible key: dq = 0, nothing for dk, dv
      for (int64_t r = 0; r < blk.rows; ++r)
        std::fill_n(dq + blk.qOffset + r * blk.ldq, shape.headDim, T(0));
      return;
    }
    T *p = scratch;
    T *dp = scratch + kQueryBlock * keyBlockCols(shape);
    const T *doutBlk = dout + blk.qOffset;
    // D = rowsum(dO * O), once per query block.
    T delta[kQueryBlock];
    for (int64_t r = 0; r < blk.rows; ++r) {
      const T *doRow = doutBlk + r * blk.ldq;
      const T *oRow = out + blk.qOffset + r * blk.ldq;
      T sum = T(0);
      for (int64_t d = 0; d < shape.headDim; ++d)
        sum += doRow[d] * oRow[d];
      delta[r] = sum;
    }
    forEachKeyBlock(blk, [&](const KeyBlock &kb) {
      const int64_t kvAt = kb.kvOffset(blk);
      blockScores(q, k, blk, kb, shape, p);
      for (int64_t r = 0; r < blk.rows; ++r) {
        T *row = p + r * kb.cols;
        const int64_t visible = kb.visible(blk, shape, r);
        const T rowLse = static_cast<T>(lse[blk.lseOffset + r]);
        expShiftSum(row, visible, rowLse);
        std::fill(row + visible, row + kb.cols, T(0));
      }
      // dV_j += P^T dO.
      detail::gemm<T>(true, false, kb.cols, shape.headDim, blk.rows, T(1), p,
                      kb.cols, doutBlk, blk.ldq, T(1), dv + kvAt, blk.ldkv);
      // dP = dO V_j^T.
      detail::gemm<T>(false, true, blk.rows, kb.cols, shape.headDim, T(1),
                      doutBlk, blk.ldq, v + kvAt, blk.ldkv, T(0), dp, kb.cols);
      // dS = P * (dP - D); masked entries have P = 0.
      for (int64_t r = 0; r < blk.rows; ++r) {
        T *dpRow = dp + r * kb.cols;
        const T *pRow = p + r * kb.cols;
        for (int64_t j = 0; j < kb.cols; ++j)
          dpRow[j] = pRow[j] * (dpRow[j] - delta[r]);
      }
      // dQ (+)= scale dS K_j; dK_j += scale dS^T Q.
      detail::gemm<T>(false, false, blk.rows, shape.headDim, kb.cols, scale, dp,
                      kb.cols, k + kvAt, blk.ldkv, kb.isFirst ? T(0) : T(1),
                      dq + blk.qOffset, blk.ldq);
      detail::gemm<T>(true, false, kb.cols, shape.headDim, blk.rows, scale, dp,
                      kb.cols, q + blk.qOffset, blk.ldq, T(1), dk + kvAt,
                      blk.ldkv);
    });
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
