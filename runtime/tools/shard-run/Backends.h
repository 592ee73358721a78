//===- Backends.h - The backends shard-run was built with -------*- C++ -*-===//

#ifndef AUTOSHARD_TOOLS_SHARDRUN_BACKENDS_H
#define AUTOSHARD_TOOLS_SHARDRUN_BACKENDS_H

#include "autoshard/runtime/Backend.h"
#include "autoshard/runtime/Communicator.h"

#include <memory>
#include <string>

namespace autoshard::shardrun {

/// The backends of this build, e.g. "cpu, cuda".
std::string builtBackends();
/// Whether `name` ("cpu", "cuda") is in this build.
bool backendBuilt(const std::string &name);

/// Creates backend `name`. Throws std::runtime_error with a clear message
/// when it is not built or (cuda) no GPU is usable.
std::unique_ptr<runtime::Backend> createBackend(const std::string &name);

/// Places this rank's host kernels (the CPU backend:
/// autoshard/runtime/cpu/Placement.h) by `mode` (--bind-cores auto|none):
/// `order` is its position in the placement order (the mesh index with the
/// pp axis innermost, so a pipeline replica's stages share a core), of
/// `localRanks` on this node and `worldRanks` in the job, `threads` the
/// --threads asked for (0: derived). Returns the banner line ("cores: ..."),
/// empty for a backend without host kernels. Call after
/// configureHostThreads (which divides the node's cores among its ranks);
/// the kernel threads started later inherit the pinned core.
std::string placeHostRank(const std::string &name, const std::string &mode,
                          int64_t order, int64_t localRanks, int64_t worldRanks,
                          int64_t threads);

/// Applies the thread policy of backend `name`'s host kernels (the CPU
/// backend: autoshard/runtime/cpu/Threads.h) for `localRanks` ranks of the
/// job on this node, or `requested` threads per rank when > 0 (--threads),
/// and returns the banner line ("threads: 2 per rank (...)"), empty for a
/// backend without host kernels. Call before any kernel runs.
std::string configureHostThreads(const std::string &name, int64_t requested,
                                 int64_t localRanks);

/// For backend "cpu" when the environment leaves libgomp's wait policy at
/// its default (cpu::waitPolicyIsLibraryDefault()): sets GOMP_SPINCOUNT to
/// cpu::kDefaultSpinCount and re-executes this program with `argv`
/// (/proc/self/exe), since libgomp reads the variable only when it loads;
/// ranks that mpirun starts inherit it. Returns when nothing is to be done,
/// and after a warning on stderr when the exec fails (the run then keeps
/// the default). Call first, before MPI or any thread starts.
void startWithHostThreadEnvironment(const std::string &name, char **argv);

/// The world the backend communicates in: for the cuda backend in a job of
/// several ranks, NCCL communicators bootstrapped through `hostWorld` (the
/// MPI world), watched with `commTimeoutS` (createNcclWorld); otherwise
/// null (use `hostWorld` itself). Throws CommError.
std::unique_ptr<runtime::CommWorld>
createDeviceWorld(runtime::Backend &backend, runtime::CommWorld *hostWorld,
                  double commTimeoutS);

} // namespace autoshard::shardrun

#endif // AUTOSHARD_TOOLS_SHARDRUN_BACKENDS_H
