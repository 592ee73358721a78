//===- Communicator.cpp - One-rank world, launcher detection, groups ------===//

#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/Ops.h"

#include <cstdlib>
#include <cstring>

namespace autoshard::runtime {

ReduceOp parseReduceOp(const std::string &name) {
  if (name == "sum")
    return ReduceOp::Sum;
  if (name == "max")
    return ReduceOp::Max;
  throw CommError("unknown reduction '" + name + "' (expected sum or max)");
}

namespace {

/// A finished operation.
class DoneRequest : public CommRequest {
public:
  void wait() override {}
};

void copy(void *dst, const void *src, int64_t bytes) {
  if (bytes > 0 && dst != src)
    std::memmove(dst, src, bytes);
}

/// The only member of a one-rank group: every collective is a copy.
class LocalCommunicator : public Communicator {
public:
  int64_t rank() const override { return 0; }
  int64_t size() const override { return 1; }
  std::unique_ptr<CommRequest> allReduce(const void *send, void *recv,
                                         int64_t count, DType dtype,
                                         ReduceOp) override {
    copy(recv, send, count * dtypeSize(dtype));
    return std::make_unique<DoneRequest>();
  }
  std::unique_ptr<CommRequest> allGather(const void *send, void *recv,
                                         int64_t bytes) override {
    copy(recv, send, bytes);
    return std::make_unique<DoneRequest>();
  }
  std::unique_ptr<CommRequest> reduceScatter(const void *send, void *recv,
                                             int64_t count, DType dtype,
                                             ReduceOp) override {
    copy(recv, send, count * dtypeSize(dtype));
    return std::make_unique<DoneRequest>();
  }
  std::unique_ptr<CommRequest> allToAll(const void *send, void *recv,
                                        int64_t bytes) override {
    copy(recv, send, bytes);
    return std::make_unique<DoneRequest>();
  }
  std::unique_ptr<CommRequest> broadcast(void *, int64_t,
                                         int64_t root) override {
    if (root != 0)
      throw CommError("broadcast root " + std::to_string(root) +
                      " outside a group of 1");
    return std::make_unique<DoneRequest>();
  }
  std::unique_ptr<CommRequest>
  exchange(const std::vector<Transfer> &sends,
           const std::vector<Transfer> &recvs) override {
    if (sends.size() != recvs.size())
      throw CommError("a one-rank group can only send to itself, and each "
                      "send needs a matching receive");
    for (size_t i = 0; i < sends.size(); ++i) {
      if (sends[i].peer != 0 || recvs[i].peer != 0 ||
          sends[i].bytes != recvs[i].bytes)
        throw CommError(
            "a one-rank group has no peer " +
            std::to_string(sends[i].peer ? sends[i].peer : recvs[i].peer));
      copy(recvs[i].data, sends[i].data, sends[i].bytes);
    }
    return std::make_unique<DoneRequest>();
  }
};

class LocalWorld : public CommWorld {
public:
  std::string name() const override { return "local"; }
  int64_t rank() const override { return 0; }
  int64_t size() const override { return 1; }
  std::unique_ptr<Communicator> split(int64_t, int64_t) override {
    return std::make_unique<LocalCommunicator>();
  }
  [[noreturn]] void abort(int code) override { std::exit(code); }
};

} // namespace

std::unique_ptr<CommWorld> createLocalWorld() {
  return std::make_unique<LocalWorld>();
}

bool startedByLauncher() {
  for (const char *var :
       {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (const char *v = std::getenv(var); v && *v)
      return true;
  return false;
}

CommContext::CommContext(const Artifact &artifact, CommWorld &world)
    : world_(world), mesh_(artifact.mesh) {
  if (world.size() != artifact.worldSize)
    throw CommError("artifact '" + artifact.source + "' was compiled for " +
                    std::to_string(artifact.worldSize) +
                    " ranks, but the job has " + std::to_string(world.size()));
  // std::map orders the groups, so every rank splits in the same order.
  std::map<std::vector<std::string>, bool> wanted;
  wanted[mesh_.axes] = true;
  for (const Function &fn : artifact.functions)
    for (const Instruction &inst : fn.code)
      if (!inst.isCall() && isCommOp(inst.op) && inst.attrs.has("axes"))
        wanted[inst.attrs.getStringArray("axes")] = true;
  int64_t rank = world.rank();
  for (const auto &[axes, _] : wanted) {
    std::unique_ptr<Communicator> &c = groups[axes];
    c = world.split(mesh_.groupColor(rank, axes),
                    mesh_.indexInGroup(rank, axes));
    std::string label;
    for (const std::string &a : axes)
      label += (label.empty() ? "" : ", ") + a;
    c->setLabel("[" + label + "]");
  }
}

Communicator &CommContext::group(const std::vector<std::string> &axes) {
  auto it = groups.find(axes);
  if (it == groups.end()) {
    std::string list;
    for (const std::string &a : axes)
      list += (list.empty() ? "" : ", ") + a;
    throw CommError("no communicator for axes [" + list + "]");
  }
  return *it->second;
}

Communicator &CommContext::all() { return group(mesh_.axes); }

CommContext::Pending &CommContext::pending(std::string_view function,
                                           int64_t handle) {
  return slots[{std::string(function), handle}];
}

} // namespace autoshard::runtime
