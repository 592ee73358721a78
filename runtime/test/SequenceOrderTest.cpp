//===- SequenceOrderTest.cpp - Kernels on sequences in zig-zag order ------===//
//
// Zig-zag cp (SequencePositions.h): a kernel given rows in zig-zag order
// computes, row for row, what it computes for the original order: rope's
// angles, the position-embedding rows and their gradient, dropout's mask.
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/SequencePositions.h"
#include "autoshard/runtime/cpu/Dropout.h"
#include "autoshard/runtime/cpu/Embedding.h"
#include "autoshard/runtime/cpu/Rope.h"

#include "TestUtil.h"

using namespace autoshard::runtime;
using namespace autoshard::runtime::cpu;
using namespace autoshard::runtime::test;

namespace {

constexpr int64_t kSeq = 12, kChunks = 4; // 4 chunks of 3 positions

/// x [outer, kSeq, width] with row p holding original row zigzagPosition(p).
std::vector<double> permuted(const std::vector<double> &x, int64_t outer,
                             int64_t width) {
  std::vector<double> out(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t p = 0; p < kSeq; ++p)
      for (int64_t w = 0; w < width; ++w)
        out[(o * kSeq + p) * width + w] =
            x[(o * kSeq + zigzagPosition(p, kSeq, kChunks)) * width + w];
  return out;
}

TEST(SequenceOrderTest, RopeRotatesByOriginalPositions) {
  RopeShape s{2, kSeq, 3, 8, 500.0};
  const int64_t width = s.heads * s.headDim, n = s.batch * kSeq * width;
  std::vector<double> x = randomVector(n, 1), y(n), yz(n);
  rope(x.data(), y.data(), s);
  std::vector<double> xz = permuted(x, s.batch, width);
  s.seqLen = kSeq;
  s.zigzagChunks = kChunks;
  rope(xz.data(), yz.data(), s);
  expectAllNear(yz, permuted(y, s.batch, width), 0.0, 0.0, "rope");
  // A block of rows [3, 9) (rope_local: positionOffset) alike.
  RopeShape block = s;
  block.seq = 6;
  block.positionOffset = 3;
  std::vector<double> yb(s.batch * 6 * width);
  std::vector<double> xb(yb.size());
  for (int64_t b = 0; b < s.batch; ++b)
    std::copy_n(xz.begin() + (b * kSeq + 3) * width, 6 * width,
                xb.begin() + b * 6 * width);
  rope(xb.data(), yb.data(), block);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t i = 0; i < 6 * width; ++i)
      EXPECT_EQ(yb[b * 6 * width + i], yz[(b * kSeq + 3) * width + i]);
}

TEST(SequenceOrderTest, PositionEmbeddingRowsAndGradientFollowTheOrder) {
  const int64_t hidden = 5, positions = 16, outer = 3;
  std::vector<double> table = randomVector(positions * hidden, 2);
  std::vector<double> rows(kSeq * hidden), rowsZ(kSeq * hidden);
  positionEmbedding(table.data(), positions, hidden, kSeq, rows.data());
  positionEmbedding(table.data(), positions, hidden, kSeq, rowsZ.data(),
                    kChunks);
  expectAllNear(rowsZ, permuted(rows, 1, hidden), 0.0, 0.0, "rows");
  std::vector<double> dy = randomVector(outer * kSeq * hidden, 3);
  std::vector<double> dt(positions * hidden), dtZ(positions * hidden);
  positionEmbeddingGrad(dy.data(), outer, kSeq, hidden, positions, dt.data());
  std::vector<double> dyZ = permuted(dy, outer, hidden);
  positionEmbeddingGrad(dyZ.data(), outer, kSeq, hidden, positions, dtZ.data(),
                        kChunks);
  expectAllNear(dtZ, dt, 1e-15, 1e-15, "dtable");
}

TEST(SequenceOrderTest, DropoutDrawsTheOriginalMask) {
  const int64_t batch = 2, hidden = 7, n = batch * kSeq * hidden;
  DropoutParams p;
  p.rate = 0.5;
  p.seed = 99;
  p.step = 3;
  p.layer = 1;
  std::vector<double> x = randomVector(n, 4, 0.5, 1.5), y(n), yz(n);
  dropout(x.data(), y.data(), n, p);
  std::vector<double> xz = permuted(x, batch, hidden);
  DropoutBlock block{
      {batch, kSeq, hidden}, {batch, kSeq, hidden}, {0, 0, 0}, kChunks};
  dropoutBlock(xz.data(), yz.data(), block, p);
  expectAllNear(yz, permuted(y, batch, hidden), 0.0, 0.0, "dropout");
  // Without the order the masks differ (the test can fail).
  block.zigzagChunks = 0;
  dropoutBlock(xz.data(), yz.data(), block, p);
  EXPECT_NE(yz, permuted(y, batch, hidden));
}

} // namespace
