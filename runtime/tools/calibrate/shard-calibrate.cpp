//===- shard-calibrate.cpp - Cluster description of this machine ----------===//
//
// Issue 21, item 3. Runs micro-benchmarks with the runtime's own kernels and
// communicator on the machine it is on, with every rank of the job running
// them at the same time (N ranks share the node as a plan's ranks do), and
// writes a cluster description (docs/cluster-format.md) for the planner:
//
// * GEMMs (cpu::matmul, f32) over a grid of (m, n, k): the best rate per
//   rank is `gpu.peak_bf16_tflops`; `efficiency.gemm` and
//   `efficiency.gemm_k0` are fitted to the grid with the planner's model
//   (time = flops / (peak x gemm x k / (k + k0)), against the memory
//   roofline, + the fixed cost per kernel), minimising the mean |log| error;
// * a memory-bound kernel (cpu::add) on 4 MiB operands: `gpu.hbm_tb_per_s`
//   (bytes moved / time), and on one element, bound by the CPU backend: the
//   fixed cost per kernel (`gpu.kernel_fixed_us`); layer_norm(_grad),
//   gelu(_grad) and add on 1 MiB: `efficiency.memory`, the median of their
//   achieved bandwidth over add's;
// * causal attention (cpu::attention): `efficiency.attention` against peak;
// * every collective (all-reduce, all-gather, reduce-scatter, all-to-all)
//   over every group size 2, 4, ... up to N and two message sizes, and a
//   send/recv pair: the planner's ring model t = c + steps x alpha + f x S /
//   B (all-reduce: 2(n-1) steps, f = 2(n-1)/n; the others n-1, (n-1)/n;
//   p2p 1, 1) fitted by least squares in relative error:
//   `collective_latency_us` = c, `intra_node.latency_us` = alpha,
//   `intra_node.gb_per_s_per_direction_per_gpu` = B (efficiency 1).
//
// Each figure is the median of --repeats timings, each the slowest rank's;
// the written numbers are rounded to 2 significant digits so that repeated
// runs write the same file unless the machine changed (the planner's
// ranking then cannot differ). scripts/calibrate_cpu.sh writes
// configs/clusters/cpu-2core.json with it.
//
//   shard-calibrate [-n N] [--out FILE] [--name TEXT] [--repeats R]
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/CpuBackend.h"
#include "autoshard/runtime/cpu/Activation.h"
#include "autoshard/runtime/cpu/Attention.h"
#include "autoshard/runtime/cpu/Elementwise.h"
#include "autoshard/runtime/cpu/Matmul.h"
#include "autoshard/runtime/cpu/Norm.h"
#include "autoshard/runtime/cpu/Threads.h"

#include "ToolMain.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using namespace autoshard::runtime;

namespace {

struct Options {
  int64_t ranks = 1;
  std::string out;
  std::string name = "this machine (shard-calibrate)";
  int64_t repeats = 7;
};

Options parseOptions(int argc, char **argv) {
  Options o;
  auto value = [&](int &i, const std::string &flag) -> std::string {
    if (i + 1 >= argc)
      throw std::invalid_argument("option '" + flag + "' needs a value");
    return argv[++i];
  };
  auto integer = [](const std::string &flag, const std::string &text,
                    int64_t lo, int64_t hi) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(text, &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (used != text.size() || text.empty() || v < lo || v > hi)
      throw std::invalid_argument(
          "option '" + flag + "' needs an integer in [" + std::to_string(lo) +
          ", " + std::to_string(hi) + "], got '" + text + "'");
    return static_cast<int64_t>(v);
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-n")
      o.ranks = integer(a, value(i, a), 1, 1024);
    else if (a == "--out")
      o.out = value(i, a);
    else if (a == "--name")
      o.name = value(i, a);
    else if (a == "--repeats")
      o.repeats = integer(a, value(i, a), 1, 1000);
    else
      throw std::invalid_argument(
          "unknown argument '" + a +
          "' (usage: shard-calibrate [-n N] [--out FILE] [--name TEXT] "
          "[--repeats R])");
  }
  return o;
}

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// 2 significant digits (stable output across runs), as the shortest
/// decimal that prints them.
double round2(double x) {
  if (x <= 0)
    return 0;
  char text[32];
  std::snprintf(text, sizeof text, "%.2g", x);
  return std::strtod(text, nullptr);
}

/// Times `body` on every rank of `all` at once: a barrier (an all-reduce)
/// before each repeat, the slowest rank's time of each repeat, the median
/// over `repeats` (after one untimed warm-up call).
class Timer {
public:
  Timer(Communicator &all, int64_t repeats) : all(all), repeats(repeats) {}

  /// Seconds per call of `body`. Each timing runs a batch of calls long
  /// enough (about `batchSeconds` on the slowest rank) that the ranks'
  /// time slices on shared cores average out: the result is a rank's
  /// throughput while every rank runs, not one call's latency.
  double median(const std::function<void()> &body) {
    body();
    double t0 = now();
    body();
    double one = std::max(1e-9, now() - t0);
    double calls = std::min(1e5, std::max(1.0, std::ceil(batchSeconds / one)));
    all.allReduce(&calls, &calls, 1, DType::F64, ReduceOp::Max)->wait();
    std::vector<double> times;
    for (int64_t r = 0; r < repeats; ++r) {
      barrier();
      double start = now();
      for (int64_t c = 0; c < int64_t(calls); ++c)
        body();
      double t = (now() - start) / calls;
      all.allReduce(&t, &t, 1, DType::F64, ReduceOp::Max)->wait();
      times.push_back(t);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  }

  void barrier() {
    double x = 0;
    all.allReduce(&x, &x, 1, DType::F64, ReduceOp::Sum)->wait();
  }

private:
  static constexpr double batchSeconds = 0.02;
  Communicator &all;
  int64_t repeats;
};

struct GemmPoint {
  int64_t m, n, k;
  double seconds;
};

struct CommPoint {
  std::string kind;
  int64_t group;
  double bytes, seconds;
};

/// Steps and bandwidth factor of the planner's ring model (algorithms.md
/// §6.1) for `kind` over `n` ranks.
std::pair<double, double> ringTerms(const std::string &kind, int64_t n) {
  double steps = double(n - 1), frac = double(n - 1) / double(n);
  if (kind == "all_reduce")
    return {2 * steps, 2 * frac};
  if (kind == "p2p")
    return {1, 1};
  return {steps, frac};
}

/// Least squares of t = c + steps·alpha + f·S·invB in relative error
/// (each row divided by its t), coefficients clamped at 0 and refitted.
std::vector<double> fitCollectives(const std::vector<CommPoint> &points) {
  // Columns: c, alpha, invB.
  std::vector<bool> active = {true, true, true};
  std::vector<double> coef(3, 0.0);
  for (int round = 0; round < 3; ++round) {
    double a[3][3] = {}, b[3] = {};
    for (const CommPoint &p : points) {
      auto [steps, frac] = ringTerms(p.kind, p.group);
      double row[3] = {1, steps, frac * p.bytes};
      for (int i = 0; i < 3; ++i) {
        row[i] = active[i] ? row[i] / p.seconds : 0;
      }
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j)
          a[i][j] += row[i] * row[j];
        b[i] += row[i];
      }
    }
    for (int i = 0; i < 3; ++i)
      if (!active[i])
        a[i][i] = 1, b[i] = 0;
    // Gaussian elimination with partial pivoting.
    for (int c = 0; c < 3; ++c) {
      int piv = c;
      for (int r = c + 1; r < 3; ++r)
        if (std::fabs(a[r][c]) > std::fabs(a[piv][c]))
          piv = r;
      std::swap(a[c], a[piv]);
      std::swap(b[c], b[piv]);
      if (std::fabs(a[c][c]) < 1e-300)
        throw std::runtime_error("collective fit: singular system");
      for (int r = 0; r < 3; ++r) {
        if (r == c)
          continue;
        double f = a[r][c] / a[c][c];
        for (int j = 0; j < 3; ++j)
          a[r][j] -= f * a[c][j];
        b[r] -= f * b[c];
      }
    }
    bool clamped = false;
    for (int i = 0; i < 3; ++i) {
      coef[i] = b[i] / a[i][i];
      if (active[i] && coef[i] < 0) {
        active[i] = false;
        coef[i] = 0;
        clamped = true;
      }
    }
    if (!clamped)
      break;
  }
  if (coef[2] <= 0)
    throw std::runtime_error("collective fit: no positive bandwidth term");
  return coef;
}

int run(const Options &opts, CommWorld &world) {
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
  double peak = 0;
  for (const GemmPoint &g : gemms)
    peak = std::max(peak, 2.0 * g.m * g.n * g.k / g.seconds);
  // The planner's GEMM time for a given efficiency and k0.
  auto gemmTime = [&](const GemmPoint &g, double eff, double k0) {
    double flops = 2.0 * g.m * g.n * g.k;
    double bytes = 4.0 * (g.m * g.k + g.k * g.n + g.m * g.n);
    double compute = flops / (peak * eff * (g.k / (g.k + k0)));
    return std::max(compute, bytes / bandwidth) + fixed;
  };
  double bestEff = 1, bestK0 = 0, bestErr = 1e300;
  for (double eff = 0.30; eff <= 1.0001; eff += 0.02)
    for (double k0 = 0; k0 <= 512; k0 += 8) {
      double err = 0;
      for (const GemmPoint &g : gemms)
        err += std::fabs(std::log(gemmTime(g, eff, k0) / g.seconds));
      if (err < bestErr)
        bestErr = err, bestEff = eff, bestK0 = k0;
    }
  nlohmann::json grid = nlohmann::json::array();
  for (const GemmPoint &g : gemms)
    grid.push_back({{"m", g.m}, {"n", g.n}, {"k", g.k}, {"s", g.seconds}});
  measured["gemm"] = grid;
  measured["gemm_fit_mean_abs_log_error"] = bestErr / gemms.size();

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
  std::vector<CommPoint> comms;
  for (int64_t g = 2; g <= ranks; g *= 2) {
    std::unique_ptr<Communicator> group =
        world.split(world.rank() / g, world.rank() % g);
    for (double bytes : {4096.0, 1048576.0}) {
      int64_t count = int64_t(bytes / 4);
      std::vector<float> send(count * g, 1.0f), recv(count * g);
      auto time = [&](const std::string &kind,
                      const std::function<void()> &op) {
        comms.push_back({kind, g, bytes, timer.median(op)});
      };
      time("all_reduce", [&] {
        group
            ->allReduce(send.data(), recv.data(), count, DType::F32,
                        ReduceOp::Sum)
            ->wait();
      });
      time("all_gather", [&] {
        group->allGather(send.data(), recv.data(), int64_t(bytes) / g)->wait();
      });
      time("reduce_scatter", [&] {
        group
            ->reduceScatter(send.data(), recv.data(), count / g, DType::F32,
                            ReduceOp::Sum)
            ->wait();
      });
      time("all_to_all", [&] {
        group->allToAll(send.data(), recv.data(), int64_t(bytes) / g)->wait();
      });
      if (g == 2)
        time("p2p", [&] {
          // One direction: rank 0 of each pair sends, rank 1 receives.
          Transfer t{1 - group->rank(), send.data(), int64_t(bytes)};
          Transfer r{1 - group->rank(), recv.data(), int64_t(bytes)};
          if (group->rank() == 0)
            group->exchange({t}, {})->wait();
          else
            group->exchange({}, {r})->wait();
        });
    }
  }
  nlohmann::json cluster;
  cluster["name"] = opts.name;
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
  cluster["efficiency"] = {{"gemm", round2(bestEff)},
                           {"gemm_k0", round2(bestK0)},
                           {"attention", round2(attEff)},
                           {"memory", round2(memoryEfficiency)}};
  cluster["overlap"] = {{"tp", 0.0}, {"dp", 0.0}, {"p2p", 0.0}};
  if (!comms.empty()) {
    std::vector<double> coef = fitCollectives(comms);
    cluster["collective_latency_us"] = round2(coef[0] * 1e6);
    cluster["intra_node"] = {
        {"link", "the runtime's MPI communicator on this node"},
        {"gb_per_s_per_direction_per_gpu", round2(1.0 / coef[2] / 1e9)},
        {"latency_us", round2(coef[1] * 1e6)},
        {"efficiency", 1.0}};
    nlohmann::json list = nlohmann::json::array();
    for (const CommPoint &p : comms)
      list.push_back({{"kind", p.kind},
                      {"group", p.group},
                      {"bytes", p.bytes},
                      {"s", p.seconds}});
    measured["collectives"] = list;
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
  std::string text = cluster.dump(2) + "\n";
  if (opts.out.empty()) {
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  std::ofstream file(opts.out);
  if (!file)
    throw std::runtime_error("cannot write '" + opts.out + "'");
  file << text;
  return file ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  Options opts;
  return tools::runOnWorld(
      "shard-calibrate", argc, argv,
      [&] {
        opts = parseOptions(argc, argv);
        // Idle kernel threads wait as under shard-run (GOMP_SPINCOUNT, read
        // by libgomp when it loads: only a new image sees it).
        if (cpu::waitPolicyIsLibraryDefault()) {
          ::setenv(cpu::kSpinCountVariable, cpu::kDefaultSpinCount, 1);
          ::execv("/proc/self/exe", argv);
          ::unsetenv(cpu::kSpinCountVariable);
        }
        return opts.ranks;
      },
      [&](CommWorld &world) { return run(opts, world); });
}
