//===- VocabParallelTest.cpp - Vocab-parallel embedding and loss tests ----===//
//
// The vocab-parallel kernels composed over the shards of a vocabulary (sum of
// the embeddings, max/sum reductions of the loss statistics, concatenation of
// the gradients) must give the single-device embedding and cross-entropy,
// padded vocabularies included.
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/cpu/VocabParallel.h"
#include "autoshard/runtime/cpu/Embedding.h"
#include "autoshard/runtime/cpu/Loss.h"

#include "TestUtil.h"

#include <limits>

using namespace autoshard::runtime::cpu;
using namespace autoshard::runtime::test;

namespace {

/// Rows [shard * rows, (shard + 1) * rows) of a [*, width] row-major matrix.
template <typename T>
std::vector<T> rowBlock(const std::vector<T> &m, int64_t width, int64_t rows,
                        int64_t shard) {
  return std::vector<T>(m.begin() + shard * rows * width,
                        m.begin() + (shard + 1) * rows * width);
}

/// Columns [shard * cols, (shard + 1) * cols) of a [rows, width] matrix.
template <typename T>
std::vector<T> colBlock(const std::vector<T> &m, int64_t width, int64_t cols,
                        int64_t shard) {
  const int64_t rows = static_cast<int64_t>(m.size()) / width;
  std::vector<T> out;
  for (int64_t r = 0; r < rows; ++r)
    out.insert(out.end(), m.begin() + r * width + shard * cols,
               m.begin() + r * width + (shard + 1) * cols);
  return out;
}

template <typename T, typename I>
void checkEmbedding(int64_t vocab, int64_t shards) {
  const int64_t hidden = 3, numIds = 17, local = vocab / shards;
  std::vector<T> table = convert<T>(randomVector(vocab * hidden, 1));
  std::vector<I> ids = randomIds<I>(numIds, vocab, 2);
  ids[0] = 0;
  ids[1] = static_cast<I>(vocab - 1);
  std::vector<T> want(numIds * hidden),
      dy = convert<T>(randomVector(numIds * hidden, 3));
  embedding(ids.data(), numIds, table.data(), vocab, hidden, want.data());
  std::vector<T> wantGrad(vocab * hidden);
  embeddingGrad(ids.data(), numIds, dy.data(), vocab, hidden, wantGrad.data());

  std::vector<double> sum(numIds * hidden, 0.0);
  std::vector<T> grads;
  for (int64_t s = 0; s < shards; ++s) {
    std::vector<T> block = rowBlock(table, hidden, local, s);
    std::vector<T> out(numIds * hidden, T(99));
    vocabEmbedding(ids.data(), numIds, block.data(), local, hidden, s,
                   out.data());
    for (size_t i = 0; i < out.size(); ++i)
      sum[i] += out[i];
    std::vector<T> grad(local * hidden, T(99));
    vocabEmbeddingGrad(ids.data(), numIds, dy.data(), local, hidden, s,
                       grad.data());
    grads.insert(grads.end(), grad.begin(), grad.end());
  }
  // Every id is owned by exactly one shard: the sum is exact.
  expectAllNear(sum, want, 0, 0, "sum of vocab_embedding");
  expectAllNear(grads, wantGrad, 0, 0, "concatenated vocab_embedding_grad");
}

TEST(VocabParallelTest, EmbeddingSumsToEmbedding) {
  checkEmbedding<double, int64_t>(10, 2);
  checkEmbedding<float, int32_t>(10, 2);
  checkEmbedding<float, int64_t>(12, 3);
  checkEmbedding<double, int32_t>(12, 4);
  checkEmbedding<double, int32_t>(10, 1); // shard 0, whole vocabulary
}

/// Composes the vocab_ce_* kernels over `shards` vocabulary shards (and
/// `dataShards` token shards) of logits [tokens, classes] with `vocab` real
/// classes; compares with cross_entropy and cross_entropy_grad.
template <typename T, typename I>
void checkCrossEntropy(int64_t classes, int64_t vocab, int64_t shards,
                       int64_t dataShards, double tol) {
  const int64_t tokens = 12, local = classes / shards;
  const int64_t localTokens = tokens / dataShards;
  std::vector<T> logits = convert<T>(randomVector(tokens * classes, 5, -4, 4));
  std::vector<I> labels = randomIds<I>(tokens, vocab, 6);
  labels[0] = 0;
  labels[1] = static_cast<I>(vocab - 1);
  // Padded logits must not matter.
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t c = vocab; c < classes; ++c)
      logits[t * classes + c] = T(1e3);
  CrossEntropyShape global;
  global.tokens = tokens;
  global.classes = classes;
  global.vocabSize = vocab;
  const double wantLoss = crossEntropy(logits.data(), labels.data(), global);
  const double dloss = 1.3;
  std::vector<T> wantGrad(logits.size());
  crossEntropyGrad(dloss, logits.data(), labels.data(), wantGrad.data(),
                   global);

  VocabCeShape s;
  s.tokens = tokens;
  s.classes = local;
  s.vocabSize = vocab;
  std::vector<std::vector<T>> blocks;
  std::vector<float> max(tokens, -std::numeric_limits<float>::infinity());
  for (int64_t k = 0; k < shards; ++k) {
    blocks.push_back(colBlock(logits, classes, local, k));
    std::vector<float> localMax(tokens, 99.0f);
    vocabCeMax(blocks[k].data(), s, k, localMax.data());
    const bool allPadded = k * local >= vocab;
    for (int64_t t = 0; t < tokens; ++t) {
      if (allPadded) {
        EXPECT_EQ(localMax[t], -std::numeric_limits<float>::infinity());
      }
      max[t] = std::max(max[t], localMax[t]); // the max all-reduce
    }
  }
  std::vector<float> stats(tokens * 2, 0.0f);
  for (int64_t k = 0; k < shards; ++k) {
    std::vector<float> localStats(tokens * 2, 99.0f);
    vocabCeStats(blocks[k].data(), labels.data(), max.data(), s, k,
                 localStats.data());
    for (size_t i = 0; i < stats.size(); ++i)
      stats[i] += localStats[i]; // the sum all-reduce
  }
  // Each data shard computes its partial loss over its tokens; the sum over
  // data shards is the mean over all tokens.
  double loss = 0.0;
  for (int64_t d = 0; d < dataShards; ++d)
    loss += vocabCeLoss(stats.data() + d * localTokens * 2,
                        max.data() + d * localTokens, localTokens, tokens);
  EXPECT_NEAR(loss, wantLoss, tol * std::abs(wantLoss));

  std::vector<T> grad(logits.size());
  for (int64_t k = 0; k < shards; ++k) {
    std::vector<T> dlogits(blocks[k].size(), T(99));
    vocabCeGrad(dloss, blocks[k].data(), labels.data(), max.data(),
                stats.data(), s, k, tokens, dlogits.data());
    for (int64_t t = 0; t < tokens; ++t)
      std::copy_n(dlogits.begin() + t * local, local,
                  grad.begin() + t * classes + k * local);
  }
  expectAllNear(grad, wantGrad, tol, tol * dloss / tokens,
                "concatenated vocab_ce_grad");
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t c = vocab; c < classes; ++c)
      EXPECT_EQ(grad[t * classes + c], T(0)) << t << ", " << c;
}

TEST(VocabParallelTest, CrossEntropyOverTwoShards) {
  checkCrossEntropy<double, int64_t>(10, 10, 2, 1, 1e-6);
  checkCrossEntropy<float, int32_t>(10, 10, 2, 1, 1e-5);
}

TEST(VocabParallelTest, CrossEntropyPaddedVocabulary) {
  // 10 real classes padded to 12: the last shard holds 4 padding classes.
  checkCrossEntropy<double, int32_t>(12, 10, 2, 1, 1e-6);
  checkCrossEntropy<float, int64_t>(12, 10, 2, 1, 1e-5);
  // 7 real classes padded to 12 over 3 shards: shard 2 is all padding
  // (its max is -inf) and shard 1 partly.
  checkCrossEntropy<double, int64_t>(12, 7, 3, 1, 1e-6);
  checkCrossEntropy<float, int32_t>(12, 7, 3, 1, 1e-5);
}

TEST(VocabParallelTest, CrossEntropyWithTokensSharded) {
  checkCrossEntropy<double, int64_t>(12, 10, 2, 2, 1e-6);
  checkCrossEntropy<float, int32_t>(12, 10, 4, 3, 1e-5);
}

TEST(VocabParallelTest, WholeVocabularyIsTheGlobalOp) {
  checkCrossEntropy<double, int64_t>(10, 10, 1, 1, 1e-6);
  checkCrossEntropy<double, int64_t>(10, 8, 1, 1, 1e-6);
}

TEST(VocabParallelTest, GradientInPlace) {
  const int64_t tokens = 4, classes = 6;
  std::vector<double> logits = randomVector(tokens * classes, 8, -2, 2);
  std::vector<int32_t> labels = {0, 5, 9, 7};
  VocabCeShape s;
  s.tokens = tokens;
  s.classes = classes;
  s.vocabSize = 10;
  std::vector<float> max(tokens), stats(tokens * 2);
  vocabCeMax(logits.data(), s, 1, max.data());
  vocabCeStats(logits.data(), labels.data(), max.data(), s, 1, stats.data());
  std::vector<double> want(logits.size());
  vocabCeGrad(1.0, logits.data(), labels.data(), max.data(), stats.data(), s, 1,
              8, want.data());
  vocabCeGrad(1.0, logits.data(), labels.data(), max.data(), stats.data(), s, 1,
              8, logits.data());
  expectAllNear(logits, want, 0, 0, "in-place vocab_ce_grad");
}

TEST(VocabParallelTest, BadArgumentsNameTheValue) {
  VocabCeShape s;
  s.tokens = 2;
  s.classes = 3;
  s.vocabSize = 5;
  std::vector<float> logits(6, 0.0f), max(2, 0.0f), stats(4, 1.0f);
  std::vector<int32_t> labels = {1, 5};
  try {
    vocabCeStats(logits.data(), labels.data(), max.data(), s, 0, stats.data());
    ADD_FAILURE() << "label 5 accepted";
  } catch (const std::out_of_range &e) {
    EXPECT_NE(std::string(e.what()).find("label 5 at position 1"),
              std::string::npos)
        << e.what();
  }
  try {
    vocabCeMax(logits.data(), s, -1, max.data());
    ADD_FAILURE() << "shard -1 accepted";
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find("shard must be >= 0, got -1"),
              std::string::npos)
        << e.what();
  }
  std::vector<int64_t> ids = {2, -3};
  std::vector<float> table(6), out(6);
  EXPECT_THROW(vocabEmbedding(ids.data(), 2, table.data(), 2, 3, 0, out.data()),
               std::out_of_range);
}

} // namespace
