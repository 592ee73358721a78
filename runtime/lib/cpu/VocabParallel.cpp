//===- VocabParallel.cpp - CPU vocab-parallel embedding and loss ----------===//

#include "autoshard/runtime/cpu/VocabParallel.h"

#include "Check.h"
#include "Instantiate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace autoshard::runtime::cpu {
namespace {

/// Checks the local vocabulary size and the shard; returns the shard's first
/// global row/class.
int64_t shardOffset(const char *op, int64_t localVocab, int64_t shard) {
  detail::checkAtLeast(op, "local vocabulary size", localVocab, 1);
  detail::checkAtLeast(op, "shard", shard, 0);
  if (shard > std::numeric_limits<int64_t>::max() / localVocab)
    detail::fail(op, "shard " + std::to_string(shard) + " overflows");
  return shard * localVocab;
}

/// Ids are global token ids: only negative ones are certainly wrong (the
/// global vocabulary size is not known to the embedding kernels).
template <typename I>
void checkNonNegative(const char *op, const I *ids, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (ids[i] < 0)
      throw std::out_of_range(std::string(op) + ": id " +
                              std::to_string(ids[i]) + " at position " +
                              std::to_string(i) + " is negative");
}

/// Checks the shape and labels of the cross-entropy ops; returns the number
/// of real local classes (a prefix of the shard: padding is at the end of
/// the global vocabulary) and sets `offset`.
template <typename I>
int64_t checkCe(const char *op, const I *labels, const VocabCeShape &s,
                int64_t shard, int64_t &offset) {
  detail::checkAtLeast(op, "tokens", s.tokens, 0);
  offset = shardOffset(op, s.classes, shard);
  detail::checkAtLeast(op, "vocab_size", s.vocabSize, 1);
  if (labels)
    detail::checkIndices(op, "label", labels, s.tokens, s.vocabSize);
  return std::clamp<int64_t>(s.vocabSize - offset, 0, s.classes);
}

} // namespace

template <typename T, typename I>
void vocabEmbedding(const I *ids, int64_t numIds, const T *table,
                    int64_t localVocab, int64_t hidden, int64_t shard, T *out) {
  const char *op = "vocab_embedding";
  detail::checkAtLeast(op, "hidden", hidden, 0);
  const int64_t offset = shardOffset(op, localVocab, shard);
  checkNonNegative(op, ids, numIds);
  for (int64_t i = 0; i < numIds; ++i) {
    const int64_t row = static_cast<int64_t>(ids[i]) - offset;
    T *dst = out + i * hidden;
    if (row >= 0 && row < localVocab)
      std::copy_n(table + row * hidden, hidden, dst);
    else
      std::fill_n(dst, hidden, T(0));
  }
}

template <typename T, typename I>
void vocabEmbeddingGrad(const I *ids, int64_t numIds, const T *dy,
                        int64_t localVocab, int64_t hidden, int64_t shard,
                        T *dtable) {
  const char *op = "vocab_embedding_grad";
  detail::checkAtLeast(op, "hidden", hidden, 0);
  const int64_t offset = shardOffset(op, localVocab, shard);
  checkNonNegative(op, ids, numIds);
  std::fill(dtable, dtable + localVocab * hidden, T(0));
  for (int64_t i = 0; i < numIds; ++i) {
    const int64_t row = static_cast<int64_t>(ids[i]) - offset;
    if (row < 0 || row >= localVocab)
      continue;
    T *dst = dtable + row * hidden;
    const T *src = dy + i * hidden;
    for (int64_t h = 0; h < hidden; ++h)
      dst[h] += src[h];
  }
}

template <typename T>
void vocabCeMax(const T *logits, const VocabCeShape &shape, int64_t shard,
                float *max) {
  int64_t offset = 0;
  const int64_t real =
      checkCe<int32_t>("vocab_ce_max", nullptr, shape, shard, offset);
  for (int64_t t = 0; t < shape.tokens; ++t) {
    const T *row = logits + t * shape.classes;
    max[t] = real == 0 ? -std::numeric_limits<float>::infinity()
                       : static_cast<float>(*std::max_element(row, row + real));
  }
}

template <typename T, typename I>
void vocabCeStats(const T *logits, const I *labels, const float *max,
                  const VocabCeShape &shape, int64_t shard, float *stats) {
  int64_t offset = 0;
  const int64_t real = checkCe("vocab_ce_stats", labels, shape, shard, offset);
  for (int64_t t = 0; t < shape.tokens; ++t) {
    const T *row = logits + t * shape.classes;
    const double m = max[t];
    double sum = 0.0;
    for (int64_t c = 0; c < real; ++c)
      sum += std::exp(static_cast<double>(row[c]) - m);
    const int64_t local = static_cast<int64_t>(labels[t]) - offset;
    stats[2 * t] = static_cast<float>(sum);
    stats[2 * t + 1] =
        local >= 0 && local < real ? static_cast<float>(row[local]) : 0.0f;
  }
}

double vocabCeLoss(const float *stats, const float *max, int64_t tokens,
                   int64_t numTokens) {
  const char *op = "vocab_ce_loss";
  detail::checkAtLeast(op, "tokens", tokens, 0);
  detail::checkAtLeast(op, "num_tokens", numTokens,
                       std::max<int64_t>(tokens, 1));
  double total = 0.0;
  for (int64_t t = 0; t < tokens; ++t)
    total += std::log(static_cast<double>(stats[2 * t])) +
             static_cast<double>(max[t]) -
             static_cast<double>(stats[2 * t + 1]);
  return total / static_cast<double>(numTokens);
}

template <typename T, typename I>
void vocabCeGrad(double dloss, const T *logits, const I *labels,
                 const float *max, const float *stats,
                 const VocabCeShape &shape, int64_t shard, int64_t numTokens,
                 T *dlogits) {
  const char *op = "vocab_ce_grad";
  int64_t offset = 0;
  const int64_t real = checkCe(op, labels, shape, shard, offset);
  detail::checkAtLeast(op, "num_tokens", numTokens,
                       std::max<int64_t>(shape.tokens, 1));
  const double perToken = dloss / static_cast<double>(numTokens);
  for (int64_t t = 0; t < shape.tokens; ++t) {
    const T *row = logits + t * shape.classes;
    T *drow = dlogits + t * shape.classes;
    const double m = max[t], sum = stats[2 * t];
    const int64_t label = static_cast<int64_t>(labels[t]) - offset;
    for (int64_t c = 0; c < real; ++c) {
      const double p = std::exp(static_cast<double>(row[c]) - m) / sum;
      drow[c] = static_cast<T>(perToken * (c == label ? p - 1.0 : p));
    }
    std::fill(drow + real, drow + shape.classes, T(0));
  }
}

#define INSTANTIATE(T, I)                                                      \
  template void vocabEmbedding<T, I>(const I *, int64_t, const T *, int64_t,   \
                                     int64_t, int64_t, T *);                   \
  template void vocabEmbeddingGrad<T, I>(const I *, int64_t, const T *,        \
                                         int64_t, int64_t, int64_t, T *);      \
  template void vocabCeStats<T, I>(const T *, const I *, const float *,        \
                                   const VocabCeShape &, int64_t, float *);    \
  template void vocabCeGrad<T, I>(double, const T *, const I *, const float *, \
                                  const float *, const VocabCeShape &,         \
                                  int64_t, int64_t, T *);
AUTOSHARD_FOR_EACH_FLOAT_AND_ID(INSTANTIATE)
#undef INSTANTIATE

#define INSTANTIATE(T)                                                         \
  template void vocabCeMax<T>(const T *, const VocabCeShape &, int64_t,        \
                              float *);
AUTOSHARD_FOR_EACH_FLOAT(INSTANTIATE)

} // namespace autoshard::runtime::cpu
