//===- PlacementTest.cpp - Core placement of oversubscribed ranks ---------===//

#include "autoshard/runtime/cpu/Placement.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <cstdlib>

#include <stdexcept>

using namespace autoshard::runtime::cpu;

namespace {

TEST(PlacementTest, BlockCoreGivesConsecutivePositionsOneCore) {
  const std::vector<int> cores = {3, 5};
  // 4 ranks on cores 3 and 5: positions 0, 1 on 3 and 2, 3 on 5.
  EXPECT_EQ(blockCore(0, 4, cores), 3);
  EXPECT_EQ(blockCore(1, 4, cores), 3);
  EXPECT_EQ(blockCore(2, 4, cores), 5);
  EXPECT_EQ(blockCore(3, 4, cores), 5);
  // 3 ranks: 2 + 1.
  EXPECT_EQ(blockCore(1, 3, cores), 3);
  EXPECT_EQ(blockCore(2, 3, cores), 5);
  EXPECT_THROW(blockCore(4, 4, cores), std::invalid_argument);
  EXPECT_THROW(blockCore(-1, 4, cores), std::invalid_argument);
  EXPECT_THROW(blockCore(0, 4, {}), std::invalid_argument);
}

TEST(PlacementTest, PinsOnlyOversubscribedOneThreadRanksOfOneNode) {
  const std::vector<int> before = usableCoreIds();
  const int64_t n = int64_t(before.size());
  EXPECT_FALSE(placeRank("none", 0, n + 1, n + 1, 0).pinned);
  EXPECT_EQ(describe(placeRank("none", 0, n + 1, n + 1, 0)),
            "not pinned (--bind-cores none)");
  CorePlacement fits = placeRank("auto", 0, n, n, 0);
  EXPECT_FALSE(fits.pinned);
  EXPECT_NE(fits.why.find("on " + std::to_string(n)), std::string::npos);
  EXPECT_FALSE(placeRank("auto", 0, n + 1, 2 * n + 2, 0).pinned);
  EXPECT_EQ(placeRank("auto", 0, n + 1, 2 * n + 2, 0).why,
            "the job spans nodes");
  EXPECT_FALSE(placeRank("auto", 0, n + 1, n + 1, 2).pinned);
  EXPECT_THROW(placeRank("always", 0, n + 1, n + 1, 0), std::invalid_argument);
  EXPECT_EQ(usableCoreIds(), before); // nothing above pinned

  // The last position of 2n ranks goes to the last core; this process is
  // then pinned there (restored below).
  CorePlacement last = placeRank("auto", 2 * n - 1, 2 * n, 2 * n, 0);
  EXPECT_TRUE(last.pinned);
  EXPECT_EQ(last.core, before.back());
  EXPECT_EQ(last.cores, int(n));
  EXPECT_EQ(usableCoreIds(), std::vector<int>{before.back()});
  EXPECT_NE(
      describe(last).find("pinned to core " + std::to_string(before.back())),
      std::string::npos);
  // Every thread was pinned (the OpenMP pool of earlier tests too): all
  // get the mask back.
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : before)
    CPU_SET(c, &set);
  DIR *tasks = opendir("/proc/self/task");
  ASSERT_NE(tasks, nullptr);
  while (dirent *e = readdir(tasks))
    if (pid_t tid = pid_t(std::atoi(e->d_name)); tid > 0) {
      cpu_set_t got;
      ASSERT_EQ(sched_getaffinity(tid, sizeof(got), &got), 0);
      EXPECT_EQ(CPU_COUNT(&got), 1) << "thread " << tid << " not pinned";
      sched_setaffinity(tid, sizeof(set), &set);
    }
  closedir(tasks);
  EXPECT_EQ(usableCoreIds(), before);
}

} // namespace
