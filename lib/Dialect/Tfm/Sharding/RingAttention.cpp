//===- RingAttention.cpp - Context parallelism: ring attention hooks ------===//
//
// Partition hooks of the ops whose sequence dim is sharded under context
// parallelism (DESIGN.md §5, CP bullet; algorithms.md §2):
//
// * tfm.attention with the sequence sharded on axes A (the ring, |A| = c):
//   ring attention (Liu et al. 2023, algorithms.md §2.2). Rank r keeps its
//   query chunk r; the key/value chunks travel around the ring with one
//   `dist.ppermute` each per step (r -> r + 1 mod c), c - 1 steps. Step t
//   computes `tfm.attention_block` of the local queries against chunk
//   r - t (the causal mask on global positions: the diagonal block at t = 0
//   is causal, earlier chunks are full, later chunks are skipped at run
//   time) and merges it into the running result with `tfm.attention_merge`
//   (log-sum-exp, §2.1). The exchange for step t + 1 is started
//   (`dist.ppermute_start`) before step t's block and waited for after it,
//   so that it overlaps the block. Per layer: 2 (c - 1) ppermutes, c
//   blocks, c - 1 merges.
// * tfm.attention_grad: the ring again (FlashAttention-2's backward is
//   block-decomposable with the final out and lse): the key/value chunks
//   travel as in the forward, and the dK/dV accumulators travel with them,
//   each rank adding its queries' contribution to the visiting chunk
//   (`tfm.attention_block_grad`) and passing it on, so that the
//   accumulators sent at the last step arrive home. dQ accumulates locally.
//   Each exchange is started before the next block and waited for after
//   it. Per layer: 2 (c - 1) ppermutes of K/V and 2 c of dK/dV (the volume
//   of algorithms.md §2.7), c blocks.
// * With a low-precision compute type (tfm-mixed-precision's bf16), the
//   running output, dQ and the travelling dK/dV accumulators are kept in
//   f32 (`tfm.cast` of each block's results; §2.1, and §2.7's fp32 dK/dV)
//   and cast back once at the end.
// * tfm.rope / tfm.rope_grad with the sequence sharded: `tfm.rope_local` /
//   `tfm.rope_local_grad` with this rank's chunk index, so that each
//   position is rotated by its global angle; no communication.
//
// Chunks are contiguous blocks of the program's sequence: rank r of the
// ring holds rows [r S/c, (r + 1) S/c) (the layout of a sequence dim
// sharded on A). In the original order the ring is load-imbalanced under a
// causal mask (rank c - 1 computes c blocks, rank 0 one); in zig-zag order
// (dist-zigzag-sequence, §2.3) the rows are the original chunks r and
// 2c - 1 - r, and the blocks carry `zigzag_chunks` so that their masks,
// like rope_local's angles, follow the original positions.
//
//===----------------------------------------------------------------------===//

#include "ExternalModels.h"
#include "PartitionHelpers.h"

#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

using namespace mlir;
using namespace autoshard;
using namespace autoshard::tfm;
using namespace autoshard::tfm::partition;

namespace {

/// The ring of a sequence-sharded attention: its axes, size, and this
/// rank's chunk index over them.
struct Ring {
  AxisList axes;
  int64_t size = 1;
  Value chunk;
  FlatSymbolRefAttr mesh;

  /// Starts shifting `value` one step along the ring (rank r receives rank
  /// r - 1's); `finish` waits for it. The ring's compute runs in between
  /// (algorithms.md §2.2: post the exchange, compute the block, wait).
  Value start(OpBuilder &b, Location loc, Value value) const {
    SmallVector<int64_t> pairs;
    for (int64_t r = 0; r < size; ++r)
      pairs.append({r, (r + 1) % size});
    auto type = cast<RankedTensorType>(value.getType());
    return dist::PpermuteStartOp::create(
        b, loc, dist::AsyncType::get(b.getContext(), type), value, mesh,
        axesAttr(b.getContext(), axes), b.getDenseI64ArrayAttr(pairs));
  }
  static Value finish(OpBuilder &b, Location loc, Value handle) {
    return dist::WaitOp::create(b, loc, handle).getResult();
  }
};

/// The `[B, S, heads, D]` layout of the q-like and kv-like tensors (the
/// head dim whole) and `[B, heads, S]` of lse, from the layout `ref` of a
/// q-like value.
struct AttentionLayout {
  AxisList batch, seq, heads;

  explicit AttentionLayout(ShardingAttr ref)
      : batch(ref.getDimAxes(0)), seq(ref.getDimAxes(1)),
        heads(ref.getDimAxes(2)) {}
  ShardingAttr tensor(FlatSymbolRefAttr mesh) const {
    return makeSharding(mesh, {batch, seq, heads, {}});
  }
  ShardingAttr lse(FlatSymbolRefAttr mesh) const {
    return makeSharding(mesh, {batch, heads, seq});
  }
};

/// Checks what the ring needs of the global op: equal query and key
/// lengths, divisible by the ring size; in zig-zag order, a ring of half
/// the chunks (each rank one chunk pair).
LogicalResult checkRing(Operation *op, Value q, Value k, const Ring &ring) {
  int64_t zigzag = sequenceZigzagChunks(op);
  if (zigzag != 0 && zigzag != 2 * ring.size)
    return op->emitOpError()
           << "zig-zag order of " << zigzag << " chunks needs a ring of "
           << zigzag / 2 << " ranks (one chunk pair each), found a ring of "
           << ring.size;
  int64_t sq = cast<RankedTensorType>(q.getType()).getDimSize(1);
  int64_t sk = cast<RankedTensorType>(k.getType()).getDimSize(1);
  if (sq != sk)
    return op->emitOpError()
           << "context parallelism (ring attention) needs equal query and "
              "key lengths, found Sq = "
           << sq << ", Sk = " << sk;
  if (sq % ring.size != 0)
    return op->emitOpError()
           << "context parallelism: the sequence length " << sq
           << " is not divisible by the ring size " << ring.size;
  return success();
}

/// An attention whose sequence is not split: nothing for the ring to do
/// (false), unless it is causal in zig-zag order, whose mask the whole-
/// sequence kernel cannot apply (its visible keys are no prefix).
FailureOr<bool> checkWholeSequence(Operation *op, bool causal) {
  if (causal && sequenceZigzagChunks(op) != 0)
    return op->emitOpError()
           << "is causal in zig-zag order (zigzag_chunks = "
           << sequenceZigzagChunks(op)
           << ") but its sequence is not split over cp: zig-zag order needs "
              "ring attention";
  return false;
}

/// `value` as f32 (a `tfm.cast` unless it is f32 already): the ring keeps
/// its running output and its gradient accumulators in f32 whatever the
/// compute type (algorithms.md §2.1, §2.7), so that low-precision blocks do
/// not compound their rounding over the steps.
Value toF32(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getElementType().isF32())
    return value;
  return CastOp::create(b, loc, type.clone(b.getF32Type()), value);
}

/// `value` back in the element type of `like`.
Value castLike(OpBuilder &b, Location loc, Value value, Value like) {
  if (value.getType() == like.getType())
    return value;
  return CastOp::create(b, loc, like.getType(), value);
}

Ring makeRing(PartitionContext &ctx, Location loc, ArrayRef<StringAttr> seq) {
  Ring ring;
  ring.axes.assign(seq.begin(), seq.end());
  ring.mesh = meshRef(ctx);
  ring.size = groupSize(meshOf(ctx), seq);
  ring.chunk = axisIndex(ctx.getBuilder(), loc, meshOf(ctx), seq);
  return ring;
}

struct AttentionRingPartition
    : public dist::PartitionOpInterface::ExternalModel<AttentionRingPartition,
                                                       AttentionOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    auto attn = cast<AttentionOp>(op);
    AttentionLayout layout(ctx.getResultSharding(0));
    if (layout.seq.empty())
      return checkWholeSequence(op, attn.getCausal());
    FlatSymbolRefAttr mesh = meshRef(ctx);
    ShardingAttr tensor = layout.tensor(mesh);
    FailureOr<Value> q = ctx.getOperandAs(0, tensor);
    FailureOr<Value> k = ctx.getOperandAs(1, tensor);
    FailureOr<Value> v = ctx.getOperandAs(2, tensor);
    if (failed(q) || failed(k) || failed(v))
      return failure();
    OpBuilder &b = ctx.getBuilder();
    Location loc = op->getLoc();
    Ring ring = makeRing(ctx, loc, layout.seq);
    if (failed(checkRing(op, attn.getQ(), attn.getK(), ring)))
      return failure();
    bool causal = attn.getCausal();
    double scale = attn.getScale().convertToDouble();
    Value out, lse, kt = *k, vt = *v;
    for (int64_t t = 0; t < ring.size; ++t) {
      // Post the exchange of the chunk for step t + 1, compute step t.
      bool more = t + 1 < ring.size;
      Value nextK = more ? ring.start(b, loc, kt) : Value();
      Value nextV = more ? ring.start(b, loc, vt) : Value();
      auto block = keepSequenceOrder(
          op, AttentionBlockOp::create(b, loc, *q, kt, vt, ring.chunk, causal,
                                       scale, t, ring.size));
      Value blockOut = toF32(b, loc, block.getOut());
      if (t == 0) {
        out = blockOut;
        lse = block.getLse();
      } else {
        auto merged = AttentionMergeOp::create(b, loc, out, lse, blockOut,
                                               block.getLse());
        out = merged.getOut();
        lse = merged.getLse();
      }
      if (more) {
        kt = Ring::finish(b, loc, nextK);
        vt = Ring::finish(b, loc, nextV);
      }
    }
    ctx.setResult(0, castLike(b, loc, out, *q), tensor);
    ctx.setResult(1, lse, layout.lse(mesh));
    return true;
  }
};

struct AttentionGradRingPartition
    : public dist::PartitionOpInterface::ExternalModel<
          AttentionGradRingPartition, AttentionGradOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    auto grad = cast<AttentionGradOp>(op);
    AttentionLayout layout(ctx.getResultSharding(0));
    if (layout.seq.empty())
      return checkWholeSequence(op, grad.getCausal());
    FlatSymbolRefAttr mesh = meshRef(ctx);
    ShardingAttr tensor = layout.tensor(mesh);
    SmallVector<Value> locals;
    for (unsigned i = 0; i < 6; ++i) {
      FailureOr<Value> local =
          ctx.getOperandAs(i, i == 5 ? layout.lse(mesh) : tensor);
      if (failed(local))
        return failure();
      locals.push_back(*local);
    }
    Value dout = locals[0], q = locals[1], out = locals[4], lse = locals[5];
    OpBuilder &b = ctx.getBuilder();
    Location loc = op->getLoc();
    Ring ring = makeRing(ctx, loc, layout.seq);
    if (failed(checkRing(op, grad.getQ(), grad.getK(), ring)))
      return failure();
    bool causal = grad.getCausal();
    double scale = grad.getScale().convertToDouble();
    Value kt = locals[2], vt = locals[3];
    Value dq, sentK, sentV; // the dK/dV accumulators in flight
    for (int64_t t = 0; t < ring.size; ++t) {
      bool more = t + 1 < ring.size;
      Value nextK = more ? ring.start(b, loc, kt) : Value();
      Value nextV = more ? ring.start(b, loc, vt) : Value();
      auto block =
          keepSequenceOrder(op, AttentionBlockGradOp::create(
                                    b, loc, dout, q, kt, vt, out, lse,
                                    ring.chunk, causal, scale, t, ring.size));
      Value blockDq = toF32(b, loc, block.getDq());
      dq = t == 0 ? blockDq : AddOp::create(b, loc, dq, blockDq).getResult();
      // The accumulators of the visiting chunk arrive from the predecessor
      // (which added its queries' part): add this rank's part, pass them on.
      Value dk = toF32(b, loc, block.getDk()),
            dv = toF32(b, loc, block.getDv());
      if (t > 0) {
        dk = AddOp::create(b, loc, Ring::finish(b, loc, sentK), dk);
        dv = AddOp::create(b, loc, Ring::finish(b, loc, sentV), dv);
      }
      sentK = ring.start(b, loc, dk);
      sentV = ring.start(b, loc, dv);
      if (more) {
        kt = Ring::finish(b, loc, nextK);
        vt = Ring::finish(b, loc, nextV);
      }
    }
    // At step c - 1 rank r passed on the accumulators of chunk r + 1 (to
    // rank r + 1): each rank receives those of its own chunk.
    Value dk = Ring::finish(b, loc, sentK), dv = Ring::finish(b, loc, sentV);
    ctx.setResult(0, castLike(b, loc, dq, q), tensor);
    ctx.setResult(1, castLike(b, loc, dk, locals[2]), tensor);
    ctx.setResult(2, castLike(b, loc, dv, locals[3]), tensor);
    return true;
  }
};

/// rope / rope_grad with the sequence sharded: the local op rotates by the
/// global positions of this rank's chunk.
template <typename GlobalOp, typename LocalOp>
struct RopePartition : public dist::PartitionOpInterface::ExternalModel<
                           RopePartition<GlobalOp, LocalOp>, GlobalOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    auto rope = cast<GlobalOp>(op);
    auto result = ctx.getResultSharding(0);
    AxisList seq = result.getDimAxes(1);
    if (seq.empty())
      return false;
    FlatSymbolRefAttr mesh = meshRef(ctx);
    ShardingAttr layout =
        makeSharding(mesh, {result.getDimAxes(0), seq, result.getDimAxes(2),
                            result.getDimAxes(3)});
    FailureOr<Value> x = ctx.getOperandAs(0, layout);
    if (failed(x))
      return failure();
    OpBuilder &b = ctx.getBuilder();
    Location loc = op->getLoc();
    Value shard = axisIndex(b, loc, meshOf(ctx), seq);
    int64_t seqLen =
        cast<RankedTensorType>(op->getOperand(0).getType()).getDimSize(1);
    Value local = keepSequenceOrder(
        op, LocalOp::create(b, loc, *x, shard,
                            rope.getTheta().convertToDouble(), seqLen));
    ctx.setResult(0, local, layout);
    return true;
  }
};

} // namespace

void autoshard::tfm::attachRingAttentionModels(MLIRContext *ctx) {
  AttentionOp::attachInterface<AttentionRingPartition>(*ctx);
  AttentionGradOp::attachInterface<AttentionGradRingPartition>(*ctx);
  RopeOp::attachInterface<RopePartition<RopeOp, RopeLocalOp>>(*ctx);
  RopeGradOp::attachInterface<RopePartition<RopeGradOp, RopeLocalGradOp>>(*ctx);
}
