//===- MpiWorld.h - The MPI implementation of CommWorld ---------*- C++ -*-===//
//
// CommWorld and Communicator over MPI (library autoshard_runtime_mpi, built
// when CMake finds MPI). Every collective is an MPI non-blocking call
// (MPI_Iallreduce, MPI_Iallgather, MPI_Ireduce_scatter_block,
// MPI_Ialltoall, MPI_Ibcast, MPI_Isend/MPI_Irecv) whose request completes in
// CommRequest::wait(). Debian's OpenMPI has no asynchronous progress
// thread, so a started collective advances only inside MPI calls: overlap
// with compute on the CPU needs a communication thread (not implemented;
// MPI is initialised with MPI_THREAD_FUNNELED).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_MPI_MPIWORLD_H
#define AUTOSHARD_RUNTIME_MPI_MPIWORLD_H

#include "autoshard/runtime/Communicator.h"

#include <memory>
#include <string>
#include <vector>

namespace autoshard::runtime {

/// Initialises MPI (unless the program already has) and returns the world
/// of MPI_COMM_WORLD; MPI is finalised when the returned object is
/// destroyed (after every Communicator split from it). Errors are returned
/// as CommError, not MPI's default abort.
std::unique_ptr<CommWorld> createMpiWorld(int *argc, char ***argv);

/// Replaces this process by `mpirun -n ranks --oversubscribe --bind-to none
/// <this executable> argv[1..]` on this node (AUTOSHARD_MPIRUN names another
/// mpirun). Adds --allow-run-as-root for root, and, when ranks exceed the
/// cores, makes waiting ranks yield and OpenBLAS single-threaded (DESIGN.md
/// §10). `env` are extra `NAME=value` settings exported to every rank.
/// Returns only by throwing std::runtime_error naming mpirun and errno.
[[noreturn]] void execUnderMpirun(int ranks, int argc, char **argv,
                                  const std::vector<std::string> &env = {});

/// The command line execUnderMpirun runs: mpirun, its options, then this
/// executable with argv[1..argc).
std::vector<std::string> mpirunCommand(int ranks, int argc, char **argv,
                                       const std::vector<std::string> &env);

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_MPI_MPIWORLD_H
