//===- HtmlTest.cpp - The HTML/SVG writer of the plan reports -------------===//

#include "autoshard/Report/Html.h"

#include "autoshard/Pipeline/Schedule.h"
#include "autoshard/Pipeline/Simulate.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace autoshard;
using namespace autoshard::report;

namespace {

size_t count(llvm::StringRef text, llvm::StringRef needle) {
  return text.count(needle);
}

pipeline::PipelineSchedule build(pipeline::ScheduleKind kind, int64_t p,
                                 int64_t m, int64_t v = 1) {
  auto s = pipeline::buildSchedule(kind, p, m, v);
  EXPECT_TRUE(static_cast<bool>(s));
  return *s;
}

TEST(Html, Escape) {
  EXPECT_EQ(escape("a<b & \"c\" > 'd'"),
            "a&lt;b &amp; &quot;c&quot; &gt; &#39;d&#39;");
  EXPECT_EQ(escape(""), "");
}

// 1F1B, p = 4, m = 8: a box per unit, an arrow per cross-rank dependency
// (F of stages 1..3 and B of stages 0..2, per microbatch), the simulated
// times on the boxes.
TEST(Html, PipelineTimeline1F1B) {
  pipeline::PipelineSchedule s = build(pipeline::ScheduleKind::OneFOneB, 4, 8);
  pipeline::SimulationResult sim = pipeline::simulateSchedule(s);
  Timeline t = pipelineTimeline(s, sim, "tl", "unit", "caption");
  EXPECT_EQ(t.laneNames.size(), 4u);
  EXPECT_EQ(t.laneNames[3], "pp rank 3");
  EXPECT_EQ(t.boxes.size(), 4u * 8 * 2);
  EXPECT_EQ(t.arrows.size(), 2u * 3 * 8);
  EXPECT_DOUBLE_EQ(t.end, sim.makespan);
  // Rank 0's first op is 0F0 at [0, 1]; 1F0 on rank 1 receives it at 1.
  EXPECT_EQ(t.boxes.front().label, "0F0");
  EXPECT_EQ(t.boxes.front().cls, "F");
  EXPECT_DOUBLE_EQ(t.boxes.front().end, 1);
  auto first = llvm::find_if(t.arrows, [](const TimelineArrow &a) {
    return a.title == "activation of microbatch 0: 0F0 on rank 0 -> 1F0 on "
                      "rank 1";
  });
  ASSERT_NE(first, t.arrows.end());
  EXPECT_EQ(first->fromLane, 0u);
  EXPECT_EQ(first->toLane, 1u);
  EXPECT_DOUBLE_EQ(first->from, 1);
  EXPECT_DOUBLE_EQ(first->to, 1);
  std::string html;
  llvm::raw_string_ostream os(html);
  writeTimeline(t, os);
  EXPECT_EQ(count(html, "<g class=\"lane\""), 4u);
  EXPECT_EQ(count(html, "<rect class=\"unit "), 64u);
  EXPECT_EQ(count(html, "<line class=\"p2p\""), 48u);
  // Rank 3 waits 3 units for its first forward: a bubble from 0 to 3.
  EXPECT_NE(html.find("<title>idle 0.00 to 3.00 time units</title>"),
            std::string::npos);
}

// Interleaved (v = 2): a rank's second chunk is marked; ZB-H1: I and W
// boxes, gradients flow from I.
TEST(Html, PipelineTimelineChunksAndSplitBackward) {
  pipeline::PipelineSchedule il =
      build(pipeline::ScheduleKind::Interleaved1F1B, 2, 2, 2);
  Timeline t =
      pipelineTimeline(il, pipeline::simulateSchedule(il), "a", "unit", "");
  size_t chunk1 = 0;
  for (const TimelineBox &b : t.boxes)
    chunk1 += llvm::StringRef(b.cls).ends_with(" chunk1");
  EXPECT_EQ(chunk1, 8u); // stages 2, 3 x 2 microbatches x F, B
  EXPECT_EQ(t.arrows.size(), 12u);

  pipeline::PipelineSchedule zb = build(pipeline::ScheduleKind::ZBH1, 2, 2);
  Timeline z =
      pipelineTimeline(zb, pipeline::simulateSchedule(zb), "z", "unit", "");
  EXPECT_EQ(z.boxes.size(), 2u * 2 * 3);
  EXPECT_EQ(z.arrows.size(), 4u);
  for (const TimelineArrow &a : z.arrows) {
    if (a.toLane == 0) {
      EXPECT_NE(a.title.find("1I"), std::string::npos) << a.title;
    }
  }
}

TEST(Html, BarChartSkipsEmptySegmentsAndDrawsTheLimit) {
  BarChart chart;
  chart.id = "m";
  chart.kind = "memory";
  chart.format = [](double v) { return std::to_string(int(v)); };
  chart.limit = 100;
  chart.limitLabel = "HBM";
  chart.bars.push_back(
      {"a", {{"param", "params", 30}, {"comm", "comm", 0}}, "note"});
  chart.bars.push_back(
      {"b<", {{"param", "params", 50}, {"act", "act", 20}}, ""});
  std::string html;
  llvm::raw_string_ostream os(html);
  writeBarChart(chart, os);
  EXPECT_EQ(count(html, "<g class=\"bar\">"), 2u);
  // Drawn segments (the legend's swatches have no position).
  EXPECT_EQ(count(html, "<rect class=\"seg "), 6u);
  EXPECT_EQ(count(html, "\" x=\""), 3u);
  // The legend lists every class once, the empty one included.
  EXPECT_EQ(count(html, "<rect class=\"seg param\" width"), 1u);
  EXPECT_EQ(count(html, "<rect class=\"seg comm\" width"), 1u);
  EXPECT_NE(html.find(">30 (note)</text>"), std::string::npos);
  EXPECT_NE(html.find(">b&lt;</text>"), std::string::npos);
  EXPECT_NE(html.find("<line class=\"limit\""), std::string::npos);
}

TEST(Html, PageIsSelfContained) {
  std::string html;
  llvm::raw_string_ostream os(html);
  beginPage(os, "t<1>", "sub");
  endPage(os);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<title>t&lt;1&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("svg .unit.F {"), std::string::npos);    // the style
  EXPECT_NE(html.find("data-drawn-units"), std::string::npos); // the script
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
}

} // namespace
