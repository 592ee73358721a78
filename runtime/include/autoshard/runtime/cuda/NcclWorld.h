//===- NcclWorld.h - The NCCL implementation of CommWorld -------*- C++ -*-===//
//
// Collectives and point-to-point transfers of the CUDA backend over NCCL
// (DESIGN.md §8). The world communicator is created from one ncclUniqueId;
// every group (CommWorld::split, one per mesh-axis group of a program) is an
// ncclCommSplit of it. All operations run on one communication stream,
// separate from the backend's compute stream: an operation first waits (an
// event) for the compute work queued before it, and its request's wait()
// makes the compute stream wait for the operation's completion event, so an
// asynchronous `dist.*_start` overlaps the compute issued before its
// `dist.wait` and the host never blocks. Buffers are device pointers.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_CUDA_NCCLWORLD_H
#define AUTOSHARD_RUNTIME_CUDA_NCCLWORLD_H

#include "autoshard/runtime/Communicator.h"

#include <memory>

namespace autoshard::runtime::cuda {

/// Creates this process's NCCL world on CUDA device `device`, ordered
/// against `computeStream` (a cudaStream_t, CudaBackend::stream()).
///
/// The ncclUniqueId of rank 0 reaches the other ranks through `bootstrap`
/// when given (e.g. the MPI world of a job started by mpirun: a host
/// broadcast over it); rank and size are then the bootstrap's. Without a
/// bootstrap, a torchrun-style environment (RANK, WORLD_SIZE) is read: size
/// 1 (or no such variables) needs nothing else; a larger job exchanges the
/// id through the file AUTOSHARD_NCCL_ID_FILE (a path every rank can see;
/// rank 0 writes it, the others wait up to 300 s for it). Throws CommError.
/// abort() ends the job through the bootstrap when there is one.
///
/// `timeoutS` > 0 starts the communication watchdog, a thread that polls
/// every operation's completion and the communicators' asynchronous errors
/// (ncclCommGetAsyncError) and, for an operation not complete after
/// `timeoutS` seconds or an error, prints the operation, its group and the
/// activity (setActivity), aborts every communicator (ncclCommAbort) and
/// ends the job; 0 turns it off.
std::unique_ptr<CommWorld>
createNcclWorld(CommWorld *bootstrap, void *computeStream, int device,
                double timeoutS = kDefaultCommTimeoutS);

} // namespace autoshard::runtime::cuda

#endif // AUTOSHARD_RUNTIME_CUDA_NCCLWORLD_H
