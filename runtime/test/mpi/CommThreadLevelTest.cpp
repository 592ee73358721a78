//===- CommThreadLevelTest.cpp - The comm thread needs THREAD_MULTIPLE ---===//
//
// Run under mpiexec -n 1. MPI is initialised here with
// MPI_THREAD_FUNNELED, as a program that is not ours might have done: a
// world with a communication thread must then refuse, naming the level MPI
// provides, instead of running MPI from two threads unprotected. A bad poll
// interval is refused too; a world without a thread still works.
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/mpi/MpiWorld.h"

#include <gtest/gtest.h>

#include <mpi.h>

#include <string>

using namespace autoshard::runtime;

namespace {

std::string errorOf(const MpiWorldOptions &options) {
  try {
    createMpiWorld(nullptr, nullptr, options);
  } catch (const CommError &e) {
    return e.what();
  }
  return "";
}

TEST(CommThreadLevel, RefusedBelowThreadMultipleNamingTheLevel) {
  int provided = 0;
  MPI_Query_thread(&provided);
  ASSERT_EQ(provided, MPI_THREAD_FUNNELED);
  MpiWorldOptions on;
  on.commThread = true;
  EXPECT_EQ(errorOf(on),
            "the communication thread needs MPI_THREAD_MULTIPLE, but the MPI "
            "library provides MPI_THREAD_FUNNELED (use an MPI built with "
            "thread support, or turn the communication thread off)");
}

TEST(CommThreadLevel, PollIntervalBelowOneIsRefused) {
  MpiWorldOptions on;
  on.commThread = true;
  on.pollUs = 0;
  EXPECT_EQ(errorOf(on), "the communication thread's poll interval must be "
                         ">= 1 microsecond, found 0");
}

TEST(CommThreadLevel, AWorldWithoutThreadStillWorks) {
  std::unique_ptr<CommWorld> world = createMpiWorld(nullptr, nullptr);
  EXPECT_FALSE(world->setCommTracer(nullptr));
  std::unique_ptr<Communicator> c = world->split(0, 0);
  int32_t x = 5, y = 0;
  c->allReduce(&x, &y, 1, DType::I32, ReduceOp::Sum)->wait();
  EXPECT_EQ(y, 5);
}

} // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}
