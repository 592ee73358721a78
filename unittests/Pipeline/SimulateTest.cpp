//===- SimulateTest.cpp - Unit-cost simulator and Check B -----------------===//

#include "Goldens.h"
#include "ScheduleTestUtil.h"

#include "autoshard/Pipeline/Simulate.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace autoshard::pipeline;
using Kind = PipelineOp::Kind;
using test::build;
using test::parse;

namespace {

/// Rounds to the 4 decimals printed in §1.5.
double round4(double x) { return std::round(x * 1e4) / 1e4; }

//===----------------------------------------------------------------------===//
// §1.5 "unit-cost sim" lines (F=1, B=2, I=1, W=1, zero comm), p=4, m=8
//===----------------------------------------------------------------------===//

struct FigureCase {
  const char *name;
  ScheduleKind kind;
  int64_t v;
  double makespan, busy, idleOverBusy, idleOverMakespan;
  std::vector<int64_t> peak;
};

void PrintTo(const FigureCase &figure, std::ostream *os) {
  *os << scheduleKindName(figure.kind) << " v=" << figure.v;
}

const FigureCase kFigures[] = {
    {"gpipe", ScheduleKind::GPipe, 1, 33, 24, 0.3750, 0.2727, {8, 8, 8, 8}},
    {"onefoneb",
     ScheduleKind::OneFOneB,
     1,
     33,
     24,
     0.3750,
     0.2727,
     {4, 3, 2, 1}},
    {"interleaved",
     ScheduleKind::Interleaved1F1B,
     2,
     57,
     48,
     0.1875,
     0.1579,
     {11, 9, 7, 5}},
    {"looped_bfs",
     ScheduleKind::LoopedBFS,
     2,
     57,
     48,
     0.1875,
     0.1579,
     {16, 16, 16, 16}},
    {"zb_h1", ScheduleKind::ZBH1, 1, 27, 24, 0.1250, 0.1111, {4, 4, 4, 4}},
    {"zb_v", ScheduleKind::ZBV, 2, 51, 48, 0.0625, 0.0588, {8, 8, 8, 8}},
};

class FigureTest : public ::testing::TestWithParam<FigureCase> {};

TEST_P(FigureTest, MatchesReference) {
  const FigureCase &figure = GetParam();
  SimulationResult sim = simulateSchedule(build(figure.kind, 4, 8, figure.v));
  ASSERT_FALSE(sim.deadlocked) << sim.deadlockReport;
  EXPECT_DOUBLE_EQ(sim.makespan, figure.makespan);
  EXPECT_EQ(sim.busy, std::vector<double>(4, figure.busy));
  EXPECT_DOUBLE_EQ(round4(sim.idleOverBusy), figure.idleOverBusy);
  EXPECT_DOUBLE_EQ(round4(sim.idleOverMakespan), figure.idleOverMakespan);
  EXPECT_EQ(sim.peakActivations, figure.peak);
  // β_total = β_ideal / (1 + β_ideal) (algorithms.md §1.2).
  EXPECT_NEAR(sim.idleOverMakespan, sim.idleOverBusy / (1 + sim.idleOverBusy),
              1e-12);
}

INSTANTIATE_TEST_SUITE_P(P4M8, FigureTest, ::testing::ValuesIn(kFigures),
                         [](const ::testing::TestParamInfo<FigureCase> &info) {
                           return std::string(info.param.name);
                         });

TEST(SimulateTest, GoldenTextSimulatesLikeTheGenerator) {
  // The §1.5 text itself (parsed, not generated) gives the same figures.
  SimulationResult sim = simulateSchedule(parse(goldens::kInterleaved));
  ASSERT_FALSE(sim.deadlocked) << sim.deadlockReport;
  EXPECT_DOUBLE_EQ(sim.makespan, 57);
  EXPECT_EQ(sim.peakActivations, (std::vector<int64_t>{11, 9, 7, 5}));
}

//===----------------------------------------------------------------------===//
// Bubble formulas (algorithms.md §1.2-§1.3)
//===----------------------------------------------------------------------===//

TEST(BubbleFormulaTest, GPipeAndOneFOneB) {
  for (int64_t p : {1, 2, 3, 4, 8})
    for (int64_t m = 1; m <= 16; ++m)
      for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
        SimulationResult sim = simulateSchedule(build(kind, p, m));
        ASSERT_FALSE(sim.deadlocked) << sim.deadlockReport;
        EXPECT_NEAR(sim.idleOverBusy, double(p - 1) / m, 1e-12)
            << scheduleKindName(kind) << " p=" << p << " m=" << m;
        EXPECT_NEAR(sim.idleOverMakespan, double(p - 1) / (m + p - 1), 1e-12)
            << scheduleKindName(kind) << " p=" << p << " m=" << m;
        EXPECT_DOUBLE_EQ(sim.makespan, 3.0 * (m + p - 1));
      }
}

TEST(BubbleFormulaTest, OneFOneBPeakActivations) {
  // Rank r holds min(p - r, m) microbatches (algorithms.md §1.3).
  for (int64_t p : {1, 2, 3, 4, 8})
    for (int64_t m = 1; m <= 16; ++m) {
      SimulationResult sim =
          simulateSchedule(build(ScheduleKind::OneFOneB, p, m));
      for (int64_t r = 0; r < p; ++r)
        EXPECT_EQ(sim.peakActivations[r], std::min(p - r, m))
            << "p=" << p << " m=" << m << " r=" << r;
    }
}

TEST(BubbleFormulaTest, Interleaved) {
  // (p-1)/(v·m) for every valid (p, m, v); peak min(2(p-r-1)+(v-1)p+1, v·m).
  for (int64_t p : {1, 2, 3, 4, 8})
    for (int64_t v : {2, 3, 4})
      for (int64_t m = p; m <= 16; m += p) {
        SimulationResult sim =
            simulateSchedule(build(ScheduleKind::Interleaved1F1B, p, m, v));
        ASSERT_FALSE(sim.deadlocked) << sim.deadlockReport;
        EXPECT_NEAR(sim.idleOverBusy, double(p - 1) / (v * m), 1e-12)
            << "p=" << p << " m=" << m << " v=" << v;
        for (int64_t r = 0; r < p; ++r)
          EXPECT_EQ(sim.peakActivations[r],
                    std::min(2 * (p - r - 1) + (v - 1) * p + 1, v * m))
              << "p=" << p << " m=" << m << " v=" << v << " r=" << r;
      }
}

TEST(BubbleFormulaTest, ZBH1) {
  // (p-1)/(3m) with T_F = T_I = T_W (F=1, I=1, W=1, B=2) once m >= p.
  for (int64_t p : {1, 2, 3, 4, 8})
    for (int64_t m = p; m <= 16; ++m) {
      SimulationResult sim = simulateSchedule(build(ScheduleKind::ZBH1, p, m));
      ASSERT_FALSE(sim.deadlocked) << sim.deadlockReport;
      EXPECT_NEAR(sim.idleOverBusy, double(p - 1) / (3 * m), 1e-12)
          << "p=" << p << " m=" << m;
      EXPECT_EQ(sim.peakActivations, std::vector<int64_t>(p, p))
          << "p=" << p << " m=" << m;
    }
}

//===----------------------------------------------------------------------===//
// Timeline, costs, latency
//===----------------------------------------------------------------------===//

TEST(SimulateTest, TimelineOfOneFOneB) {
  SimulationResult sim = simulateSchedule(build(ScheduleKind::OneFOneB, 4, 8));
  ASSERT_EQ(sim.timeline.size(), 4u);
  // Rank 3: 3F0 at [3,4), 3B0 at [4,6); rank 0: 0B0 after 3B0, 2B0, 1B0.
  EXPECT_EQ(sim.timeline[3][0].op, (PipelineOp{Kind::F, 3, 0}));
  EXPECT_DOUBLE_EQ(sim.timeline[3][0].start, 3);
  EXPECT_DOUBLE_EQ(sim.timeline[3][0].end, 4);
  EXPECT_EQ(sim.timeline[3][1].op, (PipelineOp{Kind::B, 3, 0}));
  EXPECT_DOUBLE_EQ(sim.timeline[3][1].end, 6);
  EXPECT_EQ(sim.timeline[0][4].op, (PipelineOp{Kind::B, 0, 0}));
  EXPECT_DOUBLE_EQ(sim.timeline[0][4].start, 10);
  EXPECT_DOUBLE_EQ(sim.timeline[0][4].end, 12);
  EXPECT_DOUBLE_EQ(sim.timeline[0].back().end, sim.makespan);
}

TEST(SimulateTest, PerStageCostsAndLatency) {
  PipelineSchedule schedule = build(ScheduleKind::OneFOneB, 2, 1);
  EXPECT_DOUBLE_EQ(simulateSchedule(schedule).makespan, 6);

  SimulationOptions heavyLast;
  heavyLast.stageCosts = {OpCosts(), OpCosts{2, 4, 2, 2}};
  SimulationResult sim = simulateSchedule(schedule, heavyLast);
  EXPECT_DOUBLE_EQ(sim.makespan, 9); // 0F0 [0,1) 1F0 [1,3) 1B0 [3,7) 0B0 [7,9)
  EXPECT_EQ(sim.busy, (std::vector<double>{3, 6}));

  SimulationOptions latency;
  latency.p2pLatency = 0.5;
  sim = simulateSchedule(schedule, latency);
  EXPECT_DOUBLE_EQ(sim.makespan, 7); // two transfers of 0.5
  EXPECT_DOUBLE_EQ(sim.timeline[1][0].start, 1.5);

  // Stages p-1 and p of ZB-V share a rank: no latency between them.
  SimulationResult zbv =
      simulateSchedule(build(ScheduleKind::ZBV, 2, 1, 2), latency);
  ASSERT_FALSE(zbv.deadlocked);
  EXPECT_EQ(zbv.timeline[1][1].op, (PipelineOp{Kind::F, 2, 0}));
  EXPECT_DOUBLE_EQ(zbv.timeline[1][1].start, zbv.timeline[1][0].end);
}

TEST(SimulateTest, WakeupOnlyForAWaitingReceiver) {
  // p = 2, m = 2, 1F1B: 1F0 waits for 0F0 (woken), 0B0 waits for 1B0
  // (woken); 1F1 is ready when 1B0 ends, its 0F1 having arrived while
  // rank 1 ran: not woken. The latency is given at half the ranks busy and
  // scales with the mean busy fraction b of the result (2b).
  SimulationOptions wake;
  wake.wakeupLatency = 0.5;
  SimulationResult sim =
      simulateSchedule(build(ScheduleKind::OneFOneB, 2, 2), wake);
  ASSERT_FALSE(sim.deadlocked) << sim.deadlockReport;
  double b = (sim.running[0] + sim.running[1]) / (2 * sim.makespan);
  double woken = 0.5 * 2 * b;
  EXPECT_EQ(sim.timeline[1][0].op, (PipelineOp{Kind::F, 1, 0}));
  EXPECT_NEAR(sim.timeline[1][0].start, 1 + woken, 1e-3);
  EXPECT_EQ(sim.timeline[1][2].op, (PipelineOp{Kind::F, 1, 1}));
  EXPECT_DOUBLE_EQ(sim.timeline[1][2].start, sim.timeline[1][1].end);
  EXPECT_EQ(sim.timeline[0][2].op, (PipelineOp{Kind::B, 0, 0}));
  EXPECT_NEAR(sim.timeline[0][2].start, sim.timeline[1][1].end + woken, 1e-3);
  EXPECT_EQ(sim.running, sim.busy);
  // Nothing shared, a wake-up: the same scaling whatever the (unused)
  // speed-up fields say.
  wake.sharing.maxSpeedup = 1.0001;
  wake.sharing.waitingUse = 0.9999;
  SimulationResult nearly =
      simulateSchedule(build(ScheduleKind::OneFOneB, 2, 2), wake);
  EXPECT_NEAR(nearly.makespan, sim.makespan, 1e-3 * sim.makespan);
}

TEST(SimulateTest, FairSpeedsFillTheNodeLightRanksFirst) {
  ProcessorSharing share;
  share.waitingUse = 0, share.maxSpeedup = 2;
  // Capacity 2 ranks' shares: the rank busy 40 % of the time runs at its
  // most (2x, using 0.8), the other gets the remaining 1.2 (1.5x at 80 %).
  std::vector<double> speeds = share.fairSpeeds({0.4, 0.8});
  EXPECT_DOUBLE_EQ(speeds[0], 2.0);
  EXPECT_DOUBLE_EQ(speeds[1], 1.5);
  // Every rank always busy: nothing to share.
  EXPECT_EQ(share.fairSpeeds({1.0, 1.0}), (std::vector<double>{1.0, 1.0}));
  // Pollers that take half a running rank's cores leave less: capacity
  // 2 x 0.5 / (0.5 + 0.5 x 0.5) = 4/3, equal busy fractions share it.
  share.waitingUse = 0.5, share.maxSpeedup = 10;
  speeds = share.fairSpeeds({0.5, 0.5});
  EXPECT_DOUBLE_EQ(speeds[0], 4.0 / 3 / 2 / 0.5);
  EXPECT_DOUBLE_EQ(speeds[1], speeds[0]);
  EXPECT_DOUBLE_EQ(share.wakeupScale(0.5), 1.0);
  EXPECT_DOUBLE_EQ(share.wakeupScale(1.0), 2.0);
  EXPECT_FALSE(ProcessorSharing().shares());
}

TEST(SimulateTest, SharedCoresShortenTheBubbleNotTheWork) {
  // GPipe, p = 4, m = 4, unit costs: a rank idles in the fill and drain;
  // with the cores shared its ops run faster there, but the node cannot
  // do more than every rank running: makespan >= busy.
  PipelineSchedule schedule = build(ScheduleKind::GPipe, 4, 4);
  SimulationResult alone = simulateSchedule(schedule);
  SimulationOptions shared;
  shared.sharing.waitingUse = 0, shared.sharing.maxSpeedup = 4;
  SimulationResult sim = simulateSchedule(schedule, shared);
  ASSERT_FALSE(sim.deadlocked) << sim.deadlockReport;
  EXPECT_LT(sim.makespan, alone.makespan);
  EXPECT_GE(sim.makespan, alone.busy[0] * (1 - 1e-9));
  EXPECT_EQ(sim.busy, alone.busy);
  for (int64_t r = 0; r < 4; ++r)
    EXPECT_LT(sim.running[r], sim.busy[r]) << "rank " << r;
  // Pollers that free nothing: the same as unshared.
  shared.sharing.waitingUse = 1;
  EXPECT_DOUBLE_EQ(simulateSchedule(schedule, shared).makespan, alone.makespan);
}

TEST(SimulateTest, PinnedCoresRunAReplicaAsOneCoreWould) {
  // GPipe, p = 2, m = 4 (F = 1, B = 2: 12 per rank), both ranks pinned to
  // one core that holds 2 of the node's ranks (an op's cost is its time
  // at half a core): alone on the core an op runs 2x, beside the other
  // rank 1x. No wake-up latency: the core never idles once F0 ran, so
  // the makespan is the core's work, 24 at 2x = 12, against 15 unshared.
  PipelineSchedule schedule = build(ScheduleKind::GPipe, 2, 4);
  SimulationResult alone = simulateSchedule(schedule);
  EXPECT_DOUBLE_EQ(alone.makespan, 15);
  SimulationOptions pinned;
  pinned.sharing.coreOf = {0, 0};
  pinned.sharing.ranksPerCore = 2;
  SimulationResult one = simulateSchedule(schedule, pinned);
  ASSERT_FALSE(one.deadlocked) << one.deadlockReport;
  EXPECT_NEAR(one.makespan, 12, 1e-9);
  EXPECT_EQ(one.busy, alone.busy);
  // 0F0 alone (0.5); then 0F1 beside 1F0 (1 each).
  EXPECT_NEAR(one.timeline[0][0].end, 0.5, 1e-12);
  EXPECT_NEAR(one.timeline[1][0].end, 1.5, 1e-12);
  // A second replica in step on the same core halves every rate.
  pinned.sharing.copies = 2;
  EXPECT_NEAR(simulateSchedule(schedule, pinned).makespan, 24, 1e-9);
  // Each rank on its own core that holds one rank: as unshared.
  pinned.sharing.coreOf = {0, 1};
  pinned.sharing.ranksPerCore = 1, pinned.sharing.copies = 1;
  SimulationResult apart = simulateSchedule(schedule, pinned);
  EXPECT_NEAR(apart.makespan, alone.makespan, 1e-9);
  for (int64_t r = 0; r < 2; ++r)
    for (size_t i = 0; i < alone.timeline[r].size(); ++i)
      EXPECT_NEAR(apart.timeline[r][i].start, alone.timeline[r][i].start, 1e-9);
}

TEST(SimulateTest, PinnedWakeupOnlyWhileTheCoreIsBusy) {
  // p = 2, m = 2, GPipe on one core (2 ranks to it): 1F0 waits for 0F0,
  // which rank 0 follows with 0F1 on the same core, so 1F0 is woken late
  // (0.25); so is 0B0 after 1B0, as rank 1 goes on with 1B1. A wake-up
  // never waits past the moment its core goes idle.
  PipelineSchedule schedule = build(ScheduleKind::GPipe, 2, 2);
  SimulationOptions pinned;
  pinned.sharing.coreOf = {0, 0};
  pinned.sharing.ranksPerCore = 2;
  pinned.wakeupLatency = 0.25;
  SimulationResult sim = simulateSchedule(schedule, pinned);
  ASSERT_FALSE(sim.deadlocked) << sim.deadlockReport;
  EXPECT_EQ(sim.timeline[1][0].op, (PipelineOp{Kind::F, 1, 0}));
  EXPECT_NEAR(sim.timeline[1][0].start, 0.5 + 0.25, 1e-12);
  EXPECT_EQ(sim.timeline[0][2].op, (PipelineOp{Kind::B, 0, 0}));
  EXPECT_EQ(sim.timeline[1][2].op, (PipelineOp{Kind::B, 1, 0}));
  EXPECT_NEAR(sim.timeline[0][2].start, sim.timeline[1][2].end + 0.25, 1e-12);
  EXPECT_NEAR(sim.timeline[1][3].start, sim.timeline[1][2].end, 1e-12);
  // A latency longer than the sender's remaining work ends when the core
  // goes idle: rank 0 waits for 1B0 after 0F1, and 1F0 starts then, not
  // 10 after 0F0.
  pinned.wakeupLatency = 10;
  SimulationResult idle = simulateSchedule(schedule, pinned);
  ASSERT_FALSE(idle.deadlocked) << idle.deadlockReport;
  EXPECT_EQ(idle.timeline[0][1].op, (PipelineOp{Kind::F, 0, 1}));
  EXPECT_NEAR(idle.timeline[1][0].start, idle.timeline[0][1].end, 1e-12);
  EXPECT_NEAR(idle.timeline[1][0].start, 1.0, 1e-12);
  // Apart (a core each), nothing else runs on the receiver's core: no
  // latency anywhere.
  pinned.sharing.coreOf = {0, 1};
  pinned.sharing.ranksPerCore = 1;
  SimulationResult apart = simulateSchedule(schedule, pinned);
  EXPECT_NEAR(apart.makespan, simulateSchedule(schedule).makespan, 1e-12);
}

TEST(SimulateTest, SplitBackwardCosts) {
  // W only waits for its own I: with expensive W, ZB-H1 still overlaps.
  SimulationOptions options;
  options.costs = OpCosts{1, 2, 1, 3};
  SimulationResult sim =
      simulateSchedule(build(ScheduleKind::ZBH1, 2, 2), options);
  ASSERT_FALSE(sim.deadlocked);
  EXPECT_EQ(sim.busy, (std::vector<double>{10, 10}));
}

//===----------------------------------------------------------------------===//
// Check B: deadlocks and cycles
//===----------------------------------------------------------------------===//

TEST(CheckBTest, GoldensAreAcyclic) {
  for (const char *text :
       {goldens::kGPipe, goldens::kOneFOneB, goldens::kInterleaved,
        goldens::kLoopedBFS, goldens::kZBH1, goldens::kZBV})
    EXPECT_FALSE(findDependencyCycle(parse(text)).has_value()) << text;
}

// Rank 0 runs 0B0 before 0F1, but 0B0 needs 1B0, which rank 1 runs after 1F1,
// which needs 0F1: a cycle through both ranks (Check A passes).
constexpr const char *kCyclic = "rank0: 0F0 0B0 0F1 0B1\n"
                                "rank1: 1F0 1F1 1B0 1B1\n";

TEST(CheckBTest, CycleIsReportedBySimulatorAndGraph) {
  PipelineSchedule schedule = parse(kCyclic);
  ASSERT_TRUE(validateSchedule(schedule).empty());

  std::optional<DependencyCycle> cycle = findDependencyCycle(schedule);
  ASSERT_TRUE(cycle.has_value());
  EXPECT_EQ(cycle->ops.size(), 4u);
  EXPECT_EQ(cycle->description,
            "0F1 (rank 0 op #2) -> 1F1 (rank 1 op #1) -> 1B0 (rank 1 op #2) "
            "-> 0B0 (rank 0 op #1) -> 0F1 (rank 0 op #2)");

  SimulationResult sim = simulateSchedule(schedule);
  ASSERT_TRUE(sim.deadlocked);
  ASSERT_EQ(sim.blocked.size(), 2u);
  EXPECT_EQ(sim.blocked[0].rank, 0);
  EXPECT_EQ(sim.blocked[0].op, (PipelineOp{Kind::B, 0, 0}));
  EXPECT_EQ(sim.blocked[0].waitsFor, "1B0 (rank 1 op #2), not run");
  EXPECT_EQ(sim.blocked[1].op, (PipelineOp{Kind::F, 1, 1}));
  EXPECT_EQ(sim.blocked[1].waitsFor, "0F1 (rank 0 op #2), not run");
  EXPECT_NE(sim.deadlockReport.find("rank 0 blocked at op #1 0B0"),
            std::string::npos)
      << sim.deadlockReport;
  EXPECT_NE(sim.deadlockReport.find("rank 1 blocked at op #1 1F1"),
            std::string::npos)
      << sim.deadlockReport;
  EXPECT_NE(sim.deadlockReport.find("dependency cycle: "), std::string::npos)
      << sim.deadlockReport;
  // The ops that ran are timed.
  EXPECT_EQ(sim.timeline[0].size(), 1u);
  EXPECT_EQ(sim.timeline[1].size(), 1u);
}

TEST(CheckBTest, TorchOneFOneBIrOffByOne) {
  // algorithms.md §1.4: torch Schedule1F1B._get_pipeline_order() emits
  // F1..F8 for the last rank. Check A and the simulator must both flag it.
  PipelineSchedule schedule = build(ScheduleKind::OneFOneB, 4, 8);
  for (PipelineOp &op : schedule.rankOrders[3])
    ++op.microbatch;
  EXPECT_FALSE(validateSchedule(schedule).empty());
  SimulationResult sim = simulateSchedule(schedule);
  ASSERT_TRUE(sim.deadlocked);
  EXPECT_NE(sim.deadlockReport.find(
                "rank 2 blocked at op #2 2B0, waiting for 3B0/3I0, which "
                "no rank runs"),
            std::string::npos)
      << sim.deadlockReport;
  // Rank 3 then waits for 2F2, which rank 2 runs after the blocked 2B0.
  EXPECT_NE(sim.deadlockReport.find(
                "rank 3 blocked at op #2 3F2, waiting for 2F2 (rank 2 op #3)"),
            std::string::npos)
      << sim.deadlockReport;
}

TEST(CheckBTest, HarmlessSwapStillRuns) {
  // Swapping 1B0 and 1F3 on rank 1 of 1F1B only changes timing (§1.6).
  PipelineSchedule schedule = build(ScheduleKind::OneFOneB, 4, 8);
  std::swap(schedule.rankOrders[1][3], schedule.rankOrders[1][4]);
  ASSERT_EQ(schedule.rankOrders[1][3], (PipelineOp{Kind::F, 1, 3}));
  EXPECT_TRUE(validateSchedule(schedule).empty());
  EXPECT_FALSE(findDependencyCycle(schedule).has_value());
  SimulationResult sim = simulateSchedule(schedule);
  EXPECT_FALSE(sim.deadlocked) << sim.deadlockReport;
  EXPECT_EQ(sim.peakActivations[1], 4);
}

} // namespace
