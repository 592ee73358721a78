//===- CostTermsTest.cpp - The planner's cost terms, one at a time --------===//
//
// Each term of CostTerms.h on inputs small enough that the expected value
// follows from the term's formula by hand (the derivation is in the
// comments), on the round-number cluster and model of PlannerTestSetup.h.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Planner/CostTerms.h"
#include "PlannerTestSetup.h"

#include "gtest/gtest.h"

using namespace autoshard::planner;

namespace {

/// The synthetic model with 8 layers and 2 kv heads (GQA).
ModelInfo termModel() {
  ModelInfo m = syntheticModel();
  m.layers = 8;
  m.kvHeads = 2;
  return m;
}

/// 100 parameters per block, 60 of them expert weights, 10 outside.
LocalProfile moeParams() {
  LocalProfile prof;
  prof.layerParams = 100, prof.otherParams = 10, prof.expertParams = 60;
  return prof;
}

TEST(PipelineTerm, ClosedFormBubbles) {
  // Per stage-chunk and microbatch: F = 1, I = 1.5, W = 0.5 (B = 2); ends
  // 0.1 + 0.2 (first) and 0.3 + 0.4 (last); exposed p2p 0.01.
  Estimate e;
  e.tF = 1, e.tI = 1.5, e.tW = 0.5, e.tP2P = 0.01;
  e.firstF = 0.1, e.firstB = 0.2, e.lastF = 0.3, e.lastB = 0.4;
  Candidate plan;
  plan.pp = 4, plan.mb = 8;
  // 1F1B: (p-1)(F+B) = 3·3 = 9, plus 2(p-1) transfers = 0.06; the heavier
  // end 0.7; busy 8·(3 + 0.7); 2·mb·v transfers in the steady state.
  PipelineTime t = pipelineTime(plan, e);
  EXPECT_DOUBLE_EQ(t.extra, 0.7);
  EXPECT_DOUBLE_EQ(t.bubble, 9.06);
  EXPECT_DOUBLE_EQ(t.busy, 29.6);
  EXPECT_DOUBLE_EQ(t.steadyP2P, 0.16);
  EXPECT_DOUBLE_EQ(t.total(), 29.6 + 9.06 + 0.16);
  plan.schedule = "gpipe";
  EXPECT_DOUBLE_EQ(pipelineTime(plan, e).bubble, 9.06);
  // ZB-H1: (p-1)·max(0, F + I - W) = 3·2.
  plan.schedule = "zb-h1";
  EXPECT_DOUBLE_EQ(pipelineTime(plan, e).bubble, 6.06);
  // Interleaved, v = 2: F = 2, B = 4 per rank; (p-1)(F+B)/v = 9.
  plan.schedule = "interleaved";
  plan.vpp = 2;
  EXPECT_DOUBLE_EQ(pipelineTime(plan, e).bubble, 9.06);
  EXPECT_DOUBLE_EQ(pipelineTime(plan, e).steadyP2P, 0.32);
  // ZB-V, v = 2: F = 2, I = 3, W = 1; (p-1)·max(0, F + I - 2W)/2 = 4.5.
  plan.schedule = "zb-v";
  EXPECT_DOUBLE_EQ(pipelineTime(plan, e).bubble, 4.56);
  // One stage: no bubble, no transfers, both ends on the rank.
  plan.pp = 1, plan.vpp = 1, plan.schedule = "1f1b";
  t = pipelineTime(plan, e);
  EXPECT_DOUBLE_EQ(t.bubble, 0);
  EXPECT_DOUBLE_EQ(t.steadyP2P, 0);
  EXPECT_DOUBLE_EQ(t.extra, 1.0);
}

TEST(PipelineTerm, InFlightLayersOfTheFirstRank) {
  // 16 layers on p = 4 ranks (4 per rank), 8 microbatches.
  Candidate plan;
  plan.pp = 4, plan.mb = 8;
  EXPECT_DOUBLE_EQ(inflightLayers(plan, 16), 16); // min(p, mb)·L/p
  plan.mb = 2;
  EXPECT_DOUBLE_EQ(inflightLayers(plan, 16), 8);
  plan.mb = 8;
  plan.schedule = "gpipe";
  EXPECT_DOUBLE_EQ(inflightLayers(plan, 16), 32); // mb·L/p
  // Interleaved, v = 2 (chunks of 2 layers): min(2·3 + 1·4 + 1, 16) = 11.
  plan.schedule = "interleaved";
  plan.vpp = 2;
  EXPECT_DOUBLE_EQ(inflightLayers(plan, 16), 22);
  plan.schedule = "zb-v"; // min(2p, 2mb) = 8 chunks
  EXPECT_DOUBLE_EQ(inflightLayers(plan, 16), 16);
  plan.pp = 1, plan.vpp = 1;
  EXPECT_DOUBLE_EQ(inflightLayers(plan, 16), 16);
}

TEST(PipelineTerm, TailSynchronisations) {
  // pp = 2 with neighbours 4 ranks apart inside a node: the loss (4 bytes)
  // to the first stage, the norm's all-reduce over the 2 stages, and the
  // tied embedding's gradient (1e6 bytes) back to the last stage; none of
  // them overlapped (overlap.p2p applies to the steady state only).
  Cluster c = testCluster();
  c.p2pOverlap = 0.5;
  c.collectiveLatency = 2e-6;
  Candidate plan;
  plan.pp = 2, plan.dp = 2, plan.tp = 2;
  const double loss = collectiveTime(c, CollectiveKind::P2P, 4, 2, 2);
  const double norm = collectiveTime(c, CollectiveKind::AllReduce, 4, 2, 2);
  const double tied = collectiveTime(c, CollectiveKind::P2P, 1e6, 2, 2);
  EXPECT_DOUBLE_EQ(pipelineTailTime(c, plan, 0), loss + norm);
  EXPECT_DOUBLE_EQ(pipelineTailTime(c, plan, 1e6), loss + norm + tied);
  EXPECT_GT(tied, loss);
  // ZB-V runs the first and the last stage on one rank: nothing to send.
  plan.schedule = "zb-v";
  EXPECT_DOUBLE_EQ(pipelineTailTime(c, plan, 1e6), loss + norm);
  plan.pp = 1;
  EXPECT_DOUBLE_EQ(pipelineTailTime(c, plan, 1e6), 0);
}

TEST(PipelineTerm, P2PLinkAndOverlap) {
  Cluster c = testCluster();
  c.p2pOverlap = 0.5;
  Candidate plan;
  plan.pp = 2, plan.dp = 2, plan.tp = 2;
  // Neighbours 4 ranks apart, inside the node: half of 1e8 / 400 GB/s.
  EXPECT_DOUBLE_EQ(p2pTime(c, plan, 1e8), 0.5 * 1e8 / 400e9);
  // 8 ranks apart: the next node, over the NIC.
  plan.dp = 4;
  EXPECT_DOUBLE_EQ(p2pTime(c, plan, 1e8), 0.5 * 1e8 / 50e9);
  plan.pp = 1;
  EXPECT_DOUBLE_EQ(p2pTime(c, plan, 1e8), 0);
}

TEST(PipelineTerm, GradientAccumulationAddsPerMicrobatch) {
  // 4 tensors of 250k fp32 gradient elements (1e6 B each) at 1e12 B/s
  // (2e12 x efficiency.memory 0.5) and 1 us per kernel: an add reads two
  // and writes one (3e6 B: 3 us + 1 us), the final 1/mb scale reads and
  // writes one (2 us + 1 us). Over 4 microbatches: 3 adds and 1 scale per
  // tensor, (3 x 16 + 12) / 4 = 15 us per microbatch.
  Cluster c = testCluster();
  c.kernelOverhead = 1e-6;
  EXPECT_NEAR(gradientAccumulationTime(c, 1e6, 4, 4, 4), 15e-6, 1e-15);
  // One microbatch: nothing to accumulate, nothing to scale.
  EXPECT_DOUBLE_EQ(gradientAccumulationTime(c, 1e6, 4, 1, 4), 0);
  // The same elements in 8 tensors: 4 more kernels per add and per scale,
  // (3 x 20 + 16) / 4 = 19 us.
  EXPECT_NEAR(gradientAccumulationTime(c, 1e6, 8, 4, 4), 19e-6, 1e-15);
  // The adds at their own listed efficiency (0.25 of 2e12 B/s: 6 us per
  // 3e6 B, 7 us a kernel), the scales at the default: (3 x 28 + 12) / 4.
  c.memoryOpEfficiency = {{"add", 0.25}};
  EXPECT_NEAR(gradientAccumulationTime(c, 1e6, 4, 4, 4),
              (3 * 4 * 7e-6 + 12e-6) / 4, 1e-15);
  // Megatron's gradient_accumulation_fusion (grad_accumulation "fused"):
  // the weight-gradient GEMM accumulates in place, no extra kernel.
  c.gradAccumulationFused = true;
  EXPECT_DOUBLE_EQ(gradientAccumulationTime(c, 1e6, 4, 4, 4), 0);
}

TEST(ParameterTerm, ShardsOverDataAndExpertGroups) {
  Cluster c = testCluster();
  ModelInfo m = termModel();
  LocalProfile prof = moeParams();
  Candidate plan;
  // etp = tp: each expert split over tp (in the profile), ep over dp·cp.
  plan.pp = 2, plan.dp = 4, plan.cp = 2, plan.tp = 2, plan.ep = 2, plan.etp = 2;
  ParameterShards s = parameterShards(c, m, prof, plan);
  EXPECT_DOUBLE_EQ(s.layersPerRank, 4);
  EXPECT_DOUBLE_EQ(s.expertRank, 4 * 60 / 2.0);
  EXPECT_DOUBLE_EQ(s.denseRank, 4 * 100 + 10 - 4 * 60);
  EXPECT_EQ(s.dpGroup, 8);
  EXPECT_EQ(s.dpPerNode, 4);  // 8 GPUs / tp
  EXPECT_EQ(s.edpGroup, 4);   // dp·cp / ep
  EXPECT_EQ(s.edpPerNode, 2); // 8 GPUs / (tp·ep)
  // etp = 1: ep = 4 takes both tp ranks (the profile's experts are E/tp
  // per rank already) and 2 of the dp·cp ranks.
  plan.etp = 1, plan.ep = 4;
  s = parameterShards(c, m, prof, plan);
  EXPECT_DOUBLE_EQ(s.expertRank, 4 * 60 / 2.0);
  EXPECT_EQ(s.edpGroup, 4);   // dp·cp / (ep/tp)
  EXPECT_EQ(s.edpPerNode, 2); // 8 GPUs / (tp·ep/tp)
  // At ep = 1 the experts are ordinary parameters.
  plan.ep = 1;
  s = parameterShards(c, m, prof, plan);
  EXPECT_DOUBLE_EQ(s.expertRank, 0);
  EXPECT_DOUBLE_EQ(s.denseRank, 410);
}

TEST(ParameterTerm, CompiledBucketsArePerLayerGroup) {
  // dist-bucket-collectives: one data-parallel bucket per block on the rank
  // plus the embedding / head / final norm group, each at most 40 MiB of
  // gradient bytes; the expert weights (another mesh axis) their own.
  Cluster c = testCluster();
  ModelInfo m = termModel(); // 8 layers
  LocalProfile prof = moeParams();
  Candidate plan;
  plan.pp = 2, plan.dp = 4, plan.ep = 2;
  EXPECT_EQ(parameterShards(c, m, prof, plan).denseBuckets, 0);
  plan.dpBucketPerLayerGroup = true;
  ParameterShards s = parameterShards(c, m, prof, plan);
  EXPECT_EQ(s.denseBuckets, 4 + 1);
  EXPECT_EQ(s.expertBuckets, 4);
  // A block of 30 MiB of parameters in 2-byte gradients: two buckets each.
  double grad = gradElementBytes(c, m.elementBytes);
  prof.layerParams = 30.0 * 1024 * 1024 / grad * 2 + prof.expertParams;
  s = parameterShards(c, m, prof, plan);
  EXPECT_EQ(s.denseBuckets, 4 * 2 + 1);
  plan.ep = 1;
  prof.otherParams = 0;
  s = parameterShards(c, m, prof, plan);
  EXPECT_EQ(s.denseBuckets, 4 * 2);
  EXPECT_EQ(s.expertBuckets, 0);

  // With the non-block parameters split by the profile (the embedding's,
  // the head's), as the compiled nanoGPT programs were counted: the
  // embedding joins block 0's bucket, the final norm (head-only) has its
  // own on the rank that holds it. Per stage, dp=2/4: pp=1 5 (4 blocks +
  // ln_f); pp=2 1F1B, ZB-H1 and interleaved 2 on the first stage (3 on
  // the last); ZB-V 3 on the first (its last chunk too); pp=4 1.
  LocalProfile split;
  split.layerParams = 196864, split.preParams = 24576;
  split.postParams = 16384 + 128, split.headOnlyParams = 128;
  split.otherParams = 24576 + 128;
  Candidate dense;
  dense.dpBucketPerLayerGroup = true, dense.dp = 2;
  ModelInfo four = m;
  four.layers = 4;
  EXPECT_EQ(parameterShards(c, four, split, dense).denseBuckets, 4 + 1);
  dense.pp = 2;
  EXPECT_EQ(parameterShards(c, four, split, dense).denseBuckets, 2);
  dense.schedule = "interleaved", dense.vpp = 2;
  EXPECT_EQ(parameterShards(c, four, split, dense).denseBuckets, 2);
  dense.schedule = "zb-v";
  EXPECT_EQ(parameterShards(c, four, split, dense).denseBuckets, 2 + 1);
  dense.schedule = "1f1b", dense.vpp = 1, dense.pp = 4;
  EXPECT_EQ(parameterShards(c, four, split, dense).denseBuckets, 1);
  // Block 0 and the embedding split at the cap together.
  dense.pp = 1;
  split.preParams = 30.0 * 1024 * 1024 / grad;
  split.layerParams = 20.0 * 1024 * 1024 / grad;
  EXPECT_EQ(parameterShards(c, four, split, dense).denseBuckets, 3 + 2 + 1);
  split.preParams = 24576, split.layerParams = 196864;

  // With the profile's groups of parameters by the axes their gradients
  // are reduced over, the pass buckets each group's collectives apart (one
  // kind and set of mesh axes each), per block as before.
  // Tensor parallelism (nanoGPT, tp = 2, sp = 1): the norm weights are
  // replicated over tp and each rank sums their gradients over its shard
  // of the sequence (without SP: from their output gradient, a partial sum
  // over tp), so they are reduced over [dp, tp], the rest over
  // [dp]: per block one of each, the final norm over [dp, tp] alone, the
  // embedding's with block 0's over [dp]. dp=2: 4 + 5 (not 5).
  LocalProfile sp = split;
  GradientReduction rest, norms;
  rest.layer = 98304, rest.pre = 8192 + 16384, rest.other = 8192 + 16384;
  norms.overTensor = true;
  norms.layer = 512, norms.headOnly = 256, norms.other = 256;
  sp.gradientReductions = {rest, norms};
  Candidate tp = dense;
  tp.tp = 2, tp.sp = true;
  ParameterShards t = parameterShards(c, four, sp, tp);
  EXPECT_EQ(t.denseBuckets, 4 + 5);
  ASSERT_EQ(t.denseCollectives.size(), 2u);
  EXPECT_EQ(t.denseCollectives[0].kind, CollectiveKind::AllReduce);
  EXPECT_EQ(t.denseCollectives[0].group, 2);
  EXPECT_EQ(t.denseCollectives[0].buckets, 4);
  EXPECT_DOUBLE_EQ(t.denseCollectives[0].params, 4 * 98304 + 24576);
  EXPECT_EQ(t.denseCollectives[1].kind, CollectiveKind::AllReduce);
  EXPECT_EQ(t.denseCollectives[1].group, 4); // dp·tp
  EXPECT_EQ(t.denseCollectives[1].buckets, 5);
  EXPECT_DOUBLE_EQ(t.denseCollectives[1].params, 4 * 512 + 256);
  // ZeRO-1: the optimizer's shards are over dp, so every gradient is
  // reduce-scattered over dp (per block, and the final norm's), the norm
  // weights' all-reduced over tp first; one gather per bucket over dp.
  tp.zero = 1;
  t = parameterShards(c, four, sp, tp);
  EXPECT_EQ(t.denseBuckets, 5 + 5);
  ASSERT_EQ(t.denseCollectives.size(), 3u);
  EXPECT_EQ(t.denseCollectives[0].kind, CollectiveKind::ReduceScatter);
  EXPECT_EQ(t.denseCollectives[0].group, 2);
  EXPECT_EQ(t.denseCollectives[0].buckets, 5);
  EXPECT_EQ(t.denseCollectives[1].kind, CollectiveKind::AllReduce);
  EXPECT_EQ(t.denseCollectives[1].group, 2); // tp
  EXPECT_EQ(t.denseCollectives[1].buckets, 5);
  EXPECT_EQ(t.denseCollectives[2].kind, CollectiveKind::AllGather);
  EXPECT_EQ(t.denseCollectives[2].buckets, 5);
  // tp only (dp = 1): no data-parallel reduction, but the norm weights'
  // gradients are still all-reduced over tp, 5 of them.
  tp.zero = 0, tp.dp = 1;
  t = parameterShards(c, four, sp, tp);
  EXPECT_EQ(t.denseBuckets, 5);
  ASSERT_EQ(t.denseCollectives.size(), 1u);
  EXPECT_EQ(t.denseCollectives[0].group, 2);
  Cluster waiting = c;
  waiting.syncLatency = 1e-3;
  EXPECT_NEAR(dataParallelSyncTime(waiting, four, tp, t, 1, 1, 2) -
                  dataParallelSyncTime(c, four, tp, t, 1, 1, 2),
              5e-3, 1e-12);

  // Context parallelism (dp = 2, cp = 2): every gradient but the position
  // embedding's is summed over the rank's chunk of the sequence and
  // reduced over [dp, cp] (4 blocks + the final norm); the position
  // embedding's output gradient is gathered over cp first, so its
  // gradient is reduced over [dp] alone, in a bucket of its own: 5 + 1.
  LocalProfile cpProf = split;
  GradientReduction chunked, positions;
  chunked.layer = 196864, chunked.pre = 8192, chunked.headOnly = 128;
  chunked.other = 8192 + 128;
  positions.overContext = false;
  positions.pre = 16384, positions.other = 16384;
  cpProf.gradientReductions = {chunked, positions};
  Candidate cp = dense;
  cp.cp = 2;
  t = parameterShards(c, four, cpProf, cp);
  EXPECT_EQ(t.denseBuckets, 5 + 1);
  ASSERT_EQ(t.denseCollectives.size(), 2u);
  EXPECT_EQ(t.denseCollectives[0].group, 4);
  EXPECT_EQ(t.denseCollectives[0].buckets, 5);
  EXPECT_EQ(t.denseCollectives[1].group, 2);
  EXPECT_EQ(t.denseCollectives[1].buckets, 1);
  EXPECT_DOUBLE_EQ(t.denseCollectives[1].params, 16384);
  // At cp = 1 both groups are reduced over dp together: 5 as before.
  cp.cp = 1;
  EXPECT_EQ(parameterShards(c, four, cpProf, cp).denseBuckets, 5);
  EXPECT_EQ(parameterShards(c, four, cpProf, cp).denseCollectives.size(), 1u);

  // Each bucket pays its own host synchronisation: the all-reduce of 5
  // buckets responds to Cluster::syncLatency 5 times, one collective once.
  ParameterShards flat;
  flat.denseRank = 1e6, flat.dpGroup = 8, flat.dpPerNode = 8;
  Candidate dp8;
  dp8.dp = 8;
  auto latencyShare = [&](int64_t buckets) {
    flat.denseBuckets = buckets;
    Cluster quiet = c, waiting = c;
    waiting.syncLatency = 1e-3;
    return dataParallelSyncTime(waiting, m, dp8, flat, 1, 1, 2) -
           dataParallelSyncTime(quiet, m, dp8, flat, 1, 1, 2);
  };
  EXPECT_NEAR(latencyShare(0), 1e-3, 1e-12);
  EXPECT_NEAR(latencyShare(5), 5e-3, 1e-12);
  // ZeRO-1: a reduce-scatter and an all-gather per bucket.
  dp8.zero = 1;
  EXPECT_NEAR(latencyShare(5), 10e-3, 1e-12);
}

TEST(MemoryTerm, ZeroModelStates) {
  // w = g = 2 bytes, AdamW 12: 16, 4 + 12/N, 2 + 14/N, 16/N per parameter.
  Cluster c = testCluster();
  ModelInfo m = termModel();
  ParameterShards s;
  s.denseRank = 1e9, s.dpGroup = 8;
  Candidate plan;
  EXPECT_DOUBLE_EQ(modelStateBytes(c, m, plan, s), 16e9);
  plan.zero = 1;
  EXPECT_DOUBLE_EQ(modelStateBytes(c, m, plan, s), 5.5e9);
  plan.zero = 2;
  EXPECT_DOUBLE_EQ(modelStateBytes(c, m, plan, s), 3.75e9);
  plan.zero = 3;
  EXPECT_DOUBLE_EQ(modelStateBytes(c, m, plan, s), 2e9);
  // Expert states over their group of 2: 5e8·(4 + 12/2) more under ZeRO-1.
  plan.zero = 1;
  s.expertRank = 5e8, s.edpGroup = 2;
  EXPECT_DOUBLE_EQ(modelStateBytes(c, m, plan, s), 5.5e9 + 5e9);
  // An fp32 gradient buffer: 2 + 4 + 12 per parameter.
  c.gradBytes = 4;
  plan.zero = 0;
  s.expertRank = 0;
  EXPECT_DOUBLE_EQ(modelStateBytes(c, m, plan, s), 18e9);
}

TEST(MemoryTerm, Zero3GatheredBlocksAndFixedBytes) {
  Cluster c = testCluster();
  ModelInfo m = termModel();
  LocalProfile prof = moeParams();
  Candidate plan;
  plan.zero = 3, plan.dp = 4;
  ParameterShards s = parameterShards(c, m, prof, plan);
  // Two blocks with their gradients (2 + 2 bytes) and the root unit (2).
  EXPECT_DOUBLE_EQ(zero3GatheredBytes(c, m, prof, plan, s),
                   2 * (100 * 4 + 10 * 2));
  // ep = 2 over an expert group of 2: half of the experts are the rank's.
  plan.ep = 2;
  s = parameterShards(c, m, prof, plan);
  EXPECT_DOUBLE_EQ(zero3GatheredBytes(c, m, prof, plan, s),
                   2 * (70 * 4 + 10 * 2));
  plan.zero = 2;
  EXPECT_DOUBLE_EQ(zero3GatheredBytes(c, m, prof, plan, s), 0);

  c.reservedBytes = 1e9;
  c.commBufferBytesPerGroup = 1e8;
  Candidate one;
  EXPECT_DOUBLE_EQ(fixedBytes(c, one, parameterShards(c, m, prof, one)), 1e9);
  // tp, dp×cp, cp, pp (+ its embedding group), ep, expert-data-parallel.
  Candidate all;
  all.tp = 2, all.dp = 2, all.cp = 2, all.pp = 2, all.ep = 2;
  EXPECT_DOUBLE_EQ(fixedBytes(c, all, parameterShards(c, m, prof, all)),
                   1e9 + 7 * 1e8);
}

/// A one-block step's memory per phase (activation, grad, other bytes,
/// constant in b; the head's share of the grad bytes).
StepMemory framePhases() {
  StepMemory p;
  auto set = [&](StepPhase phase, double act, double grad, double headGrad) {
    PhaseMemory &m = p[static_cast<unsigned>(phase)];
    m.activation = {act, 0}, m.grad = {grad, 0}, m.other = {8, 0};
    m.headGrad = {headGrad, 0};
  };
  set(StepPhase::Embedding, 10, 0, 0);
  set(StepPhase::BlockForward, 100, 0, 0);
  set(StepPhase::Head, 120, 10, 10);
  set(StepPhase::BlockBackward, 90, 40, 15);
  set(StepPhase::Tail, 0, 60, 0);
  return p;
}

TEST(MemoryTerm, FramePeakPhases) {
  StepMemory phases = framePhases();
  FrameLayers l;
  l.layers = 4, l.inflight = 4, l.keptPerLayer = 50, l.layerGradBytes = 30;
  // Head 120 + 3·50 kept, 10 grad: 280 + 8 beats the top backward's
  // 90 + 150 + 40 and the bottom's 90 + 40 + 3·30.
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::Head);
  EXPECT_DOUBLE_EQ(p.activations, 270);
  EXPECT_DOUBLE_EQ(p.grads, 10);
  EXPECT_DOUBLE_EQ(p.paramGrads, 0);
  EXPECT_DOUBLE_EQ(p.other, 8);
  // Few kept bytes (full recomputation), large layer gradients: the bottom
  // backward with the 3 other layers' gradients.
  l.keptPerLayer = 5, l.layerGradBytes = 100;
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 90);
  EXPECT_DOUBLE_EQ(p.paramGrads, 300);
  // The tail holds them too: with 80 activation bytes its 80 + 60 + 300
  // beats the bottom backward's 90 + 40 + 300.
  phases[static_cast<unsigned>(StepPhase::Tail)].activation = {80, 0};
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::Tail);
  EXPECT_DOUBLE_EQ(p.grads + p.paramGrads, 360);
  // More microbatches: the sums (accumulated) stand for the other layers'
  // gradients at the bottom backward and count at the forward phases.
  l.microbatches = 2, l.accumulated = 1000, l.layerGradBytes = 0;
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::Head);
  EXPECT_DOUBLE_EQ(p.paramGrads, 1000);
  EXPECT_DOUBLE_EQ(p.activations, 120 + 15);
}

TEST(MemoryTerm, FramePeakZeroOptimizerGathers) {
  StepMemory phases = framePhases();
  FrameLayers l;
  l.layers = 4, l.inflight = 4, l.keptPerLayer = 5, l.layerGradBytes = 10;
  // Without the gathers the tail (60 + 3·10 + 8) is not the peak.
  EXPECT_NE(framePeak(phases, 1, 1, l).phase, StepPhase::Tail);
  // ZeRO-1/2: at the last AdamW every updated shard's gather is in flight
  // (400 B), alone with the step's I/O: not the one-block tail's 60
  // gradient bytes, nor the other layers' (consumed) shards.
  l.optimizerGatherBytes = 400;
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::Tail);
  EXPECT_DOUBLE_EQ(p.activations, 0);
  EXPECT_DOUBLE_EQ(p.grads, 0);
  EXPECT_DOUBLE_EQ(p.paramGrads, 400);
  EXPECT_DOUBLE_EQ(p.other, 8);
}

TEST(MemoryTerm, FramePeakPrefetchPipelineAndZero3) {
  StepMemory phases = framePhases();
  FrameLayers l;
  l.layers = 4, l.inflight = 4, l.keptPerLayer = 50;
  // The next block's prefetched SP re-gather at the top backward:
  // 90 + 150 + 40 + 60 = 340 > 288.
  l.regather = 60;
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 300);
  // One layer: nothing to prefetch, the head wins again.
  l.layers = 1, l.inflight = 1;
  EXPECT_EQ(framePeak(phases, 1, 1, l).phase, StepPhase::Head);
  // A first pipeline stage: no head; the head's 15 gradient bytes at the
  // backward arrive as received activations, and its unwaited send.
  l.layers = 2, l.inflight = 4, l.regather = 0, l.head = false;
  l.sendBytes = 7;
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 15 + 150 + 7);
  EXPECT_DOUBLE_EQ(p.grads, 40 - 15);
  // Of the head's gradients, those of parameters only the head reads (the
  // final norm's, 5) are neither received nor held.
  l.headOnlyGradBytes = 5;
  p = framePeak(phases, 1, 1, l);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 10 + 150 + 7);
  EXPECT_DOUBLE_EQ(p.grads, 40 - 15);
  l.headOnlyGradBytes = 0;
  // ZeRO-3: the block's gathered parameters (20) and the next one's
  // packed shard (10) and gathered buffer at a block call.
  l.head = true, l.sendBytes = 0;
  l.gatheredPerLayer = 20, l.gatherPackBytes = 10;
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 150 + 20 + 30);
  // ZeRO-2/3 at the bottom: the other layers' shards and the block
  // above's whole gradients being reduce-scattered.
  l.keptPerLayer = 0, l.layerGradBytes = 25, l.reducingGradBytes = 100;
  l.gatheredPerLayer = 0, l.gatherPackBytes = 0;
  p = framePeak(phases, 1, 1, l);
  EXPECT_DOUBLE_EQ(p.paramGrads, 25 + 100);
}

TEST(MemoryTerm, FramePeakFirstStageBottomBackwardGradientFromAbove) {
  // A first pipeline stage (no head), full recomputation, one microbatch:
  // 2 layers keeping 5 bytes, gradients of 100. Of the head's 15 gradient
  // bytes at a backward, 12 are the top block's output gradient (the stage
  // boundary's).
  StepMemory phases = framePhases();
  FrameLayers l;
  l.layers = 2, l.inflight = 2, l.keptPerLayer = 5, l.layerGradBytes = 100;
  l.head = false, l.receivedGradBytes = 12;
  // The bottom backward holds the layer above's gradients (90 + 15, 40 -
  // 15, 100 beats the top's 90 + 15 + 5, 25, 0); its output gradient is
  // the layer above's input gradient, not received: 12 bytes move from
  // the activations to the gradients.
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.paramGrads, 100);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 15 - 12);
  EXPECT_DOUBLE_EQ(p.grads, 40 - 15 + 12);
  // One layer per stage: the bottom call is the top one, which receives.
  l.layers = 1, l.inflight = 1;
  p = framePeak(phases, 1, 1, l);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 15);
  EXPECT_DOUBLE_EQ(p.grads, 40 - 15);
}

TEST(MemoryTerm, FramePeakNextMicrobatchBackwardRegather) {
  // One layer per stage with the head (GPipe's last rank), 2 microbatches
  // in flight keeping 50 bytes, SP residuals re-gathered (60): the top
  // backward prefetches the next backward call's gather only when one
  // follows (90 + 50 + 40 = 180 + 8 against the head's 100 + 50 + 10).
  StepMemory phases = framePhases();
  phases[static_cast<unsigned>(StepPhase::Head)].activation = {100, 0};
  FrameLayers l;
  l.layers = 1, l.inflight = 2, l.microbatches = 2, l.keptPerLayer = 50;
  l.regather = 60;
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 50);
  l.backwardFollows = true;
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 50 + 60);
}

TEST(MemoryTerm, FramePeakZero3PipelineEnds) {
  StepMemory phases = framePhases();
  FrameLayers l;
  // A last stage's held head parameters (200) with an unwaited send (30)
  // at the backward: 90 + 50 + 200 + 30 there beats the head.
  l.layers = 2, l.inflight = 2, l.keptPerLayer = 50, l.microbatches = 2;
  l.heldRootBytes = 200, l.sendBytes = 30;
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 370);
  // Its last microbatch: dead after the head backward, the head wins.
  l.rootForwardOnly = true;
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::Head);
  EXPECT_DOUBLE_EQ(p.activations, 120 + 50 + 200);

  // One layer per stage: a backward call prefetches the next
  // microbatch's gather (20 gathered, 10 packed) only when one follows.
  l = FrameLayers();
  l.gatheredPerLayer = 20, l.gatherPackBytes = 10;
  EXPECT_EQ(framePeak(phases, 1, 1, l).phase, StepPhase::Head);
  l.laterBlockCall = true;
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 20 + 30);

  // A first stage's bottom backward before a later forward: the other
  // microbatch's layers (2 of 4 in flight, 12 each), the block above's
  // input gradient (5) as a gradient, the forward's whole gather (120)
  // prefetched instead of the re-run's (6).
  l = FrameLayers();
  l.layers = 2, l.inflight = 4, l.keptPerLayer = 12, l.head = false;
  l.microbatches = 4, l.gatheredPerLayer = 20, l.gatherPackBytes = 100;
  l.rerunCalls = true, l.rerunGatherBytes = 6, l.boundaryBytes = 5;
  EXPECT_EQ(framePeak(phases, 1, 1, l).phase, StepPhase::BlockForward);
  l.bottomBeforeForward = true;
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 15 + 36 - 12 - 5 + 20 + 120);
  EXPECT_DOUBLE_EQ(p.grads, 40 - 15 + 5);
}

TEST(MemoryTerm, FramePeakZero3FullRecomputationMiddleBackward) {
  // ZeRO-3, full recomputation, one microbatch: 4 layers keeping 5 bytes
  // each, gradient shards of 100, gathered blocks of 50 (packed 25).
  StepMemory phases = framePhases();
  FrameLayers l;
  l.layers = 4, l.inflight = 4, l.keptPerLayer = 5, l.layerGradBytes = 100;
  l.reducingGradBytes = 200, l.gatheredPerLayer = 50, l.gatherPackBytes = 25;
  // Without re-run calls the bottom backward holds the 3 shards and the
  // block above's whole gradients: 90 + 50 + 40 + 500 (+ 8).
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.paramGrads, 500);
  EXPECT_DOUBLE_EQ(p.activations, 140);
  // Each backward follows its re-run, after which the block above's
  // reduce-scatter is waited; a backward call prefetches the next re-run's
  // 150 bytes. The second-to-last backward call wins: the layer below's 5
  // kept bytes, its gathered block, the prefetch and 2 shards: 90 + 5 + 50
  // + 150 + 40 + 200 = 535 against the bottom's 90 + 50 + 40 + 300 = 480.
  l.rerunCalls = true, l.rerunGatherBytes = 150;
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 295);
  EXPECT_DOUBLE_EQ(p.grads, 40);
  EXPECT_DOUBLE_EQ(p.paramGrads, 200);
}

TEST(MemoryTerm, FramePeakZero3MiddleMicrobatch) {
  // ZeRO-3, full recomputation, four microbatches: 2 layers keeping 5
  // bytes, 300 bytes of sums, gathered blocks of 50 (packed 25), re-runs
  // gathering 30, 100 bytes of non-block parameters gathered once.
  StepMemory phases = framePhases();
  FrameLayers l;
  l.layers = 2, l.inflight = 2, l.microbatches = 4, l.keptPerLayer = 5;
  l.accumulated = 300, l.gatheredPerLayer = 50, l.gatherPackBytes = 25;
  l.rerunCalls = true, l.rerunGatherBytes = 30, l.heldRootBytes = 100;
  // A middle microbatch's bottom backward prefetches the next microbatch's
  // first forward call (a whole block): 90 + 50 + 100 + 75, 40, 300 beats
  // the forward's 100 + 5 + 100 + 50 + 75, 0, 300 and the top backward's
  // 90 + 5 + 100 + 50 + 30, 40, 300.
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 315);
  EXPECT_DOUBLE_EQ(p.grads, 40);
  EXPECT_DOUBLE_EQ(p.paramGrads, 300);
  // Two microbatches have no middle one: the forward (230, 0, 300) beats
  // the bottom backward's 90 + 50, 40, 300.
  l.microbatches = 2, l.heldRootBytes = 0;
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockForward);
  EXPECT_DOUBLE_EQ(p.activations, 230);
}

TEST(MemoryTerm, FramePeakZeroReduceScatteredSums) {
  // ZeRO-1/2, four microbatches: 4 layers keeping 5 bytes, 300 bytes of
  // sums, a layer's sum 100 bytes and its shard 50.
  StepMemory phases = framePhases();
  FrameLayers l;
  l.layers = 4, l.inflight = 4, l.microbatches = 4, l.keptPerLayer = 5;
  l.accumulated = 300, l.sumReduceBytes = 100, l.sumShardBytes = 50;
  // The last microbatch's second backward call: the block above's sum is
  // being reduce-scattered into its shard: 90 + 10, 40, 300 + 50 beats the
  // top backward's 90 + 15, 40, 300 and the head's 135, 10, 300.
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 100);
  EXPECT_DOUBLE_EQ(p.paramGrads, 350);
  // Under full recomputation the sum was waited before that call: 300 -
  // 100 + 50 there, so the sums alone (300) at the peak.
  l.rerunCalls = true;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).paramGrads, 300);
}

TEST(MemoryTerm, FramePeakZeroReduceScatteredHeadOnlySums) {
  // As above, with 4 bytes of head-only parameters (the final norm; 8 of
  // their sum among the 300): their sum is reduce-scattered before the top
  // block's backward, so at the second backward call the rank holds its
  // shard (4 of 8), and the one-block phase's head-only gradient and its
  // reduction's result (2 x 4 of its 40) are dead.
  StepMemory phases = framePhases();
  FrameLayers l;
  l.layers = 4, l.inflight = 4, l.microbatches = 4, l.keptPerLayer = 5;
  l.accumulated = 300, l.sumReduceBytes = 100, l.sumShardBytes = 50;
  l.headOnlyGradBytes = 4, l.headOnlyGradSumBytes = 8;
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 100);
  EXPECT_DOUBLE_EQ(p.grads, 40 - 8);
  EXPECT_DOUBLE_EQ(p.paramGrads, 350 - 4);
}

TEST(MemoryTerm, FramePeakFirstBackwardBelowTheTop) {
  // GPipe's last rank, 2 layers, 4 microbatches all in flight at its first
  // backward (nothing summed yet), 50 kept bytes per layer: its second call
  // (the bottom, another microbatch's backward next) holds the top layer's
  // first gradients (100) and one layer fewer kept: 90 + 300, 40, 100
  // beats the top backward's 90 + 350, 40 and the head's 120 + 350, 10.
  StepMemory phases = framePhases();
  FrameLayers l;
  l.layers = 2, l.inflight = 8, l.microbatches = 4, l.keptPerLayer = 50;
  l.layerGradBytes = 100, l.laterBlockCall = true;
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 390);
  EXPECT_DOUBLE_EQ(p.grads, 40);
  EXPECT_DOUBLE_EQ(p.paramGrads, 100);
  // Under ZeRO-2/3 a layer's gradient is a shard at one microbatch (50),
  // but the start of its sum here: whole (layerSumBytes).
  l.layerGradBytes = 50, l.layerSumBytes = 100;
  p = framePeak(phases, 1, 1, l);
  EXPECT_DOUBLE_EQ(p.activations, 390);
  EXPECT_DOUBLE_EQ(p.paramGrads, 100);
}

TEST(MemoryTerm, FramePeakBottomBackwardBeforeAForward) {
  // 1F1B's last rank under ZeRO-3 with full recomputation, one layer, the
  // first of two microbatches (nothing summed), the head's gathered
  // parameters held (100): its backward call is followed by the next
  // microbatch's forward, so it prefetches that forward's whole gather
  // (packed 8 + 50), not a re-run's (30): 90 + 50 + 100 + 58 = 298 (270
  // before), with the phase's 40 above the forward's 100 + 100 + 50 + 58.
  StepMemory phases = framePhases();
  FrameLayers l;
  l.layers = 1, l.inflight = 1, l.microbatches = 2, l.keptPerLayer = 5;
  l.heldRootBytes = 100, l.laterBlockCall = true;
  l.rerunCalls = true, l.rerunGatherBytes = 30;
  l.gatheredPerLayer = 50, l.gatherPackBytes = 8;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).activations, 270);
  l.forwardAfterBottom = true;
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 298);
  EXPECT_DOUBLE_EQ(p.grads, 40);
  EXPECT_DOUBLE_EQ(p.paramGrads, 0);
}

TEST(MemoryTerm, FramePeakBottomBackwardBeforeAnotherBackward) {
  // GPipe's last rank under ZeRO-3 with full recomputation, 2 layers, 3
  // microbatches in flight (6 layers, 5 kept bytes each), the head's
  // gathered parameters held (100): a bottom backward is followed by the
  // next microbatch's top backward, so it prefetches that call's re-run
  // gather (30), not a forward's whole gather (packed 8 + 50), and holds
  // the other microbatches' kept bytes (4 layers): 90 + 50 + 100 + 20 + 30
  // = 290, below the top backward's 90 + 25 + 100 + 50 + 30 = 295 (the
  // last forward: 100 + 125 + 50 + 58, no phase gradients).
  StepMemory phases = framePhases();
  FrameLayers l;
  l.layers = 2, l.inflight = 6, l.microbatches = 4, l.keptPerLayer = 5;
  l.accumulated = 10, l.heldRootBytes = 100, l.laterBlockCall = true;
  l.rerunCalls = true, l.rerunGatherBytes = 30;
  l.gatheredPerLayer = 50, l.gatherPackBytes = 8;
  l.backwardFollows = true;
  FramePeak p = framePeak(phases, 1, 1, l);
  // Without it, the bottom call with a forward's gather: 90 + 50 + 100 + 58.
  EXPECT_DOUBLE_EQ(p.activations, 298);
  l.backwardAfterBottom = true;
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 295);
  EXPECT_DOUBLE_EQ(p.grads, 40);
  EXPECT_DOUBLE_EQ(p.paramGrads, 10);
  // One layer per rank (3 microbatches in flight): the bottom call is the
  // top one, prefetching the next re-run's gather (30), not a forward's
  // (58): 90 + 50 + 100 + 30 = 270 against the top's 90 + 10 + 100 + 50
  // + 30 = 280 (before, 90 + 50 + 100 + 58 = 298 won).
  l.layers = 1, l.inflight = 3;
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 280);
}

TEST(MemoryTerm, FramePeakHeadRankBackwardPasses) {
  // Interleaved's last rank under ZeRO-3 with full recomputation: a
  // backward pass holds the head's gathered parameters (100), a next
  // forward's whole gather (packed 25 + 50) in place of a re-run's (30),
  // and no received tied share (the head computes its own, a phase
  // gradient).
  StepMemory phases = framePhases();
  FrameLayers l;
  l.layers = 2, l.inflight = 1, l.keptPerLayer = 5, l.passesOnly = true;
  l.rerunCalls = true, l.rerunGatherBytes = 30;
  l.gatheredPerLayer = 50, l.gatherPackBytes = 25;
  l.tiedGradBytes = 8, l.boundaryBytes = 4, l.rootLastBytes = 100;
  WeightPass w;
  w.inflight = 3, w.sentActivations = 1, w.forwardNext = true;
  w.headOpsLeft = true;
  l.backwardPasses = {w};
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 2 * 5 + 4 + 50 + 75 + 100);
  EXPECT_DOUBLE_EQ(p.grads, 40);
  // An earlier stage's backward before another backward: its output
  // gradient is received (the phase's head gradients, 15, as activations,
  // less the tied share they hold), the next call a re-run's.
  w.forwardNext = false, w.receivedOutputGrad = true;
  l.backwardPasses = {w};
  p = framePeak(phases, 1, 1, l);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 15 - 8 + 2 * 5 + 4 + 50 + 30 + 100);
  EXPECT_DOUBLE_EQ(p.grads, 40 - 15);
}

TEST(MemoryTerm, FramePeakUnwaitedInputGradientSends) {
  // A last pipeline stage of two microbatches: its first microbatch's
  // input gradient, sent back and waited for at the end of the step, is
  // live (gradient bytes) at the last microbatch's bottom backward.
  StepMemory phases = framePhases();
  FrameLayers l;
  l.layers = 2, l.inflight = 2, l.microbatches = 2, l.keptPerLayer = 5;
  l.layerGradBytes = 100, l.accumulated = 300, l.regather = 10;
  // Without it the top backward (90 + 5 kept + 10 re-gathered, 40, 300)
  // wins over the head (120 + 5, 10, 300).
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_DOUBLE_EQ(p.activations, 105);
  EXPECT_DOUBLE_EQ(p.grads, 40);
  // 64 bytes sent at the bottom backward: 90 + 40 + 64 > 145.
  l.sentGradBytes = 64;
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 90);
  EXPECT_DOUBLE_EQ(p.grads, 40 + 64);
  EXPECT_DOUBLE_EQ(p.paramGrads, 300);
  // 1F1B: also at the forward, head and top backward (one microbatch in
  // flight there): the top backward wins again, with them.
  l.sentGradInflightBytes = 64;
  p = framePeak(phases, 1, 1, l);
  EXPECT_DOUBLE_EQ(p.activations, 105);
  EXPECT_DOUBLE_EQ(p.grads, 40 + 64);
  // The tail has waited for them.
  l.layerGradBytes = 1000;
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::Tail);
  EXPECT_DOUBLE_EQ(p.grads, 60);
}

TEST(MemoryTerm, FramePeakDeferredWeightPassesAndKeptHeads) {
  // A last stage of a zero-bubble schedule, 2 layers, 300 bytes of sums.
  StepMemory phases = framePhases();
  FrameLayers l;
  l.layers = 2, l.inflight = 2, l.microbatches = 4, l.keptPerLayer = 50;
  l.accumulated = 300;
  // Without W passes: the head (120 + 50 kept, 10 + 300).
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::Head);
  EXPECT_DOUBLE_EQ(p.activations, 170);
  // A W with 4 layers in flight, 3 pending and 2 layers' sums, 70 input
  // bytes each, 30 of layer gradients: 90 + 3·50 activations, 210 of
  // pending inputs and no phase gradient bytes, 30 + 2·30 (the pass's
  // sums, not `accumulated`): 540 + 8 beats the head's 480 + 8. A W with
  // fewer layers in flight and pending does not count.
  l.weightInputBytes = 70, l.weightGradBytes = 30;
  WeightPass big, small;
  big.inflight = 4, big.pending = 3, big.summedLayers = 2;
  small.inflight = 2, small.pending = 1;
  l.weightPasses = {big, small};
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 150);
  EXPECT_DOUBLE_EQ(p.grads, 210);
  EXPECT_DOUBLE_EQ(p.paramGrads, 90);
  // What the rank holds there, priced per item: a forward send (64) and a
  // microbatch's head values (400) and 3 token slices (4 each) as
  // activations; 2 input-gradient sends and 2 tied head shares (16 each)
  // as gradients; the embedding side's sums (12) and 2 head-only
  // gradients (2 each) as parameter gradients.
  l.boundaryBytes = 64, l.tokenBytes = 4, l.headKeptBytes = 400;
  l.tiedGradBytes = 16, l.embeddingGradBytes = 12, l.headOnlyGradSumBytes = 2;
  l.weightPasses[0].sentActivations = 1, l.weightPasses[0].sentGrads = 2;
  l.weightPasses[0].tokenSlices = 3, l.weightPasses[0].heads = 1;
  l.weightPasses[0].tiedShares = 2, l.weightPasses[0].embeddingSums = true;
  l.weightPasses[0].headGrads = 2;
  p = framePeak(phases, 1, 1, l);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 150 + 64 + 400 + 12);
  EXPECT_DOUBLE_EQ(p.grads, 210 + 128 + 32);
  EXPECT_DOUBLE_EQ(p.paramGrads, 90 + 12 + 4);
  // Full recomputation: the residuals the re-run restored (7 per layer)
  // stay until each pending layer's W; this W's own are its phase's.
  l.recomputedBytes = 7;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).activations,
                   90 + 150 + 64 + 400 + 12 + 2 * 7);
  // Selective recomputation: the W call's own recomputed norms and
  // activations (9) at each W, filed with its gradients (W is a gradient
  // function).
  l.recomputedBytes = 0, l.weightFrameBytes = 9;
  p = framePeak(phases, 1, 1, l);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 150 + 64 + 400 + 12);
  EXPECT_DOUBLE_EQ(p.grads, 210 + 128 + 32 + 9);
  l.weightFrameBytes = 0;
  // A pending W's block output gradient received from another rank (64) is
  // a received buffer: an activation, no gradient.
  l.weightPasses[0].receivedInputs = 1;
  p = framePeak(phases, 1, 1, l);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 150 + 64 + 400 + 12 + 64);
  EXPECT_DOUBLE_EQ(p.grads, 210 + 128 + 32 - 64);
  l.weightPasses[0].receivedInputs = 0;
  // The first stage's whole backward next: its re-gathers (5) are
  // prefetched, unless a full recomputation's re-run call comes first.
  l.weightRegatherBytes = 5;
  l.weightPasses[0].prefetchedWhole = 1;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).activations,
                   90 + 150 + 64 + 400 + 12 + 5);
  l.rerunCalls = true;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).activations,
                   90 + 150 + 64 + 400 + 12);
  l.rerunCalls = false, l.weightRegatherBytes = 0;
  // GPipe: another microbatch's kept head values (400) are live from the
  // forward through the backward: the head (120 + 50 + 400, 10).
  l.weightPasses.clear();
  l.headsKept = 400;
  p = framePeak(phases, 1, 1, l);
  EXPECT_DOUBLE_EQ(p.activations, 120 + 50 + 400);
  EXPECT_EQ(p.phase, StepPhase::Head);
}

/// Expects each count of `got` to equal `want`'s.
void expectWeightPass(const WeightPass &got, const WeightPass &want) {
  EXPECT_DOUBLE_EQ(got.inflight, want.inflight);
  EXPECT_DOUBLE_EQ(got.pending, want.pending);
  EXPECT_DOUBLE_EQ(got.sentActivations, want.sentActivations);
  EXPECT_DOUBLE_EQ(got.sentGrads, want.sentGrads);
  EXPECT_DOUBLE_EQ(got.heldGrads, want.heldGrads);
  EXPECT_DOUBLE_EQ(got.tokenSlices, want.tokenSlices);
  EXPECT_DOUBLE_EQ(got.heads, want.heads);
  EXPECT_DOUBLE_EQ(got.tiedShares, want.tiedShares);
  EXPECT_DOUBLE_EQ(got.receivedShares, want.receivedShares);
  EXPECT_DOUBLE_EQ(got.summedLayers, want.summedLayers);
  EXPECT_EQ(got.embeddingSums, want.embeddingSums);
  EXPECT_DOUBLE_EQ(got.completeLayers, want.completeLayers);
  EXPECT_DOUBLE_EQ(got.justCompleteLayers, want.justCompleteLayers);
  EXPECT_DOUBLE_EQ(got.completeBeforeRerunLayers,
                   want.completeBeforeRerunLayers);
  EXPECT_EQ(got.receivedOutputGrad, want.receivedOutputGrad);
  EXPECT_DOUBLE_EQ(got.nextStageBackward, want.nextStageBackward);
  EXPECT_DOUBLE_EQ(got.headGrads, want.headGrads);
  EXPECT_DOUBLE_EQ(got.receivedInputs, want.receivedInputs);
  EXPECT_DOUBLE_EQ(got.prefetchedWhole, want.prefetchedWhole);
}

TEST(MemoryTerm, FramePeakInterleavedBackwardPasses) {
  // An interleaved first rank (no head), 2 layers, 8 microbatches: at a
  // whole backward with 5 layers in flight, 4 token slices (4 each), 2
  // forward sends (64 each) and 2 tied shares received (16 each; the
  // phase's received gradients, 15, hold one) as activations: 90 + 15 +
  // 4·50 + 16 + 128 + 16; the phase's 40 - 15 and an input-gradient send as
  // gradients; 2 layers' sums (30 each) and the embedding's (12).
  StepMemory phases = framePhases();
  FrameLayers l;
  l.head = false, l.layers = 2, l.inflight = 2, l.microbatches = 8;
  l.keptPerLayer = 50, l.boundaryBytes = 64, l.tokenBytes = 4;
  l.tiedGradBytes = 16, l.embeddingGradBytes = 12, l.weightGradBytes = 30;
  WeightPass w;
  w.inflight = 5, w.tokenSlices = 4, w.sentActivations = 2, w.sentGrads = 1;
  w.receivedShares = 2, w.summedLayers = 2, w.embeddingSums = true;
  l.backwardPasses = {w};
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 15 + 200 + 16 + 128 + 16);
  EXPECT_DOUBLE_EQ(p.grads, 25 + 64);
  EXPECT_DOUBLE_EQ(p.paramGrads, 60 + 12);
  // With SP the next call's re-gathered residuals (100) only where it
  // prefetches them, not under full recomputation (its re-run comes first).
  l.weightRegatherBytes = 100;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).activations,
                   90 + 15 + 200 + 16 + 128 + 16);
  l.backwardPasses[0].prefetched = 1;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).activations,
                   90 + 15 + 200 + 16 + 128 + 16 + 100);
  l.rerunCalls = true;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).activations,
                   90 + 15 + 200 + 16 + 128 + 16);
  // ZeRO-3 under full recomputation: the next re-run's gather (50), not
  // at the rank's last block call.
  l.rerunGatherBytes = 50;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).activations,
                   90 + 15 + 200 + 16 + 128 + 16 + 50);
  l.backwardPasses[0].lastCall = true;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).activations,
                   90 + 15 + 200 + 16 + 128 + 16);
  l.backwardPasses[0].lastCall = false;
  l.rerunGatherBytes = 0;
  l.rerunCalls = false;
  l.backwardPasses[0].prefetched = 0;
  l.weightRegatherBytes = 0;
  // ZeRO-1/2/3 over dp > 1: a complete layer's sum is a shard (10), but
  // the one reduced in the call before is still whole too (no re-run call
  // between them).
  l.completeSumShardBytes = 10;
  l.backwardPasses[0].completeLayers = 1;
  l.backwardPasses[0].justCompleteLayers = 1;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).paramGrads, 60 + 10 + 12);
  l.rerunCalls = true;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).paramGrads, 30 + 10 + 12);
}

TEST(MemoryTerm, FramePeakWeightPassCompleteSumShards) {
  // A W pass with 2 layers' sums (30 each), one complete: whole without
  // ZeRO; under ZeRO-1/2/3 over dp > 1 its shard (10), whole too while its
  // reduce-scatter is waited after this W (completed by the op before, or
  // under full recomputation with no backward call's re-run between).
  StepMemory phases = framePhases();
  FrameLayers l;
  l.head = false, l.layers = 1, l.inflight = 1, l.weightGradBytes = 30;
  WeightPass w;
  w.inflight = 1, w.pending = 1, w.summedLayers = 2, w.completeLayers = 1;
  l.weightPasses = {w};
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).paramGrads, 30 + 60);
  l.completeSumShardBytes = 10;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).paramGrads, 30 + 30 + 10);
  l.weightPasses[0].justCompleteLayers = 1;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).paramGrads, 30 + 60 + 10);
  l.weightPasses[0].justCompleteLayers = 0;
  l.weightPasses[0].completeBeforeRerunLayers = 1;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).paramGrads, 30 + 30 + 10);
  l.rerunCalls = true;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).paramGrads, 30 + 60 + 10);
}

TEST(MemoryTerm, FramePeakWeightPassPrefetchesTheNextStagesGather) {
  // ZeRO-3: a W that another stage's backward follows (ZB-V's first rank)
  // holds that call's gather, started one call ahead: the packed shard (7)
  // and the gathered layer (14); under full recomputation the re-run's.
  StepMemory phases = framePhases();
  FrameLayers l;
  l.head = false, l.layers = 1, l.inflight = 1, l.weightGradBytes = 30;
  l.gatherPackBytes = 7, l.gatheredPerLayer = 14, l.weightInputBytes = 1000;
  WeightPass w;
  w.inflight = 1, w.pending = 1;
  l.weightPasses = {w};
  const double without = framePeak(phases, 1, 1, l).activations;
  l.weightPasses[0].nextStageBackward = 1;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).activations, without + 21);
  l.rerunCalls = true, l.rerunGatherBytes = 5;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).activations, without + 5);
}

TEST(MemoryTerm, FramePeakWeightPassReadsTheSplitWeightCall) {
  // cp with SP: the whole backward call's phase (90) holds the residual I
  // gathers for itself, the split one-block step's W call (80) does not,
  // and of the whole call's re-gathers (25) the next W's are its own: the
  // one-block I holds 30 for it, 10 of them its send buffer.
  StepMemory phases = framePhases();
  FrameLayers l;
  l.head = false, l.layers = 2, l.inflight = 2, l.keptPerLayer = 50;
  l.weightGradBytes = 30, l.weightInputBytes = 1000;
  l.weightRegatherBytes = 25;
  WeightPass w;
  w.inflight = 2, w.pending = 1, w.prefetched = 1;
  l.weightPasses = {w};
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 50 + 25);
  PhaseMemory &weight = phases[static_cast<unsigned>(StepPhase::BlockWeight)];
  weight.activation = {80, 0}, weight.other = {8, 0};
  PhaseMemory &input = phases[static_cast<unsigned>(StepPhase::BlockInput)];
  input.nextCall = {30, 0}, input.nextCallSent = {10, 0};
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockWeight);
  EXPECT_DOUBLE_EQ(p.activations, 80 + 50 + 20);
}

TEST(MemoryTerm, FramePeakSplitRankHasNoWholeBackward) {
  // A rank that runs every backward as split I and W calls (ZB-V's last
  // rank) is scored at those: with cp the whole backward call's phase
  // (90 activations, 40 gradients) is heavier than its I call's (60, 30)
  // but never runs there.
  StepMemory phases = framePhases();
  PhaseMemory &input = phases[static_cast<unsigned>(StepPhase::BlockInput)];
  input.activation = {60, 0}, input.grad = {30, 0}, input.other = {8, 0};
  FrameLayers l;
  l.head = false, l.layers = 1, l.inflight = 2, l.keptPerLayer = 50;
  l.inputPasses = {InputPass()};
  FramePeak whole = framePeak(phases, 1, 1, l);
  EXPECT_EQ(whole.phase, StepPhase::BlockBackward);
  l.splitBackwards = true;
  FramePeak split = framePeak(phases, 1, 1, l);
  EXPECT_EQ(split.phase, StepPhase::BlockForward);
  EXPECT_LT(split.total(), whole.total());
  // Where its I calls are not scored (no split profile), the whole call
  // stands in for them, unless the rank's whole backwards are passes of
  // their own (ZB-V's first rank), or under ZeRO-3.
  phases[static_cast<unsigned>(StepPhase::BlockInput)] = PhaseMemory();
  EXPECT_EQ(framePeak(phases, 1, 1, l).phase, StepPhase::BlockBackward);
  WeightPass b;
  b.inflight = 1;
  l.backwardPasses = {b};
  FramePeak passes = framePeak(phases, 1, 1, l);
  EXPECT_LT(passes.total(), whole.total());
  l.gatheredPerLayer = 1;
  EXPECT_EQ(framePeak(phases, 1, 1, l).phase, StepPhase::BlockBackward);
  EXPECT_GT(framePeak(phases, 1, 1, l).total(), passes.total() + 1);
}

TEST(MemoryTerm, FramePeakInputPassHoldsCompleteSumsAsShards) {
  // ZeRO-1/2 with complete sums reduce-scattered per stage: at an I after a
  // full recomputation's re-run, a layer whose sum is complete holds its
  // shard (10), not the whole sum (30).
  StepMemory phases = framePhases();
  PhaseMemory &input = phases[static_cast<unsigned>(StepPhase::BlockInput)];
  input.activation = {500, 0}, input.grad = {70, 0}, input.other = {8, 0};
  FrameLayers l;
  l.layers = 1, l.inflight = 1, l.weightGradBytes = 30;
  InputPass in;
  in.held.summedLayers = 1, in.held.completeLayers = 1;
  l.inputPasses = {in};
  FramePeak whole = framePeak(phases, 1, 1, l);
  EXPECT_EQ(whole.phase, StepPhase::BlockInput);
  EXPECT_DOUBLE_EQ(whole.paramGrads, 30);
  l.completeSumShardBytes = 10, l.rerunCalls = true;
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockInput);
  EXPECT_DOUBLE_EQ(p.paramGrads, 10);
}

TEST(MemoryTerm, ForwardPassesHoldTheEarlierMicrobatchsPendingW) {
  using autoshard::pipeline::buildSchedule;
  using autoshard::pipeline::ScheduleKind;
  // ZB-H1, 4 ranks, 2 microbatches: the last rank runs F0 I0 F1 I1 W0 W1.
  // Before F1: microbatch 0's W pending (its layer in flight), its input
  // gradient and tied share sent and not waited, its head-only gradients
  // made and not yet added to the sum (W0 adds them).
  auto zbh1 = buildSchedule(ScheduleKind::ZBH1, 4, 2, 1);
  ASSERT_TRUE(zbh1.ok());
  std::vector<std::vector<WeightPass>> passes = forwardPassesOf(*zbh1, 1, true);
  ASSERT_EQ(passes.size(), 4u);
  ASSERT_EQ(passes[3].size(), 2u);
  const WeightPass &second = passes[3][1];
  WeightPass want;
  want.inflight = 1, want.pending = 1, want.sentGrads = 1;
  want.tiedShares = 1, want.headGrads = 1, want.headOpsLeft = true;
  EXPECT_TRUE(second == want);
  // Scored on a split rank: the forward phase with those (W inputs 70 B,
  // boundary 5, tied share 3, head-only sum 2), the layer in flight's kept
  // bytes (11) and the gathers (13 + 17 prefetched).
  StepMemory phases = framePhases();
  FrameLayers l;
  l.head = true, l.layers = 1, l.inflight = 2, l.keptPerLayer = 11;
  l.weightInputBytes = 70, l.boundaryBytes = 5, l.tiedGradBytes = 3;
  l.headOnlyGradSumBytes = 2, l.gatheredPerLayer = 13, l.gatherPackBytes = 4;
  l.forwardPasses = {second};
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockForward);
  EXPECT_DOUBLE_EQ(p.activations, 100 + 11 + 13 + 17);
  EXPECT_DOUBLE_EQ(p.grads, 70 + 5 + 3);
  EXPECT_DOUBLE_EQ(p.paramGrads, 2);
}

TEST(MemoryTerm, WholeBackwardPassBeforeAForwardPrefetchesItsWholeGather) {
  using autoshard::pipeline::buildSchedule;
  using autoshard::pipeline::ScheduleKind;
  // ZB-V, 2 ranks, 4 microbatches: rank 0's first-stage backward of
  // microbatch 1 (I0, whole) is followed by W0 (no call) and F3 of
  // microbatch 3: a forward, whose whole gather it prefetches.
  auto zbv = buildSchedule(ScheduleKind::ZBV, 2, 4, 2);
  ASSERT_TRUE(zbv.ok());
  std::vector<std::vector<WeightPass>> passes = backwardPassesOf(*zbv, 1, true);
  EXPECT_TRUE(llvm::any_of(passes[0],
                           [](const WeightPass &w) { return w.forwardNext; }));
  EXPECT_TRUE(
      llvm::any_of(passes[0], [](const WeightPass &w) { return w.lastCall; }));
}

TEST(MemoryTerm, WeightPassesFollowTheTransfers) {
  using autoshard::pipeline::buildSchedule;
  using autoshard::pipeline::ScheduleKind;
  // ZB-V, 2 ranks, 4 microbatches, one layer per stage: rank 0 runs the
  // first and the last stage (stages 0 and 3), its program F0 F0 F0 F3 I3
  // W3 F3 I3 W3 F0 I0 W0 F3 I3 W3 ... (microbatches in order). At W3 of
  // microbatch 2, as the compiled program holds it: 4 layers in flight
  // (stage 0's microbatches 1-3, stage 3's 2), 1 pending W; stage 0's
  // forward send of microbatch 3 is waited at its next receive from rank 1
  // that rank 1 sent after it (the gradient of stage 0's microbatch 1):
  // live; the input-gradient sends of microbatches 1 and 2 likewise; the
  // token slices of stage 0's 3 microbatches in flight; the tied head
  // shares of microbatches 1 and 2 (0's went into the sum that stage 0's
  // first backward made); sums of stage 3's and stage 0's layer; one
  // head-only sum (W3 of 2 added 2's at its start).
  auto zbv = buildSchedule(ScheduleKind::ZBV, 2, 4, 2);
  ASSERT_TRUE(zbv.ok());
  std::vector<std::vector<WeightPass>> passes = weightPassesOf(*zbv, 1, true);
  ASSERT_EQ(passes.size(), 2u);
  ASSERT_EQ(passes[0].size(), 4u);
  WeightPass want;
  want.inflight = 4, want.pending = 1, want.sentActivations = 1;
  want.sentGrads = 2, want.tokenSlices = 3, want.heads = 0;
  want.tiedShares = 2, want.summedLayers = 2, want.embeddingSums = true;
  want.headGrads = 1;
  // The first stage's backward (whole, at its I) follows it.
  want.prefetchedWhole = 1, want.nextStageBackward = 1;
  expectWeightPass(passes[0][2], want);
  // After it a head op (stage 3's microbatch 3) but no first-stage
  // forward; after W3 of microbatch 0 both; after the last W3 neither.
  EXPECT_TRUE(passes[0][2].headOpsLeft);
  EXPECT_FALSE(passes[0][2].firstForwardsLeft);
  EXPECT_TRUE(passes[0][0].headOpsLeft);
  EXPECT_TRUE(passes[0][0].firstForwardsLeft);
  EXPECT_FALSE(passes[0][3].headOpsLeft);
  EXPECT_FALSE(passes[0][3].firstForwardsLeft);
  // Before stage 0's first backward there is no sum: at W3 of microbatch
  // 0 its share is pending.
  EXPECT_DOUBLE_EQ(passes[0][0].tiedShares, 1);
  EXPECT_FALSE(passes[0][0].embeddingSums);
  // Without a tied embedding there are no head shares.
  EXPECT_DOUBLE_EQ(weightPassesOf(*zbv, 1, false)[0][2].tiedShares, 0);
  // Rank 1 runs stages 1 and 2, F1 F2 F1 F2 I2 W2 ... at 2 microbatches:
  // at its first W 4 layers in flight, stage 2's forward send of
  // microbatch 1 unwaited (rank 0 answers the first one), and the input
  // gradient I2 passed to stage 1 on the same rank, held until I1; W2's
  // input, the block output gradient, came from stage 3 on rank 0.
  zbv = buildSchedule(ScheduleKind::ZBV, 2, 2, 2);
  ASSERT_TRUE(zbv.ok());
  want = WeightPass();
  want.inflight = 4, want.pending = 1, want.sentActivations = 1;
  want.heldGrads = 1, want.receivedInputs = 1;
  // Stage 1's I follows it.
  want.nextStageBackward = 1;
  expectWeightPass(weightPassesOf(*zbv, 1, true)[1][0], want);
  // One microbatch: rank 0 runs F0 F3 I3 W3 I0 W0; the first stage's
  // backward (whole, at I0) follows W3.
  zbv = buildSchedule(ScheduleKind::ZBV, 2, 1, 2);
  ASSERT_TRUE(zbv.ok());
  passes = weightPassesOf(*zbv, 1, true);
  ASSERT_FALSE(passes[0].empty());
  EXPECT_DOUBLE_EQ(passes[0][0].prefetched, 0);
  EXPECT_DOUBLE_EQ(passes[0][0].prefetchedWhole, 1);
  EXPECT_DOUBLE_EQ(passes[0][0].nextStageBackward, 1);
  // Rank 1 runs F1 F2 I2 W2 I1 W1: at W1 stage 2's sum is complete (its
  // only W ran two ops before, a backward call I1 between).
  ASSERT_EQ(passes[1].size(), 2u);
  EXPECT_DOUBLE_EQ(passes[1][0].completeLayers, 0);
  EXPECT_DOUBLE_EQ(passes[1][1].summedLayers, 1);
  EXPECT_DOUBLE_EQ(passes[1][1].completeLayers, 1);
  EXPECT_DOUBLE_EQ(passes[1][1].justCompleteLayers, 0);
  EXPECT_DOUBLE_EQ(passes[1][1].completeBeforeRerunLayers, 0);

  // ZB-H1, 2 ranks, 4 microbatches, 2 layers per stage: the last rank
  // sends each microbatch's input gradient and tied head share to rank 0,
  // which receives them at its backward; they are waited after the next
  // forward input that rank 0 sends after that backward. At W of
  // microbatch 1: the sends of microbatches 1 and 2 are live (0's waited
  // at the forward input of microbatch 2), and the head-only gradients of
  // microbatch 2 and the sum of 0 and 1.
  auto zbh1 = buildSchedule(ScheduleKind::ZBH1, 2, 4, 1);
  ASSERT_TRUE(zbh1.ok());
  passes = weightPassesOf(*zbh1, 2, true);
  EXPECT_TRUE(passes[0].empty());
  ASSERT_GE(passes[1].size(), 2u);
  // Its program F0 I0 F1 I1 W0 F2 I2 W1 ...: 4 layers in flight and 4
  // pending (W1's and W2's), W0's 2 layers summed, no head values kept.
  want = WeightPass();
  want.inflight = 4, want.pending = 4, want.sentGrads = 2;
  want.tiedShares = 2, want.summedLayers = 2, want.headGrads = 2;
  expectWeightPass(passes[1][1], want);
}

TEST(MemoryTerm, InputPassesHoldThePendingLayersAbove) {
  using autoshard::pipeline::buildSchedule;
  using autoshard::pipeline::ScheduleKind;
  // ZB-H1, 2 ranks, 1 microbatch, 2 layers per stage: the last rank runs F0
  // I0 W0, its I a call per layer, top first. At the top I: 2 layers in
  // flight, nothing pending; at the bottom I the top layer's W inputs
  // pending, its output gradient the top's input gradient, W next.
  auto zbh1 = buildSchedule(ScheduleKind::ZBH1, 2, 1, 1);
  ASSERT_TRUE(zbh1.ok());
  std::vector<std::vector<InputPass>> passes = inputPassesOf(*zbh1, 2, true);
  EXPECT_TRUE(passes[0].empty());
  ASSERT_EQ(passes[1].size(), 2u);
  EXPECT_FALSE(passes[1][0].belowTop);
  EXPECT_TRUE(passes[1][0].laterBlockCall);
  EXPECT_DOUBLE_EQ(passes[1][0].held.inflight, 2);
  EXPECT_DOUBLE_EQ(passes[1][0].held.pending, 0);
  EXPECT_DOUBLE_EQ(passes[1][0].held.prefetchedWhole, 1);
  EXPECT_TRUE(passes[1][1].belowTop);
  EXPECT_DOUBLE_EQ(passes[1][1].held.pending, 1);
  EXPECT_DOUBLE_EQ(passes[1][1].held.prefetched, 1);
  EXPECT_DOUBLE_EQ(passes[1][1].held.heads, 0);
  // ZeRO-3: the top I prefetches the bottom I's gather; the bottom I's
  // next call is W, which reads no parameters.
  EXPECT_TRUE(passes[1][0].prefetchesGather);
  EXPECT_FALSE(passes[1][1].prefetchesGather);

  // Scored from the I call's phase: at the bottom I of the last rank,
  // 90 + 50 (the other layer's kept bytes) activations; the I call's own
  // 55 gradients (its 15 head gradients are the top I's: below it the
  // output gradient is the block above's input gradient, 15), and the
  // pending layer's W inputs (25); the whole backward call's phase (40
  // gradients) is lighter.
  StepMemory phases = framePhases();
  PhaseMemory &input = phases[static_cast<unsigned>(StepPhase::BlockInput)];
  input.activation = {90, 0}, input.grad = {70, 0}, input.other = {8, 0};
  input.headGrad = {15, 0};
  FrameLayers l;
  l.layers = 2, l.inflight = 2, l.keptPerLayer = 50, l.layerGradBytes = 30;
  l.weightInputBytes = 25, l.boundaryBytes = 15;
  FramePeak before = framePeak(phases, 1, 1, l);
  l.inputPasses = passes[1];
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockInput);
  EXPECT_DOUBLE_EQ(p.activations, 140);
  EXPECT_DOUBLE_EQ(p.grads, 55 + 15 + 25);
  EXPECT_GT(p.total(), before.total());
  // Without the I call's phase (not compiled) there is no candidate.
  phases[static_cast<unsigned>(StepPhase::BlockInput)] = PhaseMemory();
  EXPECT_EQ(framePeak(phases, 1, 1, l).phase, before.phase);
}

TEST(MemoryTerm, InputPassesUnderZero3HoldTheirGathers) {
  using autoshard::pipeline::buildSchedule;
  using autoshard::pipeline::ScheduleKind;
  // ZB-H1, 2 ranks, 2 microbatches, 1 layer per stage: the last rank runs
  // F0 I0 F1 I1 W0 W1. I0's next call is F1's: its whole layer's gather is
  // started during I0; I1's is W0, which reads no gathered parameters.
  auto zbh1 = buildSchedule(ScheduleKind::ZBH1, 2, 2, 1);
  ASSERT_TRUE(zbh1.ok());
  std::vector<std::vector<InputPass>> passes = inputPassesOf(*zbh1, 1, true);
  ASSERT_EQ(passes[1].size(), 2u);
  EXPECT_TRUE(passes[1][0].laterBlockCall);
  EXPECT_TRUE(passes[1][0].forwardNext);
  EXPECT_FALSE(passes[1][1].laterBlockCall);
  // The head's parameters stay gathered until the last head backward: at
  // I0, not at I1.
  EXPECT_TRUE(passes[1][0].rootHeld);
  EXPECT_FALSE(passes[1][1].rootHeld);

  // 2 layers per stage, 1 microbatch (F0 I0 W0), under ZeRO-3 (20 B
  // gathered per layer, 10 B packed shard): the top I holds its layer's
  // gather and the bottom I's prefetched one, 90 + 50 (the other layer's
  // kept bytes) + 20 + 10 + 20 activations, the phase's 70 gradients; the
  // bottom I (W next) only its own gather. With selective recomputation
  // the I call's results include the gathered parameters it passes its W
  // (4).
  passes = inputPassesOf(*buildSchedule(ScheduleKind::ZBH1, 2, 1, 1), 2, true);
  ASSERT_EQ(passes[1].size(), 2u);
  EXPECT_TRUE(passes[1][0].laterBlockCall);
  EXPECT_FALSE(passes[1][1].laterBlockCall);
  StepMemory phases = framePhases();
  PhaseMemory &input = phases[static_cast<unsigned>(StepPhase::BlockInput)];
  input.activation = {90, 0}, input.grad = {70, 0}, input.other = {8, 0};
  input.headGrad = {15, 0};
  FrameLayers l;
  l.layers = 2, l.inflight = 2, l.keptPerLayer = 50, l.layerGradBytes = 30;
  l.weightInputBytes = 25, l.boundaryBytes = 15;
  l.gatheredPerLayer = 20, l.gatherPackBytes = 10;
  l.completeSumShardBytes = 5, l.weightParamBytes = 4;
  l.inputPasses = passes[1];
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockInput);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 50 + 20 + 10 + 20);
  EXPECT_DOUBLE_EQ(p.grads, 70 + 4);

  // Under full recomputation each I follows its re-run call, which holds
  // the re-run's gathered parameters (60) and the I call's prefetched
  // gather (60 + 60) and its own frame (5), not yet the I call's 55 own
  // gradients: at the bottom I's re-run 90 + 50 + 60 + 5 + 60 + 60
  // activations, the top layer's W inputs (25) and output gradient (15).
  l.gatheredPerLayer = 60, l.gatherPackBytes = 60;
  l.rerunCalls = true, l.rerunGatherBytes = 70, l.rerunGatheredBytes = 60;
  l.rerunFrameBytes = 5;
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockInput);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 50 + 60 + 5 + 60 + 60);
  EXPECT_DOUBLE_EQ(p.grads, 25 + 15);
}

TEST(MemoryTerm, FramePeakInputPassHoldsTheNextCallsGathers) {
  using autoshard::pipeline::buildSchedule;
  using autoshard::pipeline::ScheduleKind;
  // With SP the one-block I holds its own W's re-gathers (nextCall 30: a
  // 10-byte send buffer, a copy of sources I reads, and its 20-byte
  // result). At the last rank's bottom I of ZB-H1 (2 layers per stage) the
  // next call is the top layer's W: its gathers are in flight, its send
  // buffer in place of its dead sources (20 more than its kept bytes); at
  // the top I the next call is an I: none.
  auto zbh1 = buildSchedule(ScheduleKind::ZBH1, 2, 1, 1);
  ASSERT_TRUE(zbh1.ok());
  StepMemory phases = framePhases();
  PhaseMemory &input = phases[static_cast<unsigned>(StepPhase::BlockInput)];
  input.activation = {190, 0}, input.grad = {70, 0}, input.other = {8, 0};
  input.headGrad = {15, 0};
  input.nextCall = {30, 0}, input.nextCallSent = {10, 0};
  FrameLayers l;
  l.layers = 2, l.inflight = 2, l.keptPerLayer = 50, l.layerGradBytes = 30;
  l.weightInputBytes = 25, l.boundaryBytes = 15;
  std::vector<std::vector<InputPass>> passes = inputPassesOf(*zbh1, 2, true);
  ASSERT_EQ(passes[1].size(), 2u);
  EXPECT_FALSE(passes[1][1].ownWeightNext);
  l.inputPasses = {passes[1][1]};
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockInput);
  EXPECT_DOUBLE_EQ(p.activations, 190 - 30 + 20 + 50);
  l.inputPasses = {passes[1][0]};
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockInput);
  EXPECT_DOUBLE_EQ(p.activations, 190 - 30 + 50);
  // One layer per stage (pp=4 with 4 layers): each I is followed by its
  // own W, whose gathers it holds as the one-block I does.
  auto one = buildSchedule(ScheduleKind::ZBH1, 2, 1, 1);
  ASSERT_TRUE(one.ok());
  passes = inputPassesOf(*one, 1, true);
  ASSERT_EQ(passes[1].size(), 1u);
  EXPECT_TRUE(passes[1][0].ownWeightNext);
  l.layers = 1, l.inflight = 1;
  l.inputPasses = passes[1];
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockInput);
  EXPECT_DOUBLE_EQ(p.activations, 190);
}

TEST(MemoryTerm, BackwardPassesHoldTheRanksOtherStage) {
  using autoshard::pipeline::buildSchedule;
  using autoshard::pipeline::ScheduleKind;
  // Interleaved, 2 ranks, vpp 2, one layer per stage: rank 0 runs stages 0
  // and 2, F0 F0 F2 F2 F0 B2 F0 B2 F2 B0 F2 B0 F0 B2 F0 B2 ... (8
  // microbatches). At B2 of microbatch 3, as the compiled program holds
  // it: 5 layers in flight (stage 0's microbatches 2-5, stage 2's 3), 4
  // token slices, the forward sends of stage 0's microbatches 4 and 5 and
  // the input gradient of B2 of microbatch 2 unwaited, both layers' sums
  // and the embedding's; the tied shares of microbatches 2 and 3, received
  // with the input gradients rank 1 sent after them (B3 of 2 and 3), long
  // before B0 of 2 and 3 adds them; a forward follows.
  auto ilv = buildSchedule(ScheduleKind::Interleaved1F1B, 2, 8, 2);
  ASSERT_TRUE(ilv.ok());
  std::vector<std::vector<WeightPass>> passes = backwardPassesOf(*ilv, 1, true);
  ASSERT_EQ(passes.size(), 2u);
  WeightPass want;
  want.inflight = 5, want.sentActivations = 2, want.sentGrads = 1;
  want.receivedShares = 2, want.tokenSlices = 4, want.summedLayers = 2;
  want.embeddingSums = true;
  // The next block call is stage 0's forward of microbatch 5.
  want.forwardNext = true;
  // Passes holding the same are listed once.
  EXPECT_TRUE(llvm::is_contained(passes[0], want));
  // Without a tied embedding nothing is shared.
  passes = backwardPassesOf(*ilv, 1, false);
  for (const WeightPass &w : passes[0])
    EXPECT_DOUBLE_EQ(w.receivedShares, 0);
  // Two microbatches, F0 F0 F2 F2 B2 B2 B0 B0: at the last backward one
  // layer in flight with its token slice and share, and stage 2's sum,
  // which 1F1B's first rank does not hold, besides stage 0's.
  ilv = buildSchedule(ScheduleKind::Interleaved1F1B, 2, 2, 2);
  ASSERT_TRUE(ilv.ok());
  passes = backwardPassesOf(*ilv, 1, true);
  ASSERT_EQ(passes[0].size(), 4u);
  // Stage 2's sum is complete (its last backward ran two ops before).
  want = WeightPass();
  want.inflight = 1, want.receivedShares = 1, want.tokenSlices = 1;
  want.summedLayers = 2, want.embeddingSums = true, want.completeLayers = 1;
  expectWeightPass(passes[0][3], want);
  EXPECT_DOUBLE_EQ(passes[0][2].justCompleteLayers, 1);
  // B2 of microbatch 0 prefetches B2 of 1's re-gathered residuals; B2 of 1
  // B0 of 0's; B0 of 0 not B0 of 1's (gathered after the call, with its
  // input gradient for the embedding); the last backward nothing.
  EXPECT_DOUBLE_EQ(passes[0][0].prefetched, 1);
  EXPECT_DOUBLE_EQ(passes[0][1].prefetched, 1);
  EXPECT_DOUBLE_EQ(passes[0][2].prefetched, 0);
  EXPECT_DOUBLE_EQ(passes[0][3].prefetched, 0);
  EXPECT_FALSE(passes[0][2].lastCall);
  EXPECT_TRUE(passes[0][3].lastCall);
  // Two layers per chunk: the unit's own next layer's.
  passes = backwardPassesOf(*ilv, 2, true);
  for (const WeightPass &w : passes[0])
    EXPECT_DOUBLE_EQ(w.prefetched, 1);

  // ZB-V, 2 ranks, 2 microbatches: rank 0 runs F0 F0 F3 I3 W3 F3 I3 W3 I0
  // W0 I0 W0; the first stage's backward runs whole at its I. At I0 of
  // microbatch 1: one layer in flight, stage 3's sum complete and stage
  // 0's, the embedding's; the head share of microbatch 1 not yet added
  // (made by I3, added by this backward), its input gradient received.
  auto zbv = buildSchedule(ScheduleKind::ZBV, 2, 2, 2);
  ASSERT_TRUE(zbv.ok());
  passes = backwardPassesOf(*zbv, 1, true);
  ASSERT_EQ(passes[0].size(), 2u);
  EXPECT_TRUE(passes[1].empty());
  want = WeightPass();
  want.inflight = 1, want.tiedShares = 1;
  want.tokenSlices = 1, want.summedLayers = 2, want.embeddingSums = true;
  want.completeLayers = 1, want.receivedOutputGrad = true;
  expectWeightPass(passes[0][1], want);
  // At I0 of microbatch 0 both shares are pending, stage 3's sum just
  // complete, 2 layers in flight.
  EXPECT_DOUBLE_EQ(passes[0][0].tiedShares, 2);
  EXPECT_DOUBLE_EQ(passes[0][0].inflight, 2);
  EXPECT_DOUBLE_EQ(passes[0][0].justCompleteLayers, 1);
  // I0 of microbatch 0 prefetches I0 of 1's gather (W0 between is no
  // call); I0 of 1 is the last call (only W0 follows).
  EXPECT_FALSE(passes[0][0].lastCall);
  EXPECT_TRUE(passes[0][1].lastCall);
}

TEST(MemoryTerm, FramePeakZeroThreeSplitRankScoresItsPasses) {
  // ZeRO-3 on a rank whose backward calls are all simulated passes (ZB-V,
  // passesOnly): the closed-form backward candidate (a gather prefetched
  // at every call) is not scored; each I is, with its own layer's gather
  // (14) and, when the next block call reads parameters, that call's
  // gather (7 packed + 14): 90 + 50 (the other layer) + 14 + 21
  // activations, I's own 55 gradients (70 less the head's 15; no head).
  StepMemory phases = framePhases();
  PhaseMemory &input = phases[static_cast<unsigned>(StepPhase::BlockInput)];
  input.activation = {90, 0}, input.grad = {70, 0}, input.other = {8, 0};
  input.headGrad = {15, 0};
  FrameLayers l;
  l.head = false, l.layers = 2, l.inflight = 2, l.keptPerLayer = 50;
  l.gatheredPerLayer = 14, l.gatherPackBytes = 7, l.weightGradBytes = 30;
  InputPass in;
  in.held.inflight = 2, in.prefetchesGather = true;
  l.inputPasses = {in};
  // Without: no I candidate, the closed-form backward (received head
  // gradient 15 as an activation) is the peak.
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 15 + 50 + 14 + 21);
  l.passesOnly = true;
  p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockInput);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 50 + 14 + 21);
  EXPECT_DOUBLE_EQ(p.grads, 55);
  // Its own W next: nothing prefetched.
  l.inputPasses[0].prefetchesGather = false;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).activations, 90 + 50 + 14);
  // ZB-V's first rank with a first-stage forward and a head op to come
  // holds both ends' gathered non-block parameters (6 and 5, the tied 4
  // once); with only head ops to come, the head's.
  l.rootFirstBytes = 6, l.rootLastBytes = 5, l.rootSharedBytes = 4;
  l.inputPasses[0].held.firstForwardsLeft = true;
  l.inputPasses[0].held.headOpsLeft = true;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).activations, 90 + 50 + 14 + 7);
  l.inputPasses[0].held.firstForwardsLeft = false;
  EXPECT_DOUBLE_EQ(framePeak(phases, 1, 1, l).activations, 90 + 50 + 14 + 5);
}

TEST(MemoryTerm, FramePeakFirstStageBackwardReceivesItsInput) {
  // A rank with the head whose first stage's backward reads its input
  // gradient from another rank (ZB-V): the phase's head gradient (25: the
  // block output gradient and one tied share, 10) is received, an
  // activation, less the share, which was made on this rank: with the
  // pending shares (2, 10 each) a gradient.
  StepMemory phases = framePhases();
  phases[static_cast<unsigned>(StepPhase::BlockBackward)].headGrad = {25, 0};
  FrameLayers l;
  l.head = true, l.layers = 1, l.inflight = 1, l.tiedGradBytes = 10;
  l.weightGradBytes = 30;
  WeightPass w;
  w.inflight = 1, w.tiedShares = 2, w.summedLayers = 1;
  w.receivedOutputGrad = true;
  l.backwardPasses = {w};
  FramePeak p = framePeak(phases, 1, 1, l);
  EXPECT_EQ(p.phase, StepPhase::BlockBackward);
  EXPECT_DOUBLE_EQ(p.activations, 90 + 25 - 10);
  EXPECT_DOUBLE_EQ(p.grads, 40 - 25 + 20);
  EXPECT_DOUBLE_EQ(p.paramGrads, 30);
}

TEST(MemoryTerm, BackwardPassesOfTheHeadsRank) {
  using autoshard::pipeline::buildSchedule;
  using autoshard::pipeline::ScheduleKind;
  // Interleaved, 2 ranks, vpp 2, 4 microbatches: rank 1 runs stages 1 and
  // 3, F1 F1 F3 B3 F3 B3 F1 B1 F1 B1 F3 B3 F3 B3 B1 B1. At B3 of
  // microbatch 2 (op 11): 3 layers in flight, F1 of 3's output and the
  // input gradients of B1 of 0 and 1 unwaited, no other microbatch's head
  // values (its own are the phase's), the earlier tied shares waited (each
  // reached rank 0 with the input gradient sent after it), both stages'
  // sums; F3 of 3 follows (its whole gather is started here).
  auto ilv = buildSchedule(ScheduleKind::Interleaved1F1B, 2, 4, 2);
  ASSERT_TRUE(ilv.ok());
  std::vector<std::vector<WeightPass>> passes = backwardPassesOf(*ilv, 1, true);
  WeightPass want;
  want.inflight = 3, want.sentActivations = 1, want.sentGrads = 2;
  want.summedLayers = 2, want.forwardNext = true;
  want.headOpsLeft = true;
  EXPECT_TRUE(llvm::is_contained(passes[1], want));
  // B1 of microbatch 1 (op 9): its output gradient came from rank 0.
  EXPECT_TRUE(llvm::any_of(passes[1], [](const WeightPass &w) {
    return w.receivedOutputGrad && w.sentActivations == 2 && w.sentGrads == 1;
  }));
}

TEST(MemoryTerm, PendingSendsArriveWithLaterOnes) {
  using autoshard::pipeline::buildSchedule;
  using autoshard::pipeline::ScheduleKind;
  // Interleaved as above: rank 1's tied share of microbatch 0, sent at B3
  // (op 3) before its input gradient, reaches rank 0 with that gradient
  // (at B2), after which rank 0 sends B2's input gradient: waited at rank
  // 1's B1 of microbatch 0 (op 7), not after rank 0's B0 reads the share.
  auto ilv = buildSchedule(ScheduleKind::Interleaved1F1B, 2, 4, 2);
  ASSERT_TRUE(ilv.ok());
  std::vector<PendingSend> sends = pendingSends(*ilv, /*tied=*/true)[1];
  auto share = llvm::find_if(sends, [](const PendingSend &send) {
    return send.kind == PendingSend::TiedShare;
  });
  ASSERT_NE(share, sends.end());
  EXPECT_EQ(share->op, 3u);
  EXPECT_EQ(share->waited, 7u);
}

TEST(MemoryTerm, PendingSendsWaitedAfterTheAnswer) {
  using autoshard::pipeline::buildSchedule;
  using autoshard::pipeline::ScheduleKind;
  // 1F1B, pp = 2, 4 microbatches: rank 1 runs F0 B0 F1 B1 F2 B2 F3 B3,
  // rank 0 F0 F1 B0 F2 B1 F3 B2 B3. Rank 1's input gradient of
  // microbatch 0 (and its tied head share) reaches rank 0 at B0, after
  // which rank 0 sends F2's input: waited at rank 1's F2 (op 4); those of
  // microbatches 2 and 3 at the end (op 8).
  auto oneF = buildSchedule(ScheduleKind::OneFOneB, 2, 4, 1);
  ASSERT_TRUE(oneF.ok());
  std::vector<PendingSend> sends = pendingSends(*oneF, /*tied=*/true)[1];
  ASSERT_EQ(sends.size(), 8u);
  EXPECT_EQ(sends[0].kind, PendingSend::TiedShare);
  EXPECT_EQ(sends[1].kind, PendingSend::InputGrad);
  EXPECT_EQ(sends[0].op, 1u);
  EXPECT_EQ(sends[0].waited, 4u);
  EXPECT_EQ(sends[1].waited, 4u);
  EXPECT_EQ(sends[5].waited, 8u);
  EXPECT_EQ(sends[7].waited, 8u);
  // Rank 0's forward outputs: F0's is waited once B0's gradient, sent
  // after rank 1 received it, arrives (rank 0's op 2).
  EXPECT_EQ(pendingSends(*oneF, true)[0][0].kind, PendingSend::Activation);
  EXPECT_EQ(pendingSends(*oneF, true)[0][0].waited, 2u);
  // Without a tied embedding only the input gradients.
  EXPECT_EQ(pendingSends(*oneF, false)[1].size(), 4u);
  // pp = 4: rank 0 never sends to rank 3 after receiving a share, so the
  // last stage's shares are waited at the end of the step.
  auto four = buildSchedule(ScheduleKind::OneFOneB, 4, 8, 1);
  ASSERT_TRUE(four.ok());
  sends = pendingSends(*four, true)[3];
  EXPECT_EQ(llvm::count_if(sends,
                           [](const PendingSend &send) {
                             return send.kind == PendingSend::TiedShare;
                           }),
            8);
  for (const PendingSend &send : sends) {
    if (send.kind == PendingSend::TiedShare) {
      EXPECT_EQ(send.waited, four->rankOrders[3].size());
    }
  }
}

/// 1e9 dense parameters per rank, data-parallel over 8 ranks of one node.
ParameterShards eightRanksOfOneNode() {
  ParameterShards s;
  s.denseRank = 1e9, s.dpGroup = 8, s.dpPerNode = 8;
  return s;
}

TEST(DataParallelTerm, AllReduceOptimizerAndZero3) {
  Cluster c = testCluster();
  ModelInfo m = termModel();
  ParameterShards s = eightRanksOfOneNode();
  Candidate plan;
  plan.dp = 8;
  // ZeRO-0 without overlap: a ring all-reduce of 2e9 bytes over 8 ranks,
  // 2·(7/8)·S/B.
  EXPECT_DOUBLE_EQ(dataParallelSyncTime(c, m, plan, s, 4, 1, 2),
                   2 * 7.0 / 8 * 2e9 / 400e9);
  plan.zero = 3;
  EXPECT_DOUBLE_EQ(dataParallelSyncTime(c, m, plan, s, 4, 1, 2), 0);
  // AdamW: 28 bytes per parameter of the shard (1e9/8 under ZeRO-1) at
  // 2 TB/s · 0.5.
  plan.zero = 1;
  EXPECT_DOUBLE_EQ(optimizerTime(c, plan, s), 28 * 1.25e8 / 1e12);
  plan.zero = 0;
  EXPECT_DOUBLE_EQ(optimizerTime(c, plan, s), 28 * 1e9 / 1e12);
}

TEST(DataParallelTerm, ZeroReducesOnceUnlessEveryMicrobatch) {
  // autoshard's compiled program accumulates the microbatches' gradients
  // and reduce-scatters the sums once, in the last backward; software that
  // reduces after every microbatch (zero.grad_reduce = every_microbatch)
  // pays it per microbatch. No overlap: everything is exposed.
  Cluster c = testCluster();
  ModelInfo m = termModel();
  ParameterShards s = eightRanksOfOneNode();
  Candidate plan;
  plan.dp = 8, plan.zero = 2, plan.mb = 4;
  const double grads = 1e9 * gradElementBytes(c, m.elementBytes);
  const double rs =
      collectiveTime(c, CollectiveKind::ReduceScatter, grads, 8, 8);
  const double ag =
      collectiveTime(c, CollectiveKind::AllGather, 1e9 * m.elementBytes, 8, 8);
  EXPECT_DOUBLE_EQ(dataParallelSyncTime(c, m, plan, s, 4, 1, 2), rs + ag);
  c.zeroReducesEveryMicrobatch = true;
  EXPECT_DOUBLE_EQ(dataParallelSyncTime(c, m, plan, s, 4, 1, 2), 4 * rs + ag);

  // ZeRO-3: the microbatches before the last gather only; the last one's
  // reductions (each chunk's backward with them less the gather-only one,
  // and the root unit's) are added once.
  c.zeroReducesEveryMicrobatch = false;
  const double lag =
      collectiveTime(c, CollectiveKind::AllGather, 100 * m.elementBytes, 8, 8);
  const double lrs =
      collectiveTime(c, CollectiveKind::ReduceScatter,
                     100 * gradElementBytes(c, m.elementBytes), 8, 8);
  Zero3Exposure with = zero3Exposure(c, 100, 10, m.elementBytes, 4, 8, 8, 1, 1);
  Zero3Exposure gather = zero3Exposure(c, 100, 10, m.elementBytes, 4, 8, 8, 1,
                                       1, /*reduce=*/false);
  EXPECT_DOUBLE_EQ(with.backward, lag + 3 * (lag + lrs) + lrs);
  EXPECT_DOUBLE_EQ(gather.backward, 4 * lag);
  EXPECT_DOUBLE_EQ(gather.forward, with.forward);
  EXPECT_DOUBLE_EQ(gather.rootBackward, 0);
  EXPECT_GT(with.rootBackward, 0);
  plan.zero = 3;
  EXPECT_DOUBLE_EQ(zero3LastReduceTime(c, plan, with, gather, 2),
                   2 * (3 * lrs + lrs) + with.rootBackward);
  plan.mb = 1; // one microbatch: its backward reduces
  EXPECT_DOUBLE_EQ(zero3LastReduceTime(c, plan, with, with, 2), 0);
  plan.mb = 4;
  c.zeroReducesEveryMicrobatch = true;
  EXPECT_DOUBLE_EQ(zero3LastReduceTime(c, plan, with, with, 2), 0);
}

TEST(LayerTerm, AddsPartsInOrder) {
  LayerTimes layer{1, 2, 3, 0.5};
  LayerTerm t;
  t.forward = 0.25, t.backward = 0.5, t.computeForward = 0.125;
  t.computeBackward = 0.0625, t.recompute = 0.03125;
  addLayerTerm(layer, t);
  EXPECT_DOUBLE_EQ(layer.forward, 1.375);
  EXPECT_DOUBLE_EQ(layer.inputGrad, 2.59375);
  EXPECT_DOUBLE_EQ(layer.weightGrad, 3);
  // The imbalance is compute, not communication.
  EXPECT_DOUBLE_EQ(layer.comm, 0.5 + 0.75 + 0.03125);
}

TEST(ContextParallelTerm, UlyssesFourAllToAllsEachWay) {
  Cluster c = testCluster();
  ModelInfo m = termModel();
  Candidate plan;
  plan.cp = 2, plan.cpAttention = "ulysses";
  // 512 tokens per rank: q (and out) 512·1024·2 B, k (and v) 512·2·128·2 B;
  // an all-to-all over 2 ranks in the node moves 1/2 of each.
  double q = 512 * 1024 * 2, kv = 512 * 2 * 128 * 2;
  double forward = 2 * (0.5 * q / 400e9) + 2 * (0.5 * kv / 400e9);
  LayerTerm t = ulyssesTerm(c, m, plan);
  EXPECT_DOUBLE_EQ(t.forward, forward);
  EXPECT_DOUBLE_EQ(t.backward, forward);
  EXPECT_DOUBLE_EQ(t.recompute, 0);
  EXPECT_DOUBLE_EQ(t.computeForward, 0);
  plan.recompute = "full";
  EXPECT_DOUBLE_EQ(ulyssesTerm(c, m, plan).recompute, forward);
  // Ring attention plans have no Ulysses term, and vice versa.
  plan.cpAttention = "ring";
  EXPECT_DOUBLE_EQ(ulyssesTerm(c, m, plan).forward, 0);
  plan.cpAttention = "ulysses";
  EXPECT_DOUBLE_EQ(ringAttentionTerm(c, m, plan, 1, 1).forward, 0);
}

TEST(ContextParallelTerm, RingMergesAndContiguousImbalance) {
  Cluster c = testCluster();
  ModelInfo m = termModel();
  Candidate plan;
  plan.cp = 4, plan.cpContiguous = true;
  // 256 tokens per rank. K, V: 2·256·2·128·2 B = 262144 B per step, hidden
  // behind a 1 ms attention step; each of the 3 extra steps merges
  // 256·1024·(4 + 4 + 2) B at 1 TB/s.
  double merge = 256 * 1024 * 10 / 1e12;
  LayerTerm t = ringAttentionTerm(c, m, plan, 4e-3, 8e-3);
  EXPECT_DOUBLE_EQ(t.forward, 3 * merge);
  // Contiguous chunks: (cp-1)/cp of the block's attention more.
  EXPECT_DOUBLE_EQ(t.computeForward, 0.75 * 4e-3);
  EXPECT_DOUBLE_EQ(t.computeBackward, 0.75 * 8e-3);
  plan.cpContiguous = false;
  EXPECT_DOUBLE_EQ(ringAttentionTerm(c, m, plan, 4e-3, 8e-3).computeForward, 0);
}

TEST(ContextParallelTerm, RingBlocksPayTheirTiles) {
  // Causal seq 1024 at cp = 4 and FA2's 128 x 128 tile: each rank runs three
  // 256 x 256 blocks (4 tiles each) and the causal diagonal (3), 15 tiles
  // per (sequence, head), where the profile's kernel at 1/cp counts 36 / 4.
  Cluster c = testCluster();
  c.attentionQueryBlock = c.attentionKeyBlock = 128;
  ModelInfo m = termModel();
  ASSERT_EQ(m.seq, 1024);
  Candidate plan;
  plan.cp = 4, plan.mbs = 2, plan.tp = 2;
  LayerTerm none = ringAttentionTerm(c, m, plan, 4e-3, 8e-3);
  c.attentionTileTime = 1e-6, c.attentionGradTileTime = 3e-6;
  LayerTerm t = ringAttentionTerm(c, m, plan, 4e-3, 8e-3);
  double tiles = 2.0 * m.heads / 2 * (15 - 36.0 / 4);
  EXPECT_DOUBLE_EQ(t.computeForward, none.computeForward + tiles * 1e-6);
  EXPECT_DOUBLE_EQ(t.computeBackward, none.computeBackward + tiles * 3e-6);
  // Compute, not communication.
  EXPECT_DOUBLE_EQ(t.forward, none.forward);
  EXPECT_DOUBLE_EQ(t.backward, none.backward);
  // Full recomputation re-runs the forward's tiles in the backward.
  plan.recompute = "full";
  EXPECT_DOUBLE_EQ(ringAttentionTerm(c, m, plan, 4e-3, 8e-3).computeBackward,
                   t.computeBackward + tiles * 1e-6);
  // Ulysses runs one kernel of the whole sequence: no ring tiles.
  plan.cpAttention = "ulysses";
  EXPECT_DOUBLE_EQ(ringAttentionTerm(c, m, plan, 4e-3, 8e-3).computeForward, 0);
}

TEST(ExpertParallelTerm, DispatchAndCombineAllToAlls) {
  Cluster c = testCluster();
  LocalProfile prof;
  prof.dispatchBytes = {0, 1e8};
  Candidate plan;
  plan.ep = 4;
  // 2 sequences: 2e8 B over 4 ranks in the node, 3/4 of it moves.
  double a2a = 0.75 * 2e8 / 400e9;
  LayerTerm t = expertAllToAllTerm(c, prof, plan, 2, 1);
  EXPECT_DOUBLE_EQ(t.forward, 2 * a2a);
  EXPECT_DOUBLE_EQ(t.backward, 2 * a2a);
  plan.recompute = "full";
  EXPECT_DOUBLE_EQ(expertAllToAllTerm(c, prof, plan, 2, 1).backward, 4 * a2a);
  // ep·tp = 16 > 8: one member per node, over the NIC (etp = tp: the ep
  // group is outside tp).
  plan.recompute = "none";
  plan.tp = 4, plan.etp = 4;
  EXPECT_DOUBLE_EQ(expertAllToAllTerm(c, prof, plan, 2, 1).forward,
                   2 * 0.75 * 2e8 / 50e9);
  // etp = 1: ep = 4 is the 4 tp ranks, whose tokens are the same: no
  // all-to-all (the slice and the gather over tp are in the profile); ep =
  // 8 leaves an all-to-all over 2 ranks, tp = 4 apart, inside the node.
  plan.etp = 1;
  EXPECT_DOUBLE_EQ(expertAllToAllTerm(c, prof, plan, 2, 1).forward, 0);
  plan.ep = 8;
  EXPECT_DOUBLE_EQ(expertAllToAllTerm(c, prof, plan, 2, 1).forward,
                   2 * collectiveTime(c, CollectiveKind::AllToAll, 2e8, 2, 2));
  plan.ep = 1;
  EXPECT_DOUBLE_EQ(expertAllToAllTerm(c, prof, plan, 2, 1).forward, 0);
}

TEST(ExpertParallelTerm, MoeUnderCpGathersTheSequence) {
  Cluster c = testCluster();
  ModelInfo m = termModel();
  Candidate plan;
  plan.cp = 2;
  EXPECT_DOUBLE_EQ(moeSequenceGatherTerm(c, m, plan).forward, 0); // dense
  m.experts = 8;
  // The whole sequence, 1024·1024·2 B, gathered over 2 ranks in the node.
  double gather = 0.5 * 1024 * 1024 * 2 / 400e9;
  LayerTerm t = moeSequenceGatherTerm(c, m, plan);
  EXPECT_DOUBLE_EQ(t.forward, gather);
  EXPECT_DOUBLE_EQ(t.backward, gather);
  plan.recompute = "full";
  EXPECT_DOUBLE_EQ(moeSequenceGatherTerm(c, m, plan).backward, 2 * gather);
}

TEST(TensorParallelTerm, ExposedCollectivesAndStageEnds) {
  Cluster c = testCluster();
  c.tpOverlap = 0.5;
  // tp = 2: 1 - 0.5·(1/2) of each TP collective is exposed; an all-reduce
  // of 4e8 B over 2 ranks takes 2·(1/2)·4e8 / 400 GB/s = 1 ms.
  CommProfile ar;
  ar.bytes = {0, 4e8};
  FunctionProfile f;
  f.comms.push_back(ar);
  TensorParallelBlock block = tensorParallelBlock(c, f, f, 1, 1, 2);
  EXPECT_DOUBLE_EQ(block.forward.comm, 1e-3);
  EXPECT_DOUBLE_EQ(block.layer.forward, 0.75e-3);
  EXPECT_DOUBLE_EQ(block.layer.inputGrad, 0.75e-3);
  EXPECT_DOUBLE_EQ(block.layer.comm, 1.5e-3);
  LocalProfile prof;
  prof.preFwd = f;
  StageEnds ends = stageEnds(c, prof, 1, 1, 2);
  EXPECT_DOUBLE_EQ(ends.firstF, 0.75e-3);
  EXPECT_DOUBLE_EQ(ends.lastB, 0);
  EXPECT_DOUBLE_EQ(ends.comm, 0.75e-3);
}

TEST(KernelTerm, FixedCostAndHostBoundFunctions) {
  // Two memory-bound kernels of 1e6 B at 2e12 x 0.5 B/s: 1 us each, plus
  // a fixed device cost of 2 us per kernel.
  Cluster c = testCluster();
  c.kernelOverhead = 2e-6;
  OpProfile op;
  op.kind = OpKind::Memory;
  op.bytes = {0, 1e6};
  FunctionProfile f;
  f.ops = {op, op};
  EXPECT_DOUBLE_EQ(functionTime(c, f, 1, 1, 1).total, 6e-6);
  // The host issues each kernel in 5 us: issuing (10 us) exceeds the
  // device's 6 us, so the function takes 10 us; a 1 ms kernel hides it.
  c.hostOpOverhead = 5e-6;
  EXPECT_DOUBLE_EQ(functionTime(c, f, 1, 1, 1).total, 10e-6);
  f.ops[0].bytes = {0, 1e9};
  EXPECT_DOUBLE_EQ(functionTime(c, f, 1, 1, 1).total, 1e-3 + 2e-6 + 3e-6);
  // The host's per-step time adds to the optimizer.
  Candidate plan;
  ParameterShards shards;
  shards.denseRank = 1e6;
  double optimizer = optimizerTime(c, plan, shards);
  c.hostStepOverhead = 1e-3;
  EXPECT_DOUBLE_EQ(optimizerTime(c, plan, shards), optimizer + 1e-3);
}

/// A cluster at 1e12 x 0.5 FLOP/s for attention without a fixed kernel
/// cost, and a fused attention op of 1e9 FLOPs per sample (2 ms there).
std::pair<Cluster, OpProfile> attentionAt2ms() {
  Cluster c = testCluster();
  c.peakFlops = 1e12, c.attentionEfficiency = 0.5, c.kernelOverhead = 0;
  OpProfile op;
  op.kind = OpKind::Attention;
  op.flops = {0, 1e9};
  return {c, op};
}

TEST(KernelTerm, AttentionScoreTimePerDirection) {
  // Over 1e6 score elements: + 3 ns (forward) or 5 ns (backward) per score.
  auto [c, op] = attentionAt2ms();
  op.attentionBatchHeads = {0, 1e6}; // 1 x 1 scores each
  op.attentionSeqQ = op.attentionSeqK = 1;
  FunctionProfile f;
  f.ops = {op};
  EXPECT_DOUBLE_EQ(functionTime(c, f, 1, 1, 1).total, 2e-3);
  c.attentionScoreTime = 3e-9, c.attentionGradScoreTime = 5e-9;
  EXPECT_DOUBLE_EQ(functionTime(c, f, 1, 1, 1).total, 2e-3 + 3e-3);
  f.ops[0].backward = true;
  EXPECT_DOUBLE_EQ(functionTime(c, f, 1, 1, 1).total, 2e-3 + 5e-3);
  // Scaled with the op (a tensor-parallel share of the heads).
  EXPECT_DOUBLE_EQ(functionTime(c, f, 1, 0.5, 1).total, 1e-3 + 2.5e-3);
  // Only attention pays it.
  f.ops[0].kind = OpKind::Gemm;
  f.ops[0].flops = {0, 0.75e9};
  EXPECT_DOUBLE_EQ(functionTime(c, f, 1, 1, 1).total,
                   0.75e9 / (1e12 * c.gemmEfficiency));
}

TEST(KernelTerm, AttentionTilesOfABlockedKernel) {
  Cluster c = testCluster();
  // The CPU backend's 64 x 512 tile: sequences up to 64 are one tile;
  // causal 128 is two query blocks of one key block each.
  c.attentionQueryBlock = 64, c.attentionKeyBlock = 512;
  EXPECT_DOUBLE_EQ(attentionTiles(c, 32, 32, true), 1);
  EXPECT_DOUBLE_EQ(attentionTiles(c, 64, 64, true), 1);
  EXPECT_DOUBLE_EQ(attentionTiles(c, 128, 128, true), 2);
  EXPECT_DOUBLE_EQ(attentionTiles(c, 64, 1024, false), 2);
  // FlashAttention-2's 128 x 128: causal 1024 visits 1 + 2 + ... + 8 = 36
  // of the 64 tiles, not causal all of them.
  c.attentionQueryBlock = c.attentionKeyBlock = 128;
  EXPECT_DOUBLE_EQ(attentionTiles(c, 1024, 1024, true), 36);
  EXPECT_DOUBLE_EQ(attentionTiles(c, 1024, 1024, false), 64);
  EXPECT_DOUBLE_EQ(attentionTiles(c, 0, 1024, false), 0);
  // Past 2^16 query blocks the triangle's area and diagonal, without a
  // loop over every block: within a block per row of the exact count
  // n (n + 1) / 2.
  c.attentionQueryBlock = c.attentionKeyBlock = 1;
  double n = 1 << 20;
  EXPECT_NEAR(attentionTiles(c, n, n, true), n * (n + 1) / 2, n);
}

TEST(KernelTerm, AttentionTileTimePerDirection) {
  // 2e3 score matrices of causal 1024 x 1024 at FA2's tile: 36 tiles each,
  // + 1 us (forward) or 2 us (backward) per tile beside the FLOPs.
  auto [c, op] = attentionAt2ms();
  op.attentionBatchHeads = {0, 2e3};
  op.attentionSeqQ = op.attentionSeqK = 1024;
  op.attentionCausal = true;
  FunctionProfile f;
  f.ops = {op};
  EXPECT_DOUBLE_EQ(functionTime(c, f, 1, 1, 1).total, 2e-3);
  c.attentionTileTime = 1e-6, c.attentionGradTileTime = 2e-6;
  EXPECT_DOUBLE_EQ(functionTime(c, f, 1, 1, 1).total, 2e-3 + 2e3 * 36 * 1e-6);
  f.ops[0].backward = true;
  EXPECT_DOUBLE_EQ(functionTime(c, f, 1, 1, 1).total, 2e-3 + 2e3 * 36 * 2e-6);
  // Scaled with the op (a tensor-parallel share of the heads).
  EXPECT_DOUBLE_EQ(functionTime(c, f, 1, 0.5, 1).total, 1e-3 + 1e3 * 36 * 2e-6);
  // Kernel time: slowed by synchronisation as the FLOPs are.
  c.syncSlowdown = 1;
  EXPECT_DOUBLE_EQ(functionTime(c, f, 1, 1, 1).total,
                   2 * (2e-3 + 2e3 * 36 * 2e-6));
}

TEST(KernelTerm, MemoryOpsEfficiencyOfTheListedKernelOnly) {
  // Memory-bound ops of 1e6 B at 2e12 B/s: x 0.5 (efficiency.memory) 1 us;
  // a GEMM of 1e9 FLOPs at 1e15 x 0.5: 2 us.
  Cluster c = testCluster();
  OpProfile rope, swiglu, matmul;
  rope.name = "tfm.rope", swiglu.name = "tfm.swiglu",
  matmul.name = "tfm.matmul";
  rope.bytes = swiglu.bytes = {0, 1e6};
  matmul.kind = OpKind::Gemm;
  matmul.flops = {0, 1e9};
  FunctionProfile f;
  f.ops = {rope, swiglu, matmul};
  EXPECT_DOUBLE_EQ(functionTime(c, f, 1, 1, 1).total, 1e-6 + 1e-6 + 2e-6);
  // rope's kernel at 0.25 of the bandwidth takes 2 us, swiglu (unlisted)
  // keeps the default; a GEMM's memory term never uses the list.
  c.memoryOpEfficiency = {{"rope", 0.25}, {"matmul", 1e-6}};
  EXPECT_DOUBLE_EQ(functionTime(c, f, 1, 1, 1).total, 2e-6 + 1e-6 + 2e-6);
  EXPECT_DOUBLE_EQ(kernelTime(c, OpKind::Memory, 0, 1e6, nullptr, "tfm.rope"),
                   2e-6);
  EXPECT_DOUBLE_EQ(kernelTime(c, OpKind::Memory, 0, 1e6, nullptr, "tfm.swiglu"),
                   1e-6);
  EXPECT_DOUBLE_EQ(kernelTime(c, OpKind::Memory, 0, 1e6), 1e-6);
  // Above 1 (operands in cache): faster than the bandwidth.
  c.memoryOpEfficiency = {{"swiglu", 2.0}};
  EXPECT_DOUBLE_EQ(functionTime(c, f, 1, 1, 1).total, 1e-6 + 0.25e-6 + 2e-6);
  // The optimizer's AdamW: 28 B per parameter at adamw's own efficiency.
  Candidate plan;
  ParameterShards shards;
  shards.denseRank = 1e6;
  EXPECT_DOUBLE_EQ(optimizerTime(c, plan, shards), 28e6 / 1e12);
  c.memoryOpEfficiency = {{"adamw", 0.1}};
  EXPECT_DOUBLE_EQ(optimizerTime(c, plan, shards), 28e6 / 0.2e12);
  // Ring attention's merge per step (1e6 B): attention_merge's forward at
  // 0.25, 2 us instead of 1 us; the backward's add of dK, dV unchanged.
  Cluster ring = testCluster();
  RingExposure base = ringAttentionExposure(ring, 1e6, 1e6, 2, true, 0, 0);
  ring.memoryOpEfficiency = {{"attention_merge", 0.25}};
  RingExposure merged = ringAttentionExposure(ring, 1e6, 1e6, 2, true, 0, 0);
  EXPECT_NEAR(merged.forward - base.forward, 1e-6, 1e-15);
  EXPECT_DOUBLE_EQ(merged.backward, base.backward);
}

TEST(ClusterTerm, RanksSharingANodeGetLargerSharesInSmallerJobs) {
  Cluster c = testCluster();
  c.singleNode = true;
  c.interNode = c.intraNode;
  EXPECT_DOUBLE_EQ(forWorld(c, 2).peakFlops, c.peakFlops);
  c.sharesNode = true;
  // 8 ranks per node described; a 2-rank job gives each 4 times the share.
  Cluster two = forWorld(c, 2);
  EXPECT_DOUBLE_EQ(two.peakFlops, 4 * c.peakFlops);
  EXPECT_DOUBLE_EQ(two.hbmBandwidth, 4 * c.hbmBandwidth);
  EXPECT_DOUBLE_EQ(two.hbmBytes, 4 * c.hbmBytes);
  EXPECT_DOUBLE_EQ(two.intraNode.bandwidth, 4 * c.intraNode.bandwidth);
  EXPECT_DOUBLE_EQ(two.interNode.bandwidth, two.intraNode.bandwidth);
  EXPECT_DOUBLE_EQ(two.intraNode.latency, c.intraNode.latency);
  EXPECT_DOUBLE_EQ(forWorld(c, 8).peakFlops, c.peakFlops);
  EXPECT_DOUBLE_EQ(forWorld(c, 16).peakFlops, c.peakFlops);
}

TEST(ClusterTerm, UnknownFieldsAreErrors) {
  // A misspelt optional field was ignored and its default used.
  auto error = [](const std::string &extra) {
    std::string text =
        R"({"gpus_per_node": 8, "gpu": {"peak_bf16_tflops": 1, "hbm_gib": 3,
            "hbm_tb_per_s": 1}, "intra_node":
            {"gb_per_s_per_direction_per_gpu": 1})" +
        extra + "}";
    auto parsed = parseCluster(text, "c.json");
    return parsed ? std::string() : llvm::toString(parsed.takeError());
  };
  EXPECT_EQ(error(""), "");
  // Informational keys stay allowed.
  EXPECT_EQ(error(R"(, "software": "x", "measured": {"any": 1},
                  "efficiency": {"memory_ops": {"future_kernel": 1}})"),
            "");
  EXPECT_EQ(error(R"(, "host": {"sync_latency": 100})"),
            "c.json: unknown field 'host.sync_latency' (the fields of "
            "'host': op_overhead_us, pinned_cores, speedup_half_waiting, "
            "speedup_others_waiting, step_overhead_ms, sync_latency_us, "
            "sync_slowdown, wakeup_latency_us; docs/cluster-format.md)");
  std::string top = error(R"(, "colour": "blue")");
  EXPECT_EQ(top.rfind("c.json: unknown field 'colour' (the fields of the "
                      "top level: by_ranks_per_node, calibration, ",
                      0),
            0u)
      << top;
  EXPECT_NE(error(R"(, "gpu": {"peak_bf16_tflops": 1, "hbm_gib": 3,
                  "hbm_tb_per_s": 1, "smss": 4})")
                .find("unknown field 'gpu.smss'"),
            std::string::npos);
}

TEST(ClusterTerm, AttentionTileFields) {
  auto parse = [](const std::string &efficiency) {
    std::string text =
        R"({"gpus_per_node": 2, "gpu": {"peak_bf16_tflops": 1, "hbm_gib": 3,
            "hbm_tb_per_s": 1}, "intra_node":
            {"gb_per_s_per_direction_per_gpu": 1}, "efficiency": {)" +
        efficiency + "}}";
    return parseCluster(text, "t.json");
  };
  auto error = [&](const std::string &efficiency) {
    auto parsed = parse(efficiency);
    return parsed ? std::string() : llvm::toString(parsed.takeError());
  };
  auto c = parse(R"("attention_tile_us": 2.5, "attention_grad_tile_us": 4,
                    "attention_query_block": 64, "attention_key_block": 512)");
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  EXPECT_DOUBLE_EQ(c->attentionTileTime, 2.5e-6);
  EXPECT_DOUBLE_EQ(c->attentionGradTileTime, 4e-6);
  EXPECT_DOUBLE_EQ(c->attentionQueryBlock, 64);
  EXPECT_DOUBLE_EQ(c->attentionKeyBlock, 512);
  // Defaults: no tile term, FlashAttention-2's 128 x 128 tile.
  auto d = parse("");
  ASSERT_TRUE(static_cast<bool>(d)) << llvm::toString(d.takeError());
  EXPECT_DOUBLE_EQ(d->attentionTileTime, 0);
  EXPECT_DOUBLE_EQ(d->attentionQueryBlock, 128);
  EXPECT_DOUBLE_EQ(d->attentionKeyBlock, 128);
  EXPECT_NE(
      error(R"("attention_tile_us": -1)").find("efficiency.attention_tile_us"),
      std::string::npos);
  // A unit mistake (seconds written as microseconds) would rank plans by
  // this term alone.
  EXPECT_NE(error(R"("attention_grad_tile_us": 1e30)")
                .find("efficiency.attention_grad_tile_us"),
            std::string::npos);
  EXPECT_EQ(error(R"("attention_query_block": 64.5)"),
            "t.json: field 'efficiency.attention_query_block' must be a whole "
            "number (at least 1), got 64.5");
  EXPECT_EQ(error(R"("attention_key_block": 0.25)"),
            "t.json: field 'efficiency.attention_key_block' must be a whole "
            "number (at least 1), got 0.25");
  EXPECT_NE(error(R"("attention_key_block": 0)").find("attention_key_block"),
            std::string::npos);
  EXPECT_NE(
      error(R"("attention_query_block": "64")").find("attention_query_block"),
      std::string::npos);
}

TEST(ClusterTerm, MeasuredProfilesReplaceTheLinearShare) {
  const char *text = R"({"gpus_per_node": 8,
    "gpu": {"peak_bf16_tflops": 0.04, "hbm_gib": 3, "hbm_tb_per_s": 0.005,
            "shares_node": true},
    "intra_node": {"gb_per_s_per_direction_per_gpu": 1.5},
    "efficiency": {"gemm": 0.8, "memory_ops": {"add": 2.0}},
    "by_ranks_per_node": {
      "1": {"gpu": {"peak_bf16_tflops": 0.2, "hbm_tb_per_s": 0.04},
            "efficiency": {"gemm": 0.9}},
      "4": {"gpu": {"peak_bf16_tflops": 0.07}}}})";
  auto c = parseCluster(text, "cpu.json");
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  ASSERT_EQ(c->rankProfiles.size(), 2u);
  // A measured profile is used as it is: its own fields, the rest of the
  // file's (memory_ops, memory, links) unchanged.
  Cluster one = forWorld(*c, 1);
  EXPECT_DOUBLE_EQ(one.peakFlops, 0.2e12);
  EXPECT_DOUBLE_EQ(one.hbmBandwidth, 0.04e12);
  EXPECT_DOUBLE_EQ(one.gemmEfficiency, 0.9);
  EXPECT_DOUBLE_EQ(one.memoryEfficiencyOf("tfm.add"), 2.0);
  EXPECT_DOUBLE_EQ(one.hbmBytes, c->hbmBytes);
  EXPECT_EQ(one.gpusPerNode, 8);
  EXPECT_EQ(one.name, "cpu.json (by_ranks_per_node.1)");
  // No profile of 2 ranks: the 4-rank profile's share, doubled.
  Cluster two = forWorld(*c, 2);
  EXPECT_DOUBLE_EQ(two.peakFlops, 2 * 0.07e12);
  EXPECT_DOUBLE_EQ(two.gemmEfficiency, 0.8);
  EXPECT_DOUBLE_EQ(two.hbmBytes, 2 * c->hbmBytes);
  // Its name says so (reports print it): not the profile of 2 ranks.
  EXPECT_EQ(two.name, "cpu.json (by_ranks_per_node.4) scaled to 2 ranks");
  // Between the largest profile and the node: the node's own figures,
  // scaled; the name says so (it was the file's name alone, as if the
  // figures were 6 ranks' own).
  Cluster six = forWorld(*c, 6);
  EXPECT_DOUBLE_EQ(six.peakFlops, 0.04e12 * 8 / 6);
  EXPECT_EQ(six.name, "cpu.json (8 ranks) scaled to 6 ranks");
  EXPECT_DOUBLE_EQ(forWorld(*c, 8).peakFlops, 0.04e12);
  EXPECT_EQ(forWorld(*c, 8).name, "cpu.json");
  // A rank updates its optimizer state while its peers wait, so AdamW runs
  // at one rank's speed (the 1-rank profile's bandwidth, 0.04 TB/s), not
  // at the job's share (0.005 TB/s with 8 ranks): 28 B per parameter.
  Cluster eight = forWorld(*c, 8);
  ASSERT_TRUE(eight.alone);
  EXPECT_DOUBLE_EQ(eight.alone->hbmBandwidth, 0.04e12);
  EXPECT_FALSE(one.alone);
  Candidate plan;
  ParameterShards shards;
  shards.denseRank = 1e6;
  const double adamw = 28e6 / (0.04e12 * eight.memoryEfficiency);
  EXPECT_DOUBLE_EQ(optimizerTime(eight, plan, shards), adamw);
  EXPECT_DOUBLE_EQ(optimizerTime(one, plan, shards), adamw);
  EXPECT_DOUBLE_EQ(optimizerTime(forWorld(*c, 4), plan, shards), adamw);
  // Ranks with devices of their own: the job's own figures.
  Cluster gpu = testCluster();
  EXPECT_FALSE(forWorld(gpu, 8).alone);

  auto error = [](std::string profiles, bool shares = true) {
    std::string text = std::string(R"({"gpus_per_node": 8,
      "gpu": {"peak_bf16_tflops": 1, "hbm_gib": 3, "hbm_tb_per_s": 1,
              "shares_node": )") +
                       (shares ? "true" : "false") + R"(},
      "intra_node": {"gb_per_s_per_direction_per_gpu": 1},
      "by_ranks_per_node": )" +
                       profiles + "}";
    auto parsed = parseCluster(text, "x.json");
    EXPECT_FALSE(static_cast<bool>(parsed));
    return parsed ? std::string() : llvm::toString(parsed.takeError());
  };
  EXPECT_EQ(error(R"({"8": {}})"),
            "x.json: field 'by_ranks_per_node' has key '8': expected a rank "
            "count from 1 to gpus_per_node - 1 = 7, written without leading "
            "zeros");
  EXPECT_EQ(error(R"({"two": {}})"),
            "x.json: field 'by_ranks_per_node' has key 'two': expected a rank "
            "count from 1 to gpus_per_node - 1 = 7, written without leading "
            "zeros");
  // "01" beside "1" would be two profiles of one rank, one of them dropped.
  EXPECT_EQ(error(R"({"1": {}, "01": {}})"),
            "x.json: field 'by_ranks_per_node' has key '01': expected a rank "
            "count from 1 to gpus_per_node - 1 = 7, written without leading "
            "zeros");
  // A value just past a bound is printed with the digits that show it.
  EXPECT_EQ(error(R"({"2": {"efficiency": {"gemm": 1.00000001}}})"),
            "x.json: by_ranks_per_node.2: field 'efficiency.gemm' must be a "
            "positive number <= 1, got 1.00000001");
  EXPECT_EQ(error(R"({"1": 3})"), "x.json: field 'by_ranks_per_node.1' must "
                                  "be an object of cluster fields, got 3");
  EXPECT_EQ(error(R"({"2": {"gpu": {"peak_bf16_tflops": -1}}})"),
            "x.json: by_ranks_per_node.2: field 'gpu.peak_bf16_tflops' must be "
            "a positive number, got -1");
  EXPECT_EQ(error(R"({"2": {"gpu": {"shares_node": false}}})"),
            "x.json: field 'by_ranks_per_node.2.gpu.shares_node' must stay "
            "true, got false");
  EXPECT_EQ(error(R"({"2": {"gpus_per_node": 2}})"),
            "x.json: field 'by_ranks_per_node.2.gpus_per_node' is not allowed "
            "(a profile describes the same node with fewer ranks)");
  EXPECT_EQ(error(R"([])"),
            "x.json: field 'by_ranks_per_node' must be an "
            "object of ranks per node -> cluster fields, got []");
  EXPECT_EQ(error(R"({})", false),
            "x.json: field 'by_ranks_per_node' needs 'gpu.shares_node' true "
            "(it describes ranks that time-share one node)");
}

/// The error parseCluster gives for a minimal file whose `host.<field>` is
/// `value` (a JSON literal); "" (and a failed expectation) if it parses.
static std::string hostFieldError(const std::string &field,
                                  const std::string &value) {
  std::string text = R"({"gpus_per_node": 8,
    "gpu": {"peak_bf16_tflops": 1, "hbm_gib": 3, "hbm_tb_per_s": 1},
    "intra_node": {"gb_per_s_per_direction_per_gpu": 1},
    "host": {")" + field +
                     "\": " + value + "}}";
  auto parsed = parseCluster(text, "x.json");
  EXPECT_FALSE(static_cast<bool>(parsed));
  return parsed ? std::string() : llvm::toString(parsed.takeError());
}

TEST(ClusterTerm, PipelineSharingFromTheMeasuredSpeedups) {
  const char *text = R"({"gpus_per_node": 8,
    "gpu": {"peak_bf16_tflops": 0.04, "hbm_gib": 3, "hbm_tb_per_s": 0.005,
            "shares_node": true},
    "intra_node": {"gb_per_s_per_direction_per_gpu": 1.5},
    "host": {"wakeup_latency_us": 3400, "speedup_half_waiting": 1.6,
             "speedup_others_waiting": 4},
    "by_ranks_per_node": {"2": {"host": {"wakeup_latency_us": 2.5,
                                         "speedup_half_waiting": 1,
                                         "speedup_others_waiting": 1}}}})";
  auto c = parseCluster(text, "cpu.json");
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  PipelineSharing eight = pipelineSharing(forWorld(*c, 8));
  EXPECT_DOUBLE_EQ(eight.wakeupLatency, 3400e-6);
  // Half waiting, the others 1.6x: a waiting rank keeps 2 / 1.6 - 1.
  EXPECT_DOUBLE_EQ(eight.waitingUse, 0.25);
  EXPECT_DOUBLE_EQ(eight.maxSpeedup, 4);
  // Two ranks on two cores share nothing; one rank never waits.
  PipelineSharing two = pipelineSharing(forWorld(*c, 2));
  EXPECT_DOUBLE_EQ(two.waitingUse, 1);
  EXPECT_DOUBLE_EQ(two.wakeupLatency, 2.5e-6);
  PipelineSharing one = pipelineSharing(forWorld(*c, 1));
  EXPECT_DOUBLE_EQ(one.wakeupLatency, 0);
  EXPECT_DOUBLE_EQ(one.maxSpeedup, 1);
  // Ranks with devices of their own: nothing, whatever the fields.
  Cluster gpu = *c;
  gpu.sharesNode = false;
  PipelineSharing dedicated = pipelineSharing(gpu);
  EXPECT_DOUBLE_EQ(dedicated.wakeupLatency, 0);
  EXPECT_DOUBLE_EQ(dedicated.waitingUse, 1);

  EXPECT_EQ(hostFieldError("speedup_half_waiting", "0.5"),
            "x.json: field 'host.speedup_half_waiting' must be at least 1 (a "
            "rank does not run slower because others wait), got 0.5");
  EXPECT_EQ(hostFieldError("speedup_others_waiting", "-1"),
            "x.json: field 'host.speedup_others_waiting' must be at least 1 "
            "(a rank does not run slower because others wait), got -1");
  EXPECT_EQ(hostFieldError("speedup_others_waiting", "2000"),
            "x.json: field 'host.speedup_others_waiting' must be a "
            "non-negative number <= 1000, got 2000");
  EXPECT_EQ(hostFieldError("wakeup_latency_us", "-1"),
            "x.json: field 'host.wakeup_latency_us' must be a non-negative "
            "number <= 100000, got -1");
  EXPECT_EQ(c->pinnedCores, 0);
  EXPECT_EQ(hostFieldError("pinned_cores", "1.5"),
            "x.json: field 'host.pinned_cores' must be a whole number of "
            "cores, got 1.5");
  EXPECT_EQ(hostFieldError("pinned_cores", "5000"),
            "x.json: field 'host.pinned_cores' must be a non-negative "
            "number <= 4096, got 5000");
  auto pinned = parseCluster(
      R"({"gpus_per_node": 8, "gpu": {"peak_bf16_tflops": 0.04, "hbm_gib": 3,
          "hbm_tb_per_s": 0.005, "shares_node": true},
          "intra_node": {"gb_per_s_per_direction_per_gpu": 1.5},
          "host": {"pinned_cores": 2}})",
      "cpu.json");
  ASSERT_TRUE(static_cast<bool>(pinned)) << llvm::toString(pinned.takeError());
  EXPECT_EQ(pinned->pinnedCores, 2);
}

TEST(ClusterTerm, SyncSlowdownScalesEveryKernelOfASynchronisingJob) {
  const char *text = R"({"gpus_per_node": 8,
    "gpu": {"peak_bf16_tflops": 0.04, "hbm_gib": 3, "hbm_tb_per_s": 0.005,
            "shares_node": true, "kernel_fixed_us": 2},
    "intra_node": {"gb_per_s_per_direction_per_gpu": 1.5},
    "host": {"sync_slowdown": 0.25},
    "by_ranks_per_node": {"1": {"gpu": {"peak_bf16_tflops": 0.2}},
                          "2": {"host": {"sync_slowdown": 0.05}}}})";
  auto c = parseCluster(text, "cpu.json");
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  EXPECT_DOUBLE_EQ(c->syncSlowdown, 0.25);
  Cluster alone = *c;
  alone.syncSlowdown = 0;
  // Every kind of kernel, its fixed cost included, takes 1.25 times as long.
  GemmShape shape{1, 256, 256, 256};
  EXPECT_DOUBLE_EQ(kernelTime(*c, OpKind::Gemm, 1e9, 1e6, &shape),
                   1.25 * kernelTime(alone, OpKind::Gemm, 1e9, 1e6, &shape));
  EXPECT_DOUBLE_EQ(kernelTime(*c, OpKind::Memory, 0, 1e6),
                   1.25 * kernelTime(alone, OpKind::Memory, 0, 1e6));
  EXPECT_DOUBLE_EQ(kernelTime(*c, OpKind::Attention, 1e9, 0),
                   1.25 * kernelTime(alone, OpKind::Attention, 1e9, 0));
  // Each profile its own; one rank never synchronises, though its profile
  // inherits the node's field; a scaled share keeps its profile's.
  EXPECT_DOUBLE_EQ(forWorld(*c, 1).syncSlowdown, 0);
  EXPECT_DOUBLE_EQ(forWorld(*c, 2).syncSlowdown, 0.05);
  EXPECT_DOUBLE_EQ(forWorld(*c, 4).syncSlowdown, 0.25);
  EXPECT_DOUBLE_EQ(forWorld(*c, 8).syncSlowdown, 0.25);

  auto error = [](std::string value) {
    return hostFieldError("sync_slowdown", value);
  };
  EXPECT_EQ(error("-0.1"), "x.json: field 'host.sync_slowdown' must be a "
                           "non-negative number <= 10, got -0.1");
  EXPECT_EQ(error("\"much\""), "x.json: field 'host.sync_slowdown' must be "
                               "a number, got \"much\"");
  // 1e308 made every step time inf (the table printed "INF%").
  EXPECT_EQ(error("1e308"), "x.json: field 'host.sync_slowdown' must be a "
                            "non-negative number <= 10, got 1e+308");
  EXPECT_EQ(error("1e999"), "x.json: field 'host.sync_slowdown' must be a "
                            "non-negative number <= 10, got inf");

  // A job of one rank never synchronises, also where forWorld has no
  // profile to pick (a file of dedicated devices, a node of one rank).
  Cluster gpu = *c;
  gpu.sharesNode = false;
  EXPECT_DOUBLE_EQ(forWorld(gpu, 1).syncSlowdown, 0);
  EXPECT_DOUBLE_EQ(forWorld(gpu, 2).syncSlowdown, 0.25);
  Cluster single = *c;
  single.gpusPerNode = 1;
  single.rankProfiles.clear();
  EXPECT_DOUBLE_EQ(forWorld(single, 1).syncSlowdown, 0);
}

TEST(ClusterTerm, SyncLatencyAddsToEveryCollectiveOfASynchronisingJob) {
  const char *text = R"({"gpus_per_node": 8,
    "gpu": {"peak_bf16_tflops": 0.04, "hbm_gib": 3, "hbm_tb_per_s": 0.005,
            "shares_node": true},
    "intra_node": {"gb_per_s_per_direction_per_gpu": 1.5},
    "host": {"sync_latency_us": 250},
    "by_ranks_per_node": {"1": {"gpu": {"peak_bf16_tflops": 0.2}},
                          "2": {"host": {"sync_latency_us": 20}}}})";
  auto c = parseCluster(text, "cpu.json");
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  EXPECT_DOUBLE_EQ(c->syncLatency, 250e-6);
  Cluster alone = *c;
  alone.syncLatency = 0;
  // Once per collective and per send/receive, whatever its size; nothing
  // for a group of one or an empty message.
  for (CollectiveKind kind :
       {CollectiveKind::AllReduce, CollectiveKind::AllGather,
        CollectiveKind::ReduceScatter, CollectiveKind::AllToAll,
        CollectiveKind::P2P})
    for (double bytes : {4096.0, 4e6})
      EXPECT_NEAR(collectiveTime(*c, kind, bytes, 4, 8),
                  collectiveTime(alone, kind, bytes, 4, 8) + 250e-6, 1e-15);
  EXPECT_DOUBLE_EQ(collectiveTime(*c, CollectiveKind::AllReduce, 4096, 1, 8),
                   0);
  EXPECT_DOUBLE_EQ(collectiveTime(*c, CollectiveKind::P2P, 0, 2, 8), 0);
  // Each profile its own; a job of one rank never waits for a peer.
  EXPECT_DOUBLE_EQ(forWorld(*c, 1).syncLatency, 0);
  EXPECT_DOUBLE_EQ(forWorld(*c, 2).syncLatency, 20e-6);
  EXPECT_DOUBLE_EQ(forWorld(*c, 8).syncLatency, 250e-6);

  auto error = [](std::string value) {
    return hostFieldError("sync_latency_us", value);
  };
  EXPECT_EQ(error("-1"), "x.json: field 'host.sync_latency_us' must be a "
                         "non-negative number <= 100000, got -1");
  EXPECT_EQ(error("2e5"), "x.json: field 'host.sync_latency_us' must be a "
                          "non-negative number <= 100000, got 200000");
  EXPECT_EQ(error("true"), "x.json: field 'host.sync_latency_us' must be a "
                           "number, got true");
}

TEST(RecomputeTerm, AnalyticFallbacks) {
  Cluster c = testCluster();
  LocalProfile prof; // nothing compiled
  TensorParallelBlock block;
  block.layer.forward = 3e-3;
  block.forward.attention = 1e-3;
  block.forward.comm = 2e-3;
  Candidate plan;
  EXPECT_DOUBLE_EQ(recomputeTime(c, prof, plan, block, 1, 1).time, 0);
  // Selective (Korthikanti et al.): the attention forward.
  plan.recompute = "selective";
  RecomputeTime sel = recomputeTime(c, prof, plan, block, 1, 1);
  EXPECT_DOUBLE_EQ(sel.time, 1e-3);
  EXPECT_DOUBLE_EQ(sel.comm, 0);
  // Full: the whole block forward, its (tp = 1: unhidden) collectives.
  plan.recompute = "full";
  RecomputeTime full = recomputeTime(c, prof, plan, block, 1, 1);
  EXPECT_DOUBLE_EQ(full.time, 3e-3);
  EXPECT_DOUBLE_EQ(full.comm, 2e-3);
}

TEST(PlanErrorTerm, NamesTheViolatedRule) {
  ModelInfo m = termModel();
  LocalProfile prof;
  Candidate plan;
  plan.dp = 2;
  EXPECT_EQ(planError(m, prof, plan, 2), "");
  EXPECT_EQ(planError(m, prof, plan, 4), "dp*mbs*mb != global batch");
  plan.pp = 3;
  EXPECT_EQ(planError(m, prof, plan, 2),
            "8 layers do not split into pp*vpp=3 stages");
  plan.pp = 1;
  plan.cp = 2, plan.tp = 2, plan.cpAttention = "ulysses";
  EXPECT_EQ(planError(m, prof, plan, 2),
            "ulysses: 8 q / 2 kv heads do not split into tp*cp=4");
  plan.cp = 1, plan.tp = 1, plan.cpAttention = "ring", plan.ep = 2;
  EXPECT_EQ(planError(m, prof, plan, 2), "ep>1 on a model without experts");
  prof.error = "did not compile";
  EXPECT_EQ(planError(m, prof, plan, 2), "did not compile");
}

TEST(CrossNodeTerm, GroupsThatSpanNodes) {
  // One node: nothing crosses. Blocks that divide a node never cross.
  EXPECT_FALSE(groupCrossesNodes(16, 1, 16, 16));
  EXPECT_FALSE(groupCrossesNodes(8, 1, 64, 8));
  EXPECT_FALSE(groupCrossesNodes(2, 4, 64, 8));
  EXPECT_FALSE(groupCrossesNodes(1, 16, 64, 8));
  // Larger than a node, or not dividing it (nodes of 6: 0..3, 4..7 | 6).
  EXPECT_TRUE(groupCrossesNodes(16, 1, 32, 8));
  EXPECT_TRUE(groupCrossesNodes(2, 8, 32, 8));
  EXPECT_TRUE(groupCrossesNodes(4, 1, 12, 6));
  EXPECT_TRUE(groupCrossesNodes(2, 2, 12, 6));

  Cluster c;
  c.gpusPerNode = 8;
  Candidate plan;
  plan.dp = 4, plan.tp = 8, plan.cp = 2, plan.sp = true;
  std::vector<std::string> groups = crossNodeGroups(c, plan);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0], "cp group of 2 ranks 8 apart spans nodes of 8 GPUs");
  plan.cp = 1, plan.tp = 16;
  groups = crossNodeGroups(c, plan);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0], "tp+sp group of 16 consecutive ranks spans nodes of 8 "
                       "GPUs");
  // ep folded over tp (etp = 1): ep consecutive ranks; otherwise ep ranks
  // tp apart.
  plan.tp = 4, plan.sp = false, plan.dp = 8, plan.ep = 4;
  EXPECT_TRUE(crossNodeGroups(c, plan).empty());
  plan.ep = 16;
  groups = crossNodeGroups(c, plan);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0],
            "ep group of 16 consecutive ranks spans nodes of 8 GPUs");
  plan.etp = 4, plan.ep = 4;
  groups = crossNodeGroups(c, plan);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0], "ep group of 4 ranks 4 apart spans nodes of 8 GPUs");
  // A one-node cluster has no boundary.
  c.singleNode = true;
  EXPECT_TRUE(crossNodeGroups(c, plan).empty());
}

} // namespace
