//===- ActivationTest.cpp - Activation kernel tests -----------------------===//

#include "autoshard/runtime/cpu/Activation.h"

#include "TestUtil.h"

using namespace autoshard::runtime::cpu;
using namespace autoshard::runtime::test;

namespace {

constexpr int64_t kNumel = 41;

TEST(ActivationTest, GeluKnownValues) {
  // Reference values: x * Phi(x) and the tanh form, from the closed forms.
  std::vector<double> x = {-3.0, -1.0, 0.0, 0.5, 2.0}, y(5), yt(5);
  gelu(x.data(), y.data(), 5, false);
  gelu(x.data(), yt.data(), 5, true);
  for (size_t i = 0; i < x.size(); ++i) {
    const double phi = 0.5 * std::erfc(-x[i] / std::sqrt(2.0));
    EXPECT_NEAR(y[i], x[i] * phi, 1e-15);
    const double inner =
        std::sqrt(2.0 / M_PI) * (x[i] + 0.044715 * std::pow(x[i], 3));
    EXPECT_NEAR(yt[i], 0.5 * x[i] * (1 + std::tanh(inner)), 1e-15);
  }
  EXPECT_NEAR(y[1], -0.15865525393145707, 1e-15);
  EXPECT_NEAR(y[4], 1.9544997361036416, 1e-15);
}

void checkGelu(bool tanhApprox) {
  std::vector<double> x = randomVector(kNumel, 1, -4, 4);
  std::vector<double> u = randomVector(kNumel, 2), y(kNumel), dx(kNumel);
  geluGrad(u.data(), x.data(), dx.data(), kNumel, tanhApprox);
  checkGradient(tanhApprox ? "gelu tanh dx" : "gelu dx", x, dx, [&] {
    gelu(x.data(), y.data(), kNumel, tanhApprox);
    return dot(u, y);
  });
}

TEST(ActivationTest, GeluExactGradient) { checkGelu(false); }

TEST(ActivationTest, GeluTanhGradient) { checkGelu(true); }

TEST(ActivationTest, SiluValueAndGradient) {
  std::vector<double> x = randomVector(kNumel, 3, -6, 6);
  std::vector<double> u = randomVector(kNumel, 4), y(kNumel), dx(kNumel);
  silu(x.data(), y.data(), kNumel);
  for (int64_t i = 0; i < kNumel; ++i)
    EXPECT_NEAR(y[i], x[i] / (1 + std::exp(-x[i])), 1e-15);
  siluGrad(u.data(), x.data(), dx.data(), kNumel);
  checkGradient("silu dx", x, dx, [&] {
    silu(x.data(), y.data(), kNumel);
    return dot(u, y);
  });
}

TEST(ActivationTest, SwigluValueAndGradient) {
  std::vector<double> gate = randomVector(kNumel, 5, -4, 4);
  std::vector<double> up = randomVector(kNumel, 6, -2, 2);
  std::vector<double> u = randomVector(kNumel, 7), y(kNumel);
  std::vector<double> dgate(kNumel), dup(kNumel);
  swiglu(gate.data(), up.data(), y.data(), kNumel);
  for (int64_t i = 0; i < kNumel; ++i)
    EXPECT_NEAR(y[i], gate[i] / (1 + std::exp(-gate[i])) * up[i], 1e-15);
  swigluGrad(u.data(), gate.data(), up.data(), dgate.data(), dup.data(),
             kNumel);
  auto loss = [&] {
    swiglu(gate.data(), up.data(), y.data(), kNumel);
    return dot(u, y);
  };
  checkGradient("swiglu dgate", gate, dgate, loss);
  checkGradient("swiglu dup", up, dup, loss);
}

} // namespace
