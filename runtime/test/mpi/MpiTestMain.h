//===- MpiTestMain.h - main() of the MPI GoogleTest programs ----*- C++ -*-===//

#ifndef AUTOSHARD_RUNTIME_TEST_MPI_MPITESTMAIN_H
#define AUTOSHARD_RUNTIME_TEST_MPI_MPITESTMAIN_H

#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/mpi/MpiWorld.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

namespace autoshard::runtime::test {

/// Creates the MPI world (`world` points to it while the tests run), runs
/// every test on every rank (only rank 0 prints results; the others report
/// failures only) and returns the exit code: a failure on any rank fails
/// the job (mpiexec's exit code).
inline int runMpiTests(int argc, char **argv, CommWorld *&world) {
  std::unique_ptr<CommWorld> owned = createMpiWorld(&argc, &argv);
  world = owned.get();
  ::testing::InitGoogleTest(&argc, argv);
  if (owned->rank() != 0) {
    auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int rc = RUN_ALL_TESTS();
  if (rc != 0)
    std::fprintf(stderr, "rank %lld: tests failed\n",
                 static_cast<long long>(owned->rank()));
  world = nullptr;
  return rc;
}

} // namespace autoshard::runtime::test

#endif // AUTOSHARD_RUNTIME_TEST_MPI_MPITESTMAIN_H
