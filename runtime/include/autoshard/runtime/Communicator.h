//===- Communicator.h - Process groups and collectives ----------*- C++ -*-===//
//
// The backend-neutral communication interface (DESIGN.md §8). A CommWorld is
// the job (every rank); it splits into Communicators, one per group of
// ranks, on which collectives and point-to-point transfers run on
// contiguous device buffers. MPI implements it for the CPU backend
// (runtime/lib/mpi, library autoshard_runtime_mpi); a NCCL implementation
// for the CUDA backend plugs in behind the same interface. A one-rank world
// that needs no library at all (LocalWorld) serves single-device runs.
//
// Every operation is started non-blocking and returns a CommRequest: a
// blocking collective is start + wait, an asynchronous one (`dist.*_start`)
// waits at its `dist.wait`. Buffers must stay untouched until the wait. A
// world may drive its operations from a communication thread of its own
// (MpiWorld.h, MpiWorldOptions::commThread): then a start only enqueues,
// the thread posts the operations in the order they were started and
// progresses them, and a wait blocks until the thread has seen its
// operation complete; a CommTracer can receive each operation's span.
//
// CommContext (below) is what an executor uses: one Communicator per
// distinct group (ordered list of mesh axes) that a program names, created
// once, in the same order on every rank, with color = the rank's
// coordinates on the other axes and key = its index in the group.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_COMMUNICATOR_H
#define AUTOSHARD_RUNTIME_COMMUNICATOR_H

#include "autoshard/runtime/Artifact.h"
#include "autoshard/runtime/Types.h"

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autoshard::runtime {

/// A communication failure (a library error, a size a library cannot
/// express); the message names the operation.
class CommError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Element-wise reduction of all_reduce / reduce_scatter.
enum class ReduceOp { Sum, Max };

/// Parses "sum" / "max"; throws CommError otherwise.
ReduceOp parseReduceOp(const std::string &name);

/// An operation in flight.
class CommRequest {
public:
  virtual ~CommRequest() = default;
  /// Blocks until the operation has completed (its result buffers are
  /// written and its input buffers may be reused). Throws CommError.
  virtual void wait() = 0;
};

/// One point-to-point transfer of `bytes` bytes with group member `peer`.
struct Transfer {
  int64_t peer = 0;
  void *data = nullptr; ///< Source of a send, destination of a receive.
  int64_t bytes = 0;
};

/// A group of ranks. Ranks inside it are numbered 0..size()-1 (the group
/// index). Counts are elements of `dtype`; byte sizes are for operations
/// that only move data.
class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int64_t rank() const = 0;
  virtual int64_t size() const = 0;
  /// What the group is, for messages (e.g. the communication watchdog's):
  /// CommContext sets its mesh axes, e.g. "[dp, tp]".
  void setLabel(std::string label) { label_ = std::move(label); }
  const std::string &label() const { return label_; }

  /// recv = reduction over the group of send (`count` elements); `send ==
  /// recv` is an in-place reduction.
  virtual std::unique_ptr<CommRequest> allReduce(const void *send, void *recv,
                                                 int64_t count, DType dtype,
                                                 ReduceOp op) = 0;
  /// recv[i * bytes, (i + 1) * bytes) = member i's send.
  virtual std::unique_ptr<CommRequest> allGather(const void *send, void *recv,
                                                 int64_t bytes) = 0;
  /// send holds size() blocks of `count` elements; recv = the reduction
  /// over the group of block rank().
  virtual std::unique_ptr<CommRequest> reduceScatter(const void *send,
                                                     void *recv, int64_t count,
                                                     DType dtype,
                                                     ReduceOp op) = 0;
  /// send block j (of `bytes` bytes) goes to member j; recv block i comes
  /// from member i.
  virtual std::unique_ptr<CommRequest> allToAll(const void *send, void *recv,
                                                int64_t bytes) = 0;
  /// Every member's `data` receives member `root`'s.
  virtual std::unique_ptr<CommRequest> broadcast(void *data, int64_t bytes,
                                                 int64_t root) = 0;
  /// Starts all `sends` and `recvs` at once (so a ring exchange cannot
  /// deadlock); completes when all have.
  virtual std::unique_ptr<CommRequest>
  exchange(const std::vector<Transfer> &sends,
           const std::vector<Transfer> &recvs) = 0;

private:
  std::string label_;
};

/// One finished communication operation, as the thread that drives it saw
/// it (CommTracer).
struct CommSpan {
  /// The Communicator method in snake case: "all_reduce", "all_gather",
  /// "reduce_scatter", "all_to_all", "broadcast", "exchange".
  std::string_view name;
  /// The library call(s), e.g. "MPI_Iallreduce".
  std::string_view library;
  /// Bytes of this member's input buffer (an exchange: sent plus received).
  int64_t bytes = 0;
  /// Members of the group it ran on.
  int64_t ranks = 0;
  /// Microseconds of std::steady_clock (ExecutionTracer's clock): when the
  /// caller started it, when the library call was posted, and how long it
  /// then took until the driving thread saw it complete.
  double queuedUs = 0, startUs = 0, durUs = 0;
  /// Whether it ended with an error (its wait throws CommError).
  bool failed = false;
};

/// Receives the span of each communication operation from the thread that
/// drives it (MpiWorld's communication thread), concurrently with the
/// threads that start and wait: implementations must be thread-safe, and
/// quick (the caller holds its own lock meanwhile).
class CommTracer {
public:
  virtual ~CommTracer() = default;
  virtual void recordComm(const CommSpan &span) = 0;
};

/// The whole job.
class CommWorld {
public:
  virtual ~CommWorld() = default;
  /// "mpi", "local", ...
  virtual std::string name() const = 0;
  virtual int64_t rank() const = 0;
  virtual int64_t size() const = 0;
  /// Ranks of the job on this rank's node (sharing its memory), >= 1: what
  /// the CPU kernels' thread policy divides the node's cores by.
  virtual int64_t localSize() const { return 1; }
  /// Collective over the world: the ranks that pass the same `color` form
  /// one Communicator, numbered by `key`.
  virtual std::unique_ptr<Communicator> split(int64_t color, int64_t key) = 0;
  /// Ends every rank of the job with exit code `code` (never returns).
  [[noreturn]] virtual void abort(int code) = 0;
  /// Sends the span of every operation started from now on (on any of this
  /// world's communicators) to `tracer`; null stops. Once it returns, an
  /// earlier tracer is never called again. Returns whether this world
  /// reports spans at all: only one with a communication thread does
  /// (without one, an operation's progress is known only at its wait).
  virtual bool setCommTracer(CommTracer *tracer) {
    (void)tracer;
    return false;
  }
  /// Says what the job is doing from now on (e.g. "step 12"), for the
  /// messages of the communication watchdog (MpiWorldOptions::timeoutS):
  /// a timed-out operation is reported with the activity it was waited in.
  /// Thread-safe. The default ignores it.
  virtual void setActivity(const std::string &activity) { (void)activity; }
};

/// Default seconds a rank waits for one communication operation before the
/// communication watchdog ends the job (`shard-run --comm-timeout`; 0: wait
/// forever). As torch's NCCL watchdog, generous: a slow step or a long
/// checkpoint write on another rank must not trip it.
constexpr double kDefaultCommTimeoutS = 300;

/// Default interval, in microseconds, between two polls of a communication
/// thread's outstanding operations while no caller is waiting for one
/// (MpiWorldOptions::pollUs, `shard-run --comm-poll-us`).
constexpr int64_t kDefaultCommPollUs = 50;

/// A one-rank world without any communication library.
std::unique_ptr<CommWorld> createLocalWorld();

/// Whether this process was started by a parallel launcher (mpirun, srun,
/// ...): OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_RANK or PMI_SIZE is set.
bool startedByLauncher();

/// The groups a program communicates in, each created once.
class CommContext {
public:
  /// Creates one communicator per distinct `axes` list named by a `dist.*`
  /// instruction of `artifact` (and one over all mesh axes), collectively
  /// on every rank of `world`. Throws CommError if the world's size is not
  /// the artifact's world size.
  CommContext(const Artifact &artifact, CommWorld &world);

  CommWorld &world() { return world_; }
  const Mesh &mesh() const { return mesh_; }
  int64_t rank() const { return world_.rank(); }

  /// The communicator of the group over `axes` containing this rank;
  /// throws CommError if the program named no such group.
  Communicator &group(const std::vector<std::string> &axes);
  /// The group of every rank (over all mesh axes, in mesh order).
  Communicator &all();
  /// Number of distinct groups created.
  size_t numGroups() const { return groups.size(); }

  /// An asynchronous operation between its `dist.*_start` and its
  /// `dist.wait`: the request, and what the wait does after it completes
  /// (e.g. unpack a staging buffer into the result).
  struct Pending {
    std::unique_ptr<CommRequest> request;
    std::function<void()> finish;
  };
  /// The slot of `handle` in `function` (created on first use; stable).
  Pending &pending(std::string_view function, int64_t handle);

private:
  CommWorld &world_;
  Mesh mesh_;
  std::map<std::vector<std::string>, std::unique_ptr<Communicator>> groups;
  std::map<std::pair<std::string, int64_t>, Pending> slots;
};

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_COMMUNICATOR_H
