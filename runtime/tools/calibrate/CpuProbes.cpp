//===- CpuProbes.cpp - shard-calibrate's probes of the CPU backend --------===//
//
// The runtime's CPU kernels and MPI communicator, every rank of the job
// running them at once (N ranks share the node as a plan's ranks do):
//
// * GEMMs (cpu::matmul, f32) over a grid of (m, n, k): the best rate per
//   rank is `gpu.peak_bf16_tflops`; `efficiency.gemm`,
//   `efficiency.gemm_k0` and `efficiency.gemm_overhead_us` are fitted to
//   the grid with the planner's model (n down to 32: Mixtral tiny's K/V
//   projections);
// * a memory-bound kernel (cpu::add) on 4 MiB operands: `gpu.hbm_tb_per_s`
//   (bytes moved / time), and on one element, bound by the CPU backend: the
//   fixed cost per kernel (`gpu.kernel_fixed_us`);
// * every memory-bound kernel of the models this machine trains (norms,
//   activations, elementwise, RoPE, dropout, embeddings, loss, MoE routing,
//   optimizer), bound by the CPU backend as the executor binds it, on one
//   microbatch of their shapes: each one's achieved bandwidth (the bytes
//   the planner counts for it) over add's, `efficiency.memory_ops`, and the
//   median of layer_norm(_grad), gelu(_grad) and add's, `efficiency.memory`;
// * causal attention (cpu::attention, cpu::attentionGrad) at head dims 16,
//   32 and 64, each at sequence 64 (batch 2) and 32 (batch 8: the same
//   scores in four times the tiles): `efficiency.attention` against peak
//   and the seconds per score element and per tile of each direction
//   (fitAttention);
// * every collective over every group size 2, 4, ... up to N at 4 KiB and
//   1 MiB, and a send/recv pair: the planner's ring model (Calibrate.h);
// * the share of the cores a program whose ranks synchronise loses
//   (`host.sync_slowdown`, measureSyncSweeps): sweeps over the kernel probes
//   with and without blocking collectives between them.
//
// All of them are timed in interleaved repeats (Schedule, Calibrate.h):
// each repeat times every probe once, so a drift of the machine's speed
// moves all figures of a repeat alike; `measured.drift` is the slowest over
// the fastest repeat of the bandwidth add.
//
//===----------------------------------------------------------------------===//

#include "Calibrate.h"

#include "autoshard/runtime/CpuBackend.h"
#include "autoshard/runtime/KernelChecks.h"
#include "autoshard/runtime/cpu/Attention.h"
#include "autoshard/runtime/cpu/Elementwise.h"
#include "autoshard/runtime/cpu/Matmul.h"
#include "autoshard/runtime/cpu/Placement.h"
#include "autoshard/runtime/cpu/Threads.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace autoshard::runtime::calibrate {

namespace {

using checks::typeOf;

TensorType f32(std::vector<int64_t> shape) {
  return typeOf(DType::F32, std::move(shape));
}

TensorType i32(std::vector<int64_t> shape) {
  return typeOf(DType::I32, std::move(shape));
}

/// A scalar (rank 0).
TensorType scalarOf(DType dtype) { return typeOf(dtype, {}); }

/// One memory-bound kernel bound for a probe and the bytes the planner
/// counts for it.
struct MemoryProbe {
  std::string name;
  std::unique_ptr<ProbeOp> op;
  double bytes = 0;
};

/// Writes `values` to operand `index` of `op`.
template <typename T>
void writeValues(ProbeOp &op, size_t index, const std::vector<T> &values) {
  op.write(index, values.data(), int64_t(values.size() * sizeof(T)));
}

/// Every non-GEMM, non-attention kernel of the CPU backend that the planner
/// costs as memory-bound (TfmCost's RooflineKind::Memory) and the models of
/// configs/models run (nanoGPT, GPT-2, Llama, Mixtral tiny), their parallel
/// plans' included (microbatch slices, vocab-parallel embedding and loss,
/// context-parallel rope, dropout and attention merge), on one
/// microbatch of their shapes: activations [batch 16, seq 64, hidden 128]
/// f32 (512 KiB), the MLP's [16, 64, 256], 4 heads of 32, a vocabulary of
/// 65, 4 experts with top-2 and the dropless capacity (seq), the optimizer
/// on 1 MiB tensors. `bytes` is what TfmCost.cpp counts: every operand read
/// and result written once, but for (vocab_)embedding (ids + 2 x out),
/// position_embedding and microbatch (2 x out) and moe_dispatch (2 x x x
/// top-k). Integer
/// operands hold valid ids; the others 0x3C bytes (ProbeOp).
std::vector<MemoryProbe> memoryProbes(Backend &backend) {
  const int64_t B = 16, S = 64, H = 128, F = 256, heads = 4, vocab = 65,
                experts = 4, topK = 2, optimizer = int64_t(1) << 18;
  const std::vector<int64_t> act = {B, S, H};
  std::vector<MemoryProbe> probes;
  // Binds `name`; `bytes` 0: ioBytes.
  auto add = [&](const char *name, AttrMap attrs, std::vector<TensorType> args,
                 std::vector<TensorType> results,
                 double bytes = 0) -> ProbeOp & {
    MemoryProbe p;
    p.name = name;
    p.op = std::make_unique<ProbeOp>(backend, name, std::move(attrs),
                                     std::move(args), std::move(results));
    p.bytes = bytes > 0 ? bytes : p.op->ioBytes();
    probes.push_back(std::move(p));
    return *probes.back().op;
  };
  auto attrs =
      [](std::initializer_list<std::pair<const char *, AttrValue>> list) {
        AttrMap map;
        for (const auto &[name, value] : list)
          map.set(name, value);
        return map;
      };
  // Token ids, labels and expert ids: a spread of valid values.
  std::vector<int32_t> ids(B * S), expertIds(B * S * topK);
  for (int64_t t = 0; t < B * S; ++t) {
    ids[t] = int32_t((t * 7) % vocab);
    // Distinct experts per token, each expert taking S * topK / experts
    // tokens of every sequence (balanced, within the capacity).
    for (int64_t j = 0; j < topK; ++j)
      expertIds[t * topK + j] = int32_t((t % S + j) % experts);
  }
  // Router logits with a spread (top-k picks differ per token).
  std::vector<float> logits(B * S * experts);
  for (size_t i = 0; i < logits.size(); ++i)
    logits[i] = float((i * 37) % 101) / 50.0f - 1.0f;
  const std::vector<float> unit = {1.0f};
  const TensorType x = f32(act), ffn = f32({B, S, F}), row = f32({H});
  const TensorType i64 = scalarOf(DType::I64), f32s = scalarOf(DType::F32);

  add("add", {}, {x, x}, {x});
  add("sub", {}, {x, x}, {x});
  add("mul", {}, {x, x}, {x});
  add("scale", attrs({{"factor", 0.5}}), {x}, {x});
  add("reduce_sum", attrs({{"dims", std::vector<int64_t>{0, 1}}}), {x}, {row});
  add("broadcast", attrs({{"dims", std::vector<int64_t>{0, 1}}}), {row}, {x});
  AttrMap eps = attrs({{"epsilon", 1e-5}});
  add("layer_norm", eps, {x, row, row}, {x});
  add("layer_norm_grad", eps, {x, x, row}, {x, row, row});
  add("rms_norm", eps, {x, row}, {x});
  add("rms_norm_grad", eps, {x, x, row}, {x, row});
  AttrMap tanh = attrs({{"tanh_approx", true}});
  add("gelu", tanh, {ffn}, {ffn});
  add("gelu_grad", tanh, {ffn, ffn}, {ffn});
  add("silu", {}, {ffn}, {ffn});
  add("silu_grad", {}, {ffn, ffn}, {ffn});
  add("swiglu", {}, {ffn, ffn}, {ffn});
  add("swiglu_grad", {}, {ffn, ffn, ffn}, {ffn, ffn});
  const TensorType qk = f32({B, S, heads, H / heads});
  AttrMap theta = attrs({{"theta", 10000.0}});
  add("rope", theta, {qk}, {qk});
  add("rope_grad", theta, {qk}, {qk});
  AttrMap drop = attrs({{"rate", 0.1}, {"site", int64_t(0)}});
  const std::vector<int64_t> stepOne = {1}, layerZero = {0};
  for (const char *name : {"dropout", "dropout_grad"}) {
    ProbeOp &op = add(name, drop, {x, i64, i64}, {x});
    writeValues(op, 1, stepOne);
    writeValues(op, 2, layerZero);
  }
  const TensorType tokens = i32({B, S}), table = f32({vocab, H});
  writeValues(add("embedding", {}, {tokens, table}, {x},
                  tokens.bytes() + 2.0 * x.bytes()),
              0, ids);
  writeValues(add("embedding_grad", attrs({{"num_embeddings", vocab}}),
                  {tokens, x}, {table}),
              0, ids);
  const TensorType positions = f32({S, H});
  add("position_embedding", attrs({{"seq_len", S}}), {positions}, {positions},
      2.0 * positions.bytes());
  add("position_embedding_grad", attrs({{"num_positions", S}}), {x},
      {positions});
  const TensorType scores = f32({B, S, vocab});
  AttrMap vocabSize = attrs({{"vocab_size", vocab}});
  writeValues(add("cross_entropy", vocabSize, {scores, tokens}, {f32s}), 1,
              ids);
  ProbeOp &ceGrad =
      add("cross_entropy_grad", vocabSize, {f32s, scores, tokens}, {scores});
  writeValues(ceGrad, 0, unit);
  writeValues(ceGrad, 2, ids);
  const TensorType router = f32({B, S, experts}), gates = f32({B, S, topK}),
                   choice = i32({B, S, topK}), buffer = f32({experts, B, S, H});
  ProbeOp &route =
      add("moe_router", attrs({{"top_k", topK}, {"renormalize", true}}),
          {router}, {gates, choice});
  writeValues(route, 0, logits);
  ProbeOp &routeGrad = add("moe_router_grad", attrs({{"renormalize", true}}),
                           {gates, router, choice}, {router});
  writeValues(routeGrad, 1, logits);
  writeValues(routeGrad, 2, expertIds);
  ProbeOp &aux = add("moe_aux_loss", {}, {router, choice}, {f32s});
  writeValues(aux, 0, logits);
  writeValues(aux, 1, expertIds);
  ProbeOp &auxGrad =
      add("moe_aux_loss_grad", {}, {f32s, router, choice}, {router});
  writeValues(auxGrad, 0, unit);
  writeValues(auxGrad, 1, logits);
  writeValues(auxGrad, 2, expertIds);
  writeValues(
      add("moe_dispatch",
          attrs(
              {{"num_experts", experts}, {"capacity", S}, {"dropless", true}}),
          {x, choice}, {buffer}, 2.0 * x.bytes() * double(topK)),
      1, expertIds);
  writeValues(
      add("moe_dispatch_grad", attrs({{"capacity", S}}), {buffer, choice}, {x}),
      1, expertIds);
  writeValues(add("moe_combine", {}, {buffer, gates, choice}, {x}), 2,
              expertIds);
  writeValues(
      add("moe_combine_grad", {}, {x, buffer, gates, choice}, {buffer, gates}),
      3, expertIds);
  // The kernels of parallel plans: gradient accumulation's microbatch
  // slices, the vocabulary split over 2 tensor-parallel ranks (33 of the
  // padded 66 classes, shard 0), sequence blocks of 2 context-parallel
  // ranks (half the sequence, shard 0) and ring attention's merge.
  const int64_t zero = 0;
  const std::vector<int64_t> shardZero = {zero};
  const TensorType batches = i32({2 * B, S});
  std::vector<int32_t> twoBatches(2 * B * S);
  for (size_t t = 0; t < twoBatches.size(); ++t)
    twoBatches[t] = ids[t % ids.size()];
  writeValues(add("microbatch", attrs({{"index", zero}, {"count", int64_t(2)}}),
                  {batches}, {tokens}, 2.0 * tokens.bytes()),
              0, twoBatches);
  const int64_t localVocab = (vocab + 1) / 2;
  const TensorType localTable = f32({localVocab, H}),
                   localScores = f32({B, S, localVocab}),
                   perToken = f32({B, S}), stats = f32({B, S, 2});
  ProbeOp &vocabEmbed = add("vocab_embedding", {}, {tokens, localTable, i64},
                            {x}, tokens.bytes() + 2.0 * x.bytes());
  writeValues(vocabEmbed, 0, ids);
  writeValues(vocabEmbed, 2, shardZero);
  ProbeOp &vocabEmbedGrad =
      add("vocab_embedding_grad", attrs({{"num_embeddings", localVocab}}),
          {tokens, x, i64}, {localTable});
  writeValues(vocabEmbedGrad, 0, ids);
  writeValues(vocabEmbedGrad, 2, shardZero);
  writeValues(add("vocab_ce_max", vocabSize, {localScores, i64}, {perToken}), 1,
              shardZero);
  ProbeOp &ceStats = add("vocab_ce_stats", vocabSize,
                         {localScores, tokens, perToken, i64}, {stats});
  writeValues(ceStats, 1, ids);
  writeValues(ceStats, 3, shardZero);
  add("vocab_ce_loss", attrs({{"num_tokens", B * S}}), {stats, perToken},
      {f32s});
  ProbeOp &vocabGrad = add(
      "vocab_ce_grad", attrs({{"vocab_size", vocab}, {"num_tokens", B * S}}),
      {f32s, localScores, tokens, perToken, stats, i64}, {localScores});
  writeValues(vocabGrad, 0, unit);
  writeValues(vocabGrad, 2, ids);
  writeValues(vocabGrad, 5, shardZero);
  const TensorType block = f32({B, S / 2, heads, H / heads});
  AttrMap ropeLocal = attrs({{"theta", 10000.0}, {"seq_len", S}});
  for (const char *name : {"rope_local", "rope_local_grad"})
    writeValues(add(name, ropeLocal, {block, i64}, {block}), 1, shardZero);
  const TensorType half = f32({B, S / 2, H});
  AttrMap dropLocal = attrs({{"rate", 0.1},
                             {"site", zero},
                             {"global_shape", std::vector<int64_t>{B, S, H}},
                             {"shard_dims", std::vector<int64_t>{1}}});
  for (const char *name : {"dropout_local", "dropout_local_grad"}) {
    ProbeOp &op = add(name, dropLocal, {half, i64, i64, i64}, {half});
    writeValues(op, 1, stepOne);
    writeValues(op, 2, layerZero);
    writeValues(op, 3, shardZero);
  }
  const TensorType lse = f32({B, heads, S});
  add("attention_merge", {}, {qk, lse, qk, lse}, {qk, lse});
  const TensorType quarter = f32({optimizer / 4});
  add("sum_squares", {}, {quarter, quarter, quarter, quarter}, {f32s});
  const TensorType param = f32({optimizer});
  ProbeOp &adamw =
      add("adamw",
          attrs({{"beta1", 0.9},
                 {"beta2", 0.95},
                 {"epsilon", 1e-8},
                 {"weight_decay", 0.1}}),
          {param, param, param, param, f32s, i64, f32s}, {param, param, param});
  const std::vector<float> lr = {1e-3f};
  writeValues(adamw, 4, lr);
  writeValues(adamw, 5, stepOne);
  writeValues(adamw, 6, unit);
  return probes;
}

/// Tiles cpu::attention visits per (batch, head) of a causal seq x seq
/// score matrix: per query block of kAttentionQueryBlock rows, the key
/// blocks of kAttentionKeyBlock up to its last row (planner::attentionTiles
/// with this kernel's blocks, which the planner reads from the output).
double causalAttentionTiles(int64_t seq) {
  double tiles = 0;
  for (int64_t i0 = 0; i0 < seq; i0 += cpu::kAttentionQueryBlock) {
    int64_t cols = std::min(seq, i0 + cpu::kAttentionQueryBlock);
    tiles +=
        double((cols + cpu::kAttentionKeyBlock - 1) / cpu::kAttentionKeyBlock);
  }
  return tiles;
}

} // namespace

int runCpu(const Options &opts, CommWorld &world) {
  // The kernel threads shard-run gives each rank (its cores / local ranks).
  cpu::setKernelThreads(
      cpu::chooseThreadPolicy(0, static_cast<int>(world.localSize())).threads);
  // Placed as shard-run places a data-parallel plan's ranks (blocks of
  // consecutive ranks, which the collective probes group) and a pp=2
  // plan's replicas (rank 2i and 2i + 1, which the relay probes pair).
  const cpu::CorePlacement placement = cpu::placeRank(
      opts.bindCores, world.rank(), world.localSize(), world.size(), 0);
  std::unique_ptr<Communicator> all = world.split(0, world.rank());
  Timer timer(*all, opts.repeats);
  const int64_t ranks = world.size();
  const bool root = world.rank() == 0;
  nlohmann::json measured;

  // Every probe is registered on one schedule and timed in interleaved
  // repeats (each repeat times every probe once, in this order: the GEMM
  // grid, the bandwidth add, the memory-bound kernels, attention, the fixed
  // cost, the collectives), each figure the median of its probe's repeats:
  // a drift of the machine's speed moves a whole repeat, not some figures.
  Schedule schedule(timer);
  CpuBackend backend;

  // GEMM grid.
  struct GemmProbe {
    cpu::MatmulShape shape;
    std::vector<float> lhs, rhs, out;
    size_t index;
  };
  std::vector<std::unique_ptr<GemmProbe>> gemmProbes;
  for (int64_t m : {64, 256, 1024})
    for (int64_t n : {32, 128, 512})
      for (int64_t k : {32, 128, 512}) {
        auto g = std::make_unique<GemmProbe>();
        g->shape.m = m, g->shape.n = n, g->shape.k = k;
        g->lhs.assign(m * k, 0.5f), g->rhs.assign(k * n, 0.25f);
        g->out.resize(m * n);
        GemmProbe *p = g.get();
        p->index = schedule.add([p] {
          cpu::matmul(p->lhs.data(), p->rhs.data(), p->out.data(), p->shape);
        });
        gemmProbes.push_back(std::move(g));
      }

  // Memory-bound kernel: bandwidth on 4 MiB operands.
  const int64_t big = int64_t(1) << 20;
  std::vector<float> x(big, 1.0f), y(big, 2.0f), z(big);
  size_t addProbe =
      schedule.add([&] { cpu::add(x.data(), y.data(), z.data(), big, big); });

  // Every memory-bound kernel of the models this machine trains, bound as
  // the executor binds it, on a microbatch of their shapes.
  std::vector<MemoryProbe> probes = memoryProbes(backend);
  std::vector<size_t> memoryIndex;
  for (MemoryProbe &p : probes) {
    ProbeOp *op = p.op.get();
    memoryIndex.push_back(schedule.add([op] { (*op)(); }));
  }

  // Causal attention, forward and backward (the CPU backend's kernels), at
  // head dims 16, 32 and 64: the softmax's work per score does not shrink
  // with the head dim, so one efficiency on FLOPs alone was 1.7x off at 16.
  // Each at two sequence lengths with the same scores: a tile's fixed cost
  // (its GEMM calls, the per-row bookkeeping) made ring attention's 32 x 32
  // blocks 1.6x slower than one 64 x 64 kernel of the same scores.
  struct AttentionProbe {
    cpu::AttentionShape shape;
    std::vector<float> q, k, v, out, lse, dout, dq, dk, dv;
    size_t forward, backward;
  };
  std::vector<std::unique_ptr<AttentionProbe>> attentionProbes;
  for (auto [batch, seq] : {std::pair<int64_t, int64_t>{2, 64}, {8, 32}})
    for (int64_t headDim : {16, 32, 64}) {
      auto a = std::make_unique<AttentionProbe>();
      cpu::AttentionShape &as = a->shape;
      as.batch = batch, as.seqQ = as.seqK = seq, as.heads = as.kvHeads = 4;
      as.headDim = headDim, as.causal = true;
      as.scale = 1.0 / std::sqrt(double(headDim));
      int64_t qkv = as.batch * as.seqQ * as.heads * as.headDim;
      a->q.assign(qkv, 0.1f), a->k.assign(qkv, 0.2f), a->v.assign(qkv, 0.3f);
      a->out.resize(qkv), a->dout.assign(qkv, 0.01f);
      a->dq.resize(qkv), a->dk.resize(qkv), a->dv.resize(qkv);
      a->lse.resize(as.batch * as.heads * as.seqQ);
      AttentionProbe *p = a.get();
      p->forward = schedule.add([p] {
        cpu::attention(p->q.data(), p->k.data(), p->v.data(), p->out.data(),
                       p->lse.data(), p->shape);
      });
      p->backward = schedule.add([p] {
        cpu::attentionGrad(p->dout.data(), p->q.data(), p->k.data(),
                           p->v.data(), p->out.data(), p->lse.data(),
                           p->dq.data(), p->dk.data(), p->dv.data(), p->shape);
      });
      attentionProbes.push_back(std::move(a));
    }

  // The fixed cost: a one-element `add` bound by the CPU backend and called
  // as the executor calls every kernel (its pointer array).
  ProbeOp addOne(backend, "add", {}, {f32({1}), f32({1})}, {f32({1})});
  size_t fixedProbe = schedule.add([&] { addOne(); });

  // Every probe so far runs one kernel: the synchronised sweeps call them.
  const size_t kernelProbes = schedule.size();

  // Collectives over every group size, and send/recv.
  std::vector<std::vector<char>> commBuffers;
  CollectiveProbes collectives(
      world, schedule, {4096.0, 1048576.0}, [&](int64_t n) {
        return static_cast<void *>(commBuffers.emplace_back(n).data());
      });

  schedule.run();
  std::vector<CommPoint> comms = collectives.points();
  std::vector<SyncSweep> syncSweeps =
      measureSyncSweeps(world, timer, schedule, kernelProbes, comms);
  PipelineSharing sharing =
      measurePipelineSharing(world, timer, schedule, kernelProbes);

  // Fixed cost and bandwidth; how much the machine's speed moved during the
  // calibration (the slowest over the fastest repeat of the bandwidth add).
  double fixed = schedule.median(fixedProbe);
  double addTime = schedule.median(addProbe);
  double bandwidth = 3.0 * 4 * big / std::max(1e-12, addTime - fixed);
  double drift = spreadOf(schedule.times(addProbe));
  measured["add_1_element_s"] = fixed;
  measured["add_4mib_s"] = addTime;
  measured["drift"] = drift;
  // Rank 0's; every rank is pinned when one is (same counts on every rank).
  measured["placement"] = cpu::describe(placement);

  // Each memory-bound kernel's achieved bandwidth (the bytes the planner
  // counts for it, TfmCost) over add's is its `efficiency.memory_ops`
  // entry; the median of layer_norm(_grad), gelu(_grad) and add (at most 1)
  // is `efficiency.memory`, the default.
  nlohmann::json opEfficiency = nlohmann::json::object(),
                 opMeasured = nlohmann::json::object();
  std::vector<double> memoryEfficiencies;
  for (size_t i = 0; i < probes.size(); ++i) {
    const MemoryProbe &p = probes[i];
    double t = schedule.median(memoryIndex[i]);
    double efficiency = p.bytes / std::max(1e-12, t - fixed) / bandwidth;
    opEfficiency[p.name] = round2(efficiency);
    opMeasured[p.name] = {{"s", t}, {"bytes", p.bytes}};
    for (const char *name :
         {"layer_norm", "layer_norm_grad", "gelu", "gelu_grad", "add"})
      if (p.name == name)
        memoryEfficiencies.push_back(std::min(1.0, efficiency));
  }
  probes.clear();
  double memoryEfficiency = medianOf(memoryEfficiencies);
  measured["memory_ops"] = opMeasured;

  std::vector<GemmPoint> gemms;
  for (const auto &g : gemmProbes)
    gemms.push_back(
        {g->shape.m, g->shape.n, g->shape.k, schedule.median(g->index)});
  gemmProbes.clear();
  double peak = bestGemmRate(gemms);
  GemmModel model;
  model.peak = peak, model.bandwidth = bandwidth, model.fixed = fixed;
  GemmFit fit = fitGemm(gemms, model);
  measured["gemm"] = gemmJson(gemms);
  measured["gemm_fit_mean_abs_log_error"] = fit.meanAbsLogError;
  if (root)
    warnAtLimit(fit, measured);

  // Attention's FLOPs causal-halved, its score elements (the full square)
  // and its tiles as the planner counts them (TfmCost,
  // planner::attentionTiles with this kernel's blocks): the backward 2.5x
  // the forward's FLOPs.
  std::vector<AttentionPoint> attention;
  nlohmann::json attentionJson = nlohmann::json::array();
  for (const auto &a : attentionProbes) {
    const cpu::AttentionShape &as = a->shape;
    double scores = double(as.batch) * as.heads * as.seqQ * as.seqK;
    double flops = 4.0 * scores * as.headDim / 2;
    double tiles = double(as.batch) * as.heads * causalAttentionTiles(as.seqQ);
    double forward = schedule.median(a->forward);
    double backward = schedule.median(a->backward);
    attention.push_back({flops, scores, tiles, false, forward});
    attention.push_back({2.5 * flops, scores, tiles, true, backward});
    attentionJson.push_back({{"batch", as.batch},
                             {"seq", as.seqQ},
                             {"head_dim", as.headDim},
                             {"forward_s", forward},
                             {"backward_s", backward}});
  }
  AttentionFit attFit = fitAttention(attention, peak, fixed);
  measured["attention"] = attentionJson;
  // A per-score term that fitted negative is dropped (0): with the
  // softmax's cost folded into the efficiency, small head dims come out
  // too cheap. Noisy timings do that; say so, as the GEMM fit does.
  std::vector<std::string> dropped;
  if (attFit.scoreTime <= 0)
    dropped.push_back("attention_score_ns");
  if (attFit.gradScoreTime <= 0)
    dropped.push_back("attention_grad_score_ns");
  if (!dropped.empty()) {
    measured["attention_fit_dropped"] = dropped;
    if (root)
      std::fprintf(stderr,
                   "shard-calibrate: warning: the attention fit dropped %s "
                   "(fitted negative: noisy timings); rerun on an idle "
                   "machine\n",
                   dropped.size() == 2 ? "both per-score terms"
                                       : dropped.front().c_str());
  }

  nlohmann::json cluster;
  cluster["name"] =
      opts.name.empty() ? "this machine (shard-calibrate)" : opts.name;
  cluster["gpus_per_node"] = ranks;
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  double memGiB = double(pages) * double(pageSize) / (1024.0 * 1024 * 1024);
  cluster["gpu"] = {
      {"name", "one rank of " + std::to_string(ranks) +
                   " sharing this machine's cores (measured together)"},
      {"peak_bf16_tflops", round2(peak / 1e12)},
      {"hbm_gib", round2(memGiB / ranks)},
      {"hbm_tb_per_s", round2(bandwidth / 1e12)},
      {"reserved_gib", round2(std::min(0.25, memGiB / ranks / 4))},
      {"kernel_fixed_us", round2(fixed * 1e6)},
      // Measured with every rank running: one rank's share of the node.
      {"shares_node", true}};
  cluster["host"] = {{"op_overhead_us", 0}, {"step_overhead_ms", 0}};
  // The median over the group sizes: the loss is the node's (how its
  // ranks share the cores), about the same for every group size.
  if (!syncSweeps.empty()) {
    nlohmann::json sweeps = nlohmann::json::array();
    std::vector<double> slowdowns;
    for (const SyncSweep &w : syncSweeps) {
      slowdowns.push_back(w.slowdown);
      sweeps.push_back({{"group", w.group},
                        {"syncs", w.syncs},
                        {"base_s", w.baseS},
                        {"synced_s", w.syncedS},
                        {"collective_s", w.collectiveS},
                        {"slowdown", w.slowdown}});
    }
    cluster["host"]["sync_slowdown"] = round2(medianOf(slowdowns));
    measured["sync_sweeps"] = sweeps;
  }
  if (sharing.handoffs > 0) {
    // The mean: a step pays the sum of its hand-offs' latencies.
    cluster["host"]["wakeup_latency_us"] = round2(sharing.wakeupMeanS * 1e6);
    cluster["host"]["speedup_half_waiting"] =
        round2(sharing.halfWaitingSpeedup());
    cluster["host"]["speedup_others_waiting"] =
        round2(sharing.othersWaitingSpeedup());
    measured["pipeline_sharing"] = {{"handoffs", sharing.handoffs},
                                    {"wakeup_mean_s", sharing.wakeupMeanS},
                                    {"wakeup_median_s", sharing.wakeupMedianS},
                                    {"sweep_all_running_s", sharing.allS},
                                    {"sweep_half_running_s", sharing.halfS},
                                    {"sweep_one_running_s", sharing.oneS}};
  }
  // The planner then shares each core among the ranks pinned to it.
  if (placement.pinned)
    cluster["host"]["pinned_cores"] = placement.cores;
  cluster["memory"] = {{"grad_buffer", "frame"}, {"dropout_mask_bytes", 0}};
  cluster["efficiency"] = {
      {"gemm", round2(fit.efficiency)},
      {"gemm_k0", round2(fit.k0)},
      {"gemm_overhead_us", round2(fit.overhead * 1e6)},
      {"attention", round2(attFit.efficiency)},
      {"attention_score_ns", round2(attFit.scoreTime * 1e9)},
      {"attention_grad_score_ns", round2(attFit.gradScoreTime * 1e9)},
      {"attention_tile_us", round2(attFit.tileTime * 1e6)},
      {"attention_grad_tile_us", round2(attFit.gradTileTime * 1e6)},
      {"attention_query_block", cpu::kAttentionQueryBlock},
      {"attention_key_block", cpu::kAttentionKeyBlock},
      {"memory", round2(memoryEfficiency)},
      {"memory_ops", opEfficiency}};
  cluster["overlap"] = {{"tp", 0.0}, {"dp", 0.0}, {"p2p", 0.0}};
  if (!comms.empty()) {
    writeLinkFit(cluster, measured, comms,
                 "the runtime's MPI communicator on this node");
  } else {
    // One rank: nothing to measure; a link the planner never uses.
    cluster["intra_node"] = {{"gb_per_s_per_direction_per_gpu", 1.0},
                             {"latency_us", 0.0},
                             {"efficiency", 1.0}};
  }
  cluster["software"] =
      "written by shard-calibrate (issue 21): the runtime's CPU kernels and "
      "MPI communicator measured with " +
      (ranks == 1 ? std::string("one rank")
                  : std::to_string(ranks) + " ranks running at once") +
      "; values rounded to 2 significant digits";
  cluster["measured"] = measured;
  if (!root)
    return 0;
  if (!opts.profiles.empty())
    cluster["by_ranks_per_node"] = readRankProfiles(opts.profiles, ranks);
  std::string link =
      comms.empty()
          ? "- (one rank)"
          : cluster["intra_node"]["gb_per_s_per_direction_per_gpu"].dump() +
                " GB/s";
  std::string sync =
      syncSweeps.empty()
          ? std::string()
          : ", sync slowdown " + cluster["host"]["sync_slowdown"].dump();
  std::fprintf(stderr,
               "shard-calibrate: %lld %s: peak %.3g TFLOP/s per rank x gemm "
               "efficiency %.2g = %.3g TFLOP/s, bandwidth %.3g GB/s x memory "
               "efficiency %.2g, link %s%s, drift %.2f (slowest / fastest "
               "repeat of the bandwidth probe)\n",
               static_cast<long long>(ranks), ranks == 1 ? "rank" : "ranks",
               peak / 1e12, fit.efficiency, peak * fit.efficiency / 1e12,
               bandwidth / 1e9, memoryEfficiency, link.c_str(), sync.c_str(),
               drift);
  return writeCluster(cluster, opts);
}

} // namespace autoshard::runtime::calibrate
