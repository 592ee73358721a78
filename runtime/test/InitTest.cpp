//===- InitTest.cpp - Counter-based parameter initialisation --------------===//

#include "autoshard/runtime/Init.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace autoshard::runtime;

namespace {

TEST(InitTest, Fnv1aKnownAnswers) {
  // Reference values of the 64-bit FNV-1a hash (Fowler, Noll, Vo).
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(InitTest, DependsOnlyOnSeedNameAndIndex) {
  uint64_t h = fnv1a64("layers.0.attn.wq");
  EXPECT_EQ(initNormal(1337, h, 12345), initNormal(1337, h, 12345));
  EXPECT_NE(initNormal(1337, h, 12345), initNormal(1338, h, 12345));
  EXPECT_NE(initNormal(1337, h, 12345),
            initNormal(1337, fnv1a64("layers.0.attn.wk"), 12345));
  EXPECT_NE(initNormal(1337, h, 12344), initNormal(1337, h, 12345));
}

TEST(InitTest, SliceOfInitEqualsInitOfSlice) {
  // A [64, 48] tensor initialised whole, by row blocks (as a row-sharded
  // plan would) and by a column block (per-row runs of global indices).
  const int64_t rows = 64, cols = 48;
  uint64_t h = fnv1a64("wte"), seed = 42;
  std::vector<float> whole(rows * cols);
  initNormalRange(whole.data(), rows * cols, 0, 0.02, seed, h);

  std::vector<float> rowShard(16 * cols);
  initNormalRange(rowShard.data(), 16 * cols, 32 * cols, 0.02, seed, h);
  for (int64_t i = 0; i < 16 * cols; ++i)
    ASSERT_EQ(rowShard[i], whole[32 * cols + i]) << "element " << i;

  // Columns [13, 37): odd start, so pairs of the Box-Muller block split.
  const int64_t c0 = 13, c1 = 37;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> run(c1 - c0);
    initNormalRange(run.data(), c1 - c0, r * cols + c0, 0.02, seed, h);
    for (int64_t c = c0; c < c1; ++c)
      ASSERT_EQ(run[c - c0], whole[r * cols + c]) << r << ", " << c;
  }
}

TEST(InitTest, SampleMeanAndStd) {
  const int64_t n = 200000;
  const double stddev = 0.02;
  std::vector<double> x(n);
  initNormalRange(x.data(), n, 0, stddev, 1337, fnv1a64("w"));
  double mean = 0, sq = 0;
  for (double v : x) {
    mean += v;
    sq += v * v;
  }
  mean /= n;
  double sd = std::sqrt(sq / n - mean * mean);
  // Standard errors: sd / sqrt(n) ~ 4.5e-5 for the mean, ~0.16% for sd.
  EXPECT_NEAR(mean, 0.0, 4 * stddev / std::sqrt(double(n)));
  EXPECT_NEAR(sd / stddev, 1.0, 0.01);
  // Even (cos) and odd (sin) halves are each standard normal too.
  double evenSq = 0;
  for (int64_t i = 0; i < n; i += 2)
    evenSq += x[i] * x[i];
  EXPECT_NEAR(std::sqrt(evenSq / (n / 2)) / stddev, 1.0, 0.015);
}

} // namespace
