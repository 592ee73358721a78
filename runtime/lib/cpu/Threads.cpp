//===- Threads.cpp - Thread policy of the CPU kernels ---------------------===//

#include "autoshard/runtime/cpu/Threads.h"

#include "Blas.h"

#include "Check.h"

#include <cblas.h>
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>

namespace autoshard::runtime::cpu {

int usableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    return std::max(1, omp_get_num_procs());
  return std::max(1, CPU_COUNT(&set));
}

ThreadPolicy chooseThreadPolicy(int requested, int localRanks) {
  detail::checkAtLeast("threads", "--threads", requested, 0);
  detail::checkAtLeast("threads", "ranks on this node", localRanks, 1);
  ThreadPolicy p;
  p.cores = usableCores();
  p.localRanks = localRanks;
  p.requested = requested > 0;
  p.threads = p.requested ? requested : std::max(1, p.cores / localRanks);
  return p;
}

void setKernelThreads(int threads) {
  detail::checkAtLeast("threads", "threads", threads, 1);
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

int kernelThreads() { return omp_get_max_threads(); }

bool waitPolicyIsLibraryDefault() {
  return !std::getenv("OMP_WAIT_POLICY") && !std::getenv(kSpinCountVariable);
}

std::string describeWaitPolicy() {
  std::string s;
  for (const char *name : {"OMP_WAIT_POLICY", kSpinCountVariable})
    if (const char *value = std::getenv(name))
      s += (s.empty() ? "" : " ") + std::string(name) + "=" + value;
  return s.empty() ? "libgomp's default spin" : s;
}

std::string describe(const ThreadPolicy &p) {
  std::string s = std::to_string(p.threads) + " per rank (";
  if (p.requested)
    s += "--threads " + std::to_string(p.threads) + "; ";
  s += std::to_string(p.cores) + (p.cores == 1 ? " core, " : " cores, ") +
       std::to_string(p.localRanks) + (p.localRanks == 1 ? " rank" : " ranks") +
       " on this node)";
  if (p.threads * p.localRanks > p.cores)
    s += ", oversubscribed: " + std::to_string(p.threads * p.localRanks) +
         " threads on " + std::to_string(p.cores) +
         (p.cores == 1 ? " core" : " cores");
  return s;
}

std::string blasThreading() {
  switch (openblas_get_parallel()) {
  case 0:
    return "openblas-serial";
  case 1:
    return "openblas-pthread";
  default:
    return "openblas-openmp";
  }
}

std::string floatGemmLibrary() {
  return detail::floatGemmOnOneDnn() ? "onednn" : blasThreading();
}

} // namespace autoshard::runtime::cpu
