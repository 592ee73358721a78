//===- CostTerms.h - The planner's cost terms, one per strategy -*- C++ -*-===//
//
// The terms that `evaluate` (Planner.h) composes into a plan's step time and
// memory, one per parallelism strategy or cost: the tensor-parallel block,
// activation recomputation, context parallelism (ring attention, Ulysses),
// expert parallelism, ZeRO-3, the pipeline, the data-parallel gradient
// synchronisation, the optimizer and the memory of one GPU. Each term states
// the formula it follows and its source (algorithms.md and workloads.md under
// /work/shared/reference, docs/planner.md). All times are seconds per rank,
// all sizes bytes; "per microbatch" means one microbatch of `Candidate::mbs`
// sequences, "per layer" one Transformer block.
//
// Terms that add to a block's times return their parts instead of the sum,
// and `evaluate` adds them in a fixed order: the reports are compared byte
// for byte, so the floating-point operation order is part of the contract.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_PLANNER_COSTTERMS_H
#define AUTOSHARD_PLANNER_COSTTERMS_H

#include "autoshard/Pipeline/Schedule.h"
#include "autoshard/Planner/Planner.h"

#include <cstdint>
#include <string>
#include <vector>

namespace autoshard::planner {

//===----------------------------------------------------------------------===//
// Plan validity
//===----------------------------------------------------------------------===//

/// Why `plan` cannot run `model` with `profile` at `globalBatch` sequences
/// per step (the profile's compile error, layers not splitting into pp·vpp
/// stages, cp/Ulysses divisibility, dp·mbs·mb ≠ batch, ep degrees), or an
/// empty string when it can.
std::string planError(const ModelInfo &model, const LocalProfile &profile,
                      const Candidate &plan, int64_t globalBatch);

//===----------------------------------------------------------------------===//
// One block per microbatch
//===----------------------------------------------------------------------===//

/// Roofline times of one function's ops and its TP collectives at
/// microbatch size `b`, FLOPs and bytes scaled by `tokenScale` (1/cp).
/// `total`: every op (unfused attention's score kernels included,
/// Cluster::attentionScoreBytes); `weightGrad` and `attention`: the parts of
/// `total` from weight-gradient GEMMs and attention ops; `comm`: the TP
/// collectives over `tp` ranks, not overlapped.
struct FunctionTimes {
  double total = 0, weightGrad = 0, attention = 0, comm = 0;
};
FunctionTimes functionTime(const Cluster &cluster, const FunctionProfile &f,
                           double b, double tokenScale, int64_t tp);

/// One block's time per microbatch: forward, input-gradient (B without W,
/// recomputation included), weight-gradient (W of zero-bubble schedules)
/// and the exposed communication included in forward + inputGrad (for
/// Estimate::compute).
struct LayerTimes {
  double forward = 0, inputGrad = 0, weightGrad = 0, comm = 0;
};

/// The compiled block under tensor (and sequence) parallelism (Megatron-LM,
/// Shoeybi et al. 2019; sequence parallelism, Korthikanti et al. 2022;
/// algorithms.md §3.2): the forward and backward functions' op times, with
/// the TP collectives read off the program exposed by 1 -
/// tpOverlapFraction. Also returns both functions' times (their attention
/// parts feed the cp and recomputation terms).
struct TensorParallelBlock {
  LayerTimes layer;
  FunctionTimes forward, backward;
};
TensorParallelBlock tensorParallelBlock(const Cluster &cluster,
                                        const FunctionProfile &forward,
                                        const FunctionProfile &backward,
                                        double b, double tokenScale,
                                        int64_t tp);

/// The compiled profile that the cluster's software runs for recomputation
/// `mode`: null for none, for a mode that did not compile (analytic
/// fallback) and for selective on software that recomputes the attention
/// instead (Cluster::selectiveRecomputesAttention: the analytic model).
const RecomputeProfile *softwareRecompute(const Cluster &cluster,
                                          const LocalProfile &profile,
                                          const std::string &mode);

/// Activation recomputation's extra input-gradient time per layer per
/// microbatch and the exposed TP communication within it. Compiled: the
/// re-run function `@B_recompute_full` (selective: 0, its recomputation is
/// in its backward), or, on software that re-runs whole layers
/// (Cluster::fullRecomputeRerunsForward, Megatron-LM), the block forward.
/// Analytic fallback (Korthikanti et al. 2022, §5): full re-runs the block
/// forward with its collectives, selective the attention forward.
/// `block` is the tensorParallelBlock of the profile `evaluate` costs.
struct RecomputeTime {
  double time = 0, comm = 0;
};
RecomputeTime recomputeTime(const Cluster &cluster, const LocalProfile &profile,
                            const Candidate &plan,
                            const TensorParallelBlock &block, double b,
                            double tokenScale);

/// The exposed seconds one strategy adds to one layer per microbatch:
/// to the forward, to the backward, the compute it adds (not
/// communication: the causal load imbalance of contiguous cp chunks, the
/// ring's many small attention tiles) and the re-run of the forward's
/// communication under full recomputation (input-gradient time).
struct LayerTerm {
  double forward = 0, backward = 0;
  double computeForward = 0, computeBackward = 0;
  double recompute = 0;
};
/// Adds `term` to `layer`: forward + computeForward to the forward,
/// backward + computeBackward + recompute to the input gradient, and
/// forward + backward + recompute to the exposed communication.
void addLayerTerm(LayerTimes &layer, const LayerTerm &term);

/// DeepSpeed-Ulysses (Jacobs et al. 2023; algorithms.md §2.5, §2.7) under
/// cp > 1 with cp_attention=ulysses: per layer, all-to-alls over cp of q,
/// k, v and of the output in the forward, the same four in the backward,
/// each of the rank's local tensor (tokens = mbs·seq/cp, heads split over
/// tp), none overlapped; full recomputation repeats the forward's four.
/// No causal imbalance (every rank attends whole sequences of its heads).
/// Zero for cp = 1 or ring attention.
LayerTerm ulyssesTerm(const Cluster &cluster, const ModelInfo &model,
                      const Candidate &plan);

/// Ring attention (Liu et al. 2023; algorithms.md §2.2, §2.3, §2.7) under
/// cp > 1 with cp_attention=ring: ringAttentionExposure of the K, V bytes
/// (2·tokens·kvHeads·headDim/tp elements) and the fp32 merge bytes
/// (tokens·hidden/tp·(4 + 4 + 2)), the cp pair inside a node when tp·cp ≤
/// GPUs per node. Contiguous chunks (Candidate::cpContiguous) add the
/// causal imbalance (cp-1)/cp of the block's attention time (zig-zag is
/// balanced). Each rank runs cp block kernels of seq/cp queries and keys
/// (the diagonal one causal) where the profile's attention at 1/cp of the
/// tokens counts the tiles of one seq x seq kernel over cp: the difference
/// in tiles (attentionTiles) at the cluster's tile times is compute added
/// to both directions. Full recomputation repeats the forward exchange and
/// tiles. Zero for
/// cp = 1 or Ulysses. `attentionForward` / `attentionBackward`: the block's
/// attention time at 1/cp of the tokens.
LayerTerm ringAttentionTerm(const Cluster &cluster, const ModelInfo &model,
                            const Candidate &plan, double attentionForward,
                            double attentionBackward);

/// Expert parallelism (Megatron-Core MoE token dispatcher; algorithms.md
/// §4.3, §4.5): per MoE layer per microbatch an all-to-all of the block's
/// dispatch buffer (LocalProfile::dispatchBytes, scaled by `tokenScale`)
/// over ep ranks for the dispatch and one for the combine, forward and
/// backward (full recomputation: the forward's two again, in the
/// backward), exposed; inside a node when ep·tp ≤ GPUs per node. Zero for
/// ep = 1.
LayerTerm expertAllToAllTerm(const Cluster &cluster,
                             const LocalProfile &profile, const Candidate &plan,
                             double b, double tokenScale);

/// MoE under context parallelism as the compiler builds it
/// (docs/expert-parallelism.md): routing is per sequence, so each MoE layer
/// all-gathers its input over cp in the forward and the output gradient in
/// the backward (full recomputation: the forward's again), exposed. Zero
/// for a dense model or cp = 1.
LayerTerm moeSequenceGatherTerm(const Cluster &cluster, const ModelInfo &model,
                                const Candidate &plan);

/// The non-layer work per microbatch (embedding on the first stage; final
/// norm, LM head and loss on the last), forward and backward, with their
/// TP collectives exposed as in tensorParallelBlock; `comm` is that
/// exposed communication.
struct StageEnds {
  double firstF = 0, firstB = 0, lastF = 0, lastB = 0, comm = 0;
};
StageEnds stageEnds(const Cluster &cluster, const LocalProfile &profile,
                    double b, double tokenScale, int64_t tp);

//===----------------------------------------------------------------------===//
// Parameters, ZeRO and data parallelism
//===----------------------------------------------------------------------===//

/// Where a pipeline rank's parameters live (mesh order pp, dp, cp, tp;
/// Megatron-Core's expert folding for ep): `layersPerRank` = layers / pp;
/// the dense parameters (`denseRank`: layers·layerParams + otherParams, less
/// the expert weights when ep > 1) are replicated or ZeRO-sharded over the
/// dp×cp group (`dpGroup` ranks, `dpPerNode` = GPUs per node / tp of them
/// in a node); the expert weights (`expertRank`, 1/ep of them, 0 at ep = 1)
/// over the expert-data-parallel group of dp·cp/ep ranks (`edpPerNode` =
/// GPUs per node / (tp·ep) in a node). Elements. With
/// Candidate::dpBucketPerLayerGroup, `denseBuckets` / `expertBuckets` are
/// the data-parallel collectives dist-bucket-collectives makes of them on
/// the rank whose reduction ends the step (a pipeline's first stage): one
/// per block, the embedding's gradients in block 0's, and one for the final
/// norm and an untied head where the rank holds them (pp = 1, zb-v), each
/// split at its 40 MiB cap of gradient bytes; 0 otherwise (the cluster's
/// bucket rule).
/// With the profile's LocalProfile::gradientReductions as well (ZeRO 0-2),
/// `denseCollectives` are those collectives by kind and mesh axes, as the
/// compiled program forms them: the pass buckets per kind and axes, so each
/// group of parameters reduced over the same axes has its own buckets per
/// block (the embedding's with block 0's, the head-only parameters' their
/// own). ZeRO-0: an all-reduce over each group's axes (dp, × cp where its
/// gradients are partial over cp, × tp where over tp: the norm weights,
/// also at dp = 1). ZeRO-1/2: a reduce-scatter over the axes of
/// the optimizer's shards that the gradient is partial over (dp, × cp),
/// an all-reduce over the rest (tp), and the parameter all-gather over dp×cp;
/// `denseBuckets` is then the reductions' count (all-reduces and
/// reduce-scatters).
struct ParameterShards {
  double layersPerRank = 0;
  double denseRank = 0, expertRank = 0;
  int64_t dpGroup = 1, dpPerNode = 1, edpGroup = 1, edpPerNode = 1;
  int64_t denseBuckets = 0, expertBuckets = 0;
  std::vector<GradientCollective> denseCollectives;
};
ParameterShards parameterShards(const Cluster &cluster, const ModelInfo &model,
                                const LocalProfile &profile,
                                const Candidate &plan);

/// ZeRO-3 / FSDP per microbatch (Rajbhandari et al. 2020; Zhao et al. 2023;
/// algorithms.md §5.1, §5.3): zero3Exposure of the dense block weights over
/// the dp×cp group for the `layersPerChunk` blocks of one chunk, prefetch
/// hidden behind `layerForward` / `layerBackward`; under ep the expert
/// weights over their expert-data-parallel group on the same stream,
/// hidden behind what the dense transfers leave of each block (FSDP2 + EP,
/// as torchtitan runs it). Zero unless zero = 3 and dp·cp > 1. `reduce`:
/// whether the microbatch's backward reduce-scatters its gradients
/// (zero3Exposure; every microbatch's with Cluster::
/// zeroReducesEveryMicrobatch, else only the last's: zero3LastReduceTime).
Zero3Exposure zero3Term(const Cluster &cluster, const ModelInfo &model,
                        const LocalProfile &profile, const Candidate &plan,
                        const ParameterShards &shards, int64_t layersPerChunk,
                        double layerForward, double layerBackward,
                        bool reduce = true);

/// ZeRO-3 with several microbatches whose gradients are accumulated
/// unsharded and reduce-scattered once (autoshard's compiled program;
/// Cluster::zeroReducesEveryMicrobatch false): what the last microbatch's
/// reduce-scatters add to the step beyond the gather-only backward of the
/// others (`gatherOnly`, zero3Term without reduce), over `chunks` chunks of
/// the rank: each chunk's backward with its reductions (`withReduce`) less
/// the gather-only one, and the root unit's reduce-scatter. Zero for one
/// microbatch (its backward reduces) or the per-microbatch software.
double zero3LastReduceTime(const Cluster &cluster, const Candidate &plan,
                           const Zero3Exposure &withReduce,
                           const Zero3Exposure &gatherOnly, double chunks);

/// The exposed data-parallel gradient synchronisation of one step under
/// ZeRO-0/1/2 (algorithms.md §5.1; Megatron-Core DDP buckets): dpSyncExposure
/// of the dense parameters over dp×cp, hidden behind the step's last
/// backward (`backward`) and next forward (`forward`; the optimizer
/// updates instead with Candidate::paramGatherBehindOptimizer), plus the
/// expert parameters' over their expert-data-parallel group, hidden behind
/// what the dense one leaves. With ParameterShards::denseCollectives the
/// dense part is those collectives instead, each over its own group with
/// its own buckets (each paying its α and sync latency), the reductions
/// hidden one after the other behind the backward, the gathers behind the
/// gather cover. Reduced in the pipeline stage's tail
/// (Candidate::pipelineReductionInTail, pp > 1): all exposed. Zero for
/// ZeRO-3 (zero3Term) and when no collective spans more than one rank.
double dataParallelSyncTime(const Cluster &cluster, const ModelInfo &model,
                            const Candidate &plan,
                            const ParameterShards &shards, double microbatches,
                            double forward, double backward);

/// AdamW on the rank's optimizer shard (ZeRO ≥ 1: 1/dp·cp of the dense,
/// 1/edp of the expert parameters): a memory-bound kernel of 12 FLOPs and
/// about 28 bytes per parameter. On a node whose ranks time-share the
/// cores, at the speed of one rank alone (Cluster::alone).
double optimizerTime(const Cluster &cluster, const Candidate &plan,
                     const ParameterShards &shards);

//===----------------------------------------------------------------------===//
// Pipeline
//===----------------------------------------------------------------------===//

/// Seconds per microbatch that gradient accumulation adds to the backward
/// of `tensors` parameter tensors holding `elements` gradient elements of
/// `gradBytes` bytes each, over `microbatches` microbatches (tfm-autodiff's
/// `microbatches`): every microbatch after the first adds its gradient of
/// each tensor to the running sum (one memory-bound `tfm.add` per tensor,
/// reading two gradients and writing one), and the last one scales each
/// sum by 1/mb (`tfm.scale`, one read and one write), each a kernel with its
/// fixed cost. They run in the step between the block calls (the block's
/// profile does not hold them), so a stage pays them on every microbatch:
/// averaged, `((mb - 1) · add + scale) / mb`. Zero for one microbatch.
double gradientAccumulationTime(const Cluster &cluster, double elements,
                                double tensors, int64_t microbatches,
                                double gradBytes);

/// Exposed p2p seconds of one activation (or gradient) transfer between
/// neighbouring stages, `boundaryBytes` per microbatch (the block input at
/// 1/cp): (1 - overlap.p2p) of a p2p over NVLink when the dp·cp·tp ranks
/// between neighbours stay inside a node, else the NIC. Zero for pp = 1.
double p2pTime(const Cluster &cluster, const Candidate &plan,
               double boundaryBytes);

/// Seconds of a pipeline step's closing synchronisations, which
/// dist-pipeline-split's tails run after the last backward and the
/// data-parallel reduction: the first stage sends the tied embedding's
/// reduced gradient (`tiedGradBytes`, the message as the rank holds it:
/// its dp shard under ZeRO; 0 when the model does not tie it or, as under
/// ZB-V, one rank runs the first and the last stage) to the last stage,
/// the last stage sends the loss to the other stages (in parallel: one
/// p2p), and the stages all-reduce the gradient norm's partial sums (4
/// bytes) over pp. Summed and not overlapped: nothing is left to run
/// beside them, and the norm's all-reduce waits for both (at pp > 2 the
/// compiled tails may take the loss before the tied gradient; the sum is
/// then an upper bound). Zero for pp = 1.
double pipelineTailTime(const Cluster &cluster, const Candidate &plan,
                        double tiedGradBytes);

/// The closed-form pipeline time of one step (algorithms.md §1.3) from a
/// rank's v chunks per microbatch: F = v·tF, I = v·tI, W = v·tW, B = I + W.
/// `extra`: the first/last stage's non-layer work (all of it for pp = 1,
/// else the larger end); `busy` = mb·(F + B + extra); `bubble` = (p-1)·(F +
/// B) for 1F1B and GPipe (Narayanan et al. 2021), (p-1)·(F + B)/v for
/// interleaved 1F1B (ibid.), (p-1)·max(0, F + I - W) for ZB-H1 and
/// (p-1)·max(0, F + I - 2W)/2 for ZB-V (Qi et al. 2023), plus 2(p-1)
/// transfers; `steadyP2P` = 2·mb·v transfers. From the Estimate's tF, tI,
/// tW, firstF…lastB and tP2P.
/// How the ranks of a simulated pipeline share a node whose ranks
/// time-share its cores (Cluster::sharesNode; pipeline::ProcessorSharing
/// in lib/Pipeline): a receiver that waits is woken `wakeupLatency`
/// seconds after its data arrives when half the node's ranks run
/// (Cluster::wakeupLatency); a waiting rank still takes `waitingUse` of a
/// running rank's cores, 2 / halfWaitingSpeedup - 1 in [0, 1] (with half
/// the ranks waiting, the others then run halfWaitingSpeedup times
/// faster); an op runs at most `maxSpeedup` = othersWaitingSpeedup times
/// faster than when every rank runs. Not shared (0, 1, 1) elsewhere.
struct PipelineSharing {
  double wakeupLatency = 0, waitingUse = 1, maxSpeedup = 1;
};
PipelineSharing pipelineSharing(const Cluster &c);

struct PipelineTime {
  double extra = 0, bubble = 0, busy = 0, steadyP2P = 0;
  double total() const { return busy + bubble + steadyP2P; }
};
PipelineTime pipelineTime(const Candidate &plan, const Estimate &stageTimes);

/// Peak in-flight activations, in layers, of the heaviest pipeline rank
/// (the first) in closed form (algorithms.md §1.3): all layers for pp = 1;
/// GPipe mb·L/p; 1F1B and ZB-H1 min(p, mb)·L/p (Narayanan et al. 2021);
/// interleaved min(2(p-1) + (v-1)p + 1, v·mb) chunks; ZB-V min(2p, 2mb)
/// chunks (a chunk is L/(p·v) layers).
double inflightLayers(const Candidate &plan, int64_t layers);

//===----------------------------------------------------------------------===//
// Memory per GPU
//===----------------------------------------------------------------------===//

/// Activation bytes of one block per microbatch (scaled by `tokenScale` =
/// 1/cp) under recomputation `mode`: what it keeps from its forward for its
/// backward, its input included (every mode keeps it: the backward, or
/// full's re-run, reads it; it is the previous block's output), and the
/// transient rest of the one-block step's peak frame. Unfused attention
/// adds Korthikanti et al. 2022's 5 bytes per score element (workloads.md
/// §5) where the attention output is kept.
/// `gradients`: the activation gradients live at the one-block step's peak
/// (LocalProfile::frameActivationGradBytes), transient; Cluster::
/// dropoutMaskBytes adds a mask per hidden-dropout element to each kept
/// layer (full recomputation: to the transient part).
struct BlockActivations {
  double perLayer = 0, transient = 0, gradients = 0;
};
BlockActivations blockActivations(const Cluster &cluster,
                                  const LocalProfile &profile,
                                  const std::string &mode, double b,
                                  double tokenScale);

/// The live bytes of autoshard's static memory plan at a rank's peak
/// (`memory.grad_buffer` = "frame"), composed from the one-block step's
/// phases (LocalProfile::phases; RecomputeProfile::phases under a compiled
/// recomputation mode). The compiled step runs the one-block step's phases
/// with `layers` blocks; what it holds besides a phase's own bytes:
///  * embedding: the gradients accumulated over earlier microbatches
///    (`accumulated`);
///  * the last block forward call and the head: the `inflight` - 1 other
///    layers' kept bytes (`keptPerLayer`: block input and residuals), and
///    `accumulated`;
///  * the first (top) block backward: the same, and the next block's
///    backward re-gathers (`regather`: sequence-parallel residuals gathered
///    for the backward, prefetched one call ahead) when there is one;
///  * the last (bottom) block backward and the tail: the parameter
///    gradients of the `layers` - 1 other blocks (`layerGradBytes` each,
///    frame buffers from their backward to the optimizer); with more than
///    one microbatch they are the accumulation sums: `accumulated` at the
///    bottom backward (an upper bound: the head's gradients of the last
///    microbatch, already summed, are counted again), the same size at the
///    tail.
/// With ZeRO-2/3 (and ZeRO-1 at one microbatch) a block's gradients are
/// reduce-scattered after its backward and waited one call later: the
/// other blocks hold their shards (`layerGradBytes` is a shard) and the
/// bottom backward also the block above's whole gradients
/// (`reducingGradBytes`; not under full recomputation, whose re-run is the
/// call the wait follows); with one microbatch each backward call between
/// the top and the bottom is a candidate too (the layers above hold their
/// gradients, those below their kept bytes, and there is a next call to
/// prefetch for). ZeRO-3 gathers each
/// block's parameters at its call (`gatheredPerLayer`), the next call's
/// one call ahead (its packed shard `gatherPackBytes` and the gathered
/// buffer): at a block call the current and, when there is a next block
/// call, the next block's; the head holds the top block's prefetched
/// backward gather.
/// A pipeline rank without the head (`head` false) skips the head phase;
/// the loss gradient and the tied embedding's head gradient reach it as
/// received (activation) buffers, so the head's gradient bytes of a phase
/// (PhaseMemory::headGrad) count as activations but for the gradients of
/// parameters only the head reads (`headOnlyGradBytes`: the final norm's),
/// which it does not hold; its forward sends not yet
/// waited for (`sendBytes`: the outputs of the microbatches in flight
/// beyond the one in its backward, waited once their gradient comes back)
/// are live at its first backward. A rank that sends its input gradients
/// back (the last pipeline stage) waits for those sends at the end of the
/// step: the earlier microbatches' are live (gradient category) at the
/// last microbatch's bottom backward (`sentGradBytes`) and, at the
/// in-flight peak's forward, head and top backward phases,
/// `sentGradInflightBytes` (those sent before it); the tail has waited.
/// The peak is the candidate of largest total (workspaces and I/O
/// included); its activation and gradient bytes are reported.
struct FramePeak {
  /// Activation-category bytes; gradient-category bytes of the phase
  /// (activation gradients, the head's parameter gradients); parameter
  /// gradients of other layers or accumulated over microbatches.
  double activations = 0, grads = 0, paramGrads = 0, other = 0;
  StepPhase phase = StepPhase::Head;
  double total() const { return activations + grads + paramGrads + other; }
};
/// What a rank of a simulated zero-bubble schedule holds at one of its
/// split weight-gradient passes (W), read off its program order
/// (lib/Pipeline) with dist-pipeline-split's transfers: a value another rank
/// needs is sent right after the unit that computes it and waited after the
/// first later receive from that peer that the peer sent after receiving it
/// (else at the end of the step).
struct WeightPass {
  /// Layers in flight (from their F to their B, or W when split), and those
  /// whose W is pending (this W's own and those deferred past later I
  /// passes).
  double inflight = 0, pending = 0;
  /// Forward outputs (activation category) and input gradients (gradient
  /// category) sent and not yet waited for.
  double sentActivations = 0, sentGrads = 0;
  /// Input gradients of a stage whose previous stage runs on the same rank
  /// (ZB-V's middle stages), held from that stage's backward (I) to the
  /// previous stage's.
  double heldGrads = 0;
  /// Of the pending W passes, those whose block output gradient came from
  /// another rank (the next stage's): a received buffer, so an activation
  /// of the compiled plan; one per stage and microbatch.
  double receivedInputs = 0;
  /// Microbatches in flight on the first stage (F run, B not), each with
  /// its token slice, when the rank runs it.
  double tokenSlices = 0;
  /// Microbatches of the last stage whose head forward has run and whose
  /// head backward has not (their head values are kept).
  double heads = 0;
  /// The tied embedding's head shares live: sent to the first stage's rank
  /// and not yet waited for, or, on a rank that runs both ends, computed
  /// and not yet added to the sum (which the first stage's backward makes).
  double tiedShares = 0;
  /// The tied embedding's head shares received from the last stage's rank
  /// (with what that rank sent before the value a unit reads) and not yet
  /// added by their first-stage backward (activation category; backward
  /// passes only, see backwardPassesOf).
  double receivedShares = 0;
  /// Layers whose gradient sum exists (a B or W of theirs has run), and
  /// whether the sums of the non-block parameters the embedding reads exist
  /// (a first-stage backward has run).
  double summedLayers = 0;
  bool embeddingSums = false;
  /// Of the summed layers, those whose last microbatch's backward has run
  /// (their sum is complete), and those whose last backward is the op just
  /// before.
  double completeLayers = 0, justCompleteLayers = 0;
  /// At a W: of the complete layers, those with no backward call (I or B)
  /// since their last W (under full recomputation their reduce-scatter is
  /// waited after the next re-run, which starts such a call).
  double completeBeforeRerunLayers = 0;
  /// At a backward pass of a rank that runs the head too (ZB-V's first
  /// stage): its block output gradient came from another rank, a received
  /// (activation) buffer, not the head's gradient (the phase's received
  /// bytes, less the tied share they hold: see receivedShares).
  bool receivedOutputGrad = false;
  /// 1 when the rank's next op after this W is another stage's backward
  /// (ZB-V's first rank: W of the last stage, then the first stage's):
  /// under ZeRO-3 its layer's gather is started one call ahead, here.
  double nextStageBackward = 0;
  /// Gradients of the parameters only the head reads: each head backward
  /// makes one, and the last stage's W of microbatch j > 0 adds j's to the
  /// sum at its start.
  double headGrads = 0;
  /// 1 when the rank's next block call after this W is another backward
  /// call that reads re-gathered (sequence-parallel) residuals, a W or a
  /// whole B (a unit's later layers' W included): dist-overlap-collectives
  /// starts those gathers one call ahead, so they are live here. At a
  /// whole backward (backwardPassesOf): 1 when the next call is the unit's
  /// own next layer's, or a backward after one of a stage other than the
  /// first (a first-stage backward's input gradient is gathered for the
  /// embedding after the call, in one pack with the next one's residuals).
  double prefetched = 0;
  /// 1 when the rank's next block call after this W is the first stage's
  /// backward (ZB-V's first rank: it runs whole, at its I), which reads
  /// re-gathered residuals too; they are prefetched here unless a full
  /// recomputation's re-run call comes first.
  double prefetchedWhole = 0;
  /// Whether the rank runs a first-stage forward (which reads the
  /// embedding's non-block parameters) and a last-stage forward or
  /// backward (the head's) after this op: under ZeRO-3 each end's gathered
  /// non-block parameters are held until their last use
  /// (FrameLayers::rootFirstBytes).
  bool firstForwardsLeft = false, headOpsLeft = false;
  /// At a whole backward (backwardPassesOf): true when no block call that
  /// reads gathered parameters follows it next (it is the rank's last, or a
  /// W follows: ZB-V's first stage's W is no call, and a later stage's
  /// gathers nothing), so it prefetches no gather for a next one.
  bool lastCall = false;
  /// At a whole backward (backwardPassesOf), one layer per unit: the block
  /// call that follows it next is a forward, whose whole block gather (not
  /// a re-run's, under full recomputation) is started here.
  bool forwardNext = false;
  bool operator==(const WeightPass &o) const {
    return inflight == o.inflight && pending == o.pending &&
           sentActivations == o.sentActivations && sentGrads == o.sentGrads &&
           heldGrads == o.heldGrads && receivedInputs == o.receivedInputs &&
           tokenSlices == o.tokenSlices && heads == o.heads &&
           tiedShares == o.tiedShares && receivedShares == o.receivedShares &&
           summedLayers == o.summedLayers && embeddingSums == o.embeddingSums &&
           completeLayers == o.completeLayers &&
           justCompleteLayers == o.justCompleteLayers &&
           completeBeforeRerunLayers == o.completeBeforeRerunLayers &&
           receivedOutputGrad == o.receivedOutputGrad &&
           nextStageBackward == o.nextStageBackward &&
           headGrads == o.headGrads && prefetched == o.prefetched &&
           prefetchedWhole == o.prefetchedWhole && lastCall == o.lastCall &&
           forwardNext == o.forwardNext &&
           firstForwardsLeft == o.firstForwardsLeft &&
           headOpsLeft == o.headOpsLeft;
  }
};

/// A split input-gradient call (I) of one layer of a zero-bubble schedule's
/// rank, as its simulated program holds it there (inputPassesOf): `held`
/// counts what the rank holds besides the I's own microbatch and layer (the
/// layers above it in its unit pending as well, their W inputs live).
struct InputPass {
  WeightPass held;
  /// The layer is below its unit's top: its output gradient is the block
  /// above's input gradient (gradient category), not the head's or a
  /// received one.
  bool belowTop = false;
  /// Another block call of the rank that reads gathered parameters follows
  /// (not a W): ZeRO-3 prefetches its gather during this one.
  bool laterBlockCall = false;
  /// That call is a forward: its whole layer's gather, not a full
  /// recomputation's re-run's.
  bool forwardNext = false;
  /// The last stage's I of a microbatch before the last: the head's
  /// parameters, gathered once under ZeRO-3, stay live until the last
  /// head backward (FrameLayers::heldRootBytes).
  bool rootHeld = false;
  /// The unit's top layer, whose output gradient another rank sent (the
  /// next stage's, on another rank): a received buffer, an activation.
  bool receivedOutput = false;
  /// The rank's next block call reads gathered parameters (an F, I or
  /// whole B; a W reads none): under ZeRO-3 its gather is started during
  /// this I (dist-overlap-collectives: one call ahead).
  bool prefetchesGather = false;
  /// The rank's next call is this layer's own W (same stage and
  /// microbatch, one layer per unit): its re-gathers are started before
  /// this I, as in the one-block step (PhaseMemory::nextCall). Another
  /// layer's W (`held.prefetched`) re-gathers residuals whose sources are
  /// dead by then.
  bool ownWeightNext = false;
  bool operator==(const InputPass &o) const {
    return held == o.held && belowTop == o.belowTop &&
           laterBlockCall == o.laterBlockCall && forwardNext == o.forwardNext &&
           rootHeld == o.rootHeld && receivedOutput == o.receivedOutput &&
           prefetchesGather == o.prefetchesGather &&
           ownWeightNext == o.ownWeightNext;
  }
};

struct FrameLayers {
  double layers = 1, inflight = 1, microbatches = 1;
  double keptPerLayer = 0, layerGradBytes = 0, accumulated = 0, regather = 0;
  double reducingGradBytes = 0, gatheredPerLayer = 0, gatherPackBytes = 0;
  bool head = true;
  double sendBytes = 0, headOnlyGradBytes = 0;
  /// A rank without the head: the loss gradient of its top block's output
  /// (a stage boundary's bytes), of the head's gradient bytes the part that
  /// arrives as a received (activation) buffer at its top backward call
  /// only; a lower backward call reads the input gradient of the block
  /// above instead, a gradient-category buffer.
  double receivedGradBytes = 0;
  /// The rank's next block call after its top backward call is another
  /// microbatch's backward (GPipe's last rank): that call's re-gathered
  /// residuals (`regather`) are started during this one
  /// (dist-overlap-collectives: one call ahead), as for a layer below.
  bool backwardFollows = false;
  /// The rank's next block call after a microbatch's bottom backward call
  /// is another microbatch's backward (GPipe, every forward has run): the
  /// bottom call prefetches that call's gather (its re-run's under full
  /// recomputation) and re-gathered residuals, not a forward's.
  bool backwardAfterBottom = false;
  /// The rank's next block call after a microbatch's bottom backward call
  /// is a later microbatch's forward (1F1B's last stage, a microbatch but
  /// the last): the bottom call prefetches that forward's whole gather (not
  /// a re-run's), with two microbatches too.
  bool forwardAfterBottom = false;
  /// With several microbatches: a layer's gradient as its microbatch sum
  /// holds it, unsharded (ZeRO-2/3 reduce-scatter the sum after the last
  /// microbatch): what each layer above holds at a rank's first backward
  /// below its top. 0: `layerGradBytes`.
  double layerSumBytes = 0;
  /// Full recomputation: each block backward call follows its own forward
  /// re-run call, so a backward call prefetches the next re-run's gather
  /// (ZeRO-3: `rerunGatherBytes`, its packed shard and gathered buffer),
  /// and the block above's gradients, reduce-scattered after its backward,
  /// are waited after the re-run, before this backward (no
  /// `reducingGradBytes`).
  bool rerunCalls = false;
  double rerunGatherBytes = 0;
  /// Of those, the gathered buffers (live during the re-run call), and
  /// the re-run call's own frame (RecomputeProfile::rerunFrameBytes).
  double rerunGatheredBytes = 0, rerunFrameBytes = 0;
  /// ZeRO-3 with three or more microbatches: the non-block parameters
  /// gathered at the first microbatch and held until the last; a middle
  /// microbatch holds them (and the sums) at every phase but the tail.
  double heldRootBytes = 0;
  /// The held non-block parameters are dead at the backward phases: a
  /// pipeline's last stage at its last microbatch, whose head backward is
  /// their last use.
  bool rootForwardOnly = false;
  /// A pipeline rank's backward call that another microbatch's block call
  /// follows: it prefetches that call's gather even with one layer per
  /// rank.
  bool laterBlockCall = false;
  /// A pipeline's first stage: the bottom backward call of a microbatch
  /// that a later forward follows (1F1B, ZB-H1 steady state) is a
  /// candidate: the layers above it differentiated, the incoming gradient
  /// the block above's result (`boundaryBytes`, gradient category) instead
  /// of a received one, and the prefetch that forward's whole gather (not
  /// a re-run's parameters).
  bool bottomBeforeForward = false;
  /// One layer per rank, a backward call of the rank's simulated program
  /// (`nextKnown`; a middle pipeline rank's): whether the next block call
  /// is a forward (`forwardNext`), whose whole gather it prefetches (not a
  /// re-run's under full recomputation), and, with no later block call
  /// (`laterBlockCall` false), that it prefetches none. The closed form
  /// (`nextKnown` false) assumes a re-run's at the top and, from three
  /// microbatches on, a forward's at the bottom.
  bool nextKnown = false, forwardNext = false;
  /// ZeRO-1/2/3 with several microbatches: after the last microbatch's
  /// backward of a block its gradient sum (`sumReduceBytes`, whole) is
  /// reduce-scattered, waited one call later (before the next backward
  /// under full recomputation), and its shard (`sumShardBytes`) kept for
  /// the optimizer. The last microbatch's second backward call is then a
  /// candidate: one layer fewer kept, the sums plus one shard.
  double sumReduceBytes = 0, sumShardBytes = 0;
  /// With several microbatches: the token slices of the microbatches in
  /// flight on a rank with the embedding (kept until their embedding
  /// gradient), live from the forward through the backward.
  double tokenSlices = 0;
  /// Input gradients sent back and not yet waited for (see above).
  double sentGradBytes = 0, sentGradInflightBytes = 0;
  /// ZeRO-1/2 over dp > 1: each updated parameter shard is packed and
  /// all-gathered right after its AdamW (dist-overlap-collectives starts
  /// the bucket there, the step's end waits), so at the last AdamW every
  /// gather is in flight with its packed shard and gathered copy: the
  /// rank's parameter bytes times (1 + 1 / ZeRO group). A tail candidate
  /// instead of the other layers' gradient shards (consumed by then).
  double optimizerGatherBytes = 0;
  /// Zero-bubble schedules: each weight-gradient pass (W) of the rank that
  /// runs apart from its input-gradient pass (I), as the simulated rank
  /// program holds it there (WeightPass). Each is a candidate: the block
  /// backward phase's activations with the other in-flight layers' kept
  /// bytes and what WeightPass counts, priced by the per-item bytes below;
  /// not the phase's gradient bytes (its I has run).
  std::vector<WeightPass> weightPasses;
  /// A rank that runs several stages (interleaved; ZB-V's first stage's,
  /// whole at its I): each whole backward (B)
  /// of its simulated program, with what the rank holds there
  /// (backwardPassesOf). Each is a candidate: the block backward phase with
  /// the other in-flight layers' kept bytes and what WeightPass counts,
  /// priced by the per-item bytes below.
  std::vector<WeightPass> backwardPasses;
  /// Zero-bubble schedules: each split input-gradient call (I) of the rank
  /// (inputPassesOf). Each is a candidate: the one-block step's I call
  /// (StepPhase::BlockInput) with the other in-flight layers' kept bytes,
  /// the other pending layers' W inputs and what WeightPass counts.
  std::vector<InputPass> inputPasses;
  /// Every block backward call of the rank is one of its simulated passes
  /// (ZB-V under ZeRO-3 without full recomputation: its split I and W
  /// calls and the first stage's whole backward): the closed-form backward
  /// candidates, which assume one stage's layers and a gather prefetched at
  /// every backward call, are not scored, and each I is, with its own
  /// layer's gather and the one it prefetches (InputPass::prefetchesGather).
  bool passesOnly = false;
  /// ZB-V's first rank under ZeRO-3 with several microbatches: the
  /// non-block parameters the embedding reads (`rootFirstBytes`) and those
  /// the head reads (`rootLastBytes`), gathered once and held at a pass
  /// while a first-stage forward, resp. a head forward or backward, is to
  /// come (WeightPass::firstForwardsLeft, headOpsLeft); `rootSharedBytes`
  /// of them both ends read (a tied embedding).
  double rootFirstBytes = 0, rootLastBytes = 0, rootSharedBytes = 0;
  /// The rank runs every block backward as split I and W calls (a
  /// zero-bubble rank without the first stage; ZB-V's first rank, whose
  /// first-stage backwards are `backwardPasses`): where its I calls are
  /// scored, the whole backward call's closed-form candidates are not.
  bool splitBackwards = false;
  /// Such a rank under ZeRO-3 (`splitBackwards`, gathered parameters): each
  /// forward call of its simulated program (forwardPassesOf), a candidate:
  /// the forward phase with the in-flight layers' kept bytes, the gathers,
  /// and what WeightPass counts (pending W inputs, sends, head sums).
  std::vector<WeightPass> forwardPasses;
  /// ZeRO-1/2/3 over dp > 1 with several microbatches or stages, at
  /// backward and W passes: a layer's complete sum is reduce-scattered
  /// right after its last backward (or W) and waited one call later (after
  /// the next re-run under full recomputation: `rerunCalls`); its shard
  /// (`completeSumShardBytes`) stays. 0: sums stay whole until the tail.
  double completeSumShardBytes = 0;
  /// The last stage: the head values (LocalProfile::headKeptBytes) of the
  /// other microbatches whose head forward has run and whose backward has
  /// not, live from the forward through the backward.
  double headsKept = 0;
  /// Bytes of one item that WeightPass counts: a layer's W inputs (the
  /// block output's gradient and what I saved for W) and the gradients W
  /// computes (one layer's, unsharded: also a layer's microbatch sum); a
  /// stage boundary (forward and input-gradient sends); a microbatch's token
  /// slice; a microbatch's head values (LocalProfile::headKeptBytes); the
  /// tied embedding's gradient (a head share, a message or pending); the
  /// gradients of the non-block parameters the embedding reads (their sums,
  /// as the backward produces them) and of those only the head reads.
  double weightInputBytes = 0, weightGradBytes = 0;
  double boundaryBytes = 0, tokenBytes = 0, headKeptBytes = 0;
  double tiedGradBytes = 0, embeddingGradBytes = 0, headOnlyGradSumBytes = 0;
  /// Under full recomputation, the residual bytes per layer its re-run
  /// restores before I: kept until that layer's W, so live for each
  /// pending layer but the W's own (its phase holds those).
  double recomputedBytes = 0;
  /// A block backward's re-gathered residuals (LocalProfile::regatherBytes,
  /// in every recomputation mode), live at a W or a whole backward pass for
  /// WeightPass::prefetched (not under full recomputation at a whole one).
  double weightRegatherBytes = 0;
  /// The bytes a W's own call holds besides its inputs (what it recomputes
  /// from forward values: selective recomputation's norms and activations;
  /// gradients, as W is a gradient function), at each W.
  double weightFrameBytes = 0;
  /// ZeRO-3 with selective recomputation: the gathered parameters each I
  /// call passes its W (RecomputeProfile::weightParams), among the I call's
  /// results (and in `weightInputBytes`).
  double weightParamBytes = 0;
};
FramePeak framePeak(const StepMemory &phases, double b, double tokenScale,
                    const FrameLayers &layers);

/// A send of a pipeline rank's program and the op at whose start it is
/// waited (the op count when at the end of the step): a forward output
/// (activation), an input gradient or the last stage's tied embedding
/// share (gradients).
struct PendingSend {
  enum Kind { Activation, InputGrad, TiedShare };
  size_t op = 0, waited = 0;
  Kind kind = Activation;
};

/// The sends of each rank of `sched` in program order, with
/// dist-pipeline-split's transfers and waits (see weightPassesOf; `tied`:
/// the last stage sends a tied embedding's share per microbatch when it
/// runs on another rank than the first).
std::vector<std::vector<PendingSend>>
pendingSends(const pipeline::PipelineSchedule &sched, bool tied);

/// The split weight-gradient passes (W) of each rank of `sched` in program
/// order, with what the rank holds at each (WeightPass; `layersPerChunk`
/// layers per stage). The transfers are dist-pipeline-split's: a unit
/// receives its operands from another rank at its start and sends its
/// results right after it (F its output to the next stage, B / I its input
/// gradient to the previous one); a send is waited after the first later
/// receive from its peer that the peer sent after receiving it, else at the
/// end of the step. The last stage's share of a tied embedding's gradient
/// goes to the first stage's rank once per microbatch, with its input
/// gradient, and is received there by that microbatch's first-stage
/// backward (`tied`: the model ties them); on a rank that runs both it waits
/// there for that backward.
std::vector<std::vector<WeightPass>>
weightPassesOf(const pipeline::PipelineSchedule &sched, int64_t layersPerChunk,
               bool tied);

/// The split input-gradient calls (I) of each rank of `sched` in program
/// order, one per layer of a unit (`layersPerChunk`, top first), with what
/// the rank holds at each (InputPass; the transfers of weightPassesOf). The
/// first stage's backward runs whole and is not one.
std::vector<std::vector<InputPass>>
inputPassesOf(const pipeline::PipelineSchedule &sched, int64_t layersPerChunk,
              bool tied);

/// The forwards (F) of each rank of `sched` that splits a backward, in
/// program order, with what the rank holds before each (WeightPass, as
/// weightPassesOf: the earlier microbatches' pending W inputs, unwaited
/// sends, head gradients, sums).
std::vector<std::vector<WeightPass>>
forwardPassesOf(const pipeline::PipelineSchedule &sched, int64_t layersPerChunk,
                bool tied);

/// The whole backwards (B) of each rank of `sched` in program order, with
/// what the rank holds at each (WeightPass: inflight, tokenSlices, heads,
/// sentActivations, sentGrads, tiedShares, receivedShares, summedLayers,
/// embeddingSums, completeLayers, justCompleteLayers, prefetched, lastCall,
/// forwardNext;
/// `layersPerChunk` layers per stage), with the transfers of
/// weightPassesOf. A rank receives from a peer in the peer's send order: a
/// unit takes what it reads together with everything the peer sent before,
/// so a tied share can arrive several backwards before the first-stage
/// backward that adds it. In a split schedule (ZB-V) the first stage's
/// backward runs whole at its I (with pending, receivedOutputGrad), and a
/// W ends its layer's flight and makes its sum.
std::vector<std::vector<WeightPass>>
backwardPassesOf(const pipeline::PipelineSchedule &sched,
                 int64_t layersPerChunk, bool tied);

/// Model-state bytes of one rank (ZeRO, Rajbhandari et al. 2020;
/// algorithms.md §5.2): per parameter w (the IR's element size) + g
/// (gradElementBytes) + AdamW's fp32 m and v (8) + an fp32 master copy when
/// w < 4; ZeRO-1 shards the optimizer part, ZeRO-2 also g, ZeRO-3 all of
/// it, the dense parameters over dp×cp and the expert ones over their
/// expert-data-parallel group (with w = g = 2: 16, 4 + 12/N, 2 + 14/N, 16/N
/// bytes, workloads.md §5).
double modelStateBytes(const Cluster &cluster, const ModelInfo &model,
                       const Candidate &plan, const ParameterShards &shards);

/// Bytes per parameter of the optimizer: Cluster::optimizerStateBytes plus
/// the fp32 master copy (Cluster::masterWeightBytes; when unset 4 for an
/// IR element size below 4, else 0).
double optimizerElementBytes(const Cluster &cluster, double elementBytes);

/// modelStateBytes by kind: parameters (w per element; ZeRO-3 shards
/// them), gradient buffers (g; ZeRO ≥ 2) and optimizer states
/// (optimizerElementBytes; ZeRO ≥ 1), dense over dp×cp, expert over the
/// expert-data-parallel group. Compared with the compiled program's state
/// and gradient buffers by python/tests/test_planner_memory.py.
struct ModelStates {
  double params = 0, grads = 0, optimizer = 0;
};
ModelStates modelStateParts(const Cluster &cluster, const ModelInfo &model,
                            const Candidate &plan,
                            const ParameterShards &shards);

/// ZeRO-3's gathered working set: the root unit's parameters and two
/// gathered blocks (the current and the prefetched next) with their
/// unsharded gradients; under ep the rank's E/ep experts, and only when an
/// expert-data-parallel group shards them. Zero unless zero = 3 and dp·cp
/// > 1.
double zero3GatheredBytes(const Cluster &cluster, const ModelInfo &model,
                          const LocalProfile &profile, const Candidate &plan,
                          const ParameterShards &shards);

/// The fixed bytes of one GPU: the framework's reserve
/// (Cluster::reservedBytes) and the communication buffers of every process
/// group of more than one rank (tp, dp×cp, cp, pp and its embedding group,
/// ep, expert-data-parallel).
double fixedBytes(const Cluster &cluster, const Candidate &plan,
                  const ParameterShards &shards);

//===----------------------------------------------------------------------===//
// Process groups across nodes
//===----------------------------------------------------------------------===//

/// Whether a process group of `size` ranks spaced `stride` ranks apart
/// (the mesh is pp, dp, cp, tp with tp fastest, so a group's members are
/// base + j·stride, j < size, inside consecutive blocks of stride·size
/// ranks) crosses a node boundary somewhere in a world of `world` ranks on
/// nodes of `perNode`. With size ≥ 2 and more than one node, some group
/// does iff its block (stride·size ranks) is larger than a node or does not
/// divide it: the block that straddles the first node boundary then holds
/// a member on each side in its first or last group.
bool groupCrossesNodes(int64_t size, int64_t stride, int64_t world,
                       int64_t perNode);

/// The groups of `plan` whose traffic is meant to stay inside a node and
/// that cross node boundaries on `cluster`: the tensor-parallel group
/// ("tp", or "tp+sp" with sequence parallelism; tp consecutive ranks), the
/// context-parallel group ("cp": cp ranks tp apart) and the expert-parallel
/// group ("ep": ep/tp ranks tp apart outside tp, or ep consecutive ranks
/// when it folds over tp). One line per group, e.g. "tp group of 16
/// consecutive ranks spans nodes of 8 GPUs"; empty when none does (always
/// on a one-node cluster). Data-parallel and pipeline groups are expected
/// to cross nodes and are not listed.
std::vector<std::string> crossNodeGroups(const Cluster &cluster,
                                         const Candidate &plan);

} // namespace autoshard::planner

#endif // AUTOSHARD_PLANNER_COSTTERMS_H
