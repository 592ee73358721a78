//===- ExplainReader.h - The report read off a program ----------*- C++ -*-===//
//
// Builds the Report of ExplainReport.h from the rt form of a partitioned
// program (instruction streams, state table, static memory plan), and
// writes the pipeline section, which is read from the module directly.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_DIST_ANALYSIS_EXPLAINREADER_H
#define AUTOSHARD_DIALECT_DIST_ANALYSIS_EXPLAINREADER_H

#include "autoshard/Dialect/Dist/Analysis/ExplainReport.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

namespace autoshard::dist::explain {

/// Parameter or state name -> builder role (`tfm.role`).
using RoleMap = llvm::StringMap<std::string>;

/// Reads the builder's roles off the public functions of a func-form module
/// (before rt-lower drops them): a `tfm.param` argument's `tfm.role`, and
/// for a `tfm.state` argument the role of the parameter of its
/// `tfm.state_of`.
RoleMap readEntryRoles(mlir::ModuleOp module);

/// Reads `program` (rt form: `rt.func`s, `rt.state_def`s; planned by
/// rt-plan-memory for the memory section) into `report`, which may already
/// hold a baseline (readBaseline) and `rolesFromEntries`.
///
/// Reported entry: the `train_step` entry (with pp, the stage that needs
/// the most memory: held state + frame), else the first entry. Collectives
/// are counted per call of that entry, callees expanded, and attributed to
/// a strategy by their axes' roles on the module's first `dist.mesh`
/// (data, context, expert, tensor) and their form (Passes.td, dist-explain).
/// Functions, collectives and calls are read by ProgramProfile (rt form);
/// the recomputing functions are found by `tfm.func_kind` and the
/// `tfm.recompute` marker that rt-lower carries onto `rt.func`.
/// The strategy rows are derived from the shardings of the entry's inputs
/// and states, not from the plan text. States without an `rt.role` take
/// their role from `roles`, optimizer states their parameter's. A one-rank
/// planned program without a baseline becomes its own baseline.
///
/// Fails, with an error on `program`, if it has no entry function.
mlir::LogicalResult readReport(mlir::ModuleOp program, const RoleMap &roles,
                               Report &report);

/// Reads the one-rank artifact at `path` (rt-export's JSON, format
/// `autoshard-artifact`, with a `memory` section) into `baseline`. Fails,
/// with an error on `errorAt`, if the file cannot be read, is not JSON or
/// is not such an artifact.
mlir::LogicalResult readBaseline(llvm::StringRef path, Baseline &baseline,
                                 mlir::Operation *errorAt);

/// Reads the pipeline section (`present` false without a
/// `dist.pipeline_schedule`): the layers and FLOPs of each stage
/// (`dist.pipeline_stages`), each pipeline rank's held state and frame (its
/// `train_step` program), and the unit-cost and FLOP-weighted simulations of
/// the schedule (makespan, bubble, timeline, peak in-flight activations).
PipelineReport readPipeline(mlir::ModuleOp program);

/// Writes the pipeline section of the text report (nothing without a
/// pipeline).
void writePipelineText(const PipelineReport &pipeline, llvm::raw_ostream &os);

/// `layer 2` or `layers 0-1`.
std::string formatStageLayers(const PipelineStage &stage);
/// What stage `stage` of `numStages` holds besides its layers
/// (` + embedding`, ` + head, loss`; empty in between).
const char *formatStageExtras(size_t stage, size_t numStages);

} // namespace autoshard::dist::explain

#endif // AUTOSHARD_DIALECT_DIST_ANALYSIS_EXPLAINREADER_H
