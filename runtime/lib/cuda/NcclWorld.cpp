//===- NcclWorld.cpp - NCCL communicators, streams and events -------------===//

#include "autoshard/runtime/cuda/NcclWorld.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

namespace autoshard::runtime::cuda {
namespace {

void check(ncclResult_t r, const char *what) {
  if (r != ncclSuccess && r != ncclInProgress)
    throw CommError(std::string("nccl: ") + what + ": " +
                    ncclGetErrorString(r));
}

void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw CommError(std::string("nccl: ") + what + ": " +
                    cudaGetErrorString(e));
}

ncclDataType_t ncclType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return ncclFloat32;
  case DType::F64:
    return ncclFloat64;
  case DType::BF16:
    return ncclBfloat16;
  case DType::F16:
    return ncclFloat16;
  case DType::I32:
    return ncclInt32;
  case DType::I64:
    return ncclInt64;
  }
  throw CommError("nccl: unsupported element type");
}

ncclRedOp_t ncclOp(ReduceOp op) {
  return op == ReduceOp::Max ? ncclMax : ncclSum;
}

/// The streams shared by the world and its groups.
struct Streams {
  cudaStream_t compute = nullptr;
  cudaStream_t comm = nullptr;
};

/// The NCCL communication watchdog (as torch's ProcessGroupNCCL watchdog):
/// a thread that polls, every 100 ms, the completion event of every
/// operation issued on the communication stream, and the communicators'
/// asynchronous errors (ncclCommGetAsyncError). An operation not complete
/// after the timeout, or a communicator's error, ends the job: the thread
/// prints which operation on which group at which activity, aborts every
/// communicator (ncclCommAbort, which also ends kernels waiting for a peer)
/// and ends the job (CommWorld::abort through the bootstrap). The host
/// never blocks on NCCL, so this is the only place a hang can be seen.
class NcclWatchdog {
public:
  NcclWatchdog(double timeoutS, int64_t rank, int device,
               std::function<void(int)> abortJob)
      : timeout(timeoutS), rank(rank), device(device),
        abortJob(std::move(abortJob)) {
    if (timeout > 0)
      thread = std::thread([this] { loop(); });
  }
  ~NcclWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stopping = true;
    }
    cv.notify_all();
    if (thread.joinable())
      thread.join();
    for (Watched &w : ops)
      cudaEventDestroy(w.done);
  }
  bool enabled() const { return timeout > 0; }
  void addComm(ncclComm_t comm) {
    std::lock_guard<std::mutex> lock(mu);
    comms.push_back(comm);
  }
  /// Forgets `comm` and its operations (before ncclCommDestroy).
  void removeComm(ncclComm_t comm) {
    std::lock_guard<std::mutex> lock(mu);
    comms.erase(std::remove(comms.begin(), comms.end(), comm), comms.end());
    for (auto it = ops.begin(); it != ops.end();) {
      if (it->comm == comm) {
        cudaEventDestroy(it->done);
        it = ops.erase(it);
      } else {
        ++it;
      }
    }
  }
  /// Watches the operation whose completion `done` records (owned from now).
  void add(ncclComm_t comm, const char *what, const std::string &label,
           cudaEvent_t done) {
    std::lock_guard<std::mutex> lock(mu);
    ops.push_back(
        {comm, what, label, activity, done, std::chrono::steady_clock::now()});
  }
  void setActivity(const std::string &a) {
    std::lock_guard<std::mutex> lock(mu);
    activity = a;
  }

private:
  struct Watched {
    ncclComm_t comm;
    const char *what;
    std::string label, activity;
    cudaEvent_t done;
    std::chrono::steady_clock::time_point issued;
  };

  void loop() {
    cudaSetDevice(device);
    std::unique_lock<std::mutex> lock(mu);
    while (!stopping) {
      cv.wait_for(lock, std::chrono::milliseconds(100));
      std::string failure;
      while (!ops.empty() && failure.empty()) {
        Watched &w = ops.front();
        cudaError_t q = cudaEventQuery(w.done);
        if (q == cudaSuccess) {
          cudaEventDestroy(w.done);
          ops.pop_front();
          continue;
        }
        double waited = std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - w.issued)
                            .count();
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(w.comm, &async);
        std::string op = std::string(w.what) +
                         (w.label.empty() ? "" : " over group " + w.label) +
                         (w.activity.empty() ? "" : " at " + w.activity);
        if (q != cudaErrorNotReady)
          failure = op + " failed: " + cudaGetErrorString(q);
        else if (async != ncclSuccess && async != ncclInProgress)
          failure = op + " failed: " + ncclGetErrorString(async);
        else if (waited >= timeout)
          failure = "communication timeout: " + op +
                    " did not complete within " +
                    std::to_string(static_cast<int64_t>(timeout)) +
                    " s (--comm-timeout)";
        else
          break; // later operations were issued later: none is older
      }
      if (failure.empty())
        continue;
      std::fprintf(stderr, "shard-run: error: rank %lld: nccl: %s\n",
                   static_cast<long long>(rank), failure.c_str());
      std::fflush(stderr);
      for (ncclComm_t c : comms)
        ncclCommAbort(c);
      comms.clear();
      lock.unlock();
      abortJob(1);
      return;
    }
  }

  const double timeout;
  const int64_t rank;
  const int device;
  std::function<void(int)> abortJob;
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::deque<Watched> ops;
  std::vector<ncclComm_t> comms;
  std::string activity;
  std::thread thread;
};

/// Completes when the compute stream has waited for `done`.
class NcclRequest : public CommRequest {
public:
  NcclRequest(cudaEvent_t done, cudaStream_t compute)
      : done(done), compute(compute) {}
  ~NcclRequest() override { cudaEventDestroy(done); }
  void wait() override {
    check(cudaStreamWaitEvent(compute, done, 0), "cudaStreamWaitEvent");
  }

private:
  cudaEvent_t done;
  cudaStream_t compute;
};

class NcclCommunicator : public Communicator {
public:
  NcclCommunicator(ncclComm_t comm, std::shared_ptr<Streams> streams,
                   std::shared_ptr<NcclWatchdog> watchdog)
      : comm(comm), streams(std::move(streams)), watchdog(std::move(watchdog)) {
    int r = 0, n = 0;
    check(ncclCommUserRank(comm, &r), "ncclCommUserRank");
    check(ncclCommCount(comm, &n), "ncclCommCount");
    rank_ = r;
    size_ = n;
    if (this->watchdog)
      this->watchdog->addComm(comm);
  }
  ~NcclCommunicator() override {
    if (watchdog)
      watchdog->removeComm(comm);
    cudaStreamSynchronize(streams->comm);
    ncclCommDestroy(comm);
  }
  ncclComm_t handle() const { return comm; }
  int64_t rank() const override { return rank_; }
  int64_t size() const override { return size_; }

  std::unique_ptr<CommRequest> allReduce(const void *send, void *recv,
                                         int64_t count, DType dtype,
                                         ReduceOp op) override {
    return run("all_reduce (ncclAllReduce)", [&](cudaStream_t s) {
      check(ncclAllReduce(send, recv, count, ncclType(dtype), ncclOp(op), comm,
                          s),
            "ncclAllReduce");
    });
  }
  std::unique_ptr<CommRequest> allGather(const void *send, void *recv,
                                         int64_t bytes) override {
    return run("all_gather (ncclAllGather)", [&](cudaStream_t s) {
      check(ncclAllGather(send, recv, bytes, ncclChar, comm, s),
            "ncclAllGather");
    });
  }
  std::unique_ptr<CommRequest> reduceScatter(const void *send, void *recv,
                                             int64_t count, DType dtype,
                                             ReduceOp op) override {
    return run("reduce_scatter (ncclReduceScatter)", [&](cudaStream_t s) {
      check(ncclReduceScatter(send, recv, count, ncclType(dtype), ncclOp(op),
                              comm, s),
            "ncclReduceScatter");
    });
  }
  std::unique_ptr<CommRequest> allToAll(const void *send, void *recv,
                                        int64_t bytes) override {
    return run("all_to_all (ncclSend/ncclRecv)", [&](cudaStream_t s) {
      check(ncclGroupStart(), "ncclGroupStart");
      for (int64_t peer = 0; peer < size_; ++peer) {
        check(ncclSend(static_cast<const char *>(send) + peer * bytes, bytes,
                       ncclChar, static_cast<int>(peer), comm, s),
              "ncclSend");
        check(ncclRecv(static_cast<char *>(recv) + peer * bytes, bytes,
                       ncclChar, static_cast<int>(peer), comm, s),
              "ncclRecv");
      }
      check(ncclGroupEnd(), "ncclGroupEnd");
    });
  }
  std::unique_ptr<CommRequest> broadcast(void *data, int64_t bytes,
                                         int64_t root) override {
    if (root < 0 || root >= size_)
      throw CommError("broadcast root " + std::to_string(root) +
                      " outside a group of " + std::to_string(size_));
    return run("broadcast (ncclBroadcast)", [&](cudaStream_t s) {
      check(ncclBroadcast(data, data, bytes, ncclChar, static_cast<int>(root),
                          comm, s),
            "ncclBroadcast");
    });
  }
  std::unique_ptr<CommRequest>
  exchange(const std::vector<Transfer> &sends,
           const std::vector<Transfer> &recvs) override {
    for (const auto *list : {&sends, &recvs})
      for (const Transfer &t : *list)
        if (t.peer < 0 || t.peer >= size_)
          throw CommError("peer " + std::to_string(t.peer) +
                          " outside a group of " + std::to_string(size_));
    return run("exchange (ncclSend/ncclRecv)", [&](cudaStream_t s) {
      check(ncclGroupStart(), "ncclGroupStart");
      for (const Transfer &t : sends)
        check(ncclSend(t.data, t.bytes, ncclChar, static_cast<int>(t.peer),
                       comm, s),
              "ncclSend");
      for (const Transfer &t : recvs)
        check(ncclRecv(t.data, t.bytes, ncclChar, static_cast<int>(t.peer),
                       comm, s),
              "ncclRecv");
      check(ncclGroupEnd(), "ncclGroupEnd");
    });
  }

private:
  /// Orders `issue` (on the comm stream) after the compute work queued so
  /// far; returns the request of its completion.
  template <typename Fn>
  std::unique_ptr<CommRequest> run(const char *what, Fn &&issue) {
    cudaEvent_t ready, done;
    check(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming),
          "cudaEventCreate");
    check(cudaEventRecord(ready, streams->compute), "cudaEventRecord");
    check(cudaStreamWaitEvent(streams->comm, ready, 0), "cudaStreamWaitEvent");
    cudaEventDestroy(ready); // released once the wait has happened
    issue(streams->comm);
    check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming),
          "cudaEventCreate");
    check(cudaEventRecord(done, streams->comm), "cudaEventRecord");
    if (watchdog && watchdog->enabled()) {
      // A second event: the request's may be destroyed before completion.
      cudaEvent_t watched;
      check(cudaEventCreateWithFlags(&watched, cudaEventDisableTiming),
            "cudaEventCreate");
      check(cudaEventRecord(watched, streams->comm), "cudaEventRecord");
      watchdog->add(comm, what, label(), watched);
    }
    return std::make_unique<NcclRequest>(done, streams->compute);
  }

  ncclComm_t comm;
  std::shared_ptr<Streams> streams;
  std::shared_ptr<NcclWatchdog> watchdog;
  int64_t rank_ = 0, size_ = 1;
};

int64_t envInt(const char *name, int64_t fallback) {
  const char *v = std::getenv(name);
  return v && *v ? std::atoll(v) : fallback;
}

/// Exchanges the id through a file (rank 0 writes, the others poll).
void fileRendezvous(ncclUniqueId &id, int64_t rank) {
  const char *path = std::getenv("AUTOSHARD_NCCL_ID_FILE");
  if (!path || !*path)
    throw CommError("nccl: a job of several ranks without MPI needs "
                    "AUTOSHARD_NCCL_ID_FILE (a path all ranks can see) to "
                    "exchange the NCCL unique id");
  std::string file(path);
  if (rank == 0) {
    std::string tmp = file + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(id.internal, sizeof(id.internal));
      if (!out)
        throw CommError("nccl: cannot write '" + tmp + "'");
    }
    if (std::rename(tmp.c_str(), file.c_str()) != 0)
      throw CommError("nccl: cannot create '" + file + "'");
    return;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  for (;;) {
    std::ifstream in(file, std::ios::binary);
    if (in.read(id.internal, sizeof(id.internal)))
      return;
    if (std::chrono::steady_clock::now() > deadline)
      throw CommError("nccl: rank " + std::to_string(rank) +
                      " waited 300 s for '" + file + "' from rank 0");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

class NcclWorld : public CommWorld {
public:
  NcclWorld(CommWorld *bootstrap, cudaStream_t compute, int device,
            double timeoutS)
      : bootstrap(bootstrap), streams(std::make_shared<Streams>()) {
    if (!(timeoutS >= 0))
      throw CommError("nccl: the communication timeout must be >= 0 "
                      "seconds, found " +
                      std::to_string(timeoutS));
    check(cudaSetDevice(device), "cudaSetDevice");
    streams->compute = compute;
    check(cudaStreamCreateWithFlags(&streams->comm, cudaStreamNonBlocking),
          "cudaStreamCreate");
    if (bootstrap) {
      rank_ = bootstrap->rank();
      size_ = bootstrap->size();
    } else {
      rank_ = envInt("RANK", 0);
      size_ = envInt("WORLD_SIZE", 1);
    }
    if (size_ < 1 || rank_ < 0 || rank_ >= size_ || size_ > INT_MAX)
      throw CommError("nccl: rank " + std::to_string(rank_) +
                      " outside a world of " + std::to_string(size_));
    ncclUniqueId id;
    if (rank_ == 0)
      check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    if (size_ > 1) {
      if (bootstrap) {
        std::unique_ptr<Communicator> all = bootstrap->split(0, rank_);
        all->broadcast(id.internal, sizeof(id.internal), 0)->wait();
      } else {
        fileRendezvous(id, rank_);
      }
    }
    ncclComm_t comm;
    check(ncclCommInitRank(&comm, static_cast<int>(size_), id,
                           static_cast<int>(rank_)),
          "ncclCommInitRank");
    watchdog = std::make_shared<NcclWatchdog>(
        timeoutS, rank_, device, [this](int code) { abort(code); });
    world = std::make_unique<NcclCommunicator>(comm, streams, watchdog);
  }
  ~NcclWorld() override {
    world.reset();
    watchdog.reset(); // after every communicator is gone
    cudaStreamDestroy(streams->comm);
  }

  std::string name() const override { return "nccl"; }
  int64_t rank() const override { return rank_; }
  int64_t size() const override { return size_; }

  std::unique_ptr<Communicator> split(int64_t color, int64_t key) override {
    if (color < 0 || color > INT_MAX || key < 0 || key > INT_MAX)
      throw CommError("nccl: split color " + std::to_string(color) +
                      " or key " + std::to_string(key) + " out of range");
    ncclComm_t comm;
    check(ncclCommSplit(world->handle(), static_cast<int>(color),
                        static_cast<int>(key), &comm, nullptr),
          "ncclCommSplit");
    return std::make_unique<NcclCommunicator>(comm, streams, watchdog);
  }
  void setActivity(const std::string &activity) override {
    watchdog->setActivity(activity);
    if (bootstrap)
      bootstrap->setActivity(activity);
  }

  [[noreturn]] void abort(int code) override {
    if (bootstrap)
      bootstrap->abort(code);
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(code);
  }

private:
  CommWorld *bootstrap;
  std::shared_ptr<Streams> streams;
  std::shared_ptr<NcclWatchdog> watchdog;
  std::unique_ptr<NcclCommunicator> world;
  int64_t rank_ = 0, size_ = 1;
};

} // namespace

std::unique_ptr<CommWorld> createNcclWorld(CommWorld *bootstrap,
                                           void *computeStream, int device,
                                           double timeoutS) {
  return std::make_unique<NcclWorld>(
      bootstrap, static_cast<cudaStream_t>(computeStream), device, timeoutS);
}

} // namespace autoshard::runtime::cuda
