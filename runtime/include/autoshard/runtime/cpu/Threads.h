//===- Threads.h - Thread policy of the CPU kernels -------------*- C++ -*-===//
//
// One OpenMP pool runs every CPU kernel of a process: the GEMMs (OpenBLAS's
// OpenMP build) and the vectorised kernels of autoshard/runtime/cpu/. Its
// size is the process's share of the cores, so that N ranks on one node run
// N x threads <= cores threads and no idle pool spins on a core another rank
// needs.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_CPU_THREADS_H
#define AUTOSHARD_RUNTIME_CPU_THREADS_H

#include <string>

namespace autoshard::runtime::cpu {

/// The threads one process gives its kernels, and why.
struct ThreadPolicy {
  int threads = 1;        ///< kernel threads of this process (>= 1)
  int cores = 1;          ///< cores this process may run on (its affinity)
  int localRanks = 1;     ///< ranks of the job on this node
  bool requested = false; ///< set by the user (--threads), not derived
};

/// Cores this process may run on: the size of its affinity mask
/// (sched_getaffinity), so a rank bound to cores by its launcher counts only
/// those; at least 1.
int usableCores();

/// threads = requested when > 0, otherwise max(1, usableCores() /
/// localRanks). Throws std::invalid_argument for requested < 0 or
/// localRanks < 1, naming the value.
ThreadPolicy chooseThreadPolicy(int requested, int localRanks);

/// Sizes the one pool: OpenBLAS's GEMM threads and OpenMP's (both the same
/// libgomp pool when OpenBLAS is its OpenMP build). threads >= 1, else
/// std::invalid_argument.
void setKernelThreads(int threads);

/// libgomp reads how its idle threads wait once, when it loads, from
/// OMP_WAIT_POLICY and GOMP_SPINCOUNT. With neither set, a thread that
/// reaches a barrier first spins up to 300,000 iterations (milliseconds)
/// before it sleeps; when another process holds one of the cores, the
/// spinner takes the core its own peer needs to reach the barrier, and two
/// threads run 3-5x slower than one (docs/cpu-backend.md, "Threads").
/// shard-run therefore starts its kernels with GOMP_SPINCOUNT=1000
/// (kDefaultSpinCount): as fast as the default on an idle machine, and no
/// collapse on a loaded one.
inline constexpr const char *kSpinCountVariable = "GOMP_SPINCOUNT";
inline constexpr const char *kDefaultSpinCount = "1000";

/// True when the environment sets neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT,
/// i.e. libgomp would spin its default 300,000 iterations.
bool waitPolicyIsLibraryDefault();

/// How this process's idle kernel threads wait, as the environment it
/// started with told libgomp, e.g. "GOMP_SPINCOUNT=1000" or
/// "OMP_WAIT_POLICY=ACTIVE"; "libgomp's default spin" when neither is set.
std::string describeWaitPolicy();

/// The pool's current size (omp_get_max_threads()).
int kernelThreads();

/// One line for the run's banner, e.g. "2 per rank (2 cores, 1 rank on this
/// node)" or "1 per rank (--threads 1; 2 cores, 1 rank on this node)".
std::string describe(const ThreadPolicy &policy);

/// "openblas-openmp", "openblas-pthread" or "openblas-serial": which OpenBLAS
/// build the GEMMs run on (openblas_get_parallel()).
std::string blasThreading();

/// Which library runs the float GEMMs: "onednn" or blasThreading()'s name
/// (the fp64 GEMMs of the oracle always run on OpenBLAS).
std::string floatGemmLibrary();

} // namespace autoshard::runtime::cpu

#endif // AUTOSHARD_RUNTIME_CPU_THREADS_H
