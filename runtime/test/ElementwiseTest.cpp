//===- ElementwiseTest.cpp - Elementwise, reduce_sum, broadcast tests -----===//

#include "autoshard/runtime/cpu/Elementwise.h"

#include "TestUtil.h"

using namespace autoshard::runtime::cpu;
using namespace autoshard::runtime::test;

namespace {

TEST(ElementwiseTest, SuffixBroadcasting) {
  // lhs [2, 3], rhs [3] and rank-0.
  std::vector<double> lhs = {1, 2, 3, 4, 5, 6}, rhs = {10, 20, 30}, out(6);
  add(lhs.data(), rhs.data(), out.data(), 6, 3);
  EXPECT_EQ(out, (std::vector<double>{11, 22, 33, 14, 25, 36}));
  sub(lhs.data(), rhs.data(), out.data(), 6, 3);
  EXPECT_EQ(out, (std::vector<double>{-9, -18, -27, -6, -15, -24}));
  mul(lhs.data(), rhs.data(), out.data(), 6, 3);
  EXPECT_EQ(out, (std::vector<double>{10, 40, 90, 40, 100, 180}));
  double two = 2;
  mul(lhs.data(), &two, out.data(), 6, 1);
  EXPECT_EQ(out, (std::vector<double>{2, 4, 6, 8, 10, 12}));
  add(lhs.data(), lhs.data(), out.data(), 6, 6);
  EXPECT_EQ(out, (std::vector<double>{2, 4, 6, 8, 10, 12}));
}

TEST(ElementwiseTest, Scale) {
  std::vector<float> x = {1, -2, 4}, out(3);
  scale(x.data(), out.data(), 3, 0.5);
  EXPECT_EQ(out, (std::vector<float>{0.5f, -1.0f, 2.0f}));
}

TEST(ElementwiseTest, RejectsNonSuffixRhs) {
  std::vector<double> x(6);
  EXPECT_THROW(add(x.data(), x.data(), x.data(), 6, 4), std::invalid_argument);
}

/// Naive reduce_sum over a [2, 3, 4, 5] tensor.
std::vector<double> naiveReduce(const std::vector<double> &x,
                                const std::vector<int64_t> &shape,
                                const std::vector<bool> &reduced) {
  std::vector<int64_t> outShape;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!reduced[d])
      outShape.push_back(shape[d]);
  int64_t outNumel = 1;
  for (int64_t s : outShape)
    outNumel *= s;
  std::vector<double> out(outNumel, 0.0);
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t rem = static_cast<int64_t>(i), o = 0;
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
    }
    for (size_t d = 0; d < shape.size(); ++d)
      if (!reduced[d])
        o = o * shape[d] + idx[d];
    out[o] += x[i];
  }
  return out;
}

TEST(ElementwiseTest, ReduceSumEveryDimSubset) {
  const std::vector<int64_t> shape = {2, 3, 1, 4, 5};
  std::vector<double> x = randomVector(2 * 3 * 4 * 5, 1);
  for (int mask = 0; mask < 32; ++mask) {
    std::vector<int64_t> dims;
    std::vector<bool> reduced(5);
    for (int d = 0; d < 5; ++d)
      if (mask & (1 << d)) {
        dims.push_back(d);
        reduced[d] = true;
      }
    std::vector<double> want = naiveReduce(x, shape, reduced);
    std::vector<double> got(want.size(), -1.0);
    reduceSum(x.data(), got.data(), shape, dims);
    expectAllNear(got, want, 1e-12, 1e-12,
                  "reduce_sum mask " + std::to_string(mask));
  }
}

TEST(ElementwiseTest, ReduceSumRejectsBadDims) {
  std::vector<double> x(6), out(6);
  EXPECT_THROW(reduceSum(x.data(), out.data(), {2, 3}, {1, 0}),
               std::invalid_argument);
  EXPECT_THROW(reduceSum(x.data(), out.data(), {2, 3}, {2}),
               std::invalid_argument);
}

/// Naive broadcast: out (of `shape`) repeats x along the `reduced` dims.
std::vector<double> naiveBroadcast(const std::vector<double> &x,
                                   const std::vector<int64_t> &shape,
                                   const std::vector<bool> &reduced) {
  int64_t numel = 1;
  for (int64_t s : shape)
    numel *= s;
  std::vector<double> out(numel);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < numel; ++i) {
    int64_t rem = i, o = 0;
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
    }
    for (size_t d = 0; d < shape.size(); ++d)
      if (!reduced[d])
        o = o * shape[d] + idx[d];
    out[i] = x[o];
  }
  return out;
}

TEST(ElementwiseTest, BroadcastEveryDimSubset) {
  const std::vector<int64_t> shape = {2, 3, 1, 4, 5};
  const int64_t numel = 2 * 3 * 4 * 5;
  for (int mask = 0; mask < 32; ++mask) {
    std::vector<int64_t> dims;
    std::vector<bool> reduced(5);
    int64_t xNumel = 1;
    for (int d = 0; d < 5; ++d) {
      if (mask & (1 << d)) {
        dims.push_back(d);
        reduced[d] = true;
      } else {
        xNumel *= shape[d];
      }
    }
    const std::string what = "broadcast mask " + std::to_string(mask);
    std::vector<double> x = randomVector(xNumel, 10 + mask);
    std::vector<double> want = naiveBroadcast(x, shape, reduced);
    std::vector<double> got(numel, -7.0);
    broadcast(x.data(), got.data(), shape, dims);
    EXPECT_EQ(got, want) << what; // a copy: bit-exact

    // f32 instantiation.
    std::vector<float> xf = convert<float>(x), gotf(numel, -7.0f);
    broadcast(xf.data(), gotf.data(), shape, dims);
    EXPECT_EQ(gotf, convert<float>(want)) << what;

    // Adjointness: <broadcast(x), y> == <x, reduce_sum(y)>.
    std::vector<double> y = randomVector(numel, 100 + mask), ry(xNumel);
    reduceSum(y.data(), ry.data(), shape, dims);
    EXPECT_NEAR(dot(got, y), dot(x, ry), 1e-12 * numel) << what;

    // reduce_sum(broadcast(x)) == x * (number of copies).
    std::vector<double> rb(xNumel);
    reduceSum(got.data(), rb.data(), shape, dims);
    const double copies = static_cast<double>(numel / xNumel);
    for (double &v : x)
      v *= copies;
    expectAllNear(rb, x, 1e-12, 1e-12, what + " reduce_sum(broadcast)");
  }
}

TEST(ElementwiseTest, BroadcastScalarAndEmpty) {
  // Rank-0 x into [3, 2]; an empty dims list is a copy; a zero-size result
  // writes nothing.
  double x = 2.5;
  std::vector<double> out(6, 0.0);
  broadcast(&x, out.data(), {3, 2}, {0, 1});
  EXPECT_EQ(out, std::vector<double>(6, 2.5));
  std::vector<double> v = {1, 2, 3}, copy(3);
  broadcast(v.data(), copy.data(), {3}, {});
  EXPECT_EQ(copy, v);
  broadcast(v.data(), copy.data(), {0, 3}, {0});
  EXPECT_EQ(copy, v);
}

TEST(ElementwiseTest, BroadcastRejectsBadDims) {
  std::vector<double> x(6), out(6);
  EXPECT_THROW(broadcast(x.data(), out.data(), {2, 3}, {1, 0}),
               std::invalid_argument);
  EXPECT_THROW(broadcast(x.data(), out.data(), {2, 3}, {2}),
               std::invalid_argument);
  EXPECT_THROW(broadcast(x.data(), out.data(), {2, 3}, {-1}),
               std::invalid_argument);
  EXPECT_THROW(broadcast(x.data(), out.data(), {2, 3}, {0, 0}),
               std::invalid_argument);
}

// Broadcast mul's gradient w.r.t. the broadcast operand is reduce_sum of
// dy * lhs over the leading dims; check it against finite differences.
TEST(ElementwiseTest, BroadcastMulGradientViaReduceSum) {
  std::vector<double> lhs = randomVector(12, 2), rhs = randomVector(4, 3);
  std::vector<double> u = randomVector(12, 4), prod(12), drhs(4), y(12);
  mul(u.data(), lhs.data(), prod.data(), 12, 12);
  reduceSum(prod.data(), drhs.data(), {3, 4}, {0});
  checkGradient("mul drhs", rhs, drhs, [&] {
    mul(lhs.data(), rhs.data(), y.data(), 12, 4);
    return dot(u, y);
  });
}

} // namespace
