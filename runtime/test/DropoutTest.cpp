//===- DropoutTest.cpp - Dropout kernel tests -----------------------------===//

#include "autoshard/runtime/cpu/Dropout.h"

#include "TestUtil.h"

using namespace autoshard::runtime;
using namespace autoshard::runtime::cpu;
using namespace autoshard::runtime::test;

namespace {

DropoutParams params(double rate) {
  DropoutParams p;
  p.rate = rate;
  p.seed = 1234;
  p.step = 7;
  p.layer = 3;
  p.site = 1;
  return p;
}

TEST(DropoutTest, MaskMatchesPhiloxStreamAndScales) {
  const int64_t n = 1001;
  std::vector<double> x = randomVector(n, 1, 0.5, 1.5), y(n);
  DropoutParams p = params(0.25);
  dropout(x.data(), y.data(), n, p);
  // Reference: key = seed, counter = (i / 4, 0, step, layer << 16 | site).
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    PhiloxBlock bits = philox4x32_10(
        PhiloxBlock{{static_cast<uint32_t>(i / 4), 0, 7, (3u << 16) | 1u}},
        PhiloxKey{{1234, 0}});
    const bool keep = uniform24(bits.word[i % 4]) >= 0.25f;
    EXPECT_DOUBLE_EQ(y[i], keep ? x[i] / 0.75 : 0.0) << "element " << i;
    kept += keep;
  }
  // ~75% kept (binomial sd ~ 14).
  EXPECT_NEAR(static_cast<double>(kept), 0.75 * n, 70.0);
}

TEST(DropoutTest, OffsetShardsReproduceTheWholeTensor) {
  const int64_t n = 37;
  std::vector<double> x = randomVector(n, 2), whole(n), parts(n);
  dropout(x.data(), whole.data(), n, params(0.5));
  // Split at an offset that is not a multiple of 4.
  DropoutParams second = params(0.5);
  second.indexOffset = 13;
  dropout(x.data(), parts.data(), 13, params(0.5));
  dropout(x.data() + 13, parts.data() + 13, n - 13, second);
  expectAllNear(parts, whole, 0.0, 0.0, "sharded dropout");
}

TEST(DropoutTest, DifferentSitesStepsLayersGiveDifferentMasks) {
  const int64_t n = 256;
  std::vector<double> x(n, 1.0), a(n), b(n);
  dropout(x.data(), a.data(), n, params(0.5));
  for (int field = 0; field < 3; ++field) {
    DropoutParams p = params(0.5);
    (field == 0 ? p.site : field == 1 ? p.step : p.layer) += 1;
    dropout(x.data(), b.data(), n, p);
    EXPECT_NE(a, b) << "field " << field;
  }
}

TEST(DropoutTest, ZeroRateIsIdentity) {
  std::vector<float> x = convert<float>(randomVector(50, 3)), y(50);
  dropout(x.data(), y.data(), 50, params(0.0));
  EXPECT_EQ(x, y);
}

TEST(DropoutTest, GradientMatchesFiniteDifferences) {
  const int64_t n = 64;
  std::vector<double> x = randomVector(n, 4), u = randomVector(n, 5);
  std::vector<double> dx(n), y(n);
  dropoutGrad(u.data(), dx.data(), n, params(0.3));
  checkGradient("dropout dx", x, dx, [&] {
    dropout(x.data(), y.data(), n, params(0.3));
    return dot(u, y);
  });
}

/// Applies the local dropout (or its gradient) to every block of `global`
/// split into `parts[d]` equal blocks along each dim d, and checks that each
/// block's result is the slice of the global op's result.
template <bool Grad>
void expectBlocksMatchGlobal(const std::vector<int64_t> &global,
                             const std::vector<int64_t> &parts) {
  const size_t rank = global.size();
  int64_t n = 1, numBlocks = 1;
  std::vector<int64_t> local(rank);
  for (size_t d = 0; d < rank; ++d) {
    n *= global[d];
    local[d] = global[d] / parts[d];
    numBlocks *= parts[d];
  }
  std::vector<double> x = randomVector(n, 5), want(n);
  DropoutParams p = params(0.4);
  if constexpr (Grad)
    dropoutGrad(x.data(), want.data(), n, p);
  else
    dropout(x.data(), want.data(), n, p);
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank - 1; d > 0; --d)
    stride[d - 1] = stride[d] * global[d];
  int64_t localN = n / numBlocks, covered = 0;
  for (int64_t b = 0; b < numBlocks; ++b) {
    // Block coordinates, last dim fastest (as the ranks of a mesh).
    DropoutBlock block;
    block.shape = local;
    block.globalShape = global;
    block.offsets.assign(rank, 0);
    for (int64_t rest = b, d = rank - 1; d >= 0; --d) {
      block.offsets[d] = rest % parts[d] * local[d];
      rest /= parts[d];
    }
    // Gather the block's input (row-major local order) from x.
    std::vector<double> in(localN), got(localN), expect(localN);
    std::vector<int64_t> idx(rank, 0);
    for (int64_t i = 0; i < localN; ++i) {
      int64_t g = 0;
      for (size_t d = 0; d < rank; ++d)
        g += (block.offsets[d] + idx[d]) * stride[d];
      in[i] = x[g];
      expect[i] = want[g];
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++idx[d] < local[d])
          break;
        idx[d] = 0;
      }
    }
    if constexpr (Grad)
      dropoutGradBlock(in.data(), got.data(), block, p);
    else
      dropoutBlock(in.data(), got.data(), block, p);
    expectAllNear(got, expect, 0.0, 0.0,
                  "block " + std::to_string(b) + " of the sharded dropout");
    covered += localN;
  }
  EXPECT_EQ(covered, n);
}

TEST(DropoutTest, BlocksShardedOnDim0MatchTheGlobalMask) {
  expectBlocksMatchGlobal<false>({8, 6}, {4, 1});
  expectBlocksMatchGlobal<false>({4, 10, 7}, {2, 1, 1});
  expectBlocksMatchGlobal<true>({8, 6}, {2, 1});
}

TEST(DropoutTest, BlocksShardedOnDim1MatchTheGlobalMask) {
  // Odd row lengths: a block's rows start inside a Philox block of four.
  expectBlocksMatchGlobal<false>({5, 6}, {1, 2});
  expectBlocksMatchGlobal<false>({3, 10, 7}, {1, 5, 1});
  expectBlocksMatchGlobal<true>({5, 6}, {1, 3});
}

TEST(DropoutTest, BlocksShardedOnSeveralDimsMatchTheGlobalMask) {
  expectBlocksMatchGlobal<false>({6, 10}, {2, 5});
  expectBlocksMatchGlobal<false>({4, 6, 9}, {2, 3, 1});
  expectBlocksMatchGlobal<false>({4, 6, 9}, {2, 2, 3});
  expectBlocksMatchGlobal<true>({4, 6, 9}, {2, 3, 3});
}

TEST(DropoutTest, WholeBlockIsTheGlobalOpAndScalarsWork) {
  expectBlocksMatchGlobal<false>({3, 5}, {1, 1});
  expectBlocksMatchGlobal<false>({17}, {1});
  expectBlocksMatchGlobal<false>({18}, {3});
  DropoutBlock scalar; // rank 0: element 0
  double x = 2.0, y = -1.0, want = -1.0;
  dropoutBlock(&x, &y, scalar, params(0.5));
  dropout(&x, &want, 1, params(0.5));
  EXPECT_EQ(y, want);
}

TEST(DropoutTest, RejectsBlocksOutsideTheGlobalShape) {
  std::vector<double> x(12), y(12);
  DropoutBlock block{{3, 4}, {6, 4}, {4, 0}}; // rows [4, 7) of 6
  EXPECT_THROW(dropoutBlock(x.data(), y.data(), block, params(0.1)),
               std::invalid_argument);
  block = {{3, 4}, {6, 4, 1}, {0, 0}}; // rank mismatch
  EXPECT_THROW(dropoutBlock(x.data(), y.data(), block, params(0.1)),
               std::invalid_argument);
  block = {{3, 4}, {6, 4}, {-1, 0}};
  EXPECT_THROW(dropoutGradBlock(x.data(), y.data(), block, params(0.1)),
               std::invalid_argument);
}

TEST(DropoutTest, RejectsBadArguments) {
  std::vector<double> x(4), y(4);
  EXPECT_THROW(dropout(x.data(), y.data(), 4, params(1.0)),
               std::invalid_argument);
  DropoutParams p = params(0.1);
  p.site = 1 << 16;
  EXPECT_THROW(dropout(x.data(), y.data(), 4, p), std::invalid_argument);
  p = params(0.1);
  p.step = -1;
  EXPECT_THROW(dropout(x.data(), y.data(), 4, p), std::invalid_argument);
}

} // namespace
