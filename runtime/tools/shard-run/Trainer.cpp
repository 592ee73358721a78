//===- Trainer.cpp - The training loop of shard-run -----------------------===//

#include "Trainer.h"
#include "Preemption.h"
#include "Reporting.h"

#include "autoshard/runtime/SequencePositions.h"
#include "autoshard/runtime/train/HfCheckpoint.h"
#include "autoshard/runtime/train/MetricsLog.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include <unistd.h>

namespace autoshard::shardrun {

using namespace autoshard::runtime;

namespace {
std::string fixed(double v, int digits = 4) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

/// The trace's clock (`otherData.clock`): which clock its `ts` count on,
/// the machine it ran on and its zero on that clock (TraceRecorder::
/// originUs), so that the traces of ranks on one machine can be aligned
/// (python -m autoshard.report does).
nlohmann::json traceClock(double originUs) {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0)
    host[0] = '\0';
  return {{"source", "steady_clock"}, {"host", host}, {"origin_us", originUs}};
}

/// A loss or norm for a message: 4 decimals, or 4 digits when huge ("nan",
/// "inf", "9.059e+30").
std::string number(double v) {
  if (std::isfinite(v) && std::fabs(v) < 1e6)
    return fixed(v);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

/// Points `world`'s communication spans at `tracer` while it lives (also
/// when the step throws: the recorder must not be called after the run).
class CommTraceScope {
public:
  CommTraceScope(CommWorld *world, CommTracer *tracer) : world(world) {
    if (world)
      world->setCommTracer(tracer);
  }
  ~CommTraceScope() {
    if (world)
      world->setCommTracer(nullptr);
  }
  CommTraceScope(const CommTraceScope &) = delete;
  CommTraceScope &operator=(const CommTraceScope &) = delete;

private:
  CommWorld *world;
};
} // namespace

Trainer::Trainer(const Options &opts, Executor &executor, const Dataset &data)
    : opts(opts), executor(executor), data(data),
      batch(executor.artifact().model.batch),
      seq(executor.artifact().model.seq), train(executor, "train_step") {
  schedule.maxLR = opts.lr;
  schedule.minLR = opts.minLR;
  schedule.warmupSteps = opts.warmup;
  schedule.decaySteps = opts.decaySteps;
  try {
    schedule.validate();
  } catch (const std::invalid_argument &e) {
    throw UsageError(std::string("learning-rate schedule: ") + e.what());
  }
  for (const char *role : {"tokens", "labels", "lr", "step"})
    if (!train.hasInput(role))
      throw ArtifactError("artifact '" + executor.artifact().source +
                          "': entry 'train_step' has no input '" + role + "'");
  if (!train.hasOutput("loss"))
    throw ArtifactError("artifact '" + executor.artifact().source +
                        "': entry 'train_step' has no output 'loss'");
  if (!executor.hasEntry("eval"))
    throw ArtifactError("artifact '" + executor.artifact().source +
                        "' has no entry 'eval' (needed for the val loss)");
  eval.emplace(executor, "eval");
  if (!eval->hasOutput("loss"))
    throw ArtifactError("artifact '" + executor.artifact().source +
                        "': entry 'eval' has no output 'loss'");
  // Test hook (docs/running.md): the rank named here throws at step 1, to
  // check that one rank's failure ends the whole job.
  if (const char *env = std::getenv("AUTOSHARD_TEST_FAIL_RANK"); env && *env)
    failRank = std::strtoll(env, nullptr, 10);
  // Test hook (docs/running.md): AUTOSHARD_TEST_NONFINITE=train:K (or
  // val:K) makes the train loss of 0-based step K (the val loss of the
  // evaluation at step K) read as NaN on every rank.
  if (const char *env = std::getenv("AUTOSHARD_TEST_NONFINITE"); env && *env) {
    std::string spec = env;
    size_t colon = spec.find(':');
    int64_t step = colon == std::string::npos
                       ? -1
                       : std::strtoll(spec.c_str() + colon + 1, nullptr, 10);
    (spec.rfind("val:", 0) == 0 ? nonfiniteEval : nonfiniteStep) = step;
  }
}

void Trainer::fillBatch(EntryIO &io, Split split, int64_t step) {
  // This rank's block of the global batch: rows (and columns, if the
  // sequence is sharded) at its shard offset. The batch of a step depends
  // only on (seed, split, step, row), so every plan sees the same one.
  for (const char *role : {"tokens", "labels"}) {
    const Slot &slot = io.inputSlot(role);
    std::vector<int64_t> offset =
        executor.shardOffset(slot.sharding, slot.type.shape);
    int64_t rows = slot.type.shape[0], cols = slot.type.shape[1];
    rowIds.resize(rows * seq);
    rowLabels.resize(rows * seq);
    data.batch(split, opts.seed, step, seq, offset[0], offset[0] + rows,
               rowIds.data(), rowLabels.data());
    const std::vector<int32_t> &src = role[0] == 't' ? rowIds : rowLabels;
    std::vector<int32_t> &block = role[0] == 't' ? ids : labels;
    block.resize(rows * cols);
    // Zig-zag cp: column p of the program's sequence is original position
    // zigzagPosition(p) (the loss sums positions: same in either order).
    const int64_t zigzag = io.zigzagChunks();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        block[r * cols + c] =
            src[r * seq + zigzagPosition(offset[1] + c, seq, zigzag)];
    io.setIds(role, block);
  }
}

runtime::TrainingProgress Trainer::progress(int64_t stepsDone) const {
  TrainingProgress p;
  p.step = stepsDone;
  p.seed = opts.seed;
  p.schedule = schedule;
  p.dataSource = opts.data;
  p.dataTrainTokens = data.tokenCount(Split::Train);
  return p;
}

std::string Trainer::report(const CheckpointSaveStats &st, MetricsLog *log,
                            Progress &progressLine) {
  int64_t maxBytes = 0;
  for (int64_t b : st.bytesPerRank)
    maxBytes = std::max(maxBytes, b);
  std::string line = "checkpoint " + st.path + ": " +
                     formatBytes(st.totalBytes) + " in " +
                     fixed(st.seconds, 3) + " s (" +
                     fixed(st.totalBytes / 1e6 / st.seconds, 1) +
                     " MB/s; at most " + formatBytes(maxBytes) + " per rank";
  if (st.async)
    line +=
        "; asynchronous: training stalled " + fixed(st.stallSeconds, 3) + " s";
  progressLine.line(line + ")");
  for (const std::string &d : st.deleted)
    progressLine.line("checkpoint " + d + " deleted (--keep " +
                      std::to_string(opts.keep) + ")");
  if (log)
    log->write({{"step", st.step},
                {"checkpoint", st.path},
                {"save_s", st.seconds},
                {"save_stall_s", st.stallSeconds},
                {"save_begin_s", st.beginSeconds},
                {"save_write_s", st.writeSeconds},
                {"save_async", st.async},
                {"save_bytes", st.totalBytes},
                {"save_bytes_per_rank", st.bytesPerRank}});
  return st.path;
}

void Trainer::logFinal(const nlohmann::json &extra) {
  if (!log || finalRecord.is_null())
    return;
  nlohmann::json record = finalRecord;
  for (const auto &[key, value] : extra.items())
    record[key] = value;
  log->writeLast(record);
  finalRecord = nullptr;
}

double Trainer::evaluate(int64_t step) {
  double sum = 0;
  for (int64_t k = 0; k < opts.evalIters; ++k) {
    // Fixed windows: every evaluation sees the same validation batches.
    fillBatch(*eval, Split::Val, k);
    if (eval->hasInput("step"))
      eval->setI64("step", 1);
    try {
      eval->run();
    } catch (const ExecutionError &e) {
      std::string where = "evaluation, validation batch " + std::to_string(k);
      throw ExecutionError(
          (step >= 0 ? "step " + std::to_string(step) + " (" + where + ")"
                     : where) +
          ": " + e.what());
    }
    double loss =
        step >= 0 && step == nonfiniteEval ? std::nan("") : *eval->f32("loss");
    if (!std::isfinite(loss))
      throw ExecutionError(
          (step >= 0 ? "step " + std::to_string(step) + ": " : "") +
          "val loss " + number(loss) + " on validation batch " +
          std::to_string(k) + " (the parameters diverged; try a lower --lr)");
    sum += loss;
  }
  return sum / opts.evalIters;
}

void Trainer::snapshotState() {
  if (snapshot.empty())
    for (const StateSpec &spec : executor.artifact().state)
      if (executor.holdsState(spec.name))
        snapshot.push_back({spec.name, {}});
  for (auto &[name, bytes] : snapshot)
    bytes = executor.readState(name);
}

void Trainer::restoreState() {
  for (const auto &[name, bytes] : snapshot)
    executor.writeState(name, bytes.data());
}

RunSummary Trainer::run() {
  if (!opts.log.empty())
    log.emplace(opts.log, /*append=*/firstStep > 0);
  ChromeTrace trace;
  std::optional<TraceRecorder> recorder;
  if (!opts.trace.empty())
    recorder.emplace(trace);
  CommWorld *commWorld = executor.comm() ? &executor.comm()->world() : nullptr;

  Progress progress(stdout, opts.steps, opts.logInterval);
  RunSummary summary;
  summary.peakBytes = executor.allocatedBytes();
  summary.finalValLoss = std::nan("");
  double trainUs = 0;
  int64_t trainTokens = 0;
  double loopStart = TraceRecorder::nowUs();
  auto evalLine = [&](int64_t step) {
    summary.finalValLoss = evaluate(step);
    progress.line("step " + std::to_string(step) + ": val loss " +
                  fixed(summary.finalValLoss));
    return summary.finalValLoss;
  };

  if (!opts.saveDir.empty())
    saver.emplace(executor, opts.saveDir, opts.keep, opts.asyncSave);
  MetricsLog *logp = log ? &*log : nullptr;
  // Publishes the save in flight when it is written (every rank agrees
  // when), or after waiting for it.
  auto publish = [&](bool wait) {
    if (saver)
      if (auto st = saver->poll(wait))
        summary.checkpoint = report(*st, logp, progress);
  };
  // The Hugging Face export of the parameters after `stepsDone` steps.
  int64_t exportedAt = -1;
  auto exportHf = [&](int64_t stepsDone) {
    if (opts.saveHf.empty() || exportedAt == stepsDone)
      return;
    HfExportStats st = exportHfCheckpoint(executor, opts.saveHf);
    exportedAt = stepsDone;
    progress.line("Hugging Face export after step " +
                  std::to_string(stepsDone) + ": " + st.dir + " (" +
                  formatBytes(st.bytes) + " in " + std::to_string(st.files) +
                  (st.files == 1 ? " file" : " files") + ", " +
                  fixed(st.seconds, 3) + " s)");
    if (log)
      log->write({{"step", stepsDone},
                  {"hf_export", st.dir},
                  {"hf_export_s", st.seconds},
                  {"hf_export_bytes", st.bytes},
                  {"hf_export_files", st.files}});
  };
  auto beginSave = [&](int64_t stepsDone) {
    publish(/*wait=*/true); // one save at a time
    saver->begin(this->progress(stepsDone));
    exportHf(stepsDone); // at the checkpoint's step boundary
  };

  int64_t savedAt = -1;
  summary.stepsDone = firstStep;
  for (int64_t it = firstStep; it < opts.steps; ++it) {
    if (commWorld) // named by the communication watchdog's messages
      commWorld->setActivity("step " + std::to_string(it));
    nlohmann::json record = {{"step", it}};
    if (opts.evalInterval > 0 && it % opts.evalInterval == 0)
      record["val_loss"] = evalLine(it);

    double lr = schedule.at(it);
    fillBatch(train, Split::Train, it);
    train.setF32("lr", static_cast<float>(lr));
    train.setI64("step", it + 1);
    bool traced = recorder && it == opts.traceStep;
    // --skip-nonfinite-steps: the step's update is applied inside the
    // compiled train step, so a skipped step is undone from a copy.
    if (skipped < opts.skipNonfiniteSteps)
      snapshotState();
    double start = TraceRecorder::nowUs();
    {
      // The communication thread, if any, reports this step's operations
      // (each is waited inside the step, so all are in when it ends).
      CommTraceScope commTrace(traced ? commWorld : nullptr,
                               traced ? &*recorder : nullptr);
      try {
        train.run(traced ? &*recorder : nullptr);
      } catch (const ExecutionError &e) { // e.g. a dropless MoE overflow
        throw ExecutionError("step " + std::to_string(it) +
                             " (train step): " + e.what());
      }
    }
    double us = TraceRecorder::nowUs() - start;
    if (traced)
      recorder->span("train_step " + std::to_string(it), start, us);

    trainUs += us;
    trainTokens += batch * seq;
    double loss = it == nonfiniteStep ? std::nan("") : *train.f32("loss");
    double tokensPerS = batch * seq / (us * 1e-6);
    if (it == 1 && failRank == executor.rank())
      throw ExecutionError(
          "test hook AUTOSHARD_TEST_FAIL_RANK=" + std::to_string(failRank) +
          ": rank " + std::to_string(failRank) + " fails at step 1");
    // Every rank holds the global loss and gradient norm, so every rank
    // takes the same decision here.
    std::optional<double> gradNorm;
    if (train.hasOutput("grad_norm"))
      gradNorm = *train.f32("grad_norm");
    if (!std::isfinite(loss) || (gradNorm && !std::isfinite(*gradNorm))) {
      std::string what =
          "train loss " + number(loss) +
          (gradNorm ? ", gradient norm " + number(*gradNorm) : std::string());
      if (skipped >= opts.skipNonfiniteSteps)
        throw ExecutionError(
            "step " + std::to_string(it) + ": " + what +
            ": the run diverged (try a lower --lr" +
            (opts.skipNonfiniteSteps > 0
                 ? "; --skip-nonfinite-steps " +
                       std::to_string(opts.skipNonfiniteSteps) +
                       " steps were skipped already"
                 : std::string(", or --skip-nonfinite-steps N")) +
            "); nothing of this step was saved");
      restoreState();
      ++skipped;
      progress.line("step " + std::to_string(it) + ": " + what +
                    ": update skipped (" + std::to_string(skipped) + " of " +
                    std::to_string(opts.skipNonfiniteSteps) +
                    " allowed by --skip-nonfinite-steps)");
      record["skipped"] = true;
      record["skipped_total"] = skipped;
      record["lr"] = lr;
      if (log)
        log->write(record); // non-finite values are logged as null
    } else {
      summary.finalTrainLoss = loss;
      record["train_loss"] = loss;
      record["lr"] = lr;
      record["tokens_per_s"] = tokensPerS;
      record["peak_bytes"] = summary.peakBytes;
      if (gradNorm)
        record["grad_norm"] = *gradNorm;
      if (log)
        log->write(record);
      progress.step(it, loss, lr, tokensPerS);
    }
    summary.stepsDone = it + 1;
    bool stop = preemption && preemption->requested(executor, it + 1);
    bool interval = opts.saveInterval > 0 && (it + 1) % opts.saveInterval == 0;
    if (saver && (stop || interval)) {
      beginSave(it + 1);
      savedAt = it + 1;
      if (!opts.asyncSave || stop)
        publish(/*wait=*/true);
    } else {
      publish(/*wait=*/false);
    }
    if (stop) {
      summary.stoppedBy = preemption->signalName();
      if (summary.stoppedBy.empty())
        summary.stoppedBy = "a signal to another rank";
      break;
    }
  }
  progress.finish();
  if (commWorld)
    commWorld->setActivity("the end of the run (" +
                           std::to_string(summary.stepsDone) + " steps done)");
  if (!summary.stoppedBy.empty()) {
    // Stopped early: no final save (just done) and no final evaluation.
    if (log)
      log->writeLast(
          {{"step", summary.stepsDone}, {"stopped_by", summary.stoppedBy}});
  } else {
    noteRankStep(summary.stepsDone, /*finishing=*/true);
    if (saver && savedAt != opts.steps)
      beginSave(opts.steps);
    exportHf(opts.steps); // done already with a checkpoint at this step
    if (!opts.asyncSave)
      publish(/*wait=*/true);
    // An asynchronous final save is written while the final evaluation
    // runs, and published before the run ends.
    double valLoss = evalLine(opts.steps);
    publish(/*wait=*/true);
    finalRecord = {{"step", opts.steps},
                   {"val_loss", valLoss},
                   {"peak_bytes", summary.peakBytes},
                   {"final", true}};
  }
  if (recorder) {
    recorder->flushComm();
    const Artifact &a = executor.artifact();
    nlohmann::json plan = nlohmann::json::parse(a.planJson, nullptr, false);
    trace.setMetadata(
        {{"rank", executor.comm() ? executor.comm()->world().rank() : 0},
         {"world_size", a.worldSize},
         {"artifact", a.source},
         {"plan", plan.is_discarded() ? nlohmann::json(a.planJson) : plan},
         {"step", opts.traceStep},
         {"clock", traceClock(recorder->originUs())}});
    trace.save(opts.trace);
  }
  summary.wallS = (TraceRecorder::nowUs() - loopStart) * 1e-6;
  summary.tokensPerS = trainUs > 0 ? trainTokens / (trainUs * 1e-6) : 0;
  return summary;
}

} // namespace autoshard::shardrun
