//===- PlannerHtml.cpp - dist-auto-plan's report as HTML ------------------===//

#include "autoshard/Report/PlannerHtml.h"
#include "autoshard/Report/Html.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <optional>

using namespace autoshard;
using namespace autoshard::report;

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string seconds(double s) {
  return s >= 1 ? llvm::formatv("{0:F3} s", s).str()
                : llvm::formatv("{0:F2} ms", s * 1e3).str();
}
std::string gib(double b) { return llvm::formatv("{0:F2} GiB", b / kGiB); }
std::string percent(double part, double whole) {
  return whole > 0 ? llvm::formatv("{0:F1}%", 100 * part / whole).str() : "-";
}
/// `12F3` -> the op; std::nullopt for any other name.
std::optional<pipeline::PipelineOp> parseOp(llvm::StringRef name) {
  size_t letter = name.find_first_of("FBIW");
  int64_t stage = 0, mb = 0;
  if (letter == llvm::StringRef::npos || letter == 0 ||
      name.take_front(letter).getAsInteger(10, stage) ||
      name.drop_front(letter + 1).getAsInteger(10, mb))
    return std::nullopt;
  using Kind = pipeline::PipelineOp::Kind;
  Kind kind = name[letter] == 'F'   ? Kind::F
              : name[letter] == 'B' ? Kind::B
              : name[letter] == 'I' ? Kind::I
                                    : Kind::W;
  return pipeline::PipelineOp{kind, stage, mb};
}

/// The predicted step of `estimate` as a timeline, read off the planner's
/// own Chrome trace of it (planner::chromeTrace: the simulated schedule with
/// the estimate's stage costs, then the exposed gradient synchronisation
/// and the optimizer per pipeline rank), in milliseconds. Empty when the
/// trace has no pipeline ops.
std::optional<Timeline> predictedStep(const planner::Estimate &estimate) {
  llvm::Expected<llvm::json::Value> trace =
      llvm::json::parse(planner::chromeTrace(estimate));
  if (!trace) {
    llvm::consumeError(trace.takeError());
    return std::nullopt;
  }
  const llvm::json::Array *events =
      trace->getAsObject() ? trace->getAsObject()->getArray("traceEvents")
                           : nullptr;
  if (!events)
    return std::nullopt;
  pipeline::PipelineSchedule schedule;
  pipeline::SimulationResult sim;
  std::vector<TimelineBox> tail;
  for (const llvm::json::Value &v : *events) {
    const llvm::json::Object *e = v.getAsObject();
    if (!e)
      continue;
    std::optional<llvm::StringRef> name = e->getString("name");
    std::optional<int64_t> tid = e->getInteger("tid");
    std::optional<double> ts = e->getNumber("ts"), dur = e->getNumber("dur");
    if (!name || !tid || !ts || !dur || *tid < 0)
      continue;
    double start = *ts / 1e3, end = (*ts + *dur) / 1e3;
    if (std::optional<pipeline::PipelineOp> op = parseOp(*name)) {
      size_t rank = *tid;
      if (sim.timeline.size() <= rank)
        sim.timeline.resize(rank + 1);
      sim.timeline[rank].push_back({*op, start, end});
      if (schedule.stageToRank.size() <= size_t(op->stage))
        schedule.stageToRank.resize(op->stage + 1, 0);
      schedule.stageToRank[op->stage] = *tid;
      schedule.numMicrobatches =
          std::max(schedule.numMicrobatches, op->microbatch + 1);
    } else if (*dur > 0) {
      TimelineBox b;
      b.lane = *tid;
      b.start = start;
      b.end = end;
      b.cls = name->starts_with("dp") ? "comm" : "other";
      b.label = name->str();
      b.title = llvm::formatv("{0}: {1:F3} to {2:F3} ms", *name, start, end);
      tail.push_back(std::move(b));
    }
    sim.makespan = std::max(sim.makespan, end);
  }
  if (sim.timeline.empty())
    return std::nullopt;
  schedule.numRanks = sim.timeline.size();
  schedule.numStages = schedule.stageToRank.size();
  Timeline t = pipelineTimeline(
      schedule, sim, "timeline-predicted", "predicted",
      llvm::formatv("Predicted step of the chosen plan ({0}), ms: the "
                    "schedule simulated with the estimate's stage times, "
                    "then the exposed gradient synchronisation and the "
                    "optimizer",
                    estimate.plan.applyPlan())
          .str());
  t.unit = "ms";
  // At least ~3 px per box of the busiest lane (the figure scrolls), and
  // no transfer arrows past a few hundred: a 128-node plan with hundreds
  // of microbatches per rank otherwise draws sub-pixel boxes under a mass
  // of lines.
  size_t busiest = 0;
  for (const auto &lane : sim.timeline)
    busiest = std::max(busiest, lane.size());
  t.width = std::clamp(3.0 * static_cast<double>(busiest), 900.0, 30000.0);
  constexpr size_t kMaxArrows = 400;
  if (t.arrows.size() > kMaxArrows) {
    t.caption += llvm::formatv(" ({0} transfers not drawn)", t.arrows.size());
    t.arrows.clear();
  }
  for (TimelineBox &b : tail)
    if (b.lane < t.laneNames.size())
      t.boxes.push_back(std::move(b));
  return t;
}

} // namespace

void report::writePlannerHtml(const planner::Cluster &cluster,
                              const planner::ModelInfo &model,
                              const planner::SearchResult &result,
                              const planner::SearchOptions &options,
                              int64_t top, llvm::raw_ostream &os) {
  std::string subtitle = llvm::formatv(
      "model {0}: {1} layers, seq {2}, {3:F2}M parameters; cluster {4}, {5} "
      "GPUs ({6} per node), global batch {7}",
      model.name, model.layers, model.seq, model.params / 1e6, cluster.name,
      options.gpus, cluster.gpusPerNode, options.globalBatch);
  beginPage(os, "dist-auto-plan: " + model.name, subtitle);
  size_t n = std::min<size_t>(std::max<int64_t>(top, 0), result.best.size());
  if (result.best.empty()) {
    os << "<p class=\"note\" id=\"no-plan\">No plan fits.</p>\n";
  } else {
    const planner::Estimate &best = result.best.front();
    os << "<p>Chosen plan: <code id=\"chosen\">" << escape(best.plan.str())
       << "</code>; as <code>--plan</code>: <code>"
       << escape(best.plan.applyPlan()) << "</code></p>\n";

    os << "<h2 id=\"candidates\">Top candidates: where the step time goes"
          "</h2>\n";
    BarChart time;
    time.id = "candidate-time";
    time.kind = "time";
    time.caption = "Predicted step time per candidate, best first: compute, "
                   "exposed communication, pipeline bubble and optimizer";
    time.format = seconds;
    BarChart memory;
    memory.id = "candidate-memory";
    memory.kind = "memory";
    memory.caption = "Predicted peak memory per GPU: model states (params, "
                     "gradients, optimizer), activations (in flight + "
                     "transient, with fragmentation) and the fixed part "
                     "(reserve + communication buffers); dashed: HBM";
    memory.format = gib;
    memory.limit = cluster.hbmBytes;
    memory.limitLabel = "HBM " + gib(cluster.hbmBytes);
    Table table;
    table.header = {"#",    "plan",    "step",         "tokens/s", "MFU",
                    "peak", "compute", "exposed comm", "bubble",   "simulated"};
    table.numeric = {0, 2, 3, 4, 5, 6, 7, 8};
    for (size_t i = 0; i < n; ++i) {
      const planner::Estimate &e = result.best[i];
      std::string label =
          llvm::formatv("#{0} {1}", i + 1, e.plan.applyPlan()).str();
      // Plans that differ only late in the string (mb, schedule,
      // recompute) stay apart: the middle goes, not the end.
      if (label.size() > 38)
        label = label.substr(0, 16) + "…" + label.substr(label.size() - 21);
      Bar t;
      t.label = label;
      t.segments = {{"compute", "compute", e.compute},
                    {"exposed", "exposed communication", e.exposedComm},
                    {"bubbletime", "bubble", e.bubble},
                    {"optimizer", "optimizer", e.optimizer}};
      t.note = llvm::formatv("MFU {0:F1}%", 100 * e.mfu);
      time.bars.push_back(std::move(t));
      Bar m;
      m.label = label;
      double rest = std::max(0.0, e.peakBytes - e.stateBytes -
                                      e.activationBytes - e.fixedBytes);
      m.segments = {{"param", "model states", e.stateBytes},
                    {"act", "activations", e.activationBytes},
                    {"comm", "reserve + communication buffers", e.fixedBytes}};
      if (rest > 0)
        m.segments.push_back({"slack", "other", rest});
      memory.bars.push_back(std::move(m));
      table.rows.push_back(
          {std::to_string(i + 1), "<code>" + escape(e.plan.str()) + "</code>",
           seconds(e.stepTime),
           llvm::formatv("{0:F0}", e.tokensPerSecond).str(),
           llvm::formatv("{0:F1}%", 100 * e.mfu).str(), gib(e.peakBytes),
           percent(e.compute, e.stepTime), percent(e.exposedComm, e.stepTime),
           percent(e.bubble, e.stepTime), e.simulated ? "yes" : "no"});
    }
    writeBarChart(time, os);
    writeBarChart(memory, os);
    writeTable(table, os);
    if (std::optional<Timeline> step = predictedStep(best)) {
      os << "<h2 id=\"predicted-step\">The chosen plan's predicted step</h2>"
            "\n";
      // The kinds it draws, in this order.
      std::vector<std::pair<std::string, std::string>> legend;
      for (auto [cls, label] :
           {std::pair<const char *, const char *>{"F", "F forward"},
            {"B", "B backward"},
            {"I", "I input grad"},
            {"W", "W weight grad"},
            {"comm", "exposed gradient sync"},
            {"other", "optimizer"}})
        if (llvm::any_of(step->boxes, [&, cls = cls](const TimelineBox &b) {
              return llvm::StringRef(b.cls).split(' ').first == cls;
            }))
          legend.emplace_back(std::string("unit ") + cls, label);
      legend.emplace_back("bubble", "bubble");
      writeLegend(legend, os);
      writeTimeline(*step, os);
    }
  }

  if (!result.rejected.empty()) {
    // Those that cannot run (OOM, invalid) first, then the slower ones by
    // their best step time, as in the text report.
    std::vector<std::pair<std::string, std::string>> rows(
        result.rejected.begin(), result.rejected.end());
    auto hard = [](const std::string &why) {
      return why.rfind("OOM", 0) == 0 || why.rfind("invalid", 0) == 0;
    };
    auto step = [](const std::string &why) {
      size_t at = why.find("step ");
      return at == std::string::npos ? 0.0 : std::atof(why.c_str() + at + 5);
    };
    std::stable_sort(rows.begin(), rows.end(), [&](auto &a, auto &b) {
      return std::make_pair(!hard(a.second), step(a.second)) <
             std::make_pair(!hard(b.second), step(b.second));
    });
    // What lost it: the reason's head (`OOM`, `bubble`, `communication`).
    auto verdict = [&](const std::string &why) {
      size_t colon = why.find(':');
      std::string head = why.substr(0, std::min(colon, why.find(' ')));
      if (colon != std::string::npos && colon < 48)
        head = why.substr(0, colon);
      return hard(why) ? head : "slower: " + head;
    };
    os << "<h2 id=\"rejected\">Rejected families: why each lost</h2>\n";
    Table table;
    table.cls = "rejected";
    table.header = {"family", "verdict", "why"};
    for (auto &[family, why] : rows)
      table.rows.push_back({"<code>" + escape(family) + "</code>",
                            escape(verdict(why)), escape(why)});
    writeTable(table, os);
  }

  os << llvm::formatv(
      "<p class=\"note\">search: {0} candidates ({1} fit), {2} simulated, "
      "{3} block compilations in {4:F2} s; search {5:F3} s</p>\n",
      result.stats.candidates, result.stats.fitting, result.stats.simulated,
      result.stats.compiled, result.stats.compileSeconds,
      result.stats.wallSeconds);
  endPage(os);
}
