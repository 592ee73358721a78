//===- Options.h - Command line of shard-run --------------------*- C++ -*-===//

#ifndef AUTOSHARD_TOOLS_SHARDRUN_OPTIONS_H
#define AUTOSHARD_TOOLS_SHARDRUN_OPTIONS_H

#include "autoshard/runtime/Communicator.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace autoshard::shardrun {

/// A bad command line; the message says which flag and what was found.
class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Whether the communication thread is on without --comm-thread (the one
/// place to flip the default).
constexpr bool kCommThreadDefault = false;

/// The largest --comm-poll-us accepted (0.1 s: beyond it the thread would
/// leave collectives unattended longer than a step takes).
constexpr int64_t kMaxCommPollUs = 100000;

/// The largest --comm-timeout accepted, in seconds (a week; 0 turns the
/// watchdog off).
constexpr double kMaxCommTimeoutS = 7 * 24 * 3600;

/// Everything shard-run is told on its command line.
struct Options {
  std::string artifact;
  std::string data;
  int64_t ranks = 1;
  bool ranksGiven = false; ///< -n was on the command line.
  std::string backend = "cpu";
  int64_t steps = 2000;
  double lr = 1e-3;
  double minLR = 1e-4;
  int64_t warmup = -1;     ///< -1: min(100, decay steps).
  int64_t decaySteps = -1; ///< -1: equal to steps.
  int64_t evalInterval = 250;
  int64_t evalIters = 20;
  int64_t logInterval = 10; ///< Plain progress lines (not a terminal).
  uint64_t seed = 1337;
  std::string log;
  std::string trace;
  std::string saveParams;   ///< --save-params: safetensors of the final params.
  std::string saveDir;      ///< --save-dir: checkpoints go to DIR/step-N/.
  int64_t saveInterval = 0; ///< Checkpoint every N steps (0: end/signal only).
  int64_t keep = 0;         ///< Keep the newest K checkpoints (0: all).
  bool asyncSave = false;   ///< --async-save: write checkpoints on a thread.
  std::string resume;       ///< --resume DIR or "latest".
  std::string initFrom;     ///< --init-from: a Hugging Face checkpoint dir.
  std::string saveHf;       ///< --save-hf: export as a Hugging Face model dir.
  bool checkReplicas = false;  ///< Check replica consistency at the end.
  int64_t traceStep = 1;       ///< 0-based iteration the trace records.
  bool traceStepGiven = false; ///< --trace-step given (not the default).
  int64_t sample = 200;
  double temperature = 0.8;
  int64_t topK = 200;
  bool checkMemory = false;
  /// --skip-nonfinite-steps N: undo at most N steps whose train loss or
  /// gradient norm is not finite (0: the first one ends the run).
  int64_t skipNonfiniteSteps = 0;
  int64_t threads = 0; ///< --threads: kernel threads per rank (0: derived).
  /// --bind-cores auto|none: pin oversubscribed one-thread ranks to cores
  /// (cpu/Placement.h); none (the default) leaves them to the scheduler.
  std::string bindCores = "none";
  /// --comm-thread on|off: a thread per rank drives every MPI call, so that
  /// started collectives progress during compute (docs/cpu-backend.md).
  bool commThread = kCommThreadDefault;
  /// --comm-poll-us: microseconds between the comm thread's polls while an
  /// operation is outstanding and nothing waits for it.
  int64_t commPollUs = runtime::kDefaultCommPollUs;
  bool commPollUsGiven = false; ///< --comm-poll-us was on the command line.
  /// --comm-timeout: seconds a rank waits for one communication operation
  /// before the watchdog ends the job (0: forever).
  double commTimeoutS = runtime::kDefaultCommTimeoutS;
  bool help = false;
};

/// The largest --threads accepted (far above any core count; a larger
/// value is a typo, not a request).
constexpr int64_t kMaxThreads = 1024;

/// Parses argv (without argv[0]). Throws UsageError.
Options parseOptions(const std::vector<std::string> &args);

/// The --help text.
std::string usage();

} // namespace autoshard::shardrun

#endif // AUTOSHARD_TOOLS_SHARDRUN_OPTIONS_H
