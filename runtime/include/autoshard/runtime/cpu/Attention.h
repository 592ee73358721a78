//===- Attention.h - CPU scaled dot-product attention kernels ---*- C++ -*-===//
//
// Multi-head attention with grouped-query heads (GQA, Ainslie et al. 2023).
// The forward returns the per-row log-sum-exp so that the backward recomputes
// the probabilities instead of storing them, as FlashAttention does (Dao et
// al. 2022, algorithm 2 / FlashAttention-2's backward). Per (batch, head) the
// queries are processed in blocks of 64 rows and, within one, the keys in
// blocks of 512 columns (online softmax, FlashAttention-2's algorithm 1), so
// the scratch does not grow with the key length; score and output products
// are strided GEMMs straight on the [B, S, heads, D] layouts.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_CPU_ATTENTION_H
#define AUTOSHARD_RUNTIME_CPU_ATTENTION_H

#include "autoshard/runtime/SequencePositions.h"

#include <cstdint>

namespace autoshard::runtime::cpu {

/// Query rows per block of the kernels.
inline constexpr int64_t kAttentionQueryBlock = 64;
/// Key columns per block: the 64 x 512 score block (128 KiB in f32) and the
/// dP block beside it, with 512 K and V rows (and dK, dV in the backward) of
/// a head dim up to 128, stay within a 2 MiB L2 (about 1.4 MiB at d = 128).
/// A query block that sees at most this many keys runs the plain softmax,
/// bitwise the same as a kernel without key blocks.
inline constexpr int64_t kAttentionKeyBlock = 512;

/// Shape of tfm.attention: q [batch, seqQ, heads, headDim], k and v
/// [batch, seqK, kvHeads, headDim], all row-major; heads % kvHeads == 0 and
/// query head n reads kv head n / (heads / kvHeads). causal requires
/// seqQ == seqK and lets query i see keys 0..i. scale > 0 multiplies the
/// scores (typically 1 / sqrt(headDim)). With offsets (below) it computes a
/// block of a longer causal attention.
struct AttentionShape {
  int64_t batch = 0;
  int64_t seqQ = 0;
  int64_t seqK = 0;
  int64_t heads = 0;
  int64_t kvHeads = 0;
  int64_t headDim = 0;
  bool causal = false;
  double scale = 1.0;
  /// The original positions of the query and key rows (a block of a longer
  /// sequence, contiguous or in zig-zag order: ring attention, algorithms.md
  /// §2.2-§2.3). The causal mask lets query i see key j iff kPos.at(j) <=
  /// qPos.at(i); a row that sees no key gets out = 0 and lse = -inf (the
  /// identity of attentionMerge). Both must increase over their rows (the
  /// visible keys of a row are a prefix); start 0 for tfm.attention.
  SequencePositions qPos;
  SequencePositions kPos;
};

/// tfm.attention: out [batch, seqQ, heads, headDim] = softmax(scale * q k^T,
/// masked) v, and lse [batch, heads, seqQ] = log sum_j exp(scale * q.k_j)
/// over the visible keys. L is the lse element type (float per the op spec;
/// double for fp64 gradient checks). Throws std::invalid_argument on a bad
/// shape.
template <typename T, typename L = float>
void attention(const T *q, const T *k, const T *v, T *out, L *lse,
               const AttentionShape &shape);

/// tfm.attention_grad: given dout (like out), the forward's inputs, out and
/// lse, writes dq (like q), dk and dv (like k, v; GQA heads sharing a kv head
/// accumulate). Probabilities are recomputed as exp(scale * q.k - lse).
template <typename T, typename L = float>
void attentionGrad(const T *dout, const T *q, const T *k, const T *v,
                   const T *out, const L *lse, T *dq, T *dk, T *dv,
                   const AttentionShape &shape);

/// tfm.attention_merge: merges two partial attention results over disjoint
/// key sets (algorithms.md §2.1): lse = log(exp(lseA) + exp(lseB)) computed
/// stably, out = exp(lseA - lse) outA + exp(lseB - lse) outB. out*
/// [batch, seq, heads, headDim], lse* [batch, heads, seq]; a side with
/// lse = -inf contributes nothing, and two -inf sides give out 0, lse -inf.
/// outA/lseA may alias out/lse.
template <typename T, typename L = float>
void attentionMerge(const T *outA, const L *lseA, const T *outB, const L *lseB,
                    T *out, L *lse, int64_t batch, int64_t seq, int64_t heads,
                    int64_t headDim);

} // namespace autoshard::runtime::cpu

#endif // AUTOSHARD_RUNTIME_CPU_ATTENTION_H
