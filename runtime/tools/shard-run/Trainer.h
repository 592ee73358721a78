//===- Trainer.h - The training loop of shard-run ---------------*- C++ -*-===//

#ifndef AUTOSHARD_TOOLS_SHARDRUN_TRAINER_H
#define AUTOSHARD_TOOLS_SHARDRUN_TRAINER_H

#include "EntryIO.h"
#include "Options.h"

#include "autoshard/runtime/train/CharDataset.h"
#include "autoshard/runtime/train/LRSchedule.h"

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
};

/// Runs `train_step` for opts.steps steps (batches from the dataset, LR from
/// the schedule, 1-based `step`), evaluates with `eval` at step 0, every
/// eval-interval steps and at the end, shows progress, writes the JSONL log
/// and the Chrome trace of one step.
class Trainer {
public:
  /// Throws ArtifactError if the artifact lacks a needed entry or slot.
  Trainer(const Options &opts, runtime::Executor &executor,
          const runtime::CharDataset &data);
  RunSummary run();
  /// Mean loss of `eval` over eval-iters fixed validation batches.
  double evaluate();

private:
  void fillBatch(EntryIO &io, runtime::Split split, int64_t step);

  const Options &opts;
  runtime::Executor &executor;
  const runtime::CharDataset &data;
  runtime::LRSchedule schedule;
  int64_t batch, seq;
  EntryIO train;
  std::optional<EntryIO> eval;
  std::vector<int32_t> ids, labels, rowIds, rowLabels;
  int64_t failRank = -1;
};

} // namespace autoshard::shardrun

#endif // AUTOSHARD_TOOLS_SHARDRUN_TRAINER_H
