//===- NormTest.cpp - layer_norm and rms_norm kernel tests ----------------===//

#include "autoshard/runtime/cpu/Norm.h"

#include "TestUtil.h"

using namespace autoshard::runtime::cpu;
using namespace autoshard::runtime::test;

namespace {

constexpr int64_t kRows = 5, kHidden = 7;
constexpr double kEps = 1e-5;

TEST(NormTest, LayerNormMatchesDefinition) {
  std::vector<double> x = randomVector(kRows * kHidden, 1, -2, 3);
  std::vector<double> gamma = randomVector(kHidden, 2);
  std::vector<double> beta = randomVector(kHidden, 3);
  std::vector<double> y(x.size()), want(x.size());
  layerNorm(x.data(), gamma.data(), beta.data(), y.data(), kRows, kHidden,
            kEps);
  for (int64_t r = 0; r < kRows; ++r) {
    double mean = 0, var = 0;
    for (int64_t h = 0; h < kHidden; ++h)
      mean += x[r * kHidden + h] / kHidden;
    for (int64_t h = 0; h < kHidden; ++h)
      var += std::pow(x[r * kHidden + h] - mean, 2) / kHidden;
    for (int64_t h = 0; h < kHidden; ++h)
      want[r * kHidden + h] =
          (x[r * kHidden + h] - mean) / std::sqrt(var + kEps) * gamma[h] +
          beta[h];
  }
  expectAllNear(y, want, 1e-12, 1e-12, "layer_norm");
}

void checkLayerNormGradients(bool withBeta) {
  std::vector<double> x = randomVector(kRows * kHidden, 4, -2, 3);
  std::vector<double> gamma = randomVector(kHidden, 5);
  std::vector<double> beta = randomVector(kHidden, 6);
  std::vector<double> u = randomVector(x.size(), 7), y(x.size());
  std::vector<double> dx(x.size()), dgamma(kHidden), dbeta(kHidden);
  layerNormGrad(u.data(), x.data(), gamma.data(), dx.data(), dgamma.data(),
                withBeta ? dbeta.data() : nullptr, kRows, kHidden, kEps);
  auto loss = [&] {
    layerNorm(x.data(), gamma.data(), withBeta ? beta.data() : nullptr,
              y.data(), kRows, kHidden, kEps);
    return dot(u, y);
  };
  checkGradient("layer_norm dx", x, dx, loss);
  checkGradient("layer_norm dgamma", gamma, dgamma, loss);
  if (withBeta)
    checkGradient("layer_norm dbeta", beta, dbeta, loss);
}

TEST(NormTest, LayerNormGradientWithBeta) { checkLayerNormGradients(true); }

TEST(NormTest, LayerNormGradientWithoutBeta) { checkLayerNormGradients(false); }

TEST(NormTest, RmsNormMatchesDefinitionAndGradient) {
  std::vector<double> x = randomVector(kRows * kHidden, 8, -2, 3);
  std::vector<double> gamma = randomVector(kHidden, 9);
  std::vector<double> y(x.size()), want(x.size());
  rmsNorm(x.data(), gamma.data(), y.data(), kRows, kHidden, kEps);
  for (int64_t r = 0; r < kRows; ++r) {
    double ms = 0;
    for (int64_t h = 0; h < kHidden; ++h)
      ms += x[r * kHidden + h] * x[r * kHidden + h] / kHidden;
    for (int64_t h = 0; h < kHidden; ++h)
      want[r * kHidden + h] =
          x[r * kHidden + h] / std::sqrt(ms + kEps) * gamma[h];
  }
  expectAllNear(y, want, 1e-12, 1e-12, "rms_norm");

  std::vector<double> u = randomVector(x.size(), 10);
  std::vector<double> dx(x.size()), dgamma(kHidden);
  rmsNormGrad(u.data(), x.data(), gamma.data(), dx.data(), dgamma.data(), kRows,
              kHidden, kEps);
  auto loss = [&] {
    rmsNorm(x.data(), gamma.data(), y.data(), kRows, kHidden, kEps);
    return dot(u, y);
  };
  checkGradient("rms_norm dx", x, dx, loss);
  checkGradient("rms_norm dgamma", gamma, dgamma, loss);
}

TEST(NormTest, RejectsEmptyHidden) {
  std::vector<double> x(4);
  EXPECT_THROW(layerNorm(x.data(), x.data(), x.data(), x.data(), 1, 0, kEps),
               std::invalid_argument);
}

} // namespace
