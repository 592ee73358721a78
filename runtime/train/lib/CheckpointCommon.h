//===- CheckpointCommon.h - What checkpoint save and load share -*- C++ -*-===//
//
// Internal to the checkpoint implementation (CheckpointSave.cpp,
// CheckpointLoad.cpp): the names of the files, which rank holds and which
// writes each state block, each rank's file layout, the status records the
// ranks exchange, and a POSIX read helper that names the file and the OS error
// (the write helpers are in AtomicFile.h).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_TRAIN_LIB_CHECKPOINTCOMMON_H
#define AUTOSHARD_RUNTIME_TRAIN_LIB_CHECKPOINTCOMMON_H

#include "autoshard/runtime/train/AtomicFile.h"
#include "autoshard/runtime/train/Checkpoint.h"
#include "autoshard/runtime/train/Safetensors.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace autoshard::runtime::checkpoint {

using Json = nlohmann::ordered_json;

inline constexpr const char *kFormat = "autoshard-checkpoint";
inline constexpr const char *kManifest = "manifest.json";
/// Reads and writes go in pieces of this many bytes: small enough that the
/// kernel's readahead keeps ahead of a sequential reader and that a piece
/// is still in cache when it is hashed, large enough that syscalls are few.
inline constexpr int64_t kIOPieceBytes = 4 << 20;

double nowS();
std::string hex64(uint64_t v);
std::string stateKindName(StateKind k);
std::string shapeStr(const std::vector<int64_t> &shape);
int64_t product(const std::vector<int64_t> &v);
/// "step-000123".
std::string stepDirName(int64_t step);
/// "rank-00007.safetensors".
std::string rankFileName(int64_t rank);

/// A box of a global tensor: per-dim start and extent.
struct Box {
  std::vector<int64_t> offset, shape;
};

/// The box of state `s` that `rank` holds.
Box blockOf(const Artifact &a, const StateSpec &s, int64_t rank);
/// Whether `inner` lies inside `outer` (boxes of one rank).
bool contains(const Box &outer, const Box &inner);
/// Whether two boxes of one rank share an element.
bool overlaps(const Box &x, const Box &y);
/// The common part of `x` and `y` into `out`; false (out unspecified) when
/// they share no element. A rank-0 box meets every rank-0 box.
bool intersect(const Box &x, const Box &y, Box &out);
/// Whether `rank` (its pipeline stage) holds state `s`.
bool holds(const Artifact &a, const StateSpec &s, int64_t rank);

/// For every state and rank, whether the rank writes its block: it holds it
/// and no lower rank holds the same block (so each distinct block is written
/// exactly once, by a writer every rank can name without communication).
class Writers {
public:
  explicit Writers(const Artifact &a);
  bool writes(size_t state, int64_t rank) const {
    return table[state][rank] != 0;
  }

private:
  std::vector<std::vector<char>> table;
};

/// The safetensors layout of `rank`'s file at `step` (deterministic, so rank
/// 0 knows every file's byte offsets without being told). Tensor keys are
/// the state names, in state order; "__metadata__" gives each chunk's
/// global box.
SafetensorsLayout fileLayout(const Artifact &a, const Writers &writers,
                             int64_t rank, int64_t step);

/// Fixed-size per-rank status exchanged with an all-gather.
struct RankStatus {
  int64_t ok = 1;
  int64_t bytes = 0;
  uint64_t checksum = 0;
  int64_t wroteFile = 0;
  double seconds = 0; ///< Time this rank spent writing (a save).
  char message[984] = {};
  void fail(const std::string &m) {
    ok = 0;
    std::snprintf(message, sizeof(message), "%s", m.c_str());
  }
};
static_assert(sizeof(RankStatus) == 1024, "fixed record");

int64_t worldSize(const Executor &ex);

/// Every rank's `mine`, in world-rank order. Collective.
template <typename T>
std::vector<T> allGather(const Executor &ex, const std::vector<T> &mine) {
  int64_t w = worldSize(ex);
  if (w == 1)
    return mine;
  std::vector<T> all(mine.size() * w);
  ex.comm()
      ->all()
      .allGather(mine.data(), all.data(),
                 static_cast<int64_t>(mine.size() * sizeof(T)))
      ->wait();
  return all;
}

/// Rank 0's `st` on every rank (a step only rank 0 performed). Collective.
void agreeOnRank0(const Executor &ex, RankStatus &st);

/// Reads exactly `n` bytes at `offset`; throws CheckpointError (truncated).
void preadAll(int fd, void *data, size_t n, int64_t offset,
              const std::string &path);
/// Runs `body` on every rank as runAgreed does and returns what it
/// returned, with `seconds` set to this rank's time, the agreement
/// included. Collective.
template <typename Stats>
Stats timedAgreed(const Executor &ex, const std::function<Stats()> &body) {
  double start = nowS();
  Stats stats;
  runAgreed(ex, [&] { stats = body(); });
  stats.seconds = nowS() - start;
  return stats;
}

/// Checks that the copies of every state block agree, given every rank's
/// per-state hashes (`all`, world-rank major); throws CheckpointError
/// (agreed) naming the state, the block and two ranks that differ.
void checkReplicaHashes(const Artifact &a, const std::vector<uint64_t> &all);

} // namespace autoshard::runtime::checkpoint

#endif // AUTOSHARD_RUNTIME_TRAIN_LIB_CHECKPOINTCOMMON_H
