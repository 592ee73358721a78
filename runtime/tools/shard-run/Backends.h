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

/// The world the backend communicates in: for the cuda backend in a job of
/// several ranks, NCCL communicators bootstrapped through `hostWorld` (the
/// MPI world); otherwise null (use `hostWorld` itself). Throws CommError.
std::unique_ptr<runtime::CommWorld>
createDeviceWorld(runtime::Backend &backend, runtime::CommWorld *hostWorld);

} // namespace autoshard::shardrun

#endif // AUTOSHARD_TOOLS_SHARDRUN_BACKENDS_H
