//===- CudaStepTest.cpp - A whole nanoGPT training step, GPU vs CPU -------===//
//
// The nanoGPT Tiny Shakespeare CPU model (batch 12, seq 64; artifacts
// compiled by shard-opt into data/, see data/README.md) runs the same
// training steps on the CPU backend and on the CUDA backend from the same
// counter-based init: loss, gradient norm and the updated weights must
// agree (f32: relative 1e-3 after 3 AdamW steps, the reduction orders
// differ). The bf16 artifact (every tensor bf16; no fp32 master weights yet,
// see docs/cuda-backend.md) must give a loss within 2% of the f32 one.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"

#include "autoshard/runtime/Executor.h"

#include <cmath>

using namespace autoshard::runtime;
using namespace autoshard::runtime::cuda::test;

namespace {

std::string dataPath(const std::string &name) {
  return std::string(AUTOSHARD_CUDA_TEST_DATA_DIR) + "/" + name;
}

struct StepResult {
  std::vector<float> loss, gradNorm;
  std::vector<unsigned char> wte;
};

/// Runs `steps` train steps on fixed pseudo-random tokens.
StepResult train(const Artifact &artifact, Backend &backend, int steps) {
  Executor ex(artifact, backend);
  ex.initState();
  const EntrySpec *e = artifact.findEntry("train_step");
  EXPECT_NE(e, nullptr);
  int64_t n = artifact.model.batch * artifact.model.seq;
  std::vector<int32_t> tokens(n), labels(n);
  std::mt19937 rng(5);
  for (int64_t i = 0; i < n; ++i) {
    tokens[i] = static_cast<int32_t>(rng() % artifact.model.vocabSize);
    labels[i] = static_cast<int32_t>(rng() % artifact.model.vocabSize);
  }
  StepResult r;
  for (int s = 1; s <= steps; ++s) {
    float lr = 1e-3f, loss = 0, norm = 0;
    int64_t step = s;
    ex.run("train_step",
           {{"tokens", tokens.data()},
            {"labels", labels.data()},
            {"lr", &lr},
            {"step", &step}},
           {{"loss", &loss}, {"grad_norm", &norm}});
    r.loss.push_back(loss);
    r.gradNorm.push_back(norm);
  }
  r.wte = ex.readState("wte");
  return r;
}

class CudaStep : public ::testing::Test {
protected:
  void SetUp() override { AUTOSHARD_REQUIRE_GPU(); }
};

TEST_F(CudaStep, NanoGptF32MatchesCpu) {
  Artifact a = loadArtifact(dataPath("nanogpt-f32.json"));
  CpuBackend cpu;
  cuda::CudaBackend gpu;
  StepResult want = train(a, cpu, 3);
  StepResult got = train(a, gpu, 3);
  for (size_t i = 0; i < want.loss.size(); ++i) {
    EXPECT_NEAR(got.loss[i], want.loss[i], 1e-3 * std::fabs(want.loss[i]))
        << "step " << i + 1;
    EXPECT_NEAR(got.gradNorm[i], want.gradNorm[i],
                1e-3 * std::fabs(want.gradNorm[i]))
        << "step " << i + 1;
  }
  const float *w = reinterpret_cast<const float *>(want.wte.data());
  const float *g = reinterpret_cast<const float *>(got.wte.data());
  double maxDiff = 0;
  for (size_t i = 0; i < want.wte.size() / 4; ++i)
    maxDiff = std::max(maxDiff, double(std::fabs(w[i] - g[i])));
  EXPECT_LT(maxDiff, 1e-4) << "wte after 3 steps";
}

TEST_F(CudaStep, NanoGptBf16TracksF32) {
  Artifact f = loadArtifact(dataPath("nanogpt-f32.json"));
  Artifact b = loadArtifact(dataPath("nanogpt-bf16.json"));
  cuda::CudaBackend gpu;
  StepResult ref = train(f, gpu, 2);
  StepResult got = train(b, gpu, 2);
  for (size_t i = 0; i < ref.loss.size(); ++i) {
    EXPECT_TRUE(std::isfinite(got.loss[i]));
    EXPECT_NEAR(got.loss[i], ref.loss[i], 0.02 * std::fabs(ref.loss[i]))
        << "step " << i + 1;
  }
}

TEST(CudaDevice, ReportsWhyNoDevice) {
  std::string why;
  if (cuda::deviceAvailable(&why))
    GTEST_SKIP() << "a GPU is present";
  EXPECT_FALSE(why.empty());
}

} // namespace
