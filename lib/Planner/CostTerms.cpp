//===- CostTerms.cpp - The planner's cost terms, one per strategy ---------===//
//
// See CostTerms.h for each term's formula and source. The expressions keep
// the operation order they had inside `evaluate`, so that the reports stay
// byte-identical.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Planner/CostTerms.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

namespace autoshard::planner {

//===----------------------------------------------------------------------===//
// Plan validity
//===----------------------------------------------------------------------===//

std::string planError(const ModelInfo &m, const LocalProfile &prof,
                      const Candidate &plan, int64_t globalBatch) {
  const int64_t p = plan.pp, v = plan.vpp, L = m.layers;
  if (!prof.error.empty())
    return prof.error;
  if (L % (p * v))
    return llvm::formatv("{0} layers do not split into pp*vpp={1} stages", L,
                         p * v);
  // Megatron-Core's interleaved schedule, which the bubble models and
  // dist-pipeline-split builds (Schedule.cpp), runs the microbatches in
  // groups of pp. The search never lists other counts; evaluate= scored
  // them (e.g. pp=2 mb=1) as if the schedule existed.
  if (plan.schedule == "interleaved" && (plan.mb < p || plan.mb % p))
    return llvm::formatv("interleaved: mb={0} microbatches are not a "
                         "multiple of pp={1} (Megatron-Core's schedule runs "
                         "them in groups of pp)",
                         plan.mb, p);
  if (plan.cpAttention != "ring" && plan.cpAttention != "ulysses")
    return "unknown cp_attention '" + plan.cpAttention + "'";
  if (plan.cpAttention == "ulysses") {
    if (plan.cp == 1)
      return "cp_attention=ulysses needs cp > 1";
    if (m.heads % (plan.tp * plan.cp) || m.kvHeads % (plan.tp * plan.cp))
      return llvm::formatv("ulysses: {0} q / {1} kv heads do not "
                           "split into tp*cp={2}",
                           m.heads, m.kvHeads, plan.tp * plan.cp);
  }
  if (plan.cp > 1 && !plan.cpContiguous && m.seq % (2 * plan.cp))
    return "seq % 2cp != 0";
  if (plan.cp > 1 && plan.cpContiguous && m.seq % plan.cp)
    return "seq % cp != 0";
  if (plan.cp > 1 && plan.sp && m.seq % (plan.cp * plan.tp))
    return "sp: seq % (cp*tp) != 0";
  if (globalBatch != plan.dp * plan.mbs * plan.mb)
    return "dp*mbs*mb != global batch";
  if (plan.ep < 1)
    return "ep < 1";
  if (plan.ep > 1) {
    if (m.experts <= 0 || prof.expertParams <= 0)
      return "ep>1 on a model without experts";
    if (m.experts % plan.ep)
      return llvm::formatv("{0} experts do not split into ep={1}", m.experts,
                           plan.ep);
    if (plan.etp != 1 && plan.etp != plan.tp)
      return llvm::formatv("etp={0} is neither 1 nor tp={1}", plan.etp,
                           plan.tp);
    if (plan.expertLayout() == ExpertLayout::OverTp && plan.ep % plan.tp)
      return "ep over tp: ep % tp != 0";
    if ((plan.dp * plan.cp) % plan.getExpertParallelOutsideTp())
      return plan.expertLayout() == ExpertLayout::OverTp
                 ? "dp*cp % (ep/tp) != 0"
                 : "dp*cp % ep != 0";
  }
  return "";
}

//===----------------------------------------------------------------------===//
// One block per microbatch
//===----------------------------------------------------------------------===//

FunctionTimes functionTime(const Cluster &c, const FunctionProfile &f, double b,
                           double scale, int64_t tp) {
  FunctionTimes t;
  int64_t launches = 0;
  for (const OpProfile &op : f.ops) {
    if (op.flops.at(b) == 0 && op.bytes.at(b) == 0)
      continue;
    ++launches;
    double bytes = op.bytes.at(b);
    GemmShape shape;
    if (op.kind == OpKind::Gemm)
      shape = op.gemmAt(b, scale);
    double time =
        kernelTime(c, op.kind, op.flops.at(b) * scale, bytes * scale,
                   op.kind == OpKind::Gemm ? &shape : nullptr, op.name);
    // Unfused attention materialises the scores: its softmax, masking and
    // dropout are separate memory-bound kernels that run after the QK^T
    // GEMM and before the PV GEMM, so their time adds to the GEMMs'.
    // The fused kernel's per-score work (softmax; recomputed probabilities
    // in the backward) beside its FLOPs.
    // Kernel time like kernelTime's, so slowed by synchronisation alike.
    if (op.kind == OpKind::Attention)
      time +=
          (1 + c.syncSlowdown) * scale *
          (op.scoresAt(b) *
               (op.backward ? c.attentionGradScoreTime : c.attentionScoreTime) +
           op.attentionBatchHeads.at(b) *
               attentionTiles(c, op.attentionSeqQ, op.attentionSeqK,
                              op.attentionCausal) *
               (op.backward ? c.attentionGradTileTime : c.attentionTileTime));
    if (op.kind == OpKind::Attention && c.attentionScoreBytes > 0) {
      time += kernelTime(c, OpKind::Memory, 0,
                         c.attentionScoreBytes * op.scoresAt(b) *
                             (op.backward ? 2 : 1) * scale);
      ++launches;
    }
    t.total += time;
    if (op.weightGrad)
      t.weightGrad += time;
    if (op.kind == OpKind::Attention)
      t.attention += time;
  }
  for (const CommProfile &comm : f.comms)
    t.comm += collectiveTime(c, comm.kind, comm.bytes.at(b) * scale, tp,
                             c.gpusPerNode);
  // The host issues every kernel and collective; it runs ahead of the
  // device, so the function is host-bound when issuing takes longer than
  // the device's work. The parts scale with the total.
  double issue = double(launches + int64_t(f.comms.size())) * c.hostOpOverhead;
  if (issue > t.total + t.comm && t.total > 0) {
    double stretch = (issue - t.comm) / t.total;
    t.total *= stretch;
    t.weightGrad *= stretch;
    t.attention *= stretch;
  }
  return t;
}

TensorParallelBlock tensorParallelBlock(const Cluster &c,
                                        const FunctionProfile &forward,
                                        const FunctionProfile &backward,
                                        double b, double scale, int64_t tp) {
  const double tpHidden = 1 - tpOverlapFraction(c, tp);
  TensorParallelBlock t;
  t.forward = functionTime(c, forward, b, scale, tp);
  t.backward = functionTime(c, backward, b, scale, tp);
  t.layer.forward = t.forward.total + tpHidden * t.forward.comm;
  t.layer.weightGrad = t.backward.weightGrad;
  t.layer.inputGrad =
      t.backward.total - t.backward.weightGrad + tpHidden * t.backward.comm;
  t.layer.comm = tpHidden * (t.forward.comm + t.backward.comm);
  return t;
}

const RecomputeProfile *softwareRecompute(const Cluster &c,
                                          const LocalProfile &prof,
                                          const std::string &mode) {
  if (mode == "selective" && c.selectiveRecomputesAttention)
    return nullptr;
  return prof.recompute(mode);
}

RecomputeTime recomputeTime(const Cluster &c, const LocalProfile &prof,
                            const Candidate &plan,
                            const TensorParallelBlock &block, double b,
                            double scale) {
  const double tpHidden = 1 - tpOverlapFraction(c, plan.tp);
  const RecomputeProfile *rc = softwareRecompute(c, prof, plan.recompute);
  RecomputeTime r;
  if (rc && plan.recompute == "full" && c.fullRecomputeRerunsForward) {
    // The software re-runs whole layers (Megatron-LM): the compiled block
    // forward, collectives included.
    r.time = block.layer.forward;
    r.comm = tpHidden * block.forward.comm;
  } else if (rc) {
    // The re-run is input-gradient work: it precedes the backward, never
    // the W part.
    FunctionTimes re = functionTime(c, rc->layerRecompute, b, scale, plan.tp);
    r.time = re.total + tpHidden * re.comm;
    r.comm = tpHidden * re.comm;
  } else if (plan.recompute == "full") {
    // Analytic fallback: the whole block forward with its collectives.
    r.time = block.layer.forward;
    r.comm = tpHidden * block.forward.comm;
  } else if (plan.recompute == "selective") {
    // Analytic fallback (Korthikanti et al.): the attention forward.
    r.time = block.forward.attention;
  }
  return r;
}

void addLayerTerm(LayerTimes &layer, const LayerTerm &t) {
  // Adding a zero part is exact, so every term is added in one order.
  layer.forward += t.forward;
  layer.inputGrad += t.backward;
  layer.forward += t.computeForward;
  layer.inputGrad += t.computeBackward;
  layer.comm += t.forward + t.backward;
  layer.inputGrad += t.recompute;
  layer.comm += t.recompute;
}

LayerTerm ulyssesTerm(const Cluster &c, const ModelInfo &m,
                      const Candidate &plan) {
  LayerTerm t;
  if (plan.cp <= 1 || plan.cpAttention != "ulysses")
    return t;
  // Each all-to-all sends (cp-1)/cp of the rank's local q (or out) or k
  // (or v); attention waits for its inputs and the projection for its
  // output, so none overlaps.
  double headDim = double(m.hidden) / m.heads;
  double tokens = plan.mbs * (double(m.seq) / plan.cp);
  double qBytes = tokens * double(m.hidden) / plan.tp * m.elementBytes;
  double kvBytes = tokens * m.kvHeads * headDim / plan.tp * m.elementBytes;
  bool intra = plan.tp * plan.cp <= c.gpusPerNode;
  auto a2a = [&](double bytes) {
    return collectiveTime(c, CollectiveKind::AllToAll, bytes, plan.cp,
                          intra ? plan.cp : 1);
  };
  t.forward = 2 * a2a(qBytes) + 2 * a2a(kvBytes);
  t.backward = t.forward;
  if (plan.recompute == "full")
    t.recompute = t.forward;
  return t;
}

LayerTerm ringAttentionTerm(const Cluster &c, const ModelInfo &m,
                            const Candidate &plan, double attentionForward,
                            double attentionBackward) {
  LayerTerm t;
  if (plan.cp <= 1 || plan.cpAttention == "ulysses")
    return t;
  double headDim = double(m.hidden) / m.heads;
  double tokens = plan.mbs * (double(m.seq) / plan.cp);
  double kvBytes = 2 * tokens * m.kvHeads * headDim / plan.tp * m.elementBytes;
  // Merge (§2.1): read the fp32 running output and the block output,
  // write the fp32 output.
  double mergeBytes = tokens * double(m.hidden) / plan.tp * (4 + 4 + 2);
  bool intra = plan.tp * plan.cp <= c.gpusPerNode;
  RingExposure ring =
      ringAttentionExposure(c, kvBytes, mergeBytes, plan.cp, intra,
                            attentionForward, attentionBackward);
  t.forward = ring.forward;
  t.backward = ring.backward;
  if (plan.cpContiguous) {
    // Contiguous chunks: the last rank of the ring does (cp-1) full blocks
    // and the diagonal, (2cp-1)/cp times the balanced share (the others
    // wait for it at the next collective).
    double extra = double(plan.cp - 1) / plan.cp;
    t.computeForward = extra * attentionForward;
    t.computeBackward = extra * attentionBackward;
  }
  // The ring's cp block kernels against the one kernel at 1/cp the profile
  // counts: more, smaller tiles.
  double seq = double(m.seq), chunk = seq / plan.cp;
  double ringTiles = (plan.cp - 1) * attentionTiles(c, chunk, chunk, false) +
                     attentionTiles(c, chunk, chunk, true);
  double extraTiles = (1 + c.syncSlowdown) * plan.mbs * double(m.heads) /
                      plan.tp *
                      (ringTiles - attentionTiles(c, seq, seq, true) / plan.cp);
  t.computeForward += extraTiles * c.attentionTileTime;
  t.computeBackward += extraTiles * c.attentionGradTileTime;
  if (plan.recompute == "full") {
    t.recompute = ring.forward;
    t.computeBackward += extraTiles * c.attentionTileTime;
  }
  return t;
}

LayerTerm expertAllToAllTerm(const Cluster &c, const LocalProfile &prof,
                             const Candidate &plan, double b, double scale) {
  LayerTerm t;
  // Folded over tp, the ep group's tp part is in the profile (a local slice
  // in, an all-gather over tp out); the all-to-all spans the rest.
  int64_t group = plan.getExpertParallelOutsideTp();
  if (group <= 1)
    return t;
  // Balanced routing: each rank computes E/ep experts on ep times the
  // tokens, so the expert compute per GPU is the profile's (the ep = 1
  // block's, or with ep over tp the E/tp one's). The all-to-all group is
  // `group` consecutive dp×cp members, tp ranks apart.
  double sendBytes = prof.dispatchBytes.at(b) * scale;
  bool intra = group * plan.tp <= c.gpusPerNode;
  double a2a = collectiveTime(c, CollectiveKind::AllToAll, sendBytes, group,
                              intra ? group : 1);
  t.forward = 2 * a2a;
  t.backward = plan.recompute == "full" ? 4 * a2a : 2 * a2a;
  return t;
}

LayerTerm moeSequenceGatherTerm(const Cluster &c, const ModelInfo &m,
                                const Candidate &plan) {
  LayerTerm t;
  if (m.experts <= 0 || plan.cp <= 1)
    return t;
  // Routing, capacity and drop order are per sequence; the router waits
  // for the gathered input. The expert compute is split when ep folds over
  // the cp ranks; at ep = 1 every cp rank would repeat it, which the
  // compilable search therefore skips.
  double fullBytes =
      plan.mbs * double(m.seq) * double(m.hidden) / plan.tp * m.elementBytes;
  bool intra = plan.tp * plan.cp <= c.gpusPerNode;
  double gather = collectiveTime(c, CollectiveKind::AllGather, fullBytes,
                                 plan.cp, intra ? plan.cp : 1);
  t.forward = gather;
  t.backward = plan.recompute == "full" ? 2 * gather : gather;
  return t;
}

StageEnds stageEnds(const Cluster &c, const LocalProfile &prof, double b,
                    double scale, int64_t tp) {
  const double tpHidden = 1 - tpOverlapFraction(c, tp);
  FunctionTimes preF = functionTime(c, prof.preFwd, b, scale, tp);
  FunctionTimes preB = functionTime(c, prof.preBwd, b, scale, tp);
  FunctionTimes postF = functionTime(c, prof.postFwd, b, scale, tp);
  FunctionTimes postB = functionTime(c, prof.postBwd, b, scale, tp);
  StageEnds s;
  s.firstF = preF.total + tpHidden * preF.comm;
  s.firstB = preB.total + tpHidden * preB.comm;
  s.lastF = postF.total + tpHidden * postF.comm;
  s.lastB = postB.total + tpHidden * postB.comm;
  s.comm = tpHidden * (preF.comm + preB.comm + postF.comm + postB.comm);
  return s;
}

//===----------------------------------------------------------------------===//
// Parameters, ZeRO and data parallelism
//===----------------------------------------------------------------------===//

ParameterShards parameterShards(const Cluster &c, const ModelInfo &m,
                                const LocalProfile &prof,
                                const Candidate &plan) {
  ParameterShards s;
  s.layersPerRank = double(m.layers) / plan.pp;
  s.dpGroup = plan.dp * plan.cp;
  // Mesh order pp, dp, cp, tp: a node holds gpn / tp members of a dp×cp
  // group.
  s.dpPerNode = std::max<int64_t>(1, c.gpusPerNode / plan.tp);
  // Expert weights are split over the ep group and replicated (or ZeRO-
  // sharded) over the expert-data-parallel group, whose members are
  // tp·outside ranks apart. The profile's expert weights per rank are
  // already split over tp when ep folds over it (or etp splits them).
  int64_t outside = plan.getExpertParallelOutsideTp();
  s.expertRank =
      plan.ep > 1 ? s.layersPerRank * prof.expertParams / outside : 0;
  s.denseRank = s.layersPerRank * prof.layerParams + prof.otherParams;
  if (plan.ep > 1)
    s.denseRank -= s.layersPerRank * prof.expertParams;
  s.edpGroup = s.dpGroup / outside;
  s.edpPerNode = std::max<int64_t>(1, c.gpusPerNode / (plan.tp * outside));
  if (plan.dpBucketPerLayerGroup) {
    // dist-bucket-collectives' default cap (bucket-bytes), on the full side.
    constexpr double kBucketCapBytes = 40.0 * 1024 * 1024;
    double gradBytes = gradElementBytes(c, m.elementBytes);
    auto split = [&](double params) -> int64_t {
      return params > 0
                 ? int64_t(std::ceil(params * gradBytes / kBucketCapBytes))
                 : 0;
    };
    int64_t blocks = int64_t(std::ceil(s.layersPerRank));
    // The pass groups a gradient by the calls before it: the embedding's
    // gradients come after the last block backward (block 0's) and join
    // its bucket; the final norm and an untied head (headOnlyParams, before
    // the first block backward) form their own. The rank counted is the one
    // whose reduction ends the step: a pipeline's first stage (its last
    // backward closes the schedule; under zb-v it also holds the last
    // chunk, with the final norm). Without the split of the non-block
    // parameters in the profile: one group of them on every rank.
    const bool splitProfile = prof.preParams + prof.postParams > 0;
    const bool holdsHead = plan.pp == 1 || plan.schedule == "zb-v";
    auto bucketsOf = [&](double layer, double pre, double headOnly,
                         double other) -> int64_t {
      if (splitProfile)
        return (blocks - 1) * split(layer) + split(layer + pre) +
               (holdsHead ? split(headOnly) : 0);
      return blocks * split(layer) + split(other);
    };
    double layerDense =
        prof.layerParams - (plan.ep > 1 ? prof.expertParams : 0);
    s.denseBuckets =
        std::max<int64_t>(1, bucketsOf(layerDense, prof.preParams,
                                       prof.headOnlyParams, prof.otherParams));
    if (plan.ep > 1)
      s.expertBuckets =
          std::max<int64_t>(1, blocks * split(prof.expertParams / outside));

    if (!prof.gradientReductions.empty() && plan.zero != 3) {
      // The pass buckets each kind and set of mesh axes apart: sum the
      // profile's parameter groups into the collectives they take.
      struct Axes {
        CollectiveKind kind;
        bool dp, cp, tp;
        bool operator==(const Axes &o) const {
          return kind == o.kind && dp == o.dp && cp == o.cp && tp == o.tp;
        }
      };
      std::vector<std::pair<Axes, GradientReduction>> sums;
      auto add = [&](Axes axes, const GradientReduction &r) {
        auto it =
            llvm::find_if(sums, [&](const auto &e) { return e.first == axes; });
        if (it == sums.end()) {
          sums.push_back({axes, GradientReduction{}});
          it = std::prev(sums.end());
        }
        it->second.layer += r.layer + (plan.ep > 1 ? 0 : r.layerExpert);
        it->second.pre += r.pre;
        it->second.headOnly += r.headOnly;
        it->second.other += r.other;
      };
      for (const GradientReduction &r : prof.gradientReductions) {
        bool cp = r.overContext && plan.cp > 1;
        bool tp = r.overTensor && plan.tp > 1;
        if (plan.zero == 0) {
          add({CollectiveKind::AllReduce, true, cp, tp}, r);
          continue;
        }
        // The optimizer's shards are over dp×cp: the gradient is
        // reduce-scattered over those of its axes, all-reduced over tp.
        add({CollectiveKind::ReduceScatter, true, cp, false}, r);
        if (tp)
          add({CollectiveKind::AllReduce, false, false, true}, r);
      }
      if (plan.zero > 0)
        for (const GradientReduction &r : prof.gradientReductions)
          add({CollectiveKind::AllGather, true, plan.cp > 1, false}, r);
      // Mesh order pp, dp, cp, tp (tp fastest): a node holds the part of
      // each axis that lies within its GPUs.
      auto group = [&](const Axes &axes) {
        int64_t size = 1, local = 1, stride = 1;
        for (auto [in, n] :
             {std::pair{axes.tp, plan.tp}, std::pair{axes.cp, plan.cp},
              std::pair{axes.dp, plan.dp}}) {
          if (in) {
            size *= n;
            local *= std::clamp<int64_t>(c.gpusPerNode / stride, 1, n);
          }
          stride *= n;
        }
        return std::pair{size, local};
      };
      s.denseBuckets = 0;
      for (const auto &[axes, sum] : sums) {
        GradientCollective g;
        g.kind = axes.kind;
        g.dp = axes.dp && plan.dp > 1;
        g.cp = axes.cp && plan.cp > 1;
        g.tp = axes.tp && plan.tp > 1;
        std::tie(g.group, g.perNode) = group(axes);
        g.params = s.layersPerRank * sum.layer + sum.other;
        g.buckets = bucketsOf(sum.layer, sum.pre, sum.headOnly, sum.other);
        if (g.group <= 1 || g.params <= 0 || g.buckets <= 0)
          continue;
        if (g.kind != CollectiveKind::AllGather)
          s.denseBuckets += g.buckets;
        s.denseCollectives.push_back(g);
      }
    }
  }
  return s;
}

Zero3Exposure zero3Term(const Cluster &c, const ModelInfo &m,
                        const LocalProfile &prof, const Candidate &plan,
                        const ParameterShards &s, int64_t layersPerChunk,
                        double layerForward, double layerBackward,
                        bool reduce) {
  if (plan.zero != 3 || s.dpGroup <= 1)
    return Zero3Exposure{};
  double dense = prof.layerParams - (plan.ep > 1 ? prof.expertParams : 0);
  Zero3Exposure z = zero3Exposure(c, dense, prof.otherParams, m.elementBytes,
                                  layersPerChunk, s.dpGroup, s.dpPerNode,
                                  layerForward, layerBackward, reduce);
  if (plan.ep > 1 && s.edpGroup > 1) {
    double ov = c.dpOverlap > 0 ? c.dpOverlap : 1;
    double ag = collectiveTime(c, CollectiveKind::AllGather,
                               dense * m.elementBytes, s.dpGroup, s.dpPerNode);
    double rs =
        reduce ? collectiveTime(c, CollectiveKind::ReduceScatter,
                                dense * gradElementBytes(c, m.elementBytes),
                                s.dpGroup, s.dpPerNode)
               : 0;
    Zero3Exposure ze =
        zero3Exposure(c, prof.expertParams / plan.getExpertParallelOutsideTp(),
                      0, m.elementBytes, layersPerChunk, s.edpGroup,
                      s.edpPerNode, std::max(0.0, layerForward - ag / ov),
                      std::max(0.0, layerBackward - (ag + rs) / ov), reduce);
    z.forward += ze.forward;
    z.backward += ze.backward;
  }
  return z;
}

double zero3LastReduceTime(const Cluster &c, const Candidate &plan,
                           const Zero3Exposure &withReduce,
                           const Zero3Exposure &gatherOnly, double chunks) {
  if (plan.zero != 3 || plan.mb <= 1 || c.zeroReducesEveryMicrobatch)
    return 0;
  return chunks * (withReduce.backward - gatherOnly.backward) +
         withReduce.rootBackward - gatherOnly.rootBackward;
}

double dataParallelSyncTime(const Cluster &c, const ModelInfo &m,
                            const Candidate &plan, const ParameterShards &s,
                            double mb, double F, double B) {
  if (plan.zero == 3)
    return 0;
  // What the ZeRO-1/2 parameter all-gather hides behind: the next step's
  // forward (Megatron), or the later buckets' optimizer updates.
  double gatherCover =
      plan.paramGatherBehindOptimizer ? optimizerTime(c, plan, s) : F;
  Exposure dps;
  if (!s.denseCollectives.empty()) {
    // The compiled program's collectives (ParameterShards): reductions
    // in gradient bytes hidden behind the backward, one after the other,
    // gathers in parameter bytes behind the gather cover; ZeRO-2 software
    // that reduces after every microbatch reduces mb times.
    double reduceCover = B, gathersCover = gatherCover;
    double times = plan.zero == 2 && c.zeroReducesEveryMicrobatch ? mb : 1;
    for (const GradientCollective &g : s.denseCollectives) {
      bool gather = g.kind == CollectiveKind::AllGather;
      double &cover = gather ? gathersCover : reduceCover;
      Exposure e = bucketedCollective(
          c, g.kind, g.params,
          gather ? m.elementBytes : gradElementBytes(c, m.elementBytes),
          g.group, g.perNode, cover, g.buckets);
      double n = gather ? 1 : times;
      dps.total += n * e.total;
      dps.exposed += n * e.exposed;
      cover = std::max(0.0, cover - n * e.total);
    }
  } else {
    dps = dpSyncExposure(c, plan.zero, s.denseRank, m.elementBytes, s.dpGroup,
                         s.dpPerNode, mb, gatherCover, B, s.denseBuckets);
  }
  bool inTail = plan.pp > 1 && plan.pipelineReductionInTail;
  double exposed = inTail ? dps.total : dps.exposed;
  if (s.expertRank > 0) {
    Exposure eps =
        dpSyncExposure(c, plan.zero, s.expertRank, m.elementBytes, s.edpGroup,
                       s.edpPerNode, mb, std::max(0.0, gatherCover - dps.total),
                       std::max(0.0, B - dps.total), s.expertBuckets);
    exposed += inTail ? eps.total : eps.exposed;
  }
  return exposed;
}

double optimizerTime(const Cluster &c, const Candidate &plan,
                     const ParameterShards &s) {
  double optParams = plan.zero >= 1 ? s.denseRank / s.dpGroup : s.denseRank;
  optParams += plan.zero >= 1 ? s.expertRank / s.edpGroup : s.expertRank;
  // On a time-shared node the rank updates while its peers wait
  // (Cluster::alone).
  return kernelTime(c.alone ? *c.alone : c, OpKind::Memory, 12 * optParams,
                    28 * optParams, nullptr, "tfm.adamw") +
         c.hostStepOverhead;
}

//===----------------------------------------------------------------------===//
// Pipeline
//===----------------------------------------------------------------------===//

double p2pTime(const Cluster &c, const Candidate &plan, double boundaryBytes) {
  if (plan.pp <= 1)
    return 0;
  // Stage neighbours are dp*cp*tp ranks apart.
  bool intra = plan.dp * plan.cp * plan.tp < c.gpusPerNode;
  return (1 - c.p2pOverlap) * collectiveTime(c, CollectiveKind::P2P,
                                             boundaryBytes, 2, intra ? 2 : 1);
}

double pipelineTailTime(const Cluster &c, const Candidate &plan,
                        double tiedGradBytes) {
  if (plan.pp <= 1)
    return 0;
  // Stage neighbours are dp*cp*tp ranks apart (p2pTime); so are the
  // members of a pp group, as many to a node as fit.
  const int64_t stride = plan.dp * plan.cp * plan.tp;
  const int64_t perNode = std::clamp<int64_t>(
      c.gpusPerNode / std::max<int64_t>(1, stride), 1, plan.pp);
  const int64_t pairPerNode = std::min<int64_t>(perNode, 2);
  const double scalar = 4;
  double t =
      collectiveTime(c, CollectiveKind::P2P, scalar, 2, pairPerNode) +
      collectiveTime(c, CollectiveKind::AllReduce, scalar, plan.pp, perNode);
  const bool oneRankHoldsBothEnds = plan.schedule == "zb-v";
  if (tiedGradBytes > 0 && !oneRankHoldsBothEnds)
    t += collectiveTime(c, CollectiveKind::P2P, tiedGradBytes, 2, pairPerNode);
  return t;
}

double gradientAccumulationTime(const Cluster &c, double elements,
                                double tensors, int64_t microbatches,
                                double gradBytes) {
  if (microbatches <= 1 || tensors <= 0 || c.gradAccumulationFused)
    return 0;
  const double bytes = elements * gradBytes / tensors;
  double add = tensors * kernelTime(c, OpKind::Memory, elements / tensors,
                                    3 * bytes, nullptr, "tfm.add");
  double scale = tensors * kernelTime(c, OpKind::Memory, elements / tensors,
                                      2 * bytes, nullptr, "tfm.scale");
  return ((microbatches - 1) * add + scale) / double(microbatches);
}

PipelineSharing pipelineSharing(const Cluster &c) {
  PipelineSharing s;
  if (!c.sharesNode)
    return s;
  s.wakeupLatency = c.wakeupLatency;
  // With half of p ranks waiting: the others' speed p / (p / 2 + p / 2 *
  // waitingUse) is the measured halfWaitingSpeedup.
  s.waitingUse = std::clamp(2 / c.halfWaitingSpeedup - 1, 0.0, 1.0);
  s.maxSpeedup = std::max(1.0, c.othersWaitingSpeedup);
  return s;
}

PipelineTime pipelineTime(const Candidate &plan, const Estimate &e) {
  const int64_t p = plan.pp, v = plan.vpp;
  const double mb = plan.mb;
  double F = v * e.tF, I = v * e.tI, W = v * e.tW, B = I + W;
  PipelineTime t;
  t.extra = p == 1 ? e.firstF + e.firstB + e.lastF + e.lastB
                   : std::max(e.firstF + e.firstB, e.lastF + e.lastB);
  if (p > 1) {
    if (plan.schedule == "interleaved")
      t.bubble = (p - 1) * (F + B) / v;
    else if (plan.schedule == "zb-h1")
      t.bubble = (p - 1) * std::max(0.0, F + I - W);
    else if (plan.schedule == "zb-v")
      t.bubble = (p - 1) * std::max(0.0, F + I - 2 * W) / 2;
    else
      t.bubble = (p - 1) * (F + B);
    t.bubble += 2 * (p - 1) * e.tP2P;
  }
  t.busy = mb * (F + B + t.extra);
  t.steadyP2P = p > 1 ? 2 * mb * v * e.tP2P : 0;
  return t;
}

double inflightLayers(const Candidate &plan, int64_t L) {
  const int64_t p = plan.pp, v = plan.vpp;
  const double mb = plan.mb;
  const int64_t layersPerChunk = L / (p * v);
  const double layersPerRank = double(L) / p;
  if (p == 1)
    return L;
  if (plan.schedule == "gpipe")
    return mb * layersPerRank;
  if (plan.schedule == "interleaved")
    return std::min<double>(2 * (p - 1) + (v - 1) * p + 1, v * mb) *
           layersPerChunk;
  if (plan.schedule == "zb-v")
    return std::min<double>(2 * p, 2 * mb) * layersPerChunk;
  return std::min<double>(p, mb) * layersPerRank;
}

//===----------------------------------------------------------------------===//
// Memory per GPU
//===----------------------------------------------------------------------===//

BlockActivations blockActivations(const Cluster &c, const LocalProfile &prof,
                                  const std::string &mode, double b,
                                  double scale) {
  double boundary = prof.boundaryBytes.at(b) * scale;
  double residual = prof.residualBytes.at(b) * scale;
  // Unfused attention (attention_score_bytes > 0) also keeps its softmax
  // output (2 bytes), dropout mask (1) and dropout output (2) per score
  // element for the backward: Korthikanti et al.'s 5·a·s²·b term
  // (workloads.md §5). The compiled program's attention is fused, so these
  // are added to what it keeps whenever its attention output is kept.
  double scoreResidual = 0;
  if (c.attentionScoreBytes > 0)
    for (const OpProfile &op : prof.layerFwd.ops)
      if (op.kind == OpKind::Attention && !op.backward)
        scoreResidual += (4 + c.dropoutMaskBytes) * op.scoresAt(b) * scale;
  // Frameworks that keep dropout masks (Cluster::dropoutMaskBytes) keep one
  // per element of the block's hidden dropouts, per layer in flight.
  const double masks = c.dropoutMaskBytes * prof.dropoutElements.at(b) * scale;
  // Every mode keeps the masks of the layers it keeps whole (full: only
  // the layer being recomputed holds them), and the activation gradients
  // of the one-block step's peak are transient.
  auto finish = [&](BlockActivations a) {
    if (mode == "full")
      a.transient += masks;
    else
      a.perLayer += masks;
    // Persistent gradient buffers hold the parameter gradients already:
    // what is left of the one-block peak's gradient bytes beyond all of its
    // parameters' is activation gradients (a lower bound). In the frame,
    // everything live at the one-block peak counts.
    double grads = prof.frameGradBytes.at(b) * scale;
    a.gradients = c.gradBufferInFrame
                      ? grads
                      : std::max(0.0, grads - prof.stepParamBytes);
    return a;
  };
  BlockActivations a;
  if (const RecomputeProfile *rc = softwareRecompute(c, prof, mode)) {
    // Compiled: the mode's forward results (selective: the kept matmul and
    // attention outputs; full: none) and its memory plan's frame, which
    // holds full's recomputed residuals of the layer being differentiated
    // (activations of @B_recompute_full). Selective's recomputed residuals
    // are computed in @B_selective_bwd, which rt-lower counts as gradient
    // buffers, so the layer's recomputed bytes (the residuals without
    // recomputation less the kept ones) are added to the transient part.
    double kept = boundary + rc->residualBytes.at(b) * scale;
    double frame = rc->frameActivationBytes.at(b) * scale;
    a.perLayer = kept + (mode == "full" ? 0 : scoreResidual);
    a.transient = std::max(0.0, frame - kept);
    if (mode == "full")
      a.transient += scoreResidual;
    else
      a.transient += std::max(0.0, residual - rc->residualBytes.at(b) * scale);
    return finish(a);
  }
  double frame = prof.frameActivationBytes.at(b) * scale;
  a.transient = std::max(0.0, frame - residual - boundary);
  if (mode == "full") {
    // Analytic fallback: the input only; one layer's residuals are
    // recomputed at a time.
    a.perLayer = boundary;
    a.transient += residual + scoreResidual;
  } else if (mode == "selective") {
    // Analytic fallback (Korthikanti et al.): the attention outputs and
    // the scores are dropped.
    a.perLayer = boundary + residual - prof.selectiveSavedBytes.at(b) * scale;
  } else {
    a.perLayer = boundary + residual + scoreResidual;
  }
  return finish(a);
}

/// The gradient sums `l` holds at backward pass `w`: whole, or under
/// ZeRO-1/2/3 the complete ones as shards (with the one reduced in the call
/// before still whole).
static double backwardPassSums(const FrameLayers &l, const WeightPass &w) {
  double whole = w.summedLayers, shards = 0;
  if (l.completeSumShardBytes > 0) {
    whole -= w.completeLayers - (l.rerunCalls ? 0 : w.justCompleteLayers);
    shards = w.completeLayers;
  }
  return whole * l.weightGradBytes + shards * l.completeSumShardBytes +
         (w.embeddingSums ? l.embeddingGradBytes : 0);
}

/// The gradient sums `l` holds at W pass `w`: as backwardPassSums, but a
/// W is no re-run, so under full recomputation a sum completed before it
/// stays whole until the next backward call's re-run.
static double weightPassSums(const FrameLayers &l, const WeightPass &w) {
  double whole = w.summedLayers, shards = 0;
  if (l.completeSumShardBytes > 0) {
    whole -= w.completeLayers - (l.rerunCalls ? w.completeBeforeRerunLayers
                                              : w.justCompleteLayers);
    shards = w.completeLayers;
  }
  return whole * l.weightGradBytes + shards * l.completeSumShardBytes +
         (w.embeddingSums ? l.embeddingGradBytes : 0);
}

/// ZeRO-3's gathers live at I call `in`: its layer's gathered parameters
/// and, when another block call follows, that call's gather started one
/// call ahead (dist-overlap-collectives: its packed shard and gathered
/// buffer; a full recomputation's re-run's).
static double inputPassGathers(const FrameLayers &l, const InputPass &in) {
  if (l.gatheredPerLayer == 0)
    return 0;
  const double next = l.rerunCalls && !in.forwardNext
                          ? l.rerunGatherBytes
                          : l.gatherPackBytes + l.gatheredPerLayer;
  // ZB-V (passesOnly) looks past the first stage's W, which is no call.
  const bool later = l.passesOnly ? in.prefetchesGather : in.laterBlockCall;
  return l.gatheredPerLayer + (later ? next : 0);
}

/// The non-block parameters `l`'s rank holds gathered at pass `w`: each
/// end's until its last use.
static double passRootBytes(const FrameLayers &l, const WeightPass &w) {
  return (w.firstForwardsLeft ? l.rootFirstBytes : 0) +
         (w.headOpsLeft ? l.rootLastBytes : 0) -
         (w.firstForwardsLeft && w.headOpsLeft ? l.rootSharedBytes : 0);
}

namespace {
/// What the head-only parameters' gradients (the final norm's) take less at
/// the last microbatch's backward calls below the top block on the head's
/// rank than the one-block backward phase and the accumulated sums count
/// (ZeRO-1/2 reduce-scatter each sum after the last microbatch's backward
/// of its part): their sum was completed and reduce-scattered before the
/// top block's backward, so the rank holds its shard (`scattered`: the
/// rest of the whole sum), and the one-block phase's head-only gradient and
/// its reduction's result (the one-block step all-reduces it over the call)
/// are dead (`phaseDead`).
struct HeadOnlySums {
  double scattered = 0, phaseDead = 0;
};
HeadOnlySums headOnlySumsBelowTop(const FrameLayers &l) {
  HeadOnlySums s;
  if (!l.head || l.sumReduceBytes <= 0 || l.sumShardBytes <= 0)
    return s;
  s.scattered =
      l.headOnlyGradSumBytes * (1 - l.sumShardBytes / l.sumReduceBytes);
  s.phaseDead = 2 * l.headOnlyGradBytes;
  return s;
}
} // namespace

FramePeak framePeak(const StepMemory &phases, double b, double scale,
                    const FrameLayers &l) {
  const double otherLayers = std::max(0.0, l.layers - 1);
  const double otherInflight = std::max(0.0, l.inflight - 1);
  const double otherGrads = otherLayers * l.layerGradBytes;
  FramePeak best;
  bool first = true;
  // The closed-form backward candidates below, until the simulated passes.
  bool closedBackward = true;
  auto consider = [&](StepPhase phase, double kept, double paramGrads,
                      double sent = 0, bool phaseGrads = true,
                      bool belowTop = false) {
    if (phase == StepPhase::Head && !l.head)
      return;
    if (phase == StepPhase::BlockBackward && closedBackward && l.passesOnly)
      return;
    const PhaseMemory &m = phases[static_cast<unsigned>(phase)];
    FramePeak c;
    c.phase = phase;
    const double headGrad = l.head ? 0 : m.headGrad.at(b) * scale;
    // At a split W the received gradients are its inputs (counted there).
    double received =
        phaseGrads ? std::max(0.0, headGrad - l.headOnlyGradBytes) : 0;
    // Below the top block the output gradient is the block above's input
    // gradient, not received.
    const double fromAbove =
        belowTop ? std::min(received, l.receivedGradBytes) : 0;
    received -= fromAbove;
    c.activations = m.activation.at(b) * scale + kept + received;
    c.grads =
        (phaseGrads ? m.grad.at(b) * scale - headGrad : 0) + fromAbove + sent;
    c.paramGrads = paramGrads;
    c.other = m.other.at(b) * scale;
    if (first || c.total() > best.total())
      best = c;
    first = false;
  };
  const double kept = otherInflight * l.keptPerLayer + l.tokenSlices +
                      l.headsKept + l.heldRootBytes;
  const double prefetch = l.gatherPackBytes + l.gatheredPerLayer;
  const double rootBackward = l.rootForwardOnly ? 0 : l.heldRootBytes;
  const double keptBackward = kept - l.heldRootBytes + rootBackward;
  consider(StepPhase::Embedding, l.heldRootBytes, l.accumulated);
  consider(StepPhase::BlockForward, kept + l.gatheredPerLayer + prefetch,
           l.accumulated, l.sentGradInflightBytes);
  consider(StepPhase::Head, kept + prefetch, l.accumulated,
           l.sentGradInflightBytes);
  // A split rank's forward as its simulated program holds it: the earlier
  // microbatches' pending W inputs, unwaited sends and head gradients (the
  // closed form above counts none).
  for (const WeightPass &w : l.forwardPasses)
    consider(StepPhase::BlockForward,
             w.inflight * l.keptPerLayer + w.tokenSlices * l.tokenBytes +
                 w.heads * l.headKeptBytes + l.heldRootBytes +
                 l.gatheredPerLayer + prefetch,
             weightPassSums(l, w) + w.headGrads * l.headOnlyGradSumBytes,
             w.pending * l.weightInputBytes +
                 (w.sentGrads + w.heldGrads - w.receivedInputs) *
                     l.boundaryBytes +
                 w.tiedShares * l.tiedGradBytes);
  // A backward call's prefetch for the next call, and the block above's
  // gradients still being reduce-scattered there.
  const double backwardNext =
      otherLayers > 0 || l.laterBlockCall
          ? (l.rerunCalls && !(l.nextKnown && l.forwardNext)
                 ? l.rerunGatherBytes
                 : prefetch)
          : 0;
  const double reducing = l.rerunCalls ? 0 : l.reducingGradBytes;
  // A rank without a whole backward call (splitBackwards) is scored at its
  // I and W passes instead where its I calls are (see below), and at its
  // whole backward passes where it has them (ZB-V's first rank); under
  // ZeRO-3 the whole call stands in for the gathers around them only where
  // its I calls are not scored (they hold the gathers).
  const bool inputsScored =
      !l.inputPasses.empty() &&
      phases[static_cast<unsigned>(StepPhase::BlockInput)].activation.at(b) > 0;
  const bool wholeBackwards =
      !l.splitBackwards ||
      (!inputsScored && (l.gatheredPerLayer > 0 || l.backwardPasses.empty()));
  auto considerWhole = [&](auto &&...args) {
    if (wholeBackwards)
      consider(StepPhase::BlockBackward, args...);
  };
  considerWhole(keptBackward +
                    (otherLayers > 0 || l.backwardFollows ? l.regather : 0) +
                    l.gatheredPerLayer + backwardNext + l.sendBytes,
                l.accumulated, l.sentGradInflightBytes);
  if (l.bottomBeforeForward && otherLayers > 0)
    considerWhole(std::max(0.0, keptBackward - otherLayers * l.keptPerLayer -
                                    l.boundaryBytes) +
                      l.gatheredPerLayer + prefetch + l.sendBytes,
                  l.accumulated, l.sentGradInflightBytes + l.boundaryBytes);
  // With one microbatch, the backward calls between the top and the
  // bottom: the i layers above hold their gradients (shards under ZeRO-2/3),
  // the layers below their kept bytes.
  if (l.microbatches == 1)
    for (double i = 1; i < otherLayers; ++i)
      considerWhole(std::max(0.0, keptBackward - i * l.keptPerLayer) +
                        l.regather + l.gatheredPerLayer + backwardNext +
                        l.sendBytes,
                    i * l.layerGradBytes + reducing, l.sentGradInflightBytes,
                    /*phaseGrads=*/true, /*belowTop=*/true);
  // The same below the top of a rank's first backward of several
  // microbatches (nothing summed yet: GPipe's, with every other microbatch
  // in flight): the layers above hold the first gradients of their sums.
  // At the bottom a later forward's whole gather where one follows.
  if (l.microbatches > 1 && l.accumulated <= 0)
    for (double i = 1; i <= otherLayers; ++i) {
      const bool next = i < otherLayers || l.laterBlockCall;
      const double nextBytes = i == otherLayers && l.forwardAfterBottom
                                   ? prefetch
                                   : l.regather + backwardNext;
      considerWhole(
          std::max(0.0, keptBackward - i * l.keptPerLayer) +
              (next ? nextBytes : 0) + l.gatheredPerLayer + l.sendBytes,
          i * (l.layerSumBytes > 0 ? l.layerSumBytes : l.layerGradBytes),
          l.sentGradInflightBytes,
          /*phaseGrads=*/true, /*belowTop=*/true);
    }
  // The last microbatch's second backward call: the block above's sum is
  // being reduce-scattered into its shard.
  if (l.microbatches > 1 && l.sumShardBytes > 0 && otherLayers > 0) {
    const bool next = otherLayers > 1;
    const HeadOnlySums headOnly = headOnlySumsBelowTop(l);
    considerWhole(std::max(0.0, keptBackward - l.keptPerLayer) +
                      (next ? l.regather + backwardNext : 0) +
                      l.gatheredPerLayer + l.sendBytes,
                  l.accumulated - (l.rerunCalls ? l.sumReduceBytes : 0) +
                      l.sumShardBytes - headOnly.scattered,
                  l.sentGradInflightBytes - headOnly.phaseDead,
                  /*phaseGrads=*/true,
                  /*belowTop=*/true);
  }
  // A middle microbatch's (three or more; any but the last where a
  // forward follows it, `forwardAfterBottom`) bottom backward also
  // prefetches the next microbatch's first forward call; where another
  // microbatch's backward follows (GPipe) under ZeRO-3, below the top, that
  // backward's gather (its re-run's under full recomputation) and re-gathered
  // residuals instead, with the other microbatches' kept bytes; with one
  // layer per rank (the top call: its candidate counts what it keeps) the
  // next re-run's gather under full recomputation.
  const bool gpipeZero3 = l.backwardAfterBottom && l.gatheredPerLayer > 0;
  const double forwardNext =
      (l.nextKnown ? l.forwardNext
                   : l.microbatches >= 3 || l.forwardAfterBottom)
          ? prefetch
          : 0;
  const double bottomNext =
      gpipeZero3 && otherLayers > 0
          ? std::max(0.0, keptBackward - otherLayers * l.keptPerLayer -
                              rootBackward) +
                l.regather + (l.rerunCalls ? l.rerunGatherBytes : prefetch)
      : gpipeZero3 && l.rerunCalls ? l.rerunGatherBytes
                                   : forwardNext;
  considerWhole(l.gatheredPerLayer + rootBackward + bottomNext,
                l.microbatches > 1
                    ? l.accumulated
                    : otherGrads + (otherLayers > 0 ? reducing : 0),
                l.sentGradBytes, /*phaseGrads=*/true,
                /*belowTop=*/otherLayers > 0);
  // W is a gradient function: what it recomputes (weightFrameBytes) is
  // filed with its gradients; a received block output gradient (its send is
  // no gradient op) with the activations. Its own frame is the split
  // one-block step's at its W call where compiled (with cp and SP the
  // whole call's also holds the residual I gathered for itself); a next
  // W's re-gathers are those the one-block I holds for its W, less their
  // send buffers (in place of their dead sources).
  const StepPhase weightPhase =
      phases[static_cast<unsigned>(StepPhase::BlockWeight)].activation.at(b) > 0
          ? StepPhase::BlockWeight
          : StepPhase::BlockBackward;
  const PhaseMemory &inputPhase =
      phases[static_cast<unsigned>(StepPhase::BlockInput)];
  const double nextWeightGathers =
      inputPhase.nextCall.at(b) > 0
          ? (inputPhase.nextCall.at(b) - inputPhase.nextCallSent.at(b)) * scale
          : l.weightRegatherBytes;
  closedBackward = false;
  for (const WeightPass &w : l.weightPasses)
    consider(
        weightPhase,
        std::max(0.0, w.inflight - 1) * l.keptPerLayer +
            std::max(0.0, w.pending - 1) * l.recomputedBytes +
            w.tokenSlices * l.tokenBytes + w.heads * l.headKeptBytes +
            (w.sentActivations + w.receivedInputs) * l.boundaryBytes +
            w.prefetched * nextWeightGathers +
            (l.rerunCalls ? 0 : w.prefetchedWhole) * l.weightRegatherBytes +
            w.nextStageBackward *
                (l.rerunCalls ? l.rerunGatherBytes : prefetch) +
            passRootBytes(l, w),
        l.weightGradBytes + weightPassSums(l, w) +
            w.headGrads * l.headOnlyGradSumBytes,
        w.pending * l.weightInputBytes + l.weightFrameBytes +
            (w.sentGrads + w.heldGrads - w.receivedInputs) * l.boundaryBytes +
            w.tiedShares * l.tiedGradBytes,
        /*phaseGrads=*/false);
  // A whole backward of a rank that runs several stages (interleaved), as
  // its simulated program holds it there; the phase's received gradients
  // hold one tied share.
  const PhaseMemory &backward =
      phases[static_cast<unsigned>(StepPhase::BlockBackward)];
  for (const WeightPass &w : l.backwardPasses) {
    // The head's part of the phase's gradients, received there.
    const double received =
        w.receivedOutputGrad && l.head
            ? std::max(0.0,
                       backward.headGrad.at(b) * scale - l.headOnlyGradBytes)
            : 0;
    // The phase's received gradients hold one tied share; the head's rank
    // computes its own (a phase gradient) where it receives none.
    const double sharesInPhase = !l.head || w.receivedOutputGrad ? 1 : 0;
    // A next forward's gather is its whole block's, not a re-run's.
    const double next =
        w.forwardNext ? (backwardNext > 0 ? prefetch : 0) : backwardNext;
    consider(StepPhase::BlockBackward,
             received + std::max(0.0, w.inflight - 1) * l.keptPerLayer +
                 w.tokenSlices * l.tokenBytes + w.heads * l.headKeptBytes +
                 w.sentActivations * l.boundaryBytes +
                 (w.receivedShares - sharesInPhase) * l.tiedGradBytes +
                 (l.rerunCalls ? 0 : w.prefetched * l.weightRegatherBytes) +
                 l.gatheredPerLayer + (w.lastCall ? 0 : next) +
                 w.pending * l.recomputedBytes + passRootBytes(l, w),
             backwardPassSums(l, w),
             w.sentGrads * l.boundaryBytes + w.tiedShares * l.tiedGradBytes +
                 w.pending * l.weightInputBytes - received);
    // Full recomputation under ZeRO-3 (passesOnly): the re-run call just
    // before it, as before an I call (the I phase's restored residuals but
    // the re-gathers the one-block I holds for its W, the re-run's gathered
    // parameters and frame, this backward's gather prefetched), its output
    // gradient received, and the sum completed by the call before still
    // whole, being reduce-scattered.
    const PhaseMemory &input =
        phases[static_cast<unsigned>(StepPhase::BlockInput)];
    if (l.passesOnly && l.rerunCalls)
      consider(StepPhase::BlockInput,
               (w.receivedOutputGrad ? l.boundaryBytes : 0) -
                   input.nextCall.at(b) * scale +
                   w.receivedShares * l.tiedGradBytes +
                   std::max(0.0, w.inflight - 1) * l.keptPerLayer +
                   w.tokenSlices * l.tokenBytes + w.heads * l.headKeptBytes +
                   w.sentActivations * l.boundaryBytes +
                   w.pending * l.recomputedBytes + passRootBytes(l, w) +
                   l.rerunGatheredBytes + l.rerunFrameBytes +
                   l.gatherPackBytes + l.gatheredPerLayer,
               backwardPassSums(l, w) +
                   w.justCompleteLayers * l.weightGradBytes,
               w.sentGrads * l.boundaryBytes + w.tiedShares * l.tiedGradBytes +
                   w.pending * l.weightInputBytes,
               /*phaseGrads=*/false);
  }
  // A split input-gradient call (I), as the simulated program holds it: the
  // other pending layers' W inputs (a received block output gradient is an
  // activation) and recomputed residuals. On a rank without the head, I's
  // output gradient is received (an activation) at the unit's top when the
  // next stage runs on another rank, and the block above's input gradient
  // below it; no head gradient is received there (a stage after the first
  // is sent none). Complete sums reduce-scattered per stage are held as
  // their shards, as at a whole backward (backwardPassSums). Under ZeRO-3
  // an I call reads its layer's gathered parameters and the next block
  // call's gather is in flight (inputPassGathers).
  const PhaseMemory &input =
      phases[static_cast<unsigned>(StepPhase::BlockInput)];
  const bool inputRead = input.activation.at(b) > 0 || input.grad.at(b) > 0;
  const double inputOwnGrads =
      (input.grad.at(b) - input.headGrad.at(b)) * scale;
  const bool inputScored = inputRead;
  for (const InputPass &in :
       inputScored ? l.inputPasses : std::vector<InputPass>{}) {
    const WeightPass &w = in.held;
    // A top output gradient not received is held from the next stage's
    // I on this rank (WeightPass::heldGrads).
    const double received = !l.head && in.receivedOutput ? l.boundaryBytes : 0;
    const double fromAbove = in.belowTop ? l.boundaryBytes : 0;
    // Below the top on the head's rank the head's buffers that only the
    // top I reads are dead (SP: the whole-sequence loss gradient before its
    // slice); its parameter gradients (a tied share, the head-only ones)
    // are live.
    const double headBelow =
        l.head && in.belowTop ? l.tiedGradBytes + l.headOnlyGradSumBytes : 0;
    const bool phaseGrads = l.head && !in.belowTop;
    // The one-block I holds its own W's re-gathers (nextCall); here the
    // next call's: its own W's, another layer's W's, whose send buffers
    // replace their dead sources (the gathered bytes more), or none.
    const double ownNext = input.nextCall.at(b) * scale;
    const double nextGathers =
        in.ownWeightNext
            ? ownNext
            : (w.prefetched ? ownNext - input.nextCallSent.at(b) * scale : 0);
    const double held =
        nextGathers - ownNext + std::max(0.0, w.inflight - 1) * l.keptPerLayer +
        w.pending * l.recomputedBytes + w.tokenSlices * l.tokenBytes +
        w.heads * l.headKeptBytes +
        (w.sentActivations + w.receivedInputs) * l.boundaryBytes + received +
        (l.passesOnly  ? passRootBytes(l, w)
         : in.rootHeld ? l.heldRootBytes
                       : 0);
    // ZB-V under ZeRO-3 (passesOnly): the complete stage sums
    // reduce-scattered as at a W; under full recomputation those completed
    // since the last backward call are waited after I's re-run, whole
    // there (rerunSums) and shards at I.
    const double sums =
        (l.passesOnly && !l.rerunCalls ? weightPassSums(l, w)
                                       : backwardPassSums(l, w)) +
        w.headGrads * l.headOnlyGradSumBytes;
    const double rerunSums =
        (l.passesOnly ? weightPassSums(l, w) : backwardPassSums(l, w)) +
        w.headGrads * l.headOnlyGradSumBytes;
    const double heldGrads =
        w.pending * l.weightInputBytes +
        (w.sentGrads + w.heldGrads - w.receivedInputs) * l.boundaryBytes +
        w.tiedShares * l.tiedGradBytes;
    consider(StepPhase::BlockInput, held + inputPassGathers(l, in), sums,
             heldGrads + l.weightParamBytes +
                 (phaseGrads ? 0 : inputOwnGrads + fromAbove + headBelow),
             phaseGrads);
    // Full recomputation under ZeRO-3: the I call's re-run call just
    // before it holds the same but the re-run's gathered parameters and the
    // I call's gather, prefetched (packed shard and gathered buffer), and
    // none of the I call's own gradients yet, nor the next call's
    // re-gathers (started before I).
    if (l.rerunCalls && l.gatheredPerLayer > 0)
      consider(StepPhase::BlockInput,
               held - nextGathers + l.rerunGatheredBytes + l.rerunFrameBytes +
                   l.gatherPackBytes + l.gatheredPerLayer,
               rerunSums,
               heldGrads + (phaseGrads ? input.headGrad.at(b) * scale
                                       : fromAbove + headBelow),
               /*phaseGrads=*/false);
  }
  consider(StepPhase::Tail, 0, otherGrads);
  // The last AdamW: the gathers only (the one-block tail's own peak, with
  // its gradients, is earlier); the step's I/O stays.
  if (l.optimizerGatherBytes > 0) {
    FramePeak c;
    c.phase = StepPhase::Tail;
    c.paramGrads = l.optimizerGatherBytes;
    c.other =
        phases[static_cast<unsigned>(StepPhase::Tail)].other.at(b) * scale;
    if (c.total() > best.total())
      best = c;
  }
  return best;
}

namespace {
/// A transfer of a pipeline rank's program: at its op `op`, with `peer`, of
/// the value `tag` names (3·(stage·m + microbatch) for a forward output of
/// `stage`, + 1 for an input gradient of `stage`, + 2 for the last stage's
/// tied embedding share: + PendingSend::Kind), sent or received.
struct Transfer {
  size_t op;
  int64_t peer, tag;
  bool send;
};

/// Each rank's transfers in program order (see weightPassesOf).
std::vector<std::vector<Transfer>>
rankTransfers(const pipeline::PipelineSchedule &sched, bool tied) {
  using Kind = pipeline::PipelineOp::Kind;
  const int64_t ranks = sched.numRanks, lastStage = sched.numStages - 1;
  auto rankOf = [&](int64_t stage) { return sched.stageToRank[stage]; };
  const int64_t m = sched.numMicrobatches;
  using Message = PendingSend::Kind;
  const Message Activation = PendingSend::Activation,
                InputGrad = PendingSend::InputGrad,
                TiedShare = PendingSend::TiedShare;
  auto tagOf = [&](int64_t stage, int64_t mb, Message kind) {
    return 3 * (stage * m + mb) + kind;
  };
  const bool sendsShares = tied && rankOf(0) != rankOf(lastStage);
  std::vector<std::vector<Transfer>> transfers(ranks);
  for (int64_t r = 0; r < ranks; ++r)
    for (auto [i, op] : llvm::enumerate(sched.rankOrders[r])) {
      auto &list = transfers[r];
      if (op.kind == Kind::F) {
        if (op.stage > 0 && rankOf(op.stage - 1) != r)
          list.push_back({i, rankOf(op.stage - 1),
                          tagOf(op.stage - 1, op.microbatch, Activation),
                          false});
        if (op.stage < lastStage && rankOf(op.stage + 1) != r)
          list.push_back({i, rankOf(op.stage + 1),
                          tagOf(op.stage, op.microbatch, Activation), true});
      } else if (op.kind == Kind::B || op.kind == Kind::I) {
        if (op.stage < lastStage && rankOf(op.stage + 1) != r)
          list.push_back({i, rankOf(op.stage + 1),
                          tagOf(op.stage + 1, op.microbatch, InputGrad),
                          false});
        if (op.stage == 0 && sendsShares)
          list.push_back({i, rankOf(lastStage),
                          tagOf(lastStage, op.microbatch, TiedShare), false});
        if (op.stage == lastStage && sendsShares)
          list.push_back(
              {i, rankOf(0), tagOf(lastStage, op.microbatch, TiedShare), true});
        if (op.stage > 0 && rankOf(op.stage - 1) != r)
          list.push_back({i, rankOf(op.stage - 1),
                          tagOf(op.stage, op.microbatch, InputGrad), true});
      }
    }
  return transfers;
}
} // namespace

std::vector<std::vector<PendingSend>>
pendingSends(const pipeline::PipelineSchedule &sched, bool tied) {
  const int64_t ranks = sched.numRanks;
  const std::vector<std::vector<Transfer>> transfers =
      rankTransfers(sched, tied);
  // Position of (peer, tag, send) in a rank's transfer list.
  std::vector<std::map<std::tuple<int64_t, int64_t, bool>, int64_t>> position(
      ranks);
  for (int64_t r = 0; r < ranks; ++r)
    for (auto [i, t] : llvm::enumerate(transfers[r]))
      position[r].emplace(std::make_tuple(t.peer, t.tag, t.send), int64_t(i));
  auto indexOf = [&](int64_t rank, int64_t peer, int64_t tag, bool send) {
    auto it = position[rank].find(std::make_tuple(peer, tag, send));
    return it == position[rank].end() ? int64_t(-1) : it->second;
  };
  // A peer receives a message with everything this rank sent it before
  // (dist-pipeline-split): the send at `i` of `list` (rank `r`'s) arrives at
  // the peer's first receive of it or of a later send to that peer.
  auto receivedAt = [&](const std::vector<Transfer> &list, size_t i,
                        int64_t r) {
    const Transfer &t = list[i];
    int64_t first = -1;
    for (const Transfer &later : llvm::ArrayRef(list).drop_front(i))
      if (later.send && later.peer == t.peer) {
        int64_t at = indexOf(t.peer, r, later.tag, false);
        if (at >= 0 && (first < 0 || at < first))
          first = at;
      }
    return first;
  };
  std::vector<std::vector<PendingSend>> sends(ranks);
  for (int64_t r = 0; r < ranks; ++r) {
    const auto &list = transfers[r];
    for (auto [i, t] : llvm::enumerate(list)) {
      if (!t.send)
        continue;
      PendingSend send{t.op, sched.rankOrders[r].size(),
                       static_cast<PendingSend::Kind>(t.tag % 3)};
      const int64_t received = receivedAt(list, i, r);
      for (const Transfer &later : llvm::ArrayRef(list).drop_front(i + 1))
        if (!later.send && later.peer == t.peer && received >= 0 &&
            indexOf(t.peer, r, later.tag, true) > received) {
          send.waited = later.op;
          break;
        }
      sends[r].push_back(send);
    }
  }
  return sends;
}

/// Counts into `w` the sends of `sends` made before op `i` and waited
/// after it, by kind.
static void countUnwaitedSends(WeightPass &w,
                               const std::vector<PendingSend> &sends,
                               size_t i) {
  for (const PendingSend &send : sends)
    if (send.op < i && send.waited > i)
      (send.kind == PendingSend::Activation  ? w.sentActivations
       : send.kind == PendingSend::InputGrad ? w.sentGrads
                                             : w.tiedShares) += 1;
}

/// Whether the rank's next block call after op `i` of `order` reads
/// gathered parameters (an F, I or whole B; a W reads none, and the first
/// stage's W, whose backward runs whole at its I, is no call): under ZeRO-3
/// only then does op `i` prefetch a gather, one call ahead.
static bool nextCallGathers(const std::vector<pipeline::PipelineOp> &order,
                            size_t i) {
  using Kind = pipeline::PipelineOp::Kind;
  for (size_t j = i + 1; j < order.size(); ++j)
    if (order[j].kind != Kind::W || order[j].stage != 0)
      return order[j].kind != Kind::W;
  return false;
}

/// Whether that next block call (see nextCallGathers) is a forward.
static bool nextCallForward(const std::vector<pipeline::PipelineOp> &order,
                            size_t i) {
  using Kind = pipeline::PipelineOp::Kind;
  for (size_t j = i + 1; j < order.size(); ++j)
    if (order[j].kind != Kind::W || order[j].stage != 0)
      return order[j].kind == Kind::F;
  return false;
}

/// Sets whether a first-stage forward and a last-stage (head) forward or
/// backward follow op `i` of `order` (WeightPass::firstForwardsLeft).
static void setRootUsesLeft(WeightPass &w,
                            const std::vector<pipeline::PipelineOp> &order,
                            size_t i, int64_t lastStage) {
  using Kind = pipeline::PipelineOp::Kind;
  for (size_t j = i + 1; j < order.size(); ++j) {
    const pipeline::PipelineOp &op = order[j];
    w.firstForwardsLeft |= op.stage == 0 && op.kind == Kind::F;
    w.headOpsLeft |= op.stage == lastStage && op.kind != Kind::W;
  }
}

/// Whether the block call after W unit `i` of `order` re-gathers residuals
/// (a W, a whole B, or the unit's own next layer's W).
double nextReadsGathers(const std::vector<pipeline::PipelineOp> &order,
                        size_t i, int64_t layersPerChunk) {
  using Kind = pipeline::PipelineOp::Kind;
  if (layersPerChunk > 1)
    return 1;
  if (i + 1 >= order.size())
    return 0;
  Kind next = order[i + 1].kind;
  return next == Kind::W || next == Kind::B ? 1 : 0;
}

/// Whether the block call after whole backward `i` of `order` has its
/// re-gathered residuals started during it: the unit's own next layer's,
/// or the next unit's when that is a backward too. After a first-stage
/// backward they travel in one pack with its input gradient's gather for
/// the embedding's backward (dist-overlap-collectives combines them), which
/// starts only after the call.
double backwardPrefetches(const std::vector<pipeline::PipelineOp> &order,
                          size_t i, int64_t layersPerChunk) {
  using Kind = pipeline::PipelineOp::Kind;
  if (layersPerChunk > 1)
    return 1;
  return order[i].stage != 0 && i + 1 < order.size() &&
                 order[i + 1].kind == Kind::B
             ? 1
             : 0;
}

namespace {
/// What a rank of a zero-bubble schedule holds as its program runs (see
/// weightPassesOf): `enter` counts what an op makes before it runs,
/// `leave` what it frees once it has.
struct SplitRankState {
  using Op = pipeline::PipelineOp;
  using Kind = Op::Kind;
  SplitRankState(const pipeline::PipelineSchedule &sched, int64_t rank,
                 bool tied)
      : sched(sched), rank(rank), lastStage(sched.numStages - 1),
        both(sched.stageToRank[0] == rank &&
             sched.stageToRank[lastStage] == rank),
        tied(tied) {}

  /// Whether `op`'s block output gradient comes from another rank.
  bool receives(const Op &op) const {
    return op.stage != 0 && op.stage != lastStage &&
           sched.stageToRank[op.stage + 1] != rank;
  }
  void enter(const Op &op) {
    inflight += op.kind == Kind::F ? 1 : 0;
    pending += op.kind == Kind::I && op.stage != 0 ? 1 : 0;
    received += op.kind == Kind::I && receives(op) ? 1 : 0;
    if (op.stage == 0)
      firstInflight += op.kind == Kind::F ? 1 : 0;
    if (op.stage == lastStage) {
      heads += op.kind == Kind::F ? 1 : 0;
      bool backward = op.kind == Kind::B || op.kind == Kind::I;
      heads -= backward ? 1 : 0;
      headBackwards += backward ? 1 : 0;
    }
    // The head-only parameters' gradients of microbatch j > 0 are added
    // to the sum at the start of the last stage's W of j.
    if (op.kind == Kind::W && op.stage == lastStage && op.microbatch > 0)
      ++headAdds;
  }
  void leave(const Op &op, size_t i) {
    if (op.kind == Kind::W && op.stage != 0) {
      --pending;
      received -= receives(op) ? 1 : 0;
    }
    if (op.kind == Kind::B || op.kind == Kind::I)
      for (auto &[stage, at] : complete)
        at.second = true;
    if (op.kind == Kind::B || op.kind == Kind::W) {
      --inflight;
      summed.insert(op.stage);
      if (++backwards[op.stage] == sched.numMicrobatches)
        complete[op.stage] = {i, false};
    }
    if (op.kind == Kind::B || op.kind == Kind::I) {
      held.erase({op.stage, op.microbatch});
      if (op.stage > 0 && sched.stageToRank[op.stage - 1] == rank)
        held.insert({op.stage - 1, op.microbatch});
    }
    // The first stage's backward runs whole, at its I.
    if (op.stage == 0 && (op.kind == Kind::B || op.kind == Kind::I)) {
      --firstInflight;
      ++firstBackwards;
    }
  }
  /// What the rank holds now, before its op `i` (`sends`: its sends).
  WeightPass holding(const std::vector<PendingSend> &sends, size_t i,
                     int64_t layersPerChunk) const {
    WeightPass w;
    w.inflight = double(inflight * layersPerChunk);
    w.pending = double(pending * layersPerChunk);
    countUnwaitedSends(w, sends, i);
    w.tokenSlices = double(firstInflight);
    w.heads = double(heads);
    // On a rank with both ends the first backward starts the sum that the
    // later shares are added to; elsewhere each share is a message.
    if (both && tied)
      w.tiedShares =
          double(std::max<int64_t>(0, headBackwards - firstBackwards));
    w.summedLayers = double(int64_t(summed.size()) * layersPerChunk);
    w.embeddingSums = firstBackwards > 0;
    for (const auto &[stage, at] : complete) {
      w.completeLayers += double(layersPerChunk);
      w.justCompleteLayers += at.first + 1 == i ? layersPerChunk : 0;
      w.completeBeforeRerunLayers += at.second ? 0 : layersPerChunk;
    }
    w.headGrads = double(std::max<int64_t>(0, headBackwards - headAdds));
    w.heldGrads = double(held.size());
    w.receivedInputs = double(received);
    setRootUsesLeft(w, sched.rankOrders[rank], i, lastStage);
    return w;
  }

  const pipeline::PipelineSchedule &sched;
  int64_t rank, lastStage;
  bool both, tied;
  int64_t inflight = 0, pending = 0, firstInflight = 0, heads = 0;
  /// Pending W passes whose block output gradient another rank sent.
  int64_t received = 0;
  int64_t headBackwards = 0, firstBackwards = 0, headAdds = 0;
  std::set<int64_t> summed;
  /// Per stage, its backwards run (B, or W when split) and, once complete,
  /// the op of its last and whether a backward call (I or B) ran since.
  std::map<int64_t, int64_t> backwards;
  std::map<int64_t, std::pair<size_t, bool>> complete;
  /// Input gradients of a stage whose previous stage runs on this rank
  /// too, held from its backward to that stage's: (stage - 1, microbatch).
  std::set<std::pair<int64_t, int64_t>> held;
};
} // namespace

std::vector<std::vector<WeightPass>>
weightPassesOf(const pipeline::PipelineSchedule &sched, int64_t layersPerChunk,
               bool tied) {
  using Kind = pipeline::PipelineOp::Kind;
  std::vector<std::vector<PendingSend>> rankSends = pendingSends(sched, tied);
  std::vector<std::vector<WeightPass>> passes(sched.numRanks);
  for (int64_t r = 0; r < sched.numRanks; ++r) {
    SplitRankState state(sched, r, tied);
    const auto &order = sched.rankOrders[r];
    for (auto [i, op] : llvm::enumerate(order)) {
      state.enter(op);
      if (op.kind == Kind::W && op.stage != 0) {
        WeightPass w = state.holding(rankSends[r], i, layersPerChunk);
        w.prefetched = nextReadsGathers(order, i, layersPerChunk);
        // Another stage's backward call next: its gather starts during W.
        w.nextStageBackward = i + 1 < order.size() &&
                                      order[i + 1].stage != op.stage &&
                                      (order[i + 1].kind == Kind::I ||
                                       order[i + 1].kind == Kind::B)
                                  ? 1
                                  : 0;
        if (!w.prefetched && i + 1 < order.size() &&
            order[i + 1].kind == Kind::I && order[i + 1].stage == 0)
          w.prefetchedWhole = 1;
        if (!llvm::is_contained(passes[r], w))
          passes[r].push_back(w);
      }
      state.leave(op, i);
    }
  }
  return passes;
}

/// Calls `visit(rank, i, op, state, sends)` for each op `i` of each rank's
/// program of `sched`, with the rank's SplitRankState (`visit` enters and
/// leaves the op) and its sends (pendingSends).
template <typename Visit>
static void forEachSplitRankOp(const pipeline::PipelineSchedule &sched,
                               bool tied, Visit &&visit) {
  const std::vector<std::vector<PendingSend>> sends = pendingSends(sched, tied);
  for (int64_t r = 0; r < sched.numRanks; ++r) {
    SplitRankState state(sched, r, tied);
    for (auto [i, op] : llvm::enumerate(sched.rankOrders[r]))
      visit(r, i, op, state, sends[r]);
  }
}

std::vector<std::vector<WeightPass>>
forwardPassesOf(const pipeline::PipelineSchedule &sched, int64_t layersPerChunk,
                bool tied) {
  std::vector<std::vector<WeightPass>> passes(sched.numRanks);
  forEachSplitRankOp(sched, tied,
                     [&](int64_t r, size_t i, const pipeline::PipelineOp &op,
                         SplitRankState &state,
                         const std::vector<PendingSend> &sends) {
                       if (op.kind == pipeline::PipelineOp::Kind::F) {
                         WeightPass w = state.holding(sends, i, layersPerChunk);
                         if (!llvm::is_contained(passes[r], w))
                           passes[r].push_back(w);
                       }
                       state.enter(op);
                       state.leave(op, i);
                     });
  return passes;
}

std::vector<std::vector<InputPass>>
inputPassesOf(const pipeline::PipelineSchedule &sched, int64_t layersPerChunk,
              bool tied) {
  using Kind = pipeline::PipelineOp::Kind;
  const int64_t lastStage = sched.numStages - 1;
  std::vector<std::vector<InputPass>> passes(sched.numRanks);
  forEachSplitRankOp(
      sched, tied,
      [&](int64_t r, size_t i, const pipeline::PipelineOp &op,
          SplitRankState &state, const std::vector<PendingSend> &sends) {
        const auto &order = sched.rankOrders[r];
        if (op.kind == Kind::I && op.stage != 0) {
          // What the rank holds before this unit; the unit's own head
          // backward has run (its head values freed, its gradients the
          // phase's).
          WeightPass w = state.holding(sends, i, layersPerChunk);
          w.heads -= op.stage == lastStage ? 1 : 0;
          // A block call after the unit's bottom I re-gathers residuals
          // unless it is a forward; an I or whole B follows a full
          // recomputation's re-run instead (prefetchedWhole).
          const bool next = i + 1 < order.size();
          const Kind nextKind = next ? order[i + 1].kind : Kind::F;
          for (int64_t k = 0; k < layersPerChunk; ++k) {
            InputPass in;
            in.held = w;
            in.held.pending += double(k);
            in.held.receivedInputs += k > 0 && state.receives(op) ? 1 : 0;
            const bool bottom = k + 1 == layersPerChunk;
            if (bottom && next && nextKind == Kind::W)
              in.held.prefetched = 1;
            else if (!bottom || (next && nextKind != Kind::F))
              in.held.prefetchedWhole = 1;
            in.belowTop = k > 0;
            in.receivedOutput = k == 0 && state.receives(op);
            // W reads no gathered parameters: the gather of the call after
            // it starts during it.
            in.laterBlockCall = !bottom || (next && nextKind != Kind::W);
            in.forwardNext = bottom && next && nextKind == Kind::F;
            in.rootHeld = op.stage == lastStage &&
                          op.microbatch + 1 < sched.numMicrobatches;
            in.prefetchesGather = !bottom || nextCallGathers(order, i);
            in.ownWeightNext = layersPerChunk == 1 && next &&
                               nextKind == Kind::W &&
                               order[i + 1].stage == op.stage &&
                               order[i + 1].microbatch == op.microbatch;
            if (!llvm::is_contained(passes[r], in))
              passes[r].push_back(in);
          }
        }
        state.enter(op);
        state.leave(op, i);
      });
  return passes;
}

std::vector<std::vector<WeightPass>>
backwardPassesOf(const pipeline::PipelineSchedule &sched,
                 int64_t layersPerChunk, bool tied) {
  using Kind = pipeline::PipelineOp::Kind;
  const int64_t ranks = sched.numRanks, lastStage = sched.numStages - 1;
  const std::vector<std::vector<Transfer>> transfers =
      rankTransfers(sched, tied);
  const std::vector<std::vector<PendingSend>> rankSends =
      pendingSends(sched, tied);
  const bool sendsShares =
      tied && sched.stageToRank[0] != sched.stageToRank[lastStage];
  // What each rank sends each peer, in program order: the peer receives in
  // that order.
  std::vector<std::map<int64_t, std::vector<int64_t>>> sent(ranks);
  for (int64_t r = 0; r < ranks; ++r)
    for (const Transfer &t : transfers[r])
      if (t.send)
        sent[r][t.peer].push_back(t.tag);
  std::vector<std::vector<WeightPass>> passes(ranks);
  for (int64_t r = 0; r < ranks; ++r) {
    const std::vector<PendingSend> &sends = rankSends[r];
    std::map<int64_t, size_t> received;
    int64_t inflight = 0, firstInflight = 0, heads = 0, shares = 0;
    int64_t firstBackwards = 0, complete = 0, pending = 0, headBackwards = 0;
    const bool both =
        sched.stageToRank[0] == r && sched.stageToRank[lastStage] == r;
    std::set<int64_t> summed;
    std::map<int64_t, int64_t> backwards;
    bool completedLast = false;
    size_t next = 0;
    for (auto [i, op] : llvm::enumerate(sched.rankOrders[r])) {
      // A unit receives what it reads from a peer together with everything
      // that peer sent before (dist-pipeline-split), tied shares included.
      for (; next < transfers[r].size() && transfers[r][next].op == i; ++next) {
        const Transfer &t = transfers[r][next];
        if (t.send)
          continue;
        const std::vector<int64_t> &from = sent[t.peer][r];
        auto it = llvm::find(from, t.tag);
        for (size_t &k = received[t.peer];
             it != from.end() && k <= size_t(it - from.begin()); ++k)
          shares += from[k] % 3 == PendingSend::TiedShare ? 1 : 0;
      }
      inflight += op.kind == Kind::F ? 1 : 0;
      firstInflight += op.kind == Kind::F && op.stage == 0 ? 1 : 0;
      heads += op.kind == Kind::F && op.stage == lastStage ? 1 : 0;
      // A split backward (ZB-V): its W ends the layer's flight and makes
      // its sum; the first stage's runs whole at its I.
      const bool split = op.kind == Kind::I || op.kind == Kind::W;
      if (split && op.stage != 0) {
        pending += op.kind == Kind::I ? 1 : -1;
        if (op.kind == Kind::I && op.stage == lastStage) {
          --heads;
          ++headBackwards;
        }
      }
      if (op.kind == Kind::W) {
        --inflight;
        summed.insert(op.stage);
        completedLast = ++backwards[op.stage] == sched.numMicrobatches;
        complete += completedLast ? 1 : 0;
        continue;
      }
      if (op.kind != Kind::B && !(op.kind == Kind::I && op.stage == 0)) {
        completedLast = false;
        continue;
      }
      WeightPass w;
      w.inflight = double(inflight * layersPerChunk);
      w.pending = double(pending * layersPerChunk);
      // On a rank with both ends (ZB-V's first) its input gradient comes
      // from the next stage's rank, and the head shares made here and not
      // yet added to the sum are pending (this backward adds its
      // microbatch's); none is received.
      // So on the head's rank (interleaved's last) a backward of an earlier
      // stage whose next stage runs elsewhere.
      if (op.kind == Kind::B && op.stage != lastStage &&
          sched.stageToRank[lastStage] == r &&
          sched.stageToRank[op.stage + 1] != r)
        w.receivedOutputGrad = true;
      if (op.kind == Kind::I && both) {
        w.receivedOutputGrad = true;
        if (tied)
          w.tiedShares =
              double(std::max<int64_t>(0, headBackwards - firstBackwards));
      }
      countUnwaitedSends(w, sends, i);
      w.receivedShares = double(shares);
      w.tokenSlices = double(firstInflight);
      // A last-stage backward's own head values are its phase's.
      w.heads = double(heads - (op.kind == Kind::B && op.stage == lastStage));
      w.summedLayers = double(int64_t(summed.size()) * layersPerChunk);
      w.embeddingSums = firstBackwards > 0;
      w.completeLayers = double(complete * layersPerChunk);
      w.justCompleteLayers = completedLast ? double(layersPerChunk) : 0;
      w.prefetched = backwardPrefetches(sched.rankOrders[r], i, layersPerChunk);
      w.lastCall =
          layersPerChunk == 1 && !nextCallGathers(sched.rankOrders[r], i);
      w.forwardNext =
          layersPerChunk == 1 && nextCallForward(sched.rankOrders[r], i);
      setRootUsesLeft(w, sched.rankOrders[r], i, lastStage);
      if (!llvm::is_contained(passes[r], w))
        passes[r].push_back(w);
      completedLast = false;
      if (op.kind == Kind::B) {
        --inflight;
        summed.insert(op.stage);
        completedLast = ++backwards[op.stage] == sched.numMicrobatches;
        complete += completedLast ? 1 : 0;
        heads -= op.stage == lastStage ? 1 : 0;
      }
      if (op.stage == 0) {
        --firstInflight;
        ++firstBackwards;
        shares -= sendsShares ? 1 : 0;
      }
    }
  }
  return passes;
}

double modelStateBytes(const Cluster &c, const ModelInfo &m,
                       const Candidate &plan, const ParameterShards &s) {
  const double w = m.elementBytes, g = gradElementBytes(c, w);
  const double opt = optimizerElementBytes(c, w);
  auto perParam = [&](double n) {
    if (plan.zero == 1)
      return w + g + opt / n;
    if (plan.zero == 2)
      return w + (g + opt) / n;
    if (plan.zero == 3)
      return (w + g + opt) / n;
    return w + g + opt;
  };
  return s.denseRank * perParam(s.dpGroup) +
         s.expertRank * perParam(double(s.edpGroup));
}

double optimizerElementBytes(const Cluster &c, double elementBytes) {
  double master = c.masterWeightBytes >= 0 ? c.masterWeightBytes
                                           : (elementBytes < 4 ? 4 : 0);
  return c.optimizerStateBytes + master;
}

ModelStates modelStateParts(const Cluster &c, const ModelInfo &m,
                            const Candidate &plan, const ParameterShards &s) {
  const double w = m.elementBytes, g = gradElementBytes(c, w);
  const double opt = optimizerElementBytes(c, w);
  // Elements of each kind per rank: ZeRO-1 shards the optimizer states,
  // ZeRO-2 also the gradients, ZeRO-3 also the parameters, the dense ones
  // over dp×cp and the expert ones over their expert-data-parallel group.
  auto elements = [&](int64_t fromStage) {
    double dense = s.denseRank, expert = s.expertRank;
    if (plan.zero >= fromStage) {
      dense /= double(s.dpGroup);
      expert /= double(s.edpGroup);
    }
    return dense + expert;
  };
  ModelStates states;
  states.params = w * elements(3);
  states.grads = g * elements(2);
  states.optimizer = opt * elements(1);
  return states;
}

double zero3GatheredBytes(const Cluster &c, const ModelInfo &m,
                          const LocalProfile &prof, const Candidate &plan,
                          const ParameterShards &s) {
  if (plan.zero != 3 || s.dpGroup <= 1)
    return 0;
  const double w = m.elementBytes, g = gradElementBytes(c, w);
  double gathered = prof.layerParams;
  if (plan.ep > 1)
    gathered -=
        prof.expertParams *
        (s.edpGroup > 1 ? 1.0 - 1.0 / plan.getExpertParallelOutsideTp() : 1.0);
  return 2 * (gathered * (w + g) + prof.otherParams * w);
}

double fixedBytes(const Cluster &c, const Candidate &plan,
                  const ParameterShards &s) {
  int64_t groups = (plan.tp > 1) + (s.dpGroup > 1) + (plan.cp > 1) +
                   2 * (plan.pp > 1) + (plan.ep > 1) +
                   (plan.ep > 1 && s.edpGroup > 1);
  return c.reservedBytes + groups * c.commBufferBytesPerGroup;
}

//===----------------------------------------------------------------------===//
// Process groups across nodes
//===----------------------------------------------------------------------===//

bool groupCrossesNodes(int64_t size, int64_t stride, int64_t world,
                       int64_t perNode) {
  if (size < 2 || perNode < 1 || world <= perNode)
    return false;
  int64_t block = stride * size;
  return block > perNode || perNode % block != 0;
}

std::vector<std::string> crossNodeGroups(const Cluster &c,
                                         const Candidate &plan) {
  std::vector<std::string> groups;
  if (c.singleNode)
    return groups;
  const int64_t world = plan.pp * plan.dp * plan.cp * plan.tp;
  const int64_t gpn = c.gpusPerNode;
  auto check = [&](llvm::StringRef name, int64_t size, int64_t stride) {
    if (!groupCrossesNodes(size, stride, world, gpn))
      return;
    std::string members =
        stride == 1 ? llvm::formatv("{0} consecutive ranks", size).str()
                    : llvm::formatv("{0} ranks {1} apart", size, stride).str();
    groups.push_back(llvm::formatv("{0} group of {1} spans nodes of {2} GPUs",
                                   name, members, gpn)
                         .str());
  };
  check(plan.sp ? "tp+sp" : "tp", plan.tp, 1);
  check("cp", plan.cp, plan.tp);
  if (plan.ep > 1) {
    if (plan.expertLayout() == ExpertLayout::OverTp)
      check("ep", plan.ep, 1);
    else
      check("ep", plan.ep, plan.tp);
  }
  return groups;
}

} // namespace autoshard::planner
