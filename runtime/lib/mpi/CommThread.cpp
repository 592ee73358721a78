//===- CommThread.cpp - The thread that makes every MPI call --------------===//

#include "CommThread.h"

#include <pthread.h>
#include <signal.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <chrono>

namespace autoshard::runtime::mpi_detail {

std::string mpiErrorText(const char *what, int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
    return std::string(what) + " failed: MPI error " + std::to_string(rc);
  return std::string(what) + " failed: " + std::string(text, len);
}

void check(int rc, const char *what) {
  if (rc != MPI_SUCCESS)
    throw CommError(mpiErrorText(what, rc));
}

double steadyNowUs() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch())
      .count();
}

struct CommThread::Op {
  OpInfo info;
  PostFn post;
  CommTracer *tracer = nullptr; // the tracer when it was started
  double queuedUs = 0, postedUs = 0;
  size_t remaining = 0; // requests not complete yet (the thread's)
  // Guarded by mu; written by the thread only.
  bool done = false;
  std::string error;
};

class CommThread::Request : public CommRequest {
public:
  Request(std::shared_ptr<CommThread> owner, std::shared_ptr<Op> op)
      : owner(std::move(owner)), op(std::move(op)) {}
  void wait() override { owner->wait(*op); }

private:
  std::shared_ptr<CommThread> owner;
  std::shared_ptr<Op> op;
};

CommThread::CommThread(int64_t pollUs, std::shared_ptr<Watchdog> watchdog)
    : pollUs(pollUs), watchdog(std::move(watchdog)) {}

std::shared_ptr<CommThread>
CommThread::start(int64_t pollUs, std::shared_ptr<Watchdog> watchdog) {
  if (pollUs < 1)
    throw CommError("the communication thread's poll interval must be >= 1 "
                    "microsecond, found " +
                    std::to_string(pollUs));
  std::shared_ptr<CommThread> t(new CommThread(pollUs, std::move(watchdog)));
  // The thread starts with the asynchronous signals blocked, so that they
  // keep going to the threads that handle them (shard-run's preemption
  // handlers run on the main thread's alternate stack). Faults stay
  // unblocked: blocking them would hide a crash.
  sigset_t all, old;
  sigfillset(&all);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP})
    sigdelset(&all, sig);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  try {
    t->thread = std::thread([raw = t.get()] { raw->loop(); });
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return t;
}

CommThread::~CommThread() { stop(); }

bool CommThread::running() const {
  std::lock_guard<std::mutex> lock(mu);
  return !stopping;
}

void CommThread::setTracer(CommTracer *t) {
  std::lock_guard<std::mutex> lock(mu);
  tracer = t;
}

std::unique_ptr<CommRequest> CommThread::submit(const OpInfo &info,
                                                PostFn post) {
  auto op = std::make_shared<Op>();
  op->info = info;
  op->post = std::move(post);
  {
    std::lock_guard<std::mutex> lock(mu);
    if (stopping)
      throw CommError(std::string(info.library) +
                      ": the communication thread has stopped (the MPI "
                      "world is being destroyed)");
    op->tracer = tracer;
    op->queuedUs = steadyNowUs();
    queue.push_back(op);
  }
  workCv.notify_one();
  return std::make_unique<Request>(shared_from_this(), std::move(op));
}

void CommThread::call(const char *library, const std::function<void()> &fn) {
  OpInfo info;
  info.library = library; // no name: not traced
  submit(info, [&fn](std::vector<MPI_Request> &) { fn(); })->wait();
}

void CommThread::wait(Op &op) {
  std::unique_lock<std::mutex> lock(mu);
  if (!op.done) {
    // A waiter makes the thread poll without sleeping (see the header).
    if (waiters++ == 0)
      waitClock.emplace();
    workCv.notify_one();
    WaitClock clock;
    while (!op.done) {
      if (!watchdog) {
        doneCv.wait(lock, [&] { return op.done; });
        break;
      }
      doneCv.wait_for(lock, std::chrono::milliseconds(20),
                      [&] { return op.done; });
      if (op.done)
        break;
      lock.unlock();
      try {
        watchdog->check(op.info, clock.waited());
      } catch (...) {
        // The watchdog gave up: the caller unwinds (freeing the buffers of
        // operations still outstanding) and aborts the job. MPI must not
        // write into those buffers meanwhile: the thread stops calling it.
        lock.lock();
        --waiters;
        halted = true;
        workCv.notify_all();
        doneCv.wait(lock, [&] { return haltSeen; });
        throw;
      }
      lock.lock();
    }
    --waiters;
  }
  if (!op.error.empty())
    throw CommError(op.error);
}

void CommThread::stop() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping = true;
  }
  workCv.notify_all();
  if (!thread.joinable())
    return;
  if (thread.get_id() == std::this_thread::get_id())
    thread.detach(); // never join oneself (not expected to happen)
  else
    thread.join();
}

void CommThread::loop() {
#if defined(__linux__)
  // Linux stretches every timed sleep by the thread's timer slack (50 us by
  // default): without this, a 20 us poll interval would sleep ~70 us.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL); // 1 us
  pthread_setname_np(pthread_self(), "autoshard-comm");
#endif
  std::vector<std::shared_ptr<Op>> batch;
  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    workCv.wait(lock, [&] {
      return stopping || halted || !queue.empty() || !requests.empty();
    });
    if (halted) {
      haltSeen = true;
      doneCv.notify_all();
      workCv.wait(lock, [&] { return stopping; });
      break;
    }
    bool stop = stopping;
    batch.swap(queue);
    lock.unlock();
    // MPI is called without the lock: starting and waiting never wait for
    // MPI.
    for (const std::shared_ptr<Op> &op : batch)
      post(op);
    batch.clear();
    if (!requests.empty())
      testOutstanding();
    lock.lock();
    if (stop && queue.empty())
      break;
    if (requests.empty() || !queue.empty() || stopping)
      continue;
    if (waiters > 0) {
      double waited = waitClock ? waitClock->waited() : 0;
      if (waited < 20e-3) {
        lock.unlock();
        std::this_thread::yield();
        lock.lock();
      } else {
        // Woken early by new work only: a waiter is what set the pace.
        double s = std::min(1e-3, waited / 100);
        workCv.wait_for(lock, std::chrono::duration<double>(s),
                        [&] { return stopping || halted || !queue.empty(); });
      }
    } else {
      workCv.wait_for(lock, std::chrono::microseconds(pollUs), [&] {
        return stopping || halted || !queue.empty() || waiters > 0;
      });
    }
  }
  lock.unlock();
  // What is still outstanding nobody can wait for any more: a wait for it
  // throws instead of blocking forever.
  for (const std::shared_ptr<Op> &op : owners)
    finish(*op, std::string(op->info.library) +
                    ": abandoned: the communication thread stopped (the MPI "
                    "world was destroyed) before it completed");
  requests.clear();
  owners.clear();
}

void CommThread::post(const std::shared_ptr<Op> &op) {
  op->postedUs = steadyNowUs();
  size_t before = requests.size();
  std::string error;
  try {
    op->post(requests);
  } catch (const CommError &e) {
    error = e.what();
    if (error.empty())
      error = std::string(op->info.library) + " failed";
  } catch (const std::exception &e) {
    error = std::string(op->info.library) + ": " + e.what();
  } catch (...) {
    error = std::string(op->info.library) + ": unknown error";
  }
  size_t started = requests.size() - before;
  // Requests started before a failure stay outstanding (MPI still owns
  // them); their completion is then ignored.
  owners.insert(owners.end(), started, op);
  op->remaining = started;
  if (!error.empty() || started == 0)
    finish(*op, error);
}

void CommThread::testOutstanding() {
  int n = static_cast<int>(requests.size());
  indices.resize(n);
  statuses.resize(n);
  int count = 0;
  int rc =
      MPI_Testsome(n, requests.data(), &count, indices.data(), statuses.data());
  if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
    // Nothing says which request failed: fail every outstanding operation.
    std::string text = mpiErrorText("MPI_Testsome", rc);
    for (const std::shared_ptr<Op> &op : owners)
      finish(*op, std::string(op->info.library) + ": " + text);
    requests.clear();
    owners.clear();
    return;
  }
  if (count == MPI_UNDEFINED)
    count = 0;
  for (int k = 0; k < count; ++k) {
    int i = indices[k];
    Op &op = *owners[i];
    int err = rc == MPI_ERR_IN_STATUS ? statuses[k].MPI_ERROR : MPI_SUCCESS;
    if (err != MPI_SUCCESS) {
      finish(op, mpiErrorText(op.info.library, err));
      // MPI leaves a request that failed allocated (and complete): drop it
      // or every later MPI_Testsome would report it again.
      if (requests[i] != MPI_REQUEST_NULL)
        MPI_Request_free(&requests[i]);
      requests[i] = MPI_REQUEST_NULL;
    } else if (op.remaining > 0 && --op.remaining == 0) {
      finish(op, "");
    }
  }
  size_t kept = 0;
  for (size_t i = 0; i < requests.size(); ++i)
    if (requests[i] != MPI_REQUEST_NULL) {
      requests[kept] = requests[i];
      owners[kept] = std::move(owners[i]);
      ++kept;
    }
  requests.resize(kept);
  owners.resize(kept);
}

void CommThread::finish(Op &op, const std::string &error) {
  double end = steadyNowUs();
  std::lock_guard<std::mutex> lock(mu);
  if (op.done)
    return;
  // Recorded before the waiter wakes: once a wait returns, its operation's
  // span is in the tracer (which the caller may then detach).
  if (op.tracer && op.tracer == tracer && *op.info.name) {
    CommSpan span;
    span.name = op.info.name;
    span.library = op.info.library;
    span.bytes = op.info.bytes;
    span.ranks = op.info.ranks;
    span.queuedUs = op.queuedUs;
    span.startUs = op.postedUs;
    span.durUs = end - op.postedUs;
    span.failed = !error.empty();
    try {
      tracer->recordComm(span);
    } catch (...) {
      // A trace that cannot grow loses the event, not the operation.
    }
  }
  op.error = error;
  op.done = true;
  doneCv.notify_all();
}

} // namespace autoshard::runtime::mpi_detail
