//===- Html.h - A small HTML/SVG writer for the plan reports ----*- C++ -*-===//
//
// The pieces of autoshard's self-contained HTML reports (dist-explain and
// dist-auto-plan with format=html): the page frame with the shared style
// and hover script (python/autoshard/report/style.css, script.js, embedded
// at build time), tables, a timeline of lanes (one per rank) with boxes,
// idle gaps and arrows between lanes, and stacked horizontal bars. Plain
// values in, text out: the reports fill these from their own data
// (ExplainReport.h, Planner.h), so the HTML shows the same numbers as the
// text reports.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_REPORT_HTML_H
#define AUTOSHARD_REPORT_HTML_H

#include "autoshard/Pipeline/Schedule.h"
#include "autoshard/Pipeline/Simulate.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <string>
#include <vector>

namespace autoshard::report {

/// `text` with `&`, `<`, `>`, `"` and `'` replaced by entities.
std::string escape(llvm::StringRef text);

/// Writes the page's start: doctype, `<title>`, the embedded style, `<h1>`
/// with `title` and, if not empty, a subtitle line.
void beginPage(llvm::raw_ostream &os, llvm::StringRef title,
               llvm::StringRef subtitle);
/// Writes the embedded hover script and closes the page.
void endPage(llvm::raw_ostream &os);

/// A table: header cells, then rows of cells (already escaped HTML); the
/// columns in `numeric` are right-aligned.
struct Table {
  std::string cls;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<size_t> numeric;
};
void writeTable(const Table &table, llvm::raw_ostream &os);

/// A legend: (CSS classes of the swatch, e.g. `unit F` or `seg param`;
/// label) pairs, each swatch a small SVG rect styled like the figures.
void writeLegend(
    const std::vector<std::pair<std::string, std::string>> &entries,
    llvm::raw_ostream &os);

/// One box of a timeline lane.
struct TimelineBox {
  size_t lane = 0;
  double start = 0, end = 0;
  /// CSS classes after `unit` (`F`, `B chunk1`, `comm`, ...).
  std::string cls;
  /// Short text drawn inside when it fits (`0F1`); hover text.
  std::string label, title;
  /// The microbatch, for the hover highlight; -1 for none.
  int64_t microbatch = -1;
};

/// A transfer between lanes: from the end of one box to the start of
/// another.
struct TimelineArrow {
  size_t fromLane = 0, toLane = 0;
  double from = 0, to = 0;
  std::string title;
};

/// A timeline: one lane per rank, boxes, and arrows. The gaps of a lane
/// between 0 and `end` where no box runs are drawn as bubbles (`bubble`
/// rects) when `drawBubbles` is set.
struct Timeline {
  /// `id` of the `<svg>` and `data-kind` (`unit`, `flops`, `measured`).
  std::string id, kind;
  std::string caption;
  std::vector<std::string> laneNames;
  std::vector<TimelineBox> boxes;
  std::vector<TimelineArrow> arrows;
  /// The time axis ends here (the makespan); its unit (`units`, `ms`).
  double end = 0;
  std::string unit;
  bool drawBubbles = true;
  /// Width of the drawing area in pixels.
  double width = 480;
};

/// Writes `timeline` as an inline `<svg class="timeline">` in a
/// `<figure>`: a `<g class="lane" data-lane=i>` per lane holding its
/// `rect.unit` boxes and `rect.bubble` gaps, then the `line.p2p` arrows.
void writeTimeline(const Timeline &timeline, llvm::raw_ostream &os);

/// The timeline of a simulated pipeline schedule: one lane per pipeline
/// rank, one box per scheduled unit (F, B, I, W; its stage's chunk on the
/// rank as `chunkN`), and an arrow per cross-rank data dependency (the
/// activation a forward sends to the next stage, the gradient a backward
/// sends to the previous one: the schedule's sends and receives).
Timeline pipelineTimeline(const pipeline::PipelineSchedule &schedule,
                          const pipeline::SimulationResult &simulation,
                          llvm::StringRef id, llvm::StringRef kind,
                          llvm::StringRef caption);

/// One segment of a stacked bar.
struct BarSegment {
  /// CSS class after `seg` (`param`, `compute`, ...) and legend label.
  std::string cls, label;
  double value = 0;
};

/// One stacked bar: label, segments, and a note after the bar.
struct Bar {
  std::string label;
  std::vector<BarSegment> segments;
  std::string note;
};

/// Stacked horizontal bars on a common scale.
struct BarChart {
  std::string id, kind, caption;
  std::vector<Bar> bars;
  /// Formats a value for the hover text and the totals.
  std::function<std::string(double)> format;
  /// A limit drawn as a dashed line (e.g. the device memory); 0 for none.
  double limit = 0;
  std::string limitLabel;
};

/// Writes `chart` as an inline `<svg class="bars">` with a legend: a
/// `<g class="bar">` per bar holding its `rect.seg` segments.
void writeBarChart(const BarChart &chart, llvm::raw_ostream &os);

} // namespace autoshard::report

#endif // AUTOSHARD_REPORT_HTML_H
