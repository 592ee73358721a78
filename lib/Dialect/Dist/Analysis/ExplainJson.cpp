//===- ExplainJson.cpp - The dist-explain report as JSON ------------------===//

#include "autoshard/Dialect/Dist/Analysis/ExplainReport.h"

#include "llvm/ADT/StringExtras.h"

using namespace llvm;
using namespace autoshard::dist;
using namespace autoshard::dist::explain;

json::Value explain::toJson(const Report &r, const PipelineReport *pipeline) {
  json::Object top;
  top["model"] = json::Object(r.model);
  json::Object plan;
  for (auto &[key, value] : r.plan) {
    long long i;
    if (!StringRef(value).getAsInteger(10, i))
      plan[key] = int64_t(i);
    else
      plan[key] = value;
  }
  top["plan"] = std::move(plan);
  json::Array axes, sizes;
  for (auto &[name, size] : r.mesh) {
    axes.push_back(name);
    sizes.push_back(size);
  }
  top["mesh"] =
      json::Object{{"axes", std::move(axes)}, {"sizes", std::move(sizes)}};
  top["world_size"] = r.worldSize;
  json::Array strategies;
  for (auto &[label, axis, text] : r.strategies)
    strategies.push_back(
        json::Object{{"strategy", label}, {"axis", axis}, {"split", text}});
  top["strategies"] = std::move(strategies);
  json::Array collectives;
  for (auto &[key, row] : r.rows) {
    auto &[rank, cause, op, axesName] = key;
    json::Array axesList;
    for (StringRef axis : llvm::split(axesName, ","))
      if (!axis.empty())
        axesList.push_back(axis.str());
    collectives.push_back(json::Object{{"strategy", cause},
                                       {"op", op},
                                       {"axes", std::move(axesList)},
                                       {"count", row.count},
                                       {"bytes", row.bytes}});
  }
  top["entry"] = r.entry;
  if (r.ppStage)
    top["pp_stage"] = *r.ppStage;
  top["collectives"] = std::move(collectives);
  json::Object perFunction;
  for (const Report::PerFunction &f : r.perFunction) {
    json::Object perCall;
    for (auto &[key, count] : f.perCall)
      perCall[key] = count;
    perFunction[f.name] =
        json::Object{{"calls", f.calls}, {"per_call", std::move(perCall)}};
  }
  top["functions"] = std::move(perFunction);
  json::Object others;
  for (auto &[name, count, bytes] : r.otherEntries)
    others[name] = json::Object{{"count", count}, {"bytes", bytes}};
  top["other_entries"] = std::move(others);
  // Bytes per rank with the plan and without it (null: unknown).
  json::Object memory;
  for (const MemoryRow &row : getMemoryRows(r))
    memory[row.key] =
        json::Object{{"with", row.with},
                     {"without", row.without ? json::Value(*row.without)
                                             : json::Value(nullptr)}};
  if (r.baseline.present)
    memory["baseline"] = r.baseline.path;
  top["memory"] = std::move(memory);
  // With pp, every rank's memory plan: `memory` is the heaviest one's only.
  if (pipeline && pipeline->present) {
    json::Array ranks;
    for (const PipelineRank &rank : pipeline->ranks) {
      json::Object state, peak;
      for (auto &[kind, bytes] : rank.stateByKind)
        state[kind] = bytes;
      for (auto &[category, bytes] : rank.peak)
        peak[category] = bytes;
      ranks.push_back(json::Object{{"pp_rank", rank.rank},
                                   {"function", rank.function},
                                   {"state", std::move(state)},
                                   {"frame", rank.frameBytes},
                                   {"peak", std::move(peak)}});
    }
    top["pipeline_ranks"] = std::move(ranks);
  }
  return top;
}
