//===- shard-calibrate.cpp - Cluster description of this machine ----------===//
//
// Issue 21, item 3. Runs micro-benchmarks with the runtime's own kernels and
// communicator on the machine it is on, with every rank of the job running
// them at the same time, and writes a cluster description
// (docs/cluster-format.md) for the planner: GEMMs over a shape grid, the
// fixed cost per kernel, memory bandwidth and the memory-bound kernels of a
// Transformer block, attention, and every collective over every group size
// (several ranks only), fitted with the planner's own models (Calibrate.h).
//
// --backend cpu (default; CpuProbes.cpp): the CPU kernels and the MPI
// communicator, N ranks sharing the node's cores. scripts/calibrate_cpu.sh
// writes configs/clusters/cpu-2core.json with it.
// --backend cuda (CudaProbes.cpp): the CUDA backend's kernels in bf16 and
// NCCL, one GPU per rank; scripts/gpu_check.sh runs it on the GPU machine.
//
// Each figure is the median of --repeats timings, each over the window
// from the first rank's start to the last rank's end (Timer::span); the
// written numbers are rounded to 2 significant digits so that repeated
// runs write the same file unless the machine changed (the planner's
// ranking then cannot differ).
//
//===----------------------------------------------------------------------===//

#include "Calibrate.h"

#if AUTOSHARD_CALIBRATE_CPU
#include "autoshard/runtime/cpu/Threads.h"
#endif

#include "ToolMain.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

using namespace autoshard::runtime;
using namespace autoshard::runtime::calibrate;

namespace {

const char *const kUsage =
    "usage: shard-calibrate [--backend cpu|cuda] [-n N] [--out FILE] "
    "[--name TEXT] [--repeats R] [--base FILE] [--profile FILE]... "
    "[--bind-cores auto|none]";

const char *const kHelp =
    "Measures this machine with the runtime's own kernels and communicator\n"
    "and writes a planner cluster description (docs/cluster-format.md).\n"
    "\n"
    "  --backend cpu|cuda  the backend measured (default cpu, in a build\n"
    "                      without it cuda). cpu: the CPU\n"
    "                      kernels and MPI, N ranks sharing the cores\n"
    "                      (gpu.shares_node true). cuda: the CUDA kernels in\n"
    "                      bf16 (cuBLAS GEMMs over m, n, k in 256..8192) and,\n"
    "                      with N > 1 (mpirun, one GPU per rank), NCCL\n"
    "  -n N                ranks, a power of two (re-executed under mpirun on\n"
    "                      this node)\n"
    "  --out FILE          write the description there (default: stdout)\n"
    "  --name TEXT         the description's name\n"
    "  --repeats R         timings per figure, their median kept (default 7)\n"
    "  --base FILE         (cuda) a cluster description whose fields this run\n"
    "                      cannot measure are copied: the links (intra_node,\n"
    "                      inter_node, collective_latency_us, gpus_per_node)\n"
    "                      on one GPU, reserved memory, fragmentation, GEMM\n"
    "                      tiles; measured.fields lists measured and copied\n"
    "                      fields\n"
    "  --profile FILE      (cpu, repeatable) an earlier output of this tool\n"
    "                      with fewer ranks (-n R < N): written as\n"
    "                      by_ranks_per_node.R, which the planner uses for\n"
    "                      jobs of R ranks on this node instead of scaling\n"
    "                      the N-rank figures by N / R; the file's own\n"
    "                      by_ranks_per_node profiles come along\n"
    "  --bind-cores auto|none\n"
    "                      (cpu) auto: when the ranks outnumber the\n"
    "                      cores, pin them as shard-run pins a data-\n"
    "                      parallel plan's, consecutive ranks on one core\n"
    "                      (the relay probes pair rank 2i and 2i + 1, as a\n"
    "                      pp=2 replica's stages) and write\n"
    "                      host.pinned_cores; none (default): leave placement\n"
    "                      to the scheduler. Calibrate with the setting the\n"
    "                      runs will use (shard-run --bind-cores)\n"
    "  -h, --help          this text\n";

Options parseOptions(int argc, char **argv) {
  Options o;
#if !AUTOSHARD_CALIBRATE_CPU && AUTOSHARD_HAVE_CUDA_BACKEND
  o.backend = "cuda"; // the only backend of this build (the GPU machine's)
#endif
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
    if (a == "-h" || a == "--help") {
      std::printf("%s\n\n%s", kUsage, kHelp);
      std::exit(0);
    }
    if (a == "-n")
      o.ranks = integer(a, value(i, a), 1, 1024);
    else if (a == "--backend")
      o.backend = value(i, a);
    else if (a == "--out") {
      o.out = value(i, a);
      // Not standard output: an empty name is an unset variable, not a
      // request for stdout (the default without --out).
      if (o.out.empty())
        throw std::invalid_argument("option '--out' needs a file name, got "
                                    "'' (leave --out out for standard "
                                    "output)");
    } else if (a == "--name")
      o.name = value(i, a);
    else if (a == "--repeats")
      o.repeats = integer(a, value(i, a), 1, 1000);
    else if (a == "--base")
      o.base = value(i, a);
    else if (a == "--profile")
      o.profiles.push_back(value(i, a));
    else if (a == "--bind-cores") {
      o.bindCores = value(i, a);
      if (o.bindCores != "auto" && o.bindCores != "none")
        throw std::invalid_argument(
            "option '--bind-cores' expects 'auto' or 'none', got '" +
            o.bindCores + "'");
    } else
      throw std::invalid_argument("unknown argument '" + a + "' (" + kUsage +
                                  ")");
  }
  // Pinning is about CPU ranks sharing cores; a GPU rank has its device.
  if (o.bindCores == "auto" && o.backend != "cpu")
    throw std::invalid_argument("option '--bind-cores auto' is for the cpu "
                                "backend, got --backend " +
                                o.backend);
  // The collective probes and the synchronisation sweeps split the ranks
  // into groups of 2, 4, ... N: with another count the last group is short
  // (-n 3 ended in "MPI_Isend failed: MPI_ERR_RANK" once the ranks ran).
  if (o.ranks & (o.ranks - 1))
    throw std::invalid_argument(
        "option '-n' needs a power of two (1, 2, 4, 8, ...: the collectives "
        "are probed over groups of 2, 4, ... N ranks), got " +
        std::to_string(o.ranks));
  if (o.backend != "cpu" && o.backend != "cuda")
    throw std::invalid_argument(
        "option '--backend' expects cpu or cuda, got '" + o.backend + "'");
  if (!o.base.empty() && o.backend != "cuda")
    throw std::invalid_argument("option '--base' is read with --backend cuda "
                                "only (the cpu backend measures every field)");
  if (!o.profiles.empty() && o.backend != "cpu")
    throw std::invalid_argument("option '--profile' is read with --backend "
                                "cpu only (ranks sharing one node's cores)");
  // Before a minute of measuring, not after it.
  readRankProfiles(o.profiles, o.ranks);
  return o;
}

/// The backends this build has, for messages.
std::string builtBackends() {
  std::string list;
#if AUTOSHARD_CALIBRATE_CPU
  list += "cpu";
#endif
#if AUTOSHARD_HAVE_CUDA_BACKEND
  list += list.empty() ? "cuda" : ", cuda";
#endif
  return list;
}

int run(const Options &opts, CommWorld &world) {
  // Timer::span compares the ranks' readings of CLOCK_MONOTONIC, which only
  // the processes of one node share: ranks started on several nodes (under
  // a launcher) would write figures off by the nodes' clock offsets.
  if (world.localSize() != world.size())
    throw std::runtime_error(
        "shard-calibrate measures one node (its timings compare the ranks' "
        "monotonic clocks), but only " +
        std::to_string(world.localSize()) + " of the job's " +
        std::to_string(world.size()) +
        " ranks are on this node (run -n N without a launcher, or one "
        "node's ranks under it)");
#if AUTOSHARD_CALIBRATE_CPU
  if (opts.backend == "cpu")
    return runCpu(opts, world);
#endif
#if AUTOSHARD_HAVE_CUDA_BACKEND
  if (opts.backend == "cuda")
    return runCuda(opts, world);
#endif
  (void)world;
  throw std::runtime_error(
      "--backend " + opts.backend + ": shard-calibrate was built without the " +
      opts.backend + " backend (this build has: " + builtBackends() + "; " +
      (opts.backend == "cuda"
           ? "the CUDA backend builds where CMake finds the CUDA toolkit, "
             "AUTOSHARD_ENABLE_CUDA=AUTO or ON"
           : "the CPU backend needs OpenBLAS, AUTOSHARD_RUNTIME_CPU=ON") +
      ")");
}

} // namespace

int main(int argc, char **argv) {
  Options opts;
  return tools::runOnWorld(
      "shard-calibrate", argc, argv,
      [&] {
        opts = parseOptions(argc, argv);
        // Before a minute of measuring, not after it.
        if (!opts.out.empty())
          checkWritable(opts.out);
#if AUTOSHARD_CALIBRATE_CPU
        // Idle kernel threads wait as under shard-run (GOMP_SPINCOUNT, read
        // by libgomp when it loads: only a new image sees it).
        if (opts.backend == "cpu" && cpu::waitPolicyIsLibraryDefault()) {
          ::setenv(cpu::kSpinCountVariable, cpu::kDefaultSpinCount, 1);
          ::execv("/proc/self/exe", argv);
          ::unsetenv(cpu::kSpinCountVariable);
        }
#endif
        return opts.ranks;
      },
      [&](CommWorld &world) { return run(opts, world); });
}
