//===- NcclWorld.cpp - NCCL communicators, streams and events -------------===//

#include "autoshard/runtime/cuda/NcclWorld.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
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
  NcclCommunicator(ncclComm_t comm, std::shared_ptr<Streams> streams)
      : comm(comm), streams(std::move(streams)) {
    int r = 0, n = 0;
    check(ncclCommUserRank(comm, &r), "ncclCommUserRank");
    check(ncclCommCount(comm, &n), "ncclCommCount");
    rank_ = r;
    size_ = n;
  }
  ~NcclCommunicator() override {
    cudaStreamSynchronize(streams->comm);
    ncclCommDestroy(comm);
  }
  ncclComm_t handle() const { return comm; }
  int64_t rank() const override { return rank_; }
  int64_t size() const override { return size_; }

  std::unique_ptr<CommRequest> allReduce(const void *send, void *recv,
                                         int64_t count, DType dtype,
                                         ReduceOp op) override {
    return run([&](cudaStream_t s) {
      check(ncclAllReduce(send, recv, count, ncclType(dtype), ncclOp(op), comm,
                          s),
            "ncclAllReduce");
    });
  }
  std::unique_ptr<CommRequest> allGather(const void *send, void *recv,
                                         int64_t bytes) override {
    return run([&](cudaStream_t s) {
      check(ncclAllGather(send, recv, bytes, ncclChar, comm, s),
            "ncclAllGather");
    });
  }
  std::unique_ptr<CommRequest> reduceScatter(const void *send, void *recv,
                                             int64_t count, DType dtype,
                                             ReduceOp op) override {
    return run([&](cudaStream_t s) {
      check(ncclReduceScatter(send, recv, count, ncclType(dtype), ncclOp(op),
                              comm, s),
            "ncclReduceScatter");
    });
  }
  std::unique_ptr<CommRequest> allToAll(const void *send, void *recv,
                                        int64_t bytes) override {
    return run([&](cudaStream_t s) {
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
    return run([&](cudaStream_t s) {
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
    return run([&](cudaStream_t s) {
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
  template <typename Fn> std::unique_ptr<CommRequest> run(Fn &&issue) {
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
    return std::make_unique<NcclRequest>(done, streams->compute);
  }

  ncclComm_t comm;
  std::shared_ptr<Streams> streams;
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
  NcclWorld(CommWorld *bootstrap, cudaStream_t compute, int device)
      : bootstrap(bootstrap), streams(std::make_shared<Streams>()) {
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
    world = std::make_unique<NcclCommunicator>(comm, streams);
  }
  ~NcclWorld() override {
    world.reset();
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
    return std::make_unique<NcclCommunicator>(comm, streams);
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
  std::unique_ptr<NcclCommunicator> world;
  int64_t rank_ = 0, size_ = 1;
};

} // namespace

std::unique_ptr<CommWorld> createNcclWorld(CommWorld *bootstrap,
                                           void *computeStream, int device) {
  return std::make_unique<NcclWorld>(
      bootstrap, static_cast<cudaStream_t>(computeStream), device);
}

} // namespace autoshard::runtime::cuda
