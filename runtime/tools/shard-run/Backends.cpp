//===- Backends.cpp - The backends shard-run was built with ---------------===//

#include "Backends.h"

#if AUTOSHARD_HAVE_CPU_BACKEND
#include "autoshard/runtime/CpuBackend.h"
#include "autoshard/runtime/cpu/Placement.h"
#include "autoshard/runtime/cpu/Threads.h"
#endif
#if AUTOSHARD_HAVE_CUDA_BACKEND
#include "autoshard/runtime/cuda/CudaBackend.h"
#if AUTOSHARD_HAVE_NCCL
#include "autoshard/runtime/cuda/NcclWorld.h"
#endif
#endif

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <unistd.h>

namespace autoshard::shardrun {

using namespace autoshard::runtime;

std::string builtBackends() {
  std::string list;
#if AUTOSHARD_HAVE_CPU_BACKEND
  list += "cpu";
#endif
#if AUTOSHARD_HAVE_CUDA_BACKEND
  list += list.empty() ? "cuda" : ", cuda";
#endif
  return list.empty() ? "none" : list;
}

bool backendBuilt(const std::string &name) {
#if AUTOSHARD_HAVE_CPU_BACKEND
  if (name == "cpu")
    return true;
#endif
#if AUTOSHARD_HAVE_CUDA_BACKEND
  if (name == "cuda")
    return true;
#endif
  return false;
}

std::unique_ptr<Backend> createBackend(const std::string &name) {
#if AUTOSHARD_HAVE_CPU_BACKEND
  if (name == "cpu")
    return std::make_unique<CpuBackend>();
#endif
#if AUTOSHARD_HAVE_CUDA_BACKEND
  if (name == "cuda") {
    std::string why;
    if (!cuda::deviceAvailable(&why))
      throw std::runtime_error("--backend cuda: " + why);
    return std::make_unique<cuda::CudaBackend>();
  }
#endif
  throw std::runtime_error(
      "--backend '" + name +
      "' is not available (this build has: " + builtBackends() + ")");
}

std::string placeHostRank(const std::string &name, const std::string &mode,
                          int64_t order, int64_t localRanks, int64_t worldRanks,
                          int64_t threads) {
#if AUTOSHARD_HAVE_CPU_BACKEND
  if (name == "cpu")
    return "cores: " + cpu::describe(cpu::placeRank(mode, order, localRanks,
                                                    worldRanks, threads));
#endif
  (void)name;
  (void)mode;
  (void)order;
  (void)localRanks;
  (void)worldRanks;
  (void)threads;
  return "";
}

std::string configureHostThreads(const std::string &name, int64_t requested,
                                 int64_t localRanks) {
#if AUTOSHARD_HAVE_CPU_BACKEND
  if (name == "cpu") {
    cpu::ThreadPolicy p = cpu::chooseThreadPolicy(static_cast<int>(requested),
                                                  static_cast<int>(localRanks));
    cpu::setKernelThreads(p.threads);
    return "threads: " + cpu::describe(p) + ", GEMMs on " +
           cpu::floatGemmLibrary() + ", idle threads " +
           cpu::describeWaitPolicy();
  }
#endif
  (void)name;
  (void)requested;
  (void)localRanks;
  return "";
}

void startWithHostThreadEnvironment(const std::string &name, char **argv) {
#if AUTOSHARD_HAVE_CPU_BACKEND
  if (name != "cpu" || !cpu::waitPolicyIsLibraryDefault())
    return;
  // libgomp has already read the environment: only a new image sees it.
  ::setenv(cpu::kSpinCountVariable, cpu::kDefaultSpinCount, /*overwrite=*/1);
  ::execv("/proc/self/exe", argv);
  int err = errno;
  ::unsetenv(cpu::kSpinCountVariable);
  std::fprintf(stderr,
               "shard-run: warning: cannot re-execute /proc/self/exe to set "
               "%s=%s (%s); idle kernel threads keep libgomp's default spin\n",
               cpu::kSpinCountVariable, cpu::kDefaultSpinCount,
               std::strerror(err));
#else
  (void)name;
  (void)argv;
#endif
}

std::unique_ptr<CommWorld>
createDeviceWorld(Backend &backend, CommWorld *hostWorld, double commTimeoutS) {
  if (!hostWorld || hostWorld->size() == 1 || backend.name() != "cuda")
    return nullptr;
#if AUTOSHARD_HAVE_CUDA_BACKEND && AUTOSHARD_HAVE_NCCL
  auto &gpu = static_cast<cuda::CudaBackend &>(backend);
  return cuda::createNcclWorld(hostWorld, gpu.stream(), gpu.device(),
                               commTimeoutS);
#else
  (void)commTimeoutS;
  throw CommError("--backend cuda with several ranks needs NCCL, which this "
                  "build lacks");
#endif
}

} // namespace autoshard::shardrun
