//===- MpiWorld.cpp - CommWorld and Communicator over MPI -----------------===//

#include "autoshard/runtime/mpi/MpiWorld.h"
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <unistd.h>

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <exception>
#include <vector>

namespace autoshard::runtime {

namespace {

void check(int rc, const char *what) {
  if (rc == MPI_SUCCESS)
    return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw CommError(std::string(what) + " failed: " + std::string(text, len));
}

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

class MpiRequest : public CommRequest {
public:
  MpiRequest(std::vector<MPI_Request> requests, const char *what)
      : requests(std::move(requests)), what(what) {}
  void wait() override {
    if (requests.empty())
      return;
    check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(),
                      MPI_STATUSES_IGNORE),
          what);
    requests.clear();
  }

private:
  std::vector<MPI_Request> requests;
  const char *what;
};

std::unique_ptr<CommRequest> one(MPI_Request r, const char *what) {
  return std::make_unique<MpiRequest>(std::vector<MPI_Request>{r}, what);
}

class MpiCommunicator : public Communicator {
public:
  explicit MpiCommunicator(MPI_Comm comm) : comm(comm) {
    int r, n;
    check(MPI_Comm_rank(comm, &r), "MPI_Comm_rank");
    check(MPI_Comm_size(comm, &n), "MPI_Comm_size");
    rank_ = r;
    size_ = n;
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    // While an error unwinds, the job is about to be aborted: freeing (a
    // collective call) could wait for ranks that will never come.
    if (!finalized && std::uncaught_exceptions() == 0)
      MPI_Comm_free(&comm);
  }
  int64_t rank() const override { return rank_; }
  int64_t size() const override { return size_; }

  std::unique_ptr<CommRequest> allReduce(const void *send, void *recv,
                                         int64_t count, DType dtype,
                                         ReduceOp op) override {
    MPI_Request r;
    check(MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv,
                         toInt(count, "MPI_Iallreduce"),
                         mpiType(dtype, "MPI_Iallreduce"), mpiOp(op), comm, &r),
          "MPI_Iallreduce");
    return one(r, "MPI_Iallreduce");
  }
  std::unique_ptr<CommRequest> allGather(const void *send, void *recv,
                                         int64_t bytes) override {
    MPI_Request r;
    int n = toInt(bytes, "MPI_Iallgather");
    check(MPI_Iallgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm, &r),
          "MPI_Iallgather");
    return one(r, "MPI_Iallgather");
  }
  std::unique_ptr<CommRequest> reduceScatter(const void *send, void *recv,
                                             int64_t count, DType dtype,
                                             ReduceOp op) override {
    MPI_Request r;
    check(MPI_Ireduce_scatter_block(
              send, recv, toInt(count, "MPI_Ireduce_scatter_block"),
              mpiType(dtype, "MPI_Ireduce_scatter_block"), mpiOp(op), comm, &r),
          "MPI_Ireduce_scatter_block");
    return one(r, "MPI_Ireduce_scatter_block");
  }
  std::unique_ptr<CommRequest> allToAll(const void *send, void *recv,
                                        int64_t bytes) override {
    MPI_Request r;
    int n = toInt(bytes, "MPI_Ialltoall");
    check(MPI_Ialltoall(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm, &r),
          "MPI_Ialltoall");
    return one(r, "MPI_Ialltoall");
  }
  std::unique_ptr<CommRequest> broadcast(void *data, int64_t bytes,
                                         int64_t root) override {
    MPI_Request r;
    check(MPI_Ibcast(data, toInt(bytes, "MPI_Ibcast"), MPI_BYTE,
                     static_cast<int>(root), comm, &r),
          "MPI_Ibcast");
    return one(r, "MPI_Ibcast");
  }
  std::unique_ptr<CommRequest>
  exchange(const std::vector<Transfer> &sends,
           const std::vector<Transfer> &recvs) override {
    std::vector<MPI_Request> requests;
    // Receives first, so that the matching sends find them posted.
    for (const Transfer &t : recvs) {
      MPI_Request r;
      check(MPI_Irecv(t.data, toInt(t.bytes, "MPI_Irecv"), MPI_BYTE,
                      static_cast<int>(t.peer), kTag, comm, &r),
            "MPI_Irecv");
      requests.push_back(r);
    }
    for (const Transfer &t : sends) {
      MPI_Request r;
      check(MPI_Isend(t.data, toInt(t.bytes, "MPI_Isend"), MPI_BYTE,
                      static_cast<int>(t.peer), kTag, comm, &r),
            "MPI_Isend");
      requests.push_back(r);
    }
    return std::make_unique<MpiRequest>(std::move(requests),
                                        "MPI_Isend/MPI_Irecv");
  }

private:
  static constexpr int kTag = 0x4153; // "AS"
  MPI_Comm comm;
  int64_t rank_ = 0, size_ = 1;
};

class MpiWorld : public CommWorld {
public:
  MpiWorld(int *argc, char ***argv) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided),
            "MPI_Init_thread");
      ownsMpi = true;
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
  }
  ~MpiWorld() override {
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
    MPI_Comm comm;
    check(MPI_Comm_split(MPI_COMM_WORLD, toInt(color, "MPI_Comm_split"),
                         toInt(key, "MPI_Comm_split"), &comm),
          "MPI_Comm_split");
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    return std::make_unique<MpiCommunicator>(comm);
  }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code); // MPI_Abort does not return; keep the promise anyway
  }

private:
  bool ownsMpi = false;
  int64_t rank_ = 0, size_ = 1, localSize_ = 1;
};

} // namespace

std::unique_ptr<CommWorld> createMpiWorld(int *argc, char ***argv) {
  return std::make_unique<MpiWorld>(argc, argv);
}

} // namespace autoshard::runtime

std::vector<std::string>
autoshard::runtime::mpirunCommand(int ranks, int argc, char **argv,
                                  const std::vector<std::string> &env) {
  const char *mpirun = std::getenv("AUTOSHARD_MPIRUN");
  if (!mpirun || !*mpirun)
    mpirun = "mpirun";
  std::vector<std::string> args = {
      mpirun,      "-n",  std::to_string(ranks), "--oversubscribe",
      "--bind-to", "none"};
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
