//===- Preemption.h - Stop at a step boundary on a signal -------*- C++ -*-===//
//
// What schedulers send before they preempt a job (SIGTERM, SIGUSR1) and a
// user's Ctrl-C (SIGINT) make shard-run stop at the next step boundary and
// say "interrupted at step N": with --save-dir after saving a checkpoint
// there (exit 0, as torchtitan and Megatron do on SIGTERM), without one
// with exit 128 + the signal. Every rank must stop at the same step: the
// ranks agree on it with one all-reduce of a flag per step
// (PreemptionWatch::requested). A second signal to a rank ends it at once.
//
// mpirun kills its ranks on SIGTERM and SIGINT before they can stop, but
// forwards SIGUSR1 to them. So with several ranks started by `shard-run -n
// N`, the launcher stays the parent of mpirun (in a process group of its
// own, out of reach of the terminal's Ctrl-C) and turns a SIGTERM, SIGINT or
// SIGUSR1 into a SIGUSR1 to mpirun; a second one stops the job at once.
//
// The launcher also watches its ranks: each keeps a small status file (its
// pid, the step it is in, whether it ended with its own message or got a
// signal), so that when a rank dies without a word (SIGKILL, a crash) the
// launcher says which rank died during which step, after mpirun's report.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_TOOLS_SHARDRUN_PREEMPTION_H
#define AUTOSHARD_TOOLS_SHARDRUN_PREEMPTION_H

#include "autoshard/runtime/Executor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace autoshard::shardrun {

/// Catches SIGTERM, SIGINT, SIGUSR1 and SIGHUP in a rank for the rest of the
/// run.
class PreemptionWatch {
public:
  /// Installs the handlers (a second signal of the same run still ends the
  /// process the default way only after the first was served).
  /// With AUTOSHARD_READY_PREFIX set (by runForwardingSignals), creates
  /// the file PREFIX<rank> once the handlers are in place.
  explicit PreemptionWatch(int64_t rank = 0);
  /// Whether any rank of `executor`'s job has received a signal: collective
  /// (an all-reduce over every rank) when the job has several ranks. Also
  /// records `stepsDone` in the rank's status file (noteRankStep).
  bool requested(const runtime::Executor &executor, int64_t stepsDone) const;
  /// The name of the first signal received ("SIGTERM"), or "".
  std::string signalName() const;
  /// Exit status of a run this watch stopped without a checkpoint: 128 +
  /// the first signal (130 if only another rank got one).
  int interruptedExitStatus() const;
};

/// Records in this rank's status file (when the launcher asked for one)
/// that it has done `stepsDone` steps and is in the next, or, `finishing`,
/// that it is past its last step (final evaluation, --save-params, the
/// last checkpoint).
void noteRankStep(int64_t stepsDone, bool finishing = false);
/// How a rank ends, as its status file tells the launcher.
enum class RankEnd {
  Done,        ///< Cleanly.
  Failed,      ///< With its own error message.
  Interrupted, ///< Stopped by a signal without a checkpoint (said so).
};
/// Records how this rank ends: the launcher then does not report it as
/// dead, and exits 128 + its signal when the ranks were interrupted.
void noteRankEnd(RankEnd end);
/// Whether this rank was started by runForwardingSignals (which reads its
/// exit status from the status files).
bool underForwardingLauncher();

/// Runs `args` (mpirun ...) as a child in its own process group, forwards
/// SIGTERM, SIGINT and SIGUSR1 as SIGUSR1 (a second as SIGTERM), and returns
/// the child's exit status (128 + signal if it was killed; 128 + the signal
/// received when the ranks stopped at a step boundary without a checkpoint).
/// `checkpoints`: the ranks save one when they stop (its message says so).
/// When the job fails and a rank died without a message of its own,
/// prints "shard-run: error: rank R (pid P) died during step N ...".
/// Throws std::runtime_error if it cannot start.
/// A signal that arrives before every rank has created its ready file
/// PREFIX<rank> (PreemptionWatch) is held back until they have: a rank
/// without its handler would die of SIGUSR1. mpirun is made to get SIGTERM
/// if the launcher itself dies (PR_SET_PDEATHSIG).
int runForwardingSignals(const std::vector<std::string> &args,
                         const std::string &readyPrefix, int64_t ranks,
                         bool checkpoints);

} // namespace autoshard::shardrun

#endif // AUTOSHARD_TOOLS_SHARDRUN_PREEMPTION_H
