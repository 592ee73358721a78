//===- Watchdog.h - Timeouts of MPI operations ------------------*- C++ -*-===//
//
// Internal to autoshard_runtime_mpi (MpiWorld.h describes the behaviour).
//
// Every wait for an MPI operation polls it (MPI_Test*) instead of blocking
// in MPI_Wait*, with a backoff (WaitClock) so that a rank that waits long
// sleeps instead of spinning a core. While a wait lasts, the waiting thread
// calls Watchdog::check(): it answers the questions of other ranks' watchdogs
// and, once the wait has lasted the timeout, diagnoses the hang and throws.
//
// The diagnosis runs on a private duplicate of MPI_COMM_WORLD, so that it
// never mixes with the program's messages. The rank that times out first
// prints one line to stderr ("[autoshard watchdog] rank R: ...": MPI may end
// the process during the diagnosis when the transport itself is dead), then
// sends a
// query (what it waits for) to every other rank and collects answers for a
// grace period: a rank blocked in any wait answers with what it waits for;
// a rank that is stopped, dead, unreachable or busy outside communication
// does not. Then it sends its verdict (who did not answer) to every rank
// that answered, which ends their waits with the verdict (each says what it
// was waiting for), waits briefly for their acknowledgements (so that they
// can print before the job is aborted), and throws CommError with the whole
// picture: which operation on which group at which activity (step), and
// which peers it was waiting for.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_MPI_WATCHDOG_H
#define AUTOSHARD_RUNTIME_MPI_WATCHDOG_H

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace autoshard::runtime::mpi_detail {

/// What an operation is, for errors, the trace and the watchdog.
struct OpInfo {
  const char *library = ""; ///< "MPI_Iallreduce": errors name it.
  const char *name = "";    ///< CommSpan::name; empty: not traced.
  int64_t bytes = 0;        ///< CommSpan::bytes.
  int64_t ranks = 0;        ///< CommSpan::ranks.
  /// The group's label (Communicator::label()) and its members' world
  /// ranks; both owned by the communicator. Null: not known.
  const std::string *label = nullptr;
  const std::vector<int> *worldRanks = nullptr;
  /// exchange(): the group indices it receives from and sends to.
  std::vector<int64_t> recvFrom = {}, sendTo = {};
};

/// Measures a wait and paces its polls: back to back for the first 200 us,
/// yielding the core until 20 ms, then sleeping waited/100 (at most 1 ms)
/// between polls, so that a long wait costs no CPU and a short one no
/// latency.
class WaitClock {
public:
  WaitClock() : start(std::chrono::steady_clock::now()) {}
  /// Seconds since construction.
  double waited() const;
  /// Pauses before the next poll; returns waited().
  double pause();

private:
  std::chrono::steady_clock::time_point start;
};

/// The communication watchdog of one MPI world.
class Watchdog {
public:
  /// Seconds a wait lasts before the watchdog checks for questions from
  /// other ranks; shorter waits never call check().
  static constexpr double kCheckAfterS = 0.02;

  /// Collective over MPI_COMM_WORLD (duplicates it); `timeoutS` > 0.
  Watchdog(double timeoutS, int rank, int size);
  ~Watchdog();
  Watchdog(const Watchdog &) = delete;
  Watchdog &operator=(const Watchdog &) = delete;

  double timeoutS() const { return timeout; }
  /// Seconds the diagnosis waits for the answers of the other ranks.
  double graceS() const;
  /// CommWorld::setActivity.
  void setActivity(const std::string &activity);

  /// Called by a thread whose wait for `op` has lasted `waitedS` seconds
  /// (at most every 20 ms): answers pending questions; throws CommError
  /// when another rank's watchdog has given up, or when `waitedS` reached
  /// the timeout (after the diagnosis). Thread-safe.
  void check(const OpInfo &op, double waitedS);
  /// Whether a check() has thrown: the watchdog gave up, or another rank's
  /// verdict ended a wait. Then CommWorld::abort waits a moment
  /// (kAbortPauseS), so that every rank that reports can say its line
  /// before the first MPI_Abort ends them all: longer than the rank that
  /// gave up first waits for its verdict's acknowledgements
  /// (kVerdictAckWaitS), which a rank busy in its own diagnosis sends
  /// late, so that rank says its line before an acknowledging rank aborts
  /// the job (CI saw rank 1 end the job 1 s after its verdict while rank
  /// 3, its originator, still waited for rank 0's acknowledgement).
  bool gaveUp() const { return expired.load(); }
  static constexpr double kVerdictAckWaitS = 2.0;
  static constexpr double kAbortPauseS = kVerdictAckWaitS + 1.0;

private:
  struct Message {
    int source = 0, tag = 0;
    std::string text;
  };
  /// One line: the activity, the operation, its group, how long waited.
  std::string describe(const OpInfo &op, double waitedS) const;
  /// Receives every message that has arrived (nothing blocks).
  std::vector<Message> receive();
  /// Sends `text` with `tag` to world rank `to` without waiting.
  void send(int to, int tag, const std::string &text);
  /// The diagnosis; returns the CommError text. Called with `mu` held.
  std::string expire(const OpInfo &op, double waitedS);
  /// Answers queries in `msgs`; returns the verdict text of another rank's
  /// watchdog if `msgs` holds one ("" otherwise).
  std::string handle(const std::vector<Message> &msgs, const std::string &me);

  const double timeout;
  const int rank, size;
  MPI_Comm comm = MPI_COMM_NULL;

  std::mutex mu; // one thread at a time talks to other watchdogs
  std::chrono::steady_clock::time_point lastCheck{};
  std::list<std::string> sent; // buffers of sends that may be in flight
  std::atomic<bool> expired{false};

  mutable std::mutex activityMu;
  std::string activity_;
};

} // namespace autoshard::runtime::mpi_detail

#endif // AUTOSHARD_RUNTIME_MPI_WATCHDOG_H
