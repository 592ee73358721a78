//===- PlannerTest.cpp - Cost formulas of the planner ---------------------===//
//
// The α-β formulas (algorithms.md §6.1), the roofline, cluster validation,
// the ZeRO memory vectors of workloads.md §5 and the search's memory
// rejection, on synthetic profiles.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Planner/Planner.h"
#include "PlannerTestSetup.h"
#include "autoshard/Planner/Cluster.h"
#include "autoshard/Planner/CostTerms.h"

#include "gtest/gtest.h"
#include <set>

using namespace autoshard::planner;

namespace {

TEST(Collective, RingInsideANode) {
  Cluster c = testCluster();
  double S = 1e9;
  EXPECT_DOUBLE_EQ(collectiveTime(c, CollectiveKind::AllReduce, S, 8, 8),
                   2 * 7.0 / 8 * S / 400e9);
  EXPECT_DOUBLE_EQ(collectiveTime(c, CollectiveKind::AllGather, S, 8, 8),
                   7.0 / 8 * S / 400e9);
  EXPECT_DOUBLE_EQ(collectiveTime(c, CollectiveKind::ReduceScatter, S, 4, 8),
                   3.0 / 4 * S / 400e9);
  EXPECT_DOUBLE_EQ(collectiveTime(c, CollectiveKind::AllReduce, S, 1, 8), 0);
}

TEST(Collective, LatencyTerms) {
  Cluster c = testCluster();
  c.intraNode.latency = 1e-5;
  // 2(n-1) alpha for a ring all-reduce of a tiny buffer.
  EXPECT_NEAR(collectiveTime(c, CollectiveKind::AllReduce, 1, 8, 8), 14e-5,
              1e-9);
  EXPECT_NEAR(collectiveTime(c, CollectiveKind::P2P, 0.0, 2, 2), 0, 1e-12);
}

TEST(Collective, HierarchicalAcrossNodes) {
  Cluster c = testCluster();
  double S = 1e9;
  // 16 ranks, 8 per node: RS_intra(S) + AR_inter(S/8 over 2) + AG_intra(S).
  double expected =
      7.0 / 8 * S / 400e9 + 2 * 1.0 / 2 * (S / 8) / 50e9 + 7.0 / 8 * S / 400e9;
  EXPECT_DOUBLE_EQ(collectiveTime(c, CollectiveKind::AllReduce, S, 16, 8),
                   expected);
  // One rank per node: a flat ring over the NICs.
  EXPECT_DOUBLE_EQ(collectiveTime(c, CollectiveKind::AllReduce, S, 4, 1),
                   2 * 3.0 / 4 * S / 50e9);
  // Point-to-point across nodes uses the NIC.
  EXPECT_DOUBLE_EQ(collectiveTime(c, CollectiveKind::P2P, S, 2, 1), S / 50e9);
}

TEST(Collective, BandwidthScalePerKind) {
  Cluster c = testCluster();
  double S = 1e9;
  c.collectiveBandwidthScale[static_cast<size_t>(
      CollectiveKind::ReduceScatter)] = 0.5;
  c.collectiveBandwidthScale[static_cast<size_t>(CollectiveKind::P2P)] = 2;
  // Only the scaled kinds' bandwidth terms change, inside and across nodes.
  EXPECT_DOUBLE_EQ(collectiveTime(c, CollectiveKind::ReduceScatter, S, 4, 8),
                   3.0 / 4 * S / 200e9);
  EXPECT_DOUBLE_EQ(collectiveTime(c, CollectiveKind::AllGather, S, 4, 8),
                   3.0 / 4 * S / 400e9);
  EXPECT_DOUBLE_EQ(collectiveTime(c, CollectiveKind::P2P, S, 2, 1), S / 100e9);
  EXPECT_DOUBLE_EQ(collectiveTime(c, CollectiveKind::ReduceScatter, S, 16, 8),
                   7.0 / 8 * S / 200e9 + 1.0 / 2 * (S / 8) / 25e9);

  auto parsed = parseCluster(R"({"gpus_per_node": 8,
    "gpu": {"peak_bf16_tflops": 1, "hbm_gib": 1, "hbm_tb_per_s": 1},
    "intra_node": {"gb_per_s_per_direction_per_gpu": 1},
    "collective_bandwidth_scale": {"reduce_scatter": 0.4, "p2p": 2.3}})",
                             "s.json");
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  EXPECT_DOUBLE_EQ(parsed->collectiveBandwidthScale[2], 0.4);
  EXPECT_DOUBLE_EQ(parsed->collectiveBandwidthScale[4], 2.3);
  EXPECT_DOUBLE_EQ(parsed->collectiveBandwidthScale[0], 1);
  for (auto [field, message] :
       {std::pair{R"("all_gather": 0)",
                  "field 'collective_bandwidth_scale.all_gather' must be"},
        std::pair{R"("broadcast": 1)",
                  "unknown collective 'broadcast' (known: all_reduce, "
                  "all_gather, reduce_scatter, all_to_all, p2p)"}}) {
    auto bad = parseCluster(std::string(R"({"gpus_per_node": 8,
      "gpu": {"peak_bf16_tflops": 1, "hbm_gib": 1, "hbm_tb_per_s": 1},
      "intra_node": {"gb_per_s_per_direction_per_gpu": 1},
      "collective_bandwidth_scale": {)") +
                                field + "}}",
                            "s.json");
    ASSERT_FALSE(bool(bad)) << field;
    EXPECT_NE(llvm::toString(bad.takeError()).find(message), std::string::npos)
        << field;
  }
}

TEST(Roofline, ComputeOrMemoryBound) {
  Cluster c = testCluster();
  EXPECT_DOUBLE_EQ(kernelTime(c, OpKind::Gemm, 1e12, 1e6), 1e12 / 0.5e15);
  EXPECT_DOUBLE_EQ(kernelTime(c, OpKind::Attention, 1e12, 1e6), 1e12 / 0.25e15);
  EXPECT_DOUBLE_EQ(kernelTime(c, OpKind::Memory, 1e6, 1e9), 1e9 / 1e12);
}

TEST(ClusterFile, ParsesDefaultsAndUnits) {
  auto c = parseCluster(R"({"name": "x", "gpus_per_node": 8,
      "gpu": {"peak_bf16_tflops": 989, "hbm_gib": 80, "hbm_tb_per_s": 3.35},
      "intra_node": {"gb_per_s_per_direction_per_gpu": 450},
      "inter_node": {"gb_per_s_per_direction_per_gpu": 50, "latency_us": 30}})",
                        "x.json");
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  EXPECT_DOUBLE_EQ(c->peakFlops, 989e12);
  EXPECT_DOUBLE_EQ(c->hbmBytes, 80.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(c->intraNode.bandwidth, 450e9);
  EXPECT_DOUBLE_EQ(c->interNode.latency, 30e-6);
  EXPECT_DOUBLE_EQ(c->gemmEfficiency, 0.75);
  EXPECT_TRUE(c->memoryOpEfficiency.empty());
}

TEST(ClusterFile, ErrorsNameFieldAndValue) {
  auto c = parseCluster(R"({"gpus_per_node": 8,
      "gpu": {"peak_bf16_tflops": -3, "hbm_gib": 80, "hbm_tb_per_s": 3.35},
      "intra_node": {"gb_per_s_per_direction_per_gpu": 450},
      "inter_node": {"gb_per_s_per_direction_per_gpu": 50}})",
                        "bad.json");
  ASSERT_FALSE(static_cast<bool>(c));
  std::string msg = llvm::toString(c.takeError());
  EXPECT_NE(msg.find("bad.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("gpu.peak_bf16_tflops"), std::string::npos) << msg;
  EXPECT_NE(msg.find("-3"), std::string::npos) << msg;

  auto d =
      parseCluster(R"({"gpus_per_node": 8, "gpu": {"hbm_gib": 80}})", "d.json");
  ASSERT_FALSE(static_cast<bool>(d));
  msg = llvm::toString(d.takeError());
  EXPECT_NE(msg.find("gpu.peak_bf16_tflops"), std::string::npos) << msg;
  auto e = parseCluster(R"({"gpus_per_node": 8,
      "gpu": {"peak_bf16_tflops": 3, "hbm_gib": 80, "hbm_tb_per_s": 3.35},
      "intra_node": {"gb_per_s_per_direction_per_gpu": 450},
      "inter_node": {"gb_per_s_per_direction_per_gpu": 50},
      "efficiency": {"gemm": 1.5}})",
                        "e.json");
  ASSERT_FALSE(static_cast<bool>(e));
  msg = llvm::toString(e.takeError());
  EXPECT_NE(msg.find("efficiency.gemm"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1.5"), std::string::npos) << msg;

  // A section of the wrong type is an error, never its defaults.
  for (auto [section, message] :
       {std::pair{R"("efficiency": 0.5)",
                  "field 'efficiency' must be an object, got 0.5"},
        std::pair{R"("overlap": "yes")",
                  "field 'overlap' must be an object, got \"yes\""},
        std::pair{R"("host": null)",
                  "field 'host' must be an object, got null"},
        std::pair{R"("collective_bandwidth_scale": [0.5])",
                  "field 'collective_bandwidth_scale' must be an object"}}) {
    auto f = parseCluster(std::string(R"({"gpus_per_node": 8,
      "gpu": {"peak_bf16_tflops": 3, "hbm_gib": 80, "hbm_tb_per_s": 3.35},
      "intra_node": {"gb_per_s_per_direction_per_gpu": 450}, )") +
                              section + "}",
                          "f.json");
    ASSERT_FALSE(static_cast<bool>(f)) << section;
    msg = llvm::toString(f.takeError());
    EXPECT_NE(msg.find(message), std::string::npos) << msg;
  }
  // Numbers in messages keep the digits that tell them from the bound:
  // not "must be an integer, got 8" or "(80) must be smaller than (80)".
  for (auto [fields, message] :
       {std::pair{R"("gpus_per_node": 8.0000001, "gpu": {)",
                  "field 'gpus_per_node' must be an integer, got 8.0000001"},
        std::pair{R"("gpus_per_node": 8, "gpu": {"reserved_gib": 80.0000001,)",
                  "field 'gpu.reserved_gib' (80.0000001) must be smaller than "
                  "'gpu.hbm_gib' (80)"},
        std::pair{R"("gpus_per_node": 8, "gpu": {"fragmentation": 1.0000001,)",
                  "field 'gpu.fragmentation' must be a non-negative number <= "
                  "1, got 1.0000001"},
        std::pair{R"("gpus_per_node": 8, "gpu": {"sms": -0.3,)",
                  "field 'gpu.sms' must be a non-negative number <= 1e+06, "
                  "got -0.3"}}) {
    auto h = parseCluster(std::string("{") + fields +
                              R"( "peak_bf16_tflops": 3, "hbm_gib": 80,
        "hbm_tb_per_s": 3.35},
        "intra_node": {"gb_per_s_per_direction_per_gpu": 450}})",
                          "h.json");
    ASSERT_FALSE(static_cast<bool>(h)) << fields;
    msg = llvm::toString(h.takeError());
    EXPECT_EQ(msg, std::string("h.json: ") + message);
  }
  auto g = parseCluster(R"({"gpus_per_node": 8, "gpu": [1, 2]})", "g.json");
  ASSERT_FALSE(static_cast<bool>(g));
  msg = llvm::toString(g.takeError());
  EXPECT_NE(msg.find("field 'gpu' must be an object, got [1,2]"),
            std::string::npos)
      << msg;
}

TEST(ClusterFile, MemoryOpsPerKernel) {
  std::string base = R"({"gpus_per_node": 8,
      "gpu": {"peak_bf16_tflops": 3, "hbm_gib": 80, "hbm_tb_per_s": 3.35},
      "intra_node": {"gb_per_s_per_direction_per_gpu": 450},
      "efficiency": {"memory": 0.5, "memory_ops": )";
  auto c = parseCluster(base + R"({"rope": 0.25, "adamw": 1.5}}})", "c.json");
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->memoryOpEfficiency.size(), 2u);
  // The kernel rt-lower runs: the tfm op without its dialect prefix.
  EXPECT_DOUBLE_EQ(c->memoryEfficiencyOf("tfm.rope"), 0.25);
  EXPECT_DOUBLE_EQ(c->memoryEfficiencyOf("tfm.adamw"), 1.5);
  EXPECT_DOUBLE_EQ(c->memoryEfficiencyOf("tfm.swiglu"), 0.5);
  EXPECT_DOUBLE_EQ(c->memoryEfficiencyOf(""), 0.5);
  EXPECT_EQ(runtimeKernelName("tfm.moe_router").str(), "moe_router");
  EXPECT_EQ(runtimeKernelName("dist.all_reduce").str(), "dist.all_reduce");
  // Not an object.
  auto none = parseCluster(base + "0.5}}", "n.json");
  ASSERT_FALSE(static_cast<bool>(none));
  std::string msg = llvm::toString(none.takeError());
  EXPECT_NE(msg.find("field 'efficiency.memory_ops' must be an object of "
                     "kernel names to positive numbers, got 0.5"),
            std::string::npos)
      << msg;
  for (const char *bad : {"0", "-0.3", "\"fast\"", "null"}) {
    auto e = parseCluster(base + "{\"rope\": 0.5, \"gelu\": " + bad + "}}}",
                          "e.json");
    ASSERT_FALSE(static_cast<bool>(e)) << bad;
    msg = llvm::toString(e.takeError());
    EXPECT_NE(msg.find("e.json: field 'efficiency.memory_ops.gelu' must be a "
                       "positive number, got " +
                       std::string(bad)),
              std::string::npos)
        << msg;
  }
}

/// The required fields of a cluster file, without the closing brace.
const char *const kSmallestCluster = R"({"gpus_per_node": 8,
    "gpu": {"peak_bf16_tflops": 3, "hbm_gib": 80, "hbm_tb_per_s": 3.35},
    "intra_node": {"gb_per_s_per_direction_per_gpu": 450})";

TEST(ClusterFile, FullRecomputeSoftware) {
  const char *base = kSmallestCluster;
  auto c = parseCluster(std::string(base) + "}", "c.json");
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  EXPECT_FALSE(c->fullRecomputeRerunsForward);
  c = parseCluster(std::string(base) +
                       R"(, "recompute": {"full": "whole_layer",
                                      "selective": "attention"}})",
                   "c.json");
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  EXPECT_TRUE(c->fullRecomputeRerunsForward);
  EXPECT_TRUE(c->selectiveRecomputesAttention);
  c = parseCluster(
      std::string(base) + R"(, "recompute": {"full": "attention"}})", "c.json");
  ASSERT_FALSE(static_cast<bool>(c));
  std::string msg = llvm::toString(c.takeError());
  EXPECT_NE(msg.find("recompute.full"), std::string::npos) << msg;
  EXPECT_NE(msg.find("whole_layer"), std::string::npos) << msg;
}

TEST(ClusterFile, ZeroGradReduceSoftware) {
  // zero.grad_reduce: absent or each value, then a bad one.
  const std::pair<const char *, bool> values[] = {
      {"", false},
      {R"(, "zero": {"grad_reduce": "every_microbatch"})", true},
      {R"(, "zero": {"grad_reduce": "last_microbatch"})", false}};
  for (const auto &[extra, every] : values) {
    auto c =
        parseCluster(std::string(kSmallestCluster) + extra + "}", "c.json");
    ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
    EXPECT_EQ(c->zeroReducesEveryMicrobatch, every) << extra;
  }
  auto bad = parseCluster(std::string(kSmallestCluster) +
                              R"(, "zero": {"grad_reduce": "bucketed"}})",
                          "c.json");
  ASSERT_FALSE(static_cast<bool>(bad));
  std::string msg = llvm::toString(bad.takeError());
  EXPECT_NE(msg.find("zero.grad_reduce"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bucketed"), std::string::npos) << msg;
}

TEST(ClusterFile, GradAccumulationSoftware) {
  const std::pair<const char *, bool> values[] = {
      {"", false},
      {R"(, "grad_accumulation": "fused")", true},
      {R"(, "grad_accumulation": "separate")", false}};
  for (const auto &[extra, fused] : values) {
    auto c =
        parseCluster(std::string(kSmallestCluster) + extra + "}", "c.json");
    ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
    EXPECT_EQ(c->gradAccumulationFused, fused) << extra;
  }
  auto bad = parseCluster(
      std::string(kSmallestCluster) + R"(, "grad_accumulation": 1})", "c.json");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "c.json: field 'grad_accumulation' must be \"separate\" or "
            "\"fused\", got 1");
}

TEST(Affine, FitIsExact) {
  Affine a = Affine::fit(10, 16);
  EXPECT_DOUBLE_EQ(a.base, 4);
  EXPECT_DOUBLE_EQ(a.perSample, 6);
  EXPECT_DOUBLE_EQ(a.at(8), 52);
}

/// A synthetic profile: one GEMM per block forward and backward, psi
/// parameters per block, no non-layer parameters.
LocalProfile syntheticProfile(double psiPerLayer, double actPerLayer) {
  LocalProfile p;
  OpProfile gemm;
  gemm.kind = OpKind::Gemm;
  gemm.flops = {0, 1e12};
  gemm.bytes = {0, 1e6};
  p.layerFwd.ops.push_back(gemm);
  gemm.flops = {0, 2e12};
  p.layerBwd.ops.push_back(gemm);
  p.layerParams = psiPerLayer;
  p.residualBytes = {0, actPerLayer};
  p.boundaryBytes = {0, actPerLayer / 10};
  return p;
}

/// The search setup shared by the Memory, Search and ExpertParallel tests:
/// the synthetic dense model with one layer-local profile (tp = 1, no SP),
/// 8 GPUs, context parallelism off.
struct DenseSearch {
  Cluster c = testCluster();
  ModelInfo m = syntheticModel();
  std::map<ProfileKey, LocalProfile> profiles = {
      {{1, false}, syntheticProfile(7.5e8, 1e9)}};
  SearchOptions o;

  explicit DenseSearch(int64_t globalBatch) {
    o.gpus = 8;
    o.globalBatch = globalBatch;
    o.cpChoices = {1};
  }
  SearchResult run() const { return search(c, m, profiles, o); }
};

/// A plan written as `key=value,...` with the keys of Candidate::str():
/// integers, `sp` 0 or 1, names for schedule, recompute and cp_attention.
/// An unknown key or a bad value fails the test.
Candidate planOf(llvm::StringRef text) {
  Candidate plan;
  std::map<llvm::StringRef, int64_t *> degrees = {
      {"tp", &plan.tp},   {"pp", &plan.pp}, {"dp", &plan.dp},
      {"cp", &plan.cp},   {"ep", &plan.ep}, {"zero", &plan.zero},
      {"mbs", &plan.mbs}, {"mb", &plan.mb}, {"vpp", &plan.vpp},
      {"etp", &plan.etp}};
  std::map<llvm::StringRef, std::string *> names = {
      {"schedule", &plan.schedule},
      {"recompute", &plan.recompute},
      {"cp_attention", &plan.cpAttention}};
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    auto [key, value] = item.split('=');
    int64_t n = 0;
    if (auto it = degrees.find(key); it != degrees.end())
      EXPECT_FALSE(value.getAsInteger(10, *it->second)) << item.str();
    else if (auto it = names.find(key); it != names.end())
      *it->second = value.str();
    else if (key == "sp" && !value.getAsInteger(10, n) && (n == 0 || n == 1))
      plan.sp = n == 1;
    else
      ADD_FAILURE() << "bad plan item '" << item.str() << "' in " << text.str();
  }
  return plan;
}

/// The single-plan setup: the test cluster, a model, its layer-local
/// profile and the plan they score.
struct PlanEval {
  Cluster c = testCluster();
  ModelInfo m;
  LocalProfile prof;
  Candidate plan;

  PlanEval(LocalProfile prof, llvm::StringRef plan,
           ModelInfo m = syntheticModel())
      : m(std::move(m)), prof(std::move(prof)), plan(planOf(plan)) {}
  /// `plan` scored for `globalBatch` sequences per step.
  Estimate estimate(int64_t globalBatch, bool simulate = false) const {
    return evaluate(c, m, prof, plan, globalBatch, simulate);
  }
};

TEST(Pipeline, GradientAccumulationOnEachChunkAndTheStageEnds) {
  // pp = 2, vpp = 2, 4 microbatches of an 8-layer synthetic model: 2
  // layers per chunk, each layer 8 tensors of 1e6 elements in all; the
  // embedding's 2 tensors on the first stage, the head's 3 on the last. Every
  // chunk's W grows by its layers' accumulation term, the stage ends by theirs;
  // with the tensors unknown (0) nothing.
  LocalProfile prof = syntheticProfile(1e6, 0);
  prof.otherParams = 3e5, prof.preParams = 2e5, prof.postParams = 2e5;
  PlanEval t(prof, "pp=2,dp=4,mb=4,schedule=zb-v,vpp=2", syntheticModel(8));
  Estimate before = t.estimate(16);
  t.prof.layerParamTensors = 8;
  t.prof.preParamTensors = 2, t.prof.postParamTensors = 3;
  t.prof.otherParamTensors = 4;
  Estimate after = t.estimate(16);
  const double g = gradElementBytes(t.c, t.m.elementBytes);
  EXPECT_DOUBLE_EQ(after.tW - before.tW,
                   2 * gradientAccumulationTime(t.c, 1e6, 8, 4, g));
  EXPECT_DOUBLE_EQ(after.firstB - before.firstB,
                   gradientAccumulationTime(t.c, 2e5, 2, 4, g));
  EXPECT_DOUBLE_EQ(after.lastB - before.lastB,
                   gradientAccumulationTime(t.c, 2e5, 3, 4, g));
  EXPECT_GT(after.stepTime, before.stepTime);
  // One microbatch: no accumulation, the same estimate.
  t.plan = planOf("pp=2,dp=4,mb=1,schedule=zb-v,vpp=2");
  t.prof.layerParamTensors = 0;
  Estimate one = t.estimate(4);
  t.prof.layerParamTensors = 8;
  EXPECT_DOUBLE_EQ(t.estimate(4).stepTime, one.stepTime);
}

TEST(Memory, ZeroVectorsOfWorkloads) {
  // workloads.md §5: Psi = 7.5B, N = 64: DDP 120 GB, ZeRO-1 31.4 GB,
  // ZeRO-2 16.6 GB, ZeRO-3 1.88 GB.
  PlanEval t(syntheticProfile(7.5e8, 0), "dp=64,mb=1");
  auto &[c, m, prof, plan] = t;
  const double expected[] = {120e9, 31.4e9, 16.6e9, 1.875e9};
  for (int zero = 0; zero <= 3; ++zero) {
    plan.zero = zero;
    Estimate e = t.estimate(64);
    EXPECT_NEAR(e.stateBytes, expected[zero], 0.05e9) << "zero=" << zero;
  }
}

TEST(Memory, OversizedPlanIsRejectedNotScored) {
  DenseSearch t(8);
  auto &[c, m, profiles, o] = t;
  o.fixed = true;
  o.fixedPlan.dp = 8;
  o.fixedPlan.mb = 1;
  SearchResult r = t.run();
  EXPECT_TRUE(r.best.empty());
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_NE(r.rejected.begin()->second.find("OOM"), std::string::npos);
}

TEST(Search, FindsAFittingPlanAndBeatsDdp) {
  DenseSearch t(64);
  SearchResult r = t.run();
  ASSERT_FALSE(r.best.empty());
  for (const Estimate &e : r.best)
    EXPECT_LE(e.peakBytes, t.c.hbmBytes);
  for (size_t i = 1; i < r.best.size(); ++i) {
    if (r.best[i].simulated == r.best[i - 1].simulated) {
      EXPECT_LE(r.best[i - 1].stepTime, r.best[i].stepTime + 1e-12);
    }
  }
  EXPECT_GT(r.stats.candidates, 10);
  // Time split adds up.
  const Estimate &b = r.best.front();
  EXPECT_NEAR(b.compute + b.exposedComm + b.bubble + b.optimizer, b.stepTime,
              1e-9 * b.stepTime);
}

TEST(Search, TriesTheWholeLocalBatchAsOneMicrobatch) {
  // One device, 16 sequences, the listed microbatch size 1 only: the
  // search scores mbs = 1 (16 microbatches) and the whole local batch in
  // one microbatch (mb = 1), which no list of small sizes would include.
  DenseSearch t(16);
  t.o.gpus = 1;
  t.o.mbsChoices = {1};
  t.c.hbmBytes = 1e15; // the synthetic model fits one device
  SearchResult r = t.run();
  std::set<std::pair<int64_t, int64_t>> sizes;
  for (const Estimate &e : r.best)
    sizes.insert({e.plan.mbs, e.plan.mb});
  EXPECT_EQ(sizes, (std::set<std::pair<int64_t, int64_t>>{{1, 16}, {16, 1}}));
}

TEST(Search, EqualStepsRankTheSmallerPeakFirst) {
  // ZeRO-1 and ZeRO-2 reduce gradients once per step: with one microbatch
  // their steps are equal, and ZeRO-2's sharded gradients make its peak
  // smaller. The enumeration meets ZeRO-1 first.
  DenseSearch t(64);
  t.o.zeroStages = {1, 2};
  SearchResult r = t.run();
  int ties = 0;
  for (size_t i = 1; i < r.best.size(); ++i)
    if (r.best[i].stepTime == r.best[i - 1].stepTime &&
        r.best[i].peakBytes != r.best[i - 1].peakBytes) {
      ++ties;
      EXPECT_LT(r.best[i - 1].peakBytes, r.best[i].peakBytes)
          << r.best[i - 1].plan.str() << " before " << r.best[i].plan.str();
    }
  EXPECT_GT(ties, 0);
}

TEST(Search, LazySimulationAgreesWithSimulatingEverything) {
  // Simulating only the analytic top-1 must still end on the plan that
  // simulating every candidate finds: a pipelined candidate whose simulated
  // schedule is slower than its closed form must not beat an unsimulated
  // candidate's time, nor hide one that is faster.
  // Also where ranks share a node's cores: a simulated pipeline may then
  // beat its closed form (its bubble filled by other ranks' work).
  for (auto [batch, shared] :
       {std::pair{8, false}, std::pair{16, false}, std::pair{64, false},
        std::pair{16, true}, std::pair{32, true}, std::pair{64, true}}) {
    DenseSearch t(batch);
    auto &[c, m, profiles, o] = t;
    if (shared) {
      c.sharesNode = true;
      c.halfWaitingSpeedup = 1.8, c.othersWaitingSpeedup = 4;
      c.wakeupLatency = 2e-3;
    }
    o.schedules = {"1f1b", "zb-h1", "zb-v", "interleaved", "gpipe"};
    o.simulateTop = 100000;
    SearchResult all = t.run();
    ASSERT_FALSE(all.best.empty());
    o.simulateTop = 1;
    SearchResult lazy = t.run();
    ASSERT_FALSE(lazy.best.empty());
    EXPECT_NEAR(lazy.best.front().stepTime, all.best.front().stepTime,
                1e-12 * all.best.front().stepTime)
        << "batch " << batch << (shared ? " shared" : "") << ": lazy "
        << lazy.best.front().plan.str() << ", all "
        << all.best.front().plan.str();
    EXPECT_LE(lazy.stats.simulated, all.stats.simulated);
  }
}

TEST(Pipeline, BubbleMatchesOneFOneB) {
  // Unit block costs and p = 4, m = 8: 1F1B makespan = (m + p - 1)(F + B).
  PlanEval t(syntheticProfile(1, 0), "pp=4,mb=8", syntheticModel(4));
  Estimate analytic = t.estimate(8);
  Estimate simulated = t.estimate(8, true);
  double unit = analytic.tF + analytic.tI;
  EXPECT_NEAR(analytic.bubble, 3 * unit, 1e-9 * unit);
  EXPECT_NEAR(simulated.bubble, 3 * unit, 1e-6 * unit);
  EXPECT_TRUE(simulated.simulated);
}

TEST(Pipeline, TimeSharedCoresReclaimTheBubbleAndPayTheWakeups) {
  // pp = 4, 8 microbatches on a node whose ranks time-share its cores
  // (pipelineSharing): the ranks' idle fill and drain goes to the running
  // ranks, so the step shrinks; a wake-up per waiting receiver lengthens
  // it again where it outlasts what the other ranks can run meanwhile.
  // Dedicated devices: neither.
  PlanEval t(syntheticProfile(1, 0), "pp=4,dp=2,mb=8", syntheticModel(4));
  t.c.gpusPerNode = 8;
  Estimate dedicated = t.estimate(16, true);
  t.c.sharesNode = true;
  Estimate unmeasured = t.estimate(16, true);
  EXPECT_DOUBLE_EQ(unmeasured.stepTime, dedicated.stepTime);
  t.c.halfWaitingSpeedup = 2, t.c.othersWaitingSpeedup = 4;
  Estimate shared = t.estimate(16, true);
  EXPECT_LT(shared.stepTime, dedicated.stepTime);
  EXPECT_LT(shared.bubble, dedicated.bubble);
  EXPECT_GE(shared.bubble, 0);
  EXPECT_LT(shared.compute, dedicated.compute);
  EXPECT_NEAR(shared.compute + shared.exposedComm + shared.bubble +
                  shared.optimizer,
              shared.stepTime, 1e-9 * shared.stepTime);
  // A short wake-up hides behind the other ranks' work (the node stays
  // busy); a long one does not.
  t.c.wakeupLatency = 0.1 * dedicated.tF;
  EXPECT_NEAR(t.estimate(16, true).stepTime, shared.stepTime,
              1e-3 * shared.stepTime);
  t.c.wakeupLatency = 3 * dedicated.tF;
  Estimate woken = t.estimate(16, true);
  EXPECT_GT(woken.stepTime, 1.1 * shared.stepTime);
  EXPECT_GT(woken.bubble, shared.bubble);
}

TEST(Pipeline, PinnedCoresShareEachCoreAmongItsOwnRanks) {
  // pp = 4, dp = 2 on 8 ranks pinned to 2 cores (Cluster::pinnedCores, the
  // runtime's blocks with pp innermost): each replica's 4 stages on one
  // core, which runs one op at 4x its all-running cost and never idles
  // while a stage has work, so the pipeline takes the replica's work over
  // 4 = one rank's mean work (no wake-up latency): a full bubble shorter
  // than dedicated devices, and not below the work.
  PlanEval t(syntheticProfile(1, 0), "pp=4,dp=2,mb=8", syntheticModel(4));
  t.c.gpusPerNode = 8;
  t.c.sharesNode = true;
  Estimate dedicated = t.estimate(16, true);
  t.c.pinnedCores = 2;
  Estimate pinned = t.estimate(16, true);
  EXPECT_TRUE(pinned.simulated);
  const double work =
      8 * (pinned.tF + pinned.tI + pinned.tW) +
      (pinned.firstF + pinned.firstB + pinned.lastF + pinned.lastB) / 4;
  EXPECT_NEAR(pinned.stepTime - pinned.dpComm - pinned.optimizer, work,
              1e-6 * work);
  EXPECT_LT(pinned.stepTime, dedicated.stepTime - 0.9 * dedicated.bubble);
  // The fluid fields do not apply once pinned.
  t.c.halfWaitingSpeedup = 2, t.c.othersWaitingSpeedup = 4;
  EXPECT_DOUBLE_EQ(t.estimate(16, true).stepTime, pinned.stepTime);
  // As many cores as ranks: nothing is shared, nothing pinned.
  t.c.halfWaitingSpeedup = t.c.othersWaitingSpeedup = 1;
  t.c.pinnedCores = 8;
  EXPECT_DOUBLE_EQ(t.estimate(16, true).stepTime, dedicated.stepTime);
}

//===----------------------------------------------------------------------===//
// Communication of the analytic dimensions (docs/planner.md, "Cost model")
//===----------------------------------------------------------------------===//

TEST(Collective, RingLatencyFollowsNcclModel) {
  // NCCL's ring latency (src/graph/tuning.cc): a base cost per collective,
  // the intra-node α per step, the inter-node α on the node-crossing steps
  // only (nodes - 1 per pass). A 1-byte collective is all latency.
  Cluster c = testCluster();
  c.collectiveLatency = 8.4e-6;
  c.intraNode.latency = 3.4e-6;
  c.interNode.latency = 14e-6;
  auto tiny = [&](CollectiveKind kind, int64_t n, int64_t perNode) {
    return collectiveTime(c, kind, 1, n, perNode);
  };
  // 16 ranks on 2 nodes: 2 passes of 15 steps, 2 of them inter-node.
  EXPECT_NEAR(tiny(CollectiveKind::AllReduce, 16, 8),
              8.4e-6 + 28 * 3.4e-6 + 2 * 14e-6, 1e-9);
  // 48 ranks, one per node (tp = 8): every step crosses nodes.
  EXPECT_NEAR(tiny(CollectiveKind::ReduceScatter, 48, 1), 8.4e-6 + 47 * 14e-6,
              1e-9);
  // 48 ranks, 8 per node: 5 of the 47 steps cross nodes.
  EXPECT_NEAR(tiny(CollectiveKind::AllGather, 48, 8),
              8.4e-6 + 42 * 3.4e-6 + 5 * 14e-6, 1e-9);
  // Inside a node: intra-node α only.
  EXPECT_NEAR(tiny(CollectiveKind::ReduceScatter, 8, 8), 8.4e-6 + 7 * 3.4e-6,
              1e-9);
  // Pairwise all-to-all over 2 nodes: 8 of the 15 peers are off-node.
  EXPECT_NEAR(tiny(CollectiveKind::AllToAll, 16, 8),
              8.4e-6 + 7 * 3.4e-6 + 8 * 14e-6, 1e-9);
  // Large messages reach the bandwidth term: busbw at 8 GB within 10% of
  // that at 64 GB, and small ones are latency bound.
  auto busbw = [&](double S) {
    double t = collectiveTime(c, CollectiveKind::AllReduce, S, 16, 8);
    return 2 * 15.0 / 16 * S / t;
  };
  EXPECT_GT(busbw(8e9), 0.9 * busbw(64e9));
  EXPECT_LT(busbw(1e5), 0.3 * busbw(8e9));
}

TEST(DataParallel, BucketsAndLastBucketExposed) {
  Cluster c = testCluster();
  c.interNode.latency = 20e-6;
  double params = 1e9; // 1B parameters, bf16
  // No overlap: one collective over the whole buffer, all exposed.
  c.dpOverlap = 0;
  Exposure none = bucketedCollective(c, CollectiveKind::ReduceScatter, params,
                                     2, 64, 1, 1e9);
  EXPECT_EQ(none.buckets, 1);
  EXPECT_DOUBLE_EQ(none.exposed, none.total);
  EXPECT_DOUBLE_EQ(
      none.total, collectiveTime(c, CollectiveKind::ReduceScatter, 2e9, 64, 1));
  // Overlap: Megatron-Core buckets of max(40M, 1M * 64) = 64M parameters,
  // 16 buckets each paying its α; the last bucket stays exposed however
  // long the backward is.
  c.dpOverlap = 1;
  Exposure ov = bucketedCollective(c, CollectiveKind::ReduceScatter, params, 2,
                                   64, 1, 1e9);
  EXPECT_EQ(ov.buckets, 16);
  double one =
      collectiveTime(c, CollectiveKind::ReduceScatter, 2e9 / 16, 64, 1);
  EXPECT_DOUBLE_EQ(ov.total, 16 * one);
  EXPECT_DOUBLE_EQ(ov.exposed, one);
  // A short backward hides only its own length.
  Exposure shortB = bucketedCollective(c, CollectiveKind::ReduceScatter, params,
                                       2, 64, 1, 0.25 * ov.total);
  EXPECT_DOUBLE_EQ(shortB.exposed, 0.75 * ov.total);
}

TEST(DataParallel, PipelineTailReductionIsExposed) {
  // As dist-pipeline-split builds it, a pipeline stage reduces its
  // gradients in its tail, after its last backward: the whole reduction is
  // exposed, where the analytic model hides all but the last bucket.
  PlanEval t(syntheticProfile(1e8, 1e8), "pp=2,dp=4,mb=4,zero=1");
  auto &[c, m, prof, plan] = t;
  c.dpOverlap = 1; // Megatron's overlap_grad_reduce: all but one bucket hide
  Estimate hidden = t.estimate(16);
  plan.pipelineReductionInTail = true;
  Estimate tail = t.estimate(16);
  ASSERT_EQ(tail.note.find("invalid"), std::string::npos) << tail.note;
  EXPECT_GT(tail.dpComm, hidden.dpComm);
  EXPECT_NEAR(tail.stepTime - hidden.stepTime, tail.dpComm - hidden.dpComm,
              1e-9 * tail.stepTime);
  // Without pp the flag changes nothing (reductions overlap per layer).
  plan.pp = 1;
  plan.dp = 8;
  plan.mb = 2;
  Estimate flat = t.estimate(16);
  plan.pipelineReductionInTail = false;
  EXPECT_DOUBLE_EQ(flat.stepTime, t.estimate(16).stepTime);
}

TEST(DataParallel, Zero1GatherHidesBehindTheOptimizerAsCompiled) {
  // dist-bucket-collectives + dist-overlap-collectives: each bucket's
  // parameter all-gather starts behind the later buckets' AdamW updates,
  // so it hides behind the optimizer, not the next step's forward. Only
  // the all-gather's cover changes: with a forward that hides more than
  // the optimizer does, the compiled form exposes more communication, by
  // exactly the difference in the step time.
  PlanEval t(syntheticProfile(1e8, 1e8), "dp=8,mb=1,zero=1");
  auto &[c, m, prof, plan] = t;
  c.dpOverlap = 1;
  Estimate behindForward = t.estimate(8);
  plan.paramGatherBehindOptimizer = true;
  Estimate behindOptimizer = t.estimate(8);
  ASSERT_EQ(behindOptimizer.note.find("invalid"), std::string::npos)
      << behindOptimizer.note;
  ASSERT_GT(behindForward.tF, behindOptimizer.optimizer);
  EXPECT_GT(behindOptimizer.dpComm, behindForward.dpComm);
  EXPECT_NEAR(behindOptimizer.stepTime - behindForward.stepTime,
              behindOptimizer.dpComm - behindForward.dpComm,
              1e-9 * behindOptimizer.stepTime);
  // ZeRO-0 has no parameter all-gather: the flag changes nothing.
  plan.zero = 0;
  Estimate ddp = t.estimate(8);
  plan.paramGatherBehindOptimizer = false;
  EXPECT_DOUBLE_EQ(ddp.stepTime, t.estimate(8).stepTime);
}

TEST(DataParallel, Zero2ReduceScattersEveryMicrobatch) {
  // algorithms.md §5.1: DeepSpeed's ZeRO-2 frees the non-owned gradient
  // buckets, so each microbatch's backward ends with a reduce-scatter
  // (zero.grad_reduce = every_microbatch); ZeRO-1 reduces once per step,
  // and so does ZeRO-2 in autoshard's compiled program (the default).
  Cluster c = testCluster();
  EXPECT_DOUBLE_EQ(dpSyncExposure(c, 2, 1e9, 2, 16, 8, 4, 1, 1).total,
                   dpSyncExposure(c, 1, 1e9, 2, 16, 8, 4, 1, 1).total);
  c.zeroReducesEveryMicrobatch = true;
  double rs = collectiveTime(c, CollectiveKind::ReduceScatter, 2e9, 16, 8);
  double ag = collectiveTime(c, CollectiveKind::AllGather, 2e9, 16, 8);
  Exposure z1 = dpSyncExposure(c, 1, 1e9, 2, 16, 8, 4, 1, 1);
  Exposure z2 = dpSyncExposure(c, 2, 1e9, 2, 16, 8, 4, 1, 1);
  EXPECT_DOUBLE_EQ(z1.total, rs + ag);
  EXPECT_DOUBLE_EQ(z2.total, 4 * rs + ag);
  EXPECT_DOUBLE_EQ(z2.exposed, z2.total); // overlap 0
  Exposure z0 = dpSyncExposure(c, 0, 1e9, 2, 16, 8, 4, 1, 1);
  EXPECT_DOUBLE_EQ(z0.total,
                   collectiveTime(c, CollectiveKind::AllReduce, 2e9, 16, 8));
}

TEST(DataParallel, Zero3GathersPerLayerForwardAndBackward) {
  Cluster c = testCluster();
  c.interNode.latency = 20e-6;
  double psi = 1e8; // per block
  double ag = collectiveTime(c, CollectiveKind::AllGather, 2 * psi, 64, 1);
  double rs = collectiveTime(c, CollectiveKind::ReduceScatter, 2 * psi, 64, 1);
  // No overlap: every block gathers twice (forward, backward) and
  // reduce-scatters once, each with its own α.
  c.dpOverlap = 0;
  Zero3Exposure z = zero3Exposure(c, psi, 0, 2, 10, 64, 1, 1, 1);
  EXPECT_DOUBLE_EQ(z.forward, 10 * ag);
  EXPECT_DOUBLE_EQ(z.backward, 10 * (ag + rs));
  EXPECT_GT(ag, 63 * 20e-6);
  // Full overlap with long blocks: only the first gather and the last
  // reduce-scatter remain.
  c.dpOverlap = 1;
  Zero3Exposure h = zero3Exposure(c, psi, 0, 2, 10, 64, 1, 1, 1);
  EXPECT_DOUBLE_EQ(h.forward, ag);
  EXPECT_DOUBLE_EQ(h.backward, ag + rs);
  // Short blocks: the transfer beyond each block's compute is exposed.
  Zero3Exposure s = zero3Exposure(c, psi, 0, 2, 10, 64, 1, ag / 2, 0);
  EXPECT_NEAR(s.forward, ag + 9 * ag / 2, 1e-12);
  EXPECT_NEAR(s.backward, ag + 9 * (ag + rs) + rs, 1e-12);
}

TEST(ContextParallel, RingStepsOverlapOnlyWithinAStep) {
  Cluster c = testCluster();
  c.intraNode.latency = 10e-6;
  c.kernelOverhead = 0;
  double kvBytes = 8e6;
  double kv = collectiveTime(c, CollectiveKind::P2P, kvBytes, 2, 2);
  double dkv = collectiveTime(c, CollectiveKind::P2P, 2 * kvBytes, 2, 2);
  // No attention compute to hide behind: every transfer is exposed; the
  // backward moves K,V again plus dK,dV in fp32, the last hop after the
  // last block.
  RingExposure r = ringAttentionExposure(c, kvBytes, 0, 4, true, 0, 0);
  double mergeB = kernelTime(c, OpKind::Memory, 0, 3 * 4 * kvBytes / 2);
  EXPECT_NEAR(r.forward, 3 * kv, 1e-12);
  EXPECT_NEAR(r.backward, 3 * (kv + dkv + mergeB) + dkv, 1e-12);
  // Attention long enough per step: forward hidden, backward keeps the
  // final dK,dV hop. Total attention time T is split in cp steps, so a
  // transfer only hides behind T/cp.
  RingExposure h =
      ringAttentionExposure(c, kvBytes, 0, 4, true, 4 * kv, 4 * (kv + dkv));
  EXPECT_NEAR(h.forward, 0, 1e-12);
  EXPECT_NEAR(h.backward, 3 * mergeB + dkv, 1e-12);
  RingExposure part = ringAttentionExposure(c, kvBytes, 0, 4, true, 2 * kv, 0);
  EXPECT_NEAR(part.forward, 3 * kv / 2, 1e-12);
  // Across nodes the ring hop uses the NIC.
  RingExposure inter = ringAttentionExposure(c, kvBytes, 0, 4, false, 0, 0);
  EXPECT_GT(inter.forward, r.forward);
  // Ranks that time-share cores: the wait for the peer (syncLatency, part
  // of each exchange's time) stays exposed however long the step is; the
  // final dK,dV hop is exposed whole.
  c.syncLatency = 300e-6;
  double dkvWaiting = collectiveTime(c, CollectiveKind::P2P, 2 * kvBytes, 2, 2);
  RingExposure w =
      ringAttentionExposure(c, kvBytes, 0, 4, true, 40 * kv, 40 * (kv + dkv));
  EXPECT_NEAR(w.forward, 3 * 300e-6, 1e-12);
  EXPECT_NEAR(w.backward, 3 * (2 * 300e-6 + mergeB) + dkvWaiting, 1e-12);
}

TEST(ContextParallel, UlyssesAllToAllsAndHeadLimit) {
  // Ulysses (algorithms.md §2.5, §2.7): per layer per microbatch 4
  // exposed all-to-alls over cp forward (q, k, v, out) and 4 backward
  // (dout, dq, dk, dv), each of the rank's local [mbs, seq/cp, heads/tp,
  // head_dim] tensor; full recomputation re-runs the forward's 4.
  // 8 heads, hidden 1024, seq 1024, bf16.
  PlanEval t(syntheticProfile(1e8, 1e8), "cp=4,mb=2,cp_attention=ulysses");
  auto &[c, m, prof, plan] = t;
  Estimate none = t.estimate(2);
  ASSERT_EQ(none.note.find("invalid"), std::string::npos) << none.note;
  plan.recompute = "full";
  Estimate full = t.estimate(2);
  double local = 1024.0 / 4 * 1024 * 2; // tokens x hidden x bf16
  double a2a = collectiveTime(c, CollectiveKind::AllToAll, local, 4, 4);
  EXPECT_GT(a2a, 0);
  EXPECT_NEAR(full.exposedComm - none.exposedComm, m.layers * 2 * 4 * a2a,
              1e-9 * full.exposedComm);
  // No causal imbalance: the contiguous-chunk ring pays it, Ulysses not.
  plan.recompute = "none";
  plan.cpContiguous = true;
  Estimate contiguous = t.estimate(2);
  EXPECT_NEAR(contiguous.compute, none.compute, 1e-12);
  // The heads must split over tp·cp; Ulysses needs cp > 1.
  plan.cp = 16;
  EXPECT_NE(
      t.estimate(2).note.find("8 q / 8 kv heads do not split into tp*cp=16"),
      std::string::npos);
  plan.cp = 1;
  EXPECT_NE(t.estimate(2).note.find("cp_attention=ulysses needs cp > 1"),
            std::string::npos);
  EXPECT_EQ(plan.applyPlan(), "dp=1,mb=2,cp_attention=ulysses");
}

TEST(ContextParallel, SearchTriesUlyssesWhereHeadsDivide) {
  DenseSearch t(8);
  auto &[c, m, profiles, o] = t;
  o.gpus = 4;
  o.cpChoices = {4};
  o.cpAttentions = {"ulysses"};
  SearchResult r = t.run();
  ASSERT_FALSE(r.best.empty());
  for (const Estimate &e : r.best)
    EXPECT_EQ(e.plan.cpAttention, "ulysses") << e.plan.str();
  // 2 kv heads do not split over cp = 4: no candidate at all.
  m.kvHeads = 2;
  EXPECT_EQ(t.run().stats.candidates, 0);
  o.cpAttentions = {"ring", "ulysses"};
  SearchResult ring = t.run();
  ASSERT_FALSE(ring.best.empty());
  for (const Estimate &e : ring.best)
    EXPECT_EQ(e.plan.cpAttention, "ring") << e.plan.str();
}

TEST(ContextParallel, SearchScoresZigzagWhereCompilable) {
  // What dist-auto-plan asks for (cpZigzagWhereCompilable): ring attention
  // in zig-zag order (balanced, cp_layout=zigzag in the plan) where the
  // sequence splits into 2cp chunks; contiguous chunks (with the causal
  // imbalance, CostTermsTest) elsewhere.
  DenseSearch t(8);
  auto &[c, m, profiles, o] = t;
  o.gpus = 4;
  o.cpChoices = {4};
  o.cpAttentions = {"ring"};
  o.cpZigzagWhereCompilable = true;
  SearchResult zigzag = t.run();
  ASSERT_FALSE(zigzag.best.empty());
  for (const Estimate &e : zigzag.best) {
    EXPECT_TRUE(e.plan.isZigzag()) << e.plan.str();
    EXPECT_NE(e.plan.applyPlan().find("cp=4"), std::string::npos);
    EXPECT_NE(e.plan.applyPlan().find(",cp_layout=zigzag"), std::string::npos)
        << e.plan.applyPlan();
  }
  m.seq = 8 * (m.seq / 8) + 4; // splits into cp = 4 chunks, not 2cp = 8
  for (const Estimate &e : t.run().best)
    EXPECT_FALSE(e.plan.isZigzag()) << "seq " << m.seq << ": " << e.plan.str();
}

TEST(TensorParallel, ChunkedOverlapExposesOneChunk) {
  Cluster c = testCluster();
  c.tpOverlap = 1;
  EXPECT_DOUBLE_EQ(tpOverlapFraction(c, 1), 0);
  EXPECT_DOUBLE_EQ(tpOverlapFraction(c, 2), 0.5);
  EXPECT_DOUBLE_EQ(tpOverlapFraction(c, 8), 7.0 / 8);
  c.tpOverlap = 0;
  EXPECT_DOUBLE_EQ(tpOverlapFraction(c, 8), 0);
}

TEST(Memory, FragmentationAndReserve) {
  PlanEval t(syntheticProfile(1e6, 1e8), "mb=1");
  auto &[c, m, prof, plan] = t;
  Estimate a = t.estimate(1);
  c.reservedBytes = 3e9;
  c.fragmentation = 0.1;
  Estimate b = t.estimate(1);
  EXPECT_GT(a.activationBytes, 0);
  EXPECT_DOUBLE_EQ(b.peakBytes, a.stateBytes + 1.1 * a.activationBytes + 3e9);
}

TEST(Memory, Zero3KeepsTwoGatheredBlocks) {
  PlanEval t(syntheticProfile(1e8, 0), "dp=8,mb=1,zero=3");
  Estimate e = t.estimate(8);
  // (current + prefetched block) x (params + grads) x 2 bytes.
  EXPECT_DOUBLE_EQ(e.activationBytes, 2 * 2 * 1e8 * 2);
}

TEST(Memory, UnfusedAttentionKeepsScores) {
  // Korthikanti et al. (workloads.md §5): an unfused attention stores 5
  // bytes per score element (softmax out 2, dropout mask 1 with
  // memory.dropout_mask_bytes = 1 as Megatron keeps it, dropout out 2), 4
  // without a kept mask; selective recomputation drops them; fused
  // attention (score bytes 0) stores none.
  PlanEval t(syntheticProfile(1e6, 1e8), "mb=1");
  auto &[c, m, prof, plan] = t;
  OpProfile attn;
  attn.kind = OpKind::Attention;
  attn.flops = {0, 1e9};
  attn.attentionBatchHeads = {0, 1e7}; // 1 x 1 scores each
  attn.attentionSeqQ = attn.attentionSeqK = 1;
  prof.layerFwd.ops.push_back(attn);
  Estimate fused = t.estimate(1);
  c.attentionScoreBytes = 13;
  Estimate noMask = t.estimate(1);
  EXPECT_DOUBLE_EQ(noMask.activationBytes - fused.activationBytes,
                   m.layers * 4 * 1e7);
  c.dropoutMaskBytes = 1;
  Estimate unfused = t.estimate(1);
  EXPECT_DOUBLE_EQ(unfused.activationBytes - fused.activationBytes,
                   m.layers * 5 * 1e7);
  plan.recompute = "selective";
  Estimate sel = t.estimate(1);
  EXPECT_DOUBLE_EQ(sel.activationBytes, fused.activationBytes);
}

TEST(GemmShape, WaveAndTileQuantisation) {
  Cluster c = testCluster();
  // No SMs and no k0: every shape runs at the cluster's GEMM efficiency.
  EXPECT_DOUBLE_EQ(gemmShapeEfficiency(c, {1, 100, 100, 100}), 1);
  c.sms = 4;
  c.gemmTiles = {{128, 128}};
  // 4 full tiles in one wave: no loss.
  EXPECT_DOUBLE_EQ(gemmShapeEfficiency(c, {1, 256, 256, 4096}), 1);
  // 5 tiles: two waves of 4, 5/8 of the SM time is useful.
  EXPECT_DOUBLE_EQ(gemmShapeEfficiency(c, {1, 640, 128, 4096}), 5.0 / 8);
  // Partial tiles: m = 192 is 1.5 tiles, costs 2 (one wave of 2 of 4 SMs).
  EXPECT_DOUBLE_EQ(gemmShapeEfficiency(c, {1, 192, 128, 4096}),
                   192.0 * 128 / (4 * 128 * 128));
  // Batched GEMMs quantise over batch × tiles.
  EXPECT_DOUBLE_EQ(gemmShapeEfficiency(c, {5, 128, 128, 4096}), 5.0 / 8);
  // The best tile is used: 64x256 fits m = 64 exactly.
  c.gemmTiles = {{128, 128}, {64, 256}};
  EXPECT_DOUBLE_EQ(gemmShapeEfficiency(c, {1, 64, 1024, 4096}), 1);
  // k / (k + k0): the fixed prologue and epilogue of every tile.
  c.gemmK0 = 256;
  EXPECT_DOUBLE_EQ(gemmShapeEfficiency(c, {1, 256, 256, 768}), 768.0 / 1024);
  // Unknown shape (m = 0): no correction.
  EXPECT_DOUBLE_EQ(gemmShapeEfficiency(c, {}), 1);
  // kernelTime applies it to GEMMs only.
  GemmShape half{1, 256, 256, 256};
  EXPECT_DOUBLE_EQ(kernelTime(c, OpKind::Gemm, 1e12, 0, &half),
                   1e12 / (0.5e15 * 0.5));
  EXPECT_DOUBLE_EQ(kernelTime(c, OpKind::Attention, 1e12, 0, &half),
                   1e12 / 0.25e15);
}

TEST(GemmShape, SmallTensorParallelGemmsAreSlowerPerFlop) {
  // A profile whose GEMM has k = 4096 / tp: with k0 the tp = 8 block pays
  // more than 1/8 of the tp = 1 block's GEMM time.
  Cluster c = testCluster();
  c.sms = 132;
  c.gemmTiles = {{128, 256}};
  c.gemmK0 = 256;
  ModelInfo m;
  m.layers = 1;
  m.seq = 4096;
  m.heads = 8;
  m.hidden = 4096;
  auto profile = [&](int64_t tp) {
    LocalProfile p;
    p.tp = tp;
    OpProfile g;
    g.kind = OpKind::Gemm;
    g.gemmM = {0, 4096};
    g.gemmN = {4096, 0};
    g.gemmK = {4096.0 / tp, 0};
    g.flops = {0, 2.0 * 4096 * 4096 * 4096 / tp};
    p.layerFwd.ops.push_back(g);
    return p;
  };
  Candidate one, eight;
  eight.tp = 8;
  Estimate a = evaluate(c, m, profile(1), one, 1, false);
  Estimate b = evaluate(c, m, profile(8), eight, 1, false);
  EXPECT_GT(b.tF * 8, a.tF * 1.2);
  // The shape is read at the microbatch size: m doubles with mbs.
  OpProfile g = profile(1).layerFwd.ops[0];
  EXPECT_DOUBLE_EQ(g.gemmAt(2, 1).m, 8192);
  EXPECT_DOUBLE_EQ(g.gemmAt(2, 0.5).m, 4096);
  EXPECT_DOUBLE_EQ(g.gemmAt(2, 0.5).k, 4096);
}

TEST(Cluster, GemmShapeAndMemoryFields) {
  const char *base = R"({"gpus_per_node": 8,
      "gpu": {"peak_bf16_tflops": 989, "hbm_gib": 80, "hbm_tb_per_s": 3.35,
              "sms": 132},
      "memory": {"grad_bytes": 4, "comm_buffer_mib_per_group": 256},
      "intra_node": {"gb_per_s_per_direction_per_gpu": 450},
      "efficiency": {"gemm_tiles": [[128, 256], [256, 128]], "gemm_k0": 256}})";
  auto c = parseCluster(base, "ok.json");
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->sms, 132);
  ASSERT_EQ(c->gemmTiles.size(), 2u);
  EXPECT_EQ(c->gemmTiles[1].first, 256);
  EXPECT_DOUBLE_EQ(c->gemmK0, 256);
  EXPECT_DOUBLE_EQ(c->gradBytes, 4);
  EXPECT_DOUBLE_EQ(c->commBufferBytesPerGroup, 256.0 * 1048576);
  for (const char *bad : {R"("gemm_tiles": [[128, 0]])", R"("gemm_tiles": [])",
                          R"("gemm_tiles": [[128]])", R"("gemm_tiles": 128)"}) {
    std::string text = std::string(R"({"gpus_per_node": 8,
      "gpu": {"peak_bf16_tflops": 989, "hbm_gib": 80, "hbm_tb_per_s": 3.35},
      "intra_node": {"gb_per_s_per_direction_per_gpu": 450},
      "efficiency": {)") +
                       bad + "}}";
    auto e = parseCluster(text, "tiles.json");
    ASSERT_FALSE(static_cast<bool>(e)) << bad;
    std::string msg = llvm::toString(e.takeError());
    EXPECT_NE(msg.find("tiles.json: field 'efficiency.gemm_tiles' must be a "
                       "non-empty array of [m, n] pairs"),
              std::string::npos)
        << msg;
  }
  auto f = parseCluster(R"({"gpus_per_node": 8,
      "gpu": {"peak_bf16_tflops": 989, "hbm_gib": 80, "hbm_tb_per_s": 3.35,
              "sms": 13.5},
      "intra_node": {"gb_per_s_per_direction_per_gpu": 450}})",
                        "sms.json");
  ASSERT_FALSE(static_cast<bool>(f));
  std::string msg = llvm::toString(f.takeError());
  EXPECT_NE(msg.find("'gpu.sms' must be an integer, got 13.5"),
            std::string::npos)
      << msg;
}

TEST(Memory, Fp32GradientBuffer) {
  // Megatron's fp32 main_grad (Megatron-LM distributed optimizer notes):
  // bf16 parameters with fp32 gradients hold 18 bytes per parameter
  // without ZeRO, 6 + 12/N with the distributed optimizer (ZeRO-1).
  PlanEval t(syntheticProfile(1e8, 0), "dp=8,mb=1");
  auto &[c, m, prof, plan] = t;
  c.gradBytes = 4;
  Estimate z0 = t.estimate(8);
  EXPECT_DOUBLE_EQ(z0.stateBytes, 1e9 * 18);
  plan.zero = 1;
  Estimate z1 = t.estimate(8);
  EXPECT_DOUBLE_EQ(z1.stateBytes, 1e9 * (6 + 12.0 / 8));
  // The gradient reduction moves fp32: twice the bf16 time.
  Exposure g4 = dpSyncExposure(c, 0, 1e9, 2, 8, 8, 1, 1, 1);
  c.gradBytes = 2;
  Exposure g2 = dpSyncExposure(c, 0, 1e9, 2, 8, 8, 1, 1, 1);
  EXPECT_DOUBLE_EQ(g4.total, 2 * g2.total);
  // An fp32 model keeps fp32 gradients and no master copy: 4 + 4 + 8.
  m.elementBytes = 4;
  plan.zero = 0;
  Estimate f32 = t.estimate(8);
  EXPECT_DOUBLE_EQ(f32.stateBytes, 1e9 * 16);
}

TEST(Memory, StateKindsAndByteConventions) {
  // The breakdown by kind sums to the model states: bf16 parameters, fp32
  // gradients and Adam with a master copy, 2 + 4 + 12 = 18 bytes per
  // parameter; ZeRO-2 over 8 shards gradients and optimizer states.
  PlanEval t(syntheticProfile(1e8, 0), "dp=8,mb=1,zero=2");
  auto &[c, m, prof, plan] = t;
  c.gradBytes = 4;
  Estimate e = t.estimate(8);
  EXPECT_DOUBLE_EQ(e.paramBytes, 2e9);
  EXPECT_DOUBLE_EQ(e.gradBytes, 4e9 / 8);
  EXPECT_DOUBLE_EQ(e.optimizerBytes, 12e9 / 8);
  EXPECT_DOUBLE_EQ(e.paramBytes + e.gradBytes + e.optimizerBytes, e.stateBytes);
  // Explicit conventions: no master copy, 4 bytes of optimizer state
  // (e.g. 8-bit Adam's m and v with their scales rounded up).
  c.masterWeightBytes = 0;
  c.optimizerStateBytes = 4;
  EXPECT_DOUBLE_EQ(t.estimate(8).optimizerBytes, 4e9 / 8);
  // Gradients in the static frame (autoshard): the compiled step's peak,
  // composed from the one-block step's phases (framePeak). With the peak
  // at the head and one microbatch, no parameter gradient is live but the
  // phase's own; with two, the sums of the earlier microbatch, unsharded
  // (ZeRO-2 reduce-scatters them after the last microbatch).
  c.gradBufferInFrame = true;
  prof.frameGradBytes = {1e6, 2e6};
  PhaseMemory &head = prof.phases[static_cast<unsigned>(StepPhase::Head)];
  head.activation = {1e11, 0};
  head.grad = {1e6, 2e6};
  Estimate frame = t.estimate(8);
  EXPECT_DOUBLE_EQ(frame.gradBytes, 0);
  EXPECT_DOUBLE_EQ(frame.activationGradBytes, 1e6 + 2e6);
  EXPECT_DOUBLE_EQ(frame.stateBytes, frame.paramBytes + frame.optimizerBytes);
  plan.mb = 2;
  plan.dp = 4;
  Estimate two = t.estimate(8);
  EXPECT_DOUBLE_EQ(two.gradBytes, 4e9);
  // A persistent buffer holds the step's parameter gradients already.
  c.gradBufferInFrame = false;
  prof.stepParamBytes = 2e6;
  EXPECT_DOUBLE_EQ(t.estimate(8).activationGradBytes, 1e6);
}

/// The static memory plan (`memory.grad_buffer` = "frame") and 3e5
/// non-block parameters: the embedding reads 2e5, the head 1.5e5, of which
/// 5e4 only the head (a tied embedding of 1e5).
void frameStages(PlanEval &t) {
  t.c.gradBufferInFrame = true;
  t.prof.otherParams = 3e5;
  t.prof.preParams = 2e5, t.prof.postParams = 1.5e5;
  t.prof.headOnlyParams = 5e4;
}

TEST(Memory, FramePipelineStagesHoldTheirParameters) {
  // In the static memory plan a pipeline stage holds the non-block
  // parameters its part of the step reads: the first stage the
  // embedding's, the last the head's (a tied embedding on both).
  PlanEval t(syntheticProfile(1e6, 1e8), "pp=2,mb=2");
  auto &[c, m, prof, plan] = t;
  frameStages(t);
  const double blocks = m.layers / 2 * 1e6;
  // The first stage, two microbatches in flight, is the heavier.
  Estimate first = t.estimate(2);
  ASSERT_TRUE(first.fits) << first.note;
  EXPECT_DOUBLE_EQ(first.paramBytes, (blocks + 2e5) * m.elementBytes);
  // A large head makes the last stage the heavier.
  prof.phases[static_cast<unsigned>(StepPhase::Head)].activation = {1e12, 0};
  Estimate last = t.estimate(2);
  EXPECT_DOUBLE_EQ(last.paramBytes, (blocks + 1.5e5) * m.elementBytes);
  EXPECT_DOUBLE_EQ(last.stateBytes,
                   last.paramBytes + last.gradBytes + last.optimizerBytes);
  // Without the split (a profile that could not tell), all of them.
  prof.preParams = prof.postParams = 0;
  EXPECT_DOUBLE_EQ(t.estimate(2).paramBytes, (blocks + 3e5) * m.elementBytes);
}

TEST(Memory, FrameFirstStageLaterBackwardHoldsTheSums) {
  // 1F1B, pp = 2, 2 microbatches: the first stage's first backward has
  // both microbatches in flight and no sums yet; the second microbatch's
  // backward has one in flight and the first one's sums (the blocks' and
  // the embedding's gradients). With large layers and small residuals (as
  // under full recomputation) the latter is the first stage's peak.
  PlanEval t(syntheticProfile(1e8, 1e3), "pp=2,mb=2");
  auto &[c, m, prof, plan] = t;
  frameStages(t);
  for (PhaseMemory &phase : prof.phases)
    phase.activation = {1e3, 0};
  const double g = gradElementBytes(c, m.elementBytes);
  Estimate e = t.estimate(2, /*simulate=*/true);
  ASSERT_TRUE(e.fits) << e.note;
  // The first stage holds the embedding's parameters: it is reported, with
  // the sums of its blocks and the embedding's gradients.
  EXPECT_DOUBLE_EQ(e.paramBytes, (m.layers / 2 * 1e8 + 2e5) * m.elementBytes);
  EXPECT_DOUBLE_EQ(e.gradBytes, (m.layers / 2 * 1e8 + 2e5) * g);
}

TEST(Memory, FrameZbvMiddleRankHoldsOnlyTheBlocks) {
  // ZB-V's first rank runs the first and the last stage (embedding and
  // head), the other rank the middle stages: only blocks, and more of them
  // in flight (2 microbatches of 2 chunks against 3 chunks on the first
  // rank), so with large residuals it is the heavier and reported with the
  // blocks' parameters only.
  PlanEval t(syntheticProfile(1e6, 1e8), "pp=2,mb=2,schedule=zb-v,vpp=2",
             syntheticModel(8));
  auto &[c, m, prof, plan] = t;
  frameStages(t);
  const double blocks = m.layers / 2 * 1e6;
  Estimate middle = t.estimate(2, /*simulate=*/true);
  ASSERT_TRUE(middle.fits) << middle.note;
  EXPECT_DOUBLE_EQ(middle.inflightLayers, 8);
  EXPECT_DOUBLE_EQ(middle.paramBytes, blocks * m.elementBytes);
  // A huge embedding makes the first rank (both ends) the heavier.
  prof.otherParams = 3e9;
  prof.preParams = 2e9 + 1e5, prof.postParams = 2e9 + 5e4;
  prof.headOnlyParams = 5e4;
  Estimate first = t.estimate(2, /*simulate=*/true);
  EXPECT_DOUBLE_EQ(first.paramBytes,
                   (blocks + 2e9 + 1e5 + 5e4) * m.elementBytes);
}

TEST(Memory, KeptDropoutMasks) {
  // Megatron keeps a 1-byte mask per hidden-dropout element for every
  // layer in flight; autoshard regenerates it (0); full recomputation
  // holds only the recomputed layer's.
  PlanEval t(syntheticProfile(1e6, 1e8), "mb=1");
  auto &[c, m, prof, plan] = t;
  prof.dropoutElements = {0, 1e6};
  Estimate none = t.estimate(1);
  c.dropoutMaskBytes = 1;
  Estimate kept = t.estimate(1);
  EXPECT_DOUBLE_EQ(kept.activationBytes - none.activationBytes, m.layers * 1e6);
  plan.recompute = "full";
  c.dropoutMaskBytes = 0;
  Estimate fullNone = t.estimate(1);
  c.dropoutMaskBytes = 1;
  EXPECT_DOUBLE_EQ(t.estimate(1).activationBytes - fullNone.activationBytes,
                   1e6);
}

TEST(Memory, CommunicationBuffersPerGroup) {
  PlanEval t(syntheticProfile(1e6, 1e6), "mb=4");
  auto &[c, m, prof, plan] = t;
  c.reservedBytes = 1e9;
  c.commBufferBytesPerGroup = 1e8;
  Estimate single = t.estimate(4);
  EXPECT_DOUBLE_EQ(single.fixedBytes, 1e9);
  // dp, tp, and pp (+ the embedding group): 4 groups.
  plan.dp = 2;
  plan.tp = 2;
  plan.pp = 2;
  plan.mb = 2;
  Estimate e = t.estimate(4);
  EXPECT_DOUBLE_EQ(e.fixedBytes, 1e9 + 4e8);
  EXPECT_DOUBLE_EQ(e.peakBytes,
                   e.stateBytes + e.activationBytes + e.fixedBytes);
}

TEST(Memory, InFlightFromTheSimulatedSchedule) {
  // 1F1B on p = 4 stages with m = 8 microbatches: rank 0 holds 4 stage
  // activations at its peak (simulated: lib/Pipeline), GPipe all 8.
  PlanEval t(syntheticProfile(1e6, 1e8), "pp=4,mb=8", syntheticModel(8));
  auto &[c, m, prof, plan] = t;
  Estimate closed = t.estimate(8);
  Estimate sim = t.estimate(8, true);
  ASSERT_TRUE(sim.simulated);
  EXPECT_DOUBLE_EQ(sim.inflightLayers, 4 * 2);
  EXPECT_DOUBLE_EQ(closed.inflightLayers, sim.inflightLayers);
  plan.schedule = "gpipe";
  Estimate gpipe = t.estimate(8, true);
  EXPECT_DOUBLE_EQ(gpipe.inflightLayers, 8 * 2);
  EXPECT_GT(gpipe.activationBytes, sim.activationBytes);
  // Interleaved (v = 2): rank 0 holds 2(p-1) + (v-1)p + 1 = 11 chunks of
  // one layer.
  plan.schedule = "interleaved";
  plan.vpp = 2;
  Estimate inter = t.estimate(8, true);
  Estimate interClosed = t.estimate(8);
  EXPECT_DOUBLE_EQ(interClosed.inflightLayers, 11);
  EXPECT_DOUBLE_EQ(inter.inflightLayers, interClosed.inflightLayers);
  // ZB-H1 frees a microbatch's activations only at its (delayed) W.
  plan.schedule = "zb-h1";
  plan.vpp = 1;
  Estimate zb = t.estimate(8, true);
  Estimate zbClosed = t.estimate(8);
  EXPECT_DOUBLE_EQ(zbClosed.inflightLayers, 4 * 2);
  EXPECT_DOUBLE_EQ(zb.inflightLayers, zbClosed.inflightLayers);
}

/// `syntheticProfile` plus the block compiled under full and selective
/// recomputation: same forward and backward, full re-runs `rerunFlops` of
/// GEMMs with a TP all-reduce and keeps nothing but the input; selective
/// adds `recomputeBytes` of memory-bound recomputation to its backward and
/// keeps `keptSelective` bytes.
LocalProfile recomputeProfile(double rerunFlops, double recomputeBytes,
                              double keptSelective) {
  LocalProfile p = syntheticProfile(1e6, 1e8);
  p.frameActivationBytes = {0, 3e8};
  // The block as a recomputation mode compiles it: `p`'s forward and
  // backward, `kept` residual bytes, a frame of `frame` bytes.
  auto compiledMode = [&](double kept, double frame) {
    RecomputeProfile mode;
    mode.compiled = true;
    mode.layerFwd = p.layerFwd;
    mode.layerBwd = p.layerBwd;
    mode.residualBytes = {0, kept};
    mode.frameActivationBytes = {0, frame};
    return mode;
  };
  p.full = compiledMode(0, 2e8);
  OpProfile gemm;
  gemm.kind = OpKind::Gemm;
  gemm.flops = {0, rerunFlops};
  p.full.layerRecompute.ops.push_back(gemm);
  CommProfile ar;
  ar.kind = CollectiveKind::AllReduce;
  ar.bytes = {0, 1e8};
  p.full.layerRecompute.comms.push_back(ar);
  p.selective = compiledMode(keptSelective, 2.5e8);
  OpProfile norm;
  norm.kind = OpKind::Memory;
  norm.bytes = {0, recomputeBytes};
  p.selective.layerBwd.ops.push_back(norm);
  return p;
}

TEST(Recompute, CompiledFullCostsItsReRunAndKeepsTheInput) {
  // The compiled @B_recompute_full (not a whole extra forward) is added to
  // every layer's backward, its TP collective counted as communication; a
  // layer keeps only its input; the frame of the compiled step is the
  // transient part.
  PlanEval t(recomputeProfile(0.5e12, 0, 0), "tp=2,mb=1");
  auto &[c, m, prof, plan] = t;
  Estimate none = t.estimate(1);
  plan.recompute = "full";
  Estimate full = t.estimate(1);
  EXPECT_TRUE(full.recomputeCompiled);
  EXPECT_FALSE(none.recomputeCompiled);
  double rerun = kernelTime(c, OpKind::Gemm, 0.5e12, 0);
  double comm = (1 - tpOverlapFraction(c, 2)) *
                collectiveTime(c, CollectiveKind::AllReduce, 1e8, 2, 8);
  EXPECT_GT(comm, 0);
  EXPECT_NEAR(full.stepTime - none.stepTime, m.layers * (rerun + comm), 1e-12);
  // Per layer: the input (boundary 1e7); transient: frame - input.
  EXPECT_DOUBLE_EQ(full.activationBytes, m.layers * 1e7 + (2e8 - 1e7));
  // Without recomputation every layer keeps its residuals and its input.
  EXPECT_DOUBLE_EQ(none.activationBytes,
                   m.layers * (1e8 + 1e7) + (3e8 - 1e8 - 1e7));

  // Software that re-runs whole layers (Megatron-LM): the compiled block
  // forward (1e12 FLOPs of GEMMs, no collective) instead of the re-run.
  c.fullRecomputeRerunsForward = true;
  Estimate megatron = t.estimate(1);
  EXPECT_NEAR(megatron.stepTime - none.stepTime,
              m.layers * kernelTime(c, OpKind::Gemm, 1e12, 1e6), 1e-12);
  EXPECT_DOUBLE_EQ(megatron.activationBytes, full.activationBytes);
  c.fullRecomputeRerunsForward = false;

  // Not compiled: the analytic fallback re-runs the whole forward (1e12
  // FLOPs) and holds one layer's residuals while it is differentiated.
  prof.full.compiled = false;
  Estimate analytic = t.estimate(1);
  EXPECT_FALSE(analytic.recomputeCompiled);
  EXPECT_NEAR(analytic.stepTime - none.stepTime,
              m.layers * kernelTime(c, OpKind::Gemm, 1e12, 1e6), 1e-12);
  EXPECT_DOUBLE_EQ(analytic.activationBytes,
                   m.layers * 1e7 + (3e8 - 1e8 - 1e7) + 1e8);
}

TEST(Recompute, CompiledSelectiveUsesItsBackwardAndKeptBytes) {
  // The recomputed norms and activations are part of the compiled backward
  // (memory-bound); the kept bytes are the compiled forward's residuals,
  // not the analytic "attention outputs dropped".
  PlanEval t(recomputeProfile(0, 4e8, 6e7), "mb=1");
  auto &[c, m, prof, plan] = t;
  prof.selectiveSavedBytes = {0, 9e7};
  Estimate none = t.estimate(1);
  plan.recompute = "selective";
  Estimate sel = t.estimate(1);
  EXPECT_TRUE(sel.recomputeCompiled);
  EXPECT_NEAR(sel.stepTime - none.stepTime,
              m.layers * kernelTime(c, OpKind::Memory, 0, 4e8), 1e-12);
  // Transient: the frame less one layer's kept bytes, plus the layer's
  // recomputed residuals (1e8 - 6e7; gradient buffers in the memory plan).
  EXPECT_DOUBLE_EQ(sel.activationBytes,
                   m.layers * (6e7 + 1e7) + (2.5e8 - 6e7 - 1e7) + 4e7);
  // Software that recomputes the attention instead (Megatron's selective)
  // uses the analytic model even though the mode compiled.
  c.selectiveRecomputesAttention = true;
  Estimate megatron = t.estimate(1);
  EXPECT_FALSE(megatron.recomputeCompiled);
  EXPECT_DOUBLE_EQ(megatron.activationBytes,
                   m.layers * (1e8 - 9e7 + 1e7) + (3e8 - 1e8 - 1e7));
  c.selectiveRecomputesAttention = false;
  // Fallback: the attention outputs (9e7) dropped, no time (no attention).
  prof.selective.compiled = false;
  Estimate analytic = t.estimate(1);
  EXPECT_NEAR(analytic.stepTime, none.stepTime, 1e-12);
  EXPECT_DOUBLE_EQ(analytic.activationBytes,
                   m.layers * (1e8 - 9e7 + 1e7) + (3e8 - 1e8 - 1e7));
}

TEST(Recompute, RowsSayWhatWasCompiled) {
  LocalProfile prof = recomputeProfile(0.5e12, 4e8, 6e7);
  prof.full.compiled = false;
  prof.full.error = "tp=2,recompute=full: boom";
  std::vector<RecomputeRow> rows =
      recomputeRows(testCluster(), prof, {"none", "selective", "full"}, 2);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[0].compiled);
  EXPECT_TRUE(rows[1].compiled);
  EXPECT_FALSE(rows[2].compiled);
  EXPECT_EQ(rows[2].why, "tp=2,recompute=full: boom");
  EXPECT_DOUBLE_EQ(rows[0].backwardFlops, 4e12);
  EXPECT_DOUBLE_EQ(rows[1].keptBytes, 2 * (6e7 + 1e7));
  prof.full.compiled = true;
  rows = recomputeRows(testCluster(), prof, {"full"}, 1);
  EXPECT_DOUBLE_EQ(rows[0].backwardFlops, 2e12 + 0.5e12);
  EXPECT_DOUBLE_EQ(rows[0].commBytes, 1e8);
  EXPECT_DOUBLE_EQ(rows[0].keptBytes, 1e7);
  // Megatron-LM's recomputation: whole layers re-run, selective analytic.
  Cluster megatron = testCluster();
  megatron.fullRecomputeRerunsForward = true;
  megatron.selectiveRecomputesAttention = true;
  rows = recomputeRows(megatron, prof, {"selective", "full"}, 1);
  EXPECT_FALSE(rows[0].compiled);
  EXPECT_NE(rows[0].why.find("attention"), std::string::npos);
  EXPECT_DOUBLE_EQ(rows[1].backwardFlops, 2e12 + 1e12);
}

/// A synthetic MoE block: 1e9 parameters per block of which 0.9e9 are the
/// experts' (E = 8), and a 64 MB dispatch buffer per sequence.
LocalProfile syntheticMoeProfile() {
  LocalProfile p = syntheticProfile(1e9, 1e8);
  p.expertParams = 0.9e9;
  p.dispatchBytes = {0, 64e6};
  return p;
}

ModelInfo syntheticMoeModel() {
  ModelInfo m = syntheticModel();
  m.name = "synthetic-moe";
  m.experts = 8;
  return m;
}

/// Bytes per parameter of the states of `t` (the synthetic MoE model):
/// bf16 weights `w`, gradients `g`, fp32 Adam states `opt`; and its `dense`
/// and `expert` parameters over all `L` layers.
struct MoeStates {
  double L, w, g, opt, dense, expert;
};
MoeStates moeStates(const PlanEval &t) {
  double L = t.m.layers;
  return {L, 2, gradElementBytes(t.c, 2), 12, L * 0.1e9, L * 0.9e9};
}

TEST(ExpertParallel, ShardsExpertStatesAndAddsAllToAlls) {
  PlanEval t(syntheticMoeProfile(), "dp=8,zero=1,mb=2", syntheticMoeModel());
  auto &[c, m, prof, plan] = t;
  Estimate e1 = t.estimate(16);
  plan.ep = 8;
  Estimate e8 = t.estimate(16);
  ASSERT_EQ(e8.note.find("invalid"), std::string::npos) << e8.note;
  // Model states: dense params ZeRO-1 over dp = 8; expert params split
  // over ep = 8 and ZeRO-1 over the expert-data-parallel group of 1.
  auto [L, w, g, opt, dense, expert] = moeStates(t);
  EXPECT_NEAR(e1.stateBytes, (dense + expert) * (w + g + opt / 8), 1e3);
  EXPECT_NEAR(e8.stateBytes,
              dense * (w + g + opt / 8) + expert / 8 * (w + g + opt), 1e3);
  EXPECT_LT(e8.peakBytes, e1.peakBytes);
  // Four exposed all-to-alls of the 64 MB buffer (mbs = 1) per layer per
  // microbatch over 8 ranks on NVLink (ep·tp = 8 <= 8 GPUs per node).
  double a2a = collectiveTime(c, CollectiveKind::AllToAll, 64e6, 8, 8);
  EXPECT_GT(a2a, 0);
  EXPECT_DOUBLE_EQ(e1.epComm, 0);
  EXPECT_NEAR(e8.epComm, 2 * L * 4 * a2a, 1e-12);
  // Expert compute is unchanged; the step grows by the all-to-alls, less
  // the expert gradients' all-reduce that ep = dp removes.
  EXPECT_NEAR(e8.compute, e1.compute, 1e-9 * e1.compute);
  EXPECT_GT(e8.exposedComm, e1.exposedComm - e1.dpComm + e8.dpComm);
  EXPECT_LT(e8.dpComm, e1.dpComm);
  // Full recomputation re-runs the forward's two all-to-alls.
  plan.recompute = "full";
  EXPECT_NEAR(t.estimate(16).epComm, 2 * L * 6 * a2a, 1e-12);
}

TEST(ExpertParallel, AcrossNodesUsesTheInterNodeLink) {
  // ep·tp = 16 > 8 GPUs per node (etp = tp: the ep group is outside tp).
  PlanEval t(syntheticMoeProfile(), "dp=8,tp=2,ep=8,etp=2,mb=1",
             syntheticMoeModel());
  auto &[c, m, prof, plan] = t;
  m.experts = 16;
  Estimate e = t.estimate(8);
  ASSERT_EQ(e.note.find("invalid"), std::string::npos) << e.note;
  double inter = collectiveTime(c, CollectiveKind::AllToAll, 64e6, 8, 1);
  EXPECT_NEAR(e.epComm, m.layers * 4 * inter, 1e-12);
  EXPECT_GT(inter, collectiveTime(c, CollectiveKind::AllToAll, 64e6, 8, 8));
}

TEST(ExpertParallel, InvalidDegrees) {
  PlanEval t(syntheticMoeProfile(), "dp=4,mb=1", syntheticMoeModel());
  auto &[c, m, prof, plan] = t;
  auto note = [&](Candidate p) {
    return evaluate(c, m, prof, p, p.dp, false).note;
  };
  plan.ep = 8; // dp·cp = 4
  EXPECT_NE(note(plan).find("dp*cp % ep"), std::string::npos);
  plan.dp = 16;
  plan.ep = 16; // 8 experts
  EXPECT_NE(note(plan).find("experts do not split"), std::string::npos);
  plan.ep = 2;
  plan.zero = 3; // FSDP2 + EP
  EXPECT_EQ(note(plan).find("invalid"), std::string::npos) << note(plan);
  plan.zero = 0;
  EXPECT_EQ(note(plan).find("invalid"), std::string::npos);
  // A dense model has no experts to split.
  EXPECT_NE(
      evaluate(c, syntheticModel(), syntheticProfile(1e9, 1e8), plan, 16, false)
          .note.find("without experts"),
      std::string::npos);
}

TEST(ExpertParallel, Zero3ShardsExpertsOverTheExpertDataParallelGroup) {
  // ZeRO-3 with ep = 2 on dp = 8: dense weights, gradients and states
  // over all 8 ranks; each rank's E/ep experts over the expert-data-
  // parallel group of 4.
  PlanEval t(syntheticMoeProfile(), "dp=8,mb=1,zero=3", syntheticMoeModel());
  auto &[c, m, prof, plan] = t;
  auto [L, w, g, opt, dense, expert] = moeStates(t);
  Estimate e1 = t.estimate(8);
  plan.ep = 2;
  Estimate e2 = t.estimate(8);
  ASSERT_EQ(e2.note.find("invalid"), std::string::npos) << e2.note;
  EXPECT_NEAR(e1.stateBytes, (dense + expert) * (w + g + opt) / 8, 1e3);
  EXPECT_NEAR(e2.stateBytes,
              dense * (w + g + opt) / 8 + expert / 2 * (w + g + opt) / 4, 1e3);
  // dp = ep: the experts are whole on their rank and never gathered.
  plan.ep = 8;
  Estimate e8 = t.estimate(8);
  ASSERT_EQ(e8.note.find("invalid"), std::string::npos) << e8.note;
  EXPECT_NEAR(e8.stateBytes,
              dense * (w + g + opt) / 8 + expert / 8 * (w + g + opt), 1e3);
  // With nothing hidden (no overlap), ep = 2 pays the experts' gathers
  // and reduce-scatters over its group of 4 on top of the same dense ones
  // (all-to-alls aside): one expert all-gather per layer forward, an
  // all-gather and a reduce-scatter backward.
  c.dpOverlap = 0;
  plan.ep = 2;
  Estimate h2 = t.estimate(8);
  plan.ep = 8;
  Estimate h8 = t.estimate(8);
  double ag = collectiveTime(c, CollectiveKind::AllGather, 0.9e9 / 2 * w, 4, 4);
  double rs =
      collectiveTime(c, CollectiveKind::ReduceScatter, 0.9e9 / 2 * g, 4, 4);
  double expertComm = L * (2 * ag + rs);
  EXPECT_NEAR((h2.exposedComm - h2.epComm) - (h8.exposedComm - h8.epComm),
              expertComm, 1e-6 * expertComm);
}

TEST(ExpertParallel, UnderCpGathersTheSequenceAndFoldsOverCp) {
  // Under cp an MoE layer gathers its input over cp (per-sequence routing)
  // and, backward, the output gradient: one all-gather of the whole
  // sequence each way per layer per microbatch, on top of the all-to-alls.
  // seq 1024, hidden 1024, bf16.
  PlanEval t(syntheticMoeProfile(), "dp=4,cp=2,ep=2,mb=2", syntheticMoeModel());
  auto &[c, m, prof, plan] = t;
  Estimate e = t.estimate(8);
  ASSERT_EQ(e.note.find("invalid"), std::string::npos) << e.note;
  double a2a = collectiveTime(c, CollectiveKind::AllToAll, 64e6 / 2, 2, 2);
  double gather =
      collectiveTime(c, CollectiveKind::AllGather, 1024.0 * 1024 * 2, 2, 2);
  EXPECT_NEAR(e.epComm, m.layers * 2 * (4 * a2a + 2 * gather), 1e-9 * e.epComm);
  // The compilable search folds ep over the cp ranks (ep a multiple of cp,
  // ep/cp dividing dp) and never pairs an MoE model's cp > 1 with ep = 1.
  std::map<ProfileKey, LocalProfile> profiles = {{{1, false}, prof}};
  SearchOptions o;
  o.gpus = 8;
  o.globalBatch = 16;
  o.cpChoices = {1, 2, 4};
  o.schedules = {"1f1b"};
  o.epAsCompiled = true;
  o.simulateTop = 100000;
  SearchResult r = search(c, m, profiles, o);
  ASSERT_FALSE(r.best.empty());
  for (const Estimate &b : r.best) {
    if (b.plan.cp > 1) {
      EXPECT_GT(b.plan.ep, 1) << b.plan.str();
      EXPECT_EQ(b.plan.ep % b.plan.cp, 0) << b.plan.str();
    }
  }
  for (auto &[family, why] : r.rejected)
    EXPECT_TRUE(family.find("cp=1") != std::string::npos ||
                family.find("ep=") != std::string::npos)
        << family << ": " << why;
}

TEST(ExpertParallel, SearchPicksEpWhenExpertsDoNotFit) {
  // 10 blocks of 1e9 parameters on 8 GPUs: at ep = 1 even ZeRO-2's
  // 2 + 14/8 bytes per parameter (37.5 GB) plus activations exceed a
  // 30 GB GPU; at ep = 8 the experts' states are 1/8.
  Cluster c = testCluster();
  c.hbmBytes = 30e9;
  ModelInfo m = syntheticMoeModel();
  std::map<ProfileKey, LocalProfile> profiles;
  profiles[{1, false}] = syntheticMoeProfile();
  SearchOptions o;
  o.gpus = 8;
  o.globalBatch = 16;
  o.cpChoices = {1};
  o.zeroStages = {0, 1, 2};
  o.schedules = {"1f1b"};
  SearchResult r = search(c, m, profiles, o);
  ASSERT_FALSE(r.best.empty());
  EXPECT_GT(r.best.front().plan.ep, 1);
  for (const Estimate &e : r.best) {
    if (e.plan.pp == 1) {
      EXPECT_GT(e.plan.ep, 1) << e.plan.str();
    }
  }
  // Only ep = 1 (what compilable=true allows): ep > 1 is never proposed.
  o.epChoices = {1};
  SearchResult r1 = search(c, m, profiles, o);
  for (const Estimate &e : r1.best)
    EXPECT_EQ(e.plan.ep, 1) << e.plan.str();
  EXPECT_LT(r1.stats.candidates, r.stats.candidates);
}

TEST(ExpertParallel, DenseModelsNeverGetEp) {
  DenseSearch t(64);
  auto &[c, m, profiles, o] = t;
  SearchResult r = t.run();
  ASSERT_FALSE(r.best.empty());
  for (const Estimate &e : r.best)
    EXPECT_EQ(e.plan.ep, 1) << e.plan.str();
  o.epChoices = {1};
  EXPECT_EQ(t.run().stats.candidates, r.stats.candidates);
}

TEST(Candidate, ApplyPlanSyntax) {
  // The --plan form: no mbs, defaults omitted, dp always present.
  Candidate c;
  c.dp = 8;
  c.mbs = 2;
  EXPECT_EQ(c.applyPlan(), "dp=8");
  c.pp = 2;
  c.dp = 4;
  c.tp = 2;
  c.sp = true;
  c.zero = 1;
  c.mb = 4;
  c.schedule = "zb-v";
  c.vpp = 2;
  c.recompute = "selective";
  EXPECT_EQ(c.applyPlan(), "pp=2,dp=4,tp=2,sp=1,zero=1,mb=4,schedule=zb-v,"
                           "vpp=2,recompute=selective");
  // 1F1B is the default schedule; pp=1 never names one.
  c.schedule = "1f1b";
  c.vpp = 1;
  c.recompute = "none";
  EXPECT_EQ(c.applyPlan(), "pp=2,dp=4,tp=2,sp=1,zero=1,mb=4");
  // The report's full form keeps the microbatch size.
  EXPECT_NE(c.str().find(",mbs=2,"), std::string::npos);
}

} // namespace
