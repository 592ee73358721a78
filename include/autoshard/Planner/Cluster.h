//===- Cluster.h - Cluster descriptions for the planner ---------*- C++ -*-===//
//
// The machine a plan is scored on: GPUs per node, peak FLOP/s, HBM, links
// and the achievable efficiencies of the software stack. The JSON format is
// documented in docs/cluster-format.md; configs/clusters/ holds examples.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_PLANNER_CLUSTER_H
#define AUTOSHARD_PLANNER_CLUSTER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace autoshard::planner {

/// The collectives the cost model knows, by kind (indexes
/// Cluster::collectiveBandwidthScale).
enum class CollectiveKind {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  P2P
};
inline constexpr size_t kNumCollectiveKinds = 5;

/// The collective's name as cluster files and reports spell it
/// ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p").
llvm::StringRef getCollectiveKindName(CollectiveKind kind);

/// One link class (NVLink inside a node, the NIC across nodes), per GPU.
struct Link {
  /// Unidirectional bandwidth per GPU, bytes/s (algorithms.md §6.3: compare
  /// busbw against it, not the bidirectional figure).
  double bandwidth = 0;
  /// Per-step latency α of the α-β model, seconds.
  double latency = 0;
  /// Achievable fraction of `bandwidth` (nccl-tests busbw / link rate).
  double efficiency = 1;
};

/// The largest `host.sync_slowdown` a cluster file may give (kernels 11x
/// slower): more is a broken measurement or a typo, not a machine.
constexpr double kMaxSyncSlowdown = 10;
/// The largest `host.sync_latency_us` a cluster file may give: 100 ms, a
/// scheduler's time slice many times over; more is a broken fit.
constexpr double kMaxSyncLatencyUs = 1e5;

/// A homogeneous GPU cluster. All units SI: FLOP/s, bytes, bytes/s, s.
struct Cluster {
  std::string name;
  int64_t gpusPerNode = 8;
  /// Dense bf16 peak per GPU, FLOP/s (the MFU denominator).
  double peakFlops = 0;
  /// HBM capacity per GPU, bytes, and bandwidth, bytes/s.
  double hbmBytes = 0;
  double hbmBandwidth = 0;
  /// Bytes per GPU the plan may not use (CUDA context, NCCL buffers,
  /// allocator fragmentation).
  double reservedBytes = 0;
  /// Fraction of the dynamic (activation and transient) bytes that the
  /// framework's allocator loses to fragmentation and working space on top
  /// of the plan's own peak (PyTorch's caching allocator holds freed blocks
  /// that cannot serve larger requests; docs/planner.md, "Memory").
  double fragmentation = 0;
  /// Bytes per element of the framework's gradient buffer (2: the ZeRO
  /// paper's bf16 gradients; 4: Megatron's fp32 `main_grad`, which bf16
  /// training accumulates and reduces in). Also the element size of the
  /// data-parallel gradient reduction.
  double gradBytes = 2;
  /// Bytes per parameter of the optimizer states (JSON
  /// `memory.optimizer_state_bytes`, default 8: AdamW's fp32 m and v), and
  /// of the fp32 master copy of the weights (`memory.master_weight_bytes`;
  /// negative, the default when absent: 4 when the IR's element size is
  /// below 4, else 0, as mixed-precision training keeps it). With bf16
  /// weights and fp32 gradients (gradBytes 4) that is Megatron's 2 + 4 + 4
  /// + 8 = 18 bytes per parameter; with bf16 gradients the ZeRO paper's 16.
  double optimizerStateBytes = 8;
  double masterWeightBytes = -1;
  /// Bytes per element that the framework keeps for each dropout's mask
  /// until the backward (JSON `memory.dropout_mask_bytes`): 0 for
  /// autoshard, which regenerates the mask from a counter-based RNG in the
  /// backward (tfm.dropout_grad); 1 for PyTorch / Megatron, which keep a
  /// bool mask per element. Charged per kept layer for the block's hidden
  /// dropouts and, with unfused attention, per score element.
  double dropoutMaskBytes = 0;
  /// Where the gradients live (JSON `memory.grad_buffer`). "persistent"
  /// (default; PyTorch DDP, Megatron's `main_grad`): a gradient buffer of
  /// gradBytes per parameter allocated for the whole run, counted in the
  /// model states. "frame" (autoshard's static memory plan, rt-plan-memory):
  /// a parameter's gradient is a frame buffer live from its backward to the
  /// optimizer; the planner composes the compiled step's peak from the
  /// one-block programs' memory plans per phase (framePeak) and counts the
  /// gradients live there.
  bool gradBufferInFrame = false;
  /// Bytes of communication buffers per process group (communicator) of
  /// more than one rank that a rank belongs to (NCCL's per-channel, per-peer
  /// staging buffers), counted once per tp, dp (x cp), cp and pp group and
  /// once more for the embedding group of a pipeline.
  double commBufferBytesPerGroup = 0;
  /// Fixed latency of one collective (launch and synchronisation) on top of
  /// its per-step α, seconds (NCCL's `baseLat`).
  double collectiveLatency = 0;
  /// Per collective kind, a factor on the bandwidth of every link (JSON
  /// `collective_bandwidth_scale`: {"all_reduce": x, "all_gather": ...,
  /// "reduce_scatter", "all_to_all", "p2p"}; default 1). The ring model
  /// moves the same bytes per kind on any software; what differs is how
  /// fast each kind's implementation moves them: on CPU ranks over shared
  /// memory a reduce-scatter also reads and adds the partial sums (memory
  /// traffic of its own), while a send/recv pair copies once. Indexed by
  /// CollectiveKind; shard-calibrate fits it per kind.
  std::array<double, kNumCollectiveKinds> collectiveBandwidthScale = {1, 1, 1,
                                                                      1, 1};
  Link intraNode;
  /// Links between nodes; a copy of intraNode when `singleNode`.
  Link interNode;
  /// The description has no `inter_node`: one node of gpusPerNode devices.
  bool singleNode = false;
  /// Achievable fraction of peak FLOP/s for GEMMs (matmul, matmul_wgrad)
  /// and for the fused attention kernels; of HBM bandwidth for
  /// memory-bound ops (norms, activations, dropout, optimizer).
  double gemmEfficiency = 0.75;
  double attentionEfficiency = 0.5;
  double memoryEfficiency = 0.7;
  /// Per-kernel efficiencies of memory-bound ops (JSON
  /// `efficiency.memory_ops`, {"<runtime kernel name>": efficiency}): the
  /// achieved bandwidth of that kernel over the HBM bandwidth, used instead
  /// of `memoryEfficiency` for the ops the runtime runs as that kernel
  /// (memoryEfficiencyOf). May exceed 1: shard-calibrate measures each
  /// kernel on the operand sizes of a plan on this machine, which may stay
  /// in cache where the bandwidth probe does not. Empty: none.
  std::map<std::string, double, std::less<>> memoryOpEfficiency;
  /// Bytes of HBM traffic per attention-score element (B·N·Sq·Sk, the full
  /// square) of an unfused attention forward that materialises the scores
  /// (GEMM write, softmax, dropout, GEMM read); the backward moves twice as
  /// much. 0 for fused (flash) attention, which never stores them.
  double attentionScoreBytes = 0;
  /// Seconds per attention-score element (B·N·Sq·Sk as TfmCost counts it)
  /// of a fused attention kernel, beside its FLOPs at attentionEfficiency:
  /// the softmax's exp, max and sum per score (forward) and the recomputed
  /// probabilities and dS (backward, `Grad`), which do not shrink with the
  /// head dimension (JSON `efficiency.attention_score_ns` and
  /// `attention_grad_score_ns`; shard-calibrate fits them over head dims
  /// 16, 32 and 64). 0: FLOPs only (the GPU files).
  double attentionScoreTime = 0;
  double attentionGradScoreTime = 0;
  /// Seconds per tile a blocked (FlashAttention-2) kernel visits, forward
  /// and backward (`Grad`): a tile is one (batch, head, query block, key
  /// block) of attentionQueryBlock x attentionKeyBlock scores, and each
  /// costs its GEMM calls' setup and the online softmax's per-row
  /// bookkeeping whatever its size, so many small tiles (the cp ring's
  /// blocks, short sequences) cost more than their FLOPs and scores (JSON
  /// `efficiency.attention_tile_us`, `attention_grad_tile_us`;
  /// shard-calibrate fits them over two sequence lengths). 0: no tile term.
  double attentionTileTime = 0;
  double attentionGradTileTime = 0;
  /// The kernel's tile, queries x keys (JSON
  /// `efficiency.attention_query_block`, `attention_key_block`; the CPU
  /// backend's 64 x 512, FlashAttention-2's 128 x 128 by default).
  double attentionQueryBlock = 128, attentionKeyBlock = 128;
  /// Extra fixed time per GEMM, seconds (launch, setup).
  double gemmOverhead = 0;
  /// Shape-dependent GEMM efficiency (gemmShapeEfficiency in Planner.h):
  /// streaming multiprocessors per GPU (0: no wave quantisation), the
  /// output tiles [m, n] the GEMM library may pick (the best-fitting one is
  /// used), and the fixed cost of one output tile's prologue and epilogue
  /// in units of the reduction dimension k (elements): a tile takes time
  /// proportional to k + gemmK0, so a GEMM reaches k / (k + gemmK0) of its
  /// large-k efficiency. `gemmEfficiency` is the efficiency of a GEMM
  /// without quantisation loss at k >> gemmK0.
  int64_t sms = 0;
  std::vector<std::pair<int64_t, int64_t>> gemmTiles = {{128, 128}};
  double gemmK0 = 0;
  /// Fixed device-side cost per kernel, seconds (JSON
  /// `gpu.kernel_fixed_us`, or the older `efficiency.kernel_overhead_us`):
  /// the launch of a kernel behind the previous one on the same stream and
  /// the drain of its last wave, added to every kernel's roofline time.
  double kernelOverhead = 0;
  /// Host-side cost of issuing one kernel or collective, seconds (JSON
  /// `host.op_overhead_us`): the framework's dispatch (PyTorch's Python,
  /// autograd and ATen layers) and the driver's launch call. The host runs
  /// ahead of the device, so a function (a block's forward or backward)
  /// takes max(its device time, its kernel count x this): programs of many
  /// small kernels become host-bound.
  double hostOpOverhead = 0;
  /// Host-side time per training step outside the kernels, seconds (JSON
  /// `host.step_overhead_ms`: the step loop, the loss / grad-norm read-back,
  /// the optimizer's launches), added to the optimizer's time.
  double hostStepOverhead = 0;
  /// How much slower a rank's kernels run in a program whose ranks
  /// synchronise than alone, as a fraction (JSON `host.sync_slowdown`,
  /// >= 0): ranks that time-share cores reach each collective at different
  /// times, and the first ones spin, yield or sleep until the last one has
  /// been scheduled, which costs the cores part of the time the probes'
  /// free-running kernels get. shard-calibrate measures it (sweeps over its
  /// kernel probes with and without collectives, CpuProbes.cpp); every
  /// kernel of a job of more than one rank takes (1 + this) of its roofline
  /// time (kernelTime; forWorld sets it to 0 for a job of one rank). 0 where
  /// ranks have cores or devices of their own; at most kMaxSyncSlowdown.
  double syncSlowdown = 0;
  /// Time each collective and each send/receive of a job of more than one
  /// rank costs on top of its α-β time where ranks time-share cores,
  /// seconds (JSON `host.sync_latency_us`, >= 0, at most
  /// kMaxSyncLatencyUs): the wait for the peers the scheduler has not run
  /// yet, which the probes, whose ranks all spin at the collective, do
  /// not see (measured: about 0.25 ms per collective with 8 ranks on 2
  /// cores). python/autoshard/calibration.py fits it together with
  /// syncSlowdown to two measured reference steps (dp=R and
  /// dp=R/2,tp=2,sp=1); collectiveTime adds it; forWorld sets it to 0 for
  /// a job of one rank.
  double syncLatency = 0;
  /// Where ranks time-share cores (`sharesNode`): the time from a
  /// pipeline send to its waiting receiver running again while the node's
  /// cores are busy, seconds (JSON `host.wakeup_latency_us`, >= 0, at most
  /// kMaxSyncLatencyUs): the receiver polls and runs only when the
  /// scheduler gives it a core (measured: about 2 ms median with 8 ranks
  /// on 2 cores, 10 us with 2). shard-calibrate's wake-up probe measures
  /// it (CpuProbes.cpp); a simulated pipeline hop takes at least this.
  /// forWorld sets it to 0 for a job of one rank.
  double wakeupLatency = 0;
  /// Where ranks time-share cores: how much faster a rank's kernels run
  /// while half the node's ranks wait (`halfWaitingSpeedup`, JSON
  /// `host.speedup_half_waiting`) and while all others wait
  /// (`othersWaitingSpeedup`, `host.speedup_others_waiting`) than when
  /// every rank runs; >= 1 each (1: nothing shared; forWorld sets both to 1
  /// for one rank). shard-calibrate's relay probe measures them; the
  /// pipeline simulation's processor sharing follows (pipelineSharing in
  /// CostTerms.h).
  double halfWaitingSpeedup = 1, othersWaitingSpeedup = 1;
  /// Where ranks time-share cores: the cores the runtime pinned the node's
  /// ranks to (JSON `host.pinned_cores`, a whole number, 0..4096; 0: not
  /// pinned, the scheduler places them). shard-run --bind-cores auto pins
  /// oversubscribed ranks in blocks of the mesh order with pp innermost
  /// (runtime/cpu/Placement.h), and shard-calibrate writes the count when
  /// it pinned its own ranks so. Then the simulated pipeline shares each
  /// core among the ranks pinned to it (pipeline::ProcessorSharing::coreOf)
  /// instead of the node among all (halfWaitingSpeedup and
  /// othersWaitingSpeedup do not apply).
  int64_t pinnedCores = 0;
  /// Tensor-parallel communication overlap: 0 (Megatron 2021, blocking
  /// all-reduces) to 1 (Transformer Engine's chunked TP overlap, which
  /// still exposes one of tp chunks: tpOverlapFraction).
  double tpOverlap = 0;
  /// Data-parallel communication overlap (0 = none: one blocking collective
  /// over the whole gradient buffer after the step's last backward). When
  /// positive, gradients are reduced in buckets of `dpBucketParams` (or
  /// max(40M, 1M * group) parameters, Megatron-Core's default, when 0)
  /// while the last microbatch's backward runs (this fraction of its time
  /// can hide them; the last bucket is always exposed), ZeRO-1/2 parameter
  /// all-gathers hide behind the next step's first forward (first bucket
  /// exposed), and ZeRO-3 per-layer gathers are prefetched one layer ahead.
  double dpOverlap = 0;
  double dpBucketParams = 0;
  /// Fraction of pipeline p2p time hidden behind compute.
  double p2pOverlap = 0;
  /// How the software the file describes recomputes activations (JSON
  /// `recompute.full`, `recompute.selective`). Default ("compiled"):
  /// autoshard's tfm-recompute, read off the compiled programs.
  /// `fullRecomputeRerunsForward` ("whole_layer", Megatron-LM's
  /// `--recompute-granularity full`, which checkpoints whole layers): full
  /// recomputation re-runs the whole compiled block forward with its TP
  /// collectives, not only `@B_recompute_full` (which skips the MLP
  /// down-projection, the last residual add and their collective).
  /// `selectiveRecomputesAttention` ("attention", Megatron's selective of
  /// Korthikanti et al. 2022): selective recomputation drops the attention
  /// outputs and scores and re-runs the attention forward (the analytic
  /// model), instead of tfm-recompute's norms and activations.
  bool fullRecomputeRerunsForward = false;
  bool selectiveRecomputesAttention = false;
  /// How the software sums a step's gradients over microbatches (JSON
  /// `grad_accumulation`). Default ("separate"): autoshard's compiled
  /// program adds each later microbatch's parameter gradients into the sum
  /// and scales it once (add and scale kernels per tensor,
  /// gradientAccumulationTime). `gradAccumulationFused` ("fused",
  /// Megatron-LM's gradient_accumulation_fusion: the weight-gradient GEMM
  /// accumulates into the fp32 main_grad buffer itself): no extra kernels
  /// (the GPU files).
  bool gradAccumulationFused = false;
  /// When the software reduce-scatters the ZeRO-2/3 gradients of a step of
  /// several microbatches (JSON `zero.grad_reduce`). Default
  /// ("last_microbatch"): autoshard's compiled program accumulates every
  /// microbatch's gradients unsharded and reduce-scatters the sums once,
  /// in the last microbatch's backward (ZeRO-3 still gathers the weights
  /// for every microbatch). `zeroReducesEveryMicrobatch`
  /// ("every_microbatch"; DeepSpeed ZeRO-2's per-micro-step reduction of
  /// the partitioned gradients, FSDP without no_sync): every microbatch's
  /// backward ends with the reduce-scatter (the GPU files).
  bool zeroReducesEveryMicrobatch = false;
  /// The devices of a node time-share its resources (JSON
  /// `gpu.shares_node`: CPU ranks on the cores of one machine): the gpu
  /// figures and the intra-node bandwidth are one rank's share when all
  /// gpusPerNode ranks run, as shard-calibrate measures them, and a job
  /// with fewer ranks on the node gives each a larger share (forWorld).
  bool sharesNode = false;
  /// With sharesNode: the cluster as measured with R < gpusPerNode ranks on
  /// the node (JSON `by_ranks_per_node`, written by `shard-calibrate
  /// --profile`), keyed by R. Threads per rank, cache and memory-bus share
  /// and the MPI transport all change with R, so measured figures replace
  /// the linear share of forWorld where they exist.
  std::map<int64_t, std::shared_ptr<const Cluster>> rankProfiles;
  /// With sharesNode, in a job of more than one rank (forWorld): the node
  /// as one rank running alone sees it (forWorld(cluster, 1)). The
  /// optimizer step runs at this speed (optimizerTime): a rank reaches it
  /// when its last gradient collective completes, while its peers are
  /// still blocked in theirs, so it does not share the cores with their
  /// kernels as shard-calibrate's all-ranks-at-once probes do. Traced on
  /// 2 cores with dp=8: AdamW took 0.54 ms per rank in the step, 0.45 ms
  /// alone, 3.7 ms with 8 ranks running it at once. Null otherwise.
  std::shared_ptr<const Cluster> alone;

  /// The HBM efficiency of memory-bound op `opName` (an MLIR op name, e.g.
  /// "tfm.swiglu"): the entry of memoryOpEfficiency for the kernel the
  /// runtime runs it as (runtimeKernelName), else memoryEfficiency.
  double memoryEfficiencyOf(llvm::StringRef opName) const;
};

/// The name of the runtime kernel that runs MLIR op `opName`, as rt-lower
/// names it (RtLower.cpp, getKernelName / lowerDistOp): a tfm op's name
/// without the dialect prefix ("tfm.swiglu" -> "swiglu"); any other op
/// (the `dist.*` communication kernels) keeps its full name.
llvm::StringRef runtimeKernelName(llvm::StringRef opName);

/// The cluster as a job of `world` ranks sees it: with sharesNode, R =
/// min(world, gpusPerNode) ranks share a node. The profile measured with R
/// ranks (rankProfiles) is used as it is; without one, the smallest
/// measured rank count M > R (a profile, else gpusPerNode) is scaled: each
/// rank gets M / R times its peak FLOP/s, memory bandwidth, memory and
/// intra-node bandwidth (latencies unchanged), and a scaled profile's name
/// ends with " scaled to R ranks". Otherwise `cluster` itself. A job of one
/// rank never synchronises: its syncSlowdown is 0 in every case. With
/// sharesNode and more than one rank, `alone` is forWorld(cluster, 1).
Cluster forWorld(const Cluster &cluster, int64_t world);

/// Parses and validates a cluster description (docs/cluster-format.md).
/// `source` names the file in error messages, which name the offending field
/// and its value, e.g. "dgx.json: field 'gpu.peak_bf16_tflops' must be a
/// positive number, got -1".
llvm::Expected<Cluster> parseCluster(llvm::StringRef json,
                                     llvm::StringRef source);

/// Reads `path` and parses it with parseCluster.
llvm::Expected<Cluster> loadCluster(llvm::StringRef path);

} // namespace autoshard::planner

#endif // AUTOSHARD_PLANNER_CLUSTER_H
