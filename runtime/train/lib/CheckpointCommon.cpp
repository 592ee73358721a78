//===- CheckpointCommon.cpp - What checkpoint save and load share ---------===//

#include "CheckpointCommon.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

namespace autoshard::runtime::checkpoint {

double nowS() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(v));
  return buf;
}

std::string stateKindName(StateKind k) {
  switch (k) {
  case StateKind::Param:
    return "param";
  case StateKind::OptM:
    return "opt_m";
  case StateKind::OptV:
    return "opt_v";
  }
  return "?";
}

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t product(const std::vector<int64_t> &v) {
  int64_t n = 1;
  for (int64_t d : v)
    n *= d;
  return n;
}

std::string stepDirName(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "step-%06lld", static_cast<long long>(step));
  return buf;
}

std::string rankFileName(int64_t rank) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "rank-%05lld.safetensors",
                static_cast<long long>(rank));
  return buf;
}

Box blockOf(const Artifact &a, const StateSpec &s, int64_t rank) {
  Box b;
  b.shape = s.type.shape;
  b.offset = a.mesh.blockIndex(s.sharding, rank, b.shape.size());
  for (size_t d = 0; d < b.shape.size(); ++d)
    b.offset[d] *= b.shape[d];
  return b;
}

bool contains(const Box &outer, const Box &inner) {
  for (size_t d = 0; d < outer.shape.size(); ++d)
    if (inner.offset[d] < outer.offset[d] ||
        inner.offset[d] + inner.shape[d] > outer.offset[d] + outer.shape[d])
      return false;
  return true;
}

bool overlaps(const Box &x, const Box &y) {
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (x.offset[d] >= y.offset[d] + y.shape[d] ||
        y.offset[d] >= x.offset[d] + x.shape[d])
      return false;
  return true;
}

bool intersect(const Box &x, const Box &y, Box &out) {
  size_t rank = x.shape.size();
  out.offset.resize(rank);
  out.shape.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t lo = std::max(x.offset[d], y.offset[d]);
    int64_t hi = std::min(x.offset[d] + x.shape[d], y.offset[d] + y.shape[d]);
    if (hi <= lo)
      return false;
    out.offset[d] = lo;
    out.shape[d] = hi - lo;
  }
  return true;
}

bool holds(const Artifact &a, const StateSpec &s, int64_t rank) {
  return s.heldBy(a.pipelineStage(rank));
}

Writers::Writers(const Artifact &a) {
  for (const StateSpec &s : a.state) {
    std::vector<char> w(a.worldSize, 0);
    std::set<std::vector<int64_t>> seen; // blocks with a writer
    for (int64_t r = 0; r < a.worldSize; ++r)
      if (holds(a, s, r) &&
          seen.insert(a.mesh.blockIndex(s.sharding, r, s.type.shape.size()))
              .second)
        w[r] = 1;
    table.push_back(std::move(w));
  }
}

/// The safetensors layout of `rank`'s file at `step` (deterministic, so rank
/// 0 knows every file's byte offsets without being told). Tensor keys are
/// the state names; "__metadata__" gives each chunk's global box.
SafetensorsLayout fileLayout(const Artifact &a, const Writers &writers,
                             int64_t rank, int64_t step) {
  std::vector<SafetensorsTensor> tensors;
  std::map<std::string, std::string> meta = {
      {"autoshard.format", "autoshard-checkpoint-shard"},
      {"autoshard.step", std::to_string(step)},
      {"autoshard.rank", std::to_string(rank)}};
  for (size_t i = 0; i < a.state.size(); ++i) {
    const StateSpec &s = a.state[i];
    if (!writers.writes(i, rank))
      continue;
    Box b = blockOf(a, s, rank);
    tensors.push_back({s.name, s.type.dtype, b.shape, 0, 0});
    meta[s.name] =
        Json{{"global_shape", s.globalShape}, {"offset", b.offset}}.dump();
  }
  return layoutSafetensors(std::move(tensors), meta);
}

int64_t worldSize(const Executor &ex) {
  return ex.comm() ? ex.comm()->world().size() : 1;
}

/// Exchanges the status of a step that only rank 0 performed.
void agreeOnRank0(const Executor &ex, RankStatus &st) {
  if (worldSize(ex) > 1)
    ex.comm()->all().broadcast(&st, sizeof(st), 0)->wait();
}

/// Reads exactly `n` bytes at `offset`; throws CheckpointError (truncated).
void preadAll(int fd, void *data, size_t n, int64_t offset,
              const std::string &path) {
  char *p = static_cast<char *>(data);
  while (n > 0) {
    ssize_t r = ::pread(fd, p, n, offset);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      throw CheckpointError(osError("reading", path));
    if (r == 0)
      throw CheckpointError("'" + path + "' is truncated: no data at byte " +
                            std::to_string(offset));
    p += r;
    n -= static_cast<size_t>(r);
    offset += r;
  }
}

/// The replica check of checkStateReplicas on `all`, every rank's
/// stateHashes() in world-rank order.
void checkReplicaHashes(const Artifact &a, const std::vector<uint64_t> &all) {
  int64_t w = a.worldSize;
  size_t n = a.state.size();
  for (size_t i = 0; i < n; ++i) {
    const StateSpec &s = a.state[i];
    std::map<std::vector<int64_t>, int64_t> first; // block -> first holder
    for (int64_t r = 0; r < w; ++r) {
      if (!holds(a, s, r))
        continue;
      std::vector<int64_t> block =
          a.mesh.blockIndex(s.sharding, r, s.type.shape.size());
      auto [it, inserted] = first.insert({block, r});
      if (inserted || all[r * n + i] == all[it->second * n + i])
        continue;
      int64_t q = it->second;
      throw CheckpointError(
          "state '" + s.name + "': the copies of its block at global offset " +
              shapeStr(blockOf(a, s, r).offset) + " differ between rank " +
              std::to_string(q) + " (pipeline stage " +
              std::to_string(a.pipelineStage(q)) + ") and rank " +
              std::to_string(r) + " (pipeline stage " +
              std::to_string(a.pipelineStage(r)) +
              "): a copy held by several ranks was not updated alike (a "
              "compiler "
              "bug; please report it with the plan)",
          /*agreed=*/true);
    }
  }
}

} // namespace autoshard::runtime::checkpoint
