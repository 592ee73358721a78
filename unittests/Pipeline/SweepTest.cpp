//===- SweepTest.cpp - Every schedule kind over a grid of (p, m, v) -------===//
//
// For every kind, p in {1,2,3,4,8}, m in 1..16, v in {1,2,3}: buildSchedule
// either fails with an error naming a parameter, or the schedule passes
// Check A, is acyclic (Check B), simulates without deadlock, round-trips
// through the text format, and lowers (torch-style) to communication
// programs that pass Checks C and D, with and without the tied-embedding
// all-reduce.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Pipeline/CommVerify.h"
#include "autoshard/Pipeline/Schedule.h"
#include "autoshard/Pipeline/Simulate.h"

#include "gtest/gtest.h"

using namespace autoshard::pipeline;

namespace {

/// The parameter combinations buildSchedule accepts (Schedule.h).
bool expectedValid(ScheduleKind kind, int64_t p, int64_t m, int64_t v) {
  switch (kind) {
  case ScheduleKind::GPipe:
  case ScheduleKind::OneFOneB:
  case ScheduleKind::ZBH1:
    return v == 1;
  case ScheduleKind::Interleaved1F1B:
    return v >= 2 && m >= p && m % p == 0;
  case ScheduleKind::LoopedBFS:
    return true;
  case ScheduleKind::ZBV:
    return v == 2;
  }
  return false;
}

} // namespace

namespace autoshard::pipeline {
// Readable test names in gtest output.
void PrintTo(ScheduleKind kind, std::ostream *os) {
  *os << scheduleKindName(kind);
}
} // namespace autoshard::pipeline

namespace {

class SweepTest : public ::testing::TestWithParam<ScheduleKind> {};

TEST_P(SweepTest, ValidOrNamedError) {
  ScheduleKind kind = GetParam();
  int64_t numValid = 0;
  for (int64_t p : {1, 2, 3, 4, 8}) {
    for (int64_t m = 1; m <= 16; ++m) {
      for (int64_t v : {1, 2, 3}) {
        std::string where =
            std::string(scheduleKindName(kind)) + " p=" + std::to_string(p) +
            " m=" + std::to_string(m) + " v=" + std::to_string(v);
        OrError<PipelineSchedule> schedule = buildSchedule(kind, p, m, v);
        ASSERT_EQ(bool(schedule), expectedValid(kind, p, m, v))
            << where << ": " << schedule.error();
        if (!schedule) {
          const std::string &error = schedule.error();
          EXPECT_TRUE(error.find("m=" + std::to_string(m)) !=
                          std::string::npos ||
                      error.find("v=" + std::to_string(v)) != std::string::npos)
              << where << ": " << error;
          continue;
        }
        ++numValid;

        // Check A.
        std::vector<std::string> errors = validateSchedule(*schedule);
        ASSERT_TRUE(errors.empty()) << where << ": " << errors.front();
        int64_t numOps = 0;
        for (const auto &order : schedule->rankOrders)
          numOps += order.size();
        bool split = kind == ScheduleKind::ZBH1 || kind == ScheduleKind::ZBV;
        EXPECT_EQ(numOps, (split ? 3 : 2) * schedule->numStages * m) << where;

        // Check B, both forms.
        std::optional<DependencyCycle> cycle = findDependencyCycle(*schedule);
        ASSERT_FALSE(cycle.has_value()) << where << ": " << cycle->description;
        SimulationResult sim = simulateSchedule(*schedule);
        ASSERT_FALSE(sim.deadlocked) << where << ": " << sim.deadlockReport;
        double busy = 0;
        for (double b : sim.busy)
          busy += b;
        EXPECT_DOUBLE_EQ(busy, 3.0 * schedule->numStages * m) << where;
        for (double b : sim.busy)
          EXPECT_LE(b, sim.makespan) << where;
        EXPECT_GE(sim.idleOverBusy, 0) << where;

        // Text round trip.
        OrError<PipelineSchedule> parsed =
            parseSchedule(formatSchedule(*schedule));
        ASSERT_TRUE(parsed) << where << ": " << parsed.error();
        EXPECT_EQ(parsed->rankOrders, schedule->rankOrders) << where;
        EXPECT_EQ(parsed->stageToRank, schedule->stageToRank) << where;

        // Checks C and D on the torch-style lowering.
        for (bool tied : {false, true}) {
          LowerOptions options;
          options.tiedEmbeddingAllReduce = tied;
          options.activationType = "f32[8x64x128]";
          options.gradientType = "f32[8x64x128]";
          OrError<CommLowering> lowered =
              lowerScheduleToComm(*schedule, options);
          ASSERT_TRUE(lowered) << where << ": " << lowered.error();
          std::vector<CommViolation> violations =
              verifyCommunication(lowered->programs, lowered->groups);
          EXPECT_TRUE(violations.empty())
              << where << (tied ? " (tied)" : "") << ":\n"
              << formatViolations(violations);
        }

        // The naive lowering is also clean when no pair of ranks exchanges
        // both activations and gradients in one direction: one stage per
        // rank, or loop maps with p >= 3 (§1.6 Check C).
        bool oneKindPerDirection =
            schedule->numStages == p || (kind != ScheduleKind::ZBV && p >= 3);
        if (oneKindPerDirection) {
          LowerOptions naive;
          naive.placement = RecvPlacement::BeforeUse;
          OrError<CommLowering> lowered = lowerScheduleToComm(*schedule, naive);
          ASSERT_TRUE(lowered) << where << ": " << lowered.error();
          std::vector<CommViolation> violations =
              verifyCommunication(lowered->programs, lowered->groups);
          EXPECT_TRUE(violations.empty()) << where << " (naive):\n"
                                          << formatViolations(violations);
        }
      }
    }
  }
  EXPECT_GT(numValid, 0);
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, SweepTest,
    ::testing::Values(ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                      ScheduleKind::Interleaved1F1B, ScheduleKind::LoopedBFS,
                      ScheduleKind::ZBH1, ScheduleKind::ZBV),
    [](const ::testing::TestParamInfo<ScheduleKind> &info) {
      std::string id;
      for (char c : std::string(scheduleKindName(info.param)))
        id += (c == '-') ? '_' : c;
      return "k" + id;
    });

} // namespace
