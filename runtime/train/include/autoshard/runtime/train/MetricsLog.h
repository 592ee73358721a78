//===- MetricsLog.h - JSONL metrics and Chrome traces -----------*- C++ -*-===//

#ifndef AUTOSHARD_RUNTIME_TRAIN_METRICSLOG_H
#define AUTOSHARD_RUNTIME_TRAIN_METRICSLOG_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace autoshard::runtime {

/// Appends one JSON object per line (JSON Lines), each line with one
/// write(2), so a run that dies keeps every step logged before it. Nothing
/// is created before the first record; the first record of a fresh log and
/// the last one (writeLast) replace the file atomically (AtomicFile.h), so
/// an earlier run's log stays whole until this run has a line, and the
/// final record is there whole or not at all.
class MetricsLog {
public:
  /// Logs to `path`: a fresh log (replacing an earlier file at the first
  /// record), or with `append` (a resumed run) after the existing lines.
  /// Throws std::runtime_error naming the path if it cannot be created.
  explicit MetricsLog(const std::string &path, bool append = false);
  ~MetricsLog();
  MetricsLog(const MetricsLog &) = delete;
  MetricsLog &operator=(const MetricsLog &) = delete;
  /// Writes `record` as one line.
  void write(const nlohmann::json &record);
  /// Writes `record` as the last line: the whole log with it goes to a
  /// temporary, is fsynced and renamed onto the path. Later records, if
  /// any, are appended again.
  void writeLast(const nlohmann::json &record);

private:
  std::string path;
  bool append; ///< Records go after the file's existing content.
  int fd = -1; ///< Open for appending once the file holds this run's lines.
};

/// Collects complete ("X") events and writes them in the Chrome trace event
/// format (chrome://tracing, Perfetto): times in microseconds. Not
/// thread-safe: one thread adds (TraceRecorder gathers other threads'
/// events itself).
class ChromeTrace {
public:
  /// Records one event of `durUs` microseconds starting at `startUs` on
  /// thread/lane `tid` (e.g. 0 compute, 1 communication) of process `pid`
  /// (the rank). `args`, if an object, is shown with the event.
  void add(std::string name, std::string category, double startUs, double durUs,
           int pid = 0, int tid = 0, nlohmann::json args = nullptr);
  /// Names lane `tid` of process `pid` (a "thread_name" metadata event, the
  /// track's title in the viewers) and orders the tracks by tid.
  void nameThread(int tid, std::string name, int pid = 0);
  /// Sets the trace's `otherData` object (the run it belongs to: rank,
  /// world size, artifact, plan, step), which readers use to refuse traces
  /// of different runs drawn together.
  void setMetadata(nlohmann::json otherData) {
    metadata = std::move(otherData);
  }
  /// Writes `{"traceEvents": [...], "otherData": {...}}` to `path`; throws
  /// std::runtime_error naming the path on failure.
  void save(const std::string &path) const;
  /// Complete events recorded (metadata not counted).
  size_t size() const { return events.size(); }

private:
  nlohmann::json metadata = nlohmann::json::object();
  struct Event {
    std::string name, category;
    double startUs, durUs;
    int pid, tid;
    nlohmann::json args;
  };
  struct ThreadName {
    int pid, tid;
    std::string name;
  };
  std::vector<Event> events;
  std::vector<ThreadName> threadNames;
};

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_TRAIN_METRICSLOG_H
