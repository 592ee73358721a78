//===- MpiWorld.cpp - CommWorld and Communicator over MPI -----------------===//

#include "autoshard/runtime/mpi/MpiWorld.h"

#include "CommThread.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <unistd.h>

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <exception>
#include <thread>
#include <vector>

namespace autoshard::runtime {

namespace {

using mpi_detail::check;
using mpi_detail::CommThread;
using mpi_detail::OpInfo;
using mpi_detail::PostFn;
using mpi_detail::WaitClock;
using mpi_detail::Watchdog;

int toInt(int64_t n, const char *what) {
  if (n < 0 || n > INT_MAX)
    throw CommError(std::string(what) + ": " + std::to_string(n) +
                    " elements/bytes do not fit MPI's int count");
  return static_cast<int>(n);
}

MPI_Datatype mpiType(DType dtype, const char *what) {
  switch (dtype) {
  case DType::F32:
    return MPI_FLOAT;
  case DType::F64:
    return MPI_DOUBLE;
  case DType::I32:
    return MPI_INT32_T;
  case DType::I64:
    return MPI_INT64_T;
  default:
    throw CommError(std::string(what) + ": MPI cannot reduce " +
                    std::string(dtypeName(dtype)) +
                    " (supported: f32, f64, i32, i64)");
  }
}

MPI_Op mpiOp(ReduceOp op) { return op == ReduceOp::Sum ? MPI_SUM : MPI_MAX; }

const char *threadLevelName(int level) {
  switch (level) {
  case MPI_THREAD_SINGLE:
    return "MPI_THREAD_SINGLE";
  case MPI_THREAD_FUNNELED:
    return "MPI_THREAD_FUNNELED";
  case MPI_THREAD_SERIALIZED:
    return "MPI_THREAD_SERIALIZED";
  case MPI_THREAD_MULTIPLE:
    return "MPI_THREAD_MULTIPLE";
  default:
    return "an unknown thread level";
  }
}

/// Requests posted on the calling thread, completed in wait(): polled
/// (MPI_Testall) with WaitClock's backoff, under the watchdog if any.
class MpiRequest : public CommRequest {
public:
  MpiRequest(std::vector<MPI_Request> requests, OpInfo info,
             std::shared_ptr<Watchdog> watchdog)
      : requests(std::move(requests)), info(std::move(info)),
        watchdog(std::move(watchdog)) {}
  void wait() override {
    if (requests.empty())
      return;
    WaitClock clock;
    for (;;) {
      int done = 0;
      check(MPI_Testall(static_cast<int>(requests.size()), requests.data(),
                        &done, MPI_STATUSES_IGNORE),
            info.library);
      if (done)
        break;
      double waited = clock.pause();
      if (watchdog && waited >= Watchdog::kCheckAfterS)
        watchdog->check(info, waited);
    }
    requests.clear();
  }

private:
  std::vector<MPI_Request> requests;
  OpInfo info;
  std::shared_ptr<Watchdog> watchdog;
};

class MpiCommunicator : public Communicator {
public:
  /// `engine` (may be null: the caller posts) drives every operation;
  /// `worldRanks` are the members' ranks in MPI_COMM_WORLD; `watchdog` (may
  /// be null) times the waits of operations the caller posts.
  MpiCommunicator(MPI_Comm comm, int64_t rank, int64_t size,
                  std::vector<int> worldRanks,
                  std::shared_ptr<CommThread> engine,
                  std::shared_ptr<Watchdog> watchdog)
      : comm(comm), rank_(rank), size_(size), worldRanks(std::move(worldRanks)),
        engine(std::move(engine)), watchdog(std::move(watchdog)) {}
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    // While an error unwinds, the job is about to be aborted: freeing (a
    // collective call) could wait for ranks that will never come.
    if (finalized || std::uncaught_exceptions() != 0)
      return;
    try {
      if (engine && engine->running())
        engine->call("MPI_Comm_free", [this] { MPI_Comm_free(&comm); });
      else
        MPI_Comm_free(&comm);
    } catch (const CommError &) {
      // The thread stopped meanwhile: MPI_Finalize frees it.
    }
  }
  int64_t rank() const override { return rank_; }
  int64_t size() const override { return size_; }

  std::unique_ptr<CommRequest> allReduce(const void *send, void *recv,
                                         int64_t count, DType dtype,
                                         ReduceOp op) override {
    const char *what = "MPI_Iallreduce";
    int n = toInt(count, what);
    MPI_Datatype type = mpiType(dtype, what);
    MPI_Op mop = mpiOp(op);
    MPI_Comm c = comm;
    const void *in = send == recv ? MPI_IN_PLACE : send;
    return start({what, "all_reduce", count * dtypeSize(dtype), size_},
                 [=](std::vector<MPI_Request> &rs) {
                   MPI_Request r;
                   check(MPI_Iallreduce(in, recv, n, type, mop, c, &r), what);
                   rs.push_back(r);
                 });
  }
  std::unique_ptr<CommRequest> allGather(const void *send, void *recv,
                                         int64_t bytes) override {
    const char *what = "MPI_Iallgather";
    int n = toInt(bytes, what);
    MPI_Comm c = comm;
    return start(
        {what, "all_gather", bytes, size_}, [=](std::vector<MPI_Request> &rs) {
          MPI_Request r;
          check(MPI_Iallgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, c, &r),
                what);
          rs.push_back(r);
        });
  }
  std::unique_ptr<CommRequest> reduceScatter(const void *send, void *recv,
                                             int64_t count, DType dtype,
                                             ReduceOp op) override {
    const char *what = "MPI_Ireduce_scatter_block";
    int n = toInt(count, what);
    MPI_Datatype type = mpiType(dtype, what);
    MPI_Op mop = mpiOp(op);
    MPI_Comm c = comm;
    return start(
        {what, "reduce_scatter", count * dtypeSize(dtype) * size_, size_},
        [=](std::vector<MPI_Request> &rs) {
          MPI_Request r;
          check(MPI_Ireduce_scatter_block(send, recv, n, type, mop, c, &r),
                what);
          rs.push_back(r);
        });
  }
  std::unique_ptr<CommRequest> allToAll(const void *send, void *recv,
                                        int64_t bytes) override {
    const char *what = "MPI_Ialltoall";
    int n = toInt(bytes, what);
    MPI_Comm c = comm;
    return start(
        {what, "all_to_all", bytes * size_, size_},
        [=](std::vector<MPI_Request> &rs) {
          MPI_Request r;
          check(MPI_Ialltoall(send, n, MPI_BYTE, recv, n, MPI_BYTE, c, &r),
                what);
          rs.push_back(r);
        });
  }
  std::unique_ptr<CommRequest> broadcast(void *data, int64_t bytes,
                                         int64_t root) override {
    const char *what = "MPI_Ibcast";
    int n = toInt(bytes, what);
    int from = static_cast<int>(root);
    MPI_Comm c = comm;
    return start({what, "broadcast", bytes, size_},
                 [=](std::vector<MPI_Request> &rs) {
                   MPI_Request r;
                   check(MPI_Ibcast(data, n, MPI_BYTE, from, c, &r), what);
                   rs.push_back(r);
                 });
  }
  std::unique_ptr<CommRequest>
  exchange(const std::vector<Transfer> &sends,
           const std::vector<Transfer> &recvs) override {
    const char *what = "MPI_Isend/MPI_Irecv";
    int64_t bytes = 0;
    for (const std::vector<Transfer> *list : {&sends, &recvs})
      for (const Transfer &t : *list) {
        toInt(t.bytes, list == &sends ? "MPI_Isend" : "MPI_Irecv");
        bytes += t.bytes;
      }
    MPI_Comm c = comm;
    OpInfo info{what, "exchange", bytes, size_};
    for (const Transfer &t : recvs)
      info.recvFrom.push_back(t.peer);
    for (const Transfer &t : sends)
      info.sendTo.push_back(t.peer);
    return start(std::move(info), [=](std::vector<MPI_Request> &rs) {
      // Receives first, so that the matching sends find them
      // posted.
      for (const Transfer &t : recvs) {
        MPI_Request r;
        check(MPI_Irecv(t.data, static_cast<int>(t.bytes), MPI_BYTE,
                        static_cast<int>(t.peer), kTag, c, &r),
              "MPI_Irecv");
        rs.push_back(r);
      }
      for (const Transfer &t : sends) {
        MPI_Request r;
        check(MPI_Isend(t.data, static_cast<int>(t.bytes), MPI_BYTE,
                        static_cast<int>(t.peer), kTag, c, &r),
              "MPI_Isend");
        rs.push_back(r);
      }
    });
  }

private:
  /// Posts now (no communication thread) or enqueues on the thread. The
  /// arguments were checked by the caller, so that a count MPI cannot
  /// express still throws at the start on either path.
  std::unique_ptr<CommRequest> start(OpInfo info, PostFn post) {
    info.label = &label();
    info.worldRanks = &worldRanks;
    if (engine)
      return engine->submit(info, std::move(post));
    std::vector<MPI_Request> requests;
    post(requests);
    return std::make_unique<MpiRequest>(std::move(requests), std::move(info),
                                        watchdog);
  }

  static constexpr int kTag = 0x4153; // "AS"
  MPI_Comm comm;
  int64_t rank_ = 0, size_ = 1;
  std::vector<int> worldRanks;
  std::shared_ptr<CommThread> engine;
  std::shared_ptr<Watchdog> watchdog;
};

class MpiWorld : public CommWorld {
public:
  MpiWorld(int *argc, char ***argv, const MpiWorldOptions &options) {
    if (!(options.timeoutS >= 0) || options.timeoutS > 1e9)
      throw CommError("the communication timeout must be >= 0 seconds (0: "
                      "none) and at most 1e9, found " +
                      std::to_string(options.timeoutS));
    if (options.commThread && options.pollUs < 1)
      throw CommError("the communication thread's poll interval must be >= "
                      "1 microsecond, found " +
                      std::to_string(options.pollUs));
    // The thread calls MPI while the caller may call MPI_Abort (an error
    // on this rank): MPI_THREAD_SERIALIZED would not allow that.
    const int required =
        options.commThread ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED;
    int initialized = 0;
    MPI_Initialized(&initialized);
    int provided = 0;
    if (!initialized) {
      check(MPI_Init_thread(argc, argv, required, &provided),
            "MPI_Init_thread");
      ownsMpi = true;
    } else {
      check(MPI_Query_thread(&provided), "MPI_Query_thread");
    }
    if (options.commThread && provided < MPI_THREAD_MULTIPLE) {
      if (ownsMpi)
        MPI_Finalize(); // every rank gets the same level: all end cleanly
      throw CommError(
          std::string("the communication thread needs MPI_THREAD_MULTIPLE, "
                      "but the MPI library provides ") +
          threadLevelName(provided) +
          " (use an MPI built with thread support, or turn the "
          "communication thread off)");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int r, n;
    check(MPI_Comm_rank(MPI_COMM_WORLD, &r), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &n), "MPI_Comm_size");
    rank_ = r;
    size_ = n;
    MPI_Comm node;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, r,
                              MPI_INFO_NULL, &node),
          "MPI_Comm_split_type");
    int local = 1;
    check(MPI_Comm_size(node, &local), "MPI_Comm_size");
    MPI_Comm_free(&node);
    localSize_ = local;
    if (options.timeoutS > 0)
      watchdog = std::make_shared<Watchdog>(options.timeoutS, r, n);
    // From here on the thread makes every MPI call but MPI_Abort,
    // MPI_Finalize and the watchdog's (MPI_THREAD_MULTIPLE).
    if (options.commThread)
      engine = CommThread::start(options.pollUs, watchdog);
  }
  ~MpiWorld() override {
    // Joined before MPI_Finalize, which no other thread may overlap.
    if (engine)
      engine->stop();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (ownsMpi && !finalized)
      MPI_Finalize();
  }
  std::string name() const override { return "mpi"; }
  int64_t rank() const override { return rank_; }
  int64_t size() const override { return size_; }
  int64_t localSize() const override { return localSize_; }
  std::unique_ptr<Communicator> split(int64_t color, int64_t key) override {
    int c = toInt(color, "MPI_Comm_split"), k = toInt(key, "MPI_Comm_split");
    MPI_Comm comm = MPI_COMM_NULL;
    int r = 0, n = 1;
    std::vector<int> worldRanks;
    auto doSplit = [&] {
      check(MPI_Comm_split(MPI_COMM_WORLD, c, k, &comm), "MPI_Comm_split");
      MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
      check(MPI_Comm_rank(comm, &r), "MPI_Comm_rank");
      check(MPI_Comm_size(comm, &n), "MPI_Comm_size");
      // The members' world ranks, for the watchdog's messages.
      MPI_Group group, world;
      check(MPI_Comm_group(comm, &group), "MPI_Comm_group");
      check(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
      std::vector<int> local(n);
      for (int i = 0; i < n; ++i)
        local[i] = i;
      worldRanks.assign(n, 0);
      check(MPI_Group_translate_ranks(group, n, local.data(), world,
                                      worldRanks.data()),
            "MPI_Group_translate_ranks");
      MPI_Group_free(&group);
      MPI_Group_free(&world);
    };
    if (engine)
      engine->call("MPI_Comm_split", doSplit);
    else
      doSplit();
    return std::make_unique<MpiCommunicator>(comm, r, n, std::move(worldRanks),
                                             engine, watchdog);
  }
  [[noreturn]] void abort(int code) override {
    // After the watchdog, the other ranks that report are still printing:
    // the first MPI_Abort would end them mid-sentence.
    if (watchdog && watchdog->gaveUp())
      std::this_thread::sleep_for(
          std::chrono::duration<double>(Watchdog::kAbortPauseS));
    // Also with a communication thread inside MPI_Testsome (hence
    // MPI_THREAD_MULTIPLE); MPI_Abort ends the thread with the process.
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code); // MPI_Abort does not return; keep the promise anyway
  }
  bool setCommTracer(CommTracer *tracer) override {
    if (!engine)
      return false;
    engine->setTracer(tracer);
    return true;
  }
  void setActivity(const std::string &activity) override {
    if (watchdog)
      watchdog->setActivity(activity);
  }

private:
  bool ownsMpi = false;
  int64_t rank_ = 0, size_ = 1, localSize_ = 1;
  std::shared_ptr<Watchdog> watchdog;
  std::shared_ptr<CommThread> engine;
};

} // namespace

std::unique_ptr<CommWorld> createMpiWorld(int *argc, char ***argv,
                                          const MpiWorldOptions &options) {
  return std::make_unique<MpiWorld>(argc, argv, options);
}

} // namespace autoshard::runtime

namespace {
/// OpenMPI's out-of-band TCP keepalive: idle seconds before the first
/// probe, seconds between probes, probes missed before the peer is lost.
constexpr const char *kOobKeepalive[][2] = {{"oob_tcp_keepalive_time", "5"},
                                            {"oob_tcp_keepalive_intvl", "2"},
                                            {"oob_tcp_keepalive_probes", "3"}};
} // namespace

std::vector<std::string>
autoshard::runtime::mpirunCommand(int ranks, int argc, char **argv,
                                  const std::vector<std::string> &env) {
  const char *mpirun = std::getenv("AUTOSHARD_MPIRUN");
  if (!mpirun || !*mpirun)
    mpirun = "mpirun";
  std::vector<std::string> args = {
      mpirun,      "-n",  std::to_string(ranks), "--oversubscribe",
      "--bind-to", "none"};
  // The out-of-band channel between mpirun and its daemons notices a dead
  // link or host within ~11 s instead of its default ~8 minutes (docs/
  // running.md, "Across nodes").
  for (const char *const *kv : kOobKeepalive)
    args.insert(args.end(), {"--mca", kv[0], kv[1]});
  if (geteuid() == 0)
    args.push_back("--allow-run-as-root");
  std::vector<std::string> exported = env;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 0 && ranks > cores)
    exported.insert(exported.end(), {"OMPI_MCA_mpi_yield_when_idle=1",
                                     "OPENBLAS_NUM_THREADS=1"});
  for (const std::string &e : exported) {
    args.push_back("-x");
    args.push_back(e);
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  args.push_back(n > 0 ? std::string(self, n) : std::string(argv[0]));
  for (int i = 1; i < argc; ++i)
    args.push_back(argv[i]);
  return args;
}

void autoshard::runtime::execUnderMpirun(int ranks, int argc, char **argv,
                                         const std::vector<std::string> &env) {
  std::vector<std::string> args = mpirunCommand(ranks, argc, argv, env);
  std::vector<char *> cargs;
  for (std::string &a : args)
    cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::fflush(stdout);
  execvp(cargs[0], cargs.data());
  throw std::runtime_error("cannot run '" + args[0] + "' to start " +
                           std::to_string(ranks) +
                           " ranks: " + std::strerror(errno) +
                           " (install openmpi-bin, or set AUTOSHARD_MPIRUN)");
}
