//===- shard-run.cpp - Train a compiled autoshard artifact ----------------===//
//
// shard-run ARTIFACT --data FILE [-n N] [options]: loads the artifact,
// initialises the weights from the counter-based RNG, trains on a
// character-level text file, evaluates, logs, traces one step and prints a
// sample. Every bad input ends with one "shard-run: error: ..." line on stderr
// and a non-zero exit (2 for a bad command line, 1 otherwise). With -n N > 1 it
// re-executes itself under mpirun; started by a launcher (mpirun, srun) it is
// one rank of the job: rank 0 prints, and any rank's error ends every rank.
//
//===----------------------------------------------------------------------===//

#include "Backends.h"
#include "Options.h"
#include "ParamsFile.h"
#include "Preemption.h"
#include "Reporting.h"
#include "Sampler.h"
#include "Trainer.h"

#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/train/Checkpoint.h"
#include "autoshard/runtime/train/HfCheckpoint.h"
#if AUTOSHARD_HAVE_MPI
#include "autoshard/runtime/mpi/MpiWorld.h"
#endif

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <new>
#include <optional>

using namespace autoshard::runtime;
using namespace autoshard::shardrun;

namespace {

int fail(const std::string &message, int code) {
  std::fflush(stdout);
  std::fprintf(stderr, "shard-run: error: %s\n", message.c_str());
  return code;
}

std::string describeMesh(const Mesh &mesh) {
  std::string s = "[";
  for (size_t i = 0; i < mesh.axes.size(); ++i)
    s += (i ? ", " : "") + mesh.axes[i] + "=" + std::to_string(mesh.sizes[i]);
  return s + "]";
}

/// What the memory plan says this rank allocates (its pipeline stage's).
int64_t predictedPeak(const Artifact &a, const Executor &ex) {
  if (const StageMemory *stage = a.memory.findStage(ex.pipelineStage()))
    return stage->peakBytes;
  return a.memory.peakBytes;
}

void printPlan(const Artifact &a, const Executor &ex) {
  const MemoryPlan &m = a.memory;
  std::printf("model %s: vocab %lld (padded %lld), batch %lld, seq %lld\n",
              a.model.name.empty() ? "(unnamed)" : a.model.name.c_str(),
              static_cast<long long>(a.model.vocabSize),
              static_cast<long long>(a.model.paddedVocabSize),
              static_cast<long long>(a.model.batch),
              static_cast<long long>(a.model.seq));
  int64_t peak = m.peakBytes, state = m.stateBytes,
          transient = m.transientBytes;
  std::string which;
  if (const StageMemory *stage = m.findStage(ex.pipelineStage())) {
    // Rank 0 prints its own stage's plan (the first pipeline stage).
    peak = stage->peakBytes;
    state = stage->stateBytes;
    transient = stage->transientBytes;
    which = " of pipeline stage " + std::to_string(stage->ppStage) + " (of " +
            std::to_string(m.stages.size()) + ")";
  }
  std::printf("memory%s: predicted peak %s (state %s, constants %s, transient "
              "%s); allocated %s\n",
              which.c_str(), formatBytes(peak).c_str(),
              formatBytes(state).c_str(), formatBytes(m.constantBytes).c_str(),
              formatBytes(transient).c_str(),
              formatBytes(ex.allocatedBytes()).c_str());
}

/// `path` with ".rankR" before its extension (traces of ranks > 0).
std::string perRankPath(const std::string &path, int64_t rank) {
  size_t slash = path.find_last_of('/');
  size_t dot = path.find_last_of('.');
  std::string tag = ".rank" + std::to_string(rank);
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return path + tag;
  return path.substr(0, dot) + tag + path.substr(dot);
}

/// Checks that the artifact is for `ranks` ranks; `how` says where the
/// number came from ("-n is 2", "the job has 2 ranks").
void checkWorldSize(const Artifact &artifact, const Options &opts,
                    int64_t ranks, const std::string &how) {
  if (artifact.worldSize != ranks)
    throw UsageError("artifact '" + opts.artifact + "' was compiled for " +
                     std::to_string(artifact.worldSize) + " ranks, but " + how);
}

/// Re-executes shard-run under `mpirun -n N` on this node.
/// A fresh run must not mix its checkpoints with another run's: --keep
/// would count theirs, and --resume latest would pick them. Throws
/// UsageError when --save-dir holds a complete checkpoint and there is no
/// --resume.
void checkFreshSaveDir(const Options &opts) {
  if (opts.saveDir.empty() || !opts.resume.empty())
    return;
  std::string found;
  try {
    found = latestCheckpoint(opts.saveDir);
  } catch (const CheckpointError &) {
    return; // none
  }
  throw UsageError("--save-dir '" + opts.saveDir +
                   "' already holds checkpoints of a run (newest: '" + found +
                   "'): pass --resume latest to continue it, or choose "
                   "another --save-dir");
}

/// Checks --init-from and --save-hf before anything runs: the artifact has
/// a Hugging Face weight map, the checkpoint directory exists, and the
/// export directory may be written (`writer`: this process writes it).
void checkHfFlags(const Artifact &artifact, const Options &opts, bool writer) {
  if (opts.initFrom.empty() && opts.saveHf.empty())
    return;
  parseHfWeightMap(artifact); // ArtifactError: no map, or not compatible
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!opts.initFrom.empty() && !fs::is_directory(opts.initFrom, ec))
    throw UsageError("--init-from: '" + opts.initFrom + "' " +
                     (fs::exists(opts.initFrom, ec) ? "is not a directory"
                                                    : "does not exist") +
                     " (a Hugging Face checkpoint directory: config.json and "
                     "model.safetensors)");
  if (opts.saveHf.empty())
    return;
  std::error_code ec2;
  fs::path from = fs::weakly_canonical(opts.initFrom, ec);
  fs::path to = fs::weakly_canonical(opts.saveHf, ec2);
  if (!opts.initFrom.empty() && !ec && !ec2 && from == to)
    throw UsageError("--save-hf '" + opts.saveHf +
                     "' is the --init-from directory: the export would "
                     "replace the checkpoint the run starts from (choose "
                     "another directory)");
  if (writer) {
    try {
      checkHfExportDir(opts.saveHf);
    } catch (const CheckpointError &e) {
      throw UsageError(std::string("--save-hf: ") + e.what());
    }
  }
}

int launch(const Options &opts, int argc, char **argv) {
  Artifact artifact = loadArtifact(opts.artifact);
  checkWorldSize(artifact, opts, opts.ranks,
                 "-n is " + std::to_string(opts.ranks));
  checkHfFlags(artifact, opts, /*writer=*/true);
#if !AUTOSHARD_HAVE_MPI
  (void)argc;
  (void)argv;
  throw UsageError("-n " + std::to_string(opts.ranks) +
                   ": this shard-run was built without MPI, so it runs only "
                   "world-size-1 artifacts (install libopenmpi-dev and "
                   "reconfigure)");
#else
  // mpirun gives rank 0 a pseudo-terminal even when our stdout is a file or
  // a pipe; pass on what the user's stdout really is (see Progress).
  std::vector<std::string> env = {std::string("AUTOSHARD_STDOUT_TTY=") +
                                  (isatty(fileno(stdout)) ? "1" : "0")};
  checkFreshSaveDir(opts); // one message, before any rank starts
  try {
    // Stay mpirun's parent so that a SIGTERM or Ctrl-C stops the ranks at
    // the next step (after a checkpoint with --save-dir), not a killed job,
    // and so that a rank's death is reported with its step (Preemption.h).
    env.push_back("AUTOSHARD_SIGNALS_FORWARDED=1");
    std::string readyPrefix =
        "/tmp/shard-run-" + std::to_string(::getpid()) + "-ready-rank-";
    env.push_back("AUTOSHARD_READY_PREFIX=" + readyPrefix);
    std::vector<std::string> cmd = mpirunCommand(opts.ranks, argc, argv, env);
    cmd.insert(cmd.begin() + 1, {"--stdin", "none"});
    return runForwardingSignals(cmd, readyPrefix, opts.ranks,
                                /*checkpoints=*/!opts.saveDir.empty());
  } catch (const std::runtime_error &e) {
    throw UsageError(e.what());
  }
#endif
}

int runMain(Options opts, CommWorld *world) {
  // Catch a preemption signal from the start: one that arrives while the
  // artifact, the data or a checkpoint loads stops the run at its first step.
  std::optional<PreemptionWatch> preemption;
  preemption.emplace(world ? world->rank() : 0);
  Artifact artifact = loadArtifact(opts.artifact);
  std::unique_ptr<Backend> backendPtr = createBackend(opts.backend);
  Backend &backend = *backendPtr;
  const std::string threads = configureHostThreads(
      opts.backend, opts.threads, world ? world->localSize() : 1);
  const std::string cores =
      world ? placeHostRank(
                  opts.backend, opts.bindCores,
                  artifact.mesh.indexWithAxisInnermost(world->rank(), "pp"),
                  world->localSize(), world->size(), opts.threads)
            : "";
  // NCCL communicators for a multi-rank cuda run, bootstrapped over MPI.
  std::unique_ptr<CommWorld> deviceWorld =
      createDeviceWorld(backend, world, opts.commTimeoutS);
  std::unique_ptr<CommContext> comm;
  if (world) {
    if (opts.ranksGiven && opts.ranks != world->size())
      throw UsageError("-n is " + std::to_string(opts.ranks) +
                       ", but the job has " + std::to_string(world->size()) +
                       " ranks");
    checkWorldSize(artifact, opts, world->size(),
                   "the job has " + std::to_string(world->size()) + " ranks");
    comm = std::make_unique<CommContext>(artifact,
                                         deviceWorld ? *deviceWorld : *world);
    if (world->rank() != 0) {
      // Rank 0 logs; the others stay quiet (errors still reach stderr).
      if (!std::freopen("/dev/null", "w", stdout))
        throw std::runtime_error("cannot silence stdout of rank " +
                                 std::to_string(world->rank()));
      opts.log.clear();
      if (!opts.trace.empty())
        opts.trace = perRankPath(opts.trace, world->rank());
    }
  } else {
    checkWorldSize(artifact, opts, opts.ranks,
                   "-n is " + std::to_string(opts.ranks));
  }
  if (!world || world->rank() == 0) {
    if (!opts.saveParams.empty())
      checkWritablePath("--save-params", opts.saveParams);
  }
  if (!opts.trace.empty())
    checkWritablePath("--trace", opts.trace);
  checkHfFlags(artifact, opts, /*writer=*/!world || world->rank() == 0);
  checkFreshSaveDir(opts);
  if (!opts.saveDir.empty() && (!world || world->rank() == 0)) {
    std::error_code ec;
    std::filesystem::create_directories(opts.saveDir, ec);
    if (ec || !std::filesystem::is_directory(opts.saveDir))
      throw UsageError("--save-dir: cannot create directory '" + opts.saveDir +
                       "'" + (ec ? ": " + ec.message() : ""));
  }
  std::unique_ptr<Dataset> dataset = openDataset(opts.data);
  const Dataset &data = *dataset;
  data.validate(artifact.model.seq, artifact.model.vocabSize);

  ExecutorOptions exOpts;
  exOpts.seed = opts.seed;
  exOpts.checkMemory = opts.checkMemory;
  exOpts.comm = comm.get();
  Executor executor(artifact, backend, exOpts);
  Trainer trainer(opts, executor, data);
  if (preemption)
    trainer.stopOnSignal(&*preemption);
  SampleOptions sampleOpts{opts.sample, opts.temperature, opts.topK, opts.seed};
  std::optional<Sampler> sampler;
  if (opts.sample > 0)
    sampler.emplace(executor, data, sampleOpts);
  // Parameters read from a Hugging Face checkpoint skip the random init.
  executor.initState(/*zeroParams=*/!opts.initFrom.empty());
  std::optional<HfImportStats> initFrom;
  if (!opts.initFrom.empty())
    initFrom = importHfCheckpoint(executor, opts.initFrom);
  std::optional<CheckpointLoadStats> resumed;
  if (!opts.resume.empty()) {
    std::string path = opts.resume;
    if (path == "latest")
      runAgreed(executor, [&] { path = latestCheckpoint(opts.saveDir); });
    resumed = loadCheckpoint(executor, path);
    const TrainingProgress &p = resumed->progress;
    if (p.seed != opts.seed)
      throw CheckpointError("--resume: checkpoint '" + path +
                                "' was saved by a run with --seed " +
                                std::to_string(p.seed) + ", this run has " +
                                std::to_string(opts.seed) +
                                " (the data order and dropout would differ)",
                            /*agreed=*/true);
    if (p.step >= opts.steps)
      throw CheckpointError("--resume: checkpoint '" + path + "' is at step " +
                                std::to_string(p.step) + "; --steps " +
                                std::to_string(opts.steps) +
                                " leaves nothing to train",
                            /*agreed=*/true);
    trainer.startAt(p.step);
    // The traced step must be one this run does.
    if (opts.traceStep < p.step)
      opts.traceStep = std::min(p.step + 1, opts.steps - 1);
  }

  printPlan(artifact, executor);
  if (world)
    std::printf("ranks: %lld (%s), mesh %s\n",
                static_cast<long long>(world->size()), world->name().c_str(),
                describeMesh(artifact.mesh).c_str());
  if (!threads.empty())
    std::printf("%s\n", threads.c_str());
  if (!cores.empty())
    std::printf("%s (rank 0)\n", cores.c_str());
  if (world) {
    if (deviceWorld)
      std::printf("comm thread: %s (MPI only bootstraps %s, whose "
                  "collectives run on their own stream)\n",
                  opts.commThread ? "on" : "off", deviceWorld->name().c_str());
    else if (opts.commThread)
      std::printf("comm thread: on (one per rank makes every MPI call, "
                  "MPI_THREAD_MULTIPLE; polls every %lld us while an "
                  "operation is outstanding)\n",
                  static_cast<long long>(opts.commPollUs));
    else
      std::printf("comm thread: off (started collectives progress only "
                  "inside MPI calls, mostly their waits)\n");
  } else if (opts.commThread) {
    std::printf("comm thread: none (one rank without a launcher: no MPI, "
                "--comm-thread on has nothing to do)\n");
  }
  if (opts.commPollUsGiven && !opts.commThread)
    std::printf("note: --comm-poll-us applies with --comm-thread on only; "
                "ignored\n");
  std::printf("data %s: %lld train / %lld val tokens, %s\n", opts.data.c_str(),
              static_cast<long long>(data.tokenCount(Split::Train)),
              static_cast<long long>(data.tokenCount(Split::Val)),
              data.describe().c_str());
  if (opts.checkMemory)
    std::printf("memory check: on (poisoned arena, NaN checks)\n");
  if (initFrom)
    std::printf("init from %s: %lld tensors, %s read (rank 0), %.3f s\n",
                initFrom->dir.c_str(),
                static_cast<long long>(initFrom->tensors),
                formatBytes(initFrom->bytesRead).c_str(), initFrom->seconds);
  if (resumed) {
    const TrainingProgress &p = resumed->progress;
    std::printf("resumed from %s at step %lld (saved on %lld rank(s), plan "
                "%s): read %s, checksummed %s, in %.3f s\n",
                resumed->path.c_str(), static_cast<long long>(p.step),
                static_cast<long long>(resumed->savedWorldSize),
                resumed->savedPlan.c_str(),
                formatBytes(resumed->bytesRead).c_str(),
                formatBytes(resumed->bytesVerified).c_str(), resumed->seconds);
    // Name only what differs (this run's schedule is the one used).
    const LRSchedule &now = trainer.lrSchedule();
    std::string diff;
    auto note = [&](const char *flag, const std::string &was,
                    const std::string &is) {
      if (was != is)
        diff += std::string(diff.empty() ? "" : ", ") + flag + " " + was +
                " -> " + is;
    };
    auto num = [](double v) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%g", v);
      return std::string(buf);
    };
    note("--lr", num(p.schedule.maxLR), num(now.maxLR));
    note("--min-lr", num(p.schedule.minLR), num(now.minLR));
    note("--warmup", std::to_string(p.schedule.warmupSteps),
         std::to_string(now.warmupSteps));
    note("--decay-steps", std::to_string(p.schedule.decaySteps),
         std::to_string(now.decaySteps));
    if (!diff.empty())
      std::printf("warning: the learning-rate schedule differs from the "
                  "checkpoint's (%s); using this run's\n",
                  diff.c_str());
    if (resumed->savedBatch && resumed->savedBatch != artifact.model.batch)
      std::printf("warning: the checkpoint was trained with global batch "
                  "%lld, this artifact's is %lld (each step's batch differs "
                  "from the saved run's)\n",
                  static_cast<long long>(resumed->savedBatch),
                  static_cast<long long>(artifact.model.batch));
    if (p.dataTrainTokens != data.tokenCount(Split::Train))
      std::printf("warning: the checkpoint was trained on '%s' (%lld train "
                  "tokens), this run reads '%s' (%lld)\n",
                  p.dataSource.c_str(),
                  static_cast<long long>(p.dataTrainTokens), opts.data.c_str(),
                  static_cast<long long>(data.tokenCount(Split::Train)));
  }
  noteRankStep(resumed ? resumed->progress.step : 0);
  RunSummary s = trainer.run();
  if (!s.stoppedBy.empty()) {
    const bool speaker = !world || world->rank() == 0;
    std::fflush(stdout);
    if (!opts.saveDir.empty()) {
      std::printf("stopped by %s after step %lld: checkpoint %s (continue "
                  "with --resume %s)\n",
                  s.stoppedBy.c_str(), static_cast<long long>(s.stepsDone),
                  s.checkpoint.c_str(), s.checkpoint.c_str());
      std::fflush(stdout);
      if (speaker)
        std::fprintf(stderr,
                     "shard-run: interrupted at step %lld by %s, after saving "
                     "checkpoint %s\n",
                     static_cast<long long>(s.stepsDone), s.stoppedBy.c_str(),
                     s.checkpoint.c_str());
      noteRankEnd(RankEnd::Done);
      return 0;
    }
    if (speaker)
      std::fprintf(stderr,
                   "shard-run: interrupted at step %lld by %s (%lld of %lld "
                   "steps done; no checkpoint: --save-dir DIR saves one at "
                   "a signal)\n",
                   static_cast<long long>(s.stepsDone), s.stoppedBy.c_str(),
                   static_cast<long long>(s.stepsDone),
                   static_cast<long long>(opts.steps));
    noteRankEnd(RankEnd::Interrupted);
    // Under `shard-run -n N` the launcher exits 128 + its signal (a non-zero
    // exit here would only add mpirun's report of a failed rank).
    return underForwardingLauncher() ? 0 : preemption->interruptedExitStatus();
  }
  if (opts.checkReplicas) {
    checkStateReplicas(executor);
    std::printf("replicas: every copy of every state block is identical\n");
  }
  std::printf("final train loss %.4f, val loss %.4f\n", s.finalTrainLoss,
              s.finalValLoss);
  std::printf("throughput %.0f tokens/s; wall time %.2f s; peak %s (%lld "
              "bytes, predicted %lld)\n",
              s.tokensPerS, s.wallS, formatBytes(s.peakBytes).c_str(),
              static_cast<long long>(s.peakBytes),
              static_cast<long long>(predictedPeak(artifact, executor)));
  std::vector<double> rss = peakRssMiBPerRank(executor.comm());
  std::string rssLine;
  for (size_t r = 0; r < rss.size(); ++r)
    rssLine += (r ? ", " : "") + std::to_string(static_cast<int64_t>(rss[r]));
  std::printf("peak RSS per rank (MiB): %s\n", rssLine.c_str());
  if (!opts.saveParams.empty()) {
    saveParams(executor, opts.saveParams, opts.steps);
    std::printf("parameters after step %lld: %s\n",
                static_cast<long long>(opts.steps), opts.saveParams.c_str());
  }
  if (!opts.trace.empty())
    std::printf("trace of step %lld (0-based: the progress lines' step "
                "%lld): %s\n",
                static_cast<long long>(opts.traceStep),
                static_cast<long long>(opts.traceStep + 1), opts.trace.c_str());
  nlohmann::json finalFields = nlohmann::json::object();
  if (opts.sample > 0) {
    std::string text = sampler->generate();
    std::printf("sample:\n%s\n", text.c_str());
    finalFields = {{"sample_prompt", sampler->prompt()},
                   {"sample_tokens", sampler->tokens()}};
  }
  finalFields["peak_rss_mib_per_rank"] = rss;
  trainer.logFinal(finalFields);
  noteRankEnd(RankEnd::Done);
  return 0;
}

} // namespace

/// Reports an error: on one rank as before, in a multi-rank job with the
/// rank, then ends every rank of the job (never leaves the others hanging
/// in a collective).
int fail(CommWorld *world, const std::string &message, int code) {
  noteRankEnd(RankEnd::Failed);
  if (!world || world->size() == 1)
    return fail(message, code);
  std::fflush(stdout);
  std::fprintf(stderr, "shard-run: error: rank %lld: %s\n",
               static_cast<long long>(world->rank()), message.c_str());
  std::fflush(stderr);
  world->abort(code);
  return code; // not reached
}

int main(int argc, char **argv) {
  Options opts;
  std::unique_ptr<CommWorld> world;
  try {
    opts = parseOptions(std::vector<std::string>(argv + 1, argv + argc));
    if (opts.help) {
      std::fputs(usage().c_str(), stdout);
      return 0;
    }
    if (opts.traceStep >= opts.steps)
      opts.traceStep = opts.steps - 1;
    startWithHostThreadEnvironment(opts.backend, argv);
    if (!startedByLauncher())
      return opts.ranks > 1 ? launch(opts, argc, argv) : runMain(opts, nullptr);
#if AUTOSHARD_HAVE_MPI
    MpiWorldOptions mpiOptions;
    mpiOptions.commThread = opts.commThread;
    mpiOptions.pollUs = opts.commPollUs;
    mpiOptions.timeoutS = opts.commTimeoutS;
    try {
      world = createMpiWorld(&argc, &argv, mpiOptions);
    } catch (const CommError &e) {
      // E.g. an MPI without MPI_THREAD_MULTIPLE: the flag cannot be served.
      if (!opts.commThread)
        throw;
      throw UsageError(std::string("--comm-thread on: ") + e.what());
    }
#endif
    int rc = runMain(opts, world.get());
    if (rc != 0)
      noteRankEnd(RankEnd::Failed);
    return rc;
  } catch (const UsageError &e) {
    return fail(world.get(), e.what(), 2);
  } catch (const CheckpointError &e) {
    if (e.agreed) {
      // Every rank raised it: end cleanly (MPI_Finalize), rank 0 says why.
      noteRankEnd(RankEnd::Failed);
      if (!world || world->rank() == 0) {
        std::fflush(stdout);
        std::fprintf(stderr, "shard-run: error: %s\n", e.what());
      }
      return 1;
    }
    return fail(world.get(), e.what(), 1);
  } catch (const ArtifactError &e) {
    return fail(world.get(), e.what(), 1);
  } catch (const DataError &e) {
    return fail(world.get(), e.what(), 1);
  } catch (const ExecutionError &e) {
    return fail(world.get(), e.what(), 1);
  } catch (const std::bad_alloc &) {
    return fail(world.get(), "out of memory", 1);
  } catch (const std::exception &e) {
    return fail(world.get(), e.what(), 1);
  }
}
