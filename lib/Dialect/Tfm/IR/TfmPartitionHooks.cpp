//===- TfmPartitionHooks.cpp - Partition hooks of the tfm ops -------------===//
//
// TfmPartitionOpInterface implementations (attached as external models, so
// that the op definitions stay untouched) and the result-type rules of the
// vocab-parallel local ops they emit.
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

#include "PartitionHelpers.h"
#include "ShapeChecks.h"
#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace autoshard;
using namespace autoshard::tfm;
using dist::ShardingAttr;
using namespace autoshard::tfm::checks;
using namespace autoshard::tfm::partition;

PartitionContext::~PartitionContext() = default;

//===----------------------------------------------------------------------===//
// Result types of the vocab-parallel local ops
//===----------------------------------------------------------------------===//

namespace {

RankedTensorType tensorOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

RankedTensorType f32Tensor(MLIRContext *ctx, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, Float32Type::get(ctx));
}

/// `type` is `f32` with shape `shape`.
LogicalResult checkF32(EmitErrorFn emitError, StringRef name,
                       RankedTensorType type, ArrayRef<int64_t> shape,
                       StringRef source) {
  RankedTensorType want = f32Tensor(type.getContext(), shape);
  if (type == want)
    return success();
  return emitError() << name << " must be " << want << " (" << source
                     << "), found " << type;
}

int64_t numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Shared by the cross-entropy statistics ops: logits `[..., Vl]`, labels
/// `[...]` (if given), max `[...]` f32 (if given), stats `[..., 2]` f32 (if
/// given), `vocab_size >= 1`.
LogicalResult checkVocabCe(EmitErrorFn emitError, Value logits, Value labels,
                           Value max, Value stats, int64_t vocabSize) {
  RankedTensorType logitsType = tensorOf(logits);
  if (logitsType.getRank() < 1)
    return emitError() << "logits must have rank >= 1, found rank 0";
  ArrayRef<int64_t> rows = logitsType.getShape().drop_back();
  if (labels && failed(checkLeadingDims(emitError, "logits", logitsType,
                                        "labels", tensorOf(labels).getShape())))
    return failure();
  if (max && failed(checkF32(emitError, "max", tensorOf(max), rows,
                             "leading dims of logits, f32")))
    return failure();
  if (stats) {
    SmallVector<int64_t> shape(rows);
    shape.push_back(2);
    if (failed(checkF32(emitError, "stats", tensorOf(stats), shape,
                        "leading dims of logits + [2], f32")))
      return failure();
  }
  return checkCount(emitError, "vocab_size", vocabSize);
}

} // namespace

LogicalResult
VocabEmbeddingOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                     SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType table = tensorOf(adaptor.getTable());
  if (table.getRank() != 2)
    return emitError() << "table must have rank 2 [Vl, H], found rank "
                       << table.getRank();
  SmallVector<int64_t> shape(tensorOf(adaptor.getIds()).getShape());
  shape.push_back(table.getDimSize(1));
  resultTypes.push_back(RankedTensorType::get(shape, table.getElementType()));
  return success();
}

LogicalResult
VocabEmbeddingGradOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                         SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType dy = tensorOf(adaptor.getDy());
  int64_t rows = adaptor.getNumEmbeddingsAttr().getInt();
  if (failed(checkCount(emitError, "num_embeddings", rows)) ||
      failed(checkLeadingDims(emitError, "dy", dy, "ids",
                              tensorOf(adaptor.getIds()).getShape())))
    return failure();
  resultTypes.push_back(
      RankedTensorType::get({rows, dy.getShape().back()}, dy.getElementType()));
  return success();
}

LogicalResult
VocabCeMaxOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                 SmallVectorImpl<Type> &resultTypes) {
  if (failed(checkVocabCe(emitError, adaptor.getLogits(), nullptr, nullptr,
                          nullptr, adaptor.getVocabSizeAttr().getInt())))
    return failure();
  RankedTensorType logits = tensorOf(adaptor.getLogits());
  resultTypes.push_back(
      f32Tensor(logits.getContext(), logits.getShape().drop_back()));
  return success();
}

LogicalResult
VocabCeStatsOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                   SmallVectorImpl<Type> &resultTypes) {
  if (failed(checkVocabCe(emitError, adaptor.getLogits(), adaptor.getLabels(),
                          adaptor.getMax(), nullptr,
                          adaptor.getVocabSizeAttr().getInt())))
    return failure();
  RankedTensorType logits = tensorOf(adaptor.getLogits());
  SmallVector<int64_t> shape(logits.getShape().drop_back());
  shape.push_back(2);
  resultTypes.push_back(f32Tensor(logits.getContext(), shape));
  return success();
}

LogicalResult
VocabCeLossOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                  SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType max = tensorOf(adaptor.getMax());
  SmallVector<int64_t> shape(max.getShape());
  shape.push_back(2);
  if (failed(checkF32(emitError, "max", max, max.getShape(), "f32")) ||
      failed(checkF32(emitError, "stats", tensorOf(adaptor.getStats()), shape,
                      "shape of max + [2], f32")))
    return failure();
  int64_t tokens = adaptor.getNumTokensAttr().getInt();
  int64_t local = numElements(max.getShape());
  if (tokens < std::max<int64_t>(local, 1))
    return emitError() << "num_tokens must be >= the local token count "
                       << local << " (and >= 1), found " << tokens;
  resultTypes.push_back(f32Tensor(max.getContext(), {}));
  return success();
}

LogicalResult
VocabCeGradOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                  SmallVectorImpl<Type> &resultTypes) {
  if (failed(checkVocabCe(emitError, adaptor.getLogits(), adaptor.getLabels(),
                          adaptor.getMax(), adaptor.getStats(),
                          adaptor.getVocabSizeAttr().getInt())))
    return failure();
  RankedTensorType logits = tensorOf(adaptor.getLogits());
  int64_t tokens = adaptor.getNumTokensAttr().getInt();
  int64_t local = numElements(logits.getShape().drop_back());
  if (tokens < std::max<int64_t>(local, 1))
    return emitError() << "num_tokens must be >= the local token count "
                       << local << " (and >= 1), found " << tokens;
  resultTypes.push_back(logits);
  return success();
}

/// The vocab-parallel ops are already per-rank (they only appear after
/// dist-partition): no dim is tied to a factor, so nothing propagates
/// through them and they are never partitioned again.
static ShardingRule localOpRule(Operation *op) {
  ShardingRule rule;
  for (Value operand : op->getOperands())
    rule.operandDims.emplace_back(tensorOf(operand).getRank(), -1);
  for (Value result : op->getResults())
    rule.resultDims.emplace_back(tensorOf(result).getRank(), -1);
  return rule;
}

ShardingRule VocabEmbeddingOp::getShardingRule() { return localOpRule(*this); }
ShardingRule VocabEmbeddingGradOp::getShardingRule() {
  return localOpRule(*this);
}
ShardingRule VocabCeMaxOp::getShardingRule() { return localOpRule(*this); }
ShardingRule VocabCeStatsOp::getShardingRule() { return localOpRule(*this); }
ShardingRule VocabCeLossOp::getShardingRule() { return localOpRule(*this); }
ShardingRule VocabCeGradOp::getShardingRule() { return localOpRule(*this); }
ShardingRule DropoutLocalOp::getShardingRule() { return localOpRule(*this); }
ShardingRule RopeLocalOp::getShardingRule() { return localOpRule(*this); }
ShardingRule RopeLocalGradOp::getShardingRule() { return localOpRule(*this); }
ShardingRule AttentionBlockOp::getShardingRule() { return localOpRule(*this); }
ShardingRule AttentionBlockGradOp::getShardingRule() {
  return localOpRule(*this);
}
ShardingRule AttentionMergeOp::getShardingRule() { return localOpRule(*this); }
ShardingRule DropoutLocalGradOp::getShardingRule() {
  return localOpRule(*this);
}

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

CeLayout ceLayout(ShardingAttr ref) {
  CeLayout layout;
  unsigned rank = ref.getRank();
  layout.vocab = ref.getDimAxes(rank - 1);
  for (unsigned d = 0; d + 1 < rank; ++d)
    layout.tokenDims.push_back(ref.getDimAxes(d));
  return layout;
}

/// The reduced softmax statistics (max, stats, shard index) of the local
/// logits `logitsL` laid out as `layout`, computed once per block and
/// global logits value.
FailureOr<SmallVector<Value>>
ceStatistics(PartitionContext &ctx, Location loc, dist::MeshOp mesh,
             Value globalLogits, Value logitsL, Value labelsL,
             const CeLayout &layout, ShardingAttr logitsSharding,
             int64_t vocabSize) {
  std::string tag;
  llvm::raw_string_ostream os(tag);
  os << "vocab_ce_stats " << logitsSharding;
  if (SmallVector<Value> *cached = ctx.lookupMemo(globalLogits, tag))
    return *cached;
  OpBuilder &b = ctx.getBuilder();
  Value shard = axisIndex(b, loc, mesh, layout.vocab);
  Value max = VocabCeMaxOp::create(b, loc, logitsL, shard, vocabSize);
  max = allReduce(b, loc, mesh, max, layout.vocab, dist::ReductionKind::Max);
  Value stats =
      VocabCeStatsOp::create(b, loc, logitsL, labelsL, max, shard, vocabSize);
  stats =
      allReduce(b, loc, mesh, stats, layout.vocab, dist::ReductionKind::Sum);
  SmallVector<Value> values{max, stats, shard};
  ctx.setMemo(globalLogits, tag, values);
  return values;
}

//===----------------------------------------------------------------------===//
// External models
//===----------------------------------------------------------------------===//

struct EmbeddingPartition
    : public TfmPartitionOpInterface::ExternalModel<EmbeddingPartition,
                                                    EmbeddingOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    auto out = cast<ShardingAttr>(ctx.getResultSharding(0));
    auto table = cast<ShardingAttr>(ctx.getOperandSharding(1));
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
    : public TfmPartitionOpInterface::ExternalModel<EmbeddingGradPartition,
                                                    EmbeddingGradOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    auto grad = cast<EmbeddingGradOp>(op);
    auto out = cast<ShardingAttr>(ctx.getResultSharding(0));
    AxisList vocab = out.getDimAxes(0);
    if (vocab.empty())
      return false;
    AxisList hidden = out.getDimAxes(1);
    FlatSymbolRefAttr mesh = meshRef(ctx);
    // Tokens keep the split they have (the result is then partial over it),
    // minus the axes that the result uses.
    auto ids = cast<ShardingAttr>(ctx.getOperandSharding(0));
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

/// A mean over the `local` items of this rank, rescaled to the mean over
/// the `global` items of the whole tensor: (local sum) / global, which the
/// consumer's sum over the sharded axes completes.
Value rescaleLocalMean(OpBuilder &b, Location loc, Value mean, int64_t local,
                       int64_t global) {
  if (local == global)
    return mean;
  return ScaleOp::create(b, loc, mean, static_cast<double>(local) / global);
}

/// Global token count of a cross-entropy: the product of the label dims.
int64_t globalTokens(Value labels) {
  return numElements(tensorOf(labels).getShape());
}

struct CrossEntropyPartition
    : public TfmPartitionOpInterface::ExternalModel<CrossEntropyPartition,
                                                    CrossEntropyOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    auto ce = cast<CrossEntropyOp>(op);
    // The logits keep the layout they have: the loss is a scalar, so there
    // is no result layout to follow.
    CeLayout layout = ceLayout(cast<ShardingAttr>(ctx.getOperandSharding(0)));
    if (!layout.sharded())
      return false;
    FlatSymbolRefAttr mesh = meshRef(ctx);
    ShardingAttr logitsSharding = layout.logits(mesh);
    FailureOr<Value> logitsL = ctx.getOperandAs(0, logitsSharding);
    FailureOr<Value> labelsL = ctx.getOperandAs(1, layout.labels(mesh));
    if (failed(logitsL) || failed(labelsL))
      return failure();
    OpBuilder &b = ctx.getBuilder();
    Location loc = op->getLoc();
    int64_t tokens = globalTokens(ce.getLabels());
    int64_t vocabSize =
        ce.getVocabSize().value_or(tensorOf(ce.getLogits()).getShape().back());
    Value loss;
    if (layout.vocab.empty()) {
      loss = rescaleLocalMean(
          b, loc,
          CrossEntropyOp::create(b, loc, *logitsL, *labelsL, ce.getVocabSize()),
          numElements(tensorOf(*labelsL).getShape()), tokens);
    } else {
      FailureOr<SmallVector<Value>> stats =
          ceStatistics(ctx, loc, meshOf(ctx), ce.getLogits(), *logitsL,
                       *labelsL, layout, logitsSharding, vocabSize);
      if (failed(stats))
        return failure();
      loss = VocabCeLossOp::create(b, loc, (*stats)[1], (*stats)[0], tokens);
    }
    ctx.setResult(0, loss, makeSharding(mesh, {}, layout.tokenAxes()));
    return true;
  }
};

struct CrossEntropyGradPartition
    : public TfmPartitionOpInterface::ExternalModel<CrossEntropyGradPartition,
                                                    CrossEntropyGradOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    auto ce = cast<CrossEntropyGradOp>(op);
    // dlogits has the layout asked for; the logits follow it.
    CeLayout layout = ceLayout(cast<ShardingAttr>(ctx.getResultSharding(0)));
    if (!layout.sharded())
      return false;
    FlatSymbolRefAttr mesh = meshRef(ctx);
    ShardingAttr logitsSharding = layout.logits(mesh);
    FailureOr<Value> dlossL = ctx.getOperandAs(0, makeSharding(mesh, {}));
    FailureOr<Value> logitsL = ctx.getOperandAs(1, logitsSharding);
    FailureOr<Value> labelsL = ctx.getOperandAs(2, layout.labels(mesh));
    if (failed(dlossL) || failed(logitsL) || failed(labelsL))
      return failure();
    OpBuilder &b = ctx.getBuilder();
    Location loc = op->getLoc();
    int64_t tokens = globalTokens(ce.getLabels());
    int64_t vocabSize =
        ce.getVocabSize().value_or(tensorOf(ce.getLogits()).getShape().back());
    Value grad;
    if (layout.vocab.empty()) {
      grad = rescaleLocalMean(
          b, loc,
          CrossEntropyGradOp::create(b, loc, *dlossL, *logitsL, *labelsL,
                                     ce.getVocabSize()),
          numElements(tensorOf(*labelsL).getShape()), tokens);
    } else {
      FailureOr<SmallVector<Value>> stats =
          ceStatistics(ctx, loc, meshOf(ctx), ce.getLogits(), *logitsL,
                       *labelsL, layout, logitsSharding, vocabSize);
      if (failed(stats))
        return failure();
      grad = VocabCeGradOp::create(b, loc, *dlossL, *logitsL, *labelsL,
                                   (*stats)[0], (*stats)[1], (*stats)[2],
                                   vocabSize, tokens);
    }
    ctx.setResult(0, grad, logitsSharding);
    return true;
  }
};

/// position_embedding with the sequence dim sharded (when `S < P` the rule
/// needs the hook: the local rows start at the shard's offset): the first
/// `S` rows are computed whole on every rank (no communication: the table
/// is a parameter, replicated over the sequence axes) and the consumers
/// slice their rows out locally.
struct PositionEmbeddingPartition
    : public TfmPartitionOpInterface::ExternalModel<PositionEmbeddingPartition,
                                                    PositionEmbeddingOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    auto out = cast<ShardingAttr>(ctx.getResultSharding(0));
    if (!out.isDimSharded(0))
      return false;
    FlatSymbolRefAttr mesh = meshRef(ctx);
    AxisList hidden = out.getDimAxes(1);
    FailureOr<Value> table =
        ctx.getOperandAs(0, makeSharding(mesh, {{}, hidden}));
    if (failed(table))
      return failure();
    auto pos = cast<PositionEmbeddingOp>(op);
    Value local = PositionEmbeddingOp::create(ctx.getBuilder(), op->getLoc(),
                                              *table, pos.getSeqLen());
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
    : public TfmPartitionOpInterface::ExternalModel<
          PositionEmbeddingGradPartition, PositionEmbeddingGradOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    auto dy = cast<ShardingAttr>(ctx.getOperandSharding(0));
    unsigned rank = dy.getRank();
    auto grad = cast<PositionEmbeddingGradOp>(op);
    int64_t seq = tensorOf(grad.getDy()).getShape()[rank - 2];
    bool full = seq == static_cast<int64_t>(grad.getNumPositions());
    auto out = cast<ShardingAttr>(ctx.getResultSharding(0));
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
    AxisList partial;
    for (const dist::PartialAxis &p : dy.getPartialAxes())
      if (p.kind == dist::ReductionKind::Sum &&
          out.getPartialKind(p.axis.getValue()) == dist::ReductionKind::Sum &&
          !llvm::is_contained(hidden, p.axis) &&
          !llvm::is_contained(seqAxes, p.axis))
        partial.push_back(p.axis);
    AxisList used(hidden);
    llvm::append_range(used, seqAxes);
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
    Value local = PositionEmbeddingGradOp::create(ctx.getBuilder(),
                                                  op->getLoc(), *dyL, rows);
    llvm::append_range(lead, partial);
    ctx.setResult(0, local, makeSharding(mesh, {seqAxes, hidden}, lead));
    return true;
  }
};

struct SumSquaresPartition
    : public TfmPartitionOpInterface::ExternalModel<SumSquaresPartition,
                                                    SumSquaresOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    dist::MeshOp mesh = meshOf(ctx);
    // Groups of operands sharded on the same set of axes, in order of first
    // appearance.
    SmallVector<std::pair<AxisList, SmallVector<Value>>> groups;
    for (unsigned i = 0, e = op->getNumOperands(); i < e; ++i) {
      auto target = cast<ShardingAttr>(ctx.getPreferredReducedSharding(i));
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
struct DropoutPartition : public TfmPartitionOpInterface::ExternalModel<
                              DropoutPartition<GlobalOp, LocalOp>, GlobalOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    auto dropout = cast<GlobalOp>(op);
    auto out = cast<ShardingAttr>(ctx.getResultSharding(0));
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
    auto in = cast<ShardingAttr>(ctx.getOperandSharding(0));
    AxisList partial;
    for (const dist::PartialAxis &pa : out.getPartialAxes())
      if (pa.kind == dist::ReductionKind::Sum &&
          in.getPartialKind(pa.axis.getValue()) == dist::ReductionKind::Sum &&
          !llvm::is_contained(used, pa.axis))
        partial.push_back(pa.axis);
    FlatSymbolRefAttr mesh = meshRef(ctx);
    ShardingAttr sharding = makeSharding(mesh, dims, partial);
    FailureOr<Value> xL = ctx.getOperandAs(0, sharding);
    FailureOr<Value> stepL = ctx.getOperandAs(1, makeSharding(mesh, {}));
    FailureOr<Value> layerL = ctx.getOperandAs(2, makeSharding(mesh, {}));
    if (failed(xL) || failed(stepL) || failed(layerL))
      return failure();
    OpBuilder &b = ctx.getBuilder();
    Location loc = op->getLoc();
    SmallVector<Value> shards;
    for (int64_t d : shardDims)
      shards.push_back(axisIndex(b, loc, meshOf(ctx), dims[d]));
    Value local = LocalOp::create(
        b, loc, *xL, *stepL, *layerL, shards,
        dropout.getRateAttr().getValueAsDouble(), dropout.getSite(),
        tensorOf(op->getOperand(0)).getShape(), shardDims);
    ctx.setResult(0, local, sharding);
    return true;
  }
};

/// moe_aux_loss with the batch dim sharded (data parallelism): the loss is
/// a mean of per-sequence terms, so each rank takes the mean of its
/// sequences, rescaled to (local sum) / (global B); the result is partial
/// (sum) over the batch axes.
struct MoeAuxLossPartition
    : public TfmPartitionOpInterface::ExternalModel<MoeAuxLossPartition,
                                                    MoeAuxLossOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    auto aux = cast<MoeAuxLossOp>(op);
    auto logits = cast<ShardingAttr>(ctx.getOperandSharding(0));
    AxisList batch = logits.getDimAxes(0);
    if (batch.empty())
      return false;
    FlatSymbolRefAttr mesh = meshRef(ctx);
    FailureOr<Value> logitsL =
        ctx.getOperandAs(0, makeSharding(mesh, {batch, {}, {}}));
    FailureOr<Value> idsL =
        ctx.getOperandAs(1, makeSharding(mesh, {batch, {}, {}}));
    if (failed(logitsL) || failed(idsL))
      return failure();
    OpBuilder &b = ctx.getBuilder();
    Value loss = rescaleLocalMean(
        b, op->getLoc(), MoeAuxLossOp::create(b, op->getLoc(), *logitsL, *idsL),
        tensorOf(*logitsL).getShape()[0],
        tensorOf(aux.getLogits()).getShape()[0]);
    ctx.setResult(0, loss, makeSharding(mesh, {}, batch));
    return true;
  }
};

/// moe_aux_loss_grad with the batch dim sharded: the local gradient, whose
/// 1/B uses the local B, rescaled to the global B.
struct MoeAuxLossGradPartition
    : public TfmPartitionOpInterface::ExternalModel<MoeAuxLossGradPartition,
                                                    MoeAuxLossGradOp> {
  FailureOr<bool> partition(Operation *op, PartitionContext &ctx) const {
    auto grad = cast<MoeAuxLossGradOp>(op);
    auto out = cast<ShardingAttr>(ctx.getResultSharding(0));
    AxisList batch = out.getDimAxes(0);
    if (batch.empty())
      return false;
    FlatSymbolRefAttr mesh = meshRef(ctx);
    ShardingAttr local3 = makeSharding(mesh, {batch, {}, {}});
    FailureOr<Value> dlossL = ctx.getOperandAs(0, makeSharding(mesh, {}));
    FailureOr<Value> logitsL = ctx.getOperandAs(1, local3);
    FailureOr<Value> idsL = ctx.getOperandAs(2, local3);
    if (failed(dlossL) || failed(logitsL) || failed(idsL))
      return failure();
    OpBuilder &b = ctx.getBuilder();
    Value dlogits = rescaleLocalMean(
        b, op->getLoc(),
        MoeAuxLossGradOp::create(b, op->getLoc(), *dlossL, *logitsL, *idsL),
        tensorOf(*logitsL).getShape()[0],
        tensorOf(grad.getLogits()).getShape()[0]);
    ctx.setResult(0, dlogits, local3);
    return true;
  }
};

} // namespace

void autoshard::tfm::attachPartitionInterfaces(MLIRContext *ctx) {
  EmbeddingOp::attachInterface<EmbeddingPartition>(*ctx);
  EmbeddingGradOp::attachInterface<EmbeddingGradPartition>(*ctx);
  CrossEntropyOp::attachInterface<CrossEntropyPartition>(*ctx);
  CrossEntropyGradOp::attachInterface<CrossEntropyGradPartition>(*ctx);
  SumSquaresOp::attachInterface<SumSquaresPartition>(*ctx);
  DropoutOp::attachInterface<DropoutPartition<DropoutOp, DropoutLocalOp>>(*ctx);
  DropoutGradOp::attachInterface<
      DropoutPartition<DropoutGradOp, DropoutLocalGradOp>>(*ctx);
  PositionEmbeddingOp::attachInterface<PositionEmbeddingPartition>(*ctx);
  MoeAuxLossOp::attachInterface<MoeAuxLossPartition>(*ctx);
  MoeAuxLossGradOp::attachInterface<MoeAuxLossGradPartition>(*ctx);
  PositionEmbeddingGradOp::attachInterface<PositionEmbeddingGradPartition>(
      *ctx);
  attachRingAttentionInterfaces(ctx);
}
