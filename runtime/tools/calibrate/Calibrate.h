//===- Calibrate.h - shard-calibrate's shared timing, fits and output -*- C++
//-*-===//
//
// What the backends' probes of shard-calibrate (CpuProbes.cpp,
// CudaProbes.cpp) share: the options, the timer (every rank at once, the
// window over the ranks, the median of the repeats), the collective probe over
// a Communicator, the planner's GEMM and ring models with their fits, and the
// writing of the cluster description (docs/cluster-format.md).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_TOOLS_CALIBRATE_CALIBRATE_H
#define AUTOSHARD_RUNTIME_TOOLS_CALIBRATE_CALIBRATE_H

#include "autoshard/runtime/Artifact.h"
#include "autoshard/runtime/Backend.h"
#include "autoshard/runtime/Communicator.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace autoshard::runtime::calibrate {

/// The command line of shard-calibrate.
struct Options {
  /// "cpu" or "cuda".
  std::string backend = "cpu";
  int64_t ranks = 1;
  /// Output file; empty: standard output.
  std::string out;
  /// The cluster's name; empty: a default naming the backend.
  std::string name;
  int64_t repeats = 7;
  /// A cluster description whose fields this run cannot measure are copied
  /// (--base FILE; empty: none).
  std::string base;
  /// (cpu) Earlier shard-calibrate outputs measured with fewer ranks on
  /// this node (--profile FILE, repeatable), written into the output's
  /// `by_ranks_per_node`.
  std::vector<std::string> profiles;
  /// (cpu) --bind-cores auto|none: pin the ranks to cores as shard-run
  /// does when they outnumber the cores (cpu/Placement.h): blocks of
  /// consecutive ranks, so the relay probes' pairs 2i, 2i + 1 share a core
  /// as a pp=2 replica's stages do. Default none: the scheduler places.
  std::string bindCores = "none";
};

/// Seconds on a monotonic clock (CLOCK_MONOTONIC: one clock for every
/// process of the node, so Timer::span can compare the ranks' readings).
double now();

/// `x` rounded to 2 significant digits (stable output across runs), as the
/// shortest decimal that prints them; 0 for x <= 0.
double round2(double x);

/// Times a body on every rank of `all` at once: a barrier (an all-reduce)
/// before each repeat, the window from the first rank's start to the last
/// rank's end of each repeat (span), the median
/// over `repeats` (after one untimed warm-up call). `sync` (e.g. the CUDA
/// backend's synchronize) runs after the warm-up, the sizing call and each
/// timed batch, so asynchronous work is inside the time.
class Timer {
public:
  Timer(Communicator &all, int64_t repeats, std::function<void()> sync = {});

  /// Seconds per call of `body`. Each timing runs a batch of calls long
  /// enough (about 20 ms on the slowest rank) that the ranks' time slices
  /// on shared cores average out and a device's queue stays full: the
  /// result is a rank's throughput while every rank runs, not one call's
  /// latency.
  double median(const std::function<void()> &body);

  /// The calls per timing of `body` (the same on every rank): one untimed
  /// warm-up call, then one timed call sizes a batch of about 20 ms on the
  /// slowest rank.
  int64_t batchCalls(const std::function<void()> &body);

  /// One timing: a barrier, `calls` calls of `body`, the seconds per call
  /// of the window from the first rank's start to the last rank's end
  /// (span).
  double timeBatch(const std::function<void()> &body, int64_t calls);

  /// An all-reduce of one double over `all`.
  void barrier();

  /// The largest of `x` over the ranks.
  double max(double x);

  /// The window from the earliest `start` to the latest `end` over the
  /// ranks (seconds of now(), a clock every process of the node shares).
  /// Not the slowest rank's own end - start: ranks that time-share cores
  /// leave a barrier at different times, and a rank that ran its batch
  /// while the others waited for a core measures only its own share of
  /// the window.
  double span(double start, double end);

  int64_t repeats() const { return count; }

private:
  void wait() {
    if (sync)
      sync();
  }
  Communicator &all;
  int64_t count;
  std::function<void()> sync;
};

/// The median of `values` (the upper middle one of an even count); throws
/// std::invalid_argument when empty.
double medianOf(std::vector<double> values);

/// The largest over the smallest of `values` (all positive); 1 when empty.
double spreadOf(const std::vector<double> &values);

/// Interleaved repeats: `repeats` rounds, each calling `time(probe)` once
/// for every probe 0, 1, ..., probes - 1 in that order. Returns the times
/// per probe, [probe][repeat]. A drift of the machine's speed during the
/// run then moves every probe's timing of a round alike, so the ratios of
/// the probes' medians hold.
std::vector<std::vector<double>>
timeInterleaved(size_t probes, int64_t repeats,
                const std::function<double(size_t)> &time);

/// The probes of one calibration, timed together: add() registers each
/// (bodies and what they use must live until run() returns), run() sizes
/// every probe's batch (Timer::batchCalls) and then times them in
/// interleaved repeats (timeInterleaved, Timer::timeBatch); median() is a
/// probe's figure, times() its timing per repeat. Every rank registers the
/// same probes in the same order.
class Schedule {
public:
  explicit Schedule(Timer &timer) : timer(timer) {}

  /// Registers `body`; returns its index.
  size_t add(std::function<void()> body);

  /// Times every registered probe, timer.repeats() rounds.
  void run();

  size_t size() const { return bodies.size(); }

  /// Probe `index`'s body, to call outside the timed repeats (the sweeps of
  /// measureSyncSweeps).
  const std::function<void()> &body(size_t index) const {
    return bodies.at(index);
  }

  /// The median of probe `index`'s timings (seconds per call); throws
  /// std::logic_error before run().
  double median(size_t index) const;

  /// Probe `index`'s seconds per call in each repeat, in order.
  const std::vector<double> &times(size_t index) const;

private:
  Timer &timer;
  std::vector<std::function<void()>> bodies;
  std::vector<std::vector<double>> results;
};

/// One kernel of `backend` bound as the executor binds an instruction
/// (KernelSignature, the pointer array of its operands then results), on
/// buffers of the backend's memory, every byte 0x3C (small positive floats)
/// until write() sets an operand.
class ProbeOp {
public:
  ProbeOp(Backend &backend, const char *op, AttrMap attributes,
          std::vector<TensorType> args, std::vector<TensorType> results);
  ~ProbeOp();
  ProbeOp(const ProbeOp &) = delete;
  ProbeOp &operator=(const ProbeOp &) = delete;

  void operator()() { kernel(pointers.data()); }

  /// Copies `bytes` of host memory to operand `index` (the operands, then
  /// the results); throws std::invalid_argument past its size.
  void write(size_t index, const void *data, int64_t bytes);

  /// Bytes of every operand and result: each read or written once (the
  /// traffic TfmCost's ioBytes counts for most ops).
  double ioBytes() const;

private:
  Backend &backend;
  AttrMap attrs;
  std::vector<std::pair<void *, int64_t>> buffers;
  std::vector<void *> pointers;
  std::vector<int64_t> sizes;
  BoundKernel kernel;
};

/// One GEMM of the grid and its time per call.
struct GemmPoint {
  int64_t m, n, k;
  double seconds;
};

/// The planner's time of a GEMM (Planner.cpp, kernelTime and
/// gemmShapeEfficiency): max(flops / (peak x efficiency x quantisation x
/// k / (k + k0)), bytes / bandwidth) + the fixed cost per kernel + the
/// GEMM's own per-call overhead (`efficiency.gemm_overhead_us`: the BLAS
/// library's dispatch, packing set-up and thread fork/join, which a
/// one-element add does not pay).
struct GemmModel {
  /// FLOP/s, bytes/s, seconds.
  double peak = 0, bandwidth = 0, fixed = 0;
  /// Bytes per element of the operands (4: f32, 2: bf16).
  double elementBytes = 4;
  /// Streaming multiprocessors and output tiles for the wave and tile
  /// quantisation; sms = 0: none (the CPU).
  int64_t sms = 0;
  std::vector<std::pair<int64_t, int64_t>> tiles;

  double time(const GemmPoint &g, double efficiency, double k0,
              double overhead = 0) const;
};

/// efficiency.gemm, efficiency.gemm_k0 and efficiency.gemm_overhead_us
/// (seconds here) fitted to a grid.
struct GemmFit {
  double efficiency = 1, k0 = 0, overhead = 0;
  /// Mean |log(predicted / measured)| over the grid.
  double meanAbsLogError = 0;
  /// The fitted values that sit at a limit of the search (efficiency at
  /// its floor 0.30, k0 at 512, the overhead at 50 us), each as
  /// "name value (the search's limit)": the measurements wanted a value
  /// outside the range, so the fit is off for them (a probe disturbed by
  /// another job, or a machine unlike the ones the range was made for).
  std::vector<std::string> atLimit;
};

/// Grid search of efficiency in [0.30, 1] (step 0.02), k0 in [0, 512]
/// (step 8) and the per-call overhead in [0, 50] us (step 0.25 us) minimising
/// the mean |log| error of `model` over `points`. On this 2-core machine
/// the overhead (about 2 us with two OpenMP threads) halves the error of
/// the small GEMMs (n = 32, k = 32: 1.5-2x slower than efficiency and k0
/// alone predict).
GemmFit fitGemm(const std::vector<GemmPoint> &points, const GemmModel &model);

/// Where `fit` has values at a limit of its search (GemmFit::atLimit):
/// prints a warning naming them on stderr and keeps them in
/// `measured["gemm_fit_at_limit"]`.
void warnAtLimit(const GemmFit &fit, nlohmann::json &measured);

/// One attention probe: the FLOPs, score elements and kernel tiles the
/// planner counts for it (TfmCost; planner::attentionTiles), whether it is
/// the backward, and its time per call.
struct AttentionPoint {
  double flops, scores, tiles;
  bool backward;
  double seconds;
};

/// efficiency.attention (one for both directions) and the seconds per
/// score element and per tile of the forward and the backward, fitted to
/// `points` with the planner's model seconds = fixed + flops / (peak x
/// efficiency) + scores x scoreTime(direction) + tiles x
/// tileTime(direction): linear least squares in the relative error, a term
/// that would come out negative dropped, the efficiency at most 1. The
/// tile terms need points whose tiles per score differ (two sequence
/// lengths); otherwise they stay 0. Throws std::invalid_argument without a
/// forward and a backward point.
struct AttentionFit {
  double efficiency = 1, scoreTime = 0, gradScoreTime = 0;
  double tileTime = 0, gradTileTime = 0;
};
AttentionFit fitAttention(const std::vector<AttentionPoint> &points,
                          double peak, double fixed);

/// The best FLOP/s of the grid.
double bestGemmRate(const std::vector<GemmPoint> &points);

/// The grid as JSON ([{m, n, k, s}]).
nlohmann::json gemmJson(const std::vector<GemmPoint> &points);

/// One collective's time per call.
struct CommPoint {
  std::string kind;
  int64_t group;
  double bytes, seconds;
};

/// Steps and bandwidth factor of the planner's ring model (algorithms.md
/// §6.1) for `kind` over `n` ranks.
std::pair<double, double> ringTerms(const std::string &kind, int64_t n);

/// Least squares of t = c + steps·alpha + f·S·invB in relative error (each
/// row divided by its t), coefficients clamped at 0 and refitted; returns
/// {c, alpha, invB}. Throws std::runtime_error without a positive bandwidth
/// term.
std::vector<double> fitCollectives(const std::vector<CommPoint> &points);

/// Per collective kind among `points`, the factor s on the bandwidth of
/// the fit `coef` ({c, alpha, invB}) that fits that kind's points best in
/// relative error: t = c + steps·alpha + f·S·invB / s, s = Σu² / Σuv with u
/// = f·S·invB / t and v = 1 - (c + steps·alpha) / t (closed-form least
/// squares in 1/s). A kind whose points leave no bandwidth term to fit (v
/// never positive) gets 1. Keys are the kinds' names (planner's
/// `collective_bandwidth_scale`).
std::map<std::string, double>
fitBandwidthScales(const std::vector<CommPoint> &points,
                   const std::vector<double> &coef);

/// The collective probes on a Schedule: all-reduce, all-gather,
/// reduce-scatter and all-to-all over every group size 2, 4, ... up to
/// world.size() at each of `sizes` bytes, and a send/recv pair per group of
/// 2. `alloc(bytes)` gives a buffer the communicator accepts (host memory
/// for MPI, device memory for NCCL) that lives as long as this object. Holds
/// the groups' communicators; points() after the schedule ran.
class CollectiveProbes {
public:
  CollectiveProbes(CommWorld &world, Schedule &schedule,
                   const std::vector<double> &sizes,
                   const std::function<void *(int64_t)> &alloc);

  /// Every collective with its median time per call.
  std::vector<CommPoint> points() const;

private:
  Schedule &schedule;
  std::vector<std::unique_ptr<Communicator>> groups;
  /// Each point (seconds unset) and its probe's index in the schedule.
  std::vector<std::pair<CommPoint, size_t>> probes;
};

/// The collective probes (CollectiveProbes) timed on their own.
std::vector<CommPoint>
measureCollectives(CommWorld &world, Timer &timer,
                   const std::vector<double> &sizes,
                   const std::function<void *(int64_t)> &alloc);

/// How much a program whose ranks synchronise loses to the synchronisation
/// (Cluster::syncSlowdown, `host.sync_slowdown`), from one group size's
/// sweeps: the ranks time-share the node's cores, so at a blocking
/// collective the first ones spin, yield or sleep until the last one has
/// been scheduled, which the collective probes (every rank in the
/// collective back to back) and the kernel probes (free-running) do not
/// see.
struct SyncSweep {
  int64_t group = 0;
  /// Blocking 4 KiB all-reduces in one sweep.
  int64_t syncs = 0;
  /// Median seconds of a sweep without and with the collectives.
  double baseS = 0, syncedS = 0;
  /// The 4 KiB all-reduce's own seconds (its collective probe).
  double collectiveS = 0;
  /// syncSlowdownOf the paired sweeps.
  double slowdown = 0;
};

/// The slowdown from paired sweeps: the median over the repeats of
/// (synced - base - syncs x collective) / base, at least 0 (`collective`:
/// the collective's own seconds). Throws std::invalid_argument when `base`
/// and `synced` are empty or of different lengths, or syncs < 1.
double syncSlowdownOf(const std::vector<double> &base,
                      const std::vector<double> &synced, int64_t syncs,
                      double collective);

/// Sweeps for every group size 2, 4, ... up to the world's size (the groups
/// of CollectiveProbes): each repeat, every rank runs the first `kernels`
/// probes of `schedule` once each, in order (as a program calls its
/// kernels), 4 passes per timing, without collectives and then, for each
/// group size, with 20 blocking 4 KiB all-reduces spread over each pass
/// (SyncSweep's times are per pass); `comms` gives each
/// all-reduce's own time. On 8 ranks over 2 cores 10 to 40 collectives per
/// sweep added about the same time (80 somewhat more): the loss is a share
/// of the work more than a cost per collective. One rank: empty.
std::vector<SyncSweep> measureSyncSweeps(CommWorld &world, Timer &timer,
                                         const Schedule &schedule,
                                         size_t kernels,
                                         const std::vector<CommPoint> &comms);

/// How ranks that time-share a node's cores hand work to each other, as
/// pipeline stages do (Cluster::wakeupLatency, halfWaitingSpeedup and
/// othersWaitingSpeedup: `host.wakeup_latency_us`,
/// `host.speedup_half_waiting`, `host.speedup_others_waiting`). A waiting
/// rank polls its request (the runtime's wait) and runs only when the
/// scheduler gives it a core, so (1) a send reaches a waiting receiver late
/// while other ranks keep the cores busy, and (2) the cores the waiting
/// ranks leave go to the running ones.
struct PipelineSharing {
  /// Seconds from a send to its waiting receiver's return from the wait,
  /// while half the ranks (the senders) keep running kernels: mean and
  /// median over every hand-off of every repeat, and their count.
  double wakeupMeanS = 0, wakeupMedianS = 0;
  int64_t handoffs = 0;
  /// Median seconds of one sweep over the kernel probes with every rank
  /// running it (`allS`), with half of the ranks running it while the
  /// other half waits for them (`halfS`), and with one rank running it
  /// while all others wait (`oneS`).
  double allS = 0, halfS = 0, oneS = 0;
  /// allS / halfS and allS / oneS, at least 1 (the cluster's fields).
  double halfWaitingSpeedup() const;
  double othersWaitingSpeedup() const;
};

/// Measures PipelineSharing on every rank of `world` (all ranks on one
/// node): each repeat, 20 hand-offs from rank r < size/2 to rank
/// r + size/2 (the sender runs the first `kernels` probes of `schedule` in
/// turn for about 1 ms between sends and stamps each 8-byte message with
/// its send time on the node's steady clock; the receiver waits), then the
/// three sweeps. Fewer than 2 ranks: all zero (nothing to hand off).
PipelineSharing measurePipelineSharing(CommWorld &world, Timer &timer,
                                       const Schedule &schedule,
                                       size_t kernels);

/// Sets `collective_latency_us`, `intra_node` (link name `link`) and
/// `collective_bandwidth_scale` from the ring fit of `comms`, and
/// `measured.collectives`.
void writeLinkFit(nlohmann::json &cluster, nlohmann::json &measured,
                  const std::vector<CommPoint> &comms, const std::string &link);

/// Reads a cluster description (--base); throws std::runtime_error naming
/// the file when it cannot be read or is not a JSON object.
nlohmann::json readBase(const std::string &path);

/// Throws std::runtime_error naming `path` and the reason (strerror) when
/// the file cannot be written: its directory missing or not writable, or
/// the file itself not writable or a directory. Creates nothing (the check
/// before a calibration's minute of measuring).
void checkWritable(const std::string &path);

/// The `by_ranks_per_node` object made of the --profile files `paths`:
/// key R (the file's gpus_per_node), value the file's measured fields (gpu,
/// efficiency, intra_node, collective_latency_us, collective_bandwidth_scale,
/// host, overlap, measured), and the file's own by_ranks_per_node entries
/// (outputs of still fewer ranks) unless a file of that rank count is given
/// itself. Each file must be a CPU shard-calibrate output
/// (gpu.shares_node true) of 1 <= R < `ranks` ranks, R distinct; throws
/// std::invalid_argument naming the file and the value found otherwise
/// (a second file of the same R names the first), when `ranks` is 1, or
/// when the file cannot be read (a directory, a read error) or parsed.
nlohmann::json readRankProfiles(const std::vector<std::string> &paths,
                                int64_t ranks);

/// Writes `cluster` (2-space JSON) to opts.out, or standard output; throws
/// std::runtime_error naming the file and the reason when it cannot. The
/// file is written through an AtomicFile (a temporary renamed onto it): on
/// an error or a kill the file it replaces is left whole.
int writeCluster(const nlohmann::json &cluster, const Options &opts);

/// The probes of one backend: measure on `world` (every rank) and write the
/// cluster description on rank 0; return the exit status.
int runCpu(const Options &opts, CommWorld &world);
int runCuda(const Options &opts, CommWorld &world);

} // namespace autoshard::runtime::calibrate

#endif // AUTOSHARD_RUNTIME_TOOLS_CALIBRATE_CALIBRATE_H
