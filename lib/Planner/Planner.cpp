//===- Planner.cpp - Cost model and plan search ---------------------------===//
//
// See Planner.h and docs/planner.md. Formulas and their sources:
// - collectives: ring α-β of algorithms.md §6.1 with nccl-tests' S
//   convention (§6.2), hierarchical across nodes;
// - kernels: roofline with per-op-kind achievable efficiency;
// - pipeline: closed-form bubbles of algorithms.md §1.3 for the analytic
//   pass, the list-scheduling simulator (lib/Pipeline) for the best;
// - memory: ZeRO model states with mixed-precision Adam, K = 12
//   (workloads.md §5), activations from the compiled block's residuals and
//   the static memory plan, times the schedule's in-flight microbatches
//   (algorithms.md §1.3).
// `evaluate` composes the per-strategy terms of CostTerms.h.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Planner/Planner.h"
#include "autoshard/Pipeline/Schedule.h"
#include "autoshard/Pipeline/Simulate.h"
#include "autoshard/Planner/CostTerms.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace autoshard::planner {

//===----------------------------------------------------------------------===//
// α-β and roofline
//===----------------------------------------------------------------------===//

namespace {
/// Flat ring collective over `n` ranks on one link class (§6.1).
double ringTime(const Link &link, CollectiveKind kind, double bytes,
                int64_t n) {
  if (n <= 1 || bytes <= 0)
    return 0;
  double bw = link.bandwidth * link.efficiency;
  double frac = double(n - 1) / double(n);
  switch (kind) {
  case CollectiveKind::AllReduce:
    return 2 * (n - 1) * link.latency + 2 * frac * bytes / bw;
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return (n - 1) * link.latency + frac * bytes / bw;
  case CollectiveKind::P2P:
    return link.latency + bytes / bw;
  }
  return 0;
}
} // namespace

double collectiveTime(const Cluster &cluster, CollectiveKind kind, double bytes,
                      int64_t n, int64_t perNode) {
  // The kind's implementation moves its bytes at this factor of the links'
  // bandwidth (Cluster::collectiveBandwidthScale).
  double scale = cluster.collectiveBandwidthScale[static_cast<size_t>(kind)];
  if (kind == CollectiveKind::P2P) {
    Link link = perNode > 1 ? cluster.intraNode : cluster.interNode;
    link.efficiency *= scale;
    return bytes > 0 ? cluster.syncLatency + ringTime(link, kind, bytes, 2) : 0;
  }
  if (n <= 1)
    return 0;
  int64_t local = std::max<int64_t>(1, std::min(n, perNode));
  int64_t nodes = (n + local - 1) / local;
  // Latency: NCCL's own ring model (src/graph/tuning.cc,
  // ncclTopoTuneModel): a fixed cost per collective plus one α per ring
  // step, the intra-node α except on the node-crossing steps (nodes - 1
  // per pass), which pay the inter-node α. A pairwise all-to-all crosses
  // nodes for each of its n - local off-node peers.
  double passes = kind == CollectiveKind::AllReduce ? 2.0 : 1.0;
  double steps = passes * double(n - 1);
  double interSteps = kind == CollectiveKind::AllToAll
                          ? double(n - local)
                          : passes * double(nodes - 1);
  double alpha = cluster.collectiveLatency + cluster.syncLatency +
                 (steps - interSteps) * cluster.intraNode.latency +
                 interSteps * cluster.interNode.latency;
  Cluster bw = cluster;
  bw.intraNode.latency = bw.interNode.latency = 0;
  bw.intraNode.efficiency *= scale;
  bw.interNode.efficiency *= scale;
  if (nodes <= 1)
    return alpha + ringTime(bw.intraNode, kind, bytes, n);
  if (local == 1)
    return alpha + ringTime(bw.interNode, kind, bytes, n);
  // Hierarchical bandwidth: intra-node RS, inter-node op on 1/local of the
  // data, intra-node AG (all-reduce); for AG/RS/A2A the intra-node part
  // moves the node's share and the inter-node part the rest.
  switch (kind) {
  case CollectiveKind::AllReduce:
    return alpha +
           ringTime(bw.intraNode, CollectiveKind::ReduceScatter, bytes, local) +
           ringTime(bw.interNode, CollectiveKind::AllReduce, bytes / local,
                    nodes) +
           ringTime(bw.intraNode, CollectiveKind::AllGather, bytes, local);
  default:
    // Intra-node phase on the full buffer, inter-node phase on 1/local.
    return alpha + ringTime(bw.intraNode, kind, bytes, local) +
           ringTime(bw.interNode, kind, bytes / local, nodes);
  }
}

double gemmShapeEfficiency(const Cluster &cluster, const GemmShape &shape) {
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0)
    return 1;
  double quantised = 1;
  if (cluster.sms > 0) {
    // Wave and tile quantisation of the best tile: every started tile and
    // every started wave costs as much as a full one.
    quantised = 0;
    double useful = shape.batch * shape.m * shape.n;
    for (auto [tm, tn] : cluster.gemmTiles) {
      double tiles = shape.batch * std::ceil(shape.m / double(tm)) *
                     std::ceil(shape.n / double(tn));
      double waves = std::ceil(tiles / double(cluster.sms));
      quantised =
          std::max(quantised, useful / (waves * double(cluster.sms) * tm * tn));
    }
  }
  // Each tile runs k / tk main-loop steps plus a fixed prologue and
  // epilogue worth gemmK0 elements of k.
  double depth = shape.k / (shape.k + cluster.gemmK0);
  return quantised * depth;
}

double attentionTiles(const Cluster &cluster, double seqQ, double seqK,
                      bool causal) {
  const double qb = cluster.attentionQueryBlock, kb = cluster.attentionKeyBlock;
  if (seqQ <= 0 || seqK <= 0 || !(qb > 0) || !(kb > 0))
    return 0;
  const double queryBlocks = std::ceil(seqQ / qb);
  if (!causal)
    return queryBlocks * std::ceil(seqK / kb);
  // Beyond 2^16 query blocks the triangle's area and its diagonal: the
  // count need not cost a loop over a million blocks.
  if (queryBlocks > 65536)
    return qb / kb * queryBlocks * (queryBlocks + 1) / 2 + queryBlocks / 2;
  double tiles = 0;
  for (double i = 0; i < queryBlocks; ++i)
    tiles += std::ceil(std::min(std::min(seqK, seqQ), (i + 1) * qb) / kb);
  return tiles;
}

double kernelTime(const Cluster &cluster, OpKind kind, double flops,
                  double bytes, const GemmShape *shape,
                  llvm::StringRef opName) {
  double eff = kind == OpKind::Gemm        ? cluster.gemmEfficiency
               : kind == OpKind::Attention ? cluster.attentionEfficiency
                                           : 1.0;
  if (kind == OpKind::Gemm && shape)
    eff *= gemmShapeEfficiency(cluster, *shape);
  double compute = flops / (cluster.peakFlops * eff);
  double memEff = kind == OpKind::Memory ? cluster.memoryEfficiencyOf(opName)
                                         : cluster.memoryEfficiency;
  double memory = bytes / (cluster.hbmBandwidth * memEff);
  // Ranks that time-share cores lose part of them at every
  // synchronisation (Cluster::syncSlowdown).
  return (1 + cluster.syncSlowdown) *
         (std::max(compute, memory) + cluster.kernelOverhead +
          (kind == OpKind::Gemm ? cluster.gemmOverhead : 0));
}

//===----------------------------------------------------------------------===//
// Data-parallel, ZeRO and context-parallel communication
//===----------------------------------------------------------------------===//

double tpOverlapFraction(const Cluster &c, int64_t tp) {
  // Chunked (ring-exchange) overlap: the GEMM runs in tp chunks, each
  // chunk's transfer hides behind another chunk's GEMM, one of tp is
  // exposed.
  if (tp <= 1)
    return 0;
  return c.tpOverlap * double(tp - 1) / double(tp);
}

Exposure bucketedCollective(const Cluster &c, CollectiveKind kind,
                            double params, double elementBytes, int64_t n,
                            int64_t perNode, double hideable, int64_t buckets) {
  Exposure e;
  if (n <= 1 || params <= 0)
    return e;
  if (buckets > 0) {
    e.buckets = buckets;
  } else if (c.dpOverlap > 0) {
    // Megatron-Core DDP: bucket_size = max(40M, 1M * dp) parameters when
    // overlap_grad_reduce is on (one bucket without overlap).
    double bucket = c.dpBucketParams > 0 ? c.dpBucketParams
                                         : std::max(40e6, 1e6 * double(n));
    e.buckets = std::max<int64_t>(1, int64_t(std::ceil(params / bucket)));
  }
  double one =
      collectiveTime(c, kind, params * elementBytes / e.buckets, n, perNode);
  e.total = e.buckets * one;
  e.exposed = c.dpOverlap > 0 ? std::max(one, e.total - c.dpOverlap * hideable)
                              : e.total;
  return e;
}

double gradElementBytes(const Cluster &c, double elementBytes) {
  return std::max(elementBytes, c.gradBytes);
}

Exposure dpSyncExposure(const Cluster &c, int64_t zero, double params,
                        double elementBytes, int64_t n, int64_t perNode,
                        double microbatches, double forward, double backward,
                        int64_t buckets) {
  Exposure e;
  if (n <= 1)
    return e;
  // Gradients are reduced in the gradient buffer's element size,
  // parameters gathered in theirs.
  double gradBytes = gradElementBytes(c, elementBytes);
  if (zero == 0)
    return bucketedCollective(c, CollectiveKind::AllReduce, params, gradBytes,
                              n, perNode, backward, buckets);
  Exposure rs = bucketedCollective(c, CollectiveKind::ReduceScatter, params,
                                   gradBytes, n, perNode, backward, buckets);
  Exposure ag = bucketedCollective(c, CollectiveKind::AllGather, params,
                                   elementBytes, n, perNode, forward, buckets);
  // Reduce-scattered once per step (the sums of the microbatches), or after
  // every microbatch where the software does so
  // (Cluster::zeroReducesEveryMicrobatch).
  double times = zero == 2 && c.zeroReducesEveryMicrobatch ? microbatches : 1;
  e.total = times * rs.total + ag.total;
  e.exposed = times * rs.exposed + ag.exposed;
  e.buckets = rs.buckets;
  return e;
}

Zero3Exposure zero3Exposure(const Cluster &c, double layerParams,
                            double otherParams, double elementBytes,
                            int64_t layers, int64_t n, int64_t perNode,
                            double layerForward, double layerBackward,
                            bool reduce) {
  Zero3Exposure z;
  if (n <= 1)
    return z;
  double ov = c.dpOverlap;
  double ag = collectiveTime(c, CollectiveKind::AllGather,
                             layerParams * elementBytes, n, perNode);
  double rs =
      reduce ? collectiveTime(c, CollectiveKind::ReduceScatter,
                              layerParams * gradElementBytes(c, elementBytes),
                              n, perNode)
             : 0;
  if (layers > 0) {
    // Forward: gather block 1, then block i+1's gather runs during block i.
    z.forward = ag + (layers - 1) * std::max(0.0, ag - ov * layerForward);
    // Backward: block i-1's gather and block i+1's reduce-scatter run during
    // block i; the last reduce-scatter is exposed.
    z.backward =
        ag + (layers - 1) * std::max(0.0, ag + rs - ov * layerBackward) + rs;
  }
  z.rootForward = collectiveTime(c, CollectiveKind::AllGather,
                                 otherParams * elementBytes, n, perNode);
  if (reduce)
    z.rootBackward = collectiveTime(
        c, CollectiveKind::ReduceScatter,
        otherParams * gradElementBytes(c, elementBytes), n, perNode);
  return z;
}

RingExposure ringAttentionExposure(const Cluster &c, double kvBytes,
                                   double mergeBytes, int64_t cp, bool intra,
                                   double attentionForward,
                                   double attentionBackward) {
  RingExposure r;
  if (cp <= 1)
    return r;
  int64_t perNode = intra ? 2 : 1;
  double kv = collectiveTime(c, CollectiveKind::P2P, kvBytes, 2, perNode);
  // dK, dV travel in fp32: twice the bf16 K, V bytes.
  double dkv = collectiveTime(c, CollectiveKind::P2P, 2 * kvBytes, 2, perNode);
  double stepF = attentionForward / cp, stepB = attentionBackward / cp;
  // Extra kernels per step: the block kernel and the merge / accumulation
  // (memory-bound, fp32: attention_merge forward, an add of dK, dV
  // backward).
  double mergeF = kernelTime(c, OpKind::Memory, 0, mergeBytes, nullptr,
                             "tfm.attention_merge");
  double mergeB =
      kernelTime(c, OpKind::Memory, 0, 3 * 4 * kvBytes / 2, nullptr, "tfm.add");
  // The transfer hides behind the step's block; the wait for a peer that
  // time-shares the cores (Cluster::syncLatency, in each exchange's time)
  // does not: the step cannot start before the peer has sent.
  double wait = c.syncLatency;
  r.forward = (cp - 1) * (std::max(0.0, kv - wait - stepF) + wait +
                          c.kernelOverhead + mergeF);
  r.backward = (cp - 1) * (std::max(0.0, kv + dkv - 2 * wait - stepB) +
                           2 * wait + c.kernelOverhead + mergeB) +
               dkv;
  return r;
}

//===----------------------------------------------------------------------===//
// Candidates
//===----------------------------------------------------------------------===//

std::string Candidate::str() const {
  return llvm::formatv("pp={0},dp={1},cp={2},tp={3},sp={4},zero={5},ep={6},"
                       "mbs={7},mb={8},schedule={9},vpp={10},recompute={11}",
                       pp, dp, cp, tp, sp ? 1 : 0, zero, ep, mbs, mb, schedule,
                       vpp, recompute)
             .str() +
         (cpAttention != "ring" ? ",cp_attention=" + cpAttention : "") +
         (isZigzag() ? ",cp_layout=zigzag" : "") +
         (etp > 1 ? ",etp=" + std::to_string(etp) : "");
}

std::string contextParallelPlanKeys(const Candidate &plan) {
  if (plan.cp <= 1)
    return "";
  return llvm::formatv("cp={0},cp_attention={1},cp_layout={2}", plan.cp,
                       plan.cpAttention,
                       plan.isZigzag() ? "zigzag" : "contiguous")
      .str();
}

std::string Candidate::applyPlan() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto degree = [&](llvm::StringRef key, int64_t value) {
    if (value != 1)
      os << key << "=" << value << ",";
  };
  degree("pp", pp);
  os << "dp=" << dp << ",";
  degree("cp", cp);
  degree("tp", tp);
  if (sp)
    os << "sp=1,";
  if (zero)
    os << "zero=" << zero << ",";
  degree("ep", ep);
  degree("etp", etp);
  degree("mb", mb);
  if (pp > 1 && schedule != "1f1b")
    os << "schedule=" << schedule << ",";
  degree("vpp", vpp);
  if (recompute != "none")
    os << "recompute=" << recompute << ",";
  if (cpAttention != "ring")
    os << "cp_attention=" << cpAttention << ",";
  if (isZigzag())
    os << "cp_layout=zigzag,";
  text.pop_back();
  return text;
}

std::string Candidate::family() const {
  std::string fam =
      llvm::formatv("tp={0}{1} pp={2} cp={3}", tp, sp ? "+sp" : "", pp, cp)
          .str();
  if (ep > 1)
    fam += llvm::formatv(" ep={0}", ep).str();
  if (etp > 1)
    fam += llvm::formatv(" etp={0}", etp).str();
  if (cpAttention != "ring")
    fam += " " + cpAttention;
  return fam;
}

namespace {

/// `bytes` in GiB with one decimal, or in MiB below 10 GiB (so that small
/// devices' limits stay distinguishable).
std::string formatBytes(double bytes) {
  if (bytes >= 10 * 1073741824.0)
    return llvm::formatv("{0:F1} GiB", bytes / 1073741824.0).str();
  return llvm::formatv("{0:F1} MiB", bytes / 1048576.0).str();
}

std::optional<pipeline::ScheduleKind> scheduleKind(const std::string &s) {
  using K = pipeline::ScheduleKind;
  if (s == "1f1b")
    return K::OneFOneB;
  if (s == "interleaved")
    return K::Interleaved1F1B;
  if (s == "zb-h1")
    return K::ZBH1;
  if (s == "zb-v")
    return K::ZBV;
  if (s == "gpipe")
    return K::GPipe;
  if (s == "looped-bfs")
    return K::LoopedBFS;
  return std::nullopt;
}

/// How a candidate's pipeline ranks share their node (pipelineSharing).
pipeline::ProcessorSharing sharingOf(const Estimate &e) {
  pipeline::ProcessorSharing sharing;
  sharing.waitingUse = e.sharingWaitingUse;
  sharing.maxSpeedup = e.sharingMaxSpeedup;
  const int64_t p = e.plan.pp, cores = e.pinnedCores, ranks = e.nodeRanks;
  if (cores > 0 && ranks > cores && p > 1) {
    // The runtime's blocks (cpu/Placement.h): mesh position i = d * pp + s
    // with pp innermost on core i * cores / ranks, so replica 0's stage s
    // is on core s * cores / ranks, and ranks / cores / pp replicas share
    // a core where a core holds whole replicas.
    for (int64_t s = 0; s < p; ++s)
      sharing.coreOf.push_back(s * cores / ranks);
    sharing.ranksPerCore = double(ranks) / double(cores);
    sharing.copies = std::max(1.0, sharing.ranksPerCore / double(p));
  }
  return sharing;
}

/// Per-stage op costs of a candidate, for the simulator.
pipeline::SimulationOptions stageCosts(const Estimate &e) {
  const Candidate &p = e.plan;
  pipeline::SimulationOptions opts;
  int64_t stages = p.pp * p.vpp;
  auto kind = scheduleKind(p.schedule);
  bool split = kind && pipeline::splitsBackward(*kind);
  for (int64_t s = 0; s < stages; ++s) {
    pipeline::OpCosts c;
    c.forward = e.tF;
    c.inputGrad = e.tI;
    c.weightGrad = e.tW;
    if (s == 0) {
      c.forward += e.firstF;
      c.inputGrad += e.firstB;
    }
    if (s == stages - 1) {
      c.forward += e.lastF;
      c.inputGrad += e.lastB;
    }
    c.backward = c.inputGrad + c.weightGrad;
    if (!split) {
      c.inputGrad = c.backward;
      c.weightGrad = 0;
    }
    opts.stageCosts.push_back(c);
  }
  opts.p2pLatency = e.tP2P;
  opts.wakeupLatency = e.tWakeup;
  opts.sharing = sharingOf(e);
  return opts;
}

/// How `e`'s dynamic memory follows from its in-flight layers: `perLayer`
/// bytes each and `transient` bytes besides them, or (`frame`, the cluster's
/// `memory.grad_buffer` = "frame") the static memory plan's peak composed
/// by framePeak from `layers` (its in-flight count replaced) plus
/// `transient`.
struct DynamicMemory {
  double perLayer = 0, transient = 0;
  bool frame = false;
  const StepMemory *phases = nullptr;
  double b = 1, scale = 1;
  FrameLayers layers;
  /// The model states but the gradients (which the frame peak sets).
  double paramBytes = 0, optimizerBytes = 0;
  /// Pipelines: the first and last stage's model states and unsharded
  /// gradient bytes (what their microbatch sums take): the blocks' and the
  /// non-block parameters the embedding / the head reads.
  ModelStates firstStates, lastStates;
  double firstGrads = 0, lastGrads = 0;
  /// ZeRO-1 at one microbatch under SP: a rank without the head has no
  /// tp all-reduce before its gradient reductions (the embedding's is a
  /// reduce-scatter), so dist-bucket-collectives buckets the dp
  /// reduce-scatters (first seen) before the norms' tp all-reduces they
  /// read, which still sit at the end of the step: each block's bucket
  /// stays there and the rank holds its blocks' whole gradients (this,
  /// per layer) until the tail. 0: reduce-scattered per block.
  double headlessLayerGradBytes = 0;
  /// The same for a first rank that also runs the last stage (ZB-V): the
  /// non-block parameters either end reads.
  ModelStates bothStates;
  double bothGrads = 0;
  /// The same for the last rank then (ZB-V's, the middle stages): the
  /// blocks only.
  ModelStates middleStates;
  double middleGrads = 0;
  /// Pipeline stages and the bytes a stage sends per microbatch.
  int64_t stages = 1, vpp = 1;
  bool gpipe = false, zbv = false;
  double boundaryBytes = 0, tokenBytes = 0;
  /// Zero-bubble schedules: a block's gradient bytes that its deferred W
  /// reads (LocalProfile::weightGradInputBytes) and the gradients W
  /// computes (one block's, unsharded).
  double weightInputBytes = 0, layerWeightGradBytes = 0;
  /// The bytes the head's forward keeps for its backward per microbatch
  /// (LocalProfile::headKeptBytes).
  double headKeptBytes = 0;
  /// Gradient bytes (unsharded) of the tied embedding (the parameters both
  /// the embedding and the head read), of the non-block parameters the
  /// embedding reads (as the backward produces them) and of those only the
  /// head reads.
  double tiedGradBytes = 0, embeddingGradBytes = 0, headOnlyGradBytes = 0;
  /// Under full recomputation: the residual bytes per layer its re-run
  /// restores (those without recomputation less those it keeps).
  double recomputedBytes = 0;
  /// A block backward's re-gathered residuals (FrameLayers).
  double weightRegatherBytes = 0;
  /// Pipelines under ZeRO-3 with several microbatches: the non-block
  /// parameters the first / last stage reads, gathered once with its first
  /// block's unit and held until its last use (FrameLayers::heldRootBytes).
  double firstRootBytes = 0, lastRootBytes = 0;
  /// Of them, those both ends read (a tied embedding).
  double sharedRootBytes = 0;
};

/// Full recomputation's re-run calls (FrameLayers::rerunCalls): under
/// ZeRO-3 a block backward call prefetches the next re-run's parameters
/// (`rc`'s rerunParams of `elementBytes` each, gathered and packed; a
/// whole block's where the mode did not compile).
void setRerunCalls(FrameLayers &l, const Candidate &plan,
                   const ParameterShards &shards, const RecomputeProfile *rc,
                   double elementBytes) {
  if (plan.recompute != "full")
    return;
  l.rerunCalls = true;
  if (plan.zero == 3 && shards.dpGroup > 1)
    l.rerunGatherBytes =
        rc && rc->rerunParams > 0
            ? rc->rerunParams * elementBytes * (1 + 1 / double(shards.dpGroup))
            : l.gatheredPerLayer + l.gatherPackBytes;
  if (plan.zero == 3 && shards.dpGroup > 1)
    l.rerunGatheredBytes =
        l.rerunGatherBytes / (1 + 1 / double(shards.dpGroup));
}

/// Sets the per-item bytes of `l`'s weight-gradient passes from `dyn`.
void setWeightPassBytes(FrameLayers &l, const DynamicMemory &dyn) {
  l.weightInputBytes = dyn.weightInputBytes;
  l.weightGradBytes = dyn.layerWeightGradBytes;
  l.boundaryBytes = dyn.boundaryBytes;
  // With one microbatch the tokens are the step's input (io), not a slice.
  l.tokenBytes = l.microbatches > 1 ? dyn.tokenBytes : 0;
  l.headKeptBytes = dyn.headKeptBytes;
  l.tiedGradBytes = dyn.tiedGradBytes;
  l.embeddingGradBytes = dyn.embeddingGradBytes;
  l.headOnlyGradSumBytes = dyn.headOnlyGradBytes;
  l.recomputedBytes = dyn.recomputedBytes;
  l.weightRegatherBytes = dyn.weightRegatherBytes;
}

/// Whether a ZB-V rank's block backward calls are all scored as its
/// simulated passes (FrameLayers::passesOnly): under ZeRO-3, where the
/// closed-form backward candidates prefetch a gather at every call (the
/// last stage's I is followed by its own W, which gathers nothing); under
/// full recomputation each I and whole backward pass is also scored at the
/// re-run call before it.
bool zbvZero3Passes(const FrameLayers &l, const DynamicMemory &dyn) {
  return dyn.zbv && l.gatheredPerLayer > 0 && !l.weightPasses.empty() &&
         !l.inputPasses.empty();
}

struct ScheduleMemory;
std::vector<WeightPass> splitForwardPasses(const FrameLayers &l,
                                           const ScheduleMemory *sched,
                                           bool last);

/// What a simulated pipeline schedule tells of its ranks' memory.
struct ScheduleMemory {
  /// Each rank's peak layers in flight.
  std::vector<double> rankLayers;
  /// Each rank's split weight-gradient passes (FrameLayers::weightPasses).
  std::vector<std::vector<WeightPass>> rankWeightPasses;
  /// Each rank's whole backwards when it runs several stages (interleaved;
  /// backwardPassesOf).
  std::vector<std::vector<WeightPass>> rankBackwardPasses;
  /// Each rank's split input-gradient calls (FrameLayers::inputPasses).
  std::vector<std::vector<InputPass>> rankInputPasses;
  /// Each rank's forwards (forwardPassesOf).
  std::vector<std::vector<WeightPass>> rankForwardPasses;
  /// Each rank's whole backwards (backwardPassesOf) where every rank runs
  /// one stage: the middle ranks (1 .. p - 2) are scored at them.
  std::vector<std::vector<WeightPass>> rankWholeBackwards;
  /// The most microbatches whose head forward has run and whose head
  /// backward has not, at a backward of the last stage (itself included).
  double lastStageHeads = 1;
  /// The first rank also runs the last stage (ZB-V's V-shaped map).
  bool firstRankHasHead = false;
  /// The first and the last rank score each backward call as a pass: it is
  /// split into I and W, or (ZB-V's first stage) a whole backward pass
  /// (FrameLayers::splitBackwards).
  bool firstRankSplitOnly = false, lastRankSplitOnly = false;
  /// The bytes of the last rank's input-gradient sends and tied embedding
  /// shares not yet waited for at a backward after its first, at most
  /// (pendingSends).
  double lastSentBytes = 0;
  /// Those live at the last rank's second backward.
  double secondSentBytes = 0;
  /// At a backward after its first but before its last, at most.
  double earlierSentBytes = 0;
  /// A backward of the last rank but its last is followed by a forward as
  /// its next block call (1F1B's last stage: FrameLayers::forwardAfterBottom).
  bool lastForwardAfterBackward = false;
};

/// The forwards a split rank (the first or `last`) is scored at: under
/// ZeRO-3, where its whole backward call's closed form is not
/// (FrameLayers::splitBackwards), none elsewhere.
std::vector<WeightPass> splitForwardPasses(const FrameLayers &l,
                                           const ScheduleMemory *sched,
                                           bool last) {
  if (!sched || sched->rankForwardPasses.empty() || !l.splitBackwards ||
      l.gatheredPerLayer == 0 || l.inputPasses.empty())
    return {};
  return last ? sched->rankForwardPasses.back()
              : sched->rankForwardPasses.front();
}

/// The simulated passes of the first or `last` rank of a split schedule:
/// its W passes, I calls (and whether they are all its backward runs) and
/// forwards, with the bytes each counts, and whether it is scored at them
/// only (ZB-V under ZeRO-3).
void setSplitRankPasses(
    FrameLayers &l, const DynamicMemory &dyn, const ScheduleMemory *sched,
    const std::vector<std::vector<WeightPass>> &rankWeightPasses, bool last) {
  if (!rankWeightPasses.empty()) {
    l.weightPasses = last ? rankWeightPasses.back() : rankWeightPasses.front();
    setWeightPassBytes(l, dyn);
  }
  if (sched && !sched->rankInputPasses.empty()) {
    l.inputPasses =
        last ? sched->rankInputPasses.back() : sched->rankInputPasses.front();
    l.splitBackwards =
        last ? sched->lastRankSplitOnly : sched->firstRankSplitOnly;
    setWeightPassBytes(l, dyn);
  }
  l.forwardPasses = splitForwardPasses(l, sched, last);
  l.passesOnly = zbvZero3Passes(l, dyn);
}

/// Interleaved under ZeRO-3: the last rank also runs earlier stages, so its
/// backwards are scored as its simulated program holds them
/// (backwardPassesOf), with the head's gathered non-block parameters held
/// until its last head op (WeightPass::headOpsLeft).
void setLastRankBackwardPasses(FrameLayers &last, const DynamicMemory &dyn,
                               const ScheduleMemory *sched, bool firstHasHead) {
  if (!sched || firstHasHead || sched->rankBackwardPasses.empty() ||
      last.gatheredPerLayer <= 0)
    return;
  last.backwardPasses = sched->rankBackwardPasses.back();
  setWeightPassBytes(last, dyn);
  last.regather = 0;
  last.rootLastBytes = dyn.lastRootBytes;
}

/// Whether the `nth` backward (1-based) of GPipe's last rank, of `m`
/// microbatches, is followed by another backward with no receive between
/// (the head computes each one's input gradient on the rank; elsewhere
/// 1F1B alternates, and a rank without the head receives it first).
bool lastBackwardFollows(const DynamicMemory &dyn, double m, double nth) {
  return dyn.gpipe && dyn.vpp == 1 && m >= nth + 1;
}

/// GPipe's last stage holds every microbatch at its first backward (`peak`,
/// of `last`), then one fewer at each: at its second the first one's sums
/// (`dyn.lastGrads` but the tied embedding's share, sent per microbatch)
/// and what it sent back and has not waited for (`sentBytes`) are live
/// too, with m - 1 microbatches in flight and `heads` - 2 other head values
/// kept. Raises `peak` to that backward's when heavier.
void considerSecondBackward(FramePeak &peak, const FrameLayers &last,
                            const DynamicMemory &dyn, double heads,
                            double sentBytes) {
  if (last.microbatches < 2 || dyn.layers.accumulated <= 0)
    return;
  FrameLayers later = last;
  later.inflight = std::max(0.0, last.inflight - last.layers);
  later.headsKept = std::max(0.0, heads - 2) * dyn.headKeptBytes;
  later.accumulated = std::max(0.0, dyn.lastGrads - dyn.tiedGradBytes);
  later.sentGradBytes = later.sentGradInflightBytes = sentBytes;
  later.backwardFollows = lastBackwardFollows(dyn, last.microbatches, 2);
  later.backwardAfterBottom = later.backwardFollows;
  // With two microbatches the second backward is the last head backward.
  later.rootForwardOnly = last.microbatches <= 2;
  later.laterBlockCall = last.laterBlockCall && last.microbatches > 2;
  FramePeak other = framePeak(*dyn.phases, dyn.b, dyn.scale, later);
  if (other.total() > peak.total())
    peak = other;
}

/// GPipe's last stage at its last microbatch's backward: one microbatch in
/// flight, no other head values, the head's parameters dead, every
/// earlier microbatch's sums and the sends not yet waited for
/// (`sentBytes`: its input gradients and tied shares, waited at the end
/// of the step). Raises `peak` (of `last`) to it when heavier; without
/// ZeRO only.
void considerLastBackward(FramePeak &peak, const FrameLayers &last,
                          const DynamicMemory &dyn, double sentBytes) {
  // ZeRO: the last microbatch's sums are reduce-scattered per layer (not
  // derived here).
  if (last.microbatches < 3 || dyn.layers.accumulated <= 0 ||
      last.sumShardBytes > 0 || last.gatheredPerLayer > 0)
    return;
  FrameLayers final = last;
  final.inflight = last.layers;
  final.headsKept = 0;
  final.accumulated = std::max(0.0, dyn.lastGrads - dyn.tiedGradBytes);
  final.sentGradBytes = final.sentGradInflightBytes = sentBytes;
  final.backwardFollows = final.backwardAfterBottom = false;
  final.rootForwardOnly = true;
  final.laterBlockCall = false;
  FramePeak other = framePeak(*dyn.phases, dyn.b, dyn.scale, final);
  if (other.total() > peak.total())
    peak = other;
}

/// A last stage's backward of a microbatch before its last (1F1B, ZB-H1):
/// the head's gathered parameters are still held there (its last head
/// backward is their last use), with `sentBytes` of input gradients sent
/// and not waited for, and the earlier microbatches' sums from the third
/// microbatch on; `forwardNext`: its bottom backward call is followed by
/// the next microbatch's forward. Raises `peak` (of `last`) to it when
/// heavier.
void considerEarlierMicrobatch(FramePeak &peak, const FrameLayers &last,
                               const DynamicMemory &dyn, double sentBytes,
                               bool forwardNext) {
  FrameLayers earlier = last;
  earlier.rootForwardOnly = false;
  earlier.laterBlockCall = true;
  earlier.forwardAfterBottom = forwardNext;
  earlier.sentGradBytes = sentBytes;
  earlier.sentGradInflightBytes =
      std::min(last.sentGradInflightBytes, sentBytes);
  if (last.microbatches < 3)
    earlier.accumulated = 0;
  FramePeak other = framePeak(*dyn.phases, dyn.b, dyn.scale, earlier);
  if (other.total() > peak.total())
    peak = other;
}

/// A middle pipeline rank (one stage of blocks: neither the embedding nor
/// the head, blocks-only states) at each whole backward of its simulated
/// program (`passes`, backwardPassesOf), the heaviest: its microbatches in
/// flight there, the forward outputs and input gradients it sent and has
/// not waited for, and from its second backward on the earlier
/// microbatches' sums. Its received gradient is the next stage's input
/// gradient only: the last stage sends the tied embedding's share to the
/// first stage's rank, so neither that share nor the head-only parameters'
/// gradients of the one-block phase are held.
FramePeak middleRankPeak(const DynamicMemory &dyn,
                         const std::vector<WeightPass> &passes) {
  FrameLayers mid = dyn.layers;
  mid.head = false;
  if (dyn.headlessLayerGradBytes > 0) {
    mid.layerGradBytes = dyn.headlessLayerGradBytes;
    mid.reducingGradBytes = 0;
  }
  mid.headOnlyGradBytes += dyn.tiedGradBytes;
  mid.tokenSlices = 0;
  mid.boundaryBytes = dyn.boundaryBytes;
  FramePeak best;
  for (auto [k, w] : llvm::enumerate(passes)) {
    FrameLayers at = mid;
    at.inflight = w.inflight;
    at.accumulated =
        mid.accumulated > 0 && w.summedLayers > 0 ? dyn.middleGrads : 0;
    at.sendBytes = w.sentActivations * dyn.boundaryBytes;
    at.sentGradBytes = at.sentGradInflightBytes =
        w.sentGrads * dyn.boundaryBytes;
    at.laterBlockCall = !w.lastCall;
    // One layer per stage: whether another backward is the next call
    // (then its re-gathered residuals are started during this one);
    // several: GPipe's backwards but the last microbatch's.
    const bool backwardNext = mid.layers == 1
                                  ? w.prefetched > 0
                                  : dyn.gpipe && w.inflight > mid.layers;
    at.backwardFollows = at.backwardAfterBottom = backwardNext;
    at.bottomBeforeForward = w.forwardNext;
    at.nextKnown = mid.layers == 1;
    at.forwardNext = w.forwardNext;
    FramePeak p = framePeak(*dyn.phases, dyn.b, dyn.scale, at);
    if (k == 0 || p.total() > best.total())
      best = p;
  }
  return best;
}

/// Sets `e`'s memory for `layers` in-flight layers (`dyn`; the heaviest
/// rank's; `sched`: the simulated schedule's ranks, when simulated), its
/// model states and fixed bytes (already set) and the allocator's
/// fragmentation of the dynamic part.
void setMemory(Estimate &e, const Cluster &c, double layers,
               const DynamicMemory &dyn,
               const ScheduleMemory *sched = nullptr) {
  static const ScheduleMemory closedForm;
  const std::vector<double> &rankLayers =
      sched ? sched->rankLayers : closedForm.rankLayers;
  const auto &rankWeightPasses =
      sched ? sched->rankWeightPasses : closedForm.rankWeightPasses;
  e.inflightLayers = layers;
  if (dyn.frame) {
    FrameLayers l = dyn.layers;
    l.inflight = layers;
    FramePeak peak = framePeak(*dyn.phases, dyn.b, dyn.scale, l);
    if (dyn.stages > 1) {
      // The first stage holds `layers` in flight without the head, the
      // last stage `rankLayers.back()` with it (closed form: one
      // microbatch's, all of them under GPipe); the heavier is reported.
      // Gradients accumulate from a rank's first backward on: they count
      // only where a microbatch's backward precedes the last forward (fewer
      // microbatches in flight than in the step).
      const double perRank = l.layers;
      auto microbatchesOf = [&](double inflight) {
        return std::max(1.0, std::ceil(inflight / perRank - 1e-9));
      };
      // The first rank's own peak in flight when simulated (ZB-V's first
      // rank holds fewer than its middle one).
      if (!rankLayers.empty())
        l.inflight = rankLayers.front();
      const double microbatches = microbatchesOf(l.inflight);
      const double nextInflight =
          dyn.gpipe ? l.microbatches
                    : std::min(double(dyn.stages - 1), l.microbatches);
      const double lastInflight =
          !rankLayers.empty() ? rankLayers.back()
                              : (dyn.gpipe ? l.microbatches : 1) * perRank;
      // ZB-V's first rank also runs the last stage, with the head.
      const bool firstHasHead = sched ? sched->firstRankHasHead : dyn.zbv;
      l.head = firstHasHead;
      if (!firstHasHead && dyn.headlessLayerGradBytes > 0) {
        l.layerGradBytes = dyn.headlessLayerGradBytes;
        l.reducingGradBytes = 0;
      }
      l.accumulated = l.accumulated > 0
                          ? (firstHasHead ? dyn.bothGrads : dyn.firstGrads)
                          : 0;
      // Its sends are waited once the next stage's first gradient has come
      // back, which that stage sends after the forwards it holds in flight
      // (1F1B: one fewer; GPipe: all): the sends beyond those are live.
      l.sendBytes =
          std::max(0.0, microbatches - nextInflight) * dyn.boundaryBytes;
      l.tokenSlices = l.microbatches > 1 ? microbatches * dyn.tokenBytes : 0;
      if (l.microbatches <= microbatches)
        l.accumulated = 0;
      // ZB-V: the first rank also runs the last stage, which splits its
      // backward.
      setSplitRankPasses(l, dyn, sched, rankWeightPasses, /*last=*/false);
      // ZB-V's first rank holds both ends' gathered non-block parameters.
      if (l.passesOnly && firstHasHead) {
        l.rootFirstBytes = dyn.firstRootBytes;
        l.rootLastBytes = dyn.lastRootBytes;
        l.rootSharedBytes = dyn.sharedRootBytes;
      }
      // Interleaved: the first rank also runs later stages, whose sums,
      // sends and received tied shares its backwards hold; ZB-V: the last
      // stage's, at the first stage's backwards (whole, at their I).
      if (sched && !sched->rankBackwardPasses.empty()) {
        l.backwardPasses = sched->rankBackwardPasses.front();
        setWeightPassBytes(l, dyn);
        // Whether a backward holds the next call's re-gathered residuals
        // depends on that call (WeightPass::prefetched): the passes count
        // them, the closed form does not.
        l.regather = 0;
      }
      // The embedding's parameters stay gathered until the last forward:
      // held at the backwards before it (1F1B, ZB-H1: the first m - p).
      const bool oneStagePerRank = dyn.vpp == 1 && !firstHasHead;
      const double forwardsAfter = oneStagePerRank && !dyn.gpipe
                                       ? l.microbatches - double(dyn.stages)
                                       : 0;
      l.heldRootBytes = forwardsAfter > 0 ? dyn.firstRootBytes : 0;
      // Its first backward is followed by another microbatch's block call.
      l.laterBlockCall = oneStagePerRank && l.microbatches > 1;
      l.bottomBeforeForward = forwardsAfter > 0;
      l.boundaryBytes = dyn.boundaryBytes;
      // GPipe: a bottom backward but the last microbatch's is followed by
      // the next microbatch's backward.
      l.backwardAfterBottom =
          oneStagePerRank && lastBackwardFollows(dyn, l.microbatches, 1);
      FramePeak first = framePeak(*dyn.phases, dyn.b, dyn.scale, l);
      // One stage per rank (1F1B, ZB-H1): a later microbatch's backward
      // holds the sums of the earlier ones, with min(p, m - 1)
      // microbatches in flight (those that have not run theirs: with m <=
      // p fewer than at the first backward, which the peak above counts).
      // GPipe: its second backward, with the other m - 1 in flight.
      if (dyn.vpp == 1 && !firstHasHead && l.microbatches > 1 &&
          dyn.firstGrads > 0) {
        FrameLayers later = l;
        const double inflight =
            dyn.gpipe ? l.microbatches - 1
                      : std::min(double(dyn.stages), l.microbatches - 1);
        later.inflight = inflight * perRank;
        later.accumulated = dyn.firstGrads;
        later.sendBytes =
            std::max(0.0, inflight - nextInflight) * dyn.boundaryBytes;
        later.tokenSlices = inflight * dyn.tokenBytes;
        // The second backward precedes a forward from m = p + 2 on.
        later.heldRootBytes = forwardsAfter > 1 ? dyn.firstRootBytes : 0;
        later.laterBlockCall = l.laterBlockCall && l.microbatches > 2;
        later.bottomBeforeForward = forwardsAfter > 1;
        later.backwardAfterBottom =
            oneStagePerRank && lastBackwardFollows(dyn, l.microbatches, 2);
        FramePeak other = framePeak(*dyn.phases, dyn.b, dyn.scale, later);
        if (other.total() > first.total())
          first = other;
      }
      FrameLayers last = dyn.layers;
      last.inflight = lastInflight;
      // The head's parameters stay gathered until the last head backward
      // (one stage per rank; not derived for interleaved and ZB-V).
      last.heldRootBytes = oneStagePerRank ? dyn.lastRootBytes : 0;
      last.tokenSlices = 0;
      // ZB-V's last rank runs the middle stages: neither the head nor the
      // embedding, and only the blocks' sums.
      last.head = !firstHasHead;
      last.backwardFollows =
          !firstHasHead && lastBackwardFollows(dyn, last.microbatches, 1);
      last.backwardAfterBottom = last.backwardFollows;
      last.accumulated = last.accumulated > 0
                             ? (firstHasHead ? dyn.middleGrads : dyn.lastGrads)
                             : 0;
      // Its input-gradient sends are waited at the end of the step: at the
      // last microbatch's bottom backward the earlier microbatches' are
      // live, and so at its forward and top backward where it holds one
      // microbatch in flight (1F1B: no earlier backward there under
      // GPipe, whose peak in flight is its first backward). ZB-V's are
      // read off the schedule at its W passes.
      if (!firstHasHead) {
        // Simulated: each is waited after the first later forward input
        // that the previous stage sent after receiving it.
        // The tied embedding's share is sent per microbatch, not summed.
        last.sentGradBytes =
            sched ? sched->lastSentBytes
                  : std::max(0.0, last.microbatches - 1) * dyn.boundaryBytes;
        if (sched && last.accumulated > 0)
          last.accumulated =
              std::max(0.0, last.accumulated - dyn.tiedGradBytes);
        last.sentGradInflightBytes = dyn.gpipe ? 0 : last.sentGradBytes;
      }
      if (last.microbatches <= microbatchesOf(lastInflight))
        last.accumulated = 0;
      // The other microbatches' head values kept for their head backward
      // (closed form: GPipe runs every head forward first).
      const double heads =
          sched ? sched->lastStageHeads : (dyn.gpipe ? l.microbatches : 1);
      last.headsKept =
          firstHasHead ? 0 : std::max(0.0, heads - 1) * dyn.headKeptBytes;
      setSplitRankPasses(last, dyn, sched, rankWeightPasses, /*last=*/true);
      setLastRankBackwardPasses(last, dyn, sched, firstHasHead);
      // Its last microbatch's backwards no longer hold the head's
      // parameters; an earlier microbatch's do, with fewer sends live.
      last.rootForwardOnly = !dyn.gpipe;
      // GPipe's peak is its first backward; 1F1B's the last microbatch's.
      last.laterBlockCall =
          oneStagePerRank && dyn.gpipe && last.microbatches > 1;
      peak = framePeak(*dyn.phases, dyn.b, dyn.scale, last);
      if (last.heldRootBytes > 0 && !dyn.gpipe)
        considerEarlierMicrobatch(
            peak, last, dyn,
            sched ? sched->earlierSentBytes
                  : std::max(0.0, last.microbatches - 2) * dyn.boundaryBytes,
            sched ? sched->lastForwardAfterBackward : true);
      if (dyn.gpipe && !firstHasHead)
        considerSecondBackward(peak, last, dyn, heads,
                               sched ? sched->secondSentBytes
                                     : dyn.boundaryBytes + dyn.tiedGradBytes);
      if (dyn.gpipe && !firstHasHead && sched)
        considerLastBackward(peak, last, dyn, sched->lastSentBytes);
      // The heavier rank, states held included (as dist-explain reports).
      const ModelStates &a = firstHasHead ? dyn.bothStates : dyn.firstStates,
                        &z = firstHasHead ? dyn.middleStates : dyn.lastStates;
      bool firstHeavier = first.total() + a.params + a.optimizer >
                          peak.total() + z.params + z.optimizer;
      auto rankMemory = [&](int64_t rank, const ModelStates &s,
                            const FramePeak &f) {
        return Estimate::RankMemory{rank,        s.params,
                                    s.optimizer, f.paramGrads,
                                    f.grads,     f.activations + dyn.transient};
      };
      e.rankMemory = {rankMemory(0, a, first),
                      rankMemory(dyn.stages - 1, z, peak)};
      e.memoryPpRank = firstHeavier ? 0 : dyn.stages - 1;
      if (firstHeavier)
        peak = first;
      e.paramBytes = firstHeavier ? a.params : z.params;
      e.optimizerBytes = firstHeavier ? a.optimizer : z.optimizer;
      // The middle ranks, where simulated with whole backwards: the
      // heaviest rank is reported.
      const size_t ranks = sched ? sched->rankWholeBackwards.size() : 0;
      for (size_t r = 1; r + 1 < ranks; ++r) {
        if (sched->rankWholeBackwards[r].empty())
          continue;
        const FramePeak mid = middleRankPeak(dyn, sched->rankWholeBackwards[r]);
        const ModelStates &s = dyn.middleStates;
        e.rankMemory.insert(e.rankMemory.end() - 1,
                            rankMemory(int64_t(r), s, mid));
        if (mid.total() + s.params + s.optimizer >
            peak.total() + e.paramBytes + e.optimizerBytes) {
          peak = mid;
          e.memoryPpRank = int64_t(r);
          e.paramBytes = s.params;
          e.optimizerBytes = s.optimizer;
        }
      }
    } else {
      e.paramBytes = dyn.paramBytes;
      e.optimizerBytes = dyn.optimizerBytes;
    }
    e.gradBytes = peak.paramGrads;
    e.stateBytes = e.paramBytes + e.gradBytes + e.optimizerBytes;
    e.activationGradBytes = peak.grads;
    e.activationBytes = peak.activations + peak.grads + dyn.transient;
  } else {
    e.activationBytes = layers * dyn.perLayer + dyn.transient;
  }
  e.peakBytes =
      e.stateBytes + e.activationBytes * (1 + c.fragmentation) + e.fixedBytes;
  e.fits = e.peakBytes <= c.hbmBytes;
}

/// Replaces the closed-form pipeline time `pipeTime` (and the in-flight
/// count) of `e` by the simulated schedule's (lib/Pipeline); an error for a
/// schedule that does not build or deadlocks.
std::string simulatePipeline(Estimate &e, const Cluster &c, double pipeTime,
                             int64_t layersPerChunk, const DynamicMemory &dyn) {
  const Candidate &plan = e.plan;
  auto kind = scheduleKind(plan.schedule);
  auto sched = kind ? pipeline::buildSchedule(*kind, plan.pp, plan.mb, plan.vpp)
                    : pipeline::OrError<pipeline::PipelineSchedule>::failure(
                          "unknown schedule");
  if (!sched)
    return sched.error();
  pipeline::SimulationResult sim =
      pipeline::simulateSchedule(*sched, stageCosts(e));
  if (sim.deadlocked)
    return "schedule deadlocks: " + sim.deadlockReport;
  // The simulated schedule's peak in-flight stage-chunks (rank 0 for 1F1B;
  // W-delaying schedules can hold more).
  int64_t chunks = 0;
  for (int64_t x : sim.peakActivations)
    chunks = std::max(chunks, x);
  ScheduleMemory mem;
  for (int64_t x : sim.peakActivations)
    mem.rankLayers.push_back(double(x * layersPerChunk));
  // Per rank, its split weight-gradient passes (W) in program order, with
  // what the rank holds there (WeightPass). Stages after the first split
  // their backward; the first sends nothing back, so its backward runs
  // whole.
  using Kind = pipeline::PipelineOp::Kind;
  // What the static memory plan holds (only where it is scored).
  if (dyn.frame)
    mem.rankWeightPasses =
        weightPassesOf(*sched, layersPerChunk, dyn.tiedGradBytes > 0);
  if (dyn.frame)
    mem.rankInputPasses =
        inputPassesOf(*sched, layersPerChunk, dyn.tiedGradBytes > 0);
  if (dyn.frame)
    mem.rankForwardPasses =
        forwardPassesOf(*sched, layersPerChunk, dyn.tiedGradBytes > 0);
  if (dyn.frame && sched->numStages > sched->numRanks)
    mem.rankBackwardPasses =
        backwardPassesOf(*sched, layersPerChunk, dyn.tiedGradBytes > 0);
  if (dyn.frame && sched->numStages == sched->numRanks && sched->numRanks > 2)
    mem.rankWholeBackwards =
        backwardPassesOf(*sched, layersPerChunk, dyn.tiedGradBytes > 0);
  const int64_t lastStage = sched->numStages - 1;
  mem.firstRankHasHead = sched->stageToRank[lastStage] == sched->stageToRank[0];
  // A first-stage backward runs whole at its I; only where the rank runs
  // several stages is it a backward pass (backwardPassesOf).
  auto splitOnly = [&](int64_t rank) {
    const bool wholePasses = sched->numStages > sched->numRanks;
    return llvm::none_of(sched->rankOrders[rank], [&](const auto &op) {
      return op.kind == Kind::B ||
             (op.kind == Kind::I && op.stage == 0 && !wholePasses);
    });
  };
  mem.firstRankSplitOnly = splitOnly(0);
  mem.lastRankSplitOnly = splitOnly(sched->numRanks - 1);
  if (dyn.frame) {
    const int64_t r = sched->numRanks - 1;
    const std::vector<PendingSend> sends =
        pendingSends(*sched, dyn.tiedGradBytes > 0)[r];
    int64_t backwards = 0, lastBackward = -1;
    for (auto [k, op] : llvm::enumerate(sched->rankOrders[r]))
      if (op.kind == Kind::B || op.kind == Kind::I)
        lastBackward = int64_t(k);
    const auto &order = sched->rankOrders[r];
    for (auto [k, op] : llvm::enumerate(order)) {
      if (op.kind != Kind::B && op.kind != Kind::I)
        continue;
      // Its next block call (the first stage's W is none: it runs whole
      // at its I).
      auto next =
          std::find_if(order.begin() + k + 1, order.end(), [](const auto &o) {
            return o.kind != Kind::W || o.stage != 0;
          });
      if (int64_t(k) != lastBackward && next != order.end() &&
          next->kind == Kind::F)
        mem.lastForwardAfterBackward = true;
      if (backwards++ > 0) {
        double live = 0;
        for (const PendingSend &send : sends)
          if (send.op < k && send.waited > k)
            live += send.kind == PendingSend::InputGrad   ? dyn.boundaryBytes
                    : send.kind == PendingSend::TiedShare ? dyn.tiedGradBytes
                                                          : 0;
        mem.lastSentBytes = std::max(mem.lastSentBytes, live);
        if (int64_t(k) != lastBackward)
          mem.earlierSentBytes = std::max(mem.earlierSentBytes, live);
        if (backwards == 2)
          mem.secondSentBytes = live;
      }
    }
  }
  for (int64_t r = 0; r < sched->numRanks; ++r) {
    int64_t heads = 0;
    for (const pipeline::PipelineOp &op : sched->rankOrders[r]) {
      if (op.stage != lastStage)
        continue;
      heads += op.kind == Kind::F ? 1 : 0;
      if (op.kind == Kind::B || op.kind == Kind::I) {
        mem.lastStageHeads = std::max(mem.lastStageHeads, double(heads));
        --heads;
      }
    }
  }
  setMemory(e, c, double(chunks * layersPerChunk), dyn, &mem);
  // The busiest rank's ops; where ranks share processors they ran faster
  // than their cost (sim.running) while others waited.
  int64_t busiest =
      std::max_element(sim.busy.begin(), sim.busy.end()) - sim.busy.begin();
  e.compute -= sim.busy[busiest] - sim.running[busiest];
  e.bubble = sim.makespan - sim.running[busiest];
  e.stepTime += sim.makespan - pipeTime;
  e.exposedComm = e.stepTime - e.compute - e.bubble - e.optimizer;
  e.simulated = true;
  return "";
}

/// What `plan`'s frame peak is composed from: the one-block step's memory
/// plan per phase (`rc`: its compiled recomputation mode, if any), the token
/// scale to read it at, its non-block gradients' slices
/// (LocalProfile::otherGradSliced), what its block backward re-gathers
/// and what a deferred W of its block reads at microbatch size `b` (bytes;
/// LocalProfile::weightGradInputBytes, from the program without
/// recomputation), a full recomputation's re-run call's own frame
/// (RecomputeProfile::rerunFrameBytes): the step compiled under the plan's
/// context parallelism when there is one (per rank already, scale 1; it
/// has no expert parallelism beyond tp's), else the step without it at 1/cp
/// of the tokens.
struct FrameProfile {
  const StepMemory *phases = nullptr;
  double scale = 1;
  double otherGradSliced = 0, preGradSliced = 0, postGradSliced = 0;
  double regather = 0, weightInputs = 0, rerunFrame = 0;
};
FrameProfile frameProfile(const LocalProfile &prof, const RecomputeProfile *rc,
                          const Candidate &plan, double b) {
  FrameProfile f;
  auto it = prof.contextParallelMemory.find(
      {contextParallelPlanKeys(plan), rc ? plan.recompute : "none"});
  if (plan.cp > 1 && plan.getExpertParallelOutsideTp() == 1 &&
      it != prof.contextParallelMemory.end()) {
    const LocalProfile::ContextParallelMemory &cp = it->second;
    f.phases = &cp.phases;
    f.otherGradSliced = cp.otherGradSliced;
    f.preGradSliced = cp.preGradSliced;
    f.postGradSliced = cp.postGradSliced;
    f.regather = cp.regatherBytes.at(b);
    f.rerunFrame = cp.rerunFrameBytes.at(b);
    auto none = prof.contextParallelMemory.find(
        {contextParallelPlanKeys(plan), "none"});
    f.weightInputs = none != prof.contextParallelMemory.end()
                         ? none->second.weightGradInputBytes.at(b)
                         : prof.weightGradInputBytes.at(b) / plan.cp;
    return f;
  }
  f.phases = rc ? &rc->phases : &prof.phases;
  f.scale = 1.0 / plan.cp;
  f.otherGradSliced = prof.otherGradSliced;
  f.preGradSliced = prof.preGradSliced;
  f.postGradSliced = prof.postGradSliced;
  f.regather = (rc ? rc->regatherBytes : prof.regatherBytes).at(b) * f.scale;
  f.weightInputs = prof.weightGradInputBytes.at(b) * f.scale;
  f.rerunFrame = rc ? rc->rerunFrameBytes.at(b) * f.scale : 0;
  return f;
}

} // namespace

Estimate evaluate(const Cluster &c, const ModelInfo &m,
                  const LocalProfile &prof, const Candidate &plan,
                  int64_t globalBatch, bool simulate) {
  Estimate e;
  e.plan = plan;
  auto invalid = [&](std::string why) {
    e.fits = false;
    e.note = "invalid: " + why;
    return e;
  };
  if (std::string why = planError(m, prof, plan, globalBatch); !why.empty())
    return invalid(why);
  e.crossNode = crossNodeGroups(c, plan);
  const int64_t p = plan.pp, v = plan.vpp;
  const double b = plan.mbs, mb = plan.mb;
  const double scale = 1.0 / plan.cp;

  // One block per microbatch: the compiled block (with the plan's
  // recomputation mode when it compiled) at 1/cp of the tokens, then the
  // analytic strategies' exposed communication.
  const RecomputeProfile *rc = softwareRecompute(c, prof, plan.recompute);
  e.recomputeCompiled = rc != nullptr;
  TensorParallelBlock block =
      tensorParallelBlock(c, rc ? rc->layerFwd : prof.layerFwd,
                          rc ? rc->layerBwd : prof.layerBwd, b, scale, plan.tp);
  LayerTimes layer = block.layer;
  RecomputeTime re = recomputeTime(c, prof, plan, block, b, scale);
  layer.inputGrad += re.time;
  layer.comm += re.comm;
  addLayerTerm(layer, ulyssesTerm(c, m, plan));
  addLayerTerm(layer, ringAttentionTerm(c, m, plan, block.forward.attention,
                                        block.backward.attention));
  LayerTerm ep = expertAllToAllTerm(c, prof, plan, b, scale);
  LayerTerm moeGather = moeSequenceGatherTerm(c, m, plan);
  addLayerTerm(layer, ep);
  addLayerTerm(layer, moeGather);
  double epLayerComm = ep.forward + ep.backward;
  epLayerComm += moeGather.forward + moeGather.backward;

  // One stage-chunk per microbatch, ZeRO-3's per-block gathers included.
  const int64_t layersPerChunk = m.layers / (p * v);
  e.tF = layersPerChunk * layer.forward;
  e.tI = layersPerChunk * layer.inputGrad;
  e.tW = layersPerChunk * layer.weightGrad;
  StageEnds ends = stageEnds(c, prof, b, scale, plan.tp);
  e.firstF = ends.firstF;
  e.firstB = ends.firstB;
  e.lastF = ends.lastF;
  e.lastB = ends.lastB;
  // Gradient accumulation over the microbatches (adds between the block
  // calls, on unsharded gradients whatever the ZeRO stage): each chunk's
  // layers on its W, the non-block parameters on the stage that holds them.
  {
    const double g = gradElementBytes(c, m.elementBytes);
    const double layerElements =
        prof.layerParams -
        (plan.ep > 1 ? prof.expertParams * (1 - 1.0 / plan.ep) : 0);
    e.tW += layersPerChunk * gradientAccumulationTime(c, layerElements,
                                                      prof.layerParamTensors,
                                                      plan.mb, g);
    const bool split = prof.preParams + prof.postParams > 0;
    if (p == 1 || !split) {
      double all = gradientAccumulationTime(c, prof.otherParams,
                                            prof.otherParamTensors, plan.mb, g);
      e.firstB += all;
      if (p > 1)
        e.lastB += all;
    } else {
      e.firstB += gradientAccumulationTime(c, prof.preParams,
                                           prof.preParamTensors, plan.mb, g);
      e.lastB += gradientAccumulationTime(c, prof.postParams,
                                          prof.postParamTensors, plan.mb, g);
    }
  }
  ParameterShards shards = parameterShards(c, m, prof, plan);
  // With several microbatches the compiled program reduce-scatters only in
  // the last one's backward (Cluster::zeroReducesEveryMicrobatch): every
  // microbatch gathers, the last one's reductions are added once
  // (zero3LastReduceTime, with the data-parallel synchronisation).
  const bool reduceEach = plan.mb <= 1 || c.zeroReducesEveryMicrobatch;
  Zero3Exposure z =
      zero3Term(c, m, prof, plan, shards, layersPerChunk, layer.forward,
                layer.inputGrad + layer.weightGrad, reduceEach);
  const double lastReduce = zero3LastReduceTime(
      c, plan,
      zero3Term(c, m, prof, plan, shards, layersPerChunk, layer.forward,
                layer.inputGrad + layer.weightGrad),
      z, double(v));
  e.tF += z.forward;
  e.tI += z.backward;
  e.firstF += z.rootForward;
  e.lastB += z.rootBackward;
  double zero3Comm =
      v * (z.forward + z.backward) + z.rootForward + z.rootBackward;
  if (p > 1) {
    e.firstB += z.rootBackward;
    e.lastF += z.rootForward;
  }

  // The step: pipeline, data-parallel synchronisation, optimizer.
  e.tP2P = p2pTime(c, plan, prof.boundaryBytes.at(b) * scale);
  if (p > 1 && c.sharesNode) {
    PipelineSharing share = pipelineSharing(c);
    e.tWakeup = share.wakeupLatency;
    e.sharingWaitingUse = share.waitingUse;
    e.sharingMaxSpeedup = share.maxSpeedup;
    e.pinnedCores = c.pinnedCores;
    e.nodeRanks =
        std::min(plan.pp * plan.dp * plan.cp * plan.tp, c.gpusPerNode);
  }
  PipelineTime pipe = pipelineTime(plan, e);
  double pipeTime = pipe.total();
  double F = v * e.tF, I = v * e.tI, W = v * e.tW, B = I + W;
  e.dpComm = dataParallelSyncTime(c, m, plan, shards, mb, F, B) + lastReduce;
  e.dpCollectives = shards.denseCollectives;
  e.epComm = mb * shards.layersPerRank * epLayerComm;
  e.optimizer = optimizerTime(c, plan, shards);
  // The tied embedding's reduced gradient as the first stage holds it:
  // its dp shard under ZeRO (reduce-scattered), else whole.
  const double tiedGradBytes =
      gradElementBytes(c, m.elementBytes) * prof.tiedParams() /
      double(plan.zero >= 1 ? std::max<int64_t>(1, shards.dpGroup) : 1);
  e.tailComm = pipelineTailTime(c, plan, tiedGradBytes);
  e.stepTime = pipeTime + e.dpComm + e.tailComm + e.optimizer;
  e.compute =
      mb * (F + B + pipe.extra) - mb * (shards.layersPerRank * layer.comm +
                                        (p == 1 ? ends.comm : 0) + zero3Comm);
  e.exposedComm = e.stepTime - e.compute - pipe.bubble - e.optimizer;
  e.bubble = pipe.bubble;

  // Memory of the heaviest stage.
  e.stateBytes = modelStateBytes(c, m, plan, shards);
  ModelStates states = modelStateParts(c, m, plan, shards);
  e.paramBytes = states.params;
  e.gradBytes = states.grads;
  e.optimizerBytes = states.optimizer;
  BlockActivations act = blockActivations(c, prof, plan.recompute, b, scale);
  e.fixedBytes = fixedBytes(c, plan, shards);
  DynamicMemory dyn;
  dyn.perLayer = act.perLayer;
  dyn.transient = act.transient + zero3GatheredBytes(c, m, prof, plan, shards) +
                  act.gradients;
  e.activationGradBytes = act.gradients;
  if (c.gradBufferInFrame) {
    // Gradients in the static frame: the compiled step's peak, composed
    // from the one-block step's phases (framePeak).
    dyn.frame = true;
    const FrameProfile frameProf = frameProfile(prof, rc, plan, b);
    dyn.phases = frameProf.phases;
    dyn.scale = frameProf.scale;
    dyn.b = b;
    dyn.transient = 0;
    dyn.layers.layers = shards.layersPerRank;
    dyn.layers.microbatches = plan.mb;
    dyn.layers.keptPerLayer = act.perLayer;
    // ZeRO-2/3 reduce-scatter a block's gradients after its backward, and
    // so does ZeRO-1 without accumulation (one microbatch): the other
    // blocks then hold their shards.
    const bool scatteredPerBlock =
        plan.zero >= 2 || (plan.zero == 1 && plan.mb <= 1);
    dyn.layers.layerGradBytes =
        prof.layerParams * m.elementBytes /
        (scatteredPerBlock ? double(shards.dpGroup) : 1.0);
    if (plan.mb > 1)
      dyn.layers.layerSumBytes =
          prof.layerParams * gradElementBytes(c, m.elementBytes);
    // The microbatches' gradients accumulate unsharded (ZeRO-2/3 reduce-
    // scatter the sums after the last microbatch), in the form the
    // backward produces them (a sequence-parallel slice is gathered after
    // the last microbatch).
    dyn.layers.accumulated =
        plan.mb > 1 ? gradElementBytes(c, m.elementBytes) *
                          std::max(0.0, shards.denseRank + shards.expertRank -
                                            frameProf.otherGradSliced)
                    : 0;
    // Prefetched one call ahead: under full recomputation the next block's
    // re-run comes first, so its gather overlaps that call, not this one.
    dyn.weightRegatherBytes = frameProf.regather;
    if (plan.recompute != "full")
      dyn.layers.regather = dyn.weightRegatherBytes;
    const double layerBytes = prof.layerParams * m.elementBytes;
    // The reduce-scatter is waited one call later: during the next block's
    // backward, or under full recomputation during its re-run, a call of
    // its own before the backward.
    if (scatteredPerBlock && shards.dpGroup > 1 && plan.recompute != "full")
      dyn.layers.reducingGradBytes = layerBytes;
    if (plan.zero == 3 && shards.dpGroup > 1) {
      dyn.layers.gatheredPerLayer = layerBytes;
      dyn.layers.gatherPackBytes = layerBytes / double(shards.dpGroup);
    }
    if (plan.zero == 1 && plan.mb <= 1 && p > 1 && plan.sp && plan.tp > 1 &&
        shards.dpGroup > 1)
      dyn.headlessLayerGradBytes = layerBytes;
    // ZeRO-1/2 gather every updated parameter in the tail (one stage: pp =
    // 1; a pipeline rank holds its stage's parameters).
    if ((plan.zero == 1 || plan.zero == 2) && shards.dpGroup > 1 && p == 1)
      dyn.layers.optimizerGatherBytes =
          states.params * (1 + 1 / double(shards.dpGroup));
    setRerunCalls(dyn.layers, plan, shards, rc, m.elementBytes);
    // ZeRO reduce-scatters each block's sum after the last microbatch's
    // backward of it (one stage: pp = 1).
    if (plan.zero >= 1 && plan.zero <= 2 && shards.dpGroup > 1 && plan.mb > 1 &&
        p == 1) {
      dyn.layers.sumReduceBytes =
          prof.layerParams * gradElementBytes(c, m.elementBytes);
      dyn.layers.sumShardBytes =
          dyn.layers.sumReduceBytes / double(shards.dpGroup);
    }
    // With several stages per rank (interleaved, ZB-V) each stage's sums
    // are reduce-scattered after its last backward, one microbatch's too.
    if (plan.zero >= 1 && shards.dpGroup > 1 && (plan.mb > 1 || p > 1))
      dyn.layers.completeSumShardBytes = prof.layerParams *
                                         gradElementBytes(c, m.elementBytes) /
                                         double(shards.dpGroup);
    // ZeRO-3 gathers the non-block parameters once for the microbatches
    // (one stage holds them all: pp = 1).
    if (plan.zero == 3 && shards.dpGroup > 1 && plan.mb >= 3 && p == 1)
      dyn.layers.heldRootBytes = prof.otherParams * m.elementBytes;
    // Pipelines: each end gathers its own non-block parameters once.
    if (plan.zero == 3 && shards.dpGroup > 1 && plan.mb >= 2 && p > 1 &&
        prof.preParams + prof.postParams > 0) {
      dyn.firstRootBytes = prof.preParams * m.elementBytes;
      dyn.lastRootBytes = prof.postParams * m.elementBytes;
      dyn.sharedRootBytes = prof.tiedParams() * m.elementBytes;
    }
    dyn.stages = p;
    dyn.vpp = v;
    dyn.gpipe = plan.schedule == "gpipe";
    dyn.zbv = plan.schedule == "zb-v";
    dyn.boundaryBytes = prof.boundaryBytes.at(b) * scale;
    dyn.layers.receivedGradBytes = dyn.boundaryBytes;
    dyn.tokenBytes = prof.tokenBytes.at(b) * scale;
    dyn.weightInputBytes = frameProf.weightInputs;
    // Selective: what W recomputes is its own frame (gradients, as W is a
    // gradient function).
    if (plan.recompute == "selective" && rc)
      dyn.layers.weightFrameBytes = rc->weightRecomputedBytes.at(b) * scale;
    // ZeRO-3: W is given the shards; the parameters it reads are gathered
    // for I, which passes them on.
    if (plan.recompute == "full" && rc)
      dyn.layers.rerunFrameBytes = frameProf.rerunFrame;
    if (plan.recompute == "selective" && rc && plan.zero == 3 &&
        shards.dpGroup > 1) {
      dyn.layers.weightParamBytes = rc->weightParams * m.elementBytes;
      dyn.weightInputBytes += dyn.layers.weightParamBytes;
    }
    dyn.headKeptBytes = prof.headKeptBytes.at(b) * scale;
    dyn.layerWeightGradBytes =
        prof.layerParams * gradElementBytes(c, m.elementBytes);
    const double g = gradElementBytes(c, m.elementBytes);
    dyn.tiedGradBytes = g * prof.tiedParams();
    dyn.embeddingGradBytes =
        g * std::max(0.0, prof.preParams - frameProf.preGradSliced);
    dyn.headOnlyGradBytes = g * prof.headOnlyParams;
    // Full recomputation's re-run is a call of its own whose results the
    // split I and W both read. (Selective re-runs inside the backward call,
    // and I saves what W reads of it: a part the profile's W inputs, read
    // from the unrecomputed block, do not hold.)
    if (plan.recompute == "full")
      dyn.recomputedBytes =
          std::max(0.0, blockActivations(c, prof, "none", b, scale).perLayer -
                            act.perLayer);
    dyn.layers.tokenSlices = plan.mb > 1 ? dyn.tokenBytes : 0;
    dyn.layers.headOnlyGradBytes = prof.headOnlyParams * m.elementBytes;
    // A stage holds the non-block parameters its part of the step reads
    // (all of them where the profile could not tell).
    const bool split = prof.preParams + prof.postParams > 0;
    auto stage = [&](double nonBlock, double sliced, ModelStates &states,
                     double &grads) {
      ParameterShards held = shards;
      held.denseRank +=
          (split ? nonBlock : prof.otherParams) - prof.otherParams;
      states = modelStateParts(c, m, plan, held);
      grads = gradElementBytes(c, m.elementBytes) *
              std::max(0.0, held.denseRank + held.expertRank -
                                (split ? sliced : frameProf.otherGradSliced));
    };
    stage(prof.preParams, frameProf.preGradSliced, dyn.firstStates,
          dyn.firstGrads);
    stage(prof.postParams, frameProf.postGradSliced, dyn.lastStates,
          dyn.lastGrads);
    stage(prof.preParams + prof.headOnlyParams, frameProf.preGradSliced,
          dyn.bothStates, dyn.bothGrads);
    stage(0, 0, dyn.middleStates, dyn.middleGrads);
    dyn.paramBytes = e.paramBytes;
    dyn.optimizerBytes = e.optimizerBytes;
  }
  setMemory(e, c, inflightLayers(plan, m.layers), dyn);

  if (simulate && p > 1) {
    std::string why = simulatePipeline(e, c, pipeTime, layersPerChunk, dyn);
    if (!why.empty())
      return invalid(why);
  }
  e.tokensPerSecond = double(globalBatch) * m.seq / e.stepTime;
  int64_t gpus = plan.pp * plan.dp * plan.cp * plan.tp;
  e.tflopsPerGpu = m.flopsPerSequence * globalBatch / e.stepTime / gpus / 1e12;
  e.mfu = e.tflopsPerGpu * 1e12 / c.peakFlops;
  if (!e.fits)
    e.note = llvm::formatv("OOM: {0} > {1}", formatBytes(e.peakBytes),
                           formatBytes(c.hbmBytes))
                 .str();
  return e;
}

std::vector<RecomputeRow> recomputeRows(const Cluster &c,
                                        const LocalProfile &prof,
                                        const std::vector<std::string> &modes,
                                        double b) {
  auto flops = [&](const FunctionProfile &f) {
    double total = 0;
    for (const OpProfile &op : f.ops)
      total += op.flops.at(b);
    return total;
  };
  auto comm = [&](const FunctionProfile &f) {
    double total = 0;
    for (const CommProfile &c : f.comms)
      total += c.bytes.at(b);
    return total;
  };
  // Byte figures without the cluster's unfused-attention score bytes.
  Cluster fused = c;
  fused.attentionScoreBytes = 0;
  std::vector<RecomputeRow> rows;
  for (const std::string &mode : modes) {
    RecomputeRow row;
    row.mode = mode;
    const RecomputeProfile *rc = softwareRecompute(c, prof, mode);
    row.compiled = mode == "none" || rc;
    if (!row.compiled) {
      const RecomputeProfile &r = mode == "full" ? prof.full : prof.selective;
      row.why = mode == "selective" && c.selectiveRecomputesAttention
                    ? "the cluster's software recomputes the attention"
                : r.error.empty() ? "not compiled"
                                  : r.error;
    }
    const FunctionProfile &fwd = rc ? rc->layerFwd : prof.layerFwd;
    const FunctionProfile &bwd = rc ? rc->layerBwd : prof.layerBwd;
    row.forwardFlops = flops(fwd);
    row.backwardFlops = flops(bwd);
    row.commBytes = comm(fwd) + comm(bwd);
    if (rc && mode == "full" && c.fullRecomputeRerunsForward) {
      row.backwardFlops += flops(fwd);
      row.commBytes += comm(fwd);
    } else if (rc) {
      row.backwardFlops += flops(rc->layerRecompute);
      row.commBytes += comm(rc->layerRecompute);
    }
    BlockActivations act = blockActivations(fused, prof, mode, b, 1);
    row.keptBytes = act.perLayer;
    row.frameBytes = act.perLayer + act.transient;
    rows.push_back(std::move(row));
  }
  return rows;
}

//===----------------------------------------------------------------------===//
// Search
//===----------------------------------------------------------------------===//

namespace {
std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= n; ++i)
    if (n % i == 0)
      d.push_back(i);
  return d;
}

/// What dominates `e` relative to `best`: the component that grew most.
std::string whyLost(const Estimate &e, const Estimate &best) {
  double dBubble = e.bubble - best.bubble;
  double dComm = e.exposedComm - best.exposedComm;
  double dCompute = e.compute + e.optimizer - best.compute - best.optimizer;
  const char *what = "compute (recomputation / kernel efficiency)";
  double worst = dCompute;
  if (dBubble > worst) {
    what = "bubble";
    worst = dBubble;
  }
  if (dComm > worst)
    what = "communication";
  double pct = 100 * (e.stepTime / best.stepTime - 1);
  return llvm::formatv("{0}: step {1:F3} s ({2}{3:F1}%), best {4}", what,
                       e.stepTime, pct < 0 ? "" : "+", pct, e.plan.str())
      .str();
}

/// The search's order: the shorter step first; at an equal step (e.g.
/// ZeRO-1 and ZeRO-2 with one microbatch, which compile to the same
/// communication) the smaller peak memory, so the choice does not depend
/// on the enumeration order.
bool fasterThenSmaller(const Estimate &a, const Estimate &b) {
  if (a.stepTime != b.stepTime)
    return a.stepTime < b.stepTime;
  return a.peakBytes < b.peakBytes;
}
} // namespace

SearchResult search(const Cluster &c, const ModelInfo &m,
                    const std::map<ProfileKey, LocalProfile> &profiles,
                    const SearchOptions &o) {
  auto start = std::chrono::steady_clock::now();
  SearchResult result;
  std::vector<Estimate> fitting;
  std::map<std::string, Estimate> bestPerFamily;
  std::map<std::string, double> minPeak;
  std::map<std::string, std::string> invalidReason;
  // With forbidCrossNode, a plan whose tp, cp or ep group spans nodes is
  // invalid: the reason names the first such group.
  auto forbidden = [&](const Candidate &cand) -> std::string {
    if (!o.forbidCrossNode)
      return "";
    std::vector<std::string> groups = crossNodeGroups(c, cand);
    if (groups.empty())
      return "";
    return "invalid: " + groups.front() + " (cross-node=forbid)";
  };
  auto consider = [&](const LocalProfile &prof, const Candidate &cand) {
    ++result.stats.candidates;
    std::string fam = cand.family();
    if (std::string why = forbidden(cand); !why.empty()) {
      invalidReason.emplace(fam, why);
      return;
    }
    Estimate e = evaluate(c, m, prof, cand, o.globalBatch, false);
    if (!e.fits) {
      if (e.note.rfind("invalid", 0) == 0) {
        invalidReason.emplace(fam, e.note);
      } else {
        auto it = minPeak.find(fam);
        if (it == minPeak.end() || e.peakBytes < it->second)
          minPeak[fam] = e.peakBytes;
      }
      return;
    }
    ++result.stats.fitting;
    auto it = bestPerFamily.find(fam);
    if (it == bestPerFamily.end() || e.stepTime < it->second.stepTime)
      bestPerFamily[fam] = e;
    fitting.push_back(std::move(e));
  };

  if (o.fixed) {
    auto it = profiles.find(
        {o.fixedPlan.tp, o.fixedPlan.sp, o.fixedPlan.expertLayout()});
    LocalProfile missing;
    missing.error = "no compiled profile for this tp/sp/etp";
    consider(it == profiles.end() ? missing : it->second, o.fixedPlan);
    if (fitting.empty()) {
      Estimate e = evaluate(c, m, it == profiles.end() ? missing : it->second,
                            o.fixedPlan, o.globalBatch, false);
      std::string why = forbidden(o.fixedPlan);
      result.rejected[o.fixedPlan.family()] = why.empty() ? e.note : why;
    }
  } else {
    // Expert-parallel degrees: for MoE models the listed powers of two
    // that divide the expert count (and, per candidate, dp·cp; ZeRO-3 is
    // not combined with ep > 1); 1 for dense models.
    std::vector<int64_t> eps;
    if (m.experts > 0)
      for (int64_t ep : o.epChoices)
        if (ep >= 1 && (ep & (ep - 1)) == 0 && m.experts % ep == 0)
          eps.push_back(ep);
    if (eps.empty())
      eps.push_back(1);
    // Each loop sets the keys it chooses.
    Candidate cand;
    cand.cpContiguous = o.cpContiguous;
    cand.pipelineReductionInTail = o.pipelineReductionInTail;
    cand.paramGatherBehindOptimizer = o.paramGatherBehindOptimizer;
    cand.dpBucketPerLayerGroup = o.dpBucketPerLayerGroup;
    for (const auto &[key, prof] : profiles) {
      auto [tp, sp, layout] = key;
      cand.tp = tp;
      cand.sp = sp;
      cand.etp = layout == ExpertLayout::TensorSplit ? tp : 1;
      if (sp && !o.searchSp)
        continue;
      if (!prof.error.empty()) {
        Candidate fam{tp, 1, 1, 1, 1, sp};
        fam.etp = cand.etp;
        result.rejected[fam.family()] = "invalid: " + prof.error;
        continue;
      }
      for (int64_t cp : o.cpChoices) {
        if (o.gpus % (tp * cp))
          continue;
        cand.cp = cp;
        if (o.cpZigzagWhereCompilable)
          cand.cpContiguous = cp > 1 && m.seq % (2 * cp) != 0;
        // Ulysses only where the heads split over tp*cp.
        std::vector<std::string> cpAttentions = {"ring"};
        if (cp > 1) {
          cpAttentions.clear();
          for (const std::string &a : o.cpAttentions)
            if (a == "ring" ||
                (m.heads % (tp * cp) == 0 && m.kvHeads % (tp * cp) == 0))
              cpAttentions.push_back(a);
        }
        for (int64_t pp : divisors(m.layers)) {
          if (o.gpus % (tp * cp * pp))
            continue;
          int64_t dp = o.gpus / (tp * cp * pp);
          if (o.globalBatch % dp)
            continue;
          cand.pp = pp;
          cand.dp = dp;
          int64_t perDp = o.globalBatch / dp;
          // The listed sizes and the whole local batch in one microbatch
          // (no accumulation), which a list of small sizes misses.
          std::vector<int64_t> mbsList = o.mbsChoices;
          if (!llvm::is_contained(mbsList, perDp))
            mbsList.push_back(perDp);
          for (int64_t mbs : mbsList) {
            if (perDp % mbs)
              continue;
            int64_t mb = perDp / mbs;
            cand.mbs = mbs;
            cand.mb = mb;
            std::vector<std::pair<std::string, int64_t>> scheds;
            if (pp == 1) {
              scheds.push_back({"1f1b", 1});
            } else {
              for (const std::string &s : o.schedules) {
                if (s == "interleaved") {
                  if (mb < pp || mb % pp)
                    continue;
                  for (int64_t v : divisors(m.layers / pp))
                    if (v >= 2 && v <= 8)
                      scheds.push_back({s, v});
                } else if (s == "zb-v") {
                  if ((m.layers / pp) % 2 == 0)
                    scheds.push_back({s, 2});
                } else {
                  scheds.push_back({s, 1});
                }
              }
            }
            for (auto &[sched, v] : scheds) {
              cand.schedule = sched;
              cand.vpp = v;
              for (int64_t ep : eps) {
                cand.ep = ep;
                // Each profile scores the candidates of its expert layout
                // (ep over tp needs ep a multiple of tp).
                if (cand.expertLayout() != layout ||
                    (layout == ExpertLayout::OverTp && ep % tp))
                  continue;
                int64_t outside = cand.getExpertParallelOutsideTp();
                for (int64_t zero : o.zeroStages) {
                  if (zero > 0 && dp * cp == 1)
                    continue;
                  if ((dp * cp) % outside)
                    continue;
                  if (ep > 1 && o.epAsCompiled &&
                      (cp > 1 ? outside % cp || dp % (outside / cp)
                              : dp % outside))
                    continue;
                  if (o.epAsCompiled && cp > 1 && ep == 1 && m.experts > 0)
                    continue;
                  cand.zero = zero;
                  for (const std::string &rc : o.recomputes) {
                    cand.recompute = rc;
                    for (const std::string &cpa : cpAttentions) {
                      cand.cpAttention = cpa;
                      consider(prof, cand);
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }

  // Simulate the best candidates with the real schedule, re-rank, in the
  // order of the fastest each could simulate to: its closed-form time, or,
  // where its ranks share a node's cores (pipelineSharing), the time with
  // its pipeline at the node's full capacity: its ranks' mean work, every
  // idle moment filled by another rank's (the fair share never gives the
  // node more than every rank running).
  auto fastestSimulated = [](const Estimate &e) {
    const Candidate &p = e.plan;
    if (p.pp <= 1)
      return e.stepTime;
    pipeline::ProcessorSharing sharing = sharingOf(e);
    if (!sharing.shares() && !sharing.pinned())
      return e.stepTime;
    double meanWork =
        double(p.mb) *
        (double(p.vpp) * (e.tF + e.tI + e.tW) +
         (e.firstF + e.firstB + e.lastF + e.lastB) / double(p.pp));
    return std::min(e.stepTime, e.dpComm + e.tailComm + e.optimizer + meanWork);
  };
  std::stable_sort(fitting.begin(), fitting.end(),
                   [&](const Estimate &a, const Estimate &b) {
                     double x = fastestSimulated(a), y = fastestSimulated(b);
                     return x != y ? x < y : fasterThenSmaller(a, b);
                   });
  // A candidate whose simulated schedule holds more activations than the
  // closed form counted may no longer fit: it is dropped (and the next
  // analytic candidate simulated in its place).
  // Past the first simulateTop, keep simulating (in analytic order) every
  // candidate whose analytic time is within kSimulationSlack of the best
  // simulated one: the simulated schedule differs from the closed form
  // either way (it counts the real order, warm-up and p2p; the closed-form
  // bubble of interleaved and zero-bubble schedules is an upper bound), so
  // a candidate left unsimulated must not win or lose on a time of the
  // other kind. Bounded by kMaxSimulated per search.
  constexpr double kSimulationSlack = 0.1;
  const int64_t kMaxSimulated = 16 * std::max<int64_t>(o.simulateTop, 16);
  int64_t nsim = 0;
  double bestSimulated = std::numeric_limits<double>::infinity();
  for (size_t i = 0;
       i < fitting.size() &&
       (nsim < o.simulateTop || (fastestSimulated(fitting[i]) <
                                     (1 + kSimulationSlack) * bestSimulated &&
                                 nsim < kMaxSimulated));) {
    Estimate &e = fitting[i];
    const LocalProfile &prof =
        profiles.at({e.plan.tp, e.plan.sp, e.plan.expertLayout()});
    Estimate sim = evaluate(c, m, prof, e.plan, o.globalBatch, true);
    if (sim.note.rfind("invalid", 0) == 0) {
      ++i, ++nsim;
      continue;
    }
    if (sim.simulated)
      ++result.stats.simulated;
    if (!sim.fits) {
      std::string fam = sim.plan.family();
      auto it = minPeak.find(fam);
      if (it == minPeak.end() || sim.peakBytes < it->second)
        minPeak[fam] = sim.peakBytes;
      --result.stats.fitting;
      fitting.erase(fitting.begin() + i);
      continue;
    }
    e = sim;
    bestSimulated = std::min(bestSimulated, sim.stepTime);
    ++i, ++nsim;
  }
  std::stable_sort(fitting.begin(), fitting.begin() + nsim, fasterThenSmaller);
  // The best of each family among what still fits (simulated times where
  // simulated).
  bestPerFamily.clear();
  for (const Estimate &e : fitting) {
    auto it = bestPerFamily.find(e.plan.family());
    if (it == bestPerFamily.end() || e.stepTime < it->second.stepTime)
      bestPerFamily[e.plan.family()] = e;
  }
  int64_t keep = std::min<int64_t>(fitting.size(), std::max<int64_t>(nsim, 10));
  result.best.assign(fitting.begin(), fitting.begin() + keep);

  // Why each family lost.
  if (!result.best.empty()) {
    const Estimate &best = result.best.front();
    for (auto &[fam, e] : bestPerFamily)
      if (fam != best.plan.family())
        result.rejected[fam] = whyLost(e, best);
  }
  for (auto &[fam, peak] : minPeak)
    if (!bestPerFamily.count(fam))
      result.rejected[fam] =
          llvm::formatv("OOM: smallest peak {0} > {1}", formatBytes(peak),
                        formatBytes(c.hbmBytes))
              .str();
  for (auto &[fam, why] : invalidReason)
    if (!bestPerFamily.count(fam) && !minPeak.count(fam))
      result.rejected[fam] = why;

  if (!result.best.empty()) {
    const Candidate &best = result.best.front().plan;
    result.recompute = recomputeRows(
        c, profiles.at({best.tp, best.sp, best.expertLayout()}),
        o.fixed ? std::vector<std::string>{best.recompute} : o.recomputes,
        double(best.mbs));
  }

  result.stats.wallSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

//===----------------------------------------------------------------------===//
// Reports
//===----------------------------------------------------------------------===//

namespace {
constexpr double GiB = 1073741824.0;
}

std::string formatReport(const Cluster &c, const ModelInfo &m,
                         const SearchResult &r, const SearchOptions &o,
                         int64_t top) {
  std::string text;
  llvm::raw_string_ostream os(text);
  // 174.62B, 1.31B; below a billion in millions or thousands (452.29K).
  std::string params =
      m.params >= 1e9   ? llvm::formatv("{0:F2}B", m.params / 1e9).str()
      : m.params >= 1e6 ? llvm::formatv("{0:F2}M", m.params / 1e6).str()
                        : llvm::formatv("{0:F2}K", m.params / 1e3).str();
  int64_t nodes = (o.gpus + c.gpusPerNode - 1) / c.gpusPerNode;
  os << llvm::formatv("dist-auto-plan: model {0} ({1} params, {2} "
                      "layers, seq {3}), cluster {4}, {5} GPUs ({6} node{7}), "
                      "global batch {8}\n",
                      m.name, params, m.layers, m.seq, c.name, o.gpus, nodes,
                      nodes == 1 ? "" : "s", o.globalBatch);
  os << "MFU convention: 3 x forward (GEMM + attention, causal halved) "
        "FLOPs of the model definition, no recomputation counted; "
     // A small model in GFLOP (a CPU model's read "0.00 TFLOP").
     << (m.flopsPerSequence < 1e10
             ? llvm::formatv("{0:F2} GFLOP per sequence\n",
                             m.flopsPerSequence / 1e9)
             : llvm::formatv("{0:F2} TFLOP per sequence\n",
                             m.flopsPerSequence / 1e12));
  // Which pipeline model scored the plans (pipeline::ProcessorSharing).
  if (int64_t ranks = std::min(o.gpus, c.gpusPerNode);
      c.sharesNode && c.pinnedCores > 0)
    os << (ranks > c.pinnedCores
               ? llvm::formatv("cores: {0} ranks on the node pinned to {1} "
                               "cores (host.pinned_cores; run them with "
                               "shard-run --bind-cores auto): pipelines "
                               "simulated per core\n",
                               ranks, c.pinnedCores)
               : llvm::formatv("cores: {0} ranks on {1} cores, none "
                               "shared: host.pinned_cores has nothing to "
                               "pin\n",
                               ranks, c.pinnedCores));
  if (r.best.empty() && r.rejected.empty()) {
    os << llvm::formatv("no plan fits: no candidate plan ({0} GPUs do not "
                        "factor into tp x cp x pp x dp with tp dividing the "
                        "heads, pp the {1} layers and dp the global batch "
                        "{2}, within the search space)\n",
                        o.gpus, m.layers, o.globalBatch);
  } else if (r.best.empty()) {
    os << "no plan fits\n";
  } else {
    // evaluate= scores the plan it was given: nothing was chosen.
    os << (o.fixed ? "evaluated plan: " : "chosen plan: ")
       << r.best.front().plan.str() << "\n";
    os << "as --plan: " << r.best.front().plan.applyPlan() << "\n";
    // A runner-up closer than the model's own error is a tie to measure,
    // not a loser (bench/planner_vs_runtime: 3-5 % median |error|).
    constexpr double kNearTie = 0.03;
    if (!o.fixed && r.best.size() > 1) {
      double gap = r.best[1].stepTime / r.best[0].stepTime - 1;
      if (gap < kNearTie)
        os << llvm::formatv(
            "near tie: plan 2 ({0}) is predicted {1:F1}% slower, less than "
            "the planner's typical error (docs/planner.md, \"Calibration\"); "
            "measure both\n",
            r.best[1].plan.applyPlan(), 100 * gap);
    }
    os << "\n";
    os << llvm::formatv("{0,-4} {1,-100} {2,9} {3,11} {4,6} {5,8} {6,8} "
                        "{7,8} {8,8} {9,9} {10,4}\n",
                        "rank", "plan", "step s", "tokens/s", "MFU", "peak GiB",
                        "compute", "exp.comm", "bubble", "optimizer", "sim");
    int64_t n = std::min<int64_t>(top, r.best.size());
    // Shares of the step; a sum that cancels to -1e-19 printed "-0.0%".
    auto share = [](double part, double step) {
      return std::max(0.0, 100 * part / step);
    };
    for (int64_t i = 0; i < n; ++i) {
      const Estimate &e = r.best[i];
      os << llvm::formatv(
          "{0,-4} {1,-100} {2,9:F4} {3,11:F0} {4,5:F1}% "
          "{5,8:F1} {6,7:F1}% {7,7:F1}% {8,7:F1}% {9,8:F1}% {10,4}\n",
          i + 1, e.plan.str(), e.stepTime, e.tokensPerSecond, 100 * e.mfu,
          e.peakBytes / GiB, share(e.compute, e.stepTime),
          share(e.exposedComm, e.stepTime), share(e.bubble, e.stepTime),
          share(e.optimizer, e.stepTime), e.simulated ? "yes" : "no");
    }
    // The chosen plan's memory per GPU by kind (docs/planner.md, "Memory";
    // python/tests/test_planner_memory.py compares it with the compiled
    // program's static memory plan).
    {
      const Estimate &e = r.best.front();
      double frag = e.activationBytes * c.fragmentation;
      os << llvm::formatv(
          "\nmemory per GPU ({8} plan, MiB): params {0:F3}, grads {1:F3}, "
          "optimizer {2:F3}, activations {3:F3} (+ activation grads {4:F3}), "
          "fragmentation {5:F3}, fixed {6:F3}; peak {7:F3}\n",
          e.paramBytes / 1048576.0, e.gradBytes / 1048576.0,
          e.optimizerBytes / 1048576.0,
          (e.activationBytes - e.activationGradBytes) / 1048576.0,
          e.activationGradBytes / 1048576.0, frag / 1048576.0,
          e.fixedBytes / 1048576.0, e.peakBytes / 1048576.0,
          o.fixed ? "evaluated" : "chosen");
    }
    // Plans that rely on a tp, cp or ep group spanning nodes.
    bool header = false;
    for (int64_t i = 0; i < n; ++i)
      for (const std::string &group : r.best[i].crossNode) {
        if (!header)
          os << "\ncross-node groups (their collectives use the inter-node "
                "link; cross-node=forbid rejects such plans):\n";
        header = true;
        os << llvm::formatv("  rank {0}: {1}\n", i + 1, group);
      }
    if (!r.best.front().crossNode.empty())
      os << "warning: the chosen plan relies on "
         << r.best.front().crossNode.size()
         << " group(s) spanning nodes (above)\n";
  }
  if (!r.recompute.empty()) {
    const Candidate &best = r.best.front().plan;
    os << llvm::formatv("\nrecomputation, one block per microbatch (tp={0}{1}, "
                        "mbs={2}; compiled: the block compiled with "
                        "tfm-recompute):\n",
                        best.tp, best.sp ? "+sp" : "", best.mbs);
    os << llvm::formatv("  {0,-10} {1,-9} {2,10} {3,10} {4,12} {5,10} {6,10}\n",
                        "mode", "source", "fwd GFLOP", "bwd GFLOP",
                        "TP comm MiB", "kept MiB", "frame MiB");
    for (const RecomputeRow &row : r.recompute) {
      os << llvm::formatv("  {0,-10} {1,-9} {2,10:F3} {3,10:F3} {4,12:F3} "
                          "{5,10:F3} {6,10:F3}",
                          row.mode, row.compiled ? "compiled" : "analytic",
                          row.forwardFlops / 1e9, row.backwardFlops / 1e9,
                          row.commBytes / 1048576.0, row.keptBytes / 1048576.0,
                          row.frameBytes / 1048576.0);
      if (!row.compiled)
        os << "  (" << row.why << ")";
      os << "\n";
    }
  }
  if (!r.rejected.empty()) {
    // Every family that cannot run (OOM, invalid), then the closest losers.
    std::vector<std::pair<std::string, std::string>> hard, slower;
    for (auto &[fam, why] : r.rejected)
      (why.rfind("OOM", 0) == 0 || why.rfind("invalid", 0) == 0 ? hard : slower)
          .emplace_back(fam, why);
    // By the loss over the chosen plan, "(+12.0%": finer than the step's
    // printed seconds, which tie on a small model.
    auto stepOf = [](const std::string &why) {
      size_t at = why.find("(+");
      if (at != std::string::npos)
        return std::atof(why.c_str() + at + 2);
      at = why.find("step ");
      return at == std::string::npos ? 0.0 : std::atof(why.c_str() + at + 5);
    };
    std::stable_sort(slower.begin(), slower.end(),
                     [&](const auto &a, const auto &b) {
                       return stepOf(a.second) < stepOf(b.second);
                     });
    os << "\nrejected families (tp, sp, pp, cp; best of each, or why none "
          "fits):\n";
    for (auto &[fam, why] : hard)
      os << llvm::formatv("  {0,-22} {1}\n", fam, why);
    size_t shown = std::min<size_t>(slower.size(), 12);
    for (size_t i = 0; i < shown; ++i)
      os << llvm::formatv("  {0,-22} {1}\n", slower[i].first, slower[i].second);
    if (shown < slower.size())
      os << llvm::formatv("  ... {0} slower families more (format=json "
                          "lists all)\n",
                          slower.size() - shown);
  }
  os << llvm::formatv(
      "\nsearch: {0} candidates ({1} fit), {2} simulated, {3} block "
      "compilations in {4:F2} s; search {5:F3} s, {6:F0} candidates/s\n",
      r.stats.candidates, r.stats.fitting, r.stats.simulated, r.stats.compiled,
      r.stats.compileSeconds, r.stats.wallSeconds,
      r.stats.candidates / std::max(1e-9, r.stats.wallSeconds));
  os << "analytic: pp/dp/ZeRO/schedule composition, cp (ring K/V, Ulysses "
        "all-to-alls), "
        "ep (expert all-to-all, expert-data-parallel states), optimizer, "
        "recomputation where its mode did not compile; from "
        "compiled IR: per-op FLOPs/bytes, TP collectives, residual and "
        "boundary bytes, memory-plan frame, per recomputation mode\n";
  return text;
}

std::string formatReportJson(const Cluster &c, const ModelInfo &m,
                             const SearchResult &r, const SearchOptions &o,
                             int64_t top) {
  namespace json = llvm::json;
  json::Array plans;
  int64_t n = std::min<int64_t>(top, r.best.size());
  for (int64_t i = 0; i < n; ++i) {
    const Estimate &e = r.best[i];
    plans.push_back(json::Object{
        {"plan", e.plan.str()},
        {"apply_plan", e.plan.applyPlan()},
        {"step_s", e.stepTime},
        {"tokens_per_s", e.tokensPerSecond},
        {"mfu", e.mfu},
        {"tflops_per_gpu", e.tflopsPerGpu},
        {"peak_bytes", e.peakBytes},
        {"state_bytes", e.stateBytes},
        {"activation_bytes", e.activationBytes},
        {"compute_s", e.compute},
        {"exposed_comm_s", e.exposedComm},
        {"bubble_s", e.bubble},
        {"ep_comm_s", e.epComm},
        {"optimizer_s", e.optimizer},
        {"simulated", e.simulated},
        {"recompute_compiled", e.recomputeCompiled},
        {"cross_node_groups", json::Value(e.crossNode)},
        {"dp_collectives",
         [&] {
           json::Array rows;
           for (const GradientCollective &g : e.dpCollectives)
             rows.push_back(
                 json::Object{{"kind", getCollectiveKindName(g.kind)},
                              {"axes",
                               [&] {
                                 json::Array axes;
                                 for (auto [in, name] : {std::pair{g.dp, "dp"},
                                                         std::pair{g.cp, "cp"},
                                                         std::pair{g.tp, "tp"}})
                                   if (in)
                                     axes.push_back(name);
                                 return axes;
                               }()},
                              {"group", g.group},
                              {"buckets", g.buckets},
                              {"params", g.params}});
           return rows;
         }()},
        {"memory",
         json::Object{
             {"params", e.paramBytes},
             {"grads", e.gradBytes},
             {"optimizer", e.optimizerBytes},
             {"activations", e.activationBytes - e.activationGradBytes},
             {"activation_grads", e.activationGradBytes},
             {"fragmentation", e.activationBytes * c.fragmentation},
             {"fixed", e.fixedBytes},
             {"pp_rank", e.memoryPpRank},
         }},
        {"memory_ranks",
         [&] {
           json::Array ranks;
           for (const Estimate::RankMemory &rm : e.rankMemory)
             ranks.push_back(json::Object{
                 {"pp_rank", rm.ppRank},
                 {"params", rm.params},
                 {"optimizer", rm.optimizer},
                 {"grads", rm.grads},
                 {"activation_grads", rm.activationGrads},
                 {"activations", rm.activations},
             });
           return ranks;
         }()},
    });
  }
  json::Array recompute;
  for (const RecomputeRow &row : r.recompute)
    recompute.push_back(json::Object{{"mode", row.mode},
                                     {"compiled", row.compiled},
                                     {"why", row.why},
                                     {"forward_flops", row.forwardFlops},
                                     {"backward_flops", row.backwardFlops},
                                     {"tp_comm_bytes", row.commBytes},
                                     {"kept_bytes", row.keptBytes},
                                     {"frame_bytes", row.frameBytes}});
  json::Object rejected;
  for (auto &[fam, why] : r.rejected)
    rejected[fam] = why;
  json::Object root{
      {"model", m.name},
      {"cluster", c.name},
      {"gpus", o.gpus},
      {"global_batch", o.globalBatch},
      {"seq", m.seq},
      {"flops_per_sequence", m.flopsPerSequence},
      {"plans", std::move(plans)},
      {"rejected", std::move(rejected)},
      {"recompute", std::move(recompute)},
      {"stats", json::Object{{"candidates", r.stats.candidates},
                             {"fitting", r.stats.fitting},
                             {"simulated", r.stats.simulated},
                             {"compiled", r.stats.compiled},
                             {"compile_s", r.stats.compileSeconds},
                             {"search_s", r.stats.wallSeconds}}},
  };
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", json::Value(std::move(root))) << "\n";
  return text;
}

std::string chromeTrace(const Estimate &e) {
  namespace json = llvm::json;
  json::Array events;
  auto slice = [&](std::string name, int64_t tid, double start, double end) {
    events.push_back(json::Object{{"name", std::move(name)},
                                  {"ph", "X"},
                                  {"pid", 0},
                                  {"tid", tid},
                                  {"ts", start * 1e6},
                                  {"dur", (end - start) * 1e6}});
  };
  const Candidate &p = e.plan;
  double pipeEnd = 0;
  auto kind = scheduleKind(p.schedule);
  auto sched = kind ? pipeline::buildSchedule(*kind, p.pp, p.mb, p.vpp)
                    : pipeline::OrError<pipeline::PipelineSchedule>::failure(
                          "unknown schedule");
  if (sched) {
    pipeline::SimulationResult sim =
        pipeline::simulateSchedule(*sched, stageCosts(e));
    for (size_t r = 0; r < sim.timeline.size(); ++r)
      for (const pipeline::TimedOp &op : sim.timeline[r])
        slice(pipeline::formatOp(op.op), int64_t(r), op.start, op.end);
    pipeEnd = sim.makespan;
  }
  for (int64_t r = 0; r < p.pp; ++r) {
    double at = pipeEnd;
    slice("dp grad sync (exposed)", r, at, at + e.dpComm);
    at += e.dpComm;
    if (e.tailComm > 0) {
      slice("pipeline tail syncs", r, at, at + e.tailComm);
      at += e.tailComm;
    }
    slice("optimizer", r, at, at + e.optimizer);
  }
  json::Object root{{"traceEvents", std::move(events)},
                    {"displayTimeUnit", "ms"},
                    {"otherData", json::Object{{"plan", p.str()}}}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << json::Value(std::move(root)) << "\n";
  return text;
}

} // namespace autoshard::planner
