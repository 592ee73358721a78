//===- ExplainReport.cpp - Formatting and memory table of the report ------===//

#include "autoshard/Dialect/Dist/Analysis/ExplainReport.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Format.h"

using namespace llvm;
using namespace autoshard::dist;
using namespace autoshard::dist::explain;

int explain::strategyOrder(StringRef cause) {
  if (cause == "DP")
    return 0;
  if (cause.starts_with("ZeRO"))
    return 1;
  if (cause == "TP")
    return 2;
  if (cause == "SP")
    return 3;
  if (cause == kScalarCause)
    return 5;
  return 4;
}

std::string explain::formatShape(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, "x");
  return s;
}

std::string explain::formatBytes(int64_t bytes) {
  std::string s;
  llvm::raw_string_ostream os(s);
  double b = static_cast<double>(bytes);
  if (bytes < 1024)
    os << bytes << " B";
  else if (bytes < 1024 * 1024)
    os << llvm::format("%.2f KiB", b / 1024);
  else if (bytes < int64_t(1024) * 1024 * 1024)
    os << llvm::format("%.2f MiB", b / (1024 * 1024));
  else
    os << llvm::format("%.2f GiB", b / (1024 * 1024 * 1024));
  return s;
}

std::vector<MemoryRow> explain::getMemoryRows(const Report &r) {
  std::vector<MemoryRow> rows;
  std::map<std::string, std::pair<int64_t, int64_t>> byKind;
  // Without the plan one device holds every state; with pp a rank holds
  // only its stage's.
  for (const State &s : r.states) {
    auto &[local, global] = byKind[s.kind];
    if (s.held)
      local += s.localBytes;
    global += s.globalBytes;
  }
  int64_t stateWith = 0, stateWithout = 0;
  for (auto [kind, label] :
       {std::pair<StringRef, StringRef>{"param", "state: params"},
        {"opt_m", "state: optimizer m"},
        {"opt_v", "state: optimizer v"}}) {
    auto [local, global] = byKind[kind.str()];
    rows.push_back({"state_" + kind.str(), label.str(), local, global});
    stateWith += local;
    stateWithout += global;
  }
  rows.push_back({"state_total", "state: total", stateWith, stateWithout});
  std::optional<int64_t> frameWithout;
  if (r.baseline.present && r.baseline.frameBytes)
    frameWithout = *r.baseline.frameBytes;
  if (r.memory.planned) {
    rows.push_back(
        {"frame", "transient: frame", r.memory.frameBytes, frameWithout});
    int64_t liveWith = 0, liveWithout = 0;
    for (auto &[category, bytes] : r.memory.peak)
      liveWith += bytes;
    for (auto &[category, bytes] : r.baseline.peak)
      liveWithout += bytes;
    for (auto &[category, bytes] : r.memory.peak) {
      std::optional<int64_t> without;
      if (r.baseline.present) {
        auto it = r.baseline.peak.find(category);
        without = it == r.baseline.peak.end() ? 0 : it->second;
      }
      rows.push_back(
          {"peak_" + category, "  at peak: " + category, bytes, without});
    }
    std::optional<int64_t> live;
    if (r.baseline.present)
      live = liveWithout;
    rows.push_back(
        {"peak_live_total", "  at peak: live total", liveWith, live});
    std::optional<int64_t> total;
    if (frameWithout)
      total = stateWithout + *frameWithout;
    rows.push_back({"total", "total: state + frame",
                    stateWith + r.memory.frameBytes, total});
  }
  return rows;
}
