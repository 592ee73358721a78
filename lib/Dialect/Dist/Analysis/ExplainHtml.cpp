//===- ExplainHtml.cpp - The dist-explain report as HTML ------------------===//
//
// The Report and PipelineReport that the text report prints, drawn with the
// HTML/SVG writer of lib/Report: the strategy table with each strategy's
// collectives, the collectives table, the mesh as a grid of ranks, the
// pipeline timelines (unit-cost and FLOP-weighted simulations of the
// compiled schedule) and the memory per rank as stacked bars, with the
// text report itself at the end.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/Analysis/ExplainReader.h"
#include "autoshard/Dialect/Dist/Analysis/ExplainReport.h"
#include "autoshard/Report/Html.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>

using namespace llvm;
using namespace autoshard;
using namespace autoshard::dist::explain;
using autoshard::report::escape;

namespace {

/// Whether a collective attributed to `cause` belongs to the strategy row
/// `label` (`CP ring` and `CP Ulysses` to `CP`).
bool belongsTo(StringRef cause, StringRef label) {
  return cause == label || cause.starts_with((label + " ").str());
}

/// `all_gather[dp] x35 (802.25 KiB)` for each collectives row of
/// `strategy` (a row of the strategy table), joined by line breaks; the
/// matched rows are marked in `used`.
std::string collectivesOf(const Report &r, StringRef label,
                          std::set<CollectiveKey> &used) {
  SmallVector<std::string> parts;
  for (auto &[key, row] : r.rows) {
    auto &[order, cause, op, axes] = key;
    if (!belongsTo(cause, label))
      continue;
    used.insert(key);
    parts.push_back(formatv("<code>{0}[{1}]</code> &times;{2}, {3}", escape(op),
                            escape(axes), row.count,
                            escape(formatBytes(row.bytes)))
                        .str());
  }
  return parts.empty() ? "none" : join(parts, "<br>");
}

void writeStrategies(const Report &r, const PipelineReport &p,
                     raw_ostream &os) {
  os << "<h2 id=\"strategies\">Strategies: what each splits in this "
        "program</h2>\n";
  report::Table table;
  table.cls = "strategies";
  table.header = {"strategy", "mesh axis", "what it splits here",
                  "collectives it added (count, bytes per step per rank)"};
  std::set<CollectiveKey> used;
  for (auto &[label, degree, text] : r.strategies)
    table.rows.push_back({"<b>" + escape(label) + "</b>", escape(degree),
                          escape(text), collectivesOf(r, label, used)});
  if (p.present && p.error.empty()) {
    const pipeline::PipelineSchedule &s = p.schedule;
    std::string text =
        formatv("{0} stages over {1} pipeline ranks ({2} per "
                "rank), {3} microbatches, schedule {4}",
                s.numStages, s.numRanks, p.vpp, s.numMicrobatches, p.kind)
            .str();
    for (auto [i, st] : llvm::enumerate(p.stages))
      text +=
          formatv("; stage {0} on rank {1}: {2}{3}", i, st.rank,
                  formatStageLayers(st), formatStageExtras(i, p.stages.size()))
              .str();
    table.rows.push_back({"<b>PP</b>", "pp=" + std::to_string(s.numRanks),
                          escape(text), collectivesOf(r, "PP", used)});
  }
  // Collectives of no strategy row (loss and gradient norm, ...).
  std::vector<std::string> causes;
  for (auto &[key, row] : r.rows)
    if (!used.count(key) && !is_contained(causes, std::get<1>(key)))
      causes.push_back(std::get<1>(key));
  for (const std::string &cause : causes)
    table.rows.push_back(
        {escape(cause), "", "", collectivesOf(r, cause, used)});
  if (table.rows.empty())
    os << "<p>none: every tensor is replicated</p>\n";
  else
    report::writeTable(table, os);
  if (!r.recompute.empty())
    os << "<p class=\"note\">Activation recomputation: " << escape(r.recompute)
       << "</p>\n";
}

void writeCollectives(const Report &r, raw_ostream &os) {
  os << "<h2 id=\"collectives\">Collectives per " << escape(r.entry)
     << escape(r.entryNote) << ", per rank</h2>\n";
  report::Table table;
  table.cls = "collectives";
  table.header = {"strategy", "op", "axes", "count", "bytes/step"};
  table.numeric = {3, 4};
  int64_t count = 0, bytes = 0;
  for (auto &[key, row] : r.rows) {
    auto &[order, cause, op, axes] = key;
    table.rows.push_back({escape(cause), escape(op), escape(axes),
                          std::to_string(row.count),
                          escape(formatBytes(row.bytes))});
    count += row.count;
    bytes += row.bytes;
  }
  table.rows.push_back({"<b>total</b>", "", "", std::to_string(count),
                        escape(formatBytes(bytes))});
  report::writeTable(table, os);
}

/// The mesh as grids of ranks: one panel per coordinate of the axes before
/// the last two, rows the second-to-last axis, columns the last (ranks in
/// row-major order of the mesh).
void writeMesh(const Report &r, raw_ostream &os) {
  os << "<h2 id=\"mesh\">Mesh: " << r.worldSize
     << (r.worldSize == 1 ? " rank" : " ranks") << "</h2>\n";
  if (r.mesh.empty()) {
    os << "<p>No mesh: one rank.</p>\n";
    return;
  }
  size_t n = r.mesh.size();
  int64_t cols = r.mesh[n - 1].second;
  int64_t rows = n >= 2 ? r.mesh[n - 2].second : 1;
  int64_t panelSize = rows * cols;
  int64_t world = 1;
  for (auto &[name, size] : r.mesh)
    world *= size;
  os << "<div class=\"mesh\" data-ranks=\"" << world << "\">\n";
  for (int64_t first = 0; first < world; first += panelSize) {
    // Coordinates of rank `rank` on every axis.
    auto coords = [&](int64_t rank) {
      SmallVector<int64_t> c(n);
      for (size_t a = n; a-- > 0;) {
        c[a] = rank % r.mesh[a].second;
        rank /= r.mesh[a].second;
      }
      return c;
    };
    SmallVector<int64_t> c0 = coords(first);
    SmallVector<std::string> title;
    for (size_t a = 0; a + 2 < n; ++a)
      title.push_back(r.mesh[a].first + "=" + std::to_string(c0[a]));
    os << "<div class=\"panel\">";
    if (!title.empty())
      os << "<div class=\"title\">" << escape(join(title, ", ")) << "</div>";
    os << "<div class=\"grid\" style=\"grid-template-columns: repeat(" << cols
       << ", auto)\">";
    for (int64_t rank = first; rank < first + panelSize; ++rank) {
      SmallVector<int64_t> c = coords(rank);
      SmallVector<std::string> parts;
      for (size_t a = 0; a < n; ++a)
        parts.push_back(r.mesh[a].first + " " + std::to_string(c[a]));
      os << "<div class=\"rank\" data-rank=\"" << rank << "\"><b>rank " << rank
         << "</b>" << escape(join(parts, " · ")) << "</div>";
    }
    os << "</div></div>\n";
  }
  os << "</div>\n";
}

void writePipeline(const PipelineReport &p, raw_ostream &os) {
  if (!p.present)
    return;
  os << "<h2 id=\"pipeline\">Pipeline schedule</h2>\n";
  if (!p.error.empty()) {
    os << "<p>cannot read dist.pipeline_schedule: " << escape(p.error)
       << "</p>\n";
    return;
  }
  const pipeline::PipelineSchedule &s = p.schedule;
  os << formatv("<p>pp={0}, {1} stages, {2} microbatches, schedule "
                "<code>{3}</code>. One lane per pipeline rank, one box per "
                "scheduled unit of the compiled schedule "
                "(<code>dist.pipeline_schedule</code>; label: stage, kind, "
                "microbatch); hatched: idle (bubble); arrows: the "
                "activations and gradients sent between ranks. Hover a unit "
                "to follow its microbatch.</p>\n",
                s.numRanks, s.numStages, s.numMicrobatches, escape(p.kind));
  std::vector<std::pair<std::string, std::string>> legend = {
      {"unit F", "F forward"}};
  legend.push_back(
      p.split ? std::pair<std::string, std::string>{"unit I", "I input grad"}
              : std::pair<std::string, std::string>{"unit B", "B backward"});
  if (p.split)
    legend.push_back({"unit W", "W weight grad"});
  legend.push_back({"bubble", "bubble"});
  report::writeLegend(legend, os);
  if (p.unit.deadlocked) {
    os << "<p>unit-cost simulation: DEADLOCK: " << escape(p.unit.deadlockReport)
       << "</p>\n";
    return;
  }
  os << "<div class=\"row\">\n";
  report::writeTimeline(
      report::pipelineTimeline(
          s, p.unit, "timeline-unit", "unit",
          formatv("Unit cost ({0}): makespan {1}, bubble {2:F3} of the ideal "
                  "time ({3} = {4:F3})",
                  p.split ? "F=I=W=1" : "F=1, B=2", p.unit.makespan,
                  p.unit.idleOverBusy, p.idealFormula, p.idealBubble)
              .str()),
      os);
  if (p.weighted)
    report::writeTimeline(
        report::pipelineTimeline(
            s, *p.weighted, "timeline-flops", "flops",
            formatv("FLOP-weighted (each stage's units scaled by its FLOPs "
                    "over the mean stage): makespan {0:F2}, bubble {1:F3} of "
                    "the ideal time",
                    p.weighted->makespan, p.weighted->idleOverBusy)
                .str()),
        os);
  os << "</div>\n";
  if (!p.stages.empty()) {
    report::Table table;
    table.cls = "stages";
    table.header = {"stage", "rank", "layers",
                    "MFLOP (microbatch 0, fwd + "
                    "bwd)"};
    table.numeric = {0, 1, 3};
    for (auto [i, st] : llvm::enumerate(p.stages))
      table.rows.push_back({std::to_string(i), std::to_string(st.rank),
                            escape(formatStageLayers(st) +
                                   formatStageExtras(i, p.stages.size())),
                            formatv("{0:F1}", st.flops / 1e6).str()});
    report::writeTable(table, os);
  }
}

/// A memory bar: state by kind, the live bytes at the frame's peak by
/// category, and the part of the frame not live at the peak.
report::Bar memoryBar(std::string label, int64_t params, int64_t optimizer,
                      const std::map<std::string, int64_t> &peak,
                      std::optional<int64_t> frame, std::string note) {
  auto at = [&](StringRef category) -> double {
    auto it = peak.find(category.str());
    return it == peak.end() ? 0 : it->second;
  };
  report::Bar bar;
  bar.label = std::move(label);
  bar.note = std::move(note);
  bar.segments = {
      {"param", "parameters", double(params)},
      {"grad", "gradients (at the frame's peak)", at("grad")},
      {"opt", "optimizer states", double(optimizer)},
      {"act", "activations (at the frame's peak)", at("activation")},
      {"comm", "communication buffers", 0},
      {"work", "workspace (at the frame's peak)", at("workspace")},
      {"io", "inputs and outputs", at("io")}};
  if (frame) {
    double live = 0;
    for (auto &[category, bytes] : peak)
      live += bytes;
    bar.segments.push_back({"slack", "rest of the frame (not live at its peak)",
                            std::max(0.0, double(*frame) - live)});
  }
  return bar;
}

void writeMemory(const Report &r, const PipelineReport &p, raw_ostream &os) {
  os << "<h2 id=\"memory\">Memory per rank</h2>\n";
  report::BarChart chart;
  chart.id = "memory";
  chart.kind = "memory";
  chart.caption = "State held and the planned frame (rt-plan-memory) per "
                  "rank, and the same model on one device without the plan";
  chart.format = [](double v) { return formatBytes(int64_t(v)); };
  std::vector<MemoryRow> rows = getMemoryRows(r);
  auto row = [&](StringRef key) -> const MemoryRow * {
    for (const MemoryRow &m : rows)
      if (m.key == key)
        return &m;
    return nullptr;
  };
  auto with = [&](StringRef key) -> int64_t {
    const MemoryRow *m = row(key);
    return m ? m->with : 0;
  };
  auto without = [&](StringRef key) -> int64_t {
    const MemoryRow *m = row(key);
    return m && m->without ? *m->without : 0;
  };
  if (p.present && !p.ranks.empty()) {
    for (const PipelineRank &pr : p.ranks) {
      auto kind = [&](StringRef k) -> int64_t {
        auto it = pr.stateByKind.find(k.str());
        return it == pr.stateByKind.end() ? 0 : it->second;
      };
      chart.bars.push_back(
          memoryBar(formatv("pp rank {0} ({1})", pr.rank, pr.function).str(),
                    kind("param"), kind("opt_m") + kind("opt_v"), pr.peak,
                    pr.frameBytes, ""));
    }
  } else {
    std::optional<int64_t> frame;
    if (r.memory.planned)
      frame = r.memory.frameBytes;
    chart.bars.push_back(memoryBar(
        "every rank (" + r.entry + ")", with("state_param"),
        with("state_opt_m") + with("state_opt_v"), r.memory.peak, frame, ""));
  }
  std::optional<int64_t> baselineFrame;
  if (r.baseline.present)
    baselineFrame = r.baseline.frameBytes;
  chart.bars.push_back(
      memoryBar("one device, no plan", without("state_param"),
                without("state_opt_m") + without("state_opt_v"),
                r.baseline.peak, baselineFrame,
                r.baseline.present ? "" : "state only: no baseline artifact"));
  report::writeBarChart(chart, os);
  os << "<p class=\"note\">Gradients, activations, workspace and I/O are "
        "the live bytes at the peak of the planned frame "
        "(<code>peak_breakdown</code>). Communication buffers: the runtime's "
        "communication workspace is outside the static memory plan and not "
        "counted (0).";
  if (!r.baseline.present)
    os << " Pass <code>baseline=&lt;one-rank artifact.json&gt;</code> for "
          "the transient part on one device.";
  os << "</p>\n";
}

} // namespace

void dist::explain::writeHtml(const Report &r, const PipelineReport &p,
                              raw_ostream &os) {
  // The text report: its header lines become the subtitle, and the whole
  // of it closes the page.
  std::string text;
  raw_string_ostream textOs(text);
  writeText(r, textOs);
  writePipelineText(p, textOs);
  SmallVector<StringRef> lines;
  StringRef(text).split(lines, '\n');
  std::string subtitle;
  for (size_t i = 1; i < lines.size() && i < 4 && !lines[i].empty(); ++i)
    subtitle += (subtitle.empty() ? "" : " | ") + lines[i].str();
  report::beginPage(os,
                    "dist-explain: " + (r.modelName.empty()
                                            ? std::string("(unnamed model)")
                                            : r.modelName),
                    subtitle);
  writeStrategies(r, p, os);
  writeMesh(r, os);
  writePipeline(p, os);
  writeMemory(r, p, os);
  writeCollectives(r, os);
  os << "<h2 id=\"text\">The text report</h2>\n<details><summary>dist-explain "
        "format=text</summary><pre class=\"mono\">"
     << escape(text) << "</pre></details>\n";
  report::endPage(os);
}
