//===- Checkpoint.h - Sharded, atomic, reshardable checkpoints --*- C++ -*-===//
//
// A checkpoint is a directory `step-000123/` under a save directory:
//
//   rank-00000.safetensors ...  the chunks a rank wrote: one per state tensor
//                               block it is the designated writer of (the
//                               lowest world rank holding that block; every
//                               replica is identical, which the save checks)
//   manifest.json               written last: format version, step, model
//                               fingerprint, plan and mesh, data position and
//                               seed, LR schedule, every tensor's global shape,
//                               dtype and the chunks covering it (file, byte
//                               offset, global box), every file's size and
//                               XXH3-64 checksum, and every chunk's
//                               (docs/checkpoint-format.md)
//
// Saving is atomic: ranks write into `step-000123.tmp/`, fsync their files,
// rank 0 writes and fsyncs the manifest and the directory, then renames it;
// a crash at any point leaves the previous checkpoint intact. Loading works
// under any plan of the same model: each rank reads, for every state block
// it holds, only the parts of the chunks that overlap it, through a bounded
// read buffer (as torch.distributed.checkpoint's resharding load does, and
// Megatron's dist-checkpointing: chunks with global offsets, planned reads).
//
// Every function here is collective over the executor's job: every rank
// must call it, in the same order.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_TRAIN_CHECKPOINT_H
#define AUTOSHARD_RUNTIME_TRAIN_CHECKPOINT_H

#include "autoshard/runtime/Executor.h"
#include "autoshard/runtime/train/LRSchedule.h"
#include "autoshard/runtime/train/Safetensors.h"

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace autoshard::runtime {

/// The manifest format version this runtime writes and the newest it reads.
constexpr int64_t kCheckpointVersion = 1;

/// A checkpoint that cannot be written or read: a missing, truncated or
/// corrupt file, a manifest of another model, a full disk. The message names
/// the checkpoint, the file and the tensor. `agreed` is true when every rank
/// of the job raises the same error (a failed save: the ranks agreed on it),
/// so the job can end cleanly instead of aborting.
class CheckpointError : public std::runtime_error {
public:
  explicit CheckpointError(const std::string &what, bool agreed = false)
      : std::runtime_error(what), agreed(agreed) {}
  bool agreed;
};

/// Where a run stands: what a checkpoint records besides the tensors.
struct TrainingProgress {
  /// Optimizer steps completed; the resumed run starts at 0-based
  /// iteration `step` (whose batch and dropout masks depend only on (seed,
  /// step), so the data order continues exactly).
  int64_t step = 0;
  uint64_t seed = 0;
  LRSchedule schedule;
  /// The data the run trains on (informational; a different one warns).
  std::string dataSource;
  int64_t dataTrainTokens = 0;
};

/// What a save did.
struct CheckpointSaveStats {
  std::string path; ///< The complete checkpoint directory.
  int64_t step = 0; ///< Optimizer steps it holds (TrainingProgress::step).
  /// From the step boundary where the save began to its publication, s.
  double seconds = 0;
  /// How long the training loop was blocked by it, s: all of `seconds`
  /// when synchronous; the snapshot, any wait for the writers and the
  /// publication when asynchronous.
  double stallSeconds = 0;
  /// The part of the stall at the step boundary where the save began: the
  /// replica check, the snapshot (asynchronous) or the whole write (not).
  double beginSeconds = 0;
  /// The slowest rank's time writing and fsyncing its file, s.
  double writeSeconds = 0;
  bool async = false;
  int64_t bytes = 0;                 ///< Written by this rank.
  std::vector<int64_t> bytesPerRank; ///< Written by each rank.
  int64_t totalBytes = 0;
  std::vector<std::string> deleted; ///< Older checkpoints removed (--keep).
};

/// What a load did.
struct CheckpointLoadStats {
  std::string path;
  double seconds = 0;
  int64_t bytesRead = 0;     ///< Tensor bytes this rank read (its blocks).
  int64_t bytesVerified = 0; ///< Chunk bytes this rank checksummed.
  int readerThreads = 1;     ///< Threads this rank read with.
  TrainingProgress progress;
  std::string savedPlan; ///< The plan the checkpoint was saved under (JSON).
  int64_t savedWorldSize = 0;
  int64_t savedBatch = 0; ///< Global batch it trained with (0: unknown).
};

/// Saves the executor's state (every StateSpec: parameters, AdamW moments)
/// as `saveDir/step-<progress.step>/`, atomically, then deletes all but the
/// newest `keep` complete checkpoints in `saveDir` (keep 0: none deleted).
/// Before anything is made visible, checks that every replica of every
/// state block is identical (checkStateReplicas). Collective. Throws
/// CheckpointError with agreed = true when any rank failed (naming the
/// rank, the file and the OS error); the tmp directory is removed then and
/// earlier checkpoints are untouched.
CheckpointSaveStats saveCheckpoint(const Executor &executor,
                                   const std::string &saveDir,
                                   const TrainingProgress &progress,
                                   int64_t keep);

/// Saves the checkpoints of one run, one at a time: synchronously, or
/// asynchronously, as torch.distributed.checkpoint's async_save does: at
/// the step boundary each rank copies the blocks it writes into a host
/// snapshot (kept for the next save: host memory equal to the bytes this
/// rank writes), and a thread writes and fsyncs its file while training
/// goes on; the ranks publish the checkpoint (manifest, rename, --keep)
/// together at a later step boundary, once every rank's file is written.
/// The snapshot is taken between steps, so an asynchronous checkpoint holds
/// the same bits as a synchronous one. Errors are those of saveCheckpoint;
/// an asynchronous write error surfaces at the publication.
class CheckpointSaver {
public:
  /// `keep` as for saveCheckpoint.
  CheckpointSaver(const Executor &executor, std::string saveDir, int64_t keep,
                  bool async);
  /// Abandons a save still in flight: its writer stops at its next piece
  /// and its `step-N.tmp/` stays until the next save removes it.
  ~CheckpointSaver();
  CheckpointSaver(const CheckpointSaver &) = delete;
  CheckpointSaver &operator=(const CheckpointSaver &) = delete;

  /// Begins saving the executor's state as `saveDir/step-<progress.step>/`
  /// (checks the replicas, makes step-N.tmp/, and writes this rank's file or
  /// starts the thread that does). Collective. Throws std::logic_error when
  /// a save is in flight (poll(true) first).
  void begin(const TrainingProgress &progress);
  /// With a save in flight: publishes it when every rank's file is written
  /// (or, with `wait`, after waiting for them) and returns what it did;
  /// else nullopt. Collective while a save is in flight (one all-reduce of
  /// a flag without `wait`); no communication otherwise.
  std::optional<CheckpointSaveStats> poll(bool wait);
  bool inFlight() const;

private:
  struct Pending;
  CheckpointSaveStats publish(Pending &p);
  void allocateSnapshot(size_t bytes);

  const Executor &ex;
  std::string saveDir;
  int64_t keep;
  bool async;
  SafetensorsLayout layout; ///< This rank's file, of the save in flight.
  struct FreeDeleter {
    void operator()(unsigned char *p) const { std::free(p); }
  };
  std::unique_ptr<unsigned char, FreeDeleter> snapshotBuffer;
  size_t snapshotBytes = 0;
  std::thread prefault; ///< Touches the snapshot's pages once, early.
  std::unique_ptr<Pending> pending;
};

/// Loads the checkpoint directory `path` into the executor's state under
/// its own plan, whatever plan the checkpoint was saved under. Checks the
/// manifest (format, version, the model: every state tensor present with
/// its dtype and global shape, nothing extra), the size and safetensors
/// header of every file it opens, and the checksum of every chunk (hashed
/// while read by a rank that reads it whole; else read once more by one
/// of the ranks that read a part).
/// Reads through buffers of at most `readBufferBytes` bytes besides the
/// rank's own state. Collective. Throws CheckpointError (agreed: every rank
/// throws it, see runAgreed) naming the rank, the file and the tensor.
CheckpointLoadStats loadCheckpoint(Executor &executor, const std::string &path,
                                   int64_t readBufferBytes = 64 << 20);

/// Runs `body` on every rank (it must not communicate), then the ranks
/// exchange whether it threw a CheckpointError, SafetensorsError or
/// ArtifactError; if any rank's did, every rank throws CheckpointError
/// (agreed) with the lowest failing rank's message, "rank R: ...". So a
/// failure on one rank ends the job cleanly instead of leaving the others
/// waiting. Collective.
void runAgreed(const Executor &executor, const std::function<void()> &body);

/// The newest complete checkpoint (a `step-N` directory with a manifest)
/// under `saveDir`; throws CheckpointError when there is none.
std::string latestCheckpoint(const std::string &saveDir);

/// Checks that every copy of every state block (replicas over data-parallel
/// ranks, the tied embedding held by two pipeline stages, ...) is bitwise
/// identical, by comparing XXH3 hashes of each rank's blocks. Collective.
/// Throws CheckpointError (agreed) naming the state, the block's global
/// offset and two ranks (and their stages) that differ.
void checkStateReplicas(const Executor &executor);

/// Hash of what identifies a model across plans: its name, vocabulary,
/// sequence length and every state tensor's name, kind, dtype and global
/// shape (not the sharding, not the batch split). Hex string.
std::string modelFingerprint(const Artifact &artifact);

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_TRAIN_CHECKPOINT_H
