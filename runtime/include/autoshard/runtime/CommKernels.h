//===- CommKernels.h - Shared parts of dist.* kernels -----------*- C++ -*-===//
//
// What every backend's communication kernels (docs/artifact-format.md,
// "Communication") share: a blocking kernel starts its operation on the
// group's Communicator and waits for it; a `*_start` kernel starts it and
// parks the request (and the step after it, e.g. unpacking a staging
// buffer) in the CommContext slot of (function, handle), which `dist.wait`
// completes. The collectives are written once, over the few device memory
// operations a backend provides (CommDevice: strided copies, zero fill,
// staging buffers); the point-to-point kernels and `dist.wait` only talk
// to the Communicator. A group of one rank never calls the communicator:
// each collective is then a local copy.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_COMMKERNELS_H
#define AUTOSHARD_RUNTIME_COMMKERNELS_H

#include "autoshard/runtime/Backend.h"
#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/KernelChecks.h"

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

/// A finished operation (a group of one rank), with its wait's step.
Pending done(std::function<void()> after = {});

/// The device memory operations the collectives need from a backend. Each
/// is ordered after the kernels queued before it and before those queued
/// after it (the CUDA backend: on its stream).
class CommDevice {
public:
  virtual ~CommDevice() = default;
  /// Copies `rows` rows of `rowBytes` bytes from `src` (rows `srcPitch`
  /// bytes apart) to `dst` (`dstPitch` apart); the two do not overlap.
  virtual void copyRows(void *dst, int64_t dstPitch, const void *src,
                        int64_t srcPitch, int64_t rows,
                        int64_t rowBytes) const = 0;
  /// Sets `bytes` bytes at `dst` to zero.
  virtual void zero(void *dst, int64_t bytes) const = 0;
  /// A staging buffer of `bytes` bytes of device memory, freed with its
  /// last holder (communication workspace outside the static memory plan).
  virtual std::shared_ptr<void> scratch(int64_t bytes) const = 0;
  /// For each of `slots` consecutive slots of `rows` rows of `rowBytes`
  /// bytes at `src`: the number of its leading rows up to and including the
  /// last row with a nonzero byte (0 for a slot of zeros), written to the
  /// host array `counts` before it returns (the CUDA backend waits for its
  /// stream). The ragged all-to-all sends these rows only.
  virtual void usedRows(const void *src, int64_t slots, int64_t rows,
                        int64_t rowBytes, int64_t *counts) const = 0;
  /// Copies `bytes` bytes from host memory to device memory (`upload`) or
  /// back (`download`); both return when the copy is done.
  virtual void upload(void *dst, const void *host, int64_t bytes) const = 0;
  virtual void download(void *host, const void *src, int64_t bytes) const = 0;

  /// Copies `bytes` bytes (nothing when empty or in place).
  void copy(void *dst, const void *src, int64_t bytes) const;
  /// [outer, G, inner] -> [G, outer, inner] (and back), `b` in bytes.
  void pack(void *dst, const void *src, checks::CommBlocks b, int64_t g) const;
  void unpack(void *dst, const void *src, checks::CommBlocks b,
              int64_t g) const;
};

/// What the collective binders need from a backend.
struct CommBackend {
  /// The device operations for the instruction being bound (called at bind
  /// time; the CUDA backend's capture the binding context's stream).
  std::shared_ptr<const CommDevice> (*device)();
  /// Fails unless the backend reduces a dtype (all-reduce, reduce-scatter).
  checks::ReducibleCheck reducible;
};

/// Registers the collectives (dist.all_reduce, all_gather, reduce_scatter,
/// all_to_all, broadcast, ppermute and their `_start` forms) over
/// `backend`'s device operations.
void registerCollectiveKernels(KernelTable &table, CommBackend backend);

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
