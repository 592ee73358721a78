//===- CommThreadTest.cpp - MPI collectives through the comm thread ------===//
//
// Run under mpiexec with 2 or 4 ranks (CTest does). One process holds two
// worlds over the same MPI job: one with a communication thread (which
// initialises MPI with MPI_THREAD_MULTIPLE) and one without (the caller
// posts and waits itself, as with `shard-run --comm-thread off`). Every
// operation of the Communicator interface runs on both, on inputs whose
// sums round differently in every order, and the results must be bitwise
// the same: the thread changes who calls MPI, not what MPI computes. Also:
// many operations on two groups started before any wait, progress while
// the caller makes no MPI call (the point of the thread), the trace spans,
// errors (named by their MPI call, the thread still working afterwards),
// and destruction with an operation still outstanding (never a hang).
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/mpi/MpiWorld.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace autoshard::runtime;

namespace {

CommWorld *gThreaded = nullptr; // with a communication thread
CommWorld *gDirect = nullptr;   // without (same job, same ranks)

/// Rank r's input: n floats in [-1, 1) with full mantissas (a sum's bits
/// depend on the order it is added in), distinct per rank and `salt`.
std::vector<float> input(int64_t rank, int64_t n, uint32_t salt = 0) {
  std::vector<float> x(n);
  uint64_t s = 0x9E3779B97F4A7C15ull * (rank + 1) + salt * 0x2545F491ull;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = static_cast<float>(static_cast<int64_t>(s >> 40) - (1 << 23)) /
           static_cast<float>(1 << 23);
  }
  return x;
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// The same group split from both worlds (in the same order on every rank).
struct Groups {
  std::unique_ptr<Communicator> direct, threaded;
};

Groups split(int64_t color, int64_t key) {
  Groups g;
  g.direct = gDirect->split(color, key);
  g.threaded = gThreaded->split(color, key);
  return g;
}

/// The operations under test, each returning this member's result.
enum class Op {
  AllReduceSum,
  AllReduceMax,
  AllReduceInPlace,
  AllGather,
  ReduceScatter,
  AllToAll,
  Broadcast,
  Exchange
};

const char *opName(Op op) {
  switch (op) {
  case Op::AllReduceSum:
    return "all_reduce sum";
  case Op::AllReduceMax:
    return "all_reduce max";
  case Op::AllReduceInPlace:
    return "all_reduce sum in place";
  case Op::AllGather:
    return "all_gather";
  case Op::ReduceScatter:
    return "reduce_scatter";
  case Op::AllToAll:
    return "all_to_all";
  case Op::Broadcast:
    return "broadcast";
  case Op::Exchange:
    return "exchange";
  }
  return "?";
}

const Op kOps[] = {Op::AllReduceSum, Op::AllReduceMax,  Op::AllReduceInPlace,
                   Op::AllGather,    Op::ReduceScatter, Op::AllToAll,
                   Op::Broadcast,    Op::Exchange};

/// One started operation: its buffers live here until the wait.
struct Started {
  std::vector<float> in, out;
  std::unique_ptr<CommRequest> request;
};

/// Starts `op` on `c` with `n` elements (per block) of salted input;
/// `root` is the broadcast root. The result is out after the wait.
std::unique_ptr<Started> start(Op op, Communicator &c, int64_t n, uint32_t salt,
                               int64_t root = 0) {
  auto s = std::make_unique<Started>();
  int64_t me = c.rank(), g = c.size();
  switch (op) {
  case Op::AllReduceSum:
  case Op::AllReduceMax:
    s->in = input(me, n, salt);
    s->out.assign(n, -7);
    s->request =
        c.allReduce(s->in.data(), s->out.data(), n, DType::F32,
                    op == Op::AllReduceSum ? ReduceOp::Sum : ReduceOp::Max);
    break;
  case Op::AllReduceInPlace:
    s->out = input(me, n, salt);
    s->request =
        c.allReduce(s->out.data(), s->out.data(), n, DType::F32, ReduceOp::Sum);
    break;
  case Op::AllGather:
    s->in = input(me, n, salt);
    s->out.assign(n * g, -7);
    s->request = c.allGather(s->in.data(), s->out.data(), n * sizeof(float));
    break;
  case Op::ReduceScatter:
    s->in = input(me, n * g, salt);
    s->out.assign(n, -7);
    s->request = c.reduceScatter(s->in.data(), s->out.data(), n, DType::F32,
                                 ReduceOp::Sum);
    break;
  case Op::AllToAll:
    s->in = input(me, n * g, salt);
    s->out.assign(n * g, -7);
    s->request = c.allToAll(s->in.data(), s->out.data(), n * sizeof(float));
    break;
  case Op::Broadcast:
    s->out = me == root ? input(me, n, salt) : std::vector<float>(n, -7);
    s->request = c.broadcast(s->out.data(), n * sizeof(float), root);
    break;
  case Op::Exchange: {
    // A ring: send to the right, receive from the left (to itself in a
    // group of one).
    s->in = input(me, n, salt);
    s->out.assign(n, -7);
    int64_t bytes = n * static_cast<int64_t>(sizeof(float));
    s->request = c.exchange({{(me + 1) % g, s->in.data(), bytes}},
                            {{(me + g - 1) % g, s->out.data(), bytes}});
    break;
  }
  }
  return s;
}

std::vector<float> run(Op op, Communicator &c, int64_t n, uint32_t salt,
                       int64_t root = 0) {
  std::unique_ptr<Started> s = start(op, c, n, salt, root);
  s->request->wait();
  return std::move(s->out);
}

/// What a data movement (or a max) must give member `me` of a group of `g`
/// whose member i is world rank i; empty for the sums.
std::vector<float> expected(Op op, int64_t g, int64_t me, int64_t n,
                            uint32_t salt, int64_t root) {
  std::vector<float> want;
  switch (op) {
  case Op::AllGather:
    for (int64_t i = 0; i < g; ++i) {
      std::vector<float> x = input(i, n, salt);
      want.insert(want.end(), x.begin(), x.end());
    }
    break;
  case Op::AllToAll:
    for (int64_t i = 0; i < g; ++i) {
      std::vector<float> x = input(i, n * g, salt);
      want.insert(want.end(), x.begin() + me * n, x.begin() + (me + 1) * n);
    }
    break;
  case Op::Broadcast:
    want = input(root, n, salt);
    break;
  case Op::Exchange:
    want = input((me + g - 1) % g, n, salt);
    break;
  case Op::AllReduceMax:
    want.assign(n, -2);
    for (int64_t i = 0; i < g; ++i) {
      std::vector<float> x = input(i, n, salt);
      for (int64_t k = 0; k < n; ++k)
        want[k] = std::max(want[k], x[k]);
    }
    break;
  default:
    break;
  }
  return want;
}

TEST(CommThread, EveryOperationIsBitwiseTheDirectPaths) {
  Groups all = split(0, gThreaded->rank());
  int64_t me = all.threaded->rank(), g = all.threaded->size();
  uint32_t salt = 0;
  // 1 element, a small message, and one large enough for MPI's multi-round
  // (segmented, rendezvous) algorithms.
  for (int64_t n : {int64_t(1), int64_t(1000), int64_t(1) << 18})
    for (Op op : kOps)
      for (int64_t root = 0; root < (op == Op::Broadcast ? g : 1); ++root) {
        ++salt;
        std::vector<float> direct = run(op, *all.direct, n, salt, root);
        std::vector<float> threaded = run(op, *all.threaded, n, salt, root);
        EXPECT_TRUE(sameBits(direct, threaded))
            << opName(op) << " n=" << n << " root=" << root;
        std::vector<float> want = expected(op, g, me, n, salt, root);
        if (!want.empty()) {
          EXPECT_TRUE(sameBits(threaded, want))
              << opName(op) << " n=" << n << " root=" << root
              << ": not the expected values";
        }
      }
}

/// Counts spans and keeps them (called from the communication thread).
class SpanLog : public CommTracer {
public:
  void recordComm(const CommSpan &span) override {
    std::lock_guard<std::mutex> lock(mu);
    spans.push_back(span);
    names.push_back(std::string(span.name));
    libraries.push_back(std::string(span.library));
    count.fetch_add(1);
  }
  std::atomic<int> count{0};
  std::mutex mu;
  std::vector<CommSpan> spans;
  std::vector<std::string> names, libraries; // spans' views, kept alive
};

/// CommSpan::name of `op`: its opName up to the variant ("all_reduce").
std::string spanName(Op op) {
  std::string name = opName(op);
  return name.substr(0, name.find(' '));
}

TEST(CommThread, ManyOperationsOnTwoGroupsStartedBeforeAnyWait) {
  int64_t rank = gThreaded->rank(), n = gThreaded->size();
  Groups all = split(0, rank);
  // Pairs of neighbours (one group of one when the job has one rank).
  Groups pair = split(rank / 2, rank % 2);
  struct Item {
    Op op;
    Groups *groups;
    int64_t count, root;
  };
  const std::vector<Item> items = {
      {Op::AllReduceSum, &all, int64_t(1) << 17, 0},
      {Op::AllGather, &pair, 3000, 0},
      {Op::ReduceScatter, &all, 5000, 0},
      {Op::AllToAll, &pair, int64_t(1) << 15, 0},
      {Op::Broadcast, &all, 2000, n - 1},
      {Op::Exchange, &all, int64_t(1) << 16, 0},
      {Op::AllReduceInPlace, &pair, 7, 0},
      {Op::AllReduceMax, &all, 100, 0},
      {Op::Exchange, &pair, 10, 0},
  };
  // Reference: the direct path, one operation at a time.
  std::vector<std::vector<float>> want;
  for (size_t i = 0; i < items.size(); ++i)
    want.push_back(run(items[i].op, *items[i].groups->direct, items[i].count,
                       static_cast<uint32_t>(100 + i), items[i].root));
  SpanLog log;
  ASSERT_TRUE(gThreaded->setCommTracer(&log));
  for (int round = 0; round < 3; ++round) {
    std::vector<std::unique_ptr<Started>> inFlight;
    for (size_t i = 0; i < items.size(); ++i)
      inFlight.push_back(start(items[i].op, *items[i].groups->threaded,
                               items[i].count, static_cast<uint32_t>(100 + i),
                               items[i].root));
    // Waited in another order than started (round 0: reversed).
    for (size_t k = 0; k < items.size(); ++k) {
      size_t i = round == 0 ? items.size() - 1 - k : (k * 5 + round) % 9;
      inFlight[i]->request->wait();
    }
    for (size_t i = 0; i < items.size(); ++i)
      EXPECT_TRUE(sameBits(inFlight[i]->out, want[i]))
          << "round " << round << ", operation " << i << " ("
          << opName(items[i].op) << ")";
  }
  gThreaded->setCommTracer(nullptr);
  // Posted in the order started (what keeps the collective order the same
  // on every rank), whatever order they completed in.
  std::vector<std::pair<double, std::string>> posted;
  for (size_t i = 0; i < log.spans.size(); ++i)
    posted.push_back({log.spans[i].startUs, log.names[i]});
  std::sort(posted.begin(), posted.end());
  std::string got, expect;
  for (auto &p : posted)
    got += p.second + " ";
  for (int round = 0; round < 3; ++round)
    for (const Item &item : items)
      expect += spanName(item.op) + " ";
  EXPECT_EQ(got, expect);
}

TEST(CommThread, OperationsCompleteWhileTheCallerMakesNoMpiCall) {
  Groups all = split(0, gThreaded->rank());
  SpanLog log;
  EXPECT_FALSE(gDirect->setCommTracer(&log)) << "only a thread reports spans";
  ASSERT_TRUE(gThreaded->setCommTracer(&log));
  const int64_t n = int64_t(1) << 20; // 4 MiB: many rounds of the algorithm
  std::unique_ptr<Started> reduce =
      start(Op::AllReduceSum, *all.threaded, n, 7);
  std::unique_ptr<Started> ring = start(Op::Exchange, *all.threaded, n, 8);
  // "Compute" (sleep: no MPI call on this thread) until the thread has
  // seen both complete. Without a thread nothing would progress them.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (log.count.load() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(log.count.load(), 2)
      << "the operations did not complete before their waits";
  reduce->request->wait();
  ring->request->wait();
  EXPECT_TRUE(sameBits(reduce->out, run(Op::AllReduceSum, *all.direct, n, 7)));
  EXPECT_TRUE(sameBits(ring->out, run(Op::Exchange, *all.direct, n, 8)));
  {
    std::lock_guard<std::mutex> lock(log.mu);
    ASSERT_EQ(log.spans.size(), 2u);
    // Recorded as they complete, in either order.
    size_t a = log.names[0] == "all_reduce" ? 0 : 1, x = 1 - a;
    EXPECT_EQ(log.names[a] + " " + log.libraries[a],
              "all_reduce MPI_Iallreduce");
    EXPECT_EQ(log.names[x] + " " + log.libraries[x],
              "exchange MPI_Isend/MPI_Irecv");
    EXPECT_EQ(log.spans[a].bytes, n * 4);
    EXPECT_EQ(log.spans[x].bytes, 2 * n * 4); // sent + received
    // Posted in the order started (FIFO).
    EXPECT_LE(log.spans[a].startUs, log.spans[x].startUs);
    for (const CommSpan &s : log.spans) {
      EXPECT_EQ(s.ranks, gThreaded->size());
      EXPECT_LE(s.queuedUs, s.startUs);
      EXPECT_GE(s.durUs, 0.0);
      EXPECT_FALSE(s.failed);
    }
  }
  // Detached: no more calls.
  gThreaded->setCommTracer(nullptr);
  run(Op::AllReduceSum, *all.threaded, 10, 9);
  EXPECT_EQ(log.count.load(), 2);
}

/// The CommError message of starting and waiting (empty: none).
std::string errorOf(const std::function<std::unique_ptr<CommRequest>()> &op) {
  try {
    op()->wait();
  } catch (const CommError &e) {
    return e.what();
  }
  return "";
}

TEST(CommThread, ErrorsNameTheirMpiCallAndLeaveTheThreadWorking) {
  Groups all = split(0, gThreaded->rank());
  int64_t g = all.threaded->size();
  std::vector<float> buf(16, 1);
  for (Communicator *c : {all.direct.get(), all.threaded.get()}) {
    std::string path = c == all.direct.get() ? "direct" : "threaded";
    // The library refuses the call (no communication happens).
    EXPECT_NE(errorOf([&] {
                return c->broadcast(buf.data(), 64, g + 2);
              }).find("MPI_Ibcast failed"),
              std::string::npos)
        << path;
    EXPECT_NE(errorOf([&] {
                return c->exchange({}, {{g + 3, buf.data(), 64}});
              }).find("MPI_Irecv failed"),
              std::string::npos)
        << path;
    // A count MPI cannot express: refused at the start, before any post.
    try {
      c->allReduce(buf.data(), buf.data(), int64_t(INT_MAX) + 1, DType::F32,
                   ReduceOp::Sum);
      ADD_FAILURE() << path << ": no error for a count above INT_MAX";
    } catch (const CommError &e) {
      EXPECT_NE(std::string(e.what()).find("MPI_Iallreduce: 2147483648"),
                std::string::npos)
          << path << ": " << e.what();
    }
  }
  // A failed operation between good ones in flight: the others complete.
  std::unique_ptr<Started> before =
      start(Op::AllReduceSum, *all.threaded, 4096, 31);
  std::unique_ptr<CommRequest> bad =
      all.threaded->broadcast(buf.data(), 64, -1);
  std::unique_ptr<Started> after = start(Op::AllGather, *all.threaded, 512, 32);
  EXPECT_THROW(bad->wait(), CommError);
  EXPECT_THROW(bad->wait(), CommError) << "a second wait throws again";
  after->request->wait();
  before->request->wait();
  EXPECT_TRUE(
      sameBits(before->out, run(Op::AllReduceSum, *all.direct, 4096, 31)));
  EXPECT_TRUE(sameBits(after->out, run(Op::AllGather, *all.direct, 512, 32)));
}

TEST(CommThread, DestroyingTheWorldNeverWaitsForOutstandingOperations) {
  int64_t rank = gThreaded->rank(), n = gThreaded->size();
  MpiWorldOptions on;
  on.commThread = true;
  // A third world with its own thread (MPI is already initialised).
  std::unique_ptr<CommWorld> world = createMpiWorld(nullptr, nullptr, on);
  std::unique_ptr<Communicator> c = world->split(0, rank);
  std::unique_ptr<Communicator> late = world->split(0, rank);
  // A receive nobody will ever match.
  std::vector<char> buf(64);
  std::unique_ptr<CommRequest> never =
      c->exchange({}, {{(rank + 1) % n, buf.data(), 64}});
  auto t0 = std::chrono::steady_clock::now();
  c.reset();
  world.reset(); // joins the thread: must not wait for `never`
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_LT(seconds, 10.0);
  try {
    never->wait();
    ADD_FAILURE() << "the abandoned receive's wait returned";
  } catch (const CommError &e) {
    EXPECT_NE(std::string(e.what()).find("MPI_Isend/MPI_Irecv: abandoned"),
              std::string::npos)
        << e.what();
  }
  // A communicator that outlives its world's thread refuses new work.
  try {
    std::vector<float> x(4);
    late->allReduce(x.data(), x.data(), 4, DType::F32, ReduceOp::Sum);
    ADD_FAILURE() << "an operation started after the thread stopped";
  } catch (const CommError &e) {
    EXPECT_NE(std::string(e.what()).find("communication thread has stopped"),
              std::string::npos)
        << e.what();
  }
  late.reset();
}

} // namespace

int main(int argc, char **argv) {
  MpiWorldOptions on;
  on.commThread = true;
  on.pollUs = 20;
  std::unique_ptr<CommWorld> threaded = createMpiWorld(&argc, &argv, on);
  // MPI is initialised now: this world uses it without a thread of its own.
  std::unique_ptr<CommWorld> direct = createMpiWorld(&argc, &argv);
  gThreaded = threaded.get();
  gDirect = direct.get();
  ::testing::InitGoogleTest(&argc, argv);
  if (threaded->rank() != 0) {
    auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int rc = RUN_ALL_TESTS();
  if (rc != 0)
    std::fprintf(stderr, "rank %lld: tests failed\n",
                 static_cast<long long>(threaded->rank()));
  gDirect = gThreaded = nullptr;
  direct.reset();
  threaded.reset(); // joins the thread, then MPI_Finalize
  return rc;
}
