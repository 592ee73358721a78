//===- Loss.cpp - CPU cross-entropy kernels -------------------------------===//

#include "autoshard/runtime/cpu/Loss.h"

#include "Check.h"
#include "Instantiate.h"
#include "Parallel.h"
#include "Softmax.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

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

/// Tokens per parallel chunk: about kElementwiseGrain logits.
int64_t tokenGrain(int64_t classes) {
  return std::max<int64_t>(1, detail::kElementwiseGrain / classes);
}

} // namespace

template <typename T, typename I>
double crossEntropy(const T *logits, const I *labels,
                    const CrossEntropyShape &shape) {
  const int64_t vocab = checkCrossEntropy("cross_entropy", labels, shape);
  // Per-chunk sums added in chunk order: the same on any thread count.
  const int64_t grain = tokenGrain(shape.classes);
  std::vector<double> partial(detail::chunkCount(shape.tokens, grain), 0.0);
  detail::parallelChunks(shape.tokens, grain,
                         [&](int64_t c, int64_t b, int64_t e) {
                           double sum = 0.0;
                           for (int64_t t = b; t < e; ++t) {
                             const T *row = logits + t * shape.classes;
                             sum += detail::logSumExp(row, vocab) -
                                    static_cast<double>(row[labels[t]]);
                           }
                           partial[c] = sum;
                         });
  double total = 0.0;
  for (double p : partial)
    total += p;
  return total / static_cast<double>(shape.tokens);
}

template <typename T, typename I>
void crossEntropyGrad(double dloss, const T *logits, const I *labels,
                      T *dlogits, const CrossEntropyShape &shape) {
  const int64_t vocab = checkCrossEntropy("cross_entropy_grad", labels, shape);
  const double perToken = dloss / static_cast<double>(shape.tokens);
  detail::parallelChunks(
      shape.tokens, tokenGrain(shape.classes),
      [&](int64_t, int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          const T *row = logits + t * shape.classes;
          T *drow = dlogits + t * shape.classes;
          const double lse = detail::logSumExp(row, vocab);
          const int64_t label = static_cast<int64_t>(labels[t]);
#if AUTOSHARD_HAVE_SLEEF_AVX2
          if constexpr (std::is_same_v<T, float>)
            if (detail::hasAvx2Fma()) {
              detail::avx2::crossEntropyGradRow(row, vocab, lse, label,
                                                perToken, drow);
              std::fill(drow + vocab, drow + shape.classes, T(0));
              continue;
            }
#endif
          for (int64_t c = 0; c < vocab; ++c) {
            const double p = std::exp(static_cast<double>(row[c]) - lse);
            drow[c] = static_cast<T>(perToken * (c == label ? p - 1.0 : p));
          }
          std::fill(drow + vocab, drow + shape.classes, T(0));
        }
      });
}

#define INSTANTIATE(T, I)                                                      \
  template double crossEntropy<T, I>(const T *, const I *,                     \
                                     const CrossEntropyShape &);               \
  template void crossEntropyGrad<T, I>(double, const T *, const I *, T *,      \
                                       const CrossEntropyShape &);
AUTOSHARD_FOR_EACH_FLOAT_AND_ID(INSTANTIATE)

} // namespace autoshard::runtime::cpu
