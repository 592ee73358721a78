//===- PartitionHooks.cpp - Partition hooks of the tfm ops ----------------===//
//
// dist::PartitionOpInterface external models of the tfm ops whose sharded
// form is not the op on local shapes (the local ops they emit are defined
// in the tfm dialect, TfmVocabParallelOps.cpp for the vocab-parallel ones).
//
// Hooks:
// * embedding with a vocab-sharded table: masked lookup of the owned rows
//   (`tfm.vocab_embedding`), result partial (sum) over the vocab axes;
// * embedding_grad with a vocab-sharded result: scatter-add into the owned
//   rows only (`tfm.vocab_embedding_grad`), partial over the token axes;
// * cross_entropy / cross_entropy_grad: with tokens sharded, local sums
//   divided by the GLOBAL token count (partial sum over the token axes);
//   with logits sharded on the vocabulary, per-row max and (sum of
//   exponentials, target logit) statistics all-reduced with `max` and `sum`
//   over the vocab axes, never an all-gather of the logits; the gradient
//   reuses the forward's statistics when both are in the same block;
// * position_embedding / position_embedding_grad with the sequence sharded:
//   the rows are computed whole and sliced locally / `dy` is gathered over
//   the sequence axes, or, when S == P, `dtable` is split like the sequence
//   (no offset operand needed);
// * sum_squares: operands grouped by the axes they are sharded on, one
//   `sum` all-reduce per group over exactly those axes (a replicated
//   operand is never counted twice).
// * dropout / dropout_grad with a sharded dim: `tfm.dropout_local` /
//   `tfm.dropout_local_grad` with the global shape and, per sharded dim, the
//   rank's block index (`dist.axis_index`), so the local op draws the mask
//   of each element's global index; no communication.
//
//===----------------------------------------------------------------------===//

#include "ExternalModels.h"
#include "PartitionHelpers.h"
#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace autoshard;
using namespace autoshard::tfm;
using dist::ShardingAttr;
using namespace autoshard::tfm::partition;

namespace {

RankedTensorType tensorOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

int64_t numElements(ArrayRef<int64_t> shape) {
  return ShapedType::getNumElements(shape);
}

} // namespace

//===----------------------------------------------------------------------===//
// Hook helpers
//===----------------------------------------------------------------------===//

namespace {

/// The common part of the cross-entropy hooks: token axes per leading dim
/// and the vocabulary axes, read from `ref` (a sharding of logits-shaped
/// values), never sharing an axis.
struct CeLayout {
  SmallVector<AxisList> tokenDims;
  AxisList vocab;

  bool sharded() const {
    return !vocab.empty() || llvm::any_of(tokenDims, [](const AxisList &a) {
      return !a.empty();
    });
  }
  AxisList tokenAxes() const {
    AxisList out;
    for (const AxisList &a : tokenDims)
      llvm::append_range(out, a);
    return out;
  }
  ShardingAttr logits(FlatSymbolRefAttr mesh) const {
    SmallVector<AxisList> dims(tokenDims);
    dims.push_back(vocab);
    return makeSharding(mesh, dims);
  }
  ShardingAttr labels(FlatSymbolRefAttr mesh) const {
    return makeSharding(mesh, tokenDims);
  }
};

/// Global token count of a cross-entropy: the product of the label dims.
int64_t globalTokens(Value labels) {
  return numElements(tensorOf(labels).getShape());
}

CeLayout ceLayout(ShardingAttr ref) {
  CeLayout layout;
  unsigned rank = ref.getRank();
  layout.vocab = ref.getDimAxes(rank - 1);
  for (unsigned d = 0; d + 1 < rank; ++d)
    layout.tokenDims.push_back(ref.getDimAxes(d));
  return layout;
}

/// A cross-entropy hook's local operands with the logits sharded on the
/// vocabulary, and the reduced softmax statistics of the local logits.
struct VocabCe {
  ShardingAttr logitsSharding;
  /// Local operands in op order: [dloss,] logits, labels.
  SmallVector<Value> operands;
  Value max, stats, shard;
  int64_t tokens, vocabSize;

  Value logits() const { return operands[operands.size() - 2]; }
  Value labels() const { return operands.back(); }
};

/// The operands of cross-entropy op `op` ([dloss,] logits, labels) laid out
/// as `layout` (`dloss` replicated) and the statistics (max, stats, shard
/// index) of the local logits, computed once per block and global logits
/// value.
FailureOr<VocabCe> vocabParallelCe(PartitionContext &ctx, Operation *op,
                                   const CeLayout &layout,
                                   std::optional<uint64_t> vocabSizeAttr) {
  FlatSymbolRefAttr meshSym = meshRef(ctx);
  VocabCe ce;
  ce.logitsSharding = layout.logits(meshSym);
  Value logits = op->getOperand(op->getNumOperands() - 2);
  Value labels = op->getOperand(op->getNumOperands() - 1);
  SmallVector<ShardingAttr> shardings(op->getNumOperands() - 2,
                                      makeSharding(meshSym, {}));
  shardings.push_back(ce.logitsSharding);
  shardings.push_back(layout.labels(meshSym));
  FailureOr<SmallVector<Value>> operands = operandsAs(ctx, shardings);
  if (failed(operands))
    return failure();
  ce.operands = std::move(*operands);
  ce.tokens = globalTokens(labels);
  ce.vocabSize = vocabSizeAttr.value_or(tensorOf(logits).getShape().back());

  std::string tag;
  llvm::raw_string_ostream os(tag);
  os << "vocab_ce_stats " << ce.logitsSharding;
  if (SmallVector<Value> *cached = ctx.lookupMemo(logits, tag)) {
    ce.max = (*cached)[0];
    ce.stats = (*cached)[1];
    ce.shard = (*cached)[2];
    return ce;
  }
  OpBuilder &b = ctx.getBuilder();
  Location loc = op->getLoc();
  dist::MeshOp mesh = meshOf(ctx);
  ce.shard = axisIndex(b, loc, mesh, layout.vocab);
  ce.max = VocabCeMaxOp::create(b, loc, ce.logits(), ce.shard, ce.vocabSize);
  ce.max =
      allReduce(b, loc, mesh, ce.max, layout.vocab, dist::ReductionKind::Max);
  ce.stats = VocabCeStatsOp::create(b, loc, ce.logits(), ce.labels(), ce.max,
                                    ce.shard, ce.vocabSize);
  ce.stats =
      allReduce(b, loc, mesh, ce.stats, layout.vocab, dist::ReductionKind::Sum);
  ctx.setMemo(logits, tag, {ce.max, ce.stats, ce.shard});
  return ce;
}

/// Builds an op's local form from its local operands.
using LocalOpBuilder =
    function_ref<Value(OpBuilder &, Location, ArrayRef<Value>)>;

/// A mean over the `local` items of this rank, rescaled to the mean over
/// the `global` items of the whole tensor: (local sum) / global, which the
/// consumer's sum over the sharded axes completes.
Value rescaleLocalMean(OpBuilder &b, Location loc, Value mean, int64_t local,
                       int64_t global) {
  if (local == global)
    return mean;
  return ScaleOp::create(b, loc, mean, static_cast<double>(local) / global);
}

/// The hook of a mean over the items of the leading dims (the tokens of a
/// cross-entropy, the sequences of moe_aux_loss) with those dims split as
/// `lead` and every other dim whole. Every operand of rank > 0 is split so
/// on its leading dims, a scalar (`dloss`) replicated; the local op
/// (`create`, on the local operands) takes the mean over the local items,
/// rescaled to the global count. A scalar result is then partial (sum) over
/// the `lead` axes, a tensor result split like the operands.
FailureOr<bool> partitionLeadingMean(Operation *op, PartitionContext &ctx,
                                     ArrayRef<AxisList> lead,
                                     LocalOpBuilder create) {
  FlatSymbolRefAttr mesh = meshRef(ctx);
  auto splitLead = [&](Value global) {
    SmallVector<AxisList> dims(tensorOf(global).getRank());
    llvm::copy(lead.take_front(dims.size()), dims.begin());
    return makeSharding(mesh, dims);
  };
  SmallVector<ShardingAttr> shardings;
  for (Value operand : op->getOperands())
    shardings.push_back(splitLead(operand));
  FailureOr<SmallVector<Value>> locals = operandsAs(ctx, shardings);
  if (failed(locals))
    return failure();
  // The items are counted on the first operand that has them.
  unsigned ref = 0;
  while (tensorOf(op->getOperand(ref)).getRank() == 0)
    ++ref;
  auto items = [&](Value v) {
    return numElements(tensorOf(v).getShape().take_front(lead.size()));
  };
  OpBuilder &b = ctx.getBuilder();
  Location loc = op->getLoc();
  Value mean =
      rescaleLocalMean(b, loc, create(b, loc, *locals), items((*locals)[ref]),
                       items(op->getOperand(ref)));
  Value result = op->getResult(0);
  if (tensorOf(result).getRank() != 0) {
    ctx.setResult(0, mean, splitLead(result));
    return true;
  }
  AxisList leadAxes;
  for (const AxisList &axes : lead)
    llvm::append_range(leadAxes, axes);
  ctx.setResult(0, mean, makeSharding(mesh, {}, leadAxes));
  return true;
}

//===----------------------------------------------------------------------===//
// External models
//===----------------------------------------------------------------------===//

struct EmbeddingPartition
    : public dist::PartitionOpInterface::ExternalModel<EmbeddingPartition,
                                                       EmbeddingOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    auto out = ctx.getResultSharding(0);
    auto table = ctx.getOperandSharding(1);
    unsigned rank = out.getRank();
    AxisList vocab =
        without(table.getDimAxes(0), dimAxesIn(out, 0, out.getRank()));
    if (vocab.empty())
      return false;
    FlatSymbolRefAttr mesh = meshRef(ctx);
    SmallVector<AxisList> idsDims;
    for (unsigned d = 0; d + 1 < rank; ++d)
      idsDims.push_back(out.getDimAxes(d));
    FailureOr<Value> idsL = ctx.getOperandAs(0, makeSharding(mesh, idsDims));
    FailureOr<Value> tableL = ctx.getOperandAs(
        1, makeSharding(mesh, {vocab, out.getDimAxes(rank - 1)}));
    if (failed(idsL) || failed(tableL))
      return failure();
    OpBuilder &b = ctx.getBuilder();
    Value shard = axisIndex(b, op->getLoc(), meshOf(ctx), vocab);
    Value local =
        VocabEmbeddingOp::create(b, op->getLoc(), *idsL, *tableL, shard);
    SmallVector<AxisList> outDims(idsDims);
    outDims.push_back(out.getDimAxes(rank - 1));
    ctx.setResult(0, local, makeSharding(mesh, outDims, vocab));
    return true;
  }
};

struct EmbeddingGradPartition
    : public dist::PartitionOpInterface::ExternalModel<EmbeddingGradPartition,
                                                       EmbeddingGradOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    auto grad = cast<EmbeddingGradOp>(op);
    auto out = ctx.getResultSharding(0);
    AxisList vocab = out.getDimAxes(0);
    if (vocab.empty())
      return false;
    AxisList hidden = out.getDimAxes(1);
    FlatSymbolRefAttr mesh = meshRef(ctx);
    // Tokens keep the split they have (the result is then partial over it),
    // minus the axes that the result uses.
    auto ids = ctx.getOperandSharding(0);
    AxisList used(vocab);
    llvm::append_range(used, hidden);
    SmallVector<AxisList> idsDims;
    AxisList tokenAxes;
    for (unsigned d = 0; d < ids.getRank(); ++d) {
      idsDims.push_back(without(ids.getDimAxes(d), used));
      llvm::append_range(tokenAxes, idsDims.back());
    }
    SmallVector<AxisList> dyDims(idsDims);
    dyDims.push_back(hidden);
    FailureOr<Value> idsL = ctx.getOperandAs(0, makeSharding(mesh, idsDims));
    FailureOr<Value> dyL = ctx.getOperandAs(1, makeSharding(mesh, dyDims));
    if (failed(idsL) || failed(dyL))
      return failure();
    dist::MeshOp meshOp = meshOf(ctx);
    int64_t shards = groupSize(meshOp, vocab);
    int64_t rows = grad.getNumEmbeddings();
    if (rows % shards != 0)
      return op->emitOpError()
             << "num_embeddings " << rows
             << " must be divisible by the number of vocabulary shards "
             << shards;
    OpBuilder &b = ctx.getBuilder();
    Value shard = axisIndex(b, op->getLoc(), meshOp, vocab);
    Value local = VocabEmbeddingGradOp::create(b, op->getLoc(), *idsL, *dyL,
                                               shard, rows / shards);
    ctx.setResult(0, local, makeSharding(mesh, {vocab, hidden}, tokenAxes));
    return true;
  }
};

/// cross_entropy (`Op` = CrossEntropyOp) and cross_entropy_grad. With
/// only the tokens sharded: the op on the local operands, rescaled to the
/// global token count; with the vocabulary sharded: the vocab-parallel op
/// on the all-reduced statistics (which the gradient reuses), the loss
/// partial (sum) over the token axes, dlogits laid out like the logits.
template <typename Op>
struct CrossEntropyPartition : public dist::PartitionOpInterface::ExternalModel<
                                   CrossEntropyPartition<Op>, Op> {
  static constexpr bool isLoss = std::is_same_v<Op, CrossEntropyOp>;

  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    auto ce = cast<Op>(op);
    // The loss is a scalar: the logits keep the layout they have; dlogits
    // has the layout asked for and the logits follow it.
    CeLayout layout =
        ceLayout(isLoss ? ctx.getOperandSharding(0) : ctx.getResultSharding(0));
    if (!layout.sharded())
      return false;
    if (layout.vocab.empty())
      return partitionLeadingMean(
          op, ctx, layout.tokenDims,
          [&](OpBuilder &b, Location loc, ArrayRef<Value> local) -> Value {
            if constexpr (isLoss)
              return Op::create(b, loc, local[0], local[1], ce.getVocabSize());
            else
              return Op::create(b, loc, local[0], local[1], local[2],
                                ce.getVocabSize());
          });
    FailureOr<VocabCe> v = vocabParallelCe(ctx, op, layout, ce.getVocabSize());
    if (failed(v))
      return failure();
    OpBuilder &b = ctx.getBuilder();
    Location loc = op->getLoc();
    if constexpr (isLoss)
      ctx.setResult(0,
                    VocabCeLossOp::create(b, loc, v->stats, v->max, v->tokens),
                    makeSharding(meshRef(ctx), {}, layout.tokenAxes()));
    else
      ctx.setResult(0,
                    VocabCeGradOp::create(b, loc, v->operands[0], v->logits(),
                                          v->labels(), v->max, v->stats,
                                          v->shard, v->vocabSize, v->tokens),
                    v->logitsSharding);
    return true;
  }
};

/// position_embedding with the sequence dim sharded (when `S < P` the rule
/// needs the hook: the local rows start at the shard's offset): the first
/// `S` rows are computed whole on every rank (no communication: the table
/// is a parameter, replicated over the sequence axes) and the consumers
/// slice their rows out locally.
struct PositionEmbeddingPartition
    : public dist::PartitionOpInterface::ExternalModel<
          PositionEmbeddingPartition, PositionEmbeddingOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    auto out = ctx.getResultSharding(0);
    if (!out.isDimSharded(0))
      return false;
    FlatSymbolRefAttr mesh = meshRef(ctx);
    AxisList hidden = out.getDimAxes(1);
    FailureOr<Value> table =
        ctx.getOperandAs(0, makeSharding(mesh, {{}, hidden}));
    if (failed(table))
      return failure();
    auto pos = cast<PositionEmbeddingOp>(op);
    Value local = keepSequenceOrder(
        op, PositionEmbeddingOp::create(ctx.getBuilder(), op->getLoc(), *table,
                                        pos.getSeqLen()));
    ctx.setResult(0, local, makeSharding(mesh, {{}, hidden}));
    return true;
  }
};

/// position_embedding_grad with the sequence dim of `dy` (or, `S == P`,
/// the rows of `dtable`) sharded. `S < P`: `dy` is gathered over the
/// sequence axes (the local rows would otherwise land at row 0 instead of
/// the shard's offset). `S == P`: `dtable`'s rows are split like the
/// sequence — the rows the result asks for, else those `dy` has — and the
/// local op sums the local rows (`num_positions` = local rows). The leading
/// dims keep their split, leaving `dtable` partial over them, and so do
/// the partial (sum) axes of `dy` that the result is declared partial over
/// (the op is linear in `dy`: a gradient still partial over the batch axes
/// is reduced once, in its final layout, by the consumer — e.g. one
/// reduce-scatter into a ZeRO-sharded state).
struct PositionEmbeddingGradPartition
    : public dist::PartitionOpInterface::ExternalModel<
          PositionEmbeddingGradPartition, PositionEmbeddingGradOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    auto dy = ctx.getOperandSharding(0);
    unsigned rank = dy.getRank();
    auto grad = cast<PositionEmbeddingGradOp>(op);
    int64_t seq = tensorOf(grad.getDy()).getShape()[rank - 2];
    // In zig-zag order a rank's rows are no contiguous block of the table:
    // gather dy and sum whole.
    bool full = seq == static_cast<int64_t>(grad.getNumPositions()) &&
                sequenceZigzagChunks(op) == 0;
    auto out = ctx.getResultSharding(0);
    AxisList hidden = out.getDimAxes(1);
    AxisList seqAxes;
    if (full) {
      seqAxes = without(out.getDimAxes(0), hidden);
      if (seqAxes.empty())
        seqAxes = without(dy.getDimAxes(rank - 2), hidden);
    }
    if (!dy.isDimSharded(rank - 2) && seqAxes.empty())
      return false;
    FlatSymbolRefAttr mesh = meshRef(ctx);
    // Partial (sum) axes of `dy` that the result keeps pass through.
    AxisList used(hidden);
    llvm::append_range(used, seqAxes);
    AxisList partial = sharedPartialSums(dy, out, used);
    llvm::append_range(used, partial);
    SmallVector<AxisList> dims;
    AxisList lead;
    for (unsigned d = 0; d + 2 < rank; ++d) {
      dims.push_back(without(dy.getDimAxes(d), used));
      llvm::append_range(lead, dims.back());
    }
    dims.push_back(seqAxes);
    dims.push_back(hidden);
    FailureOr<Value> dyL =
        ctx.getOperandAs(0, makeSharding(mesh, dims, partial));
    if (failed(dyL))
      return failure();
    int64_t rows =
        full ? tensorOf(*dyL).getShape()[rank - 2] : grad.getNumPositions();
    Value local =
        keepSequenceOrder(op, PositionEmbeddingGradOp::create(
                                  ctx.getBuilder(), op->getLoc(), *dyL, rows));
    llvm::append_range(lead, partial);
    ctx.setResult(0, local, makeSharding(mesh, {seqAxes, hidden}, lead));
    return true;
  }
};

struct SumSquaresPartition
    : public dist::PartitionOpInterface::ExternalModel<SumSquaresPartition,
                                                       SumSquaresOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    dist::MeshOp mesh = meshOf(ctx);
    // Groups of operands sharded on the same set of axes, in order of first
    // appearance.
    SmallVector<std::pair<AxisList, SmallVector<Value>>> groups;
    for (unsigned i = 0, e = op->getNumOperands(); i < e; ++i) {
      auto target = ctx.getPreferredReducedSharding(i);
      FailureOr<Value> local = ctx.getOperandAs(i, target);
      if (failed(local))
        return failure();
      AxisList axes = inMeshOrder(mesh, target.getUsedAxes());
      auto *it =
          llvm::find_if(groups, [&](auto &g) { return g.first == axes; });
      if (it == groups.end()) {
        groups.push_back({axes, {}});
        it = std::prev(groups.end());
      }
      it->second.push_back(*local);
    }
    OpBuilder &b = ctx.getBuilder();
    Location loc = op->getLoc();
    Value total;
    for (auto &[axes, values] : groups) {
      Value sum = SumSquaresOp::create(b, loc, values);
      if (!axes.empty())
        sum = allReduce(b, loc, mesh, sum, axes, dist::ReductionKind::Sum);
      total = total ? AddOp::create(b, loc, total, sum).getResult() : sum;
    }
    ctx.setResult(
        0, total,
        makeSharding(FlatSymbolRefAttr::get(mesh.getSymNameAttr()), {}));
    return true;
  }
};

/// dropout / dropout_grad with a sharded dim: the input keeps the result's
/// dim split, and the local op (`LocalOp`) gets the global shape and, per
/// sharded dim, this rank's block index over the dim's axes, so that it
/// draws the mask elements of the global indices it holds. Elementwise and
/// linear in the input: no communication, and a partial (sum) input that
/// the result declares partial stays partial (every rank applies the same
/// mask to its summand).
template <typename GlobalOp, typename LocalOp>
struct DropoutPartition : public dist::PartitionOpInterface::ExternalModel<
                              DropoutPartition<GlobalOp, LocalOp>, GlobalOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    auto dropout = cast<GlobalOp>(op);
    auto out = ctx.getResultSharding(0);
    unsigned rank = out.getRank();
    SmallVector<AxisList> dims;
    SmallVector<int64_t> shardDims;
    for (unsigned d = 0; d < rank; ++d) {
      dims.push_back(out.getDimAxes(d));
      if (!dims.back().empty())
        shardDims.push_back(d);
    }
    if (shardDims.empty())
      return false;
    AxisList used = dimAxesIn(out, 0, rank);
    AxisList partial = sharedPartialSums(out, ctx.getOperandSharding(0), used);
    FlatSymbolRefAttr mesh = meshRef(ctx);
    ShardingAttr sharding = makeSharding(mesh, dims, partial);
    ShardingAttr replicated = makeSharding(mesh, {});
    FailureOr<SmallVector<Value>> locals =
        operandsAs(ctx, {sharding, replicated, replicated});
    if (failed(locals))
      return failure();
    OpBuilder &b = ctx.getBuilder();
    Location loc = op->getLoc();
    SmallVector<Value> shards;
    for (int64_t d : shardDims)
      shards.push_back(axisIndex(b, loc, meshOf(ctx), dims[d]));
    Value local = keepSequenceOrder(
        op, LocalOp::create(b, loc, (*locals)[0], (*locals)[1], (*locals)[2],
                            shards, dropout.getRateAttr().getValueAsDouble(),
                            dropout.getSite(),
                            tensorOf(op->getOperand(0)).getShape(), shardDims));
    ctx.setResult(0, local, sharding);
    return true;
  }
};

/// moe_aux_loss (`Op` = MoeAuxLossOp) and its gradient with the batch dim
/// sharded (data parallelism): the loss is a mean of per-sequence terms, so
/// each rank takes the mean of its sequences (the gradient's 1/B uses the
/// local B), rescaled to the global B; the loss is then partial (sum) over
/// the batch axes.
template <typename Op>
struct MoeAuxLossPartition
    : public dist::PartitionOpInterface::ExternalModel<MoeAuxLossPartition<Op>,
                                                       Op> {
  static constexpr bool isLoss = std::is_same_v<Op, MoeAuxLossOp>;

  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    // The loss is a scalar: the logits keep the batch split they have;
    // dlogits has the split asked for.
    ShardingAttr ref =
        isLoss ? ctx.getOperandSharding(0) : ctx.getResultSharding(0);
    AxisList batch = ref.getDimAxes(0);
    if (batch.empty())
      return false;
    return partitionLeadingMean(
        op, ctx, {batch},
        [](OpBuilder &b, Location loc, ArrayRef<Value> local) -> Value {
          if constexpr (isLoss)
            return Op::create(b, loc, local[0], local[1]);
          else
            return Op::create(b, loc, local[0], local[1], local[2]);
        });
  }
};

} // namespace

void autoshard::tfm::attachPartitionModels(MLIRContext *ctx) {
  EmbeddingOp::attachInterface<EmbeddingPartition>(*ctx);
  EmbeddingGradOp::attachInterface<EmbeddingGradPartition>(*ctx);
  CrossEntropyOp::attachInterface<CrossEntropyPartition<CrossEntropyOp>>(*ctx);
  CrossEntropyGradOp::attachInterface<
      CrossEntropyPartition<CrossEntropyGradOp>>(*ctx);
  SumSquaresOp::attachInterface<SumSquaresPartition>(*ctx);
  DropoutOp::attachInterface<DropoutPartition<DropoutOp, DropoutLocalOp>>(*ctx);
  DropoutGradOp::attachInterface<
      DropoutPartition<DropoutGradOp, DropoutLocalGradOp>>(*ctx);
  PositionEmbeddingOp::attachInterface<PositionEmbeddingPartition>(*ctx);
  MoeAuxLossOp::attachInterface<MoeAuxLossPartition<MoeAuxLossOp>>(*ctx);
  MoeAuxLossGradOp::attachInterface<MoeAuxLossPartition<MoeAuxLossGradOp>>(
      *ctx);
  PositionEmbeddingGradOp::attachInterface<PositionEmbeddingGradPartition>(
      *ctx);
}
