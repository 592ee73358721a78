//===- Preemption.h - Stop at a step boundary on a signal -------*- C++ -*-===//
//
// What schedulers send before they preempt a job (SIGTERM, SIGUSR1) and a
// user's Ctrl-C (SIGINT) make shard-run save a checkpoint at the next step
// boundary and exit 0, as torchtitan and Megatron do on SIGTERM. Every rank
// must stop at the same step: the ranks agree on it with one all-reduce of a
// flag per step (PreemptionWatch::requested).
//
// mpirun kills its ranks on SIGTERM and SIGINT before they can save, but
// forwards SIGUSR1 to them. So with several ranks started by `shard-run -n
// N`, the launcher stays the parent of mpirun (in a process group of its
// own, out of reach of the terminal's Ctrl-C) and turns a SIGTERM, SIGINT or
// SIGUSR1 into a SIGUSR1 to mpirun; a second one stops the job at once.
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
  /// (an all-reduce over every rank) when the job has several ranks.
  bool requested(const runtime::Executor &executor) const;
  /// The name of the first signal received ("SIGTERM"), or "".
  std::string signalName() const;
};

/// Runs `args` (mpirun ...) as a child in its own process group, forwards
/// SIGTERM, SIGINT and SIGUSR1 as SIGUSR1 (a second as SIGTERM), and returns
/// the child's exit status (128 + signal if it was killed). Throws
/// std::runtime_error if it cannot start.
/// A signal that arrives before every rank has created its ready file
/// PREFIX<rank> (PreemptionWatch) is held back until they have: a rank
/// without its handler would die of SIGUSR1. mpirun is made to get SIGTERM
/// if the launcher itself dies (PR_SET_PDEATHSIG).
int runForwardingSignals(const std::vector<std::string> &args,
                         const std::string &readyPrefix, int64_t ranks);

} // namespace autoshard::shardrun

#endif // AUTOSHARD_TOOLS_SHARDRUN_PREEMPTION_H
