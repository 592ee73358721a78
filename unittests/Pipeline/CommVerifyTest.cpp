//===- CommVerifyTest.cpp - Checks C and D, schedule lowering -------------===//

#include "Goldens.h"
#include "ScheduleTestUtil.h"

#include "autoshard/Pipeline/CommVerify.h"
#include "autoshard/Pipeline/Simulate.h"

#include "gtest/gtest.h"

using namespace autoshard::pipeline;
using Kind = PipelineOp::Kind;
using test::build;
using VKind = CommViolation::Kind;

namespace {

std::vector<CommViolation>
lowerAndVerify(const PipelineSchedule &schedule,
               RecvPlacement placement = RecvPlacement::SenderOrder) {
  LowerOptions options;
  options.placement = placement;
  OrError<CommLowering> lowered = lowerScheduleToComm(schedule, options);
  EXPECT_TRUE(lowered) << lowered.error();
  if (!lowered)
    return {};
  return verifyCommunication(lowered->programs, lowered->groups);
}

/// The violations of kind `kind`.
std::vector<CommViolation> ofKind(const std::vector<CommViolation> &all,
                                  VKind kind) {
  std::vector<CommViolation> result;
  for (const CommViolation &violation : all)
    if (violation.kind == kind)
      result.push_back(violation);
  return result;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

//===----------------------------------------------------------------------===//
// Lowering of the §1.5 schedules
//===----------------------------------------------------------------------===//

TEST(LowerTest, GoldensVerifyWithTorchPlacement) {
  for (const char *text :
       {goldens::kGPipe, goldens::kOneFOneB, goldens::kInterleaved,
        goldens::kLoopedBFS, goldens::kZBH1, goldens::kZBV}) {
    OrError<PipelineSchedule> schedule = parseSchedule(text);
    ASSERT_TRUE(schedule) << schedule.error();
    std::vector<CommViolation> violations = lowerAndVerify(*schedule);
    EXPECT_TRUE(violations.empty()) << formatViolations(violations);
  }
}

TEST(LowerTest, OneFOneBEvents) {
  // p=2, m=1: rank 0 runs 0F0, sends act; rank 1 receives, runs 1F0 and
  // 1B0, sends grad; rank 0 receives it before 0B0.
  LowerOptions options;
  options.activationType = "f32[2x3]";
  OrError<CommLowering> lowered =
      lowerScheduleToComm(build(ScheduleKind::OneFOneB, 2, 1), options);
  ASSERT_TRUE(lowered) << lowered.error();
  ASSERT_EQ(lowered->programs.size(), 2u);
  const RankProgram &rank0 = lowered->programs[0];
  const RankProgram &rank1 = lowered->programs[1];
  ASSERT_EQ(rank0.size(), 4u);
  EXPECT_EQ(rank0[0].kind, CommEvent::Kind::Compute);
  EXPECT_EQ(rank0[0].label, "rank 0 op #0 0F0");
  EXPECT_EQ(rank0[1].kind, CommEvent::Kind::Send);
  EXPECT_EQ(rank0[1].peer, 1);
  EXPECT_EQ(rank0[1].signature, "act s0->s1 mb=0 f32[2x3]");
  EXPECT_EQ(rank0[2].kind, CommEvent::Kind::Recv);
  EXPECT_EQ(rank0[2].signature, "grad s1->s0 mb=0");
  EXPECT_EQ(rank0[2].label, "rank 0 recv from rank 1 for rank 0 op #1 0B0");
  EXPECT_EQ(rank0[3].label, "rank 0 op #1 0B0");
  ASSERT_EQ(rank1.size(), 4u);
  EXPECT_EQ(rank1[0].kind, CommEvent::Kind::Recv);
  EXPECT_EQ(rank1[0].peer, 0);
  EXPECT_EQ(rank1[3].kind, CommEvent::Kind::Send);
  EXPECT_EQ(rank1[3].label, "rank 1 op #1 1B0: send to rank 0");
  EXPECT_TRUE(lowered->groups.empty());
}

TEST(LowerTest, TiedEmbeddingAllReduce) {
  LowerOptions options;
  options.tiedEmbeddingAllReduce = true;
  options.tiedEmbeddingGroup = 42;
  OrError<CommLowering> lowered = lowerScheduleToComm(
      build(ScheduleKind::Interleaved1F1B, 4, 8, 2), options);
  ASSERT_TRUE(lowered) << lowered.error();
  // Stage 0 on rank 0, stage 7 on rank 3.
  ASSERT_EQ(lowered->groups.size(), 1u);
  EXPECT_EQ(lowered->groups.at(42), (std::vector<int64_t>{0, 3}));
  for (int64_t r : {0, 3}) {
    const CommEvent &last = lowered->programs[r].back();
    EXPECT_EQ(last.kind, CommEvent::Kind::Collective);
    EXPECT_EQ(last.group, 42);
  }
  EXPECT_EQ(lowered->programs[1].back().kind, CommEvent::Kind::Send);
  EXPECT_TRUE(verifyCommunication(lowered->programs, lowered->groups).empty());

  // ZB-V has stages 0 and 2p-1 on rank 0: summed locally, no collective.
  lowered = lowerScheduleToComm(build(ScheduleKind::ZBV, 4, 8, 2), options);
  ASSERT_TRUE(lowered) << lowered.error();
  EXPECT_TRUE(lowered->groups.empty());
}

TEST(LowerTest, NoMessagesBetweenStagesOnOneRank) {
  // ZB-V stages 3 and 4 are both on rank 3: no act s3->s4, no grad s4->s3.
  OrError<CommLowering> lowered =
      lowerScheduleToComm(build(ScheduleKind::ZBV, 4, 8, 2));
  ASSERT_TRUE(lowered) << lowered.error();
  for (const RankProgram &program : lowered->programs)
    for (const CommEvent &event : program) {
      EXPECT_FALSE(contains(event.signature, "s3->s4")) << event.label;
      EXPECT_FALSE(contains(event.signature, "s4->s3")) << event.label;
    }
}

TEST(LowerTest, MalformedScheduleIsRejected) {
  PipelineSchedule schedule = build(ScheduleKind::OneFOneB, 2, 2);
  schedule.rankOrders[0].pop_back();
  OrError<CommLowering> lowered = lowerScheduleToComm(schedule);
  ASSERT_FALSE(lowered);
  EXPECT_TRUE(contains(lowered.error(), "cannot lower a malformed schedule"))
      << lowered.error();
}

//===----------------------------------------------------------------------===//
// Negative tests of algorithms.md §1.6
//===----------------------------------------------------------------------===//

TEST(CheckCTest, SwappedForwardsOnRankTwo) {
  // 2F0 and 2F1 swapped on rank 2 of 1F1B: with recvs before use, rank 2
  // expects mb 1 first while rank 1 sends mb 0 first (and rank 2 now sends
  // mb 1 first to rank 3, which expects mb 0).
  PipelineSchedule schedule = build(ScheduleKind::OneFOneB, 4, 8);
  std::swap(schedule.rankOrders[2][0], schedule.rankOrders[2][1]);
  ASSERT_EQ(schedule.rankOrders[2][0], (PipelineOp{Kind::F, 2, 1}));
  std::vector<CommViolation> violations =
      lowerAndVerify(schedule, RecvPlacement::BeforeUse);
  std::vector<CommViolation> mismatches =
      ofKind(violations, VKind::MessageMismatch);
  ASSERT_EQ(mismatches.size(), 2u) << formatViolations(violations);
  EXPECT_EQ(mismatches[0].message,
            "p2p rank 1 -> rank 2, message #0: rank 1 sends 'act s1->s2 "
            "mb=0' (event #2, rank 1 op #0 1F0: send to rank 2) but rank 2 "
            "receives 'act s1->s2 mb=1' (event #0, rank 2 recv from rank 1 "
            "for rank 2 op #0 2F1)");
  EXPECT_TRUE(contains(mismatches[1].message,
                       "p2p rank 2 -> rank 3, message #0: rank 2 sends 'act "
                       "s2->s3 mb=1'"))
      << mismatches[1].message;

  // torch-style placement posts the recvs in rank 1's send order, so the
  // same compute order verifies: the swap only changes timing there.
  violations = lowerAndVerify(schedule, RecvPlacement::SenderOrder);
  EXPECT_TRUE(violations.empty()) << formatViolations(violations);
}

TEST(CheckCTest, HarmlessSwapIsAccepted) {
  // 1B0 and 1F3 swapped on rank 1 of 1F1B is valid (§1.6): both lowerings.
  PipelineSchedule schedule = build(ScheduleKind::OneFOneB, 4, 8);
  std::swap(schedule.rankOrders[1][3], schedule.rankOrders[1][4]);
  ASSERT_EQ(schedule.rankOrders[1][3], (PipelineOp{Kind::F, 1, 3}));
  for (RecvPlacement placement :
       {RecvPlacement::SenderOrder, RecvPlacement::BeforeUse}) {
    std::vector<CommViolation> violations = lowerAndVerify(schedule, placement);
    EXPECT_TRUE(violations.empty()) << formatViolations(violations);
  }
}

TEST(CheckCTest, NaiveLoweringOfZBVFails) {
  // §1.6: pair (2 -> 3), message #4: rank 2 sends act(stage 3, mb 4) while
  // rank 3 expects grad(stage 4, mb 0).
  std::vector<CommViolation> violations = lowerAndVerify(
      build(ScheduleKind::ZBV, 4, 8, 2), RecvPlacement::BeforeUse);
  std::vector<CommViolation> mismatches =
      ofKind(violations, VKind::MessageMismatch);
  ASSERT_FALSE(mismatches.empty()) << formatViolations(violations);
  bool found = false;
  for (const CommViolation &violation : mismatches)
    if (contains(violation.message, "p2p rank 2 -> rank 3, message #4: rank 2 "
                                    "sends 'act s2->s3 mb=4'") &&
        contains(violation.message, "rank 3 receives 'grad s5->s4 mb=0'"))
      found = true;
  EXPECT_TRUE(found) << formatViolations(violations);
  // The torch-style lowering of the same schedule is clean.
  violations = lowerAndVerify(build(ScheduleKind::ZBV, 4, 8, 2));
  EXPECT_TRUE(violations.empty()) << formatViolations(violations);
}

TEST(CheckCTest, TorchOneFOneBIrOffByOneFails) {
  // §1.4/§1.6: the last rank running F1..F8 gives a FIFO mismatch and a
  // deadlock. The schedule fails Check A, so build its programs by hand
  // from a lowering of the correct one with rank 3's ops renumbered.
  PipelineSchedule schedule = build(ScheduleKind::OneFOneB, 4, 8);
  LowerOptions naive;
  naive.placement = RecvPlacement::BeforeUse;
  OrError<CommLowering> lowered = lowerScheduleToComm(schedule, naive);
  ASSERT_TRUE(lowered);
  for (CommEvent &event : lowered->programs[3]) {
    size_t at = event.signature.find("mb=");
    if (at != std::string::npos)
      event.signature =
          event.signature.substr(0, at + 3) +
          std::to_string(std::stoi(event.signature.substr(at + 3)) + 1);
  }
  std::vector<CommViolation> violations =
      verifyCommunication(lowered->programs, lowered->groups);
  std::vector<CommViolation> mismatches =
      ofKind(violations, VKind::MessageMismatch);
  ASSERT_EQ(mismatches.size(), 2u) << formatViolations(violations);
  EXPECT_TRUE(contains(mismatches[0].message,
                       "p2p rank 2 -> rank 3, message #0: rank 2 sends "
                       "'act s2->s3 mb=0'"))
      << mismatches[0].message;
}

TEST(CheckDTest, DependencyCycleDeadlocks) {
  // Check A passes but the schedule cannot run (see SimulateTest).
  OrError<PipelineSchedule> schedule =
      parseSchedule("rank0: 0F0 0B0 0F1 0B1\nrank1: 1F0 1F1 1B0 1B1\n");
  ASSERT_TRUE(schedule);
  // torch-style placement cannot place the receives.
  OrError<CommLowering> torch = lowerScheduleToComm(*schedule);
  ASSERT_FALSE(torch);
  EXPECT_TRUE(contains(torch.error(), "blocked at rank 0 op #1 0B0, rank 1 "
                                      "op #1 1F1"))
      << torch.error();
  // Recvs before use: messages match, but the run deadlocks.
  std::vector<CommViolation> violations =
      lowerAndVerify(*schedule, RecvPlacement::BeforeUse);
  ASSERT_EQ(violations.size(), 1u) << formatViolations(violations);
  EXPECT_EQ(violations[0].kind, VKind::Deadlock);
  EXPECT_EQ(violations[0].message,
            "deadlock: rank 0 blocked at recv from rank 1 'grad s1->s0 mb=0' "
            "(event #2, rank 0 recv from rank 1 for rank 0 op #1 0B0); rank 1 "
            "blocked at recv from rank 0 'act s0->s1 mb=1' (event #2, rank 1 "
            "recv from rank 0 for rank 1 op #1 1F1); wait-for cycle: rank 0 "
            "-> rank 1 -> rank 0");
}

//===----------------------------------------------------------------------===//
// Hand-written programs
//===----------------------------------------------------------------------===//

TEST(CheckCTest, CollectiveOrderDiffersWithinGroup) {
  CommGroups groups = {{7, {0, 1}}};
  std::vector<RankProgram> programs = {
      {CommEvent::collective(7, "all_reduce sum f32[4]", "grads a"),
       CommEvent::collective(7, "all_gather f32[8]", "params b")},
      {CommEvent::collective(7, "all_gather f32[8]", "params b"),
       CommEvent::collective(7, "all_reduce sum f32[4]", "grads a")},
  };
  std::vector<CommViolation> violations = verifyCommunication(programs, groups);
  ASSERT_EQ(violations.size(), 1u) << formatViolations(violations);
  EXPECT_EQ(violations[0].kind, VKind::CollectiveMismatch);
  EXPECT_EQ(violations[0].message,
            "group 7 (ranks 0, 1), collective #0: rank 0 enters 'all_reduce "
            "sum f32[4]' (event #0, grads a) but rank 1 enters 'all_gather "
            "f32[8]' (event #0, params b)");
}

TEST(CheckCTest, CollectiveCountDiffers) {
  CommGroups groups = {{0, {0, 1, 2}}};
  std::vector<RankProgram> programs = {
      {CommEvent::collective(0, "barrier"),
       CommEvent::collective(0, "barrier")},
      {CommEvent::collective(0, "barrier"),
       CommEvent::collective(0, "barrier")},
      {CommEvent::collective(0, "barrier")},
  };
  std::vector<CommViolation> violations = verifyCommunication(programs, groups);
  ASSERT_EQ(ofKind(violations, VKind::CollectiveMismatch).size(), 1u)
      << formatViolations(violations);
  EXPECT_EQ(violations[0].message,
            "group 0 (ranks 0, 1, 2): rank 0 enters 2 collectives but rank 2 "
            "enters 1; first unmatched: #1 'barrier' (event #1)");
  // Ranks 0 and 1 wait in the second barrier for rank 2, which finished.
  std::vector<CommViolation> deadlocks = ofKind(violations, VKind::Deadlock);
  ASSERT_EQ(deadlocks.size(), 1u);
  EXPECT_TRUE(contains(deadlocks[0].message, "waiting for ranks 2"))
      << deadlocks[0].message;
  EXPECT_TRUE(contains(deadlocks[0].message, "no wait-for cycle"))
      << deadlocks[0].message;
}

TEST(CheckDTest, CrossGroupCollectiveOrderDeadlocks) {
  // Each group's sequence matches, but ranks enter the groups in opposite
  // orders.
  CommGroups groups = {{1, {0, 1}}, {2, {0, 1}}};
  std::vector<RankProgram> programs = {
      {CommEvent::collective(1, "x"), CommEvent::collective(2, "y")},
      {CommEvent::collective(2, "y"), CommEvent::collective(1, "x")},
  };
  std::vector<CommViolation> violations = verifyCommunication(programs, groups);
  ASSERT_EQ(violations.size(), 1u) << formatViolations(violations);
  EXPECT_EQ(violations[0].kind, VKind::Deadlock);
  EXPECT_TRUE(contains(violations[0].message,
                       "rank 0 blocked at collective of group 1 (ranks 0, 1), "
                       "waiting for ranks 1 'x'"))
      << violations[0].message;
  EXPECT_TRUE(contains(violations[0].message,
                       "wait-for cycle: rank 0 -> rank 1 -> rank 0"))
      << violations[0].message;
}

TEST(CheckDTest, RecvRecvDeadlockButSendsAreBuffered) {
  // Both ranks receive first: deadlock.
  std::vector<RankProgram> programs = {
      {CommEvent::recv(1, "a"), CommEvent::send(1, "b")},
      {CommEvent::recv(0, "b"), CommEvent::send(0, "a")},
  };
  std::vector<CommViolation> violations = verifyCommunication(programs, {});
  ASSERT_EQ(violations.size(), 1u) << formatViolations(violations);
  EXPECT_EQ(violations[0].kind, VKind::Deadlock);
  // Both send first: fine, sends do not block.
  programs = {
      {CommEvent::send(1, "b"), CommEvent::recv(1, "a")},
      {CommEvent::send(0, "a"), CommEvent::recv(0, "b")},
  };
  violations = verifyCommunication(programs, {});
  EXPECT_TRUE(violations.empty()) << formatViolations(violations);
}

TEST(CheckCTest, MessageCountDiffers) {
  std::vector<RankProgram> programs = {
      {CommEvent::send(1, "m0", "first"), CommEvent::send(1, "m1", "second")},
      {CommEvent::recv(0, "m0"), CommEvent::compute("work")},
  };
  std::vector<CommViolation> violations = verifyCommunication(programs, {});
  ASSERT_EQ(violations.size(), 1u) << formatViolations(violations);
  EXPECT_EQ(violations[0].kind, VKind::MessageCount);
  EXPECT_EQ(violations[0].message,
            "p2p rank 0 -> rank 1: rank 0 sends 2 messages but rank 1 "
            "receives 1; first unmatched: send #1 'm1' (event #1, second)");

  // A recv nobody sends: count mismatch and a deadlock on a finished rank.
  programs = {{CommEvent::compute("idle")}, {CommEvent::recv(0, "m0")}};
  violations = verifyCommunication(programs, {});
  ASSERT_EQ(violations.size(), 2u) << formatViolations(violations);
  EXPECT_EQ(violations[0].kind, VKind::MessageCount);
  EXPECT_EQ(violations[1].kind, VKind::Deadlock);
  EXPECT_TRUE(contains(violations[1].message, "rank 1 blocked at recv from "
                                              "rank 0 'm0' (event #0)"))
      << violations[1].message;
}

TEST(CheckCTest, MalformedPrograms) {
  CommGroups groups = {{0, {0, 1}}, {1, {0, 5}}};
  std::vector<RankProgram> programs = {
      {CommEvent::send(3, "x", "to nowhere"), CommEvent::recv(0, "y")},
      {CommEvent::collective(9, "z")},
      {CommEvent::collective(0, "z")},
  };
  std::vector<CommViolation> violations = verifyCommunication(programs, groups);
  std::string text = formatViolations(violations);
  EXPECT_EQ(ofKind(violations, VKind::Malformed).size(), violations.size());
  EXPECT_TRUE(contains(text, "group 1 (ranks 0, 5): member 5 is not a rank "
                             "in [0, 3)"))
      << text;
  EXPECT_TRUE(contains(text, "rank 0 event #0 (to nowhere): peer 3 is not a "
                             "rank in [0, 3)"))
      << text;
  EXPECT_TRUE(contains(text, "rank 0 event #1: receives from itself")) << text;
  EXPECT_TRUE(contains(text, "rank 1 event #0: unknown group 9")) << text;
  EXPECT_TRUE(contains(text, "rank 2 event #0: rank 2 enters a collective of "
                             "group 0 (ranks 0, 1), of which it is not a "
                             "member"))
      << text;
}

} // namespace

TEST(CheckCTest, RankNamerNamesTheRanksAProgramStandsFor) {
  // A caller that checks a subset of the world (dist-verify-comm, one rank
  // per class of symmetric ranks) names each program's world rank.
  std::vector<RankProgram> programs = {
      {CommEvent::send(1, "m0")},
      {CommEvent::recv(0, "m1"), CommEvent::collective(0, "c")},
  };
  CommGroups groups = {{0, {1}}};
  RankNamer name = [](int64_t index) { return std::to_string(index * 8); };
  std::vector<CommViolation> violations =
      verifyCommunication(programs, groups, name);
  ASSERT_EQ(violations.size(), 1u) << formatViolations(violations);
  EXPECT_EQ(violations[0].message,
            "p2p rank 0 -> rank 8, message #0: rank 0 sends 'm0' (event #0) "
            "but rank 8 receives 'm1' (event #0)");
  // Deadlock messages too.
  programs = {{CommEvent::recv(1, "a")}, {CommEvent::recv(0, "a")}};
  violations = verifyCommunication(programs, {}, name);
  std::string text = formatViolations(violations);
  EXPECT_EQ(ofKind(violations, VKind::Deadlock).size(), 1u) << text;
  EXPECT_TRUE(contains(text, "wait-for cycle: rank 0 -> rank 8 -> rank 0"))
      << text;
}
