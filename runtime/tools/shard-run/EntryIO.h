//===- EntryIO.h - Host buffers for one entry's slots -----------*- C++ -*-===//
//
// The driver fills an entry's inputs by role (tokens, labels, lr, step) and
// reads its outputs (loss, grad_norm, logits), with the slot types checked
// against what shard-run feeds, so an artifact with unexpected slots fails
// with a clear message before training starts.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_TOOLS_SHARDRUN_ENTRYIO_H
#define AUTOSHARD_TOOLS_SHARDRUN_ENTRYIO_H

#include "autoshard/runtime/Executor.h"

#include <string>
#include <vector>

namespace autoshard::shardrun {

/// Host memory for the slots of one entry, and a run() that uses it.
class EntryIO {
public:
  /// Checks every slot of `entry` against the roles shard-run knows:
  /// inputs tokens/labels (i32 or i64 [batch, seq]), lr (f32 scalar), step
  /// (i64 scalar); outputs loss, grad_norm (f32 scalars), logits (f32
  /// [batch, seq, padded vocab]). Throws ArtifactError naming the slot.
  EntryIO(runtime::Executor &executor, const std::string &entry);
  EntryIO(const EntryIO &) = delete; // the run pointers point into us
  EntryIO &operator=(const EntryIO &) = delete;

  bool hasInput(const std::string &role) const;
  /// The slot of input / output `role` (local type, global shape, sharding).
  const runtime::Slot &inputSlot(const std::string &role) const;
  const runtime::Slot &outputSlot(const std::string &role) const;
  bool hasOutput(const std::string &role) const;
  /// The zig-zag order of the entry's sequences (EntrySpec::zigzagChunks).
  int64_t zigzagChunks() const { return entry.zigzagChunks; }
  /// Sets an id input from int32 ids (converted to the slot's type).
  void setIds(const std::string &role, const std::vector<int32_t> &ids);
  void setF32(const std::string &role, float value);
  void setI64(const std::string &role, int64_t value);
  /// A f32 output (scalar: element 0).
  const float *f32(const std::string &role) const;

  /// Runs the entry on the current inputs.
  void run(runtime::ExecutionTracer *tracer = nullptr);

private:
  size_t inputIndex(const std::string &role) const;
  size_t outputIndex(const std::string &role) const;

  runtime::Executor &executor;
  const runtime::EntrySpec &entry;
  int index;
  std::vector<std::vector<unsigned char>> inputs, outputs;
  std::vector<const void *> inputPtrs;
  std::vector<void *> outputPtrs;
};

} // namespace autoshard::shardrun

#endif // AUTOSHARD_TOOLS_SHARDRUN_ENTRYIO_H
