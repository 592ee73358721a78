//===- Simulate.h - Unit-cost pipeline schedule simulator -------*- C++ -*-===//
//
// Check B of /work/shared/reference/algorithms.md §1.6 in executable form: a
// list-scheduling simulation of a PipelineSchedule (strict per-rank program
// order, every op starts once its data predecessor has finished) with per-op
// costs, giving the makespan, the bubble in both conventions of §1.2, a
// timeline and the peak in-flight activations; or a deadlock report. Also
// the static form of Check B: acyclicity of the program-order +
// data-dependency graph.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_PIPELINE_SIMULATE_H
#define AUTOSHARD_PIPELINE_SIMULATE_H

#include "autoshard/Pipeline/Schedule.h"

#include <optional>
#include <string>
#include <vector>

namespace autoshard::pipeline {

/// Time of one op of one stage for one microbatch, in arbitrary units
/// (the §1.5 figures use the defaults: F=1, B=2, I=1, W=1, i.e.
/// T_F = T_B = T_W in the ZB paper's notation, B = full backward = I + W).
struct OpCosts {
  double forward = 1;
  double backward = 2;
  double inputGrad = 1;
  double weightGrad = 1;

  /// The cost of an op of kind `kind`.
  double of(PipelineOp::Kind kind) const;
};

/// Pipeline ranks that time-share the processors of one machine (CPU ranks
/// on fewer cores than ranks; several dp replicas of the pipeline on the
/// node, out of phase with each other). An op's cost is its time when
/// every rank runs; while ranks wait, the processor time they leave goes
/// to the ranks that run. Over a step the scheduler is fair: a rank
/// whose busy fraction b_r (running time over the makespan) at up to
/// `maxSpeedup` asks for less than an equal share of the node gets all it
/// asks for, the others share the rest equally (max-min fairness, as
/// Linux CFS / EEVDF give waking tasks their lag back). The node's
/// capacity, in ranks' shares, is p * b / (b + (1 - b) * waitingUse) at
/// the mean busy fraction b (the pollers' use). A waiting receiver is
/// woken wakeupLatency * wakeupScale(b) after its data arrives (it waits
/// for the running ranks' time slices). The defaults share nothing.
struct ProcessorSharing {
  /// The part of a running rank's processor time a waiting rank still
  /// takes (it polls for its message), in [0, 1]: 1 frees nothing.
  double waitingUse = 1;
  /// The most an op can speed up (its rate alone over its rate when every
  /// rank runs), >= 1.
  double maxSpeedup = 1;
  bool shares() const { return waitingUse < 1 && maxSpeedup > 1; }
  /// Ranks pinned to cores (shard-run --bind-cores auto): coreOf[r] names
  /// the core of pipeline rank r (ranks of one core share it; cores are
  /// independent), `ranksPerCore` is how many of the node's ranks each
  /// core holds (an op's cost is its time while all of them run) and
  /// `copies` how many identical replicas of this pipeline share a core,
  /// in step with it (>= 1). Empty coreOf: not pinned; the fields above
  /// apply instead.
  std::vector<int64_t> coreOf;
  double ranksPerCore = 1, copies = 1;
  bool pinned() const { return !coreOf.empty(); }
  /// Each rank's op speed (>= 1) for the ranks' busy fractions `busy`.
  std::vector<double> fairSpeeds(const std::vector<double> &busy) const;
  /// The factor on SimulationOptions::wakeupLatency (given at half the
  /// node's ranks running) at mean busy fraction `busyFraction`: 2 x it
  /// (a waiting rank waits for the running ranks' slices).
  double wakeupScale(double busyFraction) const;
};

/// Simulation parameters.
struct SimulationOptions {
  /// Costs of every stage, unless stageCosts overrides them.
  OpCosts costs;
  /// Per-stage costs: empty, or numStages entries (stageCosts[s] for the ops
  /// of stage s).
  std::vector<OpCosts> stageCosts;
  /// Time added between an op and its data successor on another rank (a
  /// point-to-point transfer); 0 in the §1.5 figures. Same-rank successors
  /// (e.g. stages p-1 and p of ZB-V) never pay it.
  double p2pLatency = 0;
  /// Time added on top of p2pLatency when the receiving rank is already
  /// waiting as the transfer arrives (it must be woken and scheduled; a
  /// rank still running its previous op finds the data on arrival); with
  /// `sharing`, its value with half the node's ranks running, scaled by
  /// ProcessorSharing::wakeupScale.
  double wakeupLatency = 0;
  /// How the ranks share processors (none by default).
  ProcessorSharing sharing;
};

/// The simulated time span of one op.
struct TimedOp {
  PipelineOp op;
  double start = 0;
  double end = 0;
};

/// A rank whose next op can never start.
struct BlockedOp {
  int64_t rank = 0;
  /// Position of the op in the rank's program order.
  int64_t index = 0;
  PipelineOp op;
  /// The missing predecessor, e.g. "1B0 on rank 1 (blocked)" or "3F7, which
  /// no rank runs".
  std::string waitsFor;
};

/// The outcome of simulateSchedule. Times are in the units of OpCosts.
struct SimulationResult {
  /// True when some rank could not finish its program; then `blocked` lists
  /// each such rank's head op and `deadlockReport` describes them, and the
  /// timing figures cover only the ops that ran.
  bool deadlocked = false;
  std::vector<BlockedOp> blocked;
  std::string deadlockReport;

  /// End of the last op (0 for an empty schedule).
  double makespan = 0;
  /// busy[r]: total cost of rank r's ops.
  std::vector<double> busy;
  /// running[r]: the time rank r spent running its ops; busy[r] unless the
  /// ranks share processors (SimulationOptions::sharing), where ops run
  /// faster while other ranks wait.
  std::vector<double> running;
  /// Σ_r (makespan - busy[r]) / Σ_r busy[r]: the Megatron convention
  /// β_ideal = t_bubble / t_ideal (algorithms.md §1.2), e.g. (p-1)/m for
  /// 1F1B with unit costs.
  double idleOverBusy = 0;
  /// Σ_r (makespan - busy[r]) / (p · makespan): the fraction of wall time,
  /// β_total = β_ideal / (1 + β_ideal), e.g. (p-1)/(m+p-1) for 1F1B.
  double idleOverMakespan = 0;
  /// timeline[r][i]: start and end of rank r's i-th op (only the ops that
  /// ran when deadlocked).
  std::vector<std::vector<TimedOp>> timeline;
  /// Peak number of activations held per rank, in stage-chunks (one stage's
  /// activations for one microbatch; a chunk-activation = M_B / v in the ZB
  /// paper's units): +1 at F, -1 at the op that frees it (B, or W when the
  /// backward is split). E.g. [4, 3, 2, 1] for 1F1B with p=4, m=8.
  /// Computed from the program order, also when deadlocked.
  std::vector<int64_t> peakActivations;
};

/// Simulates `schedule` (algorithms.md §1.6 Check B, the list-scheduling
/// form): an op starts at max(end of the previous op on its rank, end of
/// each data predecessor (+ p2pLatency across ranks)). Data predecessors:
/// F(s,j) ← F(s-1,j); B/I(S-1,j) ← F(S-1,j); B/I(s,j) ← B/I(s+1,j) and
/// F(s,j); W(s,j) ← I(s,j). Communication is otherwise free. With
/// `options.sharing`, each rank's ops run at its fair speed, found as a
/// fixed point with the simulated busy fractions (ProcessorSharing). The
/// schedule should pass validateSchedule; an op whose predecessor is missing or
/// never runs blocks its rank, and the result reports the deadlock instead of
/// failing. Reproduces the "unit-cost sim" lines of §1.5 with the default
/// options.
SimulationResult simulateSchedule(const PipelineSchedule &schedule,
                                  const SimulationOptions &options = {});

/// A cycle in the program-order + data-dependency graph.
struct DependencyCycle {
  /// (rank, position in the rank's program order) of each op on the cycle;
  /// each op must run after the one before it, and the first after the last.
  std::vector<std::pair<int64_t, int64_t>> ops;
  /// The cycle, "->" read as "must finish before", closed by repeating the
  /// first op, e.g. "0B0 (rank 0 op #1) -> 0F1 (rank 0 op #2) -> 1F1 (rank 1
  /// op #1) -> 1B0 (rank 1 op #2) -> 0B0 (rank 0 op #1)".
  std::string description;
};

/// Check B of algorithms.md §1.6, static form: builds the graph whose nodes
/// are the schedule's ops and whose edges are (1) consecutive ops of a rank,
/// (2)-(5) the data dependencies listed at simulateSchedule, and returns a
/// cycle if there is one (std::nullopt = acyclic, i.e. executable when every
/// predecessor exists). Ops with missing predecessors are not cycles; the
/// simulator reports those.
std::optional<DependencyCycle>
findDependencyCycle(const PipelineSchedule &schedule);

} // namespace autoshard::pipeline

#endif // AUTOSHARD_PIPELINE_SIMULATE_H
