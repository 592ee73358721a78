//===- shard-run.cpp - Train a compiled autoshard artifact ----------------===//
//
// shard-run ARTIFACT --data FILE [options]: loads the artifact, initialises
// the weights from the counter-based RNG, trains on a character-level text
// file, evaluates, logs, traces one step and prints a sample. Every bad input
// ends with one "shard-run: error: ..." line on stderr and a non-zero exit
// (2 for a bad command line, 1 otherwise).
//
//===----------------------------------------------------------------------===//

#include "Options.h"
#include "Reporting.h"
#include "Sampler.h"
#include "Trainer.h"

#include "autoshard/runtime/CpuBackend.h"

#include <cstdio>
#include <exception>
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

void printPlan(const Artifact &a, const Executor &ex) {
  const MemoryPlan &m = a.memory;
  std::printf("model %s: vocab %lld (padded %lld), batch %lld, seq %lld\n",
              a.model.name.empty() ? "(unnamed)" : a.model.name.c_str(),
              static_cast<long long>(a.model.vocabSize),
              static_cast<long long>(a.model.paddedVocabSize),
              static_cast<long long>(a.model.batch),
              static_cast<long long>(a.model.seq));
  std::printf("memory: predicted peak %s (state %s, constants %s, transient "
              "%s); allocated %s\n",
              formatBytes(m.peakBytes).c_str(),
              formatBytes(m.stateBytes).c_str(),
              formatBytes(m.constantBytes).c_str(),
              formatBytes(m.transientBytes).c_str(),
              formatBytes(ex.allocatedBytes()).c_str());
}

int runMain(const Options &opts) {
  Artifact artifact = loadArtifact(opts.artifact);
  if (artifact.worldSize != opts.ranks)
    throw UsageError("artifact '" + opts.artifact + "' was compiled for " +
                     std::to_string(artifact.worldSize) + " ranks, but -n is " +
                     std::to_string(opts.ranks));
  CharDataset data = CharDataset::load(opts.data);
  data.validate(artifact.model.seq, artifact.model.vocabSize);

  CpuBackend backend;
  ExecutorOptions exOpts;
  exOpts.seed = opts.seed;
  exOpts.checkMemory = opts.checkMemory;
  Executor executor(artifact, backend, exOpts);
  Trainer trainer(opts, executor, data);
  SampleOptions sampleOpts{opts.sample, opts.temperature, opts.topK, opts.seed};
  std::optional<Sampler> sampler;
  if (opts.sample > 0)
    sampler.emplace(executor, data, sampleOpts);
  executor.initState();

  printPlan(artifact, executor);
  std::printf("data %s: %zu train / %zu val tokens, %lld characters\n",
              opts.data.c_str(), data.tokens(Split::Train).size(),
              data.tokens(Split::Val).size(),
              static_cast<long long>(data.vocab().size()));
  if (opts.checkMemory)
    std::printf("memory check: on (poisoned arena, NaN checks)\n");
  RunSummary s = trainer.run();
  std::printf("final train loss %.4f, val loss %.4f\n", s.finalTrainLoss,
              s.finalValLoss);
  std::printf("throughput %.0f tokens/s; wall time %.2f s; peak %s (%lld "
              "bytes, predicted %lld)\n",
              s.tokensPerS, s.wallS, formatBytes(s.peakBytes).c_str(),
              static_cast<long long>(s.peakBytes),
              static_cast<long long>(artifact.memory.peakBytes));
  if (!opts.trace.empty())
    std::printf("trace of step %lld: %s\n",
                static_cast<long long>(opts.traceStep), opts.trace.c_str());
  if (opts.sample > 0) {
    std::string text = sampler->generate();
    std::printf("sample:\n%s\n", text.c_str());
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options opts;
  try {
    opts = parseOptions(std::vector<std::string>(argv + 1, argv + argc));
    if (opts.help) {
      std::fputs(usage().c_str(), stdout);
      return 0;
    }
    if (opts.traceStep >= opts.steps)
      opts.traceStep = opts.steps - 1;
    return runMain(opts);
  } catch (const UsageError &e) {
    return fail(e.what(), 2);
  } catch (const ArtifactError &e) {
    return fail(e.what(), 1);
  } catch (const DataError &e) {
    return fail(e.what(), 1);
  } catch (const ExecutionError &e) {
    return fail(e.what(), 1);
  } catch (const std::bad_alloc &) {
    return fail("out of memory", 1);
  } catch (const std::exception &e) {
    return fail(e.what(), 1);
  }
}
