//===- LossTest.cpp - Cross-entropy kernel tests --------------------------===//

#include "autoshard/runtime/cpu/Loss.h"

#include "TestUtil.h"

using namespace autoshard::runtime::cpu;
using namespace autoshard::runtime::test;

namespace {

CrossEntropyShape makeShape(int64_t tokens, int64_t classes, int64_t vocab) {
  CrossEntropyShape s;
  s.tokens = tokens;
  s.classes = classes;
  s.vocabSize = vocab;
  return s;
}

/// Mean over tokens of -log softmax(logits[:vocab])[label].
double naiveLoss(const std::vector<double> &logits,
                 const std::vector<int64_t> &labels, int64_t classes,
                 int64_t vocab) {
  double total = 0;
  for (size_t t = 0; t < labels.size(); ++t) {
    double sum = 0;
    for (int64_t c = 0; c < vocab; ++c)
      sum += std::exp(logits[t * classes + c]);
    total += -std::log(std::exp(logits[t * classes + labels[t]]) / sum);
  }
  return total / labels.size();
}

TEST(LossTest, MatchesNaiveWithAndWithoutVocabMask) {
  const int64_t tokens = 6, classes = 9;
  std::vector<double> logits = randomVector(tokens * classes, 1, -3, 3);
  std::vector<int64_t> labels = randomIds<int64_t>(tokens, 7, 2);
  EXPECT_NEAR(
      crossEntropy(logits.data(), labels.data(), makeShape(tokens, classes, 0)),
      naiveLoss(logits, labels, classes, classes), 1e-13);
  const double masked =
      crossEntropy(logits.data(), labels.data(), makeShape(tokens, classes, 7));
  EXPECT_NEAR(masked, naiveLoss(logits, labels, classes, 7), 1e-13);
  // Padded logits do not matter at all.
  for (int64_t t = 0; t < tokens; ++t)
    logits[t * classes + 8] = 1e6;
  EXPECT_EQ(
      crossEntropy(logits.data(), labels.data(), makeShape(tokens, classes, 7)),
      masked);
}

TEST(LossTest, UniformLogitsGiveLogVocab) {
  std::vector<float> logits(4 * 10, 0.5f);
  std::vector<int32_t> labels = {0, 3, 7, 7};
  EXPECT_NEAR(crossEntropy(logits.data(), labels.data(), makeShape(4, 10, 8)),
              std::log(8.0), 1e-6);
}

void checkCrossEntropyGradient(int64_t vocab) {
  const int64_t tokens = 5, classes = 8;
  std::vector<double> logits = randomVector(tokens * classes, 3, -3, 3);
  std::vector<int32_t> labels =
      randomIds<int32_t>(tokens, vocab == 0 ? classes : vocab, 4);
  CrossEntropyShape s = makeShape(tokens, classes, vocab);
  const double dloss = 1.7;
  std::vector<double> dlogits(logits.size(), 99.0);
  crossEntropyGrad(dloss, logits.data(), labels.data(), dlogits.data(), s);
  checkGradient(
      "cross_entropy dlogits vocab " + std::to_string(vocab), logits, dlogits,
      [&] { return dloss * crossEntropy(logits.data(), labels.data(), s); });
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t c = vocab == 0 ? classes : vocab; c < classes; ++c)
      EXPECT_EQ(dlogits[t * classes + c], 0.0);
}

TEST(LossTest, GradientUnmasked) { checkCrossEntropyGradient(0); }

TEST(LossTest, GradientWithVocabMask) { checkCrossEntropyGradient(6); }

TEST(LossTest, LabelOutOfRangeNamesTheValue) {
  std::vector<double> logits(2 * 5);
  std::vector<int64_t> labels = {1, 4};
  try {
    crossEntropy(logits.data(), labels.data(), makeShape(2, 5, 4));
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range &e) {
    EXPECT_NE(std::string(e.what()).find("label 4 at position 1"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(crossEntropy(logits.data(), labels.data(), makeShape(2, 5, 6)),
               std::invalid_argument);
}

} // namespace
