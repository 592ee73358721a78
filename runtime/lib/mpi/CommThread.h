//===- CommThread.h - The thread that makes every MPI call ------*- C++ -*-===//
//
// Internal to autoshard_runtime_mpi (MpiWorld.h describes the behaviour).
// Starting an operation enqueues a closure that posts its MPI_I* calls; the
// thread runs the closures in FIFO order, keeps the requests they started
// and completes them with MPI_Testsome. Waiters block on a condition
// variable until the thread marks their operation done.
//
// Polling: with nothing queued or outstanding the thread sleeps on the
// condition variable until something is started. With requests outstanding
// it polls; between two polls it sleeps `pollUs` (woken early by a new
// operation or a waiter), or, while a caller is blocked in wait(), paces
// its polls as the caller's own wait would (WaitClock: back to back, then
// yielding the core, then short sleeps once the wait has lasted 20 ms): the
// caller computes nothing then, and every round of a collective's
// algorithm that is delayed by a sleep would lengthen its wait.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_MPI_COMMTHREAD_H
#define AUTOSHARD_RUNTIME_MPI_COMMTHREAD_H

#include "Watchdog.h"

#include "autoshard/runtime/Communicator.h"

#include <mpi.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace autoshard::runtime::mpi_detail {

/// "<what> failed: <MPI's text for rc>".
std::string mpiErrorText(const char *what, int rc);

/// Throws CommError(mpiErrorText(what, rc)) unless rc is MPI_SUCCESS.
void check(int rc, const char *what);

/// Microseconds of std::steady_clock (the clock of ExecutionTracer).
double steadyNowUs();

/// Posts the MPI calls of one operation (on the communication thread),
/// appending the requests it started to `requests`; throws CommError.
using PostFn = std::function<void(std::vector<MPI_Request> &requests)>;

class CommThread : public std::enable_shared_from_this<CommThread> {
public:
  /// Starts the thread; `pollUs` >= 1 (MpiWorldOptions::pollUs). Waits
  /// call `watchdog` (null: none) while they last.
  static std::shared_ptr<CommThread> start(int64_t pollUs,
                                           std::shared_ptr<Watchdog> watchdog);
  ~CommThread();
  CommThread(const CommThread &) = delete;
  CommThread &operator=(const CommThread &) = delete;

  /// Enqueues an operation and returns its request, whose wait() rethrows
  /// the CommError its post or completion hit. Throws CommError once the
  /// thread has stopped.
  std::unique_ptr<CommRequest> submit(const OpInfo &info, PostFn post);
  /// Runs `fn` (blocking MPI calls that are not requests: communicator
  /// split and free) on the thread, in order with the operations started
  /// before it, and waits for it; rethrows its CommError.
  void call(const char *library, const std::function<void()> &fn);
  /// CommWorld::setCommTracer.
  void setTracer(CommTracer *tracer);
  /// Posts what is queued, tests the outstanding requests once more, then
  /// stops and joins the thread. What is still outstanding is abandoned:
  /// its wait() throws CommError (it never blocks on ranks that may never
  /// come, e.g. while the job is being aborted). Idempotent.
  void stop();
  /// Whether the thread runs (stop() not called).
  bool running() const;

private:
  struct Op;
  class Request;

  CommThread(int64_t pollUs, std::shared_ptr<Watchdog> watchdog);
  void loop();
  /// Runs op's post; its requests join the outstanding ones.
  void post(const std::shared_ptr<Op> &op);
  /// One MPI_Testsome over the outstanding requests.
  void testOutstanding();
  /// Marks `op` done (failed when `error` is not empty), records its span,
  /// wakes its waiter.
  void finish(Op &op, const std::string &error);
  void wait(Op &op);

  const int64_t pollUs;
  const std::shared_ptr<Watchdog> watchdog;
  std::thread thread;

  // Guarded by mu.
  mutable std::mutex mu;
  std::condition_variable workCv; // the thread: work, a waiter, or stop
  std::condition_variable doneCv; // waiters: an operation finished
  std::vector<std::shared_ptr<Op>> queue;
  CommTracer *tracer = nullptr;
  int waiters = 0;
  std::optional<WaitClock> waitClock; // since waiters became > 0
  bool stopping = false;
  bool stopped = false;
  // A waiter's watchdog gave up: the thread makes no MPI call any more
  // (haltSeen once it has stopped making them).
  bool halted = false;
  bool haltSeen = false;

  // The thread's own.
  std::vector<MPI_Request> requests;
  std::vector<std::shared_ptr<Op>> owners; // owners[i] started requests[i]
  std::vector<int> indices;
  std::vector<MPI_Status> statuses;
};

} // namespace autoshard::runtime::mpi_detail

#endif // AUTOSHARD_RUNTIME_MPI_COMMTHREAD_H
