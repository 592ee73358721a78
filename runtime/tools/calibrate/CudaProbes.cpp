//===- CudaProbes.cpp - shard-calibrate's probes of the CUDA backend ------===//
//
// `shard-calibrate --backend cuda`: the runtime's CUDA kernels, bound through
// CudaBackend::bind as the executor binds them (cuBLAS GEMMs, the
// elementwise, norm and attention kernels of runtime/lib/cuda), timed as a
// batch of calls closed by the backend's synchronize() (the device queue
// stays full, so a call's time is the device's, or the host's issue time
// where that is longer), in bf16 (the compute type of a tfm-mixed-precision
// program; the backend's bf16 GEMMs take bf16 operands with fp32
// accumulation):
//
// * GEMMs over m, n, k in {256, 1024, 4096, 8192}: the best rate is
//   `gpu.peak_bf16_tflops`; `efficiency.gemm` and `efficiency.gemm_k0` are
//   fitted with the planner's model, its wave and tile quantisation on the
//   device's SMs and the tiles of `efficiency.gemm_tiles` included;
// * `add` on one element: `gpu.kernel_fixed_us`, and the host's time to
//   issue one (a batch of calls before the device finishes):
//   `host.op_overhead_us`; `add` on 128 MiB operands (past the L2 cache):
//   `gpu.hbm_tb_per_s`; layer_norm(_grad), gelu(_grad) and add on
//   [8192, 4096]: `efficiency.memory`;
// * causal flash attention (batch 4, seq 2048, 16 heads of 128):
//   `efficiency.attention` against the GEMM peak;
// * with several ranks (mpirun, one GPU each), every collective over NCCL
//   (the runtime's NcclWorld, bootstrapped over MPI) at 64 KiB and 64 MiB:
//   the planner's ring model (Calibrate.h). On one GPU there is nothing to
//   measure: the link fields come from --base FILE when given.
//
// The output's `measured.fields` lists which fields were measured, which
// were copied from --base and which are autoshard's conventions.
//
//===----------------------------------------------------------------------===//

#include "Calibrate.h"

#include "autoshard/runtime/cuda/CudaBackend.h"
#if AUTOSHARD_HAVE_NCCL
#include "autoshard/runtime/cuda/NcclWorld.h"
#endif

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace autoshard::runtime::calibrate {
namespace {

TensorType bf16(std::vector<int64_t> shape) {
  TensorType t;
  t.dtype = DType::BF16;
  t.shape = std::move(shape);
  return t;
}

TensorType f32(std::vector<int64_t> shape) {
  TensorType t = bf16(std::move(shape));
  t.dtype = DType::F32;
  return t;
}

/// Device memory for the collectives, freed with the prober.
class DeviceBuffers {
public:
  explicit DeviceBuffers(Backend &backend) : backend(backend) {}
  ~DeviceBuffers() {
    for (auto [p, bytes] : list)
      backend.deallocate(p, bytes);
  }
  void *operator()(int64_t bytes) {
    void *p = backend.allocate(bytes);
    list.push_back({p, bytes});
    backend.fill(p, 0, bytes);
    return p;
  }

private:
  Backend &backend;
  std::vector<std::pair<void *, int64_t>> list;
};

/// Records a field path in `fields[kind]` (measured, copied, convention).
void note(nlohmann::json &fields, const char *kind, const std::string &path) {
  fields[kind].push_back(path);
}

} // namespace

int runCuda(const Options &opts, CommWorld &world) {
  nlohmann::json base =
      opts.base.empty() ? nlohmann::json::object() : readBase(opts.base);
  // The GEMM library's output tiles (the planner's quantisation): the base
  // file's, else the H100/H200 files' (CUTLASS/cuBLAS Hopper tiles).
  const bool baseTiles =
      base.contains("efficiency") && base["efficiency"].contains("gemm_tiles");
  nlohmann::json tilesJson =
      baseTiles ? base["efficiency"]["gemm_tiles"]
                : nlohmann::json::parse("[[128, 256], [256, 128], [128, 128]]");
  std::vector<std::pair<int64_t, int64_t>> tiles;
  for (const auto &t : tilesJson) {
    if (!t.is_array() || t.size() != 2 || !t[0].is_number_integer() ||
        !t[1].is_number_integer() || t[0].get<int64_t>() <= 0 ||
        t[1].get<int64_t>() <= 0)
      throw std::runtime_error("--base: field 'efficiency.gemm_tiles' must be "
                               "a list of [m, n] positive integer pairs, got " +
                               tilesJson.dump());
    tiles.push_back({t[0].get<int64_t>(), t[1].get<int64_t>()});
  }
  if (!tilesJson.is_array() || tiles.empty())
    throw std::runtime_error("--base: field 'efficiency.gemm_tiles' must be a "
                             "non-empty list of [m, n] pairs, got " +
                             tilesJson.dump());
  std::string why;
  if (!cuda::deviceAvailable(&why))
    throw std::runtime_error("no CUDA device: " + why +
                             " (--backend cuda measures the GPU this process "
                             "sees; run it on the GPU machine)");
  cuda::CudaBackend gpu;
  std::unique_ptr<CommWorld> nccl;
  if (world.size() > 1) {
#if AUTOSHARD_HAVE_NCCL
    nccl = cuda::createNcclWorld(&world, gpu.stream(), gpu.device());
#else
    throw std::runtime_error("-n " + std::to_string(world.size()) +
                             " --backend cuda: this build has no NCCL, so "
                             "collectives cannot be measured");
#endif
  }
  std::unique_ptr<Communicator> all = world.split(0, world.rank());
  Timer timer(*all, opts.repeats, [&] { gpu.synchronize(); });
  const int64_t ranks = world.size();
  nlohmann::json measured, fields;
  measured["dtype"] = "bf16 operands (fp32 accumulation) for every probe, "
                      "lse f32";

  // Fixed cost per kernel and the host's issue time: a one-element add.
  ProbeOp addOne(gpu, "add", {}, {bf16({1}), bf16({1})}, {bf16({1})});
  double fixed = timer.median([&] { addOne(); });
  std::vector<double> issues;
  for (int64_t r = 0; r < std::max<int64_t>(3, opts.repeats); ++r) {
    constexpr int calls = 256; // well under the launch queue's depth
    gpu.synchronize();
    double t0 = now();
    for (int c = 0; c < calls; ++c)
      addOne();
    issues.push_back(timer.max((now() - t0) / calls));
    gpu.synchronize();
  }
  std::sort(issues.begin(), issues.end());
  double issue = issues[issues.size() / 2];
  measured["add_1_element_s"] = fixed;
  measured["add_1_element_issue_s"] = issue;

  // Memory bandwidth: add on 128 MiB bf16 operands.
  const int64_t big = int64_t(1) << 26;
  double addTime = 0;
  {
    ProbeOp add(gpu, "add", {}, {bf16({big}), bf16({big})}, {bf16({big})});
    addTime = timer.median([&] { add(); });
  }
  double bandwidth = 3.0 * 2 * big / std::max(1e-12, addTime - fixed);
  measured["add_128mib_s"] = addTime;

  // The other memory-bound kernels of a Transformer block, on [8192, 4096]
  // (64 MiB): achieved bandwidth over add's (the bytes the planner counts).
  const int64_t rows = 8192, hidden = 4096, numel = rows * hidden;
  std::vector<double> memoryEfficiencies;
  nlohmann::json kernels;
  auto memoryKernel = [&](const char *name, double tensors, ProbeOp &op) {
    double t = timer.median([&] { op(); });
    double achieved = tensors * 2.0 * numel / std::max(1e-12, t - fixed);
    memoryEfficiencies.push_back(std::min(1.0, achieved / bandwidth));
    kernels[name] = t;
  };
  {
    AttrMap eps, tanh;
    eps.set("epsilon", 1e-5);
    tanh.set("tanh_approx", true);
    auto x = bf16({rows, hidden}), g = bf16({hidden});
    ProbeOp norm(gpu, "layer_norm", eps, {x, g, g}, {x});
    memoryKernel("layer_norm", 2, norm);
    ProbeOp normGrad(gpu, "layer_norm_grad", eps, {x, x, g}, {x, g, g});
    memoryKernel("layer_norm_grad", 3, normGrad);
    ProbeOp gelu(gpu, "gelu", tanh, {x}, {x});
    memoryKernel("gelu", 2, gelu);
    ProbeOp geluGrad(gpu, "gelu_grad", tanh, {x, x}, {x});
    memoryKernel("gelu_grad", 3, geluGrad);
    ProbeOp add(gpu, "add", {}, {x, x}, {x});
    memoryKernel("add", 3, add);
  }
  std::sort(memoryEfficiencies.begin(), memoryEfficiencies.end());
  double memoryEfficiency = memoryEfficiencies[memoryEfficiencies.size() / 2];
  measured["memory_kernels_s"] = kernels;

  // GEMM grid (cuBLAS through the backend's matmul).
  std::vector<GemmPoint> gemms;
  AttrMap plain;
  plain.set("transpose_lhs", false);
  plain.set("transpose_rhs", false);
  for (int64_t m : {256, 1024, 4096, 8192})
    for (int64_t n : {256, 1024, 4096, 8192})
      for (int64_t k : {256, 1024, 4096, 8192}) {
        ProbeOp mm(gpu, "matmul", plain, {bf16({m, k}), bf16({k, n})},
                   {bf16({m, n})});
        gemms.push_back({m, n, k, timer.median([&] { mm(); })});
      }
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, gpu.device()) != cudaSuccess)
    throw std::runtime_error("cudaGetDeviceProperties failed");
  GemmModel model;
  model.peak = bestGemmRate(gemms);
  model.bandwidth = bandwidth, model.fixed = fixed, model.elementBytes = 2;
  model.sms = prop.multiProcessorCount;
  model.tiles = tiles;
  GemmFit fit = fitGemm(gemms, model);
  measured["gemm"] = gemmJson(gemms);
  measured["gemm_fit_mean_abs_log_error"] = fit.meanAbsLogError;
  if (world.rank() == 0)
    warnAtLimit(fit, measured);

  // Causal attention (the backend's flash attention), FLOPs causal-halved
  // as the planner counts them (TfmCost).
  const int64_t b = 4, s = 2048, h = 16, d = 128;
  AttrMap att;
  att.set("causal", true);
  att.set("scale", 1.0 / std::sqrt(double(d)));
  ProbeOp attention(
      gpu, "attention", att,
      {bf16({b, s, h, d}), bf16({b, s, h, d}), bf16({b, s, h, d})},
      {bf16({b, s, h, d}), f32({b, h, s})});
  double attTime = timer.median([&] { attention(); });
  double attFlops = 4.0 * b * s * s * h * d / 2;
  double attEff =
      std::min(1.0, attFlops / std::max(1e-12, attTime - fixed) / model.peak);
  measured["attention_s"] = attTime;

  // Collectives over NCCL (several ranks only).
  std::vector<CommPoint> comms;
  if (nccl) {
    DeviceBuffers buffers(gpu);
    comms = measureCollectives(*nccl, timer, {65536.0, 67108864.0},
                               [&](int64_t n) { return buffers(n); });
  }

  size_t freeBytes = 0, totalBytes = 0;
  if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess)
    throw std::runtime_error("cudaMemGetInfo failed");
  const double gib = 1024.0 * 1024 * 1024;
  nlohmann::json cluster;
  // Copies field `path` (dotted) from the base file if it has it.
  auto copy = [&](const std::string &path) {
    std::string pointer = "/" + path;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    nlohmann::json::json_pointer at(pointer);
    if (!base.contains(at))
      return false;
    cluster[at] = base[at];
    note(fields, "copied_from_base", path);
    return true;
  };
  cluster["name"] =
      opts.name.empty() ? gpu.describe() + " (shard-calibrate)" : opts.name;
  cluster["gpu"] = {
      {"name", gpu.describe()},
      {"peak_bf16_tflops", round2(model.peak / 1e12)},
      {"hbm_gib", round2(double(totalBytes) / gib)},
      {"hbm_tb_per_s", round2(bandwidth / 1e12)},
      {"kernel_fixed_us", round2(fixed * 1e6)},
      {"sms", model.sms},
      // One process per GPU: nothing is shared with the other ranks.
      {"shares_node", false}};
  for (const char *f :
       {"gpu.name", "gpu.peak_bf16_tflops", "gpu.hbm_gib", "gpu.hbm_tb_per_s",
        "gpu.kernel_fixed_us", "gpu.sms", "host.op_overhead_us",
        "efficiency.gemm", "efficiency.gemm_k0", "efficiency.gemm_overhead_us",
        "efficiency.attention", "efficiency.memory"})
    note(fields, "measured", f);
  // What this process holds before a program allocates (CUDA context,
  // cuBLAS workspace) unless the base file says more (NCCL buffers).
  double reserved = std::max(0.0, double(totalBytes) - double(freeBytes) -
                                      double(gpu.allocatedBytes())) /
                    gib;
  if (!copy("gpu.reserved_gib")) {
    cluster["gpu"]["reserved_gib"] = round2(reserved);
    note(fields, "measured", "gpu.reserved_gib");
  }
  copy("gpu.fragmentation");
  cluster["host"] = {{"op_overhead_us", round2(issue * 1e6)}};
  if (!copy("host.step_overhead_ms"))
    cluster["host"]["step_overhead_ms"] = 0;
  // autoshard's memory conventions (docs/planner.md, "Memory"): frame
  // gradients, f32 gradients of a mixed-precision program, masks
  // regenerated in the backward.
  cluster["memory"] = {
      {"grad_buffer", "frame"}, {"grad_bytes", 4}, {"dropout_mask_bytes", 0}};
  for (const char *f :
       {"memory.grad_buffer", "memory.grad_bytes", "memory.dropout_mask_bytes",
        "efficiency.attention_score_bytes", "overlap"})
    note(fields, "convention", f);
  copy("memory.comm_buffer_mib_per_group");
  cluster["efficiency"] = {{"gemm", round2(fit.efficiency)},
                           {"gemm_k0", round2(fit.k0)},
                           {"gemm_overhead_us", round2(fit.overhead * 1e6)},
                           {"gemm_tiles", tilesJson},
                           {"attention", round2(attEff)},
                           {"memory", round2(memoryEfficiency)},
                           {"attention_score_bytes", 0}};
  note(fields, baseTiles ? "copied_from_base" : "convention",
       "efficiency.gemm_tiles");
  cluster["overlap"] = {{"tp", 0.0}, {"dp", 0.0}, {"p2p", 0.0}};
  if (!comms.empty()) {
    cluster["gpus_per_node"] = ranks;
    writeLinkFit(cluster, measured, comms,
                 "NCCL (the runtime's NcclWorld) between " +
                     std::to_string(ranks) + " GPUs of this node");
    for (const char *f :
         {"gpus_per_node", "collective_latency_us", "intra_node"})
      note(fields, "measured", f);
    copy("inter_node");
  } else {
    // One GPU: no link to measure; the base file's when given.
    if (base.contains("intra_node")) {
      copy("intra_node");
      copy("collective_latency_us");
      copy("inter_node");
      if (!copy("gpus_per_node")) {
        cluster["gpus_per_node"] = 1;
        note(fields, "convention", "gpus_per_node");
      }
    } else {
      // A link the planner never uses on one GPU per node.
      cluster["gpus_per_node"] = 1;
      cluster["intra_node"] = {{"gb_per_s_per_direction_per_gpu", 1.0},
                               {"latency_us", 0.0},
                               {"efficiency", 1.0}};
      note(fields, "convention", "gpus_per_node");
      note(fields, "convention", "intra_node");
    }
  }
  cluster["software"] =
      "written by shard-calibrate --backend cuda (issue 21): the runtime's "
      "CUDA kernels (bf16) and NCCL communicator measured with " +
      std::to_string(ranks) +
      " rank(s), one GPU each; values rounded to 2 significant digits";
  if (!opts.base.empty())
    measured["base"] = opts.base;
  measured["fields"] = fields;
  cluster["measured"] = measured;
  if (world.rank() != 0)
    return 0;
  return writeCluster(cluster, opts);
}

} // namespace autoshard::runtime::calibrate
