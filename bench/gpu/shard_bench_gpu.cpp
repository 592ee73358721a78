//===- shard_bench_gpu.cpp - Time one training step on the CUDA backend ---===//
//
// shard-bench-gpu ARTIFACT --layers L --hidden H [--steps N] [--warmup W]
//                 [--peak-tflops P] [--json OUT]
//
// Runs the artifact's train_step on the CUDA backend (random tokens, weights
// from the counter-based init) and reports step time, tokens/s, achieved
// model TFLOP/s and MFU against P (default 989, the H100/H200 SXM dense bf16
// peak) and against a cuBLAS bf16 GEMM peak it measures itself (8192^3,
// fp32 accumulation). Model FLOPs per token follow the PaLM / Megatron
// convention: 6 N + 6 L H S (N = parameters, i.e. the artifact's param state
// elements; the attention term counts the causal half, 12 L H S / 2).
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/Executor.h"
#include "autoshard/runtime/cuda/CudaBackend.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace autoshard::runtime;

namespace {

[[noreturn]] void die(const std::string &m) {
  std::fprintf(stderr, "shard-bench-gpu: error: %s\n", m.c_str());
  std::exit(1);
}

#define CHECK_CUDA(x)                                                          \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess)                                                     \
      die(std::string(#x) + ": " + cudaGetErrorString(e_));                    \
  } while (0)

/// TFLOP/s of a bf16 GEMM n x n x n with fp32 accumulation (best of 20).
double cublasPeak(int n) {
  void *a, *b, *c;
  size_t bytes = size_t(n) * n * 2;
  CHECK_CUDA(cudaMalloc(&a, bytes));
  CHECK_CUDA(cudaMalloc(&b, bytes));
  CHECK_CUDA(cudaMalloc(&c, bytes));
  CHECK_CUDA(cudaMemset(a, 0, bytes));
  CHECK_CUDA(cudaMemset(b, 0, bytes));
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS)
    die("cublasCreate");
  float one = 1, zero = 0;
  auto gemm = [&] {
    cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16BF, n,
                 b, CUDA_R_16BF, n, &zero, c, CUDA_R_16BF, n,
                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  for (int i = 0; i < 5; ++i)
    gemm();
  cudaEvent_t t0, t1;
  cudaEventCreate(&t0);
  cudaEventCreate(&t1);
  double best = 0;
  for (int i = 0; i < 20; ++i) {
    cudaEventRecord(t0);
    gemm();
    cudaEventRecord(t1);
    cudaEventSynchronize(t1);
    float ms = 0;
    cudaEventElapsedTime(&ms, t0, t1);
    best = std::max(best, 2.0 * n * double(n) * n / (ms * 1e-3) / 1e12);
  }
  cublasDestroy(h);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return best;
}

} // namespace

int main(int argc, char **argv) {
  std::string path, json;
  int64_t layers = 0, hidden = 0, steps = 5, warmup = 2;
  double peak = 989.0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc)
        die(a + " expects a value");
      return argv[++i];
    };
    if (a == "--layers")
      layers = std::atoll(next().c_str());
    else if (a == "--hidden")
      hidden = std::atoll(next().c_str());
    else if (a == "--steps")
      steps = std::atoll(next().c_str());
    else if (a == "--warmup")
      warmup = std::atoll(next().c_str());
    else if (a == "--peak-tflops")
      peak = std::atof(next().c_str());
    else if (a == "--json")
      json = next();
    else if (!a.empty() && a[0] != '-')
      path = a;
    else
      die("unknown option '" + a + "'");
  }
  if (path.empty() || layers <= 0 || hidden <= 0 || steps <= 0)
    die("usage: shard-bench-gpu ARTIFACT --layers L --hidden H [--steps N] "
        "[--warmup W] [--peak-tflops P] [--json OUT]");
  try {
    Artifact art = loadArtifact(path);
    cuda::CudaBackend gpu;
    std::printf("device: %s\n", gpu.describe().c_str());
    double gemmPeak = cublasPeak(8192);
    std::printf("cuBLAS bf16 GEMM 8192^3: %.1f TFLOP/s\n", gemmPeak);
    Executor ex(art, gpu);
    ex.initState();
    int64_t params = 0;
    for (const StateSpec &s : art.state)
      if (s.kind == StateKind::Param)
        params += s.type.numel();
    int64_t b = art.model.batch, s = art.model.seq, n = b * s;
    std::vector<int32_t> tokens(n), labels(n);
    std::mt19937 rng(1);
    for (int64_t i = 0; i < n; ++i) {
      tokens[i] = int32_t(rng() % art.model.vocabSize);
      labels[i] = int32_t(rng() % art.model.vocabSize);
    }
    float lr = 1e-4f, loss = 0, norm = 0;
    int64_t step = 0;
    auto run = [&] {
      ++step;
      ex.run("train_step",
             {{"tokens", tokens.data()},
              {"labels", labels.data()},
              {"lr", &lr},
              {"step", &step}},
             {{"loss", &loss}, {"grad_norm", &norm}}); // copies out: synced
    };
    for (int64_t i = 0; i < warmup; ++i)
      run();
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < steps; ++i)
      run();
    double sec =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count() /
        double(steps);
    double flopsPerToken = 6.0 * double(params) +
                           6.0 * double(layers) * double(hidden) * double(s);
    double tflops = flopsPerToken * double(n) / sec / 1e12;
    std::printf("artifact %s: %.3fB params, batch %lld x seq %lld, peak "
                "memory %.1f GiB (planned)\n",
                path.c_str(), params / 1e9, (long long)b, (long long)s,
                art.memory.peakBytes / double(1ull << 30));
    std::printf("step %.1f ms, %.0f tokens/s, %.1f TFLOP/s, MFU %.1f%% of "
                "%.0f, %.1f%% of measured cuBLAS peak; loss %.4f\n",
                sec * 1e3, n / sec, tflops, 100 * tflops / peak, peak,
                100 * tflops / gemmPeak, loss);
    if (!json.empty()) {
      FILE *f = std::fopen(json.c_str(), "w");
      if (!f)
        die("cannot write '" + json + "'");
      std::fprintf(
          f,
          "{\"step_ms\": %.3f, \"tokens_per_s\": %.1f, \"tflops\": "
          "%.2f, \"mfu_989\": %.4f, \"gemm_peak_tflops\": %.2f, "
          "\"mfu_gemm_peak\": %.4f, \"params\": %lld, \"loss\": %.5f}\n",
          sec * 1e3, n / sec, tflops, tflops / peak, gemmPeak,
          tflops / gemmPeak, (long long)params, loss);
      std::fclose(f);
    }
  } catch (const std::exception &e) {
    die(e.what());
  }
  return 0;
}
