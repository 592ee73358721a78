//===- Options.cpp - Command line of shard-run ----------------------------===//

#include "Options.h"

#include "Backends.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>

namespace autoshard::shardrun {

namespace {

int64_t parseInt(const std::string &flag, const std::string &text, int64_t min,
                 int64_t max = std::numeric_limits<int64_t>::max()) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0')
    throw UsageError(flag + " expects an integer, found '" + text + "'");
  if (errno == ERANGE)
    throw UsageError(flag + " is out of range (at most " + std::to_string(max) +
                     "), found " + text);
  if (v < min)
    throw UsageError(flag + " must be >= " + std::to_string(min) + ", found " +
                     text);
  if (v > max)
    throw UsageError(flag + " must be <= " + std::to_string(max) + ", found " +
                     text);
  return v;
}

double parseReal(const std::string &flag, const std::string &text, double min) {
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || std::isnan(v))
    throw UsageError(flag + " expects a number, found '" + text + "'");
  if (!std::isfinite(v) || (errno == ERANGE && std::fabs(v) > 1))
    throw UsageError(flag + " is out of range (a finite number), found " +
                     text);
  if (v < min)
    throw UsageError(flag + " must be >= " + std::to_string(min) + ", found " +
                     text);
  return v;
}

} // namespace

std::string usage() {
  std::string text = R"(usage: shard-run ARTIFACT --data FILE|DIR [options]

Trains the model compiled into ARTIFACT (shard-opt --rt-export) on a text
file, character-level, and prints a sample of generated text at the end.

  --data FILE|DIR      training text, tokenised by character and split 90/10
                       into train/val; or a directory prepared by `python -m
                       autoshard.data prepare` (meta.json, train.bin,
                       val.bin: BPE or any tokenizer.json; docs/data-format.md)
  -n N                 number of ranks; must equal the artifact's world
                       size (default: 1, or the job size under a launcher).
                       With N > 1 shard-run re-executes itself under
                       `mpirun -n N --oversubscribe` on this node
  --backend NAME       cpu (default) or cuda (needs a CUDA build and a GPU)
  --steps N            optimizer steps (2000)
  --lr X               peak learning rate (1e-3)
  --min-lr X           final learning rate of the cosine decay (1e-4)
  --warmup N           linear warmup steps (100, at most the decay steps)
  --decay-steps N      cosine decay length in steps (default: --steps)
  --eval-interval N    evaluate every N steps (250; 0: only at the end)
  --eval-iters N       validation batches per evaluation (20)
  --log-interval N     progress line every N steps when not a terminal (10)
  --seed N             seed of init, data sampling, dropout, sampling (1337)
  --log FILE           JSONL metrics, one object per step
  --trace FILE         Chrome trace (chrome://tracing, Perfetto) of one step
  --trace-step N       0-based step the trace records (1; a shorter run: its
                       last step; past --steps: an error)
  --save-params FILE   after the last step, write every parameter, gathered
                       to its global shape, to FILE (safetensors; rank 0)
  --save-dir DIR       write sharded checkpoints to DIR/step-000123/ (each
                       rank its own chunks, manifest last, atomic rename):
                       every --save-interval steps, after the last step, and
                       at the next step boundary after SIGTERM, SIGINT or
                       SIGUSR1 (then exit 0)
  --save-interval N    checkpoint every N steps (0: only at the end; 0)
  --keep K             keep only the newest K checkpoints (0: all; 0)
  --async-save         checkpoint asynchronously: copy the state to host
                       memory at the step boundary and write it on a thread
                       while training goes on (costs host memory equal to
                       the bytes a rank writes); the saves at a signal and
                       at the end still finish before the run does
  --resume DIR|latest  continue from checkpoint DIR (or the newest complete
                       one under --save-dir), saved under any plan of the
                       same model; same plan: bit for bit the same run
  --init-from DIR      start from the Hugging Face checkpoint DIR
                       (config.json, model.safetensors or its sharded
                       index) instead of the random init: the artifact must
                       be built from the same config (python3 -m
                       autoshard.models DIR/config.json ...); each rank reads
                       only its blocks (docs/hf-checkpoints.md)
  --save-hf DIR        after the last step (and at every --save-dir
                       checkpoint) write the parameters as a Hugging Face
                       model directory DIR that transformers'
                       from_pretrained loads (atomic; replaces an earlier
                       export there, refuses any other existing DIR)
  --check-replicas     at the end, check that every copy of a state held by
                       several ranks or pipeline stages is identical
  --sample N           tokens to generate at the end (characters for a text
                       file; 200; 0: none)
  --temperature X      sampling temperature (0.8)
  --top-k N            sample among the N most likely characters (200)
  --threads N          CPU kernel threads per rank (GEMMs and the other
                       kernels share one OpenMP pool); default: the cores
                       this rank may run on / the job's ranks on this node,
                       at least 1, at most 1024 (the banner says what was
                       chosen)
  --bind-cores auto|none
                       auto: when this node's ranks outnumber its cores,
                       pin each to one, a pipeline replica's stages and
                       neighbouring data-parallel ranks on the same core
                       (hand-offs then switch ranks on a core instead of
                       waking one on a busy core, and which ranks share
                       a core no longer depends on the scheduler);
                       none (default): leave placement to the
                       scheduler. Plan with a cluster file calibrated the
                       same way (shard-calibrate --bind-cores)
  --comm-thread on|off one communication thread per rank makes every MPI
                       call, so that collectives started early
                       (dist-overlap-collectives) progress while the rank
                       computes (MPI_THREAD_MULTIPLE); off: they progress
                       only inside waits (default: @COMM_DEFAULT@)
  --comm-poll-us N     with --comm-thread on: microseconds between two polls
                       of the outstanding operations while nothing waits for
                       one (1 to 100000; @POLL_DEFAULT@)
  --comm-timeout S     communication watchdog: a rank that waits S seconds
                       for one collective or receive (a hung or dead peer,
                       a dead link) ends the job with a message naming the
                       operation, its group, the step and the peers it
                       waited for (@TIMEOUT_DEFAULT@; 0: wait forever)
  --skip-nonfinite-steps N
                       undo (skip) at most N steps whose train loss or
                       gradient norm is NaN or infinite, as Megatron does;
                       each is logged. Costs a host copy of the rank's state
                       per step. Default 0: the first such step ends the run
                       with an error, saving nothing after it
  --check-memory       poison dead/unwritten memory and fail on NaN
                       (also AUTOSHARD_CHECK_MEMORY=1); slow
  -h, --help           this text

Several ranks: `shard-run -n 4 ARTIFACT ...` starts 4 ranks on this node
with OpenMPI (as root it adds --allow-run-as-root; with more ranks than
cores it sets OMPI_MCA_mpi_yield_when_idle=1 and OPENBLAS_NUM_THREADS=1;
AUTOSHARD_MPIRUN names another mpirun). Across nodes, start shard-run with
the launcher yourself; it then runs as one rank of that job:
  mpirun -n 16 --hostfile hosts shard-run ARTIFACT --data FILE ...
  srun -N 4 --ntasks-per-node=4 --mpi=pmix shard-run ARTIFACT --data FILE ...
Rank 0 prints and writes --log; --trace writes one file per rank (rank r > 0
adds `.rankR` before the extension). Any rank's error prints
"shard-run: error: rank R: ..." and ends every rank (MPI_Abort).
See docs/running.md.
)";
  auto replace = [&text](const std::string &from, const std::string &to) {
    text.replace(text.find(from), from.size(), to);
  };
  replace("@COMM_DEFAULT@", kCommThreadDefault ? "on" : "off");
  replace("@POLL_DEFAULT@", std::to_string(runtime::kDefaultCommPollUs));
  replace("@TIMEOUT_DEFAULT@",
          std::to_string(static_cast<int64_t>(runtime::kDefaultCommTimeoutS)));
  return text;
}

Options parseOptions(const std::vector<std::string> &args) {
  Options o;
  using Setter = std::function<void(const std::string &, const std::string &)>;
  auto integer = [](int64_t &field, int64_t min,
                    int64_t max =
                        std::numeric_limits<int64_t>::max()) -> Setter {
    return [&field, min, max](const std::string &f, const std::string &v) {
      field = parseInt(f, v, min, max);
    };
  };
  auto real = [](double &field, double min) -> Setter {
    return [&field, min](const std::string &f, const std::string &v) {
      field = parseReal(f, v, min);
    };
  };
  auto text = [](std::string &field) -> Setter {
    return [&field](const std::string &f, const std::string &v) {
      if (v.empty())
        throw UsageError(f + " expects a non-empty value");
      field = v;
    };
  };
  int64_t seed = static_cast<int64_t>(o.seed);
  const std::map<std::string, Setter> withValue = {
      {"--data", text(o.data)},
      {"-n",
       [&o](const std::string &f, const std::string &v) {
         o.ranks = parseInt(f, v, 1, std::numeric_limits<int>::max());
         o.ranksGiven = true;
       }},
      {"--backend", text(o.backend)},
      {"--steps", integer(o.steps, 1)},
      {"--lr", real(o.lr, 0.0)},
      {"--min-lr", real(o.minLR, 0.0)},
      {"--warmup", integer(o.warmup, 0)},
      {"--decay-steps", integer(o.decaySteps, 1)},
      {"--eval-interval", integer(o.evalInterval, 0)},
      {"--eval-iters", integer(o.evalIters, 1)},
      {"--log-interval", integer(o.logInterval, 1)},
      {"--seed", integer(seed, 0)},
      {"--log", text(o.log)},
      {"--trace", text(o.trace)},
      {"--save-params", text(o.saveParams)},
      {"--save-dir", text(o.saveDir)},
      {"--save-interval", integer(o.saveInterval, 0)},
      {"--keep", integer(o.keep, 0)},
      {"--resume", text(o.resume)},
      {"--init-from", text(o.initFrom)},
      {"--save-hf", text(o.saveHf)},
      {"--trace-step",
       [&o, set = integer(o.traceStep, 0)](const std::string &f,
                                           const std::string &v) {
         set(f, v);
         o.traceStepGiven = true;
       }},
      {"--sample", integer(o.sample, 0)},
      {"--temperature", real(o.temperature, 1e-6)},
      {"--top-k", integer(o.topK, 1)},
      {"--threads", integer(o.threads, 1, kMaxThreads)},
      {"--skip-nonfinite-steps", integer(o.skipNonfiniteSteps, 0)},
      {"--bind-cores",
       [&o](const std::string &f, const std::string &v) {
         if (v != "auto" && v != "none")
           throw UsageError(f + " expects 'auto' or 'none', found '" + v + "'");
         o.bindCores = v;
       }},
      {"--comm-thread",
       [&o](const std::string &f, const std::string &v) {
         if (v != "on" && v != "off")
           throw UsageError(f + " expects 'on' or 'off', found '" + v + "'");
         o.commThread = v == "on";
       }},
      {"--comm-timeout",
       [&o](const std::string &f, const std::string &v) {
         o.commTimeoutS = parseReal(f, v, -HUGE_VAL);
         // Below a second an ordinary collective of a loaded machine would
         // time out, and the watchdog's own exchange takes about that long.
         if (o.commTimeoutS < 0 || o.commTimeoutS > kMaxCommTimeoutS ||
             (o.commTimeoutS > 0 && o.commTimeoutS < 1))
           throw UsageError(
               f + " must be 0 (no watchdog) or between 1 and " +
               std::to_string(static_cast<int64_t>(kMaxCommTimeoutS)) +
               " seconds, found " + v);
       }},
      {"--comm-poll-us",
       [&o, set = integer(o.commPollUs, 1, kMaxCommPollUs)](
           const std::string &f, const std::string &v) {
         set(f, v);
         o.commPollUsGiven = true;
       }},
  };
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i], value;
    bool inlineValue = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != arg.npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      inlineValue = true;
    }
    if (arg == "-h" || arg == "--help") {
      o.help = true;
    } else if (arg == "--check-memory") {
      o.checkMemory = true;
    } else if (arg == "--check-replicas") {
      o.checkReplicas = true;
    } else if (arg == "--async-save") {
      o.asyncSave = true;
    } else if (auto it = withValue.find(arg); it != withValue.end()) {
      if (!inlineValue) {
        if (i + 1 >= args.size())
          throw UsageError(arg + " expects a value");
        value = args[++i];
      }
      it->second(arg, value);
    } else if (!arg.empty() && arg[0] == '-') {
      throw UsageError("unknown option '" + arg + "' (see --help)");
    } else if (o.artifact.empty()) {
      o.artifact = arg;
    } else {
      throw UsageError("unexpected argument '" + arg + "' (the artifact is '" +
                       o.artifact + "')");
    }
  }
  o.seed = static_cast<uint64_t>(seed);
  if (o.help)
    return o;
  if (o.artifact.empty())
    throw UsageError("no artifact given (see --help)");
  if (o.data.empty())
    throw UsageError("--data FILE|DIR is required");
  if (!backendBuilt(o.backend))
    throw UsageError("--backend '" + o.backend +
                     "' is not available (this build has: " + builtBackends() +
                     ")");
  if (o.saveDir.empty() && o.saveInterval > 0)
    throw UsageError("--save-interval needs --save-dir DIR");
  if (o.saveDir.empty() && o.keep > 0)
    throw UsageError("--keep needs --save-dir DIR");
  if (o.saveDir.empty() && o.asyncSave)
    throw UsageError("--async-save needs --save-dir DIR");
  if (o.resume == "latest" && o.saveDir.empty())
    throw UsageError("--resume latest needs --save-dir DIR (where to look)");
  if (!o.initFrom.empty() && !o.resume.empty())
    throw UsageError("--init-from and --resume exclude each other: a resumed "
                     "run continues from its checkpoint's weights");
  // The default (1) follows a shorter run to its last step; a step asked
  // for is one the run must reach.
  if (o.traceStepGiven && o.traceStep >= o.steps)
    throw UsageError("--trace-step " + std::to_string(o.traceStep) +
                     " is past the run's last step: --steps " +
                     std::to_string(o.steps) + " runs steps 0 to " +
                     std::to_string(o.steps - 1) + " (0-based)");
  if (o.decaySteps < 0)
    o.decaySteps = o.steps;
  if (o.warmup < 0)
    o.warmup = std::min<int64_t>(100, o.decaySteps);
  if (const char *env = std::getenv("AUTOSHARD_CHECK_MEMORY"))
    o.checkMemory = o.checkMemory || (env[0] != '\0' && env[0] != '0');
  return o;
}

} // namespace autoshard::shardrun
