//===- DistAttrNames.h - Names of the dist discardable attributes -*- C++ -*-=//
//
// The `dist.*` attribute names the dist passes put on the module, functions,
// calls and ops, each verified by DistDialect::verifyOperationAttribute.
// Passes name them through these constants, never by a string of their own.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_DIST_IR_DISTATTRNAMES_H
#define AUTOSHARD_DIALECT_DIST_IR_DISTATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace autoshard::dist {

//===--- On values (ops, function arguments and results) ------------------===//

/// The `#dist.sharding` of an op's results or of a function argument or
/// result (DistDialect::getShardingAttrName).
inline constexpr llvm::StringLiteral kShardingAttrName = "dist.sharding";

//===--- On the module ----------------------------------------------------===//

/// The plan dist-apply-plan applied, every key (dictionary; Plan.h).
inline constexpr llvm::StringLiteral kPlanAttrName = "dist.plan";
/// ZeRO states that no dim could shard (array of strings; dist-apply-plan).
inline constexpr llvm::StringLiteral kZeroUnshardedAttrName =
    "dist.zero_unsharded";
/// The pipeline schedule, one line per rank (string; dist-pipeline-split,
/// or given by dist-schedule).
inline constexpr llvm::StringLiteral kPipelineScheduleAttrName =
    "dist.pipeline_schedule";
/// Each stage's first layer, the layer count and each stage's FLOPs
/// (dictionary; dist-pipeline-split).
inline constexpr llvm::StringLiteral kPipelineStagesAttrName =
    "dist.pipeline_stages";
/// The entries whose sequences are in zig-zag order, each with its chunk
/// count (dictionary entry name -> i64 >= 2, even; dist-zigzag-sequence):
/// what shard-run permutes the tokens and labels of (rt-export).
inline constexpr llvm::StringLiteral kSequenceOrderAttrName =
    "dist.sequence_order";
/// The plan dist-auto-plan chose (string).
inline constexpr llvm::StringLiteral kAutoPlanAttrName = "dist.auto_plan";

//===--- On functions and calls -------------------------------------------===//

/// Set by dist-partition on the functions it rewrote to per-rank types
/// (unit; DistDialect::getPartitionedAttrName).
inline constexpr llvm::StringLiteral kPartitionedAttrName = "dist.partitioned";
/// On a stage program: the entry it is a stage of (string).
inline constexpr llvm::StringLiteral kEntryAttrName = "dist.entry";
/// On a stage program: its ranks' coordinate on the pipeline axis (integer).
inline constexpr llvm::StringLiteral kPpStageAttrName = "dist.pp_stage";
/// On a stage program: the model chunks it runs (i64 array).
inline constexpr llvm::StringLiteral kPpChunksAttrName = "dist.pp_chunks";
/// On the two calls a zero-bubble schedule cuts a backward call into:
/// `"input"` or `"weight"`.
inline constexpr llvm::StringLiteral kBackwardPartAttrName =
    "dist.backward_part";

//===--- On point-to-point ops --------------------------------------------===//

/// What a send or receive carries; both ends carry the same (string).
inline constexpr llvm::StringLiteral kTagAttrName = "dist.tag";

} // namespace autoshard::dist

#endif // AUTOSHARD_DIALECT_DIST_IR_DISTATTRNAMES_H
