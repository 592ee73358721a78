//===- Embedding.cpp - CPU token and position embedding kernels -----------===//

#include "autoshard/runtime/cpu/Embedding.h"

#include "Check.h"
#include "Instantiate.h"

#include <algorithm>

namespace autoshard::runtime::cpu {

template <typename T, typename I>
void embedding(const I *ids, int64_t numIds, const T *table, int64_t vocab,
               int64_t hidden, T *out) {
  const char *op = "embedding";
  detail::checkAtLeast(op, "hidden", hidden, 0);
  detail::checkIndices(op, "id", ids, numIds, vocab);
  for (int64_t i = 0; i < numIds; ++i)
    std::copy_n(table + static_cast<int64_t>(ids[i]) * hidden, hidden,
                out + i * hidden);
}

template <typename T, typename I>
void embeddingGrad(const I *ids, int64_t numIds, const T *dy, int64_t vocab,
                   int64_t hidden, T *dtable) {
  const char *op = "embedding_grad";
  detail::checkAtLeast(op, "hidden", hidden, 0);
  detail::checkIndices(op, "id", ids, numIds, vocab);
  std::fill(dtable, dtable + vocab * hidden, T(0));
  for (int64_t i = 0; i < numIds; ++i) {
    T *row = dtable + static_cast<int64_t>(ids[i]) * hidden;
    const T *src = dy + i * hidden;
    for (int64_t h = 0; h < hidden; ++h)
      row[h] += src[h];
  }
}

namespace {
void checkSeqLen(const char *op, int64_t seqLen, int64_t numPositions) {
  if (seqLen < 1 || seqLen > numPositions)
    detail::fail(op, "seq_len " + std::to_string(seqLen) +
                         " is out of range [1, " +
                         std::to_string(numPositions) + "]");
}
} // namespace

template <typename T>
void positionEmbedding(const T *table, int64_t numPositions, int64_t hidden,
                       int64_t seqLen, T *out, int64_t zigzagChunks) {
  checkSeqLen("position_embedding", seqLen, numPositions);
  detail::checkAtLeast("position_embedding", "hidden", hidden, 0);
  for (int64_t p = 0; p < seqLen; ++p)
    std::copy_n(table + zigzagPosition(p, seqLen, zigzagChunks) * hidden,
                hidden, out + p * hidden);
}

template <typename T>
void positionEmbeddingGrad(const T *dy, int64_t outer, int64_t seqLen,
                           int64_t hidden, int64_t numPositions, T *dtable,
                           int64_t zigzagChunks) {
  const char *op = "position_embedding_grad";
  checkSeqLen(op, seqLen, numPositions);
  detail::checkAtLeast(op, "outer", outer, 0);
  detail::checkAtLeast(op, "hidden", hidden, 0);
  std::fill(dtable, dtable + numPositions * hidden, T(0));
  const int64_t block = seqLen * hidden;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t p = 0; p < seqLen; ++p) {
      T *row = dtable + zigzagPosition(p, seqLen, zigzagChunks) * hidden;
      const T *src = dy + o * block + p * hidden;
      for (int64_t i = 0; i < hidden; ++i)
        row[i] += src[i];
    }
}

#define INSTANTIATE(T, I)                                                      \
  template void embedding<T, I>(const I *, int64_t, const T *, int64_t,        \
                                int64_t, T *);                                 \
  template void embeddingGrad<T, I>(const I *, int64_t, const T *, int64_t,    \
                                    int64_t, T *);
AUTOSHARD_FOR_EACH_FLOAT_AND_ID(INSTANTIATE)
#undef INSTANTIATE

#define INSTANTIATE(T)                                                         \
  template void positionEmbedding<T>(const T *, int64_t, int64_t, int64_t,     \
                                     T *, int64_t);                            \
  template void positionEmbeddingGrad<T>(const T *, int64_t, int64_t, int64_t, \
                                         int64_t, T *, int64_t);
AUTOSHARD_FOR_EACH_FLOAT(INSTANTIATE)

} // namespace autoshard::runtime::cpu
