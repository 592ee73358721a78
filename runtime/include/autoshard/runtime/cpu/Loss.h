//===- Loss.h - CPU cross-entropy kernels -----------------------*- C++ -*-===//
//
// Softmax cross-entropy over the last dim, averaged over all tokens. Row sums
// and the mean are accumulated in double.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_CPU_LOSS_H
#define AUTOSHARD_RUNTIME_CPU_LOSS_H

#include <cstdint>

namespace autoshard::runtime::cpu {

/// Shape of tfm.cross_entropy: logits [tokens, classes] row-major, labels
/// [tokens]. Classes >= vocabSize are padding, masked to -inf (DESIGN.md §6);
/// vocabSize = 0 means no padding (vocabSize = classes).
struct CrossEntropyShape {
  int64_t tokens = 0;
  int64_t classes = 0;
  int64_t vocabSize = 0;
};

/// tfm.cross_entropy: returns mean over tokens of
/// log sum_{c < vocabSize} exp(logits[t, c]) - logits[t, labels[t]] (nats;
/// the op stores it as f32). Throws std::out_of_range naming a label outside
/// [0, vocabSize) and std::invalid_argument on a bad shape (tokens >= 1).
template <typename T, typename I>
double crossEntropy(const T *logits, const I *labels,
                    const CrossEntropyShape &shape);

/// tfm.cross_entropy_grad: dlogits [tokens, classes] = dloss / tokens *
/// (softmax(logits) - onehot(label)), zero on padded classes.
template <typename T, typename I>
void crossEntropyGrad(double dloss, const T *logits, const I *labels,
                      T *dlogits, const CrossEntropyShape &shape);

} // namespace autoshard::runtime::cpu

#endif // AUTOSHARD_RUNTIME_CPU_LOSS_H
