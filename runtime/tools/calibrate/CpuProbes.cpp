//===- CpuProbes.cpp - shard-calibrate's probes of the CPU backend --------===//
//
// The runtime's CPU kernels and MPI communicator, every rank of the job
// running them at once (N ranks share the node as a plan's ranks do):
//
// * GEMMs (cpu::matmul, f32) over a grid of (m, n, k): the best rate per
//   rank is `gpu.peak_bf16_tflops`; `efficiency.gemm` and
//   `efficiency.gemm_k0` are fitted to the grid with the planner's model;
// * a memory-bound kernel (cpu::add) on 4 MiB operands: `gpu.hbm_tb_per_s`
//   (bytes moved / time), and on one element, bound by the CPU backend: the
//   fixed cost per kernel (`gpu.kernel_fixed_us`); layer_norm(_grad),
//   gelu(_grad) and add on 1 MiB: `efficiency.memory`, the median of their
//   achieved bandwidth over add's;
// * causal attention (cpu::attention): `efficiency.attention` against peak;
// * every collective over every group size 2, 4, ... up to N at 4 KiB and
//   1 MiB, and a send/recv pair: the planner's ring model (Calibrate.h).
//
//===----------------------------------------------------------------------===//

#include "Calibrate.h"

#include "autoshard/runtime/CpuBackend.h"
#include "autoshard/runtime/cpu/Activation.h"
#include "autoshard/runtime/cpu/Attention.h"
#include "autoshard/runtime/cpu/Elementwise.h"
#include "autoshard/runtime/cpu/Matmul.h"
#include "autoshard/runtime/cpu/Norm.h"
#include "autoshard/runtime/cpu/Threads.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace autoshard::runtime::calibrate {

int runCpu(const Options &opts, CommWorld &world) {
  // The kernel threads shard-run gives each rank (its cores / local ranks).
  cpu::setKernelThreads(
      cpu::chooseThreadPolicy(0, static_cast<int>(world.localSize())).threads);
  std::unique_ptr<Communicator> all = world.split(0, world.rank());
  Timer timer(*all, opts.repeats);
  const int64_t ranks = world.size();
  const bool root = world.rank() == 0;
  nlohmann::json measured;

  // Memory-bound kernel: fixed cost and bandwidth.
  const int64_t big = int64_t(1) << 20;
  std::vector<float> x(big, 1.0f), y(big, 2.0f), z(big);
  // The fixed cost: a one-element `add` bound by the CPU backend and called
  // as the executor calls every kernel (its pointer array).
  CpuBackend backend;
  AttrMap noAttrs;
  KernelSignature sig;
  sig.op = "add";
  sig.attrs = &noAttrs;
  sig.place = "shard-calibrate add";
  TensorType scalar;
  scalar.dtype = DType::F32;
  scalar.shape = {1};
  sig.args = {scalar, scalar};
  sig.results = {scalar};
  BoundKernel addOne = backend.bind(sig);
  void *addPtrs[] = {x.data(), y.data(), z.data()};
  double fixed = timer.median([&] { addOne(addPtrs); });
  double addTime =
      timer.median([&] { cpu::add(x.data(), y.data(), z.data(), big, big); });
  double bandwidth = 3.0 * 4 * big / std::max(1e-12, addTime - fixed);
  measured["add_1_element_s"] = fixed;
  measured["add_4mib_s"] = addTime;

  // The other memory-bound kernels of a Transformer block, on 1 MiB
  // operands ([2048, 128] rows): their achieved bandwidth (the bytes the
  // planner counts for them: every operand read and result written once)
  // over add's is `efficiency.memory` (the median; at most 1).
  const int64_t rows = 2048, hidden = 128, numel = rows * hidden;
  std::vector<float> gamma(hidden, 1.0f), beta(hidden, 0.0f), dgamma(hidden),
      dbeta(hidden);
  std::vector<double> memoryEfficiencies;
  nlohmann::json kernels;
  auto memoryKernel = [&](const char *name, double tensors,
                          const std::function<void()> &body) {
    double t = timer.median(body);
    double achieved = tensors * 4.0 * numel / std::max(1e-12, t - fixed);
    memoryEfficiencies.push_back(std::min(1.0, achieved / bandwidth));
    kernels[name] = t;
  };
  memoryKernel("layer_norm", 2, [&] {
    cpu::layerNorm(x.data(), gamma.data(), beta.data(), z.data(), rows, hidden,
                   1e-5);
  });
  memoryKernel("layer_norm_grad", 3, [&] {
    cpu::layerNormGrad(y.data(), x.data(), gamma.data(), z.data(),
                       dgamma.data(), dbeta.data(), rows, hidden, 1e-5);
  });
  memoryKernel("gelu", 2,
               [&] { cpu::gelu(x.data(), z.data(), numel, /*tanh=*/true); });
  memoryKernel("gelu_grad", 3, [&] {
    cpu::geluGrad(y.data(), x.data(), z.data(), numel, /*tanh=*/true);
  });
  memoryKernel("add", 3,
               [&] { cpu::add(x.data(), y.data(), z.data(), numel, numel); });
  std::sort(memoryEfficiencies.begin(), memoryEfficiencies.end());
  double memoryEfficiency = memoryEfficiencies[memoryEfficiencies.size() / 2];
  measured["memory_kernels_s"] = kernels;

  // GEMM grid.
  std::vector<GemmPoint> gemms;
  for (int64_t m : {64, 256, 1024})
    for (int64_t n : {128, 512})
      for (int64_t k : {32, 128, 512}) {
        std::vector<float> lhs(m * k, 0.5f), rhs(k * n, 0.25f), out(m * n);
        cpu::MatmulShape s;
        s.m = m, s.n = n, s.k = k;
        double t = timer.median(
            [&] { cpu::matmul(lhs.data(), rhs.data(), out.data(), s); });
        gemms.push_back({m, n, k, t});
      }
  double peak = bestGemmRate(gemms);
  GemmModel model;
  model.peak = peak, model.bandwidth = bandwidth, model.fixed = fixed;
  GemmFit fit = fitGemm(gemms, model);
  measured["gemm"] = gemmJson(gemms);
  measured["gemm_fit_mean_abs_log_error"] = fit.meanAbsLogError;

  // Causal attention (the CPU backend's kernel), FLOPs causal-halved as the
  // planner counts them (TfmCost).
  cpu::AttentionShape as;
  as.batch = 2, as.seqQ = as.seqK = 64, as.heads = as.kvHeads = 4;
  as.headDim = 32, as.causal = true, as.scale = 1.0 / std::sqrt(32.0);
  int64_t qkv = as.batch * as.seqQ * as.heads * as.headDim;
  std::vector<float> q(qkv, 0.1f), k(qkv, 0.2f), v(qkv, 0.3f), o(qkv),
      lse(as.batch * as.heads * as.seqQ);
  double attTime = timer.median([&] {
    cpu::attention(q.data(), k.data(), v.data(), o.data(), lse.data(), as);
  });
  double attFlops =
      4.0 * as.batch * as.seqQ * as.seqK * as.heads * as.headDim / 2;
  double attEff =
      std::min(1.0, attFlops / std::max(1e-12, attTime - fixed) / peak);
  measured["attention_s"] = attTime;

  // Collectives over every group size, and send/recv.
  std::vector<std::vector<char>> commBuffers;
  std::vector<CommPoint> comms =
      measureCollectives(world, timer, {4096.0, 1048576.0}, [&](int64_t n) {
        return static_cast<void *>(commBuffers.emplace_back(n).data());
      });
  nlohmann::json cluster;
  cluster["name"] =
      opts.name.empty() ? "this machine (shard-calibrate)" : opts.name;
  cluster["gpus_per_node"] = ranks;
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  double memGiB = double(pages) * double(pageSize) / (1024.0 * 1024 * 1024);
  cluster["gpu"] = {
      {"name", "one rank of " + std::to_string(ranks) +
                   " sharing this machine's cores (measured together)"},
      {"peak_bf16_tflops", round2(peak / 1e12)},
      {"hbm_gib", round2(memGiB / ranks)},
      {"hbm_tb_per_s", round2(bandwidth / 1e12)},
      {"reserved_gib", round2(std::min(0.25, memGiB / ranks / 4))},
      {"kernel_fixed_us", round2(fixed * 1e6)},
      // Measured with every rank running: one rank's share of the node.
      {"shares_node", true}};
  cluster["host"] = {{"op_overhead_us", 0}, {"step_overhead_ms", 0}};
  cluster["memory"] = {{"grad_buffer", "frame"}, {"dropout_mask_bytes", 0}};
  cluster["efficiency"] = {{"gemm", round2(fit.efficiency)},
                           {"gemm_k0", round2(fit.k0)},
                           {"attention", round2(attEff)},
                           {"memory", round2(memoryEfficiency)}};
  cluster["overlap"] = {{"tp", 0.0}, {"dp", 0.0}, {"p2p", 0.0}};
  if (!comms.empty()) {
    writeLinkFit(cluster, measured, comms,
                 "the runtime's MPI communicator on this node");
  } else {
    // One rank: nothing to measure; a link the planner never uses.
    cluster["intra_node"] = {{"gb_per_s_per_direction_per_gpu", 1.0},
                             {"latency_us", 0.0},
                             {"efficiency", 1.0}};
  }
  cluster["software"] =
      "written by shard-calibrate (issue 21): the runtime's CPU kernels and "
      "MPI communicator measured with " +
      std::to_string(ranks) +
      " ranks running at once; values rounded to 2 significant digits";
  cluster["measured"] = measured;
  if (!root)
    return 0;
  return writeCluster(cluster, opts);
}

} // namespace autoshard::runtime::calibrate
