//===- ScheduleTest.cpp - Pipeline schedule generators and format ---------===//

#include "Goldens.h"

#include "autoshard/Pipeline/Schedule.h"

#include "gtest/gtest.h"

using namespace autoshard::pipeline;
using Kind = PipelineOp::Kind;

namespace {

std::string joined(const std::vector<std::string> &lines) {
  std::string text;
  for (const std::string &line : lines)
    text += line + "\n";
  return text;
}

//===----------------------------------------------------------------------===//
// Golden orders (algorithms.md §1.5, p = 4, m = 8)
//===----------------------------------------------------------------------===//

struct GoldenCase {
  ScheduleKind kind;
  int64_t v;
  const char *text;
};

void PrintTo(const GoldenCase &golden, std::ostream *os) {
  *os << scheduleKindName(golden.kind) << " v=" << golden.v;
}

const GoldenCase kGoldenCases[] = {
    {ScheduleKind::GPipe, 1, goldens::kGPipe},
    {ScheduleKind::OneFOneB, 1, goldens::kOneFOneB},
    {ScheduleKind::Interleaved1F1B, 2, goldens::kInterleaved},
    {ScheduleKind::LoopedBFS, 2, goldens::kLoopedBFS},
    {ScheduleKind::ZBH1, 1, goldens::kZBH1},
    {ScheduleKind::ZBV, 2, goldens::kZBV},
};

class GoldenOrderTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenOrderTest, MatchesReferenceText) {
  const GoldenCase &golden = GetParam();
  OrError<PipelineSchedule> schedule =
      buildSchedule(golden.kind, 4, 8, golden.v);
  ASSERT_TRUE(schedule) << schedule.error();
  EXPECT_EQ(formatSchedule(*schedule), golden.text);
  EXPECT_EQ(schedule->name, scheduleKindName(golden.kind));
  EXPECT_EQ(schedule->numRanks, 4);
  EXPECT_EQ(schedule->numStages, 4 * golden.v);
  EXPECT_EQ(schedule->numMicrobatches, 8);
  EXPECT_EQ(joined(validateSchedule(*schedule)), "");
}

TEST_P(GoldenOrderTest, ParsesBackToTheSameSchedule) {
  const GoldenCase &golden = GetParam();
  OrError<PipelineSchedule> built = buildSchedule(golden.kind, 4, 8, golden.v);
  ASSERT_TRUE(built) << built.error();
  OrError<PipelineSchedule> parsed = parseSchedule(golden.text, "golden");
  ASSERT_TRUE(parsed) << parsed.error();
  EXPECT_EQ(parsed->name, "golden");
  EXPECT_EQ(parsed->numRanks, built->numRanks);
  EXPECT_EQ(parsed->numStages, built->numStages);
  EXPECT_EQ(parsed->numMicrobatches, built->numMicrobatches);
  EXPECT_EQ(parsed->stageToRank, built->stageToRank);
  EXPECT_EQ(parsed->rankOrders, built->rankOrders);
  EXPECT_EQ(formatSchedule(*parsed), golden.text);
}

INSTANTIATE_TEST_SUITE_P(AllKinds, GoldenOrderTest,
                         ::testing::ValuesIn(kGoldenCases),
                         [](const ::testing::TestParamInfo<GoldenCase> &info) {
                           std::string name = scheduleKindName(info.param.kind);
                           std::string id;
                           for (char c : name)
                             id += (c == '-') ? '_' : c;
                           return "k" + id;
                         });

//===----------------------------------------------------------------------===//
// Names, stage maps, small schedules
//===----------------------------------------------------------------------===//

TEST(ScheduleKindTest, NamesRoundTrip) {
  for (ScheduleKind kind :
       {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
        ScheduleKind::Interleaved1F1B, ScheduleKind::LoopedBFS,
        ScheduleKind::ZBH1, ScheduleKind::ZBV}) {
    OrError<ScheduleKind> parsed = parseScheduleKind(scheduleKindName(kind));
    ASSERT_TRUE(parsed) << parsed.error();
    EXPECT_EQ(*parsed, kind);
  }
  EXPECT_STREQ(scheduleKindName(ScheduleKind::GPipe), "gpipe");
  EXPECT_STREQ(scheduleKindName(ScheduleKind::OneFOneB), "1f1b");
  EXPECT_STREQ(scheduleKindName(ScheduleKind::Interleaved1F1B), "interleaved");
  EXPECT_STREQ(scheduleKindName(ScheduleKind::LoopedBFS), "looped-bfs");
  EXPECT_STREQ(scheduleKindName(ScheduleKind::ZBH1), "zb-h1");
  EXPECT_STREQ(scheduleKindName(ScheduleKind::ZBV), "zb-v");
}

TEST(ScheduleKindTest, AliasAndUnknownName) {
  OrError<ScheduleKind> alias = parseScheduleKind("interleaved-1f1b");
  ASSERT_TRUE(alias);
  EXPECT_EQ(*alias, ScheduleKind::Interleaved1F1B);
  OrError<ScheduleKind> bad = parseScheduleKind("zb-h2");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("'zb-h2'"), std::string::npos) << bad.error();
  EXPECT_NE(bad.error().find("1f1b"), std::string::npos) << bad.error();
}

TEST(StageMapTest, LoopAndV) {
  EXPECT_EQ(loopStageToRank(4, 2),
            (std::vector<int64_t>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(loopStageToRank(3, 1), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(vStageToRank(4), (std::vector<int64_t>{0, 1, 2, 3, 3, 2, 1, 0}));
  OrError<PipelineSchedule> zbv = buildSchedule(ScheduleKind::ZBV, 4, 8, 2);
  ASSERT_TRUE(zbv);
  EXPECT_EQ(zbv->stageToRank, vStageToRank(4));
}

TEST(BuildScheduleTest, OneFOneBWithFewerMicrobatchesThanRanks) {
  // Megatron clamps the warmup to m; rank 0 runs all forwards first.
  OrError<PipelineSchedule> schedule =
      buildSchedule(ScheduleKind::OneFOneB, 4, 2);
  ASSERT_TRUE(schedule) << schedule.error();
  EXPECT_EQ(formatSchedule(*schedule), "rank0: 0F0 0F1 0B0 0B1\n"
                                       "rank1: 1F0 1F1 1B0 1B1\n"
                                       "rank2: 2F0 2F1 2B0 2B1\n"
                                       "rank3: 3F0 3B0 3F1 3B1\n");
}

TEST(BuildScheduleTest, ZBVDropsPaddingMicrobatches) {
  // n = max(2p-1, m) = 3 microbatches are generated; mb 2 is dropped.
  OrError<PipelineSchedule> schedule =
      buildSchedule(ScheduleKind::ZBV, 2, 2, 2);
  ASSERT_TRUE(schedule) << schedule.error();
  EXPECT_EQ(formatSchedule(*schedule),
            "rank0: 0F0 0F1 3F0 3I0 3W0 3F1 3I1 3W1 0I0 0W0 0I1 0W1\n"
            "rank1: 1F0 2F0 1F1 2F1 2I0 2W0 1I0 1W0 2I1 2W1 1I1 1W1\n");
  EXPECT_EQ(joined(validateSchedule(*schedule)), "");
}

//===----------------------------------------------------------------------===//
// Invalid parameters
//===----------------------------------------------------------------------===//

struct InvalidCase {
  ScheduleKind kind;
  int64_t p, m, v;
  const char *expected; // a substring of the error
};

const InvalidCase kInvalidCases[] = {
    {ScheduleKind::OneFOneB, 0, 8, 1, "p=0"},
    {ScheduleKind::GPipe, 4, 0, 1, "m=0"},
    {ScheduleKind::LoopedBFS, 4, 8, 0, "v=0"},
    {ScheduleKind::GPipe, 4, 8, 2, "v=2"},
    {ScheduleKind::OneFOneB, 4, 8, 2, "v=2"},
    {ScheduleKind::ZBH1, 4, 8, 3, "v=3"},
    {ScheduleKind::Interleaved1F1B, 4, 8, 1, "v=1"},
    {ScheduleKind::Interleaved1F1B, 4, 2, 2, "m=2"},
    {ScheduleKind::Interleaved1F1B, 4, 6, 2, "m=6"},
    {ScheduleKind::Interleaved1F1B, 4, 10, 3, "m=10"},
    {ScheduleKind::ZBV, 4, 8, 1, "v=1"},
    {ScheduleKind::ZBV, 4, 8, 3, "v=3"},
};

TEST(BuildScheduleTest, InvalidParametersAreNamed) {
  for (const InvalidCase &c : kInvalidCases) {
    OrError<PipelineSchedule> schedule = buildSchedule(c.kind, c.p, c.m, c.v);
    ASSERT_FALSE(schedule) << scheduleKindName(c.kind) << " p=" << c.p
                           << " m=" << c.m << " v=" << c.v;
    EXPECT_NE(schedule.error().find(c.expected), std::string::npos)
        << schedule.error();
    EXPECT_NE(schedule.error().find(scheduleKindName(c.kind)),
              std::string::npos)
        << schedule.error();
  }
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

TEST(ParseScheduleTest, SkipsCommentsFencesAndBlankLines) {
  OrError<PipelineSchedule> schedule = parseSchedule(
      "```\n# a comment\n\nrank1: 1F0 1B0\nrank0:  0F0\t0B0 \n```");
  ASSERT_TRUE(schedule) << schedule.error();
  EXPECT_EQ(schedule->numRanks, 2);
  EXPECT_EQ(schedule->numStages, 2);
  EXPECT_EQ(schedule->numMicrobatches, 1);
  EXPECT_EQ(schedule->stageToRank, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(schedule->rankOrders[1],
            (std::vector<PipelineOp>{{Kind::F, 1, 0}, {Kind::B, 1, 0}}));
  EXPECT_EQ(formatSchedule(*schedule), "rank0: 0F0 0B0\nrank1: 1F0 1B0\n");
}

TEST(ParseScheduleTest, ErrorsNameTheToken) {
  struct {
    const char *text;
    const char *expected;
  } cases[] = {
      {"rank0: 0F0 0X1", "line 1: token '0X1': unknown op kind 'X'"},
      {"rank0: 0F0\nrank1: 1F", "line 2: token '1F': missing microbatch"},
      {"rank0: F0", "token 'F0': expected <stage><F|B|I|W><microbatch>"},
      {"rank0: 0F0x", "token '0F0x': unexpected 'x'"},
      {"rank0: (0F7+7B3)", "token '(0F7+7B3)'"},
      {"rank0: 0F0\nrank0: 0B0", "line 2: rank 0 is listed twice"},
      {"rank0 0F0", "line 1: expected 'rank<N>:'"},
      {"stage0: 0F0", "line 1: expected 'rank<N>:' at the start, got 'stage0"},
      {"rank1: 1F0", "rank 0 is missing"},
      {"# nothing\n", "no 'rank<N>:' lines"},
      {"rank0: 0F99999999", "token '0F99999999': stage or microbatch larger"},
  };
  for (const auto &c : cases) {
    OrError<PipelineSchedule> schedule = parseSchedule(c.text);
    ASSERT_FALSE(schedule) << c.text;
    EXPECT_NE(schedule.error().find(c.expected), std::string::npos)
        << "input: " << c.text << "\nerror: " << schedule.error();
  }
}

//===----------------------------------------------------------------------===//
// Check A
//===----------------------------------------------------------------------===//

/// Parses `text` (which must parse) and returns its Check A messages.
std::string violationsOf(const char *text) {
  OrError<PipelineSchedule> schedule = parseSchedule(text);
  EXPECT_TRUE(schedule) << schedule.error();
  return schedule ? joined(validateSchedule(*schedule)) : "";
}

TEST(ValidateScheduleTest, WellFormed) {
  EXPECT_EQ(violationsOf("rank0: 0F0 0F1 0I0 0W0 0B1\nrank1: 1F0 1B0 1F1 "
                         "1I1 1W1"),
            "");
}

TEST(ValidateScheduleTest, Violations) {
  struct {
    const char *text;
    const char *expected;
  } cases[] = {
      // Counts.
      {"rank0: 0F0 0F0 0B0", "stage 0 mb 0: 2 F ops, expected exactly 1"},
      {"rank0: 0F0 0F1 0B0", "stage 0 mb 1: 0 B and 0 I ops"},
      {"rank0: 0F0 0B0 0I0 0W0", "stage 0 mb 0: 1 B and 1 I ops"},
      {"rank0: 0F0 0I0", "stage 0 mb 0: 1 I and 0 W ops"},
      {"rank0: 0F0 0B0 0W0", "stage 0 mb 0: 0 I and 1 W ops"},
      // Order on the rank.
      {"rank0: 0B0 0F0", "stage 0 mb 0: B (rank 0 op #0) comes before F "
                         "(rank 0 op #1)"},
      {"rank0: 0F0 0W0 0I0", "stage 0 mb 0: W (rank 0 op #1) comes before I "
                             "(rank 0 op #2)"},
      // Single owner (the parser gives stage 1 to the first rank running it).
      {"rank0: 0F0 1F0 0B0\nrank1: 1B0",
       "rank 1 op #0 1B0: stage 1 is owned by rank 0"},
  };
  for (const auto &c : cases) {
    std::string violations = violationsOf(c.text);
    EXPECT_NE(violations.find(c.expected), std::string::npos)
        << "input: " << c.text << "\nviolations:\n"
        << violations;
  }
}

TEST(ValidateScheduleTest, StructuralErrors) {
  OrError<PipelineSchedule> built = buildSchedule(ScheduleKind::OneFOneB, 2, 2);
  ASSERT_TRUE(built);
  PipelineSchedule schedule = *built;
  schedule.rankOrders[1].push_back({Kind::F, 1, 5});
  schedule.rankOrders[0].push_back({Kind::F, 7, 0});
  std::string violations = joined(validateSchedule(schedule));
  EXPECT_NE(violations.find("rank 1 op #4 1F5: microbatch out of range [0, 2)"),
            std::string::npos)
      << violations;
  EXPECT_NE(violations.find("rank 0 op #4 7F0: stage out of range [0, 2)"),
            std::string::npos)
      << violations;

  schedule = *built;
  schedule.stageToRank = {0, 3};
  violations = joined(validateSchedule(schedule));
  EXPECT_NE(violations.find("stage 1 has no owning rank"), std::string::npos)
      << violations;

  schedule = *built;
  schedule.rankOrders.pop_back();
  violations = joined(validateSchedule(schedule));
  EXPECT_NE(violations.find("rankOrders has 1 entries, expected numRanks=2"),
            std::string::npos)
      << violations;
}

} // namespace

TEST(BackwardIsSplit, WholeCutOrMixed) {
  OrError<PipelineSchedule> oneF = buildSchedule(ScheduleKind::OneFOneB, 2, 2);
  OrError<PipelineSchedule> zb = buildSchedule(ScheduleKind::ZBH1, 2, 2);
  ASSERT_TRUE(oneF && zb);
  EXPECT_FALSE(*backwardIsSplit(*oneF));
  EXPECT_TRUE(*backwardIsSplit(*zb));
  OrError<PipelineSchedule> mixed =
      parseSchedule("rank0: 0F0 0F1 0B0 0B1\nrank1: 1F0 1I0 1W0 1F1 1I1 1W1\n");
  ASSERT_TRUE(mixed) << mixed.error();
  OrError<bool> split = backwardIsSplit(*mixed);
  ASSERT_FALSE(split);
  EXPECT_NE(split.error().find("runs 0B0 as a whole backward (B) but 1I0"),
            std::string::npos)
      << split.error();
}

TEST(SplitsBackward, MatchesWhatTheBuilderBuilds) {
  // The kind's property must agree with the ops its builder emits (ZB-V
  // and the interleaved/looped schedules at two stages per rank).
  for (ScheduleKind kind :
       {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
        ScheduleKind::Interleaved1F1B, ScheduleKind::LoopedBFS,
        ScheduleKind::ZBH1, ScheduleKind::ZBV}) {
    int64_t v = kind == ScheduleKind::Interleaved1F1B ||
                        kind == ScheduleKind::LoopedBFS ||
                        kind == ScheduleKind::ZBV
                    ? 2
                    : 1;
    OrError<PipelineSchedule> s = buildSchedule(kind, 2, 4, v);
    ASSERT_TRUE(s) << scheduleKindName(kind) << ": " << s.error();
    OrError<bool> split = backwardIsSplit(*s);
    ASSERT_TRUE(split) << split.error();
    EXPECT_EQ(splitsBackward(kind), *split) << scheduleKindName(kind);
  }
}
