//===- Schedule.h - Pipeline-parallel schedules -----------------*- C++ -*-===//
//
// The data model of a pipeline-parallel schedule (per-rank orders of forward
// and backward ops over stages and microbatches), its generators (GPipe,
// 1F1B, interleaved 1F1B, looped BFS, ZB-H1, ZB-V), the text format of
// /work/shared/reference/algorithms.md §1.5 and the well-formedness check
// (Check A of §1.6).
//
// MLIR-free and exception-free: errors are returned as values (OrError).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_PIPELINE_SCHEDULE_H
#define AUTOSHARD_PIPELINE_SCHEDULE_H

#include <cassert>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autoshard::pipeline {

/// A value of type T or a human-readable error message. Used by every
/// fallible function of the pipeline library (which is compiled with
/// -fno-exceptions). Test with `if (result)`; read with `*result` or
/// `result->`; `error()` is the message when there is no value.
template <typename T> class OrError {
public:
  OrError(T value) : value(std::move(value)) {}
  static OrError failure(std::string message) {
    OrError result;
    result.message = std::move(message);
    return result;
  }

  explicit operator bool() const { return value.has_value(); }
  bool ok() const { return value.has_value(); }
  T &operator*() {
    assert(value && "no value in a failed OrError");
    return *value;
  }
  const T &operator*() const {
    assert(value && "no value in a failed OrError");
    return *value;
  }
  T *operator->() { return &**this; }
  const T *operator->() const { return &**this; }
  /// The error message; empty when there is a value.
  const std::string &error() const { return message; }

private:
  OrError() = default;
  std::optional<T> value;
  std::string message;
};

/// One compute op of a pipeline schedule: kind `kind` of stage `stage` for
/// microbatch `microbatch` (both 0-based). Stage s is chunk s of the model
/// split into S = p·v consecutive stages.
struct PipelineOp {
  /// F = forward; B = full backward (input and weight gradient); I = input
  /// gradient only (the ZB paper's "B", torch's BACKWARD_INPUT); W = weight
  /// gradient only (Qi et al. 2023, "Zero Bubble Pipeline Parallelism").
  enum class Kind { F, B, I, W };
  Kind kind;
  int64_t stage;
  int64_t microbatch;

  bool operator==(const PipelineOp &other) const {
    return kind == other.kind && stage == other.stage &&
           microbatch == other.microbatch;
  }
  bool operator!=(const PipelineOp &other) const { return !(*this == other); }
};

/// The letter of an op kind in the §1.5 format: 'F', 'B', 'I' or 'W'.
char opKindLetter(PipelineOp::Kind kind);

/// An op in the §1.5 format `<stage><kind><microbatch>`, e.g. "4B0".
std::string formatOp(const PipelineOp &op);

/// A complete pipeline schedule: which rank owns each stage and the program
/// order of compute ops on each rank. Sends and receives are implied by the
/// stage→rank map (see CommVerify.h for their lowering).
struct PipelineSchedule {
  /// The schedule's name, e.g. "1f1b" (the ScheduleKind name) or the name
  /// given to parseSchedule.
  std::string name;
  /// p: ranks (devices) in the pipeline group.
  int64_t numRanks = 0;
  /// S: stages; p·v for the loop and V stage maps.
  int64_t numStages = 0;
  /// m: microbatches per optimizer step.
  int64_t numMicrobatches = 0;
  /// stageToRank[s] is the rank that runs every op of stage s.
  std::vector<int64_t> stageToRank;
  /// rankOrders[r] is rank r's program order of compute ops.
  std::vector<std::vector<PipelineOp>> rankOrders;
};

/// The schedule families the generators build; see buildSchedule.
enum class ScheduleKind {
  GPipe,
  OneFOneB,
  Interleaved1F1B,
  LoopedBFS,
  ZBH1,
  ZBV
};

/// The name users type in a plan: "gpipe", "1f1b", "interleaved",
/// "looped-bfs", "zb-h1" or "zb-v".
const char *scheduleKindName(ScheduleKind kind);

/// Parses a schedule name as printed by scheduleKindName; also accepts the
/// alias "interleaved-1f1b". The error names the input and lists the valid
/// names.
OrError<ScheduleKind> parseScheduleKind(std::string_view name);

/// Whether schedules of `kind` cut every stage's backward into an
/// input-gradient op (I) and a deferred weight-gradient op (W): the
/// zero-bubble schedules ZB-H1 and ZB-V (Qi et al. 2024). The others run
/// each backward whole (B).
bool splitsBackward(ScheduleKind kind);

/// The "loop" stage map of interleaved/looped schedules: stage s on rank
/// s % p, so rank r holds stages r, r+p, ..., r+(v-1)p (torch
/// `generate_stage_to_rank_mapping(style="loop")`; Megatron-Core: chunk c of
/// rank r is stage c·p + r). Returns p·v entries.
std::vector<int64_t> loopStageToRank(int64_t numRanks, int64_t stagesPerRank);

/// The "V" stage map of ZB-V/DualPipeV (v = 2): rank r holds stages r and
/// 2p-1-r (torch `generate_stage_to_rank_mapping(style="v")`). Returns 2p
/// entries.
std::vector<int64_t> vStageToRank(int64_t numRanks);

/// Builds the schedule `kind` for p = `numRanks` ranks, m = `numMicrobatches`
/// microbatches and v = `stagesPerRank` stages (model chunks) per rank,
/// following algorithms.md §1.4:
///  - GPipe (torch ScheduleGPipe; Huang et al. 2019): all F, then all B in
///    increasing microbatch order. v = 1.
///  - 1F1B / PipeDream-Flush (Megatron-Core
///    `forward_backward_pipelining_without_interleaving`, Narayanan et al.
///    2021): min(p-r-1, m) warmup forwards, steady (F, B) pairs, cooldown
///    B's. v = 1; m < p is allowed (Megatron clamps the warmup).
///  - Interleaved 1F1B (Megatron-Core
///    `forward_backward_pipelining_with_interleaving` with
///    microbatch_group_size_per_vp_stage g = p, identical to torch
///    ScheduleInterleaved1F1B; Narayanan et al. 2021): loop stage map; needs
///    v >= 2 and Megatron-Core's g ∈ [p, m] with (m % g == 0 or m % g >= p),
///    i.e. m >= p and m % p == 0. (Megatron's arguments.py also asserts
///    p > 2 unless overlap_p2p_comm, a limit of its batched p2p groups; the
///    torch-style p2p of lowerScheduleToComm verifies for p = 1 and 2, so
///    they are accepted.)
///  - Looped BFS (torch ScheduleLoopedBFS): loop stage map, any v >= 1; all
///    F's stage by stage, then B's of the local stages in decreasing order,
///    microbatches m-1..0.
///  - ZB-H1 (torch ScheduleInterleavedZeroBubble with one stage per rank;
///    Qi et al. 2023): split backward; rank i emits (F_x, I_{x-(p-1-i)},
///    W_{x-(p-1)}) for x = 0..m+p-2. v = 1.
///  - ZB-V (torch ScheduleZBVZeroBubble; Qi et al. 2023): v = 2, V stage map,
///    generated with n = max(2p-1, m) microbatches and ops of microbatches
///    >= m dropped.
/// Every generated schedule passes validateSchedule and simulates without
/// deadlock. Errors (no schedule): p, m or v < 1, a v the kind does not
/// support, or an (m, p) pair violating interleaved's constraint; the message
/// names the schedule, the parameter and its value.
OrError<PipelineSchedule> buildSchedule(ScheduleKind kind, int64_t numRanks,
                                        int64_t numMicrobatches,
                                        int64_t stagesPerRank = 1);

/// Prints the schedule in the §1.5 format: one line per rank, "rank<r>:"
/// followed by its ops separated by single spaces, each line ending in '\n',
/// e.g. "rank0: 0F0 0F1 0B0 0B1\nrank1: 1F0 1B0 1F1 1B1\n".
std::string formatSchedule(const PipelineSchedule &schedule);

/// Parses the §1.5 format (as printed by formatSchedule). Blank lines and
/// lines starting with '#' or "```" are skipped, so a §1.5 block can be
/// pasted as is. Every rank 0..p-1 must have exactly one line (in any order).
/// Derived: numRanks = number of rank lines, numStages = 1 + the largest
/// stage, numMicrobatches = 1 + the largest microbatch, stageToRank[s] = the
/// first rank that runs an op of stage s (-1 if none; validateSchedule
/// reports it). Errors name the line and the offending token, e.g.
/// "line 2: token '4X0': unknown op kind 'X' (expected F, B, I or W)".
/// Overlapped pairs "(a+b)" and DualPipe's '^' are not supported.
OrError<PipelineSchedule> parseSchedule(std::string_view text,
                                        std::string name = "user");

/// Check A of algorithms.md §1.6 (mirrors torch `_validate_schedule`):
/// consistent sizes; every op's stage and microbatch in range; every op of
/// stage s on rank stageToRank[s] (single owner per stage); for every
/// (stage, microbatch) exactly one F, exactly one of B or I, and a W iff
/// there is an I; on the owning rank F precedes B/I and I precedes W.
/// Returns one human-readable message per violation (empty = well-formed),
/// e.g. "stage 2 mb 3: I (rank 2 op #9) comes before F (rank 2 op #11)".
/// Deadlock freedom is Check B (Simulate.h).
std::vector<std::string> validateSchedule(const PipelineSchedule &schedule);

/// Whether the schedule runs the backward cut into I and W ops (true) or
/// whole as B ops (false). A schedule that does both (legal for Check A,
/// but not what a compiler that cuts every stage's backward or none can
/// build) is an error naming one op of each kind, e.g. "the schedule runs
/// 0B0 as a whole backward (B) but 1I0 cut into I and W; ...".
OrError<bool> backwardIsSplit(const PipelineSchedule &schedule);

} // namespace autoshard::pipeline

#endif // AUTOSHARD_PIPELINE_SCHEDULE_H
