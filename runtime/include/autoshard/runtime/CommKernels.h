//===- CommKernels.h - Shared parts of dist.* kernels -----------*- C++ -*-===//
//
// What every backend's communication kernels (docs/artifact-format.md,
// "Communication") share: a blocking kernel starts its operation on the
// group's Communicator and waits for it; a `*_start` kernel starts it and
// parks the request (and the step after it, e.g. unpacking a staging
// buffer) in the CommContext slot of (function, handle), which `dist.wait`
// completes. The point-to-point kernels and `dist.wait` only talk to the
// Communicator, so one binder serves every backend.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_COMMKERNELS_H
#define AUTOSHARD_RUNTIME_COMMKERNELS_H

#include "autoshard/runtime/Backend.h"
#include "autoshard/runtime/Communicator.h"

#include <functional>
#include <memory>

namespace autoshard::runtime::comm_kernels {

using Pending = CommContext::Pending;
/// Starts an operation on the kernel's operands.
using StartFn = std::function<Pending(void *const *operands)>;

/// Wraps the start of an operation into a blocking kernel (start, wait,
/// then the pending step) or, when `async` (a `*_start` op), one that
/// parks it in the slot of the instruction's `handle`.
BoundKernel finish(const KernelSignature &sig, bool async, StartFn start);

/// A started operation, with what its wait does after it completes.
Pending started(std::unique_ptr<CommRequest> request,
                std::function<void()> after = {});

/// dist.send(_start) / dist.recv(_start) (Async: the `_start` form).
template <bool Async> BoundKernel bindSend(const KernelSignature &sig);
template <bool Async> BoundKernel bindRecv(const KernelSignature &sig);
/// dist.wait: completes the operation parked in its handle's slot.
BoundKernel bindWait(const KernelSignature &sig);

/// Registers dist.send, dist.recv (and their `_start` forms) and dist.wait:
/// they only move bytes through the Communicator, so every backend shares
/// them.
void registerPointToPointKernels(KernelTable &table);

} // namespace autoshard::runtime::comm_kernels

#endif // AUTOSHARD_RUNTIME_COMMKERNELS_H
