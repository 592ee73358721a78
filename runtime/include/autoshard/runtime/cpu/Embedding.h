//===- Embedding.h - CPU token and position embedding kernels ---*- C++ -*-===//
//
// tfm.embedding, tfm.embedding_grad, tfm.position_embedding and
// tfm.position_embedding_grad. Tables are [rows, hidden], row-major; id
// tensors are flattened to `numIds` entries of type I (int32_t or int64_t).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_CPU_EMBEDDING_H
#define AUTOSHARD_RUNTIME_CPU_EMBEDDING_H

#include "autoshard/runtime/SequencePositions.h"

#include <cstdint>

namespace autoshard::runtime::cpu {

/// tfm.embedding: out[i, :] = table[ids[i], :] for i < numIds; table is
/// [vocab, hidden], out is [numIds, hidden]. Throws std::out_of_range naming
/// the first id outside [0, vocab) (nothing is written then).
template <typename T, typename I>
void embedding(const I *ids, int64_t numIds, const T *table, int64_t vocab,
               int64_t hidden, T *out);

/// tfm.embedding_grad: dtable [vocab, hidden] = scatter-add of the rows of dy
/// [numIds, hidden] at ids; repeated ids accumulate, untouched rows are zero.
/// Throws std::out_of_range naming the first id outside [0, vocab).
template <typename T, typename I>
void embeddingGrad(const I *ids, int64_t numIds, const T *dy, int64_t vocab,
                   int64_t hidden, T *dtable);

/// tfm.position_embedding: out [seqLen, hidden] = rows 0..seqLen-1 of table
/// [numPositions, hidden]; with zigzagChunks > 0 (a sequence in zig-zag
/// order, SequencePositions.h) row p is table row zigzagPosition(p, seqLen,
/// zigzagChunks). Throws std::invalid_argument unless 1 <= seqLen <=
/// numPositions.
template <typename T>
void positionEmbedding(const T *table, int64_t numPositions, int64_t hidden,
                       int64_t seqLen, T *out, int64_t zigzagChunks = 0);

/// tfm.position_embedding_grad: dy is [outer, seqLen, hidden] (outer = product
/// of the leading dims); dtable [numPositions, hidden] has rows 0..seqLen-1 =
/// dy summed over the leading dims (dy row p into row zigzagPosition(p, ...)
/// with zigzagChunks > 0) and zero rows after them. Throws
/// std::invalid_argument unless seqLen <= numPositions.
template <typename T>
void positionEmbeddingGrad(const T *dy, int64_t outer, int64_t seqLen,
                           int64_t hidden, int64_t numPositions, T *dtable,
                           int64_t zigzagChunks = 0);

} // namespace autoshard::runtime::cpu

#endif // AUTOSHARD_RUNTIME_CPU_EMBEDDING_H
