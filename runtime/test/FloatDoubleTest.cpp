//===- FloatDoubleTest.cpp - float kernels agree with double kernels ------===//
//
// The fp32 kernels are the oracle of the CPU runtime; they must match the
// fp64 instantiation to fp32 accuracy on the same inputs.
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/cpu/Kernels.h"

#include "TestUtil.h"

using namespace autoshard::runtime::cpu;
using namespace autoshard::runtime::test;

namespace {

constexpr double kRtol = 2e-5, kAtol = 2e-6;

/// Runs fn<float> and fn<double> on the same double inputs (rounded to float
/// for the float run) and compares their outputs.
template <typename Fn>
void expectAgree(const std::string &what,
                 const std::vector<std::vector<double>> &inputs,
                 const std::vector<int64_t> &outputSizes, Fn fn) {
  std::vector<std::vector<double>> inD;
  std::vector<std::vector<float>> inF;
  for (const auto &in : inputs) {
    inF.push_back(convert<float>(in));
    inD.push_back(convert<double>(inF.back()));
  }
  std::vector<std::vector<double>> outD;
  std::vector<std::vector<float>> outF;
  for (int64_t size : outputSizes) {
    outD.emplace_back(size);
    outF.emplace_back(size);
  }
  fn(inF, outF);
  fn(inD, outD);
  for (size_t i = 0; i < outD.size(); ++i)
    expectAllNear(outF[i], outD[i], kRtol, kAtol,
                  what + " output " + std::to_string(i));
}

TEST(FloatDoubleTest, Matmul) {
  MatmulShape s;
  s.batch = 2;
  s.m = 17;
  s.n = 9;
  s.k = 33;
  expectAgree("matmul", {randomVector(2 * 17 * 33, 1), randomVector(33 * 9, 2)},
              {2 * 17 * 9, 33 * 9}, [&](auto &in, auto &out) {
                matmul(in[0].data(), in[1].data(), out[0].data(), s);
                matmulWgrad(in[0].data(), out[0].data(), out[1].data(), 2 * 17,
                            33, 9);
              });
}

TEST(FloatDoubleTest, LayerNormAndGelu) {
  const int64_t rows = 6, h = 32, n = rows * h;
  expectAgree("layer_norm/gelu",
              {randomVector(n, 3, -3, 3), randomVector(h, 4),
               randomVector(h, 5), randomVector(n, 6)},
              {n, n, h, h, n, n}, [&](auto &in, auto &out) {
                layerNorm(in[0].data(), in[1].data(), in[2].data(),
                          out[0].data(), rows, h, 1e-5);
                layerNormGrad(in[3].data(), in[0].data(), in[1].data(),
                              out[1].data(), out[2].data(), out[3].data(), rows,
                              h, 1e-5);
                gelu(in[0].data(), out[4].data(), n, true);
                geluGrad(in[3].data(), in[0].data(), out[5].data(), n, false);
              });
}

TEST(FloatDoubleTest, Attention) {
  AttentionShape s;
  s.batch = 2;
  s.seqQ = s.seqK = 80;
  s.heads = 4;
  s.kvHeads = 2;
  s.headDim = 16;
  s.causal = true;
  s.scale = 0.25;
  const int64_t nq = 2 * 80 * 4 * 16, nkv = 2 * 80 * 2 * 16;
  expectAgree("attention",
              {randomVector(nq, 7, -2, 2), randomVector(nkv, 8, -2, 2),
               randomVector(nkv, 9), randomVector(nq, 10)},
              {nq, nq, nkv, nkv}, [&](auto &in, auto &out) {
                std::vector<float> lse(2 * 4 * 80);
                attention(in[0].data(), in[1].data(), in[2].data(),
                          out[0].data(), lse.data(), s);
                attentionGrad(in[3].data(), in[0].data(), in[1].data(),
                              in[2].data(), out[0].data(), lse.data(),
                              out[1].data(), out[2].data(), out[3].data(), s);
              });
}

TEST(FloatDoubleTest, CrossEntropyAndAdamW) {
  CrossEntropyShape s;
  s.tokens = 12;
  s.classes = 50;
  s.vocabSize = 45;
  std::vector<int64_t> labels = randomIds<int64_t>(12, 45, 11);
  AdamWParams p;
  p.lr = 1e-3;
  p.step = 3;
  p.weightDecay = 0.1;
  p.gradScale = 0.8;
  expectAgree("cross_entropy/adamw",
              {randomVector(12 * 50, 12, -4, 4), randomVector(100, 13),
               randomVector(100, 14), randomVector(100, 15, -0.01, 0.01),
               randomVector(100, 16, 0.0, 1e-4)},
              {1, 12 * 50, 100, 100, 100}, [&](auto &in, auto &out) {
                out[0][0] = crossEntropy(in[0].data(), labels.data(), s);
                crossEntropyGrad(1.0, in[0].data(), labels.data(),
                                 out[1].data(), s);
                adamw(in[1].data(), in[2].data(), in[3].data(), in[4].data(),
                      out[2].data(), out[3].data(), out[4].data(), 100, p);
              });
}

} // namespace
