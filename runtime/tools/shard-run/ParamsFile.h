//===- ParamsFile.h - Final parameters as one safetensors file --*- C++ -*-===//
//
// `shard-run --save-params FILE` writes every parameter (state kind
// "param"), unsharded, to one safetensors file (the Hugging Face format: an
// 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, global shape and byte range, then the raw row-major data). Sharded
// parameters are gathered over all ranks, so a multi-rank run writes the
// same file as a one-rank run of the same model; the plan sweep compares
// them.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_TOOLS_SHARDRUN_PARAMSFILE_H
#define AUTOSHARD_TOOLS_SHARDRUN_PARAMSFILE_H

#include "autoshard/runtime/Executor.h"

#include <string>

namespace autoshard::shardrun {

/// Checks, before training, that the file `path` given to `flag` (e.g.
/// "--save-params", "--trace") can be written, so a typo fails at once and
/// not after the run; throws std::runtime_error naming both otherwise.
/// Creates nothing at `path` (runtime::checkCreatable).
void checkWritablePath(const std::string &flag, const std::string &path);

/// Gathers every parameter of `executor` to global shape (a collective over
/// all ranks of executor.comm() when it is set: every rank must call it)
/// and, on rank 0, writes them to `path` in safetensors format with the
/// metadata {"format": "autoshard-params", "step": step}. Memory: one
/// global copy of the largest parameter plus the gather buffer (world size
/// x its local block) at a time. The file is written under a temporary
/// name, fsynced and renamed (runtime::AtomicFile): `path` keeps its old
/// content until the new one is complete. Throws std::runtime_error if the
/// file cannot be written, ArtifactError for an unsupported dtype.
void saveParams(const runtime::Executor &executor, const std::string &path,
                int64_t step);

} // namespace autoshard::shardrun

#endif // AUTOSHARD_TOOLS_SHARDRUN_PARAMSFILE_H
