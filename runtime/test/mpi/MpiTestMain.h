//===- MpiTestMain.h - main() of the MPI GoogleTest programs ----*- C++ -*-===//

#ifndef AUTOSHARD_RUNTIME_TEST_MPI_MPITESTMAIN_H
#define AUTOSHARD_RUNTIME_TEST_MPI_MPITESTMAIN_H

#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/mpi/MpiWorld.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace autoshard::runtime::test {

/// Creates the MPI world (`world` points to it while the tests run), runs
/// every test on every rank (only rank 0 prints results; the others report
/// failures only) and returns the exit code: a failure on any rank fails
/// the job (mpiexec's exit code). AUTOSHARD_TEST_COMM_THREAD=1 gives the
/// world a communication thread (CTest runs some suites both ways).
inline int runMpiTests(int argc, char **argv, CommWorld *&world) {
  MpiWorldOptions options;
  if (const char *env = std::getenv("AUTOSHARD_TEST_COMM_THREAD"))
    options.commThread = std::string(env) == "1";
  std::unique_ptr<CommWorld> owned = createMpiWorld(&argc, &argv, options);
  world = owned.get();
  if (options.commThread && owned->rank() == 0)
    std::printf("MPI world with a communication thread (polls every %lld "
                "us)\n",
                static_cast<long long>(options.pollUs));
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
