//===- PlannerTest.cpp - Cost formulas of the planner ---------------------===//
//
// The α-β formulas (algorithms.md §6.1), the roofline, cluster validation,
// the ZeRO memory vectors of workloads.md §5 and the search's memory
// rejection, on synthetic profiles.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Planner/Planner.h"
#include "autoshard/Planner/Cluster.h"

#include "gtest/gtest.h"

using namespace autoshard::planner;

namespace {

Cluster testCluster() {
  Cluster c;
  c.name = "test";
  c.gpusPerNode = 8;
  c.peakFlops = 1e15;
  c.hbmBytes = 80e9;
  c.hbmBandwidth = 2e12;
  c.intraNode = {400e9, 0, 1};
  c.interNode = {50e9, 0, 1};
  c.gemmEfficiency = 0.5;
  c.attentionEfficiency = 0.25;
  c.memoryEfficiency = 0.5;
  return c;
}

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

ModelInfo syntheticModel() {
  ModelInfo m;
  m.name = "synthetic";
  m.layers = 10;
  m.hidden = 1024;
  m.heads = 8;
  m.kvHeads = 8;
  m.seq = 1024;
  m.elementBytes = 2;
  m.flopsPerSequence = 3e13;
  return m;
}

TEST(Memory, ZeroVectorsOfWorkloads) {
  // workloads.md §5: Psi = 7.5B, N = 64: DDP 120 GB, ZeRO-1 31.4 GB,
  // ZeRO-2 16.6 GB, ZeRO-3 1.88 GB.
  Cluster c = testCluster();
  ModelInfo m = syntheticModel();
  LocalProfile prof = syntheticProfile(7.5e8, 0);
  Candidate plan;
  plan.dp = 64;
  plan.mb = 1;
  const double expected[] = {120e9, 31.4e9, 16.6e9, 1.875e9};
  for (int zero = 0; zero <= 3; ++zero) {
    plan.zero = zero;
    Estimate e = evaluate(c, m, prof, plan, 64, false);
    EXPECT_NEAR(e.stateBytes, expected[zero], 0.05e9) << "zero=" << zero;
  }
}

TEST(Memory, OversizedPlanIsRejectedNotScored) {
  Cluster c = testCluster();
  ModelInfo m = syntheticModel();
  std::map<std::pair<int64_t, bool>, LocalProfile> profiles;
  profiles[{1, false}] = syntheticProfile(7.5e8, 1e9);
  SearchOptions o;
  o.gpus = 8;
  o.globalBatch = 8;
  o.cpChoices = {1};
  o.fixed = true;
  o.fixedPlan.dp = 8;
  o.fixedPlan.mb = 1;
  SearchResult r = search(c, m, profiles, o);
  EXPECT_TRUE(r.best.empty());
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_NE(r.rejected.begin()->second.find("OOM"), std::string::npos);
}

TEST(Search, FindsAFittingPlanAndBeatsDdp) {
  Cluster c = testCluster();
  ModelInfo m = syntheticModel();
  std::map<std::pair<int64_t, bool>, LocalProfile> profiles;
  profiles[{1, false}] = syntheticProfile(7.5e8, 1e9);
  SearchOptions o;
  o.gpus = 8;
  o.globalBatch = 64;
  o.cpChoices = {1};
  SearchResult r = search(c, m, profiles, o);
  ASSERT_FALSE(r.best.empty());
  for (const Estimate &e : r.best)
    EXPECT_LE(e.peakBytes, c.hbmBytes);
  for (size_t i = 1; i < r.best.size(); ++i)
    if (r.best[i].simulated == r.best[i - 1].simulated)
      EXPECT_LE(r.best[i - 1].stepTime, r.best[i].stepTime + 1e-12);
  EXPECT_GT(r.stats.candidates, 10);
  // Time split adds up.
  const Estimate &b = r.best.front();
  EXPECT_NEAR(b.compute + b.exposedComm + b.bubble + b.optimizer, b.stepTime,
              1e-9 * b.stepTime);
}

TEST(Pipeline, BubbleMatchesOneFOneB) {
  // Unit block costs and p = 4, m = 8: 1F1B makespan = (m + p - 1)(F + B).
  Cluster c = testCluster();
  ModelInfo m = syntheticModel();
  m.layers = 4;
  LocalProfile prof = syntheticProfile(1, 0);
  Candidate plan;
  plan.pp = 4;
  plan.mb = 8;
  Estimate analytic = evaluate(c, m, prof, plan, 8, false);
  Estimate simulated = evaluate(c, m, prof, plan, 8, true);
  double unit = analytic.tF + analytic.tI;
  EXPECT_NEAR(analytic.bubble, 3 * unit, 1e-9 * unit);
  EXPECT_NEAR(simulated.bubble, 3 * unit, 1e-6 * unit);
  EXPECT_TRUE(simulated.simulated);
}

} // namespace
