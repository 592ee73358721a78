//===- Loss.cpp - CPU cross-entropy kernels -------------------------------===//

#include "autoshard/runtime/cpu/Loss.h"

#include "Check.h"
#include "Instantiate.h"
#include "Softmax.h"

#include <algorithm>
#include <cmath>

namespace autoshard::runtime::cpu {
namespace {

/// Checks the shape and labels; returns the effective vocabulary size.
template <typename I>
int64_t checkCrossEntropy(const char *op, const I *labels,
                          const CrossEntropyShape &s) {
  detail::checkAtLeast(op, "tokens", s.tokens, 1);
  detail::checkAtLeast(op, "classes", s.classes, 1);
  const int64_t vocab = s.vocabSize == 0 ? s.classes : s.vocabSize;
  if (vocab < 1 || vocab > s.classes)
    detail::fail(op, "vocab_size " + std::to_string(s.vocabSize) +
                         " is out of range [1, " + std::to_string(s.classes) +
                         "]");
  detail::checkIndices(op, "label", labels, s.tokens, vocab);
  return vocab;
}

} // namespace

template <typename T, typename I>
double crossEntropy(const T *logits, const I *labels,
                    const CrossEntropyShape &shape) {
  const int64_t vocab = checkCrossEntropy("cross_entropy", labels, shape);
  double total = 0.0;
  for (int64_t t = 0; t < shape.tokens; ++t) {
    const T *row = logits + t * shape.classes;
    total +=
        detail::logSumExp(row, vocab) - static_cast<double>(row[labels[t]]);
  }
  return total / static_cast<double>(shape.tokens);
}

template <typename T, typename I>
void crossEntropyGrad(double dloss, const T *logits, const I *labels,
                      T *dlogits, const CrossEntropyShape &shape) {
  const int64_t vocab = checkCrossEntropy("cross_entropy_grad", labels, shape);
  const double perToken = dloss / static_cast<double>(shape.tokens);
  for (int64_t t = 0; t < shape.tokens; ++t) {
    const T *row = logits + t * shape.classes;
    T *drow = dlogits + t * shape.classes;
    const double lse = detail::logSumExp(row, vocab);
    const int64_t label = static_cast<int64_t>(labels[t]);
    for (int64_t c = 0; c < vocab; ++c) {
      const double p = std::exp(static_cast<double>(row[c]) - lse);
      drow[c] = static_cast<T>(perToken * (c == label ? p - 1.0 : p));
    }
    std::fill(drow + vocab, drow + shape.classes, T(0));
  }
}

#define INSTANTIATE(T, I)                                                      \
  template double crossEntropy<T, I>(const T *, const I *,                     \
                                     const CrossEntropyShape &);               \
  template void crossEntropyGrad<T, I>(double, const T *, const I *, T *,      \
                                       const CrossEntropyShape &);
AUTOSHARD_FOR_EACH_FLOAT_AND_ID(INSTANTIATE)

} // namespace autoshard::runtime::cpu
