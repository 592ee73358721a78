//===- EmbeddingTest.cpp - Embedding kernel tests -------------------------===//

#include "autoshard/runtime/cpu/Embedding.h"

#include "TestUtil.h"

using namespace autoshard::runtime::cpu;
using namespace autoshard::runtime::test;

namespace {

TEST(EmbeddingTest, GathersRows) {
  const int64_t vocab = 5, hidden = 3;
  std::vector<double> table = randomVector(vocab * hidden, 1);
  std::vector<int64_t> ids = {4, 0, 4, 2};
  std::vector<double> out(ids.size() * hidden);
  embedding(ids.data(), 4, table.data(), vocab, hidden, out.data());
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t h = 0; h < hidden; ++h)
      EXPECT_EQ(out[i * hidden + h], table[ids[i] * hidden + h]);
}

TEST(EmbeddingTest, GradientWithRepeatedIds) {
  const int64_t vocab = 6, hidden = 4, n = 10;
  std::vector<int32_t> ids = {1, 3, 1, 1, 5, 0, 3, 1, 2, 5};
  std::vector<double> table = randomVector(vocab * hidden, 2);
  std::vector<double> u = randomVector(n * hidden, 3), y(n * hidden);
  std::vector<double> dtable(vocab * hidden, -7.0);
  embeddingGrad(ids.data(), n, u.data(), vocab, hidden, dtable.data());
  // Row 4 is never used: zero. Row 1 appears 4 times.
  for (int64_t h = 0; h < hidden; ++h) {
    EXPECT_EQ(dtable[4 * hidden + h], 0.0);
    EXPECT_NEAR(dtable[1 * hidden + h],
                u[0 * hidden + h] + u[2 * hidden + h] + u[3 * hidden + h] +
                    u[7 * hidden + h],
                1e-12);
  }
  checkGradient("embedding dtable", table, dtable, [&] {
    embedding(ids.data(), n, table.data(), vocab, hidden, y.data());
    return dot(u, y);
  });
}

TEST(EmbeddingTest, OutOfRangeIdNamesTheValue) {
  std::vector<double> table(6), out(6);
  std::vector<int64_t> ids = {0, 3};
  try {
    embedding(ids.data(), 2, table.data(), 3, 2, out.data());
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range &e) {
    EXPECT_NE(std::string(e.what()).find("id 3 at position 1"),
              std::string::npos)
        << e.what();
  }
  std::vector<int32_t> negative = {-1};
  EXPECT_THROW(
      embeddingGrad(negative.data(), 1, out.data(), 3, 2, table.data()),
      std::out_of_range);
}

TEST(EmbeddingTest, PositionEmbeddingAndGradient) {
  const int64_t positions = 6, hidden = 3, seq = 4, outer = 2;
  std::vector<double> table = randomVector(positions * hidden, 4);
  std::vector<double> out(seq * hidden);
  positionEmbedding(table.data(), positions, hidden, seq, out.data());
  expectAllNear(
      out, std::vector<double>(table.begin(), table.begin() + seq * hidden),
      0.0, 0.0, "position_embedding");

  // y[o, s, :] = pos[s, :] broadcast over o (as add with a suffix rhs does).
  std::vector<double> u = randomVector(outer * seq * hidden, 5);
  std::vector<double> dtable(positions * hidden, 3.0);
  positionEmbeddingGrad(u.data(), outer, seq, hidden, positions, dtable.data());
  for (int64_t i = seq * hidden; i < positions * hidden; ++i)
    EXPECT_EQ(dtable[i], 0.0) << "unused row element " << i;
  checkGradient("position_embedding dtable", table, dtable, [&] {
    positionEmbedding(table.data(), positions, hidden, seq, out.data());
    double sum = 0.0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < seq * hidden; ++i)
        sum += u[o * seq * hidden + i] * out[i];
    return sum;
  });
  EXPECT_THROW(
      positionEmbedding(table.data(), positions, hidden, 7, out.data()),
      std::invalid_argument);
}

} // namespace
