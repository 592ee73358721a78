//===- Planner.h - Cost model and plan search -------------------*- C++ -*-===//
//
// The cost model and search of `dist-auto-plan` (DESIGN.md §7), MLIR-free:
// the pass compiles one Transformer block per layer-local configuration
// (tp, sp) at two microbatch sizes, reads per-op FLOPs/bytes, collectives
// and the static memory plan off the per-rank program into a
// `LocalProfile`, and this library composes pp/dp/cp/ep/ZeRO/schedule/
// recomputation analytically, then simulates the pipeline schedule
// (lib/Pipeline) for the best candidates. docs/planner.md states what is
// read from compiled IR and what is analytic.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_PLANNER_PLANNER_H
#define AUTOSHARD_PLANNER_PLANNER_H

#include "autoshard/Planner/Cluster.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace autoshard::planner {

//===----------------------------------------------------------------------===//
// Communication: α-β model (algorithms.md §6.1)
//===----------------------------------------------------------------------===//

/// Time in seconds of one collective of `bytes` (nccl-tests S convention,
/// algorithms.md §6.2: the full buffer for all-reduce, the gathered /
/// pre-scatter buffer for all-gather / reduce-scatter, the send buffer for
/// all-to-all, the message for p2p) over `n` ranks that are laid out
/// `perNode` to a node (n ranks in ceil(n/perNode) nodes). Ring formulas of
/// §6.1 per link with the link's efficiency; groups spanning nodes are
/// hierarchical: RS inside the node, the collective across nodes on 1/n_l of
/// the data, AG inside the node (§6.1, "Hierarchical").
double collectiveTime(const Cluster &cluster, CollectiveKind kind, double bytes,
                      int64_t n, int64_t perNode);

/// The problem shape of one GEMM: `batch` independent products of
/// [m, k] x [k, n] (a weight shared by every batch entry is folded into m,
/// as the GEMM library does). Elements; m = 0 when unknown.
struct GemmShape {
  double batch = 1, m = 0, n = 0, k = 0;
};

/// Fraction of `Cluster::gemmEfficiency` that a GEMM of `shape` reaches:
/// wave and tile quantisation × k / (k + gemmK0). Quantisation: the output
/// is cut into ceil(m/tm)·ceil(n/tn) tiles per batch entry, which run in
/// waves of `sms` tiles; the useful fraction is batch·m·n / (waves · sms ·
/// tm · tn), for the best of the cluster's tiles (a GEMM library picks
/// the tile per shape). 1 when the shape is unknown or the cluster sets
/// neither `sms` nor `gemmK0`.
double gemmShapeEfficiency(const Cluster &cluster, const GemmShape &shape);

/// Roofline time of one kernel, seconds: (max(flops / (peak · eff),
/// bytes / (HBM · memEff)) + the cluster's kernel overhead (+ its GEMM
/// overhead for GEMMs)) × (1 + the cluster's syncSlowdown). For GEMMs with a
/// known `shape`, eff is gemmEfficiency × gemmShapeEfficiency(shape). memEff is
/// the cluster's memoryEfficiency, or for a Memory-kind op named `opName` (an
/// MLIR op name, e.g. "tfm.rope") memoryEfficiencyOf(opName): its kernel's own
/// efficiency when the cluster lists one (`efficiency.memory_ops`).
enum class OpKind { Gemm, Attention, Memory };

/// Tiles a blocked attention kernel (FlashAttention-2, Dao 2023) visits in
/// one seqQ x seqK score matrix: ceil(seqQ / attentionQueryBlock) query
/// blocks, each over ceil(cols / attentionKeyBlock) key blocks, where cols
/// is seqK or, when causal, the keys up to the block's last row (the blocks
/// above the diagonal are skipped; past 2^16 query blocks, the triangle's
/// area and diagonal). Costed per tile by Cluster::attentionTileTime.
double attentionTiles(const Cluster &cluster, double seqQ, double seqK,
                      bool causal);

double kernelTime(const Cluster &cluster, OpKind kind, double flops,
                  double bytes, const GemmShape *shape = nullptr,
                  llvm::StringRef opName = {});

//===----------------------------------------------------------------------===//
// Communication of the analytic dimensions (dp/ZeRO, cp)
//===----------------------------------------------------------------------===//

/// Fraction of a tensor-parallel collective hidden behind its GEMM:
/// `overlap.tp` × (tp-1)/tp. Transformer Engine's TP overlap splits the
/// GEMM into tp chunks and exchanges one chunk while computing another
/// (ring exchange), so the first (or last) chunk's transfer is exposed.
double tpOverlapFraction(const Cluster &cluster, int64_t tp);

/// Exposed time of one (possibly bucketed) gradient / parameter collective
/// overlapped with `hideable` seconds of compute: the collective of
/// `bytes` is split into ceil(params / bucket) buckets (each paying its own
/// α), with overlap `ov` of the cluster; the bucket that becomes ready last
/// (or is needed first) cannot hide. Without overlap: one collective over
/// the whole buffer, all exposed. `buckets` > 0 gives the bucket count
/// instead (the compiled program's, Candidate::dpBucketPerLayerGroup), the
/// bytes split evenly among them.
struct Exposure {
  double total = 0, exposed = 0;
  int64_t buckets = 1;
};
Exposure bucketedCollective(const Cluster &cluster, CollectiveKind kind,
                            double params, double elementBytes, int64_t n,
                            int64_t perNode, double hideable,
                            int64_t buckets = 0);

/// One kind of collective of the data-parallel synchronisation over one
/// group of ranks, as the compiled program bucket it (ParameterShards::
/// denseCollectives in CostTerms.h): the mesh axes of its group, the ranks
/// of the group and of them in one node, the rank's parameter elements in
/// its buckets, its buckets.
struct GradientCollective {
  CollectiveKind kind = CollectiveKind::AllReduce;
  /// The mesh axes the group spans (of those of more than one rank).
  bool dp = false, cp = false, tp = false;
  int64_t group = 1, perNode = 1;
  double params = 0;
  int64_t buckets = 0;
};

/// Bytes per gradient element of the data-parallel reduction and the
/// gradient buffer: the cluster's `gradBytes` (Megatron's fp32 main_grad),
/// never fewer than the parameters' `elementBytes`.
double gradElementBytes(const Cluster &cluster, double elementBytes);

/// The data-parallel synchronisation of one step (algorithms.md §5.1) over
/// a group of `n` ranks (`perNode` per node) holding `params` parameters:
/// ZeRO-0 all-reduce; ZeRO-1 reduce-scatter after the last backward +
/// parameter all-gather before the next forward; ZeRO-2 the same: the
/// compiled program accumulates the microbatches' gradients unsharded and
/// reduce-scatters the sums in the last backward, unless the software
/// reduce-scatters after every microbatch's backward (Cluster::
/// zeroReducesEveryMicrobatch: DeepSpeed ZeRO-2 frees the non-owned
/// gradient buckets, so accumulation cannot defer it) + all-gather.
/// `elementBytes` is the parameters' element size; gradients are reduced
/// in gradElementBytes.
/// `backward` / `forward`: one microbatch's backward / forward time on the
/// rank (what the bucketed collectives hide behind). `buckets`: as
/// bucketedCollective's (0: the cluster's rule). ZeRO-3 is per layer:
/// zero3Exposure.
Exposure dpSyncExposure(const Cluster &cluster, int64_t zero, double params,
                        double elementBytes, int64_t n, int64_t perNode,
                        double microbatches, double forward, double backward,
                        int64_t buckets = 0);

/// ZeRO-3 / FSDP full sharding, one unit per Transformer block (algorithms.md
/// §5.1, §5.3): per microbatch every block's parameters are all-gathered
/// before its forward, again before its backward (resharded after forward)
/// and its gradients reduce-scattered after its backward; the next block's
/// gather is prefetched during the current block's compute (overlap `ov`).
/// The first gather of a forward and the last reduce-scatter of a backward
/// cannot hide. The root unit (embedding, head: `otherParams`) is gathered
/// once per microbatch and reduce-scattered once, exposed. Returns the
/// exposed seconds per microbatch added to one chunk's forward and
/// backward of `layers` blocks. Without `reduce` (a microbatch before the
/// last, whose gradients only accumulate: Cluster::
/// zeroReducesEveryMicrobatch false) the backward gathers only.
struct Zero3Exposure {
  double forward = 0, backward = 0, rootForward = 0, rootBackward = 0;
};
Zero3Exposure zero3Exposure(const Cluster &cluster, double layerParams,
                            double otherParams, double elementBytes,
                            int64_t layers, int64_t n, int64_t perNode,
                            double layerForward, double layerBackward,
                            bool reduce = true);

/// Ring attention (algorithms.md §2.2, §2.7) per layer per microbatch:
/// forward cp-1 ring steps each sending K and V (`kvBytes`, bf16) while the
/// rank computes one of its cp attention blocks; backward cp-1 steps of K,V
/// plus cp steps of dK,dV in fp32 (2 x kvBytes), the last of which arrives
/// after the last block. Overlap is per step only: a step's transfer hides
/// behind that step's block, never behind other work, and the wait for a
/// peer that time-shares the cores (Cluster::syncLatency) never hides.
/// Each extra step also
/// launches a block kernel and a merge (forward: the partial-softmax merge
/// of §2.1 reads and writes the fp32 output, `mergeBytes` per step;
/// backward: the fp32 dK,dV accumulation). Returns the added seconds.
struct RingExposure {
  double forward = 0, backward = 0;
};
RingExposure ringAttentionExposure(const Cluster &cluster, double kvBytes,
                                   double mergeBytes, int64_t cp, bool intra,
                                   double attentionForward,
                                   double attentionBackward);

//===----------------------------------------------------------------------===//
// Profiles read off compiled IR
//===----------------------------------------------------------------------===//

/// A quantity affine in the microbatch size b: value(b) = base + perSample·b.
/// Compiling at b = 1 and b = 2 determines it exactly for FLOPs, bytes,
/// collective sizes and buffer sizes of a Transformer block.
struct Affine {
  double base = 0;
  double perSample = 0;
  double at(double b) const { return base + perSample * b; }
  static Affine fit(double at1, double at2) {
    return Affine{2 * at1 - at2, at2 - at1};
  }
};

/// One compute op of a per-rank function (FLOPs, bytes affine in b).
struct OpProfile {
  OpKind kind = OpKind::Memory;
  std::string name;
  Affine flops, bytes;
  /// True for weight-gradient GEMMs (the W of zero-bubble schedules).
  bool weightGrad = false;
  /// A gradient op (for Cluster::attentionScoreBytes and the score and
  /// tile times of each direction).
  bool backward = false;
  /// Attention ops: the score matrices (B·N, affine in b), each seqQ x
  /// seqK, and the causal mask (for the kernel's tiles, attentionTiles).
  Affine attentionBatchHeads;
  double attentionSeqQ = 0, attentionSeqK = 0;
  bool attentionCausal = false;
  /// Attention ops: score elements B·N·Sq·Sk at microbatch size `b`.
  double scoresAt(double b) const {
    return attentionBatchHeads.at(b) * attentionSeqQ * attentionSeqK;
  }
  /// GEMMs: the problem shape (GemmShape), each dimension affine in b (the
  /// token dimension, m or k, grows with it). Unknown when gemmM is 0.
  Affine gemmBatch{1, 0}, gemmM, gemmN, gemmK;
  /// The shape at microbatch size `b` with the token dimensions (those
  /// that grow with b) scaled by `tokenScale` (1/cp under context
  /// parallelism).
  GemmShape gemmAt(double b, double tokenScale) const {
    auto dim = [&](const Affine &a) {
      return a.perSample != 0 ? a.at(b) * tokenScale : a.at(b);
    };
    return GemmShape{dim(gemmBatch), dim(gemmM), dim(gemmN), dim(gemmK)};
  }
};

/// One collective of a per-rank function on the tensor-parallel axis.
struct CommProfile {
  CollectiveKind kind = CollectiveKind::AllReduce;
  std::string name;
  Affine bytes;
};

/// The ops and TP collectives of one function, per call.
struct FunctionProfile {
  std::vector<OpProfile> ops;
  std::vector<CommProfile> comms;
};

/// The phases of the one-block train step, in program order: the embedding
/// (before the block forward call), the block forward call, the head (final
/// norm, LM head, loss and their gradients), the block's backward calls
/// (with full recomputation its forward re-run first), the tail (embedding
/// gradient, gradient reduction, optimizer). Besides them, BlockInput: the
/// same step with its block backward call split as a zero-bubble schedule
/// runs it (BackwardSplit.h), at the input-gradient call (I), and
/// BlockWeight: that step at its weight-gradient call (W; with context
/// parallelism and SP it no longer holds the residual I gathered for
/// itself, which the whole call's phase does).
enum class StepPhase {
  Embedding,
  BlockForward,
  Head,
  BlockBackward,
  Tail,
  BlockInput,
  BlockWeight
};
constexpr unsigned kNumStepPhases = 7;

/// Live bytes of the one-block step's static memory plan (rt-plan-memory)
/// at the op of largest total within one phase, per category: activations,
/// gradients (rt-lower's grad category: every value of a backward function
/// or derived from the loss gradient) and the rest (workspaces, I/O slots).
/// `headGrad`: of `grad`, the buffers the head produced (the loss
/// gradient flowing into the blocks, the head's parameter gradients): on a
/// pipeline rank without the head they arrive from the next stage instead
/// (activation-category receive buffers).
struct PhaseMemory {
  Affine activation, grad, other, headGrad;
  /// Of `activation`, the buffers of collectives started for the step's
  /// next call (dist-overlap-collectives: one call ahead): at BlockInput the
  /// split W's re-gathered residuals (sequence parallelism), send buffer
  /// and result, in flight during I (whose operands their sources are).
  /// `nextCallSent`: of them, the send buffers (copies of their sources).
  Affine nextCall, nextCallSent;
};
using StepMemory = std::array<PhaseMemory, kNumStepPhases>;

/// One block under an activation recomputation mode, read off the per-rank
/// program compiled with `tfm-recompute mode=selective|full` right after
/// `tfm-autodiff` (as scripts/train.sh does). All figures per microbatch.
struct RecomputeProfile {
  /// Whether this mode was compiled; when false the planner falls back to
  /// the analytic recomputation model (docs/planner.md).
  bool compiled = false;
  /// The block's forward (full: `@B_full_fwd`; selective:
  /// `@B_selective_fwd`) and backward (full: `@B_bwd`; selective:
  /// `@B_selective_bwd`, which starts with the recomputed norms and
  /// activations).
  FunctionProfile layerFwd, layerBwd;
  /// The forward re-run before each backward (full: `@B_recompute_full`
  /// with its TP collectives; empty for selective, whose recomputation is
  /// folded into `layerBwd`).
  FunctionProfile layerRecompute;
  /// Bytes one block's forward keeps for its backward besides the block
  /// input (the forward's results other than the block output): 0 for
  /// full, the kept matmul/attention outputs for selective.
  Affine residualBytes;
  /// Peak live activation bytes of the one-block train step in this mode's
  /// static memory plan.
  Affine frameActivationBytes;
  /// That plan's live bytes per phase of the step, and what its block
  /// backward all-gathers of its arguments (LocalProfile::regatherBytes).
  StepMemory phases;
  Affine regatherBytes;
  /// Selective: the bytes a deferred weight-gradient pass (W) of one block
  /// recomputes from forward values and reads (the norms and activations
  /// only W reads move into it when the backward is split), read off this
  /// mode's one-block backward split as LocalProfile::weightGradInputBytes:
  /// W's own frame besides its inputs.
  Affine weightRecomputedBytes;
  /// Full: the activation bytes of the forward re-run call's own frame
  /// (its callee's peak: e.g. tensor parallelism's collective buffers),
  /// read off the split one-block step at the first re-run call.
  Affine rerunFrameBytes;
  /// Full: elements of the block's parameters per rank its forward re-run
  /// reads (those only the re-run's discarded block output needs are not
  /// read); ZeRO-3 gathers these for the re-run call.
  double rerunParams = 0;
  /// Selective: elements of the block's parameters per rank that W reads
  /// (the recomputed norms' weights); under ZeRO-3 I passes W their
  /// gathered copies (W is given the shards), W inputs as well.
  double weightParams = 0;
  /// Why the mode did not compile (then `compiled` is false).
  std::string error;
};

/// How the tp ranks of a one-block profile hold an MoE block's experts.
enum class ExpertLayout {
  /// Every tp rank runs all of its experts (dense models; ep = 1, etp = 1).
  Replicated,
  /// The ep group takes every tp rank (ep > 1, etp = 1): E split on tp.
  OverTp,
  /// Expert tensor parallelism (etp = tp): each expert split on tp.
  TensorSplit,
};

/// The key of a compiled one-block profile: tensor parallel degree, sequence
/// parallelism and the experts' layout on the tp ranks.
struct ProfileKey {
  int64_t tp = 1;
  bool sp = false;
  ExpertLayout experts = ExpertLayout::Replicated;
  bool operator<(const ProfileKey &o) const {
    return std::tie(tp, sp, experts) < std::tie(o.tp, o.sp, o.experts);
  }
};

/// Parameters per rank whose gradients the compiled program reduces over the
/// same mesh axes (LocalProfile::gradientReductions). Every gradient is
/// partial over the data-parallel ranks (each sums its own sequences);
/// beyond them:
///  * `overTensor`: over the tensor-parallel ranks too: a parameter
///    replicated over tp whose gradient each rank computes from its part of
///    a value split or partial over tp, and which the program reduces only
///    with the gradient (nanoGPT: the norm weights, from the rank's
///    sequence shard under SP, else from their output gradient, a partial
///    sum over tp; without SP also the position embedding);
///  * `overContext`: over the context-parallel ranks: a gradient each rank
///    sums over its chunk of the sequence (not a position embedding's,
///    whose output gradient is gathered over the sequence first).
/// Elements per rank: of one block, its non-expert and its expert weights
/// (LocalProfile::expertParams), and of the non-block parameters, those the
/// embedding reads, those only the head reads, and all of them.
struct GradientReduction {
  bool overTensor = false, overContext = true;
  double layer = 0, layerExpert = 0;
  double pre = 0, headOnly = 0, other = 0;
};

/// Everything the search needs about one layer-local configuration, read
/// off the compiled per-rank program (its ProfileKey; cp = 1, ep at most
/// tp). The top-level fields are the program without recomputation;
/// `selective` and `full` the same block compiled with that recomputation
/// mode.
struct LocalProfile {
  int64_t tp = 1;
  bool sp = false;
  /// One Transformer block, per microbatch: forward and backward functions.
  FunctionProfile layerFwd, layerBwd;
  /// Non-layer work per microbatch: before the blocks (embedding; first
  /// stage) and after them (final norm, LM head, loss; last stage), split
  /// into forward and backward.
  FunctionProfile preFwd, preBwd, postFwd, postBwd;
  /// Parameter elements per rank: one block, and outside the blocks.
  double layerParams = 0, otherParams = 0;
  /// Of otherParams, those the embedding reads and those the head reads (a
  /// tied embedding: both), and those only the head reads: what a
  /// pipeline's first and last stage hold (static memory plan).
  double preParams = 0, postParams = 0, headOnlyParams = 0;
  /// Of those, the elements both ends read (a tied embedding; 0 untied).
  double tiedParams() const {
    return std::max(0.0, preParams + postParams - otherParams);
  }
  /// Of otherParams, preParams and postParams, the elements by which the
  /// gradients as the backward produces them per rank (what the microbatch
  /// sums accumulate; the optimizer's gradient before the collectives that
  /// reassemble it) are smaller than the parameters: a sequence-parallel
  /// position embedding's gradient is the rank's slice of the positions.
  double otherGradSliced = 0, preGradSliced = 0, postGradSliced = 0;
  /// Parameter tensors (step arguments): one block's, and of the non-block
  /// ones those the embedding and those the head reads (a tied embedding:
  /// both), and all of them; each is one gradient accumulation kernel per
  /// microbatch (gradientAccumulationTime).
  double layerParamTensors = 0, preParamTensors = 0, postParamTensors = 0,
         otherParamTensors = 0;
  /// Of layerParams, the expert weights of an MoE block (block arguments
  /// with tfm.role expert_gate / expert_up / expert_down, shape [E, ...]),
  /// per rank at ep = 1; 0 for a dense block.
  double expertParams = 0;
  /// The parameters by the mesh axes their gradients are reduced over
  /// (GradientReduction), one entry per distinct (overTensor, overContext):
  /// read off the one-block program's reductions from each parameter's
  /// gradient to its update (the tensor axis) and off the one-block model
  /// partitioned with cp = 2 (the context axis). Empty when not read (a
  /// hand-built profile): every gradient over the dp×cp group.
  std::vector<GradientReduction> gradientReductions;
  /// Bytes of the block's MoE dispatch buffers ([E, B, C, H] results of
  /// tfm.moe_dispatch in the block forward) per rank per microbatch: the
  /// send buffer of each expert-parallel all-to-all; 0 for a dense block.
  Affine dispatchBytes;
  /// Bytes saved by one block's forward for its backward (its residuals),
  /// per microbatch; and the bytes of the block input (the residual stream
  /// slice; what full recomputation keeps and what p2p sends).
  Affine residualBytes, boundaryBytes;
  /// Of residualBytes, what the analytic selective recomputation (the
  /// fallback when `selective` was not compiled) drops: the attention
  /// outputs, whose forward it re-runs.
  Affine selectiveSavedBytes;
  /// Peak live activation bytes of the one-block train step in the static
  /// memory plan (rt-plan-memory), per microbatch size.
  Affine frameActivationBytes;
  /// The gradient-category bytes live at that peak (`peak_breakdown.grad`:
  /// the activation gradients and the parameter gradients computed by
  /// then, the head's; the same whatever the recomputation mode).
  Affine frameGradBytes;
  /// Bytes of the one-block step's parameters per rank (the size of its
  /// parameter gradients).
  double stepParamBytes = 0;
  /// The static memory plan's live bytes per phase of the one-block step.
  StepMemory phases;
  /// Bytes of the block backward's operands that the step all-gathers for
  /// it (sequence parallelism's residuals gathered over tp), per
  /// microbatch: what the compiled step prefetches one block call ahead.
  Affine regatherBytes;
  /// Bytes of the step's token ids per microbatch (its `tokens` input):
  /// with several microbatches each keeps its slice of the step's tokens
  /// until its embedding gradient.
  Affine tokenBytes;
  /// Gradient bytes that one block's weight-gradient pass (W) reads, per
  /// microbatch, when a zero-bubble schedule runs it apart from the input
  /// gradient (I): the block output's gradient and what I saves for W.
  /// They stay live from I to the deferred W.
  Affine weightGradInputBytes;
  /// Bytes the head's forward keeps for its backward per microbatch (the
  /// last block's output, the final norm's output, the logits, the
  /// labels): live on the last pipeline stage for each microbatch whose
  /// head ran and whose backward has not.
  Affine headKeptBytes;
  /// Elements of the block forward's hidden dropouts per microbatch (what
  /// Cluster::dropoutMaskBytes charges per layer kept).
  Affine dropoutElements;
  /// The block compiled with `tfm-recompute mode=selective` / `mode=full`.
  RecomputeProfile selective, full;
  /// The compiled profile of recomputation mode `mode` ("selective",
  /// "full"), or null when that mode was not compiled (or is "none").
  const RecomputeProfile *recompute(const std::string &mode) const {
    const RecomputeProfile *r = mode == "selective" ? &selective
                                : mode == "full"    ? &full
                                                    : nullptr;
    return r && r->compiled ? r : nullptr;
  }
  /// Set when the configuration did not compile; the reason.
  std::string error;
  /// Clusters whose gradients live in the static frame: the one-block
  /// step compiled under context parallelism (the ring or Ulysses
  /// attention's per-rank buffers: K/V chunks in flight, their gradients),
  /// by (contextParallelPlanKeys, recompute mode). A cp plan without one
  /// scales `phases` by 1/cp.
  struct ContextParallelMemory {
    /// The static memory plan per phase, per rank (the tokens already
    /// split: read at a token scale of 1).
    StepMemory phases;
    /// otherGradSliced, preGradSliced, postGradSliced of that program (the
    /// position embedding's gradient is the rank's positions).
    double otherGradSliced = 0, preGradSliced = 0, postGradSliced = 0;
    /// What its block backward all-gathers of its arguments (regatherBytes)
    /// and the gradient bytes a deferred W of its block reads
    /// (weightGradInputBytes).
    Affine regatherBytes, weightGradInputBytes;
    /// Full recomputation: its re-run call's own frame (as
    /// RecomputeProfile::rerunFrameBytes: cp's K/V chunks in flight).
    Affine rerunFrameBytes;
  };
  std::map<std::pair<std::string, std::string>, ContextParallelMemory>
      contextParallelMemory;
};

/// The model, as the search needs it.
struct ModelInfo {
  std::string name;
  int64_t layers = 0, hidden = 0, heads = 0, kvHeads = 0, ffn = 0;
  int64_t vocab = 0, seq = 0;
  /// Element size of parameters/activations in the compiled IR, bytes.
  double elementBytes = 2;
  /// Total parameters.
  double params = 0;
  /// Model FLOPs of one training step for one sequence under the project's
  /// convention (docs/planner.md): 3 × forward GEMM + attention FLOPs of
  /// the model definition, causal attention halved.
  double flopsPerSequence = 0;
  /// Experts per MoE layer (tfm.moe_dispatch num_experts); 0 for a dense
  /// model, which is only searched at ep = 1.
  int64_t experts = 0;
};

//===----------------------------------------------------------------------===//
// Plans and their cost
//===----------------------------------------------------------------------===//

/// A point of the search space. mesh order pp, dp, cp, tp (tp fastest).
/// ep (expert parallelism, Megatron-Core semantics) adds no GPUs: its
/// groups fold over the tp (with etp = 1), cp and dp ranks, minor first
/// (Plan::ep); the part outside tp is getExpertParallelOutsideTp()
/// consecutive members of the dp×cp group, tp ranks apart, and the expert
/// weights' data-parallel group is the remaining dp·cp / that ranks.
/// Scored analytically (docs/planner.md).
struct Candidate {
  int64_t tp = 1, pp = 1, dp = 1, cp = 1, ep = 1;
  bool sp = false;
  int64_t zero = 0;
  /// Microbatch size (sequences) and microbatches per step per DP rank.
  int64_t mbs = 1, mb = 1;
  std::string schedule = "1f1b";
  int64_t vpp = 1;
  /// "none", "selective" or "full".
  std::string recompute = "none";
  /// Context parallelism with contiguous sequence chunks (rank i holds
  /// chunk i: seq % cp == 0, and the causal ring is load-imbalanced: rank
  /// cp-1 does (2cp-1)/cp times the balanced attention work) instead of
  /// zig-zag (cp_layout=zigzag: seq % 2cp == 0, balanced).
  bool cpContiguous = false;
  /// With pp > 1, the data-parallel gradient reduction runs blocking after
  /// the stage's last backward (the microbatch accumulation and the
  /// reductions in each stage's tail, as dist-pipeline-split built it
  /// before it accumulated each layer's gradient in the unit of its last
  /// microbatch), instead of behind the last microbatch's backward.
  bool pipelineReductionInTail = false;
  /// ZeRO-1/2: the parameter all-gather of each bucket hides behind the
  /// optimizer updates of the buckets after it (as dist-bucket-collectives
  /// and dist-overlap-collectives build it), instead of behind the next
  /// step's forward (Megatron's overlap_param_gather).
  bool paramGatherBehindOptimizer = false;
  /// The data-parallel collectives are bucketed per layer group, as
  /// dist-bucket-collectives builds them (split-at-calls, 40 MiB cap): one
  /// bucket per block on the rank plus the embedding / head / final norm,
  /// each paying its own latency, instead of Megatron-Core DDP's buckets of
  /// Cluster::dpBucketParams (one without overlap).
  bool dpBucketPerLayerGroup = false;
  /// Attention under cp > 1: "ring" (ring attention, K/V exchanges
  /// overlapped with the blocks) or "ulysses" (DeepSpeed-Ulysses: four
  /// exposed all-to-alls over cp each way per layer, attention balanced
  /// whatever the chunk layout; needs the q and kv heads divisible by
  /// tp·cp). algorithms.md §2.2, §2.5.
  std::string cpAttention = "ring";
  /// Expert tensor parallelism: 1 (whole experts; with ep > 1 and tp > 1
  /// the ep group takes every tp rank) or tp (each expert split over tp).
  int64_t etp = 1;
  /// How the tp ranks hold the experts, i.e. which compiled profile scores
  /// the candidate.
  ExpertLayout expertLayout() const {
    if (tp > 1 && etp == tp)
      return ExpertLayout::TensorSplit;
    if (tp > 1 && ep > 1)
      return ExpertLayout::OverTp;
    return ExpertLayout::Replicated;
  }
  /// The ep group's ranks outside tp (ep / tp when it folds over tp).
  int64_t getExpertParallelOutsideTp() const {
    return expertLayout() == ExpertLayout::OverTp ? ep / tp : ep;
  }
  /// `pp=..,dp=..,...` in the Plan syntax of dist-apply-plan plus the
  /// planner's microbatch size `mbs` (every key, defaults included;
  /// `cp_attention` only when it is "ulysses").
  std::string str() const;
  /// Ring attention over cp > 1 in zig-zag order (cp_layout=zigzag).
  bool isZigzag() const {
    return cp > 1 && cpAttention == "ring" && !cpContiguous;
  }
  /// The plan as `dist-apply-plan` and `scripts/train.sh --plan` take it:
  /// `mbs` dropped (dp·mbs·mb is the global batch, so the microbatch count
  /// `mb` determines it) and keys at their defaults omitted, e.g.
  /// "dp=4,tp=2,sp=1,zero=2".
  std::string applyPlan() const;
  /// The family for rejection reasons, e.g. "tp=8 pp=4 cp=1" (" ep=N"
  /// appended when ep > 1).
  std::string family() const;
};

/// The plan keys of `plan`'s context parallelism as dist-apply-plan takes
/// them, e.g. "cp=2,cp_attention=ring,cp_layout=zigzag" (the key of
/// LocalProfile::contextParallelMemory); empty for cp = 1.
std::string contextParallelPlanKeys(const Candidate &plan);

/// Predicted cost of a candidate. Seconds, bytes.
struct Estimate {
  Candidate plan;
  bool fits = false;
  /// Why it was rejected or what dominates it.
  std::string note;
  double stepTime = 0;
  double tokensPerSecond = 0;
  /// MFU under the project's convention (ModelInfo::flopsPerSequence).
  double mfu = 0;
  /// TFLOP/s per GPU under the project's convention.
  double tflopsPerGpu = 0;
  double peakBytes = 0;
  /// Memory split: model states (params, grads, optimizer), activations
  /// (in-flight residuals + transient working set, before fragmentation)
  /// and the fixed part (reserve + communication buffers).
  double stateBytes = 0, activationBytes = 0, fixedBytes = 0;
  /// Model states by kind (their sum is stateBytes; modelStateParts): the
  /// parameters, the gradient buffers and the optimizer states (AdamW's m,
  /// v and the fp32 master copy), each after its ZeRO sharding (with
  /// Cluster::gradBufferInFrame the gradients are the parameter gradients
  /// live at the static plan's peak: framePeak); and, of activationBytes,
  /// the activation gradients live at the peak.
  double paramBytes = 0, gradBytes = 0, optimizerBytes = 0;
  double activationGradBytes = 0;
  /// The pipeline rank the breakdown above is of (the heaviest of those
  /// scored, states included; 0 without pp).
  int64_t memoryPpRank = 0;
  /// With pp and Cluster::gradBufferInFrame: the same breakdown for each
  /// pipeline rank the planner scores, in rank order (the first and the
  /// last; with a simulated schedule of one stage per rank and whole
  /// backwards, 1F1B and GPipe, the middle ones too), so that each compares
  /// with that rank's compiled memory plan. Bytes.
  struct RankMemory {
    int64_t ppRank = 0;
    double params = 0, optimizer = 0, grads = 0, activationGrads = 0,
           activations = 0;
  };
  std::vector<RankMemory> rankMemory;
  /// Peak in-flight activations, in layers, of the heaviest pipeline rank:
  /// from the schedule's closed form, or from the simulated schedule
  /// (`simulated`).
  double inflightLayers = 0;
  /// Time split of the step: compute, exposed communication, bubble
  /// (stepTime = compute + comm + bubble + optimizer).
  double compute = 0, exposedComm = 0, bubble = 0, optimizer = 0;
  /// Per microbatch per stage: forward, input-grad, weight-grad times and
  /// the p2p time (for the simulator and the trace).
  double tF = 0, tI = 0, tW = 0, tP2P = 0;
  /// How the simulated pipeline's ranks share a node's cores
  /// (pipelineSharing in CostTerms.h; 0, 1, 1: they do not): the wake-up
  /// of a waiting receiver, seconds, and ProcessorSharing's terms.
  double tWakeup = 0, sharingWaitingUse = 1, sharingMaxSpeedup = 1;
  /// Where the node's ranks are pinned to cores (Cluster::pinnedCores):
  /// how many cores, and the node's ranks in this plan's job (0, 0: not
  /// pinned).
  int64_t pinnedCores = 0, nodeRanks = 0;
  /// Extra time on the first and last stages (embedding, LM head).
  double firstF = 0, firstB = 0, lastF = 0, lastB = 0;
  double dpComm = 0;
  /// The pipeline's closing synchronisations (pipelineTailTime; in
  /// exposedComm), seconds; 0 for pp = 1.
  double tailComm = 0;
  /// The data-parallel collectives as the compiled program forms them
  /// (ParameterShards::denseCollectives; empty when not scored so).
  std::vector<GradientCollective> dpCollectives;
  /// Exposed expert-parallel all-to-all seconds per step on one rank (four
  /// per MoE layer per microbatch; included in exposedComm).
  double epComm = 0;
  /// The plan's tp (sp), cp or ep groups that cross node boundaries
  /// (crossNodeGroups in CostTerms.h), one line each; empty when every
  /// such group stays inside a node. Their collectives are scored on the
  /// inter-node link, but a plan that relies on one is usually a mistake.
  std::vector<std::string> crossNode;
  bool simulated = false;
  /// Whether the recomputation costs (backward time, kept activations)
  /// came from the program compiled with the plan's mode (false for
  /// recompute none and for the analytic fallback).
  bool recomputeCompiled = false;
};

/// Search options.
struct SearchOptions {
  int64_t gpus = 8;
  int64_t globalBatch = 8;
  /// Restrict to one plan (evaluate mode) when set.
  bool fixed = false;
  Candidate fixedPlan;
  /// Candidates simulated with the real schedule after the analytic pass.
  int64_t simulateTop = 16;
  /// Microbatch sizes tried (and always the whole local batch, mb = 1),
  /// ZeRO stages, recomputation modes, schedules.
  std::vector<int64_t> mbsChoices = {1, 2, 4, 8};
  std::vector<int64_t> cpChoices = {1, 2, 4, 8};
  /// Attention modes tried for cp > 1 (Candidate::cpAttention).
  std::vector<std::string> cpAttentions = {"ring", "ulysses"};
  /// Expert-parallel degrees tried for MoE models (those with E % ep == 0
  /// and (dp·cp) % ep == 0); dense models use ep = 1 only.
  std::vector<int64_t> epChoices = {1, 2, 4, 8, 16, 32, 64};
  std::vector<std::string> schedules = {"1f1b", "interleaved", "zb-h1",
                                        "gpipe"};
  std::vector<std::string> recomputes = {"none", "selective", "full"};
  std::vector<int64_t> zeroStages = {0, 1, 2, 3};
  /// Whether tp > 1 plans may use sequence parallelism.
  bool searchSp = true;
  /// Score cp > 1 with contiguous chunks (Candidate::cpContiguous).
  bool cpContiguous = false;
  /// Score cp > 1 ring attention zig-zag where the compiler builds it
  /// (seq % 2cp == 0) and contiguous elsewhere; overrides cpContiguous.
  bool cpZigzagWhereCompilable = false;
  /// Score pp > 1 with the gradient reduction in the stage's tail
  /// (Candidate::pipelineReductionInTail).
  bool pipelineReductionInTail = false;
  /// Score the ZeRO-1/2 parameter all-gather hidden behind the optimizer
  /// (Candidate::paramGatherBehindOptimizer).
  bool paramGatherBehindOptimizer = false;
  /// Score the data-parallel collectives bucketed per layer group
  /// (Candidate::dpBucketPerLayerGroup).
  bool dpBucketPerLayerGroup = false;
  /// Only the ep folding dist-apply-plan builds: with cp = 1 ep divides dp;
  /// with cp > 1 the ep group spans every cp rank of a sequence, so ep is a
  /// multiple of cp and ep/cp divides dp. An MoE model under cp is then
  /// searched only with ep folded over the cp ranks (at ep = 1 the
  /// compiled MoE layers repeat the expert compute on every cp rank).
  bool epAsCompiled = false;
  /// Reject plans whose tp (sp), cp or ep groups cross node boundaries
  /// (Estimate::crossNode) instead of scoring them with a warning.
  bool forbidCrossNode = false;
};

/// Scores one candidate with the layer-local profile of its (tp, sp).
/// Analytic composition (docs/planner.md); `simulate` runs the pipeline
/// simulator (lib/Pipeline) for the bubble instead of the closed form.
Estimate evaluate(const Cluster &cluster, const ModelInfo &model,
                  const LocalProfile &profile, const Candidate &plan,
                  int64_t globalBatch, bool simulate);

/// Search statistics.
struct SearchStats {
  int64_t candidates = 0, fitting = 0, simulated = 0, compiled = 0;
  double wallSeconds = 0, compileSeconds = 0;
};

/// One block per microbatch under one recomputation mode, as the search
/// costs it (for the report): FLOPs of its forward and of its backward
/// (recomputation included), TP collective bytes of both, activation bytes
/// one block keeps between them (its input included) and the one-block
/// step's peak activation frame. Bytes, FLOPs.
struct RecomputeRow {
  std::string mode;
  /// From the compiled program; otherwise `why` says why the analytic
  /// model was used.
  bool compiled = false;
  std::string why;
  double forwardFlops = 0, backwardFlops = 0, commBytes = 0;
  double keptBytes = 0, frameBytes = 0;
};

/// The rows of `modes` for the block of `profile` at microbatch size `b`,
/// as the cluster's software recomputes (Cluster::fullRecomputeRerunsForward,
/// selectiveRecomputesAttention); bytes without unfused-attention scores.
std::vector<RecomputeRow> recomputeRows(const Cluster &cluster,
                                        const LocalProfile &profile,
                                        const std::vector<std::string> &modes,
                                        double b);

struct SearchResult {
  /// Fitting candidates, best first (at most `keep`).
  std::vector<Estimate> best;
  /// Per family ("tp=.. pp=.." etc.) that has no entry in `best`: why it
  /// lost (OOM, bubble, communication, invalid).
  std::map<std::string, std::string> rejected;
  SearchStats stats;
  /// The chosen plan's block (its tp, sp and microbatch size) under every
  /// recomputation mode searched.
  std::vector<RecomputeRow> recompute;
};

/// Enumerates the plan space for `options.gpus` GPUs (or scores the fixed
/// plan), evaluates every candidate analytically, simulates the top ones,
/// and returns the fitting ones by predicted step time. `profiles` maps
/// (tp, sp, expert layout) to the compiled profile; an MoE model's
/// candidates with ep or etp over tp > 1 use the OverTp / TensorSplit
/// profiles (searched only where compiled).
SearchResult search(const Cluster &cluster, const ModelInfo &model,
                    const std::map<ProfileKey, LocalProfile> &profiles,
                    const SearchOptions &options);

/// The report of docs/planner.md: plan table, rejected families, stats.
std::string formatReport(const Cluster &cluster, const ModelInfo &model,
                         const SearchResult &result,
                         const SearchOptions &options, int64_t top);
/// Same content as JSON.
std::string formatReportJson(const Cluster &cluster, const ModelInfo &model,
                             const SearchResult &result,
                             const SearchOptions &options, int64_t top);
/// Chrome-trace (about://tracing) timeline of the predicted step of
/// `estimate`: one row per pipeline rank with F/I/B/W slices, then the DP
/// gradient communication and the optimizer.
std::string chromeTrace(const Estimate &estimate);

} // namespace autoshard::planner

#endif // AUTOSHARD_PLANNER_PLANNER_H
