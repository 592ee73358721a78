//===- OptimizerTest.cpp - sum_squares, clip_coef and AdamW tests ---------===//

#include "autoshard/runtime/cpu/Optimizer.h"

#include "TestUtil.h"

#include <cmath>

using namespace autoshard::runtime::cpu;
using namespace autoshard::runtime::test;

namespace {

TEST(OptimizerTest, SumSquaresAndClipCoef) {
  std::vector<float> a = {3, 4}, b = {12};
  const double sumsq = sumSquares(a.data(), 2) + sumSquares(b.data(), 1);
  EXPECT_EQ(sumsq, 169.0);
  ClipCoef clip = clipCoef(sumsq, 1.0);
  EXPECT_DOUBLE_EQ(clip.norm, 13.0);
  EXPECT_DOUBLE_EQ(clip.coef, 1.0 / (13.0 + 1e-6));
  EXPECT_EQ(clipCoef(0.25, 1.0).coef, 1.0);
  EXPECT_THROW(clipCoef(1.0, 0.0), std::invalid_argument);
  EXPECT_THROW(clipCoef(-1.0, 1.0), std::invalid_argument);
  // A diverged gradient: its norm says so (shard-run reports the step).
  ClipCoef nan = clipCoef(std::nan(""), 1.0);
  EXPECT_TRUE(std::isnan(nan.norm) && std::isnan(nan.coef));
  ClipCoef inf = clipCoef(HUGE_VAL, 1.0);
  EXPECT_TRUE(std::isinf(inf.norm));
  EXPECT_EQ(inf.coef, 0.0);
}

// Two AdamW steps against the closed form: with m0 = v0 = 0,
// m1 = (1-b1) g1, v1 = (1-b2) g1^2, m2 = b1 m1 + (1-b1) g2, ...
TEST(OptimizerTest, AdamWTwoStepsClosedForm) {
  const double lr = 0.01, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
  const double scale = 0.5;
  std::vector<double> p0 = {0.5, -1.0, 2.0}, g1 = {0.1, -0.2, 0.3},
                      g2 = {-0.4, 0.05, 0.3};
  for (double decay : {0.0, wd}) {
    std::vector<double> p = p0, m(3, 0.0), v(3, 0.0);
    AdamWParams params;
    params.lr = lr;
    params.beta1 = b1;
    params.beta2 = b2;
    params.epsilon = eps;
    params.weightDecay = decay;
    params.gradScale = scale;
    params.step = 1;
    adamw(p.data(), g1.data(), m.data(), v.data(), p.data(), m.data(), v.data(),
          3, params);
    params.step = 2;
    adamw(p.data(), g2.data(), m.data(), v.data(), p.data(), m.data(), v.data(),
          3, params);
    for (int i = 0; i < 3; ++i) {
      const double a = scale * g1[i], c = scale * g2[i];
      // Step 1: mhat = a, vhat = a^2.
      const double p1 =
          p0[i] - lr * decay * p0[i] - lr * a / (std::abs(a) + eps);
      const double m2 = b1 * (1 - b1) * a + (1 - b1) * c;
      const double v2 = b2 * (1 - b2) * a * a + (1 - b2) * c * c;
      const double mhat = m2 / (1 - b1 * b1), vhat = v2 / (1 - b2 * b2);
      const double p2 =
          p1 - lr * decay * p1 - lr * mhat / (std::sqrt(vhat) + eps);
      EXPECT_NEAR(m[i], m2, 1e-15) << i;
      EXPECT_NEAR(v[i], v2, 1e-15) << i;
      EXPECT_NEAR(p[i], p2, 1e-14) << "element " << i << " decay " << decay;
    }
  }
}

TEST(OptimizerTest, AdamWMixedGradType) {
  std::vector<float> p = {1.0f}, m = {0.0f}, v = {0.0f};
  std::vector<double> g = {2.0};
  AdamWParams params;
  params.lr = 0.1;
  adamw(p.data(), g.data(), m.data(), v.data(), p.data(), m.data(), v.data(), 1,
        params);
  // First step moves by lr * sign(g) (up to eps).
  EXPECT_NEAR(p[0], 0.9f, 1e-6);
  params.step = 0;
  EXPECT_THROW(adamw(p.data(), g.data(), m.data(), v.data(), p.data(), m.data(),
                     v.data(), 1, params),
               std::invalid_argument);
}

} // namespace
