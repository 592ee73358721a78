//===- StateGather.h - A state tensor gathered to its global shape -*- C++
//-*-=//
//
// `shard-run --save-params` and `--save-hf` write parameters unsharded: the
// ranks all-gather their blocks and each block is placed at its offset in
// the global tensor (the block a rank holds follows from the mesh and the
// tensor's sharding, Mesh::blockIndex; with a pipeline only the ranks of
// the tensor's stages hold it).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_TRAIN_STATEGATHER_H
#define AUTOSHARD_RUNTIME_TRAIN_STATEGATHER_H

#include "autoshard/runtime/Executor.h"

#include <cstdint>
#include <vector>

namespace autoshard::runtime {

/// State tensor `spec` of `executor` at its global shape (row-major, its
/// dtype's bytes), or nothing when `keep` is false (a rank that only helps
/// gather). A collective over all ranks of executor.comm() when the
/// tensor is sharded or not held by every rank: every rank must call it,
/// for the same tensors in the same order. Memory: the gather buffer (the
/// world size times the local block) and the global tensor.
std::vector<unsigned char> gatherState(const Executor &executor,
                                       const StateSpec &spec, bool keep = true);

/// Whether gatherState(executor, spec) communicates: the tensor is sharded,
/// or not held by every rank, in a job of several ranks. When it does not,
/// every rank holds the whole tensor (Executor::stateHostPointer may give it
/// without a copy).
bool needsGather(const Executor &executor, const StateSpec &spec);

/// Copies the row-major `block` of shape `local` into the row-major tensor
/// `global` of shape `globalShape` at element offsets `origin`, `elem`
/// bytes per element.
void placeBlock(unsigned char *global, const std::vector<int64_t> &globalShape,
                const unsigned char *block, const std::vector<int64_t> &local,
                const std::vector<int64_t> &origin, int64_t elem);

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_TRAIN_STATEGATHER_H
