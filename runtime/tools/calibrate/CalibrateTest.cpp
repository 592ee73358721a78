//===- CalibrateTest.cpp - shard-calibrate's fits and timer ---------------===//
//
// The fits both backends share, on timings generated from known parameters
// (the CUDA path's GEMM fit with the SM quantisation included, which no
// GPU-less machine can otherwise exercise), and the timer's use of the
// backend's synchronize().
//
//===----------------------------------------------------------------------===//

#include "Calibrate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>

using namespace autoshard::runtime;
using namespace autoshard::runtime::calibrate;

namespace {

std::vector<GemmPoint> grid(const GemmModel &model, double eff, double k0,
                            std::initializer_list<int64_t> sizes) {
  std::vector<GemmPoint> points;
  for (int64_t m : sizes)
    for (int64_t n : sizes)
      for (int64_t k : sizes) {
        GemmPoint g{m, n, k, 0};
        g.seconds = model.time(g, eff, k0);
        points.push_back(g);
      }
  return points;
}

TEST(CalibrateFit, RecoversGemmEfficiencyAndK0WithQuantisation) {
  // An H200-like device: 132 SMs, the H100 file's tiles, bf16.
  GemmModel model;
  model.peak = 800e12, model.bandwidth = 4e12, model.fixed = 3e-6;
  model.elementBytes = 2, model.sms = 132;
  model.tiles = {{128, 256}, {256, 128}, {128, 128}};
  std::vector<GemmPoint> points =
      grid(model, 0.74, 96, {256, 1024, 4096, 8192});
  GemmFit fit = fitGemm(points, model);
  EXPECT_NEAR(fit.efficiency, 0.74, 1e-9);
  EXPECT_NEAR(fit.k0, 96, 1e-9);
  EXPECT_LT(fit.meanAbsLogError, 1e-9);
  // Quantisation matters: 256 x 256 fills 2..4 of 132 SMs, so a fit without
  // it (the CPU's) is off by far on the same timings.
  GemmModel flat = model;
  flat.sms = 0;
  EXPECT_GT(fitGemm(points, flat).meanAbsLogError, 0.1);
}

TEST(CalibrateFit, RecoversGemmFitWithoutQuantisation) {
  GemmModel model; // the CPU: no SMs
  model.peak = 1.4e11, model.bandwidth = 2e10, model.fixed = 1e-8;
  std::vector<GemmPoint> points = grid(model, 0.5, 24, {32, 128, 512});
  GemmFit fit = fitGemm(points, model);
  EXPECT_NEAR(fit.efficiency, 0.5, 1e-9);
  EXPECT_NEAR(fit.k0, 24, 1e-9);
  EXPECT_NEAR(fit.overhead, 0, 1e-12);
  // A per-call overhead (BLAS dispatch, thread fork/join) is recovered
  // beside efficiency and k0: it weighs on the small GEMMs only.
  for (GemmPoint &g : points)
    g.seconds = model.time(g, 0.5, 24, 2.5e-6);
  GemmFit withOverhead = fitGemm(points, model);
  EXPECT_NEAR(withOverhead.efficiency, 0.5, 1e-9);
  EXPECT_NEAR(withOverhead.k0, 24, 1e-9);
  EXPECT_NEAR(withOverhead.overhead, 2.5e-6, 1e-12);
  EXPECT_LT(withOverhead.meanAbsLogError, 1e-9);
  EXPECT_DOUBLE_EQ(bestGemmRate({{8, 8, 8, 1e-6}, {16, 16, 16, 1e-6}}),
                   2.0 * 16 * 16 * 16 / 1e-6);
}

TEST(CalibrateFit, NamesValuesAtTheLimitOfTheSearch) {
  GemmModel model;
  model.peak = 1.4e11, model.bandwidth = 2e10, model.fixed = 1e-8;
  // Inside the range: nothing to name.
  EXPECT_TRUE(
      fitGemm(grid(model, 0.5, 24, {32, 128, 512}), model).atLimit.empty());
  // Timings that want k0 = 2000 and an efficiency of 0.2: both clamp (and
  // the overhead with them, making up what they cannot).
  GemmFit fit = fitGemm(grid(model, 0.2, 2000, {32, 128, 512}), model);
  auto named = [&](const std::string &item) {
    return std::count(fit.atLimit.begin(), fit.atLimit.end(), item) == 1;
  };
  EXPECT_TRUE(named("efficiency 0.3 (the search's limit)"));
  EXPECT_TRUE(named("k0 512 (the search's limit)"));
  nlohmann::json measured;
  warnAtLimit(fit, measured);
  EXPECT_EQ(measured["gemm_fit_at_limit"].size(), fit.atLimit.size());
}

TEST(CalibrateFit, RecoversAttentionEfficiencyAndScoreTimes) {
  const double peak = 2e11, fixed = 1e-8, eff = 0.4;
  const double scoreTime = 3e-9, gradScoreTime = 5e-9;
  std::vector<AttentionPoint> points;
  for (double headDim : {16.0, 32.0, 64.0}) {
    double scores = 2.0 * 4 * 64 * 64, flops = 4 * scores * headDim / 2;
    double tiles = 2.0 * 4;
    points.push_back({flops, scores, tiles, false,
                      fixed + flops / (peak * eff) + scores * scoreTime});
    points.push_back(
        {2.5 * flops, scores, tiles, true,
         fixed + 2.5 * flops / (peak * eff) + scores * gradScoreTime});
  }
  AttentionFit fit = fitAttention(points, peak, fixed);
  EXPECT_NEAR(fit.efficiency, eff, 1e-9);
  EXPECT_NEAR(fit.scoreTime, scoreTime, 1e-15);
  EXPECT_NEAR(fit.gradScoreTime, gradScoreTime, 1e-15);
  // One tiles-per-score ratio: the tile terms cannot be told from the
  // score terms and stay 0.
  EXPECT_EQ(fit.tileTime, 0);
  EXPECT_EQ(fit.gradTileTime, 0);
  // Times that FLOPs explain alone: no score term, and never a negative
  // one; faster than peak clamps the efficiency to 1.
  for (AttentionPoint &p : points)
    p.seconds = fixed + p.flops / (peak * 0.5) - (p.backward ? 0 : 1e-7);
  AttentionFit flopsOnly = fitAttention(points, peak, fixed);
  EXPECT_GE(flopsOnly.scoreTime, 0);
  EXPECT_NEAR(flopsOnly.gradScoreTime, 0, 1e-15);
  for (AttentionPoint &p : points)
    p.seconds = fixed + p.flops / (peak * 4) + p.scores * scoreTime;
  AttentionFit fast = fitAttention(points, peak, fixed);
  EXPECT_DOUBLE_EQ(fast.efficiency, 1.0);
  EXPECT_GT(fast.scoreTime, 0);
  EXPECT_THROW(fitAttention({points[0]}, peak, fixed), std::invalid_argument);
}

TEST(CalibrateFit, RecoversAttentionTileTimes) {
  // Two sequence lengths with the same scores, four times the tiles at the
  // shorter one (ring attention's blocks): the fit separates the fixed cost
  // per tile from the cost per score.
  const double peak = 2e11, fixed = 1e-8, eff = 0.4;
  const double scoreTime = 3e-9, gradScoreTime = 5e-9;
  const double tileTime = 2e-6, gradTileTime = 5e-6;
  std::vector<AttentionPoint> points;
  for (auto [batch, seq] : {std::pair<double, double>{2, 64}, {8, 32}})
    for (double headDim : {16.0, 32.0, 64.0}) {
      double scores = batch * 4 * seq * seq, flops = 4 * scores * headDim / 2;
      double tiles = batch * 4;
      points.push_back({flops, scores, tiles, false,
                        fixed + flops / (peak * eff) + scores * scoreTime +
                            tiles * tileTime});
      points.push_back({2.5 * flops, scores, tiles, true,
                        fixed + 2.5 * flops / (peak * eff) +
                            scores * gradScoreTime + tiles * gradTileTime});
    }
  AttentionFit fit = fitAttention(points, peak, fixed);
  EXPECT_NEAR(fit.efficiency, eff, 1e-9);
  EXPECT_NEAR(fit.scoreTime, scoreTime, 1e-15);
  EXPECT_NEAR(fit.gradScoreTime, gradScoreTime, 1e-15);
  EXPECT_NEAR(fit.tileTime, tileTime, 1e-13);
  EXPECT_NEAR(fit.gradTileTime, gradTileTime, 1e-13);
  // Small tiles that are not slower: no tile term, never a negative one.
  for (AttentionPoint &p : points)
    p.seconds = fixed + p.flops / (peak * eff) +
                p.scores * (p.backward ? gradScoreTime : scoreTime) -
                p.tiles * 1e-7;
  AttentionFit none = fitAttention(points, peak, fixed);
  EXPECT_EQ(none.tileTime, 0);
  EXPECT_EQ(none.gradTileTime, 0);
}

TEST(CalibrateFit, RecoversTheRingModel) {
  const double c = 8e-6, alpha = 3e-6, bandwidth = 200e9;
  std::vector<CommPoint> points;
  for (int64_t g : {2, 4, 8})
    for (double bytes : {65536.0, 67108864.0})
      for (const char *kind :
           {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}) {
        auto [steps, frac] = ringTerms(kind, g);
        points.push_back(
            {kind, g, bytes, c + steps * alpha + frac * bytes / bandwidth});
      }
  points.push_back({"p2p", 2, 65536.0, c + alpha + 65536.0 / bandwidth});
  std::vector<double> coef = fitCollectives(points);
  EXPECT_NEAR(coef[0], c, 1e-9);
  EXPECT_NEAR(coef[1], alpha, 1e-9);
  EXPECT_NEAR(1 / coef[2], bandwidth, bandwidth * 1e-6);

  nlohmann::json cluster, measured;
  writeLinkFit(cluster, measured, points, "test link");
  EXPECT_EQ(cluster["collective_latency_us"], 8.0);
  EXPECT_EQ(cluster["intra_node"]["latency_us"], 3.0);
  EXPECT_EQ(cluster["intra_node"]["gb_per_s_per_direction_per_gpu"], 200.0);
  EXPECT_EQ(measured["collectives"].size(), points.size());
  // One model for every kind: every kind's bandwidth scale is 1.
  for (const char *kind :
       {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p"})
    EXPECT_EQ(cluster["collective_bandwidth_scale"][kind], 1.0) << kind;
}

TEST(CalibrateFit, RecoversEachKindsBandwidthScale) {
  // The fit's c, alpha and 1/B, and kinds that move their bytes at a
  // multiple of B: the closed-form scale per kind recovers the multiple.
  const std::vector<double> coef = {8e-6, 3e-6, 1 / 1e9};
  const std::map<std::string, double> truth = {{"all_reduce", 0.6},
                                               {"reduce_scatter", 0.4},
                                               {"all_gather", 1.0},
                                               {"p2p", 2.5}};
  std::vector<CommPoint> points;
  for (const auto &[kind, scale] : truth)
    for (int64_t g : {2, 4, 8})
      for (double bytes : {4096.0, 1048576.0}) {
        auto [steps, frac] = ringTerms(kind, g);
        points.push_back(
            {kind, g, bytes,
             coef[0] + steps * coef[1] + frac * bytes * coef[2] / scale});
      }
  std::map<std::string, double> scales = fitBandwidthScales(points, coef);
  ASSERT_EQ(scales.size(), truth.size());
  for (const auto &[kind, scale] : truth)
    EXPECT_NEAR(scales[kind], scale, 1e-9) << kind;
}

TEST(CalibrateFit, RingFitWithoutBandwidthTermIsAnError) {
  // Times that fall with the message size: no positive 1/B.
  std::vector<CommPoint> points = {{"all_reduce", 2, 1e3, 2e-3},
                                   {"all_reduce", 2, 1e6, 1e-3},
                                   {"all_gather", 2, 1e3, 2e-3},
                                   {"all_gather", 2, 1e6, 1e-3}};
  EXPECT_THROW(fitCollectives(points), std::runtime_error);
}

TEST(CalibrateFit, RoundsToTwoSignificantDigits) {
  EXPECT_EQ(round2(0.0123456), 0.012);
  EXPECT_EQ(round2(987.6), 990);
  EXPECT_EQ(round2(-1), 0);
}

TEST(CalibrateTimer, SynchronizesEveryBatch) {
  std::unique_ptr<CommWorld> world = createLocalWorld();
  std::unique_ptr<Communicator> all = world->split(0, 0);
  int calls = 0, syncs = 0, callsAtLastSync = -1;
  Timer timer(*all, 3, [&] {
    ++syncs;
    callsAtLastSync = calls;
  });
  double t = timer.median([&] { ++calls; });
  EXPECT_GT(t, 0);
  // Warm-up, sizing call, then 3 batches: each closed by a sync.
  EXPECT_EQ(syncs, 5);
  EXPECT_EQ(callsAtLastSync, calls);
  EXPECT_GT(calls, 5);
}

/// Rank 0 of a group of two whose other member contributes `peer` to every
/// f64 all-reduce (element-wise; Max or Sum); nothing else is implemented.
class PeerOfTwo : public Communicator {
public:
  explicit PeerOfTwo(std::vector<double> peer) : peer(std::move(peer)) {}
  int64_t rank() const override { return 0; }
  int64_t size() const override { return 2; }
  std::unique_ptr<CommRequest> allReduce(const void *send, void *recv,
                                         int64_t count, DType dtype,
                                         ReduceOp op) override {
    if (dtype != DType::F64 || count > int64_t(peer.size()))
      throw std::logic_error("PeerOfTwo: f64, at most " +
                             std::to_string(peer.size()) + " elements");
    const double *in = static_cast<const double *>(send);
    double *out = static_cast<double *>(recv);
    for (int64_t i = 0; i < count; ++i)
      out[i] = op == ReduceOp::Max ? std::max(in[i], peer[i]) : in[i] + peer[i];
    return std::make_unique<Done>();
  }
  std::unique_ptr<CommRequest> allGather(const void *, void *,
                                         int64_t) override {
    throw std::logic_error("PeerOfTwo: all-reduce only");
  }
  std::unique_ptr<CommRequest> reduceScatter(const void *, void *, int64_t,
                                             DType, ReduceOp) override {
    throw std::logic_error("PeerOfTwo: all-reduce only");
  }
  std::unique_ptr<CommRequest> allToAll(const void *, void *,
                                        int64_t) override {
    throw std::logic_error("PeerOfTwo: all-reduce only");
  }
  std::unique_ptr<CommRequest> broadcast(void *, int64_t, int64_t) override {
    throw std::logic_error("PeerOfTwo: all-reduce only");
  }
  std::unique_ptr<CommRequest>
  exchange(const std::vector<Transfer> &,
           const std::vector<Transfer> &) override {
    throw std::logic_error("PeerOfTwo: all-reduce only");
  }

private:
  struct Done : CommRequest {
    void wait() override {}
  };
  std::vector<double> peer;
};

TEST(CalibrateTimer, SpanIsTheWindowOverTheRanks) {
  std::unique_ptr<CommWorld> world = createLocalWorld();
  std::unique_ptr<Communicator> all = world->split(0, 0);
  Timer timer(*all, 3);
  // One rank: its own window (the earliest start and latest end of one).
  EXPECT_DOUBLE_EQ(timer.span(1.0, 3.5), 2.5);
  EXPECT_DOUBLE_EQ(timer.span(-2.0, 0.0), 2.0);
  // Two ranks: this one ran 1.0-3.5, the other 0.5-2.0 (it left the
  // barrier first): the window is 3.0, not the longer own time 2.5. The
  // peer's half of the reduction is (its end, -its start).
  PeerOfTwo two({2.0, -0.5});
  Timer pair(two, 3);
  EXPECT_DOUBLE_EQ(pair.span(1.0, 3.5), 3.0);
  // The other ran later and longer: 2.0-5.0 around this one's 2.5-3.0.
  PeerOfTwo later({5.0, -2.0});
  Timer pair2(later, 3);
  EXPECT_DOUBLE_EQ(pair2.span(2.5, 3.0), 3.0);
}

TEST(CalibrateSchedule, InterleavesRepeatsAndKeepsRatiosUnderDrift) {
  // Three probes of true times 1, 2 and 10; the machine slows by a factor
  // per repeat (1, 1.6, 1.1, 1.4, 1) and, within repeat 1, only after probe
  // 0 ran: probe by probe the drift would land on some probes only.
  const std::vector<double> truth = {1, 2, 10};
  const std::vector<double> slow = {1, 1.6, 1.1, 1.4, 1};
  std::vector<std::pair<int64_t, size_t>> order;
  int64_t repeat = -1;
  size_t last = truth.size() - 1;
  auto times = timeInterleaved(truth.size(), 5, [&](size_t p) {
    if (p == 0 && last == truth.size() - 1)
      ++repeat;
    last = p;
    order.push_back({repeat, p});
    return truth[p] * slow[repeat];
  });
  // Every repeat times every probe once, in order.
  ASSERT_EQ(order.size(), 15u);
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(order[i].first, int64_t(i / 3)) << i;
    EXPECT_EQ(order[i].second, i % 3) << i;
  }
  ASSERT_EQ(times.size(), 3u);
  for (size_t p = 0; p < 3; ++p) {
    ASSERT_EQ(times[p].size(), 5u);
    EXPECT_DOUBLE_EQ(times[p][1], truth[p] * 1.6);
  }
  // The medians keep the probes' ratios; the spread is the drift.
  EXPECT_DOUBLE_EQ(medianOf(times[2]) / medianOf(times[0]), 10.0);
  EXPECT_DOUBLE_EQ(medianOf(times[1]) / medianOf(times[0]), 2.0);
  EXPECT_DOUBLE_EQ(medianOf(times[0]), 1.1);
  EXPECT_DOUBLE_EQ(spreadOf(times[1]), 1.6);
  EXPECT_DOUBLE_EQ(spreadOf({}), 1.0);
  EXPECT_DOUBLE_EQ(medianOf({3, 1, 2, 4}), 3.0);
  EXPECT_THROW(medianOf({}), std::invalid_argument);
}

TEST(CalibrateSchedule, TimesEveryProbeOncePerRepeat) {
  std::unique_ptr<CommWorld> world = createLocalWorld();
  std::unique_ptr<Communicator> all = world->split(0, 0);
  Timer timer(*all, 3);
  Schedule schedule(timer);
  std::vector<int> trace;
  size_t a = schedule.add([&] { trace.push_back(0); });
  size_t b = schedule.add([&] {
    trace.push_back(1);
    // Probe 1 takes longer: fewer calls per batch than probe 0.
    volatile double sink = 0;
    for (int i = 0; i < 20000; ++i)
      sink = sink + i;
  });
  EXPECT_THROW(schedule.median(a), std::logic_error);
  schedule.run();
  ASSERT_EQ(schedule.times(a).size(), 3u);
  ASSERT_EQ(schedule.times(b).size(), 3u);
  EXPECT_GT(schedule.median(a), 0);
  EXPECT_GT(schedule.median(b), schedule.median(a));
  // Sizing (warm-up and one timed call each, probe by probe), then 3
  // rounds, each a batch of probe 0's calls and then one of probe 1's.
  ASSERT_GE(trace.size(), 4u);
  EXPECT_EQ(std::vector<int>(trace.begin(), trace.begin() + 4),
            (std::vector<int>{0, 0, 1, 1}));
  int switches = 0;
  for (size_t i = 5; i < trace.size(); ++i)
    switches += trace[i] != trace[i - 1];
  EXPECT_EQ(switches, 5); // 0..0 1..1 0..0 1..1 0..0 1..1
}

TEST(CalibrateSyncSweep, MedianPairedLossOverTheWork) {
  // Repeat 2 ran on a slower machine: both sweeps slower, the pair's loss
  // the same share of its work: 12.5 %, 12.5 %, 15 %.
  std::vector<double> base = {0.080, 0.120, 0.080};
  std::vector<double> synced = {0.090, 0.135, 0.092};
  EXPECT_NEAR(syncSlowdownOf(base, synced, 20, 0.0), 0.125, 1e-12);
  // The collectives' own time (20 x 0.1 ms) is not a loss: 10 %, 10.8 %,
  // 12.5 %.
  EXPECT_NEAR(syncSlowdownOf(base, synced, 20, 0.1e-3), 0.013 / 0.12, 1e-12);
  // Noise below the collectives' own time is no loss.
  EXPECT_DOUBLE_EQ(syncSlowdownOf(base, synced, 20, 1e-3), 0.0);
  EXPECT_THROW(syncSlowdownOf(base, {0.1}, 20, 0), std::invalid_argument);
  EXPECT_THROW(syncSlowdownOf({}, {}, 20, 0), std::invalid_argument);
  EXPECT_THROW(syncSlowdownOf(base, synced, 0, 0), std::invalid_argument);
}

/// One rank and a schedule of one probe that counts its calls.
struct OneRankProbe {
  std::unique_ptr<CommWorld> world = createLocalWorld();
  std::unique_ptr<Communicator> all = world->split(0, 0);
  Timer timer{*all, 3};
  Schedule schedule{timer};
  int calls = 0;
  OneRankProbe() {
    schedule.add([this] { ++calls; });
  }
};

TEST(CalibrateSyncSweep, OneRankHasNoGroups) {
  OneRankProbe one;
  EXPECT_TRUE(
      measureSyncSweeps(*one.world, one.timer, one.schedule, 1, {}).empty());
  EXPECT_EQ(one.calls, 0);
}

TEST(CalibratePipelineSharing, SpeedupsAreSweepRatiosAtLeastOne) {
  PipelineSharing s;
  s.allS = 0.08, s.halfS = 0.05, s.oneS = 0.02;
  EXPECT_DOUBLE_EQ(s.halfWaitingSpeedup(), 1.6);
  EXPECT_DOUBLE_EQ(s.othersWaitingSpeedup(), 4.0);
  // Noise can make a relay slower than every rank at once: no slowdown.
  s.halfS = 0.09;
  EXPECT_DOUBLE_EQ(s.halfWaitingSpeedup(), 1.0);
  // Not measured (one rank): nothing shared.
  EXPECT_DOUBLE_EQ(PipelineSharing().halfWaitingSpeedup(), 1.0);
  EXPECT_DOUBLE_EQ(PipelineSharing().othersWaitingSpeedup(), 1.0);
}

TEST(CalibratePipelineSharing, OneRankHandsOffNothing) {
  OneRankProbe one;
  PipelineSharing s =
      measurePipelineSharing(*one.world, one.timer, one.schedule, 1);
  EXPECT_EQ(s.handoffs, 0);
  EXPECT_DOUBLE_EQ(s.allS, 0);
  EXPECT_EQ(one.calls, 0);
}

TEST(CalibrateOutput, UnwritableOutNamesTheReason) {
  auto message = [](const std::string &path) -> std::string {
    try {
      checkWritable(path);
    } catch (const std::runtime_error &e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message("/nonexistent/dir/x.json"),
            "cannot write '/nonexistent/dir/x.json': No such file or "
            "directory");
  EXPECT_EQ(message("/"), "cannot write '/': Is a directory");
  std::string fresh = ::testing::TempDir() + "calibrate-check.json";
  std::remove(fresh.c_str());
  // A file where a directory is expected.
  std::string file = ::testing::TempDir() + "calibrate-check.file";
  std::fclose(std::fopen(file.c_str(), "w"));
  EXPECT_EQ(message(file + "/x.json"),
            "cannot write '" + file + "/x.json': Not a directory");
  std::remove(file.c_str());
  EXPECT_EQ(message(fresh), "");
  // The check creates nothing.
  EXPECT_EQ(std::fopen(fresh.c_str(), "r"), nullptr);
  Options opts;
  opts.out = "/nonexistent/dir/x.json";
  EXPECT_THROW(writeCluster(nlohmann::json::object(), opts),
               std::runtime_error);
}

/// Writes `text` to a file under the test's temporary directory.
std::string tempFile(const std::string &name, const std::string &text) {
  std::string path = ::testing::TempDir() + name;
  std::FILE *f = std::fopen(path.c_str(), "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path;
}

/// readRankProfiles' error message, or "" when it reads the files.
std::string profileError(const std::vector<std::string> &paths, int64_t ranks) {
  try {
    readRankProfiles(paths, ranks);
  } catch (const std::invalid_argument &e) {
    return e.what();
  }
  return "";
}

TEST(CalibrateProfiles, CarriesAProfilesOwnProfiles) {
  // An -n 2 output made with --profile of an -n 1 output, then given to
  // an -n 4 run: the 1-rank profile comes along (it was dropped).
  std::string one = R"({"gpus_per_node": 1, "gpu": {"shares_node": true,
      "peak_bf16_tflops": 0.07}})";
  std::string two = tempFile("calibrate-two.json", R"({"gpus_per_node": 2,
      "gpu": {"shares_node": true, "peak_bf16_tflops": 0.04},
      "by_ranks_per_node": {"1": {"gpu": {"shares_node": true,
                                          "peak_bf16_tflops": 0.06}}}})");
  nlohmann::json profiles = readRankProfiles({two}, 4);
  ASSERT_TRUE(profiles.contains("1"));
  EXPECT_EQ(profiles["1"]["gpu"]["peak_bf16_tflops"], 0.06);
  EXPECT_EQ(profiles["2"]["gpu"]["peak_bf16_tflops"], 0.04);
  EXPECT_FALSE(profiles["2"].contains("by_ranks_per_node"));
  // A profile of that rank count given itself wins, in either order.
  std::string onePath = tempFile("calibrate-one.json", one);
  for (auto paths : {std::vector<std::string>{two, onePath},
                     std::vector<std::string>{onePath, two}}) {
    profiles = readRankProfiles(paths, 4);
    EXPECT_EQ(profiles["1"]["gpu"]["peak_bf16_tflops"], 0.07);
  }
  std::string bad = tempFile("calibrate-bad.json", R"({"gpus_per_node": 2,
      "gpu": {"shares_node": true}, "by_ranks_per_node": {"2": {}}})");
  EXPECT_EQ(profileError({bad}, 4),
            "--profile '" + bad +
                "': by_ranks_per_node.2 is not a profile of fewer ranks than "
                "its gpus_per_node 2 (an object under a rank count from 1 to "
                "1)");
}

TEST(CalibrateProfiles, NamesTheFileAndTheValue) {
  std::string one = tempFile("calibrate-one-rank.json",
                             R"({"gpus_per_node": 1,
                                 "gpu": {"shares_node": true}})");
  EXPECT_EQ(profileError({one}, 1),
            "--profile '" + one +
                "': a profile has fewer ranks than this run, and -n 1 has "
                "none fewer (run the profile's ranks first, then -n N > 1 "
                "with --profile)");
  EXPECT_EQ(profileError({one, one}, 2),
            "--profile '" + one +
                "': a second profile of 1 rank (gpus_per_node 1), after '" +
                one + "'");
  std::string dir = ::testing::TempDir();
  EXPECT_EQ(profileError({dir}, 2),
            "--profile '" + dir +
                "': is a directory (expected a shard-calibrate output file)");
  EXPECT_EQ(profileError({"/dev/null"}, 2),
            "--profile '/dev/null': not a JSON object (expected a "
            "shard-calibrate output)");
}

TEST(CalibrateBase, ReadsAnObjectAndNamesABadFile) {
  EXPECT_THROW(
      {
        try {
          readBase("/nonexistent/cluster.json");
        } catch (const std::runtime_error &e) {
          EXPECT_STREQ(e.what(),
                       "--base: cannot read '/nonexistent/cluster.json'");
          throw;
        }
      },
      std::runtime_error);
}

} // namespace
