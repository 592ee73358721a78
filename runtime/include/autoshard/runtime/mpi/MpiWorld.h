//===- MpiWorld.h - The MPI implementation of CommWorld ---------*- C++ -*-===//
//
// CommWorld and Communicator over MPI (library autoshard_runtime_mpi, built
// when CMake finds MPI). Every collective is an MPI non-blocking call
// (MPI_Iallreduce, MPI_Iallgather, MPI_Ireduce_scatter_block,
// MPI_Ialltoall, MPI_Ibcast, MPI_Isend/MPI_Irecv) whose request completes in
// CommRequest::wait(). Debian's OpenMPI has no asynchronous progress
// thread, so a started collective advances only inside MPI calls.
//
// Without a communication thread (the default) the calling thread posts
// the call and CommRequest::wait() completes it (MPI_Waitall); MPI is
// initialised with MPI_THREAD_FUNNELED. With one (MpiWorldOptions::
// commThread), that thread makes every MPI call after the world's setup:
// starting an operation only enqueues it; the thread posts the queued
// operations in the order they were started (so every rank still enters
// its collectives in program order, which dist-verify-comm checked), keeps
// the outstanding requests and drives them with MPI_Testsome, and wait()
// blocks until the thread has seen the operation complete. That is what
// lets a `dist.*_start` collective advance while the caller computes
// (docs/cpu-backend.md, "Overlap on the CPU"). MPI is then initialised with
// MPI_THREAD_MULTIPLE: only the thread calls MPI in steady state, but the
// caller's MPI_Abort on an error may run while the thread is inside
// MPI_Testsome, which MPI_THREAD_SERIALIZED would not allow.
//
// The communication watchdog (MpiWorldOptions::timeoutS, as torch's NCCL
// watchdog): no wait blocks inside MPI. A wait polls its operation
// (MPI_Testall, or the thread's MPI_Testsome) back to back for 200 us, then
// yields the core, and once it has lasted 20 ms sleeps between polls (at
// most 1 ms, 1% of the time waited so far), so ranks that wait for a slow or
// stopped peer stop burning their cores. A wait that lasts the timeout ends
// with a CommError that names the operation, its group (mesh axes and world
// ranks), the activity (CommWorld::setActivity, e.g. "step 12") and the
// peers it waited for: the rank asks every other rank, on a private
// duplicate of MPI_COMM_WORLD, what it waits for; ranks blocked in a wait
// answer (they check for questions every 20 ms), a stopped, dead or
// unreachable rank does not. The ranks that answered then end their waits
// with the same diagnosis and their own operation, so that every rank that
// can still speak says what it waited for. The caller then aborts the job
// (CommWorld::abort). Blocking calls that are not operations (the splits at
// start-up, MPI_Finalize) are not watched.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_MPI_MPIWORLD_H
#define AUTOSHARD_RUNTIME_MPI_MPIWORLD_H

#include "autoshard/runtime/Communicator.h"

#include <memory>
#include <string>
#include <vector>

namespace autoshard::runtime {

/// How an MPI world makes progress.
struct MpiWorldOptions {
  /// Drive every operation from a communication thread (see the file
  /// comment); needs MPI_THREAD_MULTIPLE.
  bool commThread = false;
  /// Microseconds the thread sleeps between two polls (MPI_Testsome) while
  /// operations are outstanding and no caller waits for one, >= 1. While a
  /// caller is blocked in wait() it polls back to back, yielding the core
  /// in between (as MPI_Waitall would spin). With nothing outstanding it
  /// sleeps until an operation is started.
  int64_t pollUs = kDefaultCommPollUs;
  /// Seconds a rank waits for one operation (a collective, or an
  /// exchange's sends and receives) before the communication watchdog
  /// gives up; 0: forever. See the file comment.
  double timeoutS = kDefaultCommTimeoutS;
};

/// Initialises MPI (unless the program already has) and returns the world
/// of MPI_COMM_WORLD; MPI is finalised when the returned object is
/// destroyed (after every Communicator split from it; a communication
/// thread is joined first: it posts what is still queued and abandons what
/// is outstanding, whose waits then throw). Errors are returned as
/// CommError, not MPI's default abort. With `options.commThread`, throws
/// CommError naming the thread level MPI provides when it is below
/// MPI_THREAD_MULTIPLE (MPI is finalised first if this call initialised
/// it), and an options.pollUs below 1.
std::unique_ptr<CommWorld> createMpiWorld(int *argc, char ***argv,
                                          const MpiWorldOptions &options = {});

/// Replaces this process by `mpirun -n ranks --oversubscribe --bind-to none
/// <this executable> argv[1..]` on this node (AUTOSHARD_MPIRUN names another
/// mpirun). Adds --allow-run-as-root for root, OpenMPI's out-of-band TCP
/// keepalive of a few seconds (oob_tcp_keepalive_time 5, _intvl 2, _probes
/// 3: a dead link ends the job in ~11 s, docs/running.md) and, when ranks
/// exceed the cores, makes waiting ranks yield and OpenBLAS single-threaded
/// (DESIGN.md §10). `env` are extra `NAME=value` settings exported to every
/// rank. Returns only by throwing std::runtime_error naming mpirun and errno.
[[noreturn]] void execUnderMpirun(int ranks, int argc, char **argv,
                                  const std::vector<std::string> &env = {});

/// The command line execUnderMpirun runs: mpirun, its options, then this
/// executable with argv[1..argc).
std::vector<std::string> mpirunCommand(int ranks, int argc, char **argv,
                                       const std::vector<std::string> &env);

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_MPI_MPIWORLD_H
