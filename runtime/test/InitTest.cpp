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

/// Init of the padded `[rows, cols]` tensor (logical `[lr, lc]`) by blocks
/// of `br` x `bc` at every block offset, reassembled.
std::vector<float> paddedInitByBlocks(int64_t rows, int64_t cols, int64_t lr,
                                      int64_t lc, int64_t br, int64_t bc,
                                      uint64_t seed, uint64_t h) {
  std::vector<float> whole(rows * cols, -7.0f);
  const int64_t logical[2] = {lr, lc}, local[2] = {br, bc};
  for (int64_t r0 = 0; r0 < rows; r0 += br)
    for (int64_t c0 = 0; c0 < cols; c0 += bc) {
      std::vector<float> block(br * bc, -9.0f);
      const int64_t offset[2] = {r0, c0};
      initNormalBlock(block.data(), 2, local, offset, logical, 0.02, seed, h);
      for (int64_t r = 0; r < br; ++r)
        for (int64_t c = 0; c < bc; ++c)
          whole[(r0 + r) * cols + c0 + c] = block[r * bc + c];
    }
  return whole;
}

TEST(InitTest, PaddedInitIsTheUnpaddedInitPlusZeros) {
  // An LM head [H, V] = [6, 11] padded to [6, 16], and an embedding
  // [V, H] = [11, 6] padded to [16, 6]: the logical part equals the
  // unpadded init, the padding is 0, whatever the blocks (shardings).
  const uint64_t h = fnv1a64("lm_head"), seed = 7;
  for (bool head : {true, false}) {
    const int64_t rows = head ? 6 : 16, cols = head ? 16 : 6;
    const int64_t lr = head ? 6 : 11, lc = head ? 11 : 6;
    std::vector<float> unpadded(lr * lc);
    initNormalRange(unpadded.data(), lr * lc, 0, 0.02, seed, h);
    const std::vector<std::pair<int64_t, int64_t>> blocks = {
        {rows, cols},
        {rows / 2, cols},
        {rows, cols / 2},
        {rows / 2, cols / 4},
        {1, 1}};
    for (auto [br, bc] : blocks) {
      std::vector<float> padded =
          paddedInitByBlocks(rows, cols, lr, lc, br, bc, seed, h);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          float want = r < lr && c < lc ? unpadded[r * lc + c] : 0.0f;
          ASSERT_EQ(padded[r * cols + c], want)
              << (head ? "head" : "embedding") << " blocks " << br << "x" << bc
              << " at " << r << ", " << c;
        }
    }
  }
}

TEST(InitTest, UnpaddedBlockInitIsThePlainInit) {
  // logical = global: the block init is the slice of the global init.
  const int64_t rows = 8, cols = 10;
  const uint64_t h = fnv1a64("w"), seed = 3;
  std::vector<double> whole(rows * cols), block(4 * 5);
  initNormalRange(whole.data(), rows * cols, 0, 0.5, seed, h);
  const int64_t local[2] = {4, 5}, offset[2] = {4, 5}, global[2] = {rows, cols};
  initNormalBlock(block.data(), 2, local, offset, global, 0.5, seed, h);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 5; ++c)
      ASSERT_EQ(block[r * 5 + c], whole[(4 + r) * cols + 5 + c]);
  std::vector<double> ones(4 * 5, 1.0);
  const int64_t logical[2] = {6, 7};
  zeroOutsideLogical(ones.data(), 2, local, offset, logical);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 5; ++c)
      EXPECT_EQ(ones[r * 5 + c], (4 + r < 6 && 5 + c < 7) ? 1.0 : 0.0);
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
