//===- RopeTest.cpp - Rotary position embedding kernel tests --------------===//

#include "autoshard/runtime/cpu/Rope.h"

#include "TestUtil.h"

using namespace autoshard::runtime::cpu;
using namespace autoshard::runtime::test;

namespace {

RopeShape smallShape() {
  RopeShape s;
  s.batch = 2;
  s.seq = 5;
  s.heads = 3;
  s.headDim = 8;
  s.theta = 500.0;
  return s;
}

int64_t numel(const RopeShape &s) {
  return s.batch * s.seq * s.heads * s.headDim;
}

TEST(RopeTest, RotateHalfConvention) {
  RopeShape s = smallShape();
  std::vector<double> x = randomVector(numel(s), 1), y(numel(s));
  rope(x.data(), y.data(), s);
  const int64_t half = s.headDim / 2;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t p = 0; p < s.seq; ++p)
      for (int64_t n = 0; n < s.heads; ++n)
        for (int64_t i = 0; i < half; ++i) {
          const int64_t base = ((b * s.seq + p) * s.heads + n) * s.headDim;
          const double angle = p * std::pow(s.theta, -2.0 * i / s.headDim);
          const double x1 = x[base + i], x2 = x[base + i + half];
          EXPECT_NEAR(y[base + i], x1 * std::cos(angle) - x2 * std::sin(angle),
                      1e-14);
          EXPECT_NEAR(y[base + i + half],
                      x2 * std::cos(angle) + x1 * std::sin(angle), 1e-14);
        }
  // Position 0 is the identity.
  for (int64_t i = 0; i < s.heads * s.headDim; ++i)
    EXPECT_EQ(y[i], x[i]);
}

TEST(RopeTest, GradientIsInverseRotation) {
  RopeShape s = smallShape();
  std::vector<double> x = randomVector(numel(s), 2),
                      u = randomVector(numel(s), 3);
  std::vector<double> y(numel(s)), dx(numel(s)), back(numel(s));
  ropeGrad(u.data(), dx.data(), s);
  checkGradient("rope dx", x, dx, [&] {
    rope(x.data(), y.data(), s);
    return dot(u, y);
  });
  // Rotations are orthogonal: rope_grad(rope(x)) == x.
  rope(x.data(), y.data(), s);
  ropeGrad(y.data(), back.data(), s);
  expectAllNear(back, x, 1e-12, 1e-12, "rope_grad(rope(x))");
}

TEST(RopeTest, PositionOffsetMatchesSlice) {
  RopeShape s = smallShape();
  s.batch = 1;
  std::vector<double> x = randomVector(numel(s), 4), whole(numel(s));
  rope(x.data(), whole.data(), s);
  RopeShape tail = s;
  tail.seq = 2;
  tail.positionOffset = 3;
  const int64_t offset = 3 * s.heads * s.headDim;
  std::vector<double> part(numel(tail));
  rope(x.data() + offset, part.data(), tail);
  expectAllNear(part, std::vector<double>(whole.begin() + offset, whole.end()),
                1e-14, 1e-14, "rope with offset");
}

TEST(RopeTest, RejectsOddHeadDim) {
  RopeShape s = smallShape();
  s.headDim = 7;
  std::vector<double> x(numel(s));
  EXPECT_THROW(rope(x.data(), x.data(), s), std::invalid_argument);
}

} // namespace
