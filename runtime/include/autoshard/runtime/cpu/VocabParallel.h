//===- VocabParallel.h - CPU vocab-parallel embedding and loss --*- C++ -*-===//
//
// The per-rank ops that dist-partition emits when the vocabulary dim is
// sharded (docs/Dialects/TfmOps.md, "Vocab-parallel local ops"):
// tfm.vocab_embedding, tfm.vocab_embedding_grad, tfm.vocab_ce_max,
// tfm.vocab_ce_stats, tfm.vocab_ce_loss and tfm.vocab_ce_grad. `shard` is
// the index of this rank's vocabulary shard: it owns the global rows/classes
// [shard * Vl, (shard + 1) * Vl), Vl the local vocabulary size. With shard 0
// and the whole vocabulary they compute what the global ops compute.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_CPU_VOCABPARALLEL_H
#define AUTOSHARD_RUNTIME_CPU_VOCABPARALLEL_H

#include <cstdint>

namespace autoshard::runtime::cpu {

/// tfm.vocab_embedding: out [numIds, hidden]; row i is
/// table[ids[i] - o] if o <= ids[i] < o + localVocab (o = shard *
/// localVocab), else zeros. table is [localVocab, hidden]. Throws
/// std::invalid_argument on a negative shard, std::out_of_range naming a
/// negative id.
template <typename T, typename I>
void vocabEmbedding(const I *ids, int64_t numIds, const T *table,
                    int64_t localVocab, int64_t hidden, int64_t shard, T *out);

/// tfm.vocab_embedding_grad: dtable [localVocab, hidden], row v = sum of the
/// rows of dy [numIds, hidden] whose id is o + v; ids of other shards
/// contribute nothing.
template <typename T, typename I>
void vocabEmbeddingGrad(const I *ids, int64_t numIds, const T *dy,
                        int64_t localVocab, int64_t hidden, int64_t shard,
                        T *dtable);

/// Local logits [tokens, classes] (classes = Vl) of a global vocabulary whose
/// real classes are [0, vocabSize): local class c is real iff
/// shard * classes + c < vocabSize.
struct VocabCeShape {
  int64_t tokens = 0;
  int64_t classes = 0;
  int64_t vocabSize = 0;
};

/// tfm.vocab_ce_max: max [tokens] = max over the real local classes, -inf
/// when the shard holds none.
template <typename T>
void vocabCeMax(const T *logits, const VocabCeShape &shape, int64_t shard,
                float *max);

/// tfm.vocab_ce_stats: stats [tokens, 2]: [0] = sum over the real local
/// classes of exp(logit - max), [1] = the label's logit if this shard owns
/// the label, else 0. Sums are accumulated in double. Throws
/// std::out_of_range naming a label outside [0, vocabSize).
template <typename T, typename I>
void vocabCeStats(const T *logits, const I *labels, const float *max,
                  const VocabCeShape &shape, int64_t shard, float *stats);

/// tfm.vocab_ce_loss: sum over `tokens` local tokens of
/// (log stats[t, 0] + max[t] - stats[t, 1]) / numTokens, in double.
double vocabCeLoss(const float *stats, const float *max, int64_t tokens,
                   int64_t numTokens);

/// tfm.vocab_ce_grad: dlogits [tokens, classes] = dloss / numTokens *
/// (exp(logit - max) / stats[t, 0] - onehot(o + c == label)) on real
/// classes, 0 on padded ones. dlogits may be logits (in place).
template <typename T, typename I>
void vocabCeGrad(double dloss, const T *logits, const I *labels,
                 const float *max, const float *stats,
                 const VocabCeShape &shape, int64_t shard, int64_t numTokens,
                 T *dlogits);

} // namespace autoshard::runtime::cpu

#endif // AUTOSHARD_RUNTIME_CPU_VOCABPARALLEL_H
