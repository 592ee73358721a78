//===- ExplainReport.h - What a plan does, as data --------------*- C++ -*-===//
//
// The report `dist-explain` writes: what each strategy of a plan splits, the
// collectives the partitioner inserted and the memory per rank, read off
// the compiled rt program by readReport (ExplainReader.h) and rendered as
// text (writeText) or JSON (toJson). The model holds plain values (no IR),
// so a report can be built by hand and rendered in a test.
//
// Units: bytes are per rank; shapes are element counts per dim; collective
// counts and bytes are per training step per rank, calls expanded.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_DIST_ANALYSIS_EXPLAINREPORT_H
#define AUTOSHARD_DIALECT_DIST_ANALYSIS_EXPLAINREPORT_H

#include "autoshard/Pipeline/Schedule.h"
#include "autoshard/Pipeline/Simulate.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace autoshard::dist::explain {

/// Per tensor dim, the mesh axes it is split over (major to minor).
using DimAxes = llvm::SmallVector<llvm::SmallVector<std::string>>;

/// A persistent state (parameter or optimizer state) of the program: an
/// `rt.state_def`.
struct State {
  /// State name (`layers.0.attn.wq`), kind (`param`, `opt_m`, `opt_v`),
  /// builder role (`attn_q`; empty if unknown) and, for an optimizer
  /// state, the parameter it belongs to.
  std::string name, kind, role, of;
  /// Shape on one rank and before partitioning.
  llvm::SmallVector<int64_t> localShape, globalShape;
  /// Bytes on one rank and of the global tensor.
  int64_t localBytes = 0, globalBytes = 0;
  DimAxes dimAxes;
  /// Whether the reported rank holds it (with pp, a rank holds only its
  /// pipeline stage's state).
  bool held = true;
};

/// An input slot (`rt.input`) of the reported entry.
struct Slot {
  /// The slot's role (`tokens`, `labels`, ...).
  std::string role;
  llvm::SmallVector<int64_t> localShape, globalShape;
  DimAxes dimAxes;
};

/// One communication instruction of a function (a `dist.*` kernel; a
/// bucketed collective is described by its first member tensor).
struct Collective {
  /// The op without `dist.` and `_start` (`all_reduce`, `ppermute`, ...).
  std::string kind;
  /// Mesh axes of its group.
  llvm::SmallVector<std::string> axes;
  /// Shape of its data operand (of the result for a `recv`) and result.
  llvm::SmallVector<int64_t> shape, resultShape;
  /// Bytes of the local operand; element count of its largest tensor.
  int64_t bytes = 0, numElements = 0;
  /// The gathered, scattered or split dim, if any.
  std::optional<int64_t> dim;
  /// The strategy it is attributed to (`DP`, `ZeRO-1`, `TP`, `SP`,
  /// `CP ring`, `CP Ulysses`, `EP`, `loss/grad norm`, `TP+DP`, ...).
  std::string cause;
};

/// Count and bytes of the collectives of one row of the collectives table.
struct CollectiveRow {
  int64_t count = 0, bytes = 0;
};

/// The static memory plan of the reported entry (rt-plan-memory).
struct Memory {
  /// False if the program has no memory plan (then frame and peak are
  /// unknown).
  bool planned = false;
  /// Bytes of the entry's frame (the transient buffers' arena).
  int64_t frameBytes = 0;
  /// Category (activation, grad, workspace, io) -> live bytes at the peak.
  std::map<std::string, int64_t> peak;
};

/// The memory of the same model on one rank, from a one-rank artifact
/// (`baseline=` option) or from the program itself when it is one rank.
struct Baseline {
  bool present = false;
  /// Where it comes from (a path, or "this program").
  std::string path;
  int64_t worldSize = 1;
  int64_t stateBytes = 0, constantBytes = 0;
  /// State kind -> bytes.
  std::map<std::string, int64_t> stateByKind;
  /// The train step's frame; absent if the artifact has none.
  std::optional<int64_t> frameBytes;
  /// Category -> live bytes at the train step's peak.
  std::map<std::string, int64_t> peak;
};

/// Key of a row of the collectives table: (strategy order, strategy, op,
/// comma-joined axes). Rows sort by strategy order first (DP, ZeRO, TP, SP,
/// the others, loss/grad norm: see strategyOrder).
using CollectiveKey = std::tuple<int, std::string, std::string, std::string>;

/// One row of the strategy table.
struct StrategyRow {
  /// `DP`, `CP`, `EP`, `ZeRO-k`, `TP`, `SP`, `Recomp`.
  std::string label;
  /// The degree (`dp=4`, `dp*cp=4`) or, for `Recomp`, the mode.
  std::string degree;
  /// What is split, in words.
  std::string text;
};

/// Everything dist-explain reports.
struct Report {
  /// `name` of the module's `tfm.model`; empty if unnamed.
  std::string modelName;
  /// The `tfm.model` entries (strings, integers, booleans).
  llvm::json::Object model;
  /// The plan's keys and values, in the module attribute's order.
  llvm::SmallVector<std::pair<std::string, std::string>> plan;
  /// Whether the module has a `dist.plan`.
  bool hasPlan = false;
  /// Mesh axes (name, size), in mesh order.
  llvm::SmallVector<std::pair<std::string, int64_t>> mesh;
  int64_t worldSize = 1;
  /// The plan's `zero` and `sp`.
  int64_t zeroStage = 0;
  bool sequenceParallel = false;
  /// Whether the states' roles came from the entry functions' `tfm.role`
  /// (a func-form module) rather than from `rt.role`.
  bool rolesFromEntries = false;
  std::vector<State> states;
  /// Input slots of the reported entry.
  std::vector<Slot> inputs;
  /// States ZeRO left replicated (`dist.zero_unsharded`).
  llvm::SmallVector<std::string> zeroUnsharded;
  /// The reported entry (`train_step`).
  std::string entry;
  /// With pp: the stage whose program is reported, and a note saying so
  /// (appended to the entry's name in the text).
  std::optional<int64_t> ppStage;
  std::string entryNote;
  /// The collectives table of the reported entry.
  std::map<CollectiveKey, CollectiveRow> rows;
  /// A function with collectives of its own that the entry calls.
  struct PerFunction {
    std::string name;
    /// Calls per step.
    int64_t calls = 0;
    /// Per call: "op[axes]" -> count, in order of appearance.
    std::vector<std::pair<std::string, int64_t>> perCall;
  };
  std::vector<PerFunction> perFunction;
  /// The other entries: name, collectives per call, bytes per call.
  std::vector<std::tuple<std::string, int64_t, int64_t>> otherEntries;
  Memory memory;
  Baseline baseline;
  std::vector<StrategyRow> strategies;
  /// Activation recomputation (the module's `tfm.recompute`, set by
  /// tfm-recompute; empty if none) and the functions that recompute (full:
  /// the re-runs, selective: the backward functions), with their calls per
  /// step.
  std::string recompute;
  std::vector<std::pair<std::string, int64_t>> recomputeCalls;
};

/// One stage of a pipeline (dist-pipeline-split's cost-balanced split,
/// `dist.pipeline_stages`).
struct PipelineStage {
  /// First and last layer of the stage (inclusive).
  int64_t firstLayer = 0, lastLayer = 0;
  /// The pipeline rank (coordinate on the mesh's `pp` axis) that runs it.
  int64_t rank = 0;
  /// FLOPs of microbatch 0, forward + backward.
  int64_t flops = 0;
};

/// What the ranks of one pipeline stage hold: their `train_step` program's
/// state and planned frame.
struct PipelineRank {
  /// The pipeline rank and its program (`train_step__pp0`).
  int64_t rank = 0;
  std::string function;
  /// Held state: tensors, bytes, and bytes per state kind (`param`,
  /// `opt_m`, `opt_v`).
  int64_t stateTensors = 0, stateBytes = 0;
  std::map<std::string, int64_t> stateByKind;
  /// The planned frame (0 if unplanned) and the live bytes per category at
  /// its peak.
  int64_t frameBytes = 0;
  std::map<std::string, int64_t> peak;
};

/// The pipeline section of dist-explain (readPipeline, ExplainReader.h):
/// the compiled schedule (`dist.pipeline_schedule`) and its simulations.
struct PipelineReport {
  /// False without a `dist.pipeline_schedule` (no pipeline).
  bool present = false;
  /// Set when the schedule attribute cannot be read (then nothing else is).
  std::string error;
  /// The plan's `schedule` (`1f1b`, `interleaved`, ...; `?` if unknown).
  std::string kind = "?";
  pipeline::PipelineSchedule schedule;
  /// Virtual stages per rank.
  int64_t vpp = 1;
  /// Per stage; empty when `dist.pipeline_stages` is missing or does not
  /// match the schedule.
  std::vector<PipelineStage> stages;
  int64_t numLayers = 0;
  /// Per pipeline rank, in the module's function order.
  std::vector<PipelineRank> ranks;
  /// Whether the backward is split into I and W (zero-bubble schedules).
  bool split = false;
  /// The unit-cost simulation (F=1, B=2, I=W=1).
  pipeline::SimulationResult unit;
  /// The schedule family's ideal bubble and its formula (`(p-1)/m`).
  double idealBubble = 0;
  std::string idealFormula;
  /// The FLOP-weighted simulation (each stage's ops scaled by its FLOPs
  /// relative to the mean stage; F:B = 1:2, I = W = B/2); absent without
  /// stage FLOPs or when it deadlocks.
  std::optional<pipeline::SimulationResult> weighted;
  /// The per-stage costs of the weighted simulation.
  std::vector<pipeline::OpCosts> weightedCosts;
};

/// The strategy label of the collectives of a tensor of at most one
/// element (the loss and the gradient norm).
inline constexpr const char *kScalarCause = "loss/grad norm";

/// Order of a strategy in the collectives table: DP 0, ZeRO-k 1, TP 2,
/// SP 3, others 4, loss/grad norm 5.
int strategyOrder(llvm::StringRef cause);

/// `16x64`; `scalar` for rank 0.
std::string formatShape(llvm::ArrayRef<int64_t> shape);
/// `512 B`, `1.50 KiB`, `2.00 MiB`, `1.25 GiB` (binary units, two decimals).
std::string formatBytes(int64_t bytes);

/// One row of the memory table.
struct MemoryRow {
  /// Key in the JSON report (`state_param`, `frame`, `peak_grad`, ...).
  std::string key;
  /// Label in the text report.
  std::string label;
  /// Bytes per rank with the plan.
  int64_t with = 0;
  /// Bytes on one rank without the plan; absent if unknown (no baseline).
  std::optional<int64_t> without;
};

/// The memory table of `report`: state per kind (params, optimizer m, v)
/// and total, with plan (held states' local bytes) and without (every
/// state's global bytes); then, if the program is planned, the frame, the
/// live bytes at the peak per category and in total, and state + frame
/// (without the plan: from the baseline, when there is one).
std::vector<MemoryRow> getMemoryRows(const Report &report);

/// Writes the text report (header, strategies, collectives, memory).
void writeText(const Report &report, llvm::raw_ostream &os);

/// The JSON report: model, plan (integers as numbers), mesh, world_size,
/// strategies, entry, pp_stage (with pp), collectives, functions,
/// other_entries and memory (per MemoryRow key: with / without, null when
/// unknown); with a pipeline (`pipeline` present), `pipeline_ranks`: per
/// pipeline rank its held state bytes by kind (`state`: param, opt_m,
/// opt_v), its train_step frame bytes and the live bytes per category at
/// that frame's peak (`peak`), since `memory` is the heaviest rank's only.
llvm::json::Value toJson(const Report &report,
                         const PipelineReport *pipeline = nullptr);

/// Writes the HTML report (one self-contained page): the strategy table
/// with each strategy's collectives, the mesh as a grid of ranks, the
/// pipeline timelines of `pipeline` (unit-cost and FLOP-weighted), the
/// memory per rank as stacked bars next to one device, the collectives
/// table, and the text report.
void writeHtml(const Report &report, const PipelineReport &pipeline,
               llvm::raw_ostream &os);

} // namespace autoshard::dist::explain

#endif // AUTOSHARD_DIALECT_DIST_ANALYSIS_EXPLAINREPORT_H
