//===- Trainer.h - The training loop of shard-run ---------------*- C++ -*-===//

#ifndef AUTOSHARD_TOOLS_SHARDRUN_TRAINER_H
#define AUTOSHARD_TOOLS_SHARDRUN_TRAINER_H

#include "EntryIO.h"
#include "Options.h"

#include "Preemption.h"
#include "Reporting.h"

#include "autoshard/runtime/train/Checkpoint.h"
#include "autoshard/runtime/train/Dataset.h"
#include "autoshard/runtime/train/LRSchedule.h"
#include "autoshard/runtime/train/MetricsLog.h"

#include <memory>
#include <optional>

namespace autoshard::shardrun {

/// What a finished run reports.
struct RunSummary {
  double finalTrainLoss = 0;
  double finalValLoss = 0; ///< NaN if there was no evaluation.
  double tokensPerS = 0;   ///< Train tokens / time in train steps.
  double wallS = 0;        ///< Whole loop, evaluations included.
  int64_t peakBytes = 0;   ///< Bytes the executor allocated.
  /// Set when a signal stopped the run early (after a checkpoint): its name.
  std::string stoppedBy;
  int64_t stepsDone = 0;  ///< Optimizer steps completed, resumed ones too.
  std::string checkpoint; ///< The last checkpoint written, if any.
};

/// Runs `train_step` for opts.steps steps (batches from the dataset, LR from
/// the schedule, 1-based `step`), evaluates with `eval` at step 0, every
/// eval-interval steps and at the end, shows progress, writes the JSONL log
/// and the Chrome trace of one step. With --save-dir it checkpoints every
/// --save-interval steps, at the end and at the next step boundary after a
/// SIGTERM, SIGINT or SIGUSR1 (then stops: RunSummary::stoppedBy). With
/// --save-hf it exports the parameters as a Hugging Face model directory
/// at each of those checkpoints (at the same step boundary) and after the
/// last step. A non-finite train loss or gradient norm, or a non-finite
/// val loss, ends the run with ExecutionError at that step (before any
/// save); with --skip-nonfinite-steps N the first N such train steps are
/// undone instead (the state is restored from a host copy taken before
/// each step) and logged.
class Trainer {
public:
  /// Throws ArtifactError if the artifact lacks a needed entry or slot.
  Trainer(const Options &opts, runtime::Executor &executor,
          const runtime::Dataset &data);
  /// Runs the loop. The log's final record waits for logFinal().
  RunSummary run();
  /// Writes the log's final record (step, val_loss, peak_bytes, final, and
  /// `extra`'s fields, e.g. the sample) after a run that was not stopped
  /// early; does nothing otherwise or without --log.
  void logFinal(const nlohmann::json &extra);
  /// Stop (after a checkpoint with --save-dir) at the first step boundary
  /// after `watch` saw a signal; it outlives the trainer.
  void stopOnSignal(const PreemptionWatch *watch) { preemption = watch; }
  /// Continue a resumed run: the first iteration run() does is `step`.
  void startAt(int64_t step) { firstStep = step; }
  /// Where the run stands after `stepsDone` steps (what a checkpoint keeps).
  runtime::TrainingProgress progress(int64_t stepsDone) const;
  const runtime::LRSchedule &lrSchedule() const { return schedule; }
  /// Mean loss of `eval` over eval-iters fixed validation batches, at
  /// step `step` (for messages; -1: none). Throws ExecutionError naming
  /// the batch when a loss is not finite.
  double evaluate(int64_t step = -1);

private:
  void fillBatch(EntryIO &io, runtime::Split split, int64_t step);
  /// Copies every state tensor this rank holds to host memory (before a
  /// step that --skip-nonfinite-steps may undo) / writes the copy back.
  void snapshotState();
  void restoreState();
  /// Prints and logs a published checkpoint; returns its path.
  std::string report(const runtime::CheckpointSaveStats &st,
                     runtime::MetricsLog *log, Progress &progress);

  const Options &opts;
  runtime::Executor &executor;
  const runtime::Dataset &data;
  runtime::LRSchedule schedule;
  int64_t batch, seq;
  EntryIO train;
  std::optional<EntryIO> eval;
  std::vector<int32_t> ids, labels, rowIds, rowLabels;
  int64_t failRank = -1;
  int64_t nonfiniteStep = -1; ///< AUTOSHARD_TEST_NONFINITE=train:K.
  int64_t nonfiniteEval = -1; ///< AUTOSHARD_TEST_NONFINITE=val:K.
  int64_t firstStep = 0;
  int64_t skipped = 0; ///< Steps skipped for a non-finite loss or norm.
  std::vector<std::pair<std::string, std::vector<unsigned char>>> snapshot;
  const PreemptionWatch *preemption = nullptr;
  std::optional<runtime::CheckpointSaver> saver; ///< With --save-dir.
  std::optional<runtime::MetricsLog> log;        ///< With --log.
  nlohmann::json finalRecord;                    ///< Null until run() ends.
};

} // namespace autoshard::shardrun

#endif // AUTOSHARD_TOOLS_SHARDRUN_TRAINER_H
