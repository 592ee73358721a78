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
