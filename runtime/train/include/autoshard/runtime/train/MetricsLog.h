//===- MetricsLog.h - JSONL metrics and Chrome traces -----------*- C++ -*-===//

#ifndef AUTOSHARD_RUNTIME_TRAIN_METRICSLOG_H
#define AUTOSHARD_RUNTIME_TRAIN_METRICSLOG_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace autoshard::runtime {

/// Appends one JSON object per line (JSON Lines) and flushes each line, so a
/// run that dies keeps every step logged before it.
class MetricsLog {
public:
  /// Opens (truncates) `path`; throws std::runtime_error naming the path if
  /// it cannot be opened.
  /// Opens `path`, truncated, or with `append` (a resumed run) at its end.
  explicit MetricsLog(const std::string &path, bool append = false);
  /// Writes `record` as one line.
  void write(const nlohmann::json &record);

private:
  std::ofstream out;
  std::string path;
};

/// Collects complete ("X") events and writes them in the Chrome trace event
/// format (chrome://tracing, Perfetto): times in microseconds.
class ChromeTrace {
public:
  /// Records one event of `durUs` microseconds starting at `startUs` on
  /// thread/lane `tid` (e.g. 0 compute, 1 communication) of process `pid`
  /// (the rank).
  void add(std::string name, std::string category, double startUs, double durUs,
           int pid = 0, int tid = 0);
  /// Writes `{"traceEvents": [...]}` to `path`; throws std::runtime_error
  /// naming the path on failure.
  void save(const std::string &path) const;
  size_t size() const { return events.size(); }

private:
  struct Event {
    std::string name, category;
    double startUs, durUs;
    int pid, tid;
  };
  std::vector<Event> events;
};

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_TRAIN_METRICSLOG_H
