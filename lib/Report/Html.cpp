//===- Html.cpp - A small HTML/SVG writer for the plan reports ------------===//

#include "autoshard/Report/Html.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

using namespace autoshard;
using namespace autoshard::report;

namespace {
// Generated from python/autoshard/report/style.css and script.js.
#include "ReportAssets.inc"
} // namespace

std::string report::escape(llvm::StringRef text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

void report::beginPage(llvm::raw_ostream &os, llvm::StringRef title,
                       llvm::StringRef subtitle) {
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
        "charset=\"utf-8\">\n<title>"
     << escape(title) << "</title>\n<style>\n"
     << kStyleCss << "</style>\n</head>\n<body>\n<h1>" << escape(title)
     << "</h1>\n";
  if (!subtitle.empty())
    os << "<p class=\"sub\">" << escape(subtitle) << "</p>\n";
}

void report::endPage(llvm::raw_ostream &os) {
  os << "<script>\n" << kScriptJs << "</script>\n</body>\n</html>\n";
}

void report::writeTable(const Table &table, llvm::raw_ostream &os) {
  os << "<table";
  if (!table.cls.empty())
    os << " class=\"" << table.cls << "\"";
  os << ">\n<tr>";
  for (const std::string &h : table.header)
    os << "<th>" << h << "</th>";
  os << "</tr>\n";
  for (const auto &row : table.rows) {
    os << "<tr>";
    for (auto [i, cell] : llvm::enumerate(row))
      os << (llvm::is_contained(table.numeric, i) ? "<td class=\"num\">"
                                                  : "<td>")
         << cell << "</td>";
    os << "</tr>\n";
  }
  os << "</table>\n";
}

void report::writeLegend(
    const std::vector<std::pair<std::string, std::string>> &entries,
    llvm::raw_ostream &os) {
  os << "<div class=\"legend\">";
  for (const auto &[cls, label] : entries)
    os << "<span><svg width=\"11\" height=\"11\"><rect class=\"" << cls
       << "\" width=\"11\" height=\"11\"/></svg> " << escape(label)
       << "</span>";
  os << "</div>\n";
}

namespace {
constexpr double kLaneHeight = 24, kLaneGap = 6, kLeft = 74, kTop = 6;
constexpr double kAxis = 24;

double laneTop(size_t lane) { return kTop + lane * (kLaneHeight + kLaneGap); }

/// A round step for the time axis: about six ticks.
double tickStep(double end) {
  if (end <= 0)
    return 1;
  double raw = end / 6, mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw)
      return m * mag;
  return 10 * mag;
}

std::string num(double v) { return llvm::formatv("{0:F2}", v).str(); }
} // namespace

void report::writeTimeline(const Timeline &t, llvm::raw_ostream &os) {
  double end = t.end > 0 ? t.end : 1;
  double scale = t.width / end;
  double height = laneTop(t.laneNames.size()) + kAxis;
  double width = kLeft + t.width + 24;
  auto x = [&](double time) { return kLeft + time * scale; };
  // As wide as its drawing, so that timelines sit side by side.
  os << "<figure style=\"width:" << num(width) << "px\">\n<figcaption>"
     << escape(t.caption) << "</figcaption>\n";
  os << llvm::formatv("<svg class=\"timeline\" id=\"{0}\" data-kind=\"{1}\" "
                      "data-lanes=\"{2}\" data-units=\"{3}\" width=\"{4}\" "
                      "height=\"{5}\" viewBox=\"0 0 {4} {5}\" "
                      "xmlns=\"http://www.w3.org/2000/svg\">\n",
                      t.id, t.kind, t.laneNames.size(), t.boxes.size(),
                      num(width), num(height));
  os << "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" "
        "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
        "<rect width=\"6\" height=\"6\" fill=\"#f3f3f3\"/>"
        "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#c9c9c9\" "
        "stroke-width=\"3\"/></pattern>"
        "<marker id=\"arrow\" viewBox=\"0 0 6 6\" refX=\"6\" refY=\"3\" "
        "markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\">"
        "<path d=\"M0,0 L6,3 L0,6 z\" fill=\"#333\"/></marker></defs>\n";
  for (auto [lane, name] : llvm::enumerate(t.laneNames)) {
    double y = laneTop(lane);
    os << llvm::formatv("<g class=\"lane\" data-lane=\"{0}\">\n", lane);
    os << llvm::formatv("<text class=\"lane-name\" x=\"4\" y=\"{0}\">{1}"
                        "</text>\n",
                        num(y + kLaneHeight / 2 + 4), escape(name));
    os << llvm::formatv("<rect class=\"lane-bg\" x=\"{0}\" y=\"{1}\" "
                        "width=\"{2}\" height=\"{3}\"/>\n",
                        num(kLeft), num(y), num(t.width), num(kLaneHeight));
    // Boxes of this lane in time order; the gaps between them are bubbles.
    std::vector<const TimelineBox *> boxes;
    for (const TimelineBox &b : t.boxes)
      if (b.lane == lane)
        boxes.push_back(&b);
    llvm::sort(boxes, [](const TimelineBox *a, const TimelineBox *b) {
      return a->start < b->start;
    });
    if (t.drawBubbles) {
      double cursor = 0;
      auto bubble = [&](double from, double to) {
        if (to - from <= end * 1e-6)
          return;
        os << llvm::formatv("<rect class=\"bubble\" x=\"{0}\" y=\"{1}\" "
                            "width=\"{2}\" height=\"{3}\"><title>idle "
                            "{4} to {5} {6}</title></rect>\n",
                            num(x(from)), num(y), num((to - from) * scale),
                            num(kLaneHeight), num(from), num(to), t.unit);
      };
      for (const TimelineBox *b : boxes) {
        bubble(cursor, b->start);
        cursor = std::max(cursor, b->end);
      }
      bubble(cursor, end);
    }
    for (const TimelineBox *b : boxes) {
      double w = std::max((b->end - b->start) * scale, 0.5);
      os << llvm::formatv("<rect class=\"unit {0}\" x=\"{1}\" y=\"{2}\" "
                          "width=\"{3}\" height=\"{4}\"",
                          b->cls, num(x(b->start)), num(y), num(w),
                          num(kLaneHeight));
      if (b->microbatch >= 0)
        os << " data-mb=\"" << b->microbatch << "\"";
      if (!b->label.empty())
        os << " data-op=\"" << escape(b->label) << "\"";
      os << "><title>" << escape(b->title) << "</title></rect>\n";
      if (!b->label.empty() && w >= 7.0 * b->label.size())
        os << llvm::formatv("<text class=\"unit-label\" x=\"{0}\" "
                            "y=\"{1}\" text-anchor=\"middle\">{2}</text>\n",
                            num(x(b->start) + w / 2),
                            num(y + kLaneHeight / 2 + 4), escape(b->label));
    }
    os << "</g>\n";
  }
  // Transfers between lanes.
  for (const TimelineArrow &a : t.arrows) {
    double y1 =
        laneTop(a.fromLane) + (a.toLane > a.fromLane ? kLaneHeight - 2 : 2);
    double y2 =
        laneTop(a.toLane) + (a.toLane > a.fromLane ? 2 : kLaneHeight - 2);
    os << llvm::formatv("<line class=\"p2p\" x1=\"{0}\" y1=\"{1}\" "
                        "x2=\"{2}\" y2=\"{3}\" marker-end=\"url(#arrow)\">"
                        "<title>{4}</title></line>\n",
                        num(x(a.from)), num(y1), num(x(a.to)), num(y2),
                        escape(a.title));
  }
  // Time axis.
  double axisY = laneTop(t.laneNames.size());
  os << llvm::formatv("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" "
                      "y2=\"{1}\"/>\n",
                      num(kLeft), num(axisY), num(kLeft + t.width));
  double step = tickStep(end);
  for (double tick = 0; tick <= end * (1 + 1e-9); tick += step)
    os << llvm::formatv("<text class=\"tick\" x=\"{0}\" y=\"{1}\" "
                        "text-anchor=\"middle\">{2}</text>\n",
                        num(x(tick)), num(axisY + 14),
                        llvm::formatv("{0}", tick).str());
  os << llvm::formatv("<text class=\"tick\" x=\"{0}\" y=\"{1}\">{2}</text>\n",
                      num(4), num(axisY + 14), escape(t.unit));
  os << "</svg>\n</figure>\n";
}

Timeline report::pipelineTimeline(const pipeline::PipelineSchedule &schedule,
                                  const pipeline::SimulationResult &sim,
                                  llvm::StringRef id, llvm::StringRef kind,
                                  llvm::StringRef caption) {
  using Kind = pipeline::PipelineOp::Kind;
  Timeline t;
  t.id = id.str();
  t.kind = kind.str();
  t.caption = caption.str();
  t.end = sim.makespan;
  t.unit = "time units";
  for (int64_t r = 0; r < schedule.numRanks; ++r)
    t.laneNames.push_back("pp rank " + std::to_string(r));
  // chunk[s]: how many of rank(s)'s stages come before s (its model chunk).
  std::vector<int64_t> chunk(schedule.numStages, 0);
  for (int64_t s = 0; s < schedule.numStages; ++s)
    for (int64_t o = 0; o < s; ++o)
      if (schedule.stageToRank[o] == schedule.stageToRank[s])
        ++chunk[s];
  // Where each op ran: (letter, stage, microbatch) -> (rank, op).
  std::map<std::tuple<char, int64_t, int64_t>,
           std::pair<size_t, const pipeline::TimedOp *>>
      ran;
  auto name = [](Kind k) {
    switch (k) {
    case Kind::F:
      return "forward";
    case Kind::B:
      return "backward";
    case Kind::I:
      return "input gradient";
    case Kind::W:
      return "weight gradient";
    }
    return "?";
  };
  for (auto [rank, ops] : llvm::enumerate(sim.timeline))
    for (const pipeline::TimedOp &op : ops) {
      ran[{pipeline::opKindLetter(op.op.kind), op.op.stage, op.op.microbatch}] =
          {rank, &op};
      TimelineBox b;
      b.lane = rank;
      b.start = op.start;
      b.end = op.end;
      b.cls = std::string(1, pipeline::opKindLetter(op.op.kind));
      if (op.op.stage < schedule.numStages && chunk[op.op.stage] > 0)
        b.cls +=
            " chunk" + std::to_string(std::min<int64_t>(chunk[op.op.stage], 3));
      b.label = pipeline::formatOp(op.op);
      b.microbatch = op.op.microbatch;
      b.title = llvm::formatv("{0}: {1} of stage {2}, microbatch {3}, "
                              "{4:F2} to {5:F2}",
                              b.label, name(op.op.kind), op.op.stage,
                              op.op.microbatch, op.start, op.end)
                    .str();
      t.boxes.push_back(std::move(b));
    }
  // The sends and receives: each cross-rank data dependency.
  auto find = [&](char letter, int64_t stage, int64_t mb)
      -> std::optional<std::pair<size_t, const pipeline::TimedOp *>> {
    auto it = ran.find({letter, stage, mb});
    if (it == ran.end())
      return std::nullopt;
    return it->second;
  };
  for (auto [rank, ops] : llvm::enumerate(sim.timeline))
    for (const pipeline::TimedOp &op : ops) {
      int64_t s = op.op.stage, j = op.op.microbatch;
      std::optional<std::pair<size_t, const pipeline::TimedOp *>> pred;
      const char *what = "";
      if (op.op.kind == Kind::F && s > 0) {
        pred = find('F', s - 1, j);
        what = "activation";
      } else if ((op.op.kind == Kind::B || op.op.kind == Kind::I) &&
                 s + 1 < schedule.numStages) {
        pred = find('B', s + 1, j);
        if (!pred)
          pred = find('I', s + 1, j);
        what = "gradient";
      }
      if (!pred || pred->first == rank)
        continue;
      TimelineArrow a;
      a.fromLane = pred->first;
      a.toLane = rank;
      a.from = pred->second->end;
      a.to = op.start;
      a.title = llvm::formatv("{0} of microbatch {1}: {2} on rank {3} -> "
                              "{4} on rank {5}",
                              what, j, pipeline::formatOp(pred->second->op),
                              pred->first, pipeline::formatOp(op.op), rank)
                    .str();
      t.arrows.push_back(std::move(a));
    }
  return t;
}

void report::writeBarChart(const BarChart &chart, llvm::raw_ostream &os) {
  constexpr double kBarHeight = 22, kGap = 8, kLabel = 250, kWidth = 440;
  double maxTotal = chart.limit;
  for (const Bar &bar : chart.bars) {
    double total = 0;
    for (const BarSegment &s : bar.segments)
      total += s.value;
    maxTotal = std::max(maxTotal, total);
  }
  double scale = maxTotal > 0 ? kWidth / maxTotal : 0;
  double height = kTop + chart.bars.size() * (kBarHeight + kGap) + 4;
  double width = kLabel + kWidth + 340;
  os << "<figure>\n<figcaption>" << escape(chart.caption) << "</figcaption>\n";
  // The legend: each segment class once, in order of appearance.
  std::vector<std::pair<std::string, std::string>> legend;
  for (const Bar &bar : chart.bars)
    for (const BarSegment &s : bar.segments)
      if (llvm::none_of(
              legend, [&](const auto &e) { return e.first == "seg " + s.cls; }))
        legend.emplace_back("seg " + s.cls, s.label);
  writeLegend(legend, os);
  os << llvm::formatv("<svg class=\"bars\" id=\"{0}\" data-kind=\"{1}\" "
                      "data-bars=\"{2}\" width=\"{3}\" height=\"{4}\" "
                      "viewBox=\"0 0 {3} {4}\" "
                      "xmlns=\"http://www.w3.org/2000/svg\">\n",
                      chart.id, chart.kind, chart.bars.size(), num(width),
                      num(height));
  for (auto [i, bar] : llvm::enumerate(chart.bars)) {
    double y = kTop + i * (kBarHeight + kGap);
    os << "<g class=\"bar\">\n";
    os << llvm::formatv("<text x=\"0\" y=\"{0}\">{1}</text>\n",
                        num(y + kBarHeight / 2 + 4), escape(bar.label));
    double cursor = kLabel, total = 0;
    for (const BarSegment &s : bar.segments) {
      double w = s.value * scale;
      total += s.value;
      if (s.value <= 0)
        continue;
      os << llvm::formatv("<rect class=\"seg {0}\" x=\"{1}\" y=\"{2}\" "
                          "width=\"{3}\" height=\"{4}\"><title>{5}: {6}"
                          "</title></rect>\n",
                          s.cls, num(cursor), num(y), num(w), num(kBarHeight),
                          escape(s.label), escape(chart.format(s.value)));
      cursor += w;
    }
    std::string note = chart.format(total);
    if (!bar.note.empty())
      note += " (" + bar.note + ")";
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\">{2}</text>\n",
                        num(cursor + 6), num(y + kBarHeight / 2 + 4),
                        escape(note));
    os << "</g>\n";
  }
  if (chart.limit > 0) {
    double lx = kLabel + chart.limit * scale;
    os << llvm::formatv("<line class=\"limit\" x1=\"{0}\" y1=\"0\" x2=\"{0}\" "
                        "y2=\"{1}\"><title>{2}</title></line>\n",
                        num(lx), num(height), escape(chart.limitLabel));
  }
  os << "</svg>\n</figure>\n";
}
