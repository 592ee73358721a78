//===- Reporting.h - Progress display and trace recording -------*- C++ -*-===//

#ifndef AUTOSHARD_TOOLS_SHARDRUN_REPORTING_H
#define AUTOSHARD_TOOLS_SHARDRUN_REPORTING_H

#include "autoshard/runtime/Executor.h"
#include "autoshard/runtime/train/MetricsLog.h"

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

namespace autoshard::shardrun {

/// Training progress on stdout: on a terminal one line rewritten in place
/// (at most ~10 times a second), otherwise a plain line every `every` steps.
class Progress {
public:
  Progress(std::FILE *out, int64_t totalSteps, int64_t every);
  /// Reports finished step `step` (0-based) of the run.
  void step(int64_t step, double loss, double lr, double tokensPerS);
  /// Prints a full line (an eval result, a note), keeping the progress line
  /// intact on a terminal.
  void line(const std::string &text);
  /// Ends the in-place line, if any.
  void finish();

private:
  std::FILE *out;
  bool tty;
  int64_t total, every;
  double lastDrawUs = 0;
  bool pending = false; // an in-place line is on screen
};

/// Records executed instructions into a ChromeTrace, times relative to
/// the recorder's creation, on the compute track (tid 0). As a CommTracer
/// it also collects, from the communication thread, each communication
/// operation from its post to its completion; flushComm() puts them on
/// tracks of their own.
class TraceRecorder : public runtime::ExecutionTracer,
                      public runtime::CommTracer {
public:
  explicit TraceRecorder(runtime::ChromeTrace &trace);
  void record(std::string_view name, std::string_view function, double startUs,
              double durUs, int depth) override;
  /// Thread-safe; the events wait in the recorder until flushComm().
  void recordComm(const runtime::CommSpan &span) override;
  /// Adds an enclosing event (e.g. the whole step).
  void span(const std::string &name, double startUs, double durUs);
  /// Names the compute track "compute" and adds the communication events
  /// recorded so far: tid 1 ("comm"), and tids 2, 3, ... ("comm 2", ...)
  /// for operations that overlap one already on a lower track (the viewers
  /// want the events of one track nested or disjoint). Call on the thread
  /// that adds the compute events.
  void flushComm();
  /// Microseconds of std::steady_clock (the executor's clock).
  static double nowUs();
  /// The trace's zero in nowUs() microseconds: an event's `ts` plus this is
  /// its time on the node's monotonic clock, which every process of one
  /// machine shares (so the ranks of one node can be drawn on one axis).
  double originUs() const { return epochUs; }

private:
  runtime::ChromeTrace &trace;
  double epochUs;
  struct CommEvent {
    std::string name, library;
    int64_t bytes, ranks;
    double queuedUs, startUs, durUs;
    bool failed;
  };
  std::mutex commMutex; // guards comm (the comm thread appends)
  std::vector<CommEvent> comm;
};

/// Each rank's peak resident set so far in MiB (getrusage's ru_maxrss:
/// heap, stacks, libraries and MPI buffers, not only the executor's
/// allocations), indexed by world rank. Collective over the world when
/// `comm` has more than one rank; `comm` may be null (one process).
std::vector<double> peakRssMiBPerRank(runtime::CommContext *comm);

/// "1.23 MiB" style byte counts.
std::string formatBytes(int64_t bytes);

} // namespace autoshard::shardrun

#endif // AUTOSHARD_TOOLS_SHARDRUN_REPORTING_H
