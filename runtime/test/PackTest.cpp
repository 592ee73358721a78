//===- PackTest.cpp - dist.pack / dist.unpack kernel tests ----------------===//
//
// The flat layout (segment g = block g of every tensor, in order), the round
// trip, and the two uses of dist-bucket-collectives simulated on G ranks: a
// flat reduce-scatter of packed buffers gives each rank exactly the shards
// per-tensor reduce-scatters give it, and a flat all-gather of packed shards
// unpacks to the per-tensor all-gathers.
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/cpu/Pack.h"

#include "TestUtil.h"

#include <stdexcept>

using namespace autoshard::runtime::cpu;
using namespace autoshard::runtime::test;

namespace {

int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

/// Block g of `x` (shape `shape`) along `dim`, of G blocks (the rank-g shard
/// of a reduce-scatter / the piece rank g contributes to an all-gather).
std::vector<double> blockOf(const std::vector<double> &x,
                            const std::vector<int64_t> &shape, int64_t dim,
                            int64_t g, int64_t groups) {
  int64_t outer = 1, inner = shape[dim] / groups;
  for (int64_t i = 0; i < dim; ++i)
    outer *= shape[i];
  for (size_t i = dim + 1; i < shape.size(); ++i)
    inner *= shape[i];
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < inner; ++k)
      out.push_back(x[(o * groups + g) * inner + k]);
  return out;
}

TEST(PackTest, LayoutIsGroupMajor) {
  // a: 2x2 split on dim 0, b: 1x4 split on dim 1, 2 groups.
  std::vector<PackedTensor> ts = {{{2, 2}, 0}, {{1, 4}, 1}};
  std::vector<double> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
  ASSERT_EQ(packedSize(ts, 2), 8);
  std::vector<double> flat(8);
  const void *srcs[] = {a.data(), b.data()};
  pack(ts, 2, sizeof(double), srcs, flat.data());
  // Segment 0: row 0 of a, columns 0..1 of b; segment 1: row 1, columns 2..3.
  EXPECT_EQ(flat, (std::vector<double>{1, 2, 5, 6, 3, 4, 7, 8}));
  std::vector<double> a2(4), b2(4);
  void *dsts[] = {a2.data(), b2.data()};
  unpack(ts, 2, sizeof(double), flat.data(), dsts);
  EXPECT_EQ(a2, a);
  EXPECT_EQ(b2, b);
}

TEST(PackTest, OneGroupConcatenates) {
  std::vector<PackedTensor> ts = {{{}, 0}, {{2, 3}, 0}, {{2}, 0}};
  std::vector<float> s = {9}, m = {1, 2, 3, 4, 5, 6}, v = {7, 8};
  std::vector<float> flat(9);
  const void *srcs[] = {s.data(), m.data(), v.data()};
  pack(ts, 1, sizeof(float), srcs, flat.data());
  EXPECT_EQ(flat, (std::vector<float>{9, 1, 2, 3, 4, 5, 6, 7, 8}));
  std::vector<float> s2(1), m2(6), v2(2);
  void *dsts[] = {s2.data(), m2.data(), v2.data()};
  unpack(ts, 1, sizeof(float), flat.data(), dsts);
  EXPECT_EQ(s2, s);
  EXPECT_EQ(m2, m);
  EXPECT_EQ(v2, v);
}

TEST(PackTest, FlatReduceScatterAndAllGatherMatchPerTensor) {
  const int64_t groups = 4;
  std::vector<PackedTensor> ts = {
      {{8, 3}, 0}, {{2, 4, 8}, 2}, {{4}, 0}, {{3, 8, 2}, 1}};
  int64_t total = packedSize(ts, groups), seg = total / groups;
  // Rank r's partial tensors and their packs.
  std::vector<std::vector<std::vector<double>>> x(groups);
  std::vector<std::vector<double>> flat(groups, std::vector<double>(total));
  for (int64_t r = 0; r < groups; ++r) {
    std::vector<const void *> srcs;
    for (size_t i = 0; i < ts.size(); ++i) {
      x[r].push_back(randomVector(numel(ts[i].shape), 10 * r + i));
      srcs.push_back(x[r][i].data());
    }
    pack(ts, groups, sizeof(double), srcs.data(), flat[r].data());
  }
  std::vector<PackedTensor> shards;
  for (const PackedTensor &t : ts) {
    PackedTensor s = t;
    s.shape[t.dim] /= groups;
    shards.push_back(s);
  }
  std::vector<std::vector<double>> gatheredFlat(groups);
  for (int64_t r = 0; r < groups; ++r) {
    // Flat reduce-scatter: rank r gets segment r of the sum.
    std::vector<double> mine(seg, 0.0);
    for (int64_t q = 0; q < groups; ++q)
      for (int64_t k = 0; k < seg; ++k)
        mine[k] += flat[q][r * seg + k];
    std::vector<std::vector<double>> got;
    std::vector<void *> dsts;
    for (const PackedTensor &s : shards)
      got.emplace_back(numel(s.shape));
    for (auto &g : got)
      dsts.push_back(g.data());
    unpack(shards, 1, sizeof(double), mine.data(), dsts.data());
    for (size_t i = 0; i < ts.size(); ++i) {
      std::vector<double> sum(numel(ts[i].shape), 0.0);
      for (int64_t q = 0; q < groups; ++q)
        for (size_t k = 0; k < sum.size(); ++k)
          sum[k] += x[q][i][k];
      std::vector<double> want =
          blockOf(sum, ts[i].shape, ts[i].dim, r, groups);
      ASSERT_EQ(got[i].size(), want.size());
      for (size_t k = 0; k < want.size(); ++k)
        EXPECT_DOUBLE_EQ(got[i][k], want[k]) << "tensor " << i << " rank " << r;
    }
    // Rank r's shards of x[0] packed with one group, for the all-gather.
    std::vector<std::vector<double>> mineShards;
    std::vector<const void *> srcs;
    for (size_t i = 0; i < ts.size(); ++i)
      mineShards.push_back(blockOf(x[0][i], ts[i].shape, ts[i].dim, r, groups));
    for (auto &s : mineShards)
      srcs.push_back(s.data());
    gatheredFlat[r].resize(seg);
    pack(shards, 1, sizeof(double), srcs.data(), gatheredFlat[r].data());
  }
  // Flat all-gather: segment g = rank g's pack; unpack restores x[0].
  std::vector<double> all;
  for (const auto &f : gatheredFlat)
    all.insert(all.end(), f.begin(), f.end());
  std::vector<std::vector<double>> full;
  std::vector<void *> dsts;
  for (const PackedTensor &t : ts)
    full.emplace_back(numel(t.shape));
  for (auto &f : full)
    dsts.push_back(f.data());
  unpack(ts, groups, sizeof(double), all.data(), dsts.data());
  for (size_t i = 0; i < ts.size(); ++i)
    EXPECT_EQ(full[i], x[0][i]) << "tensor " << i;
}

TEST(PackTest, BadLayoutsThrow) {
  EXPECT_THROW(packedSize({{{6}, 0}}, 4), std::invalid_argument);
  EXPECT_THROW(packedSize({{{4, 4}, 2}}, 2), std::invalid_argument);
  EXPECT_THROW(packedSize({{{4}, 0}}, 0), std::invalid_argument);
  EXPECT_EQ(packedSize({{{6}, 0}, {{2, 5}, 0}}, 1), 16);
}

} // namespace
