//===- TfmOps.cpp - Transformer graph ops ---------------------------------===//
//
// Each op's `computeResultTypes` derives its result types from its operand
// types and attributes and reports the first violated rule with the value
// found. The generated verifiers compare the actual result types with it and
// the type-inferring builders use it, so the two cannot disagree.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Tfm/IR/TfmOps.h"
#include "ShapeChecks.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"

#include <limits>

using namespace mlir;
using namespace autoshard::tfm;

#include "autoshard/Dialect/Tfm/IR/TfmInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// Rule helpers
//===----------------------------------------------------------------------===//

namespace autoshard::tfm::checks {

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

LogicalResult checkCount(EmitErrorFn emitError, StringRef name, int64_t value,
                         int64_t max, StringRef maxSource) {
  if (value >= 1 && value <= max)
    return success();
  if (max == std::numeric_limits<int64_t>::max())
    return emitError() << name << " must be >= 1, found " << value;
  return emitError() << name << " must be in [1, " << max << "] (" << maxSource
                     << "), found " << value;
}

LogicalResult checkLeadingDims(EmitErrorFn emitError, StringRef name,
                               RankedTensorType type, StringRef leadingName,
                               ArrayRef<int64_t> leading) {
  int64_t rank = static_cast<int64_t>(leading.size()) + 1;
  if (type.getRank() != rank)
    return emitError() << name << " must have rank " << rank << " (rank of "
                       << leadingName << " + 1), found rank " << type.getRank();
  if (type.getShape().drop_back() != leading)
    return emitError() << name << " leading dims "
                       << shapeStr(type.getShape().drop_back())
                       << " must match " << leadingName << " shape "
                       << shapeStr(leading);
  return success();
}

LogicalResult checkType(EmitErrorFn emitError, StringRef name, Type actual,
                        Type expected, StringRef source) {
  if (actual == expected)
    return success();
  return emitError() << name << " must be " << expected << " (" << source
                     << "), found " << actual;
}

} // namespace autoshard::tfm::checks

using namespace autoshard::tfm::checks;

namespace {

/// The `tensor<f32>` used for losses and optimizer scalars.
RankedTensorType scalarF32(MLIRContext *ctx) {
  return RankedTensorType::get({}, Float32Type::get(ctx));
}

LogicalResult checkSameElementType(EmitErrorFn emitError, RankedTensorType a,
                                   RankedTensorType b) {
  if (a.getElementType() == b.getElementType())
    return success();
  return emitError() << "operand element types must match, found "
                     << a.getElementType() << " and " << b.getElementType();
}

/// `layout` names the dims, e.g. "[B, S, H]".
LogicalResult checkRank(EmitErrorFn emitError, StringRef name,
                        RankedTensorType type, int64_t rank, StringRef layout) {
  if (type.getRank() == rank)
    return success();
  return emitError() << name << " must have rank " << rank << " " << layout
                     << ", found rank " << type.getRank();
}

LogicalResult checkMinRank(EmitErrorFn emitError, StringRef name,
                           RankedTensorType type, int64_t minRank) {
  if (type.getRank() >= minRank)
    return success();
  return emitError() << name << " must have rank >= " << minRank
                     << ", found rank " << type.getRank();
}

/// `!(value > 0)` also rejects NaN.
LogicalResult checkPositive(EmitErrorFn emitError, StringRef name,
                            double value) {
  if (value > 0)
    return success();
  return emitError() << name << " must be > 0, found " << value;
}

LogicalResult checkNonNegative(EmitErrorFn emitError, StringRef name,
                               double value) {
  if (value >= 0)
    return success();
  return emitError() << name << " must be >= 0, found " << value;
}

/// Probabilities and decay rates: `[0, 1)`.
LogicalResult checkUnitInterval(EmitErrorFn emitError, StringRef name,
                                double value) {
  if (value >= 0 && value < 1)
    return success();
  return emitError() << name << " must be in [0, 1), found " << value;
}

/// Shared by layer_norm, rms_norm and their gradients: `epsilon > 0`, `x` of
/// rank >= 1, `dy` (if any) of `x`'s type and `gamma`/`beta` (if any) of
/// type `[H]` with `x`'s element type.
LogicalResult checkNorm(EmitErrorFn emitError, double epsilon, Value dy,
                        Value x, Value gamma, Value beta = nullptr) {
  RankedTensorType xType = tensorOf(x);
  if (failed(checkPositive(emitError, "epsilon", epsilon)) ||
      failed(checkMinRank(emitError, "x", xType, 1)))
    return failure();
  if (dy &&
      failed(checkType(emitError, "dy", dy.getType(), xType, "type of x")))
    return failure();
  auto paramType =
      RankedTensorType::get(xType.getShape().back(), xType.getElementType());
  if (failed(checkType(emitError, "gamma", gamma.getType(), paramType,
                       "last dim of x")))
    return failure();
  if (beta && failed(checkType(emitError, "beta", beta.getType(), paramType,
                               "last dim of x")))
    return failure();
  return success();
}

/// Shared by attention and attention_grad: checks q [B, Sq, N, D] and k/v
/// [B, Sk, G, D] and returns (out, lse) types.
LogicalResult computeAttention(EmitErrorFn emitError, Value q, Value k, Value v,
                               bool causal, double scale,
                               SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType qType = tensorOf(q), kType = tensorOf(k);
  if (failed(checkPositive(emitError, "scale", scale)) ||
      failed(checkRank(emitError, "q", qType, 4, "[B, Sq, N, D]")) ||
      failed(checkRank(emitError, "k", kType, 4, "[B, Sk, G, D]")) ||
      failed(checkType(emitError, "v", v.getType(), kType, "type of k")) ||
      failed(checkSameElementType(emitError, qType, kType)))
    return failure();
  ArrayRef<int64_t> qs = qType.getShape(), ks = kType.getShape();
  if (qs[0] != ks[0])
    return emitError() << "q batch (" << qs[0] << ") must match k batch ("
                       << ks[0] << ")";
  if (qs[3] != ks[3])
    return emitError() << "q head dim (" << qs[3] << ") must match k head dim ("
                       << ks[3] << ")";
  if (ks[2] == 0 || qs[2] % ks[2] != 0)
    return emitError() << "q heads (" << qs[2]
                       << ") must be a multiple of kv heads (" << ks[2] << ")";
  if (causal && qs[1] != ks[1])
    return emitError() << "causal attention requires Sq == Sk, found Sq = "
                       << qs[1] << ", Sk = " << ks[1];
  resultTypes.push_back(qType);
  resultTypes.push_back(RankedTensorType::get(
      {qs[0], qs[2], qs[1]}, Float32Type::get(q.getContext())));
  return success();
}

/// Shared by cross_entropy and its gradient: logits [..., V] against labels
/// [...], and `1 <= vocab_size <= V`.
LogicalResult checkCrossEntropy(EmitErrorFn emitError, Value logits,
                                Value labels, std::optional<int64_t> vocab) {
  RankedTensorType logitsType = tensorOf(logits);
  if (failed(checkLeadingDims(emitError, "logits", logitsType, "labels",
                              tensorOf(labels).getShape())))
    return failure();
  if (vocab &&
      failed(checkCount(emitError, "vocab_size", *vocab,
                        logitsType.getShape().back(), "classes in logits")))
    return failure();
  return success();
}

/// Checks expert_ids [B, S, K] with `1 <= K <= numExperts`; when `batchSeq`
/// is given, [B, S] must equal it (`source` names its operand).
LogicalResult checkExpertIds(EmitErrorFn emitError, RankedTensorType ids,
                             int64_t numExperts, ArrayRef<int64_t> batchSeq,
                             StringRef source) {
  if (failed(checkRank(emitError, "expert_ids", ids, 3, "[B, S, K]")))
    return failure();
  ArrayRef<int64_t> shape = ids.getShape();
  if (!batchSeq.empty() && shape.take_front(2) != batchSeq)
    return emitError() << "expert_ids [B, S] = "
                       << shapeStr(shape.take_front(2)) << " must match "
                       << source << " [B, S] = " << shapeStr(batchSeq);
  if (shape[2] < 1 || shape[2] > numExperts)
    return emitError() << "expert_ids top-k (" << shape[2]
                       << ") must be in [1, " << numExperts
                       << "] (number of experts)";
  return success();
}

/// Shared by the router gradient and the aux loss: logits [B, S, E] and
/// expert_ids [B, S, K].
LogicalResult checkRouting(EmitErrorFn emitError, Value logits,
                           Value expertIds) {
  RankedTensorType logitsType = tensorOf(logits);
  if (failed(checkRank(emitError, "logits", logitsType, 3, "[B, S, E]")))
    return failure();
  ArrayRef<int64_t> shape = logitsType.getShape();
  return checkExpertIds(emitError, tensorOf(expertIds), shape[2],
                        shape.take_front(2), "logits");
}

/// Shared by dispatch_grad, combine and combine_grad: an expert buffer
/// [E, B, C, H] and the expert_ids [B, S, K] that fill it.
LogicalResult checkExpertBuffer(EmitErrorFn emitError, StringRef name,
                                RankedTensorType buf,
                                RankedTensorType expertIds) {
  if (failed(checkRank(emitError, name, buf, 4, "[E, B, C, H]")) ||
      failed(checkExpertIds(emitError, expertIds, buf.getDimSize(0), {}, "")))
    return failure();
  if (buf.getDimSize(1) != expertIds.getDimSize(0))
    return emitError() << name << " batch (" << buf.getDimSize(1)
                       << ") must match expert_ids batch ("
                       << expertIds.getDimSize(0) << ")";
  return success();
}

/// moe_combine's rules and its `y` type [B, S, H].
LogicalResult computeCombine(EmitErrorFn emitError, Value buf, Value gates,
                             Value expertIds,
                             SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType bufType = tensorOf(buf), idsType = tensorOf(expertIds);
  if (failed(checkExpertBuffer(emitError, "buf", bufType, idsType)))
    return failure();
  Type elt = bufType.getElementType();
  if (failed(checkType(emitError, "gates", gates.getType(),
                       RankedTensorType::get(idsType.getShape(), elt),
                       "shape of expert_ids, element type of buf")))
    return failure();
  resultTypes.push_back(RankedTensorType::get(
      {idsType.getDimSize(0), idsType.getDimSize(1), bufType.getDimSize(3)},
      elt));
  return success();
}

} // namespace

namespace autoshard::tfm::detail {

/// Compares an op's result types with its `computeResultTypes`; `names` are
/// the ODS result names, used in the message.
template <typename OpT>
LogicalResult verifyComputedResultTypes(OpT op, ArrayRef<StringRef> names) {
  SmallVector<Type> expected;
  if (failed(OpT::computeResultTypes([&] { return op.emitOpError(); },
                                     typename OpT::Adaptor(op), expected)))
    return failure();
  for (auto [actual, want, name] :
       llvm::zip_equal(op->getResultTypes(), expected, names)) {
    if (actual != want)
      return op.emitOpError() << name << " type must be " << want
                              << " (inferred from operands), found " << actual;
  }
  return success();
}

/// Null result types that keep the generated builders' result-count checks
/// happy until addComputedResultTypes replaces them.
SmallVector<Type, 4> pendingResultTypes(unsigned count) {
  return SmallVector<Type, 4>(count, Type());
}

/// Replaces the result types of `state` (operands and attributes already
/// added) by the computed ones. Like upstream's type-inferring builders, an
/// ill-typed op is a fatal error, after the violated rule is reported at the
/// op's location.
template <typename AdaptorT>
void addComputedResultTypes(OperationState &state,
                            LogicalResult (*compute)(EmitErrorFn, AdaptorT,
                                                     SmallVectorImpl<Type> &)) {
  AdaptorT adaptor(state.operands,
                   state.attributes.getDictionary(state.getContext()),
                   state.getRawProperties());
  SmallVector<Type> types;
  auto emitError = [&] {
    return mlir::emitError(state.location)
           << "'" << state.name.getStringRef() << "' op ";
  };
  if (failed(compute(emitError, adaptor, types)))
    llvm::report_fatal_error(llvm::Twine("cannot infer result types of ") +
                             state.name.getStringRef());
  state.types.assign(types.begin(), types.end());
}

/// Elementwise binary ops: `rhs` must equal `lhs` or a suffix of its shape;
/// the result is `lhs`.
LogicalResult computeBroadcastBinary(EmitErrorFn emitError, Value lhs,
                                     Value rhs,
                                     SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType lhsType = tensorOf(lhs), rhsType = tensorOf(rhs);
  if (failed(checkSameElementType(emitError, lhsType, rhsType)))
    return failure();
  if (rhsType.getRank() > lhsType.getRank() ||
      lhsType.getShape().take_back(rhsType.getRank()) != rhsType.getShape())
    return emitError() << "rhs shape must be a suffix of lhs shape "
                       << shapeStr(lhsType.getShape()) << ", found "
                       << shapeStr(rhsType.getShape());
  resultTypes.push_back(lhsType);
  return success();
}

/// Every value in `others` must have the type of `ref`, which is the type of
/// every result (`count` of them).
LogicalResult computeSameType(EmitErrorFn emitError,
                              ArrayRef<std::pair<StringRef, Value>> others,
                              StringRef refName, Value ref,
                              SmallVectorImpl<Type> &resultTypes,
                              unsigned count = 1) {
  std::string source = ("type of " + refName).str();
  for (auto [name, value] : others)
    if (failed(
            checkType(emitError, name, value.getType(), ref.getType(), source)))
      return failure();
  resultTypes.append(count, ref.getType());
  return success();
}

/// rope and rope_grad: `input` [B, S, N, D] with D even, `theta > 0`.
LogicalResult computeRope(EmitErrorFn emitError, StringRef name, Value input,
                          double theta, SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType type = tensorOf(input);
  if (failed(checkPositive(emitError, "theta", theta)) ||
      failed(checkRank(emitError, name, type, 4, "[B, S, N, D]")))
    return failure();
  if (type.getDimSize(3) % 2 != 0)
    return emitError() << "head dim D must be even, found "
                       << type.getDimSize(3);
  resultTypes.push_back(type);
  return success();
}

/// rope_local and rope_local_grad: the rope rules, plus `seq_len` a
/// positive multiple of the local sequence length.
LogicalResult computeRopeLocal(EmitErrorFn emitError, StringRef name,
                               Value input, double theta, int64_t seqLen,
                               SmallVectorImpl<Type> &resultTypes) {
  if (failed(computeRope(emitError, name, input, theta, resultTypes)))
    return failure();
  int64_t local = tensorOf(input).getDimSize(1);
  if (seqLen < 1 || local == 0 || seqLen % local != 0)
    return emitError() << "seq_len must be a positive multiple of the local "
                          "sequence length "
                       << local << ", found " << seqLen;
  return success();
}

/// dropout and dropout_grad: `rate` in [0, 1), `site >= 0`.
LogicalResult computeDropout(EmitErrorFn emitError, Value input, double rate,
                             int64_t site, SmallVectorImpl<Type> &resultTypes) {
  if (failed(checkUnitInterval(emitError, "rate", rate)))
    return failure();
  if (site < 0)
    return emitError() << "site must be >= 0, found " << site;
  resultTypes.push_back(input.getType());
  return success();
}

/// dropout_local and dropout_local_grad: the dropout rules, plus
/// `global_shape` of the input's rank, `shard_dims` strictly increasing dims
/// with one shard operand each, a sharded dim a divisor of its global size
/// and every other dim whole.
LogicalResult computeDropoutLocal(EmitErrorFn emitError, Value input,
                                  size_t numShards, double rate, int64_t site,
                                  ArrayRef<int64_t> globalShape,
                                  ArrayRef<int64_t> shardDims,
                                  SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType type = tensorOf(input);
  int64_t rank = type.getRank();
  if (static_cast<int64_t>(globalShape.size()) != rank)
    return emitError() << "global_shape " << shapeStr(globalShape)
                       << " must have the input's rank " << rank;
  if (numShards != shardDims.size())
    return emitError() << "needs one shard operand per sharded dim: "
                       << shardDims.size() << " shard_dims "
                       << shapeStr(shardDims) << ", found " << numShards
                       << " shard operands";
  for (auto [k, d] : llvm::enumerate(shardDims)) {
    if (d < 0 || d >= rank)
      return emitError() << "shard_dims " << shapeStr(shardDims)
                         << " must be dims of the rank-" << rank << " input";
    if (k > 0 && shardDims[k - 1] >= d)
      return emitError() << "shard_dims " << shapeStr(shardDims)
                         << " must be strictly increasing";
  }
  for (int64_t d = 0; d < rank; ++d) {
    int64_t local = type.getDimSize(d), global = globalShape[d];
    if (llvm::is_contained(shardDims, d)) {
      if (local < 1 || global < local || global % local != 0)
        return emitError() << "global dim " << d << " (" << global
                           << ") must be a multiple of the local dim " << local;
    } else if (local != global) {
      return emitError() << "dim " << d << " is not sharded, so the local dim "
                         << local << " must equal the global dim " << global;
    }
  }
  return computeDropout(emitError, input, rate, site, resultTypes);
}

/// Result type of an embedding lookup (embedding, vocab_embedding): the shape
/// of `ids` + [H] of `table` [V, H] (`layout` names the table's dims in the
/// error), with the table's element type.
LogicalResult computeEmbedding(EmitErrorFn emitError, Value ids, Value table,
                               StringRef layout,
                               SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType tableType = tensorOf(table);
  if (failed(checkRank(emitError, "table", tableType, 2, layout)))
    return failure();
  SmallVector<int64_t> shape(tensorOf(ids).getShape());
  shape.push_back(tableType.getDimSize(1));
  resultTypes.push_back(
      RankedTensorType::get(shape, tableType.getElementType()));
  return success();
}

/// Result type of an embedding gradient (embedding_grad,
/// vocab_embedding_grad): `[rows, H]` with `dy`'s element type, for `dy`
/// `[ids..., H]` and `rows >= 1` (named `num_embeddings`).
LogicalResult computeEmbeddingGrad(EmitErrorFn emitError, Value dy, Value ids,
                                   int64_t rows,
                                   SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType dyType = tensorOf(dy);
  if (failed(checkCount(emitError, "num_embeddings", rows)) ||
      failed(checkLeadingDims(emitError, "dy", dyType, "ids",
                              tensorOf(ids).getShape())))
    return failure();
  resultTypes.push_back(RankedTensorType::get({rows, dyType.getShape().back()},
                                              dyType.getElementType()));
  return success();
}

} // namespace autoshard::tfm::detail

using namespace autoshard::tfm::detail;

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::computeResultTypes(EmitErrorFn emitError,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType lhs = tensorOf(adaptor.getLhs());
  RankedTensorType rhs = tensorOf(adaptor.getRhs());
  if (failed(checkSameElementType(emitError, lhs, rhs)) ||
      failed(checkMinRank(emitError, "lhs", lhs, 2)) ||
      failed(checkMinRank(emitError, "rhs", rhs, 2)))
    return failure();
  int64_t lr = lhs.getRank(), rr = rhs.getRank();
  ArrayRef<int64_t> ls = lhs.getShape(), rs = rhs.getShape();
  if (rr != 2 && rr != lr)
    return emitError() << "rhs must be rank 2 or have lhs's rank " << lr
                       << ", found rank " << rr;
  if (rr == lr && ls.drop_back(2) != rs.drop_back(2))
    return emitError() << "batch dims must match: lhs "
                       << shapeStr(ls.drop_back(2)) << ", rhs "
                       << shapeStr(rs.drop_back(2));
  int64_t m = ls[lr - 2], k = ls[lr - 1];
  if (adaptor.getTransposeLhs())
    std::swap(m, k);
  int64_t rk = rs[rr - 2], n = rs[rr - 1];
  if (adaptor.getTransposeRhs())
    std::swap(rk, n);
  if (k != rk)
    return emitError() << "contracting dims must match: lhs K = " << k
                       << ", rhs K = " << rk;
  SmallVector<int64_t> shape(ls.drop_back(2));
  shape.append({m, n});
  resultTypes.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

LogicalResult
MatmulWgradOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                  SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType x = tensorOf(adaptor.getX()), dy = tensorOf(adaptor.getDy());
  if (failed(checkSameElementType(emitError, x, dy)) ||
      failed(checkMinRank(emitError, "x", x, 2)) ||
      failed(checkMinRank(emitError, "dy", dy, 2)))
    return failure();
  if (x.getShape().drop_back() != dy.getShape().drop_back())
    return emitError() << "leading dims of x " << shapeStr(x.getShape())
                       << " and dy " << shapeStr(dy.getShape())
                       << " must match";
  resultTypes.push_back(RankedTensorType::get(
      {x.getShape().back(), dy.getShape().back()}, x.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult ScaleOp::computeResultTypes(EmitErrorFn, Adaptor adaptor,
                                          SmallVectorImpl<Type> &resultTypes) {
  resultTypes.push_back(adaptor.getX().getType());
  return success();
}

/// Shared by reduce_sum and broadcast: checks that `dims` are sorted, unique
/// dims of `full` and returns `full` without them.
static FailureOr<RankedTensorType> removeDims(EmitErrorFn emitError,
                                              RankedTensorType full,
                                              ArrayRef<int64_t> dims) {
  for (auto [i, dim] : llvm::enumerate(dims)) {
    if (dim < 0 || dim >= full.getRank())
      return emitError() << "dims must be in [0, " << full.getRank()
                         << "), found " << dim;
    if (i > 0 && dim <= dims[i - 1])
      return emitError() << "dims must be sorted and unique, found "
                         << shapeStr(dims);
  }
  SmallVector<int64_t> shape;
  for (auto [i, size] : llvm::enumerate(full.getShape()))
    if (!llvm::is_contained(dims, static_cast<int64_t>(i)))
      shape.push_back(size);
  return RankedTensorType::get(shape, full.getElementType());
}

LogicalResult
ReduceSumOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                SmallVectorImpl<Type> &resultTypes) {
  FailureOr<RankedTensorType> reduced =
      removeDims(emitError, tensorOf(adaptor.getX()), adaptor.getDims());
  if (failed(reduced))
    return failure();
  resultTypes.push_back(*reduced);
  return success();
}

LogicalResult BroadcastOp::verify() {
  RankedTensorType x = getX().getType(), result = getType();
  FailureOr<RankedTensorType> expected =
      removeDims([&] { return emitOpError(); }, result, getDims());
  if (failed(expected))
    return failure();
  if (x != *expected)
    return emitOpError() << "x must be " << *expected
                         << " (result type without dims " << shapeStr(getDims())
                         << "), found " << x;
  return success();
}

LogicalResult CastOp::verify() {
  RankedTensorType x = getX().getType(), result = getType();
  if (x.getShape() != result.getShape())
    return emitOpError() << "shape must be preserved: x has shape "
                         << shapeStr(x.getShape()) << ", result has shape "
                         << shapeStr(result.getShape());
  return success();
}

//===----------------------------------------------------------------------===//
// Embeddings
//===----------------------------------------------------------------------===//

LogicalResult
MicrobatchOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                 SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType x = tensorOf(adaptor.getX());
  int64_t index = adaptor.getIndexAttr().getInt();
  int64_t count = adaptor.getCountAttr().getInt();
  if (failed(checkMinRank(emitError, "x", x, 1)) ||
      failed(checkCount(emitError, "count", count)))
    return failure();
  if (index < 0 || index >= count)
    return emitError() << "index must be in [0, " << count << "), found "
                       << index;
  if (x.getDimSize(0) % count != 0)
    return emitError() << "the batch dim of x (" << x.getDimSize(0)
                       << ") is not divisible by count = " << count;
  SmallVector<int64_t> shape(x.getShape());
  shape[0] /= count;
  resultTypes.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult
PositionEmbeddingOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                        SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType table = tensorOf(adaptor.getTable());
  int64_t seqLen = adaptor.getSeqLenAttr().getInt();
  if (failed(checkRank(emitError, "table", table, 2, "[P, H]")) ||
      failed(checkCount(emitError, "seq_len", seqLen, table.getDimSize(0),
                        "rows of table")))
    return failure();
  resultTypes.push_back(RankedTensorType::get({seqLen, table.getDimSize(1)},
                                              table.getElementType()));
  return success();
}

LogicalResult PositionEmbeddingGradOp::computeResultTypes(
    EmitErrorFn emitError, Adaptor adaptor,
    SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType dy = tensorOf(adaptor.getDy());
  int64_t positions = adaptor.getNumPositionsAttr().getInt();
  if (failed(checkCount(emitError, "num_positions", positions)) ||
      failed(checkMinRank(emitError, "dy", dy, 2)))
    return failure();
  int64_t seqLen = dy.getDimSize(dy.getRank() - 2);
  if (seqLen > positions)
    return emitError() << "dy sequence length (" << seqLen
                       << ") must be <= num_positions (" << positions << ")";
  resultTypes.push_back(RankedTensorType::get({positions, dy.getShape().back()},
                                              dy.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

LogicalResult
LayerNormOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                SmallVectorImpl<Type> &resultTypes) {
  if (failed(checkNorm(emitError, adaptor.getEpsilon().convertToDouble(),
                       nullptr, adaptor.getX(), adaptor.getGamma(),
                       adaptor.getBeta())))
    return failure();
  resultTypes.push_back(adaptor.getX().getType());
  return success();
}

LogicalResult
LayerNormGradOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                    SmallVectorImpl<Type> &resultTypes) {
  if (failed(checkNorm(emitError, adaptor.getEpsilon().convertToDouble(),
                       adaptor.getDy(), adaptor.getX(), adaptor.getGamma())))
    return failure();
  Type gamma = adaptor.getGamma().getType();
  resultTypes.append({adaptor.getX().getType(), gamma, gamma});
  return success();
}

LogicalResult
RmsNormOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                              SmallVectorImpl<Type> &resultTypes) {
  if (failed(checkNorm(emitError, adaptor.getEpsilon().convertToDouble(),
                       nullptr, adaptor.getX(), adaptor.getGamma())))
    return failure();
  resultTypes.push_back(adaptor.getX().getType());
  return success();
}

LogicalResult
RmsNormGradOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                  SmallVectorImpl<Type> &resultTypes) {
  if (failed(checkNorm(emitError, adaptor.getEpsilon().convertToDouble(),
                       adaptor.getDy(), adaptor.getX(), adaptor.getGamma())))
    return failure();
  resultTypes.append({adaptor.getX().getType(), adaptor.getGamma().getType()});
  return success();
}

//===----------------------------------------------------------------------===//
// Activations (gelu, silu and their gradients are defined by their ODS class)
//===----------------------------------------------------------------------===//

LogicalResult SwigluOp::computeResultTypes(EmitErrorFn emitError,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &resultTypes) {
  return computeSameType(emitError, {{"up", adaptor.getUp()}}, "gate",
                         adaptor.getGate(), resultTypes);
}

LogicalResult
SwigluGradOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                 SmallVectorImpl<Type> &resultTypes) {
  return computeSameType(emitError,
                         {{"up", adaptor.getUp()}, {"dy", adaptor.getDy()}},
                         "gate", adaptor.getGate(), resultTypes, /*count=*/2);
}

//===----------------------------------------------------------------------===//
// Positional / shape (rope and rope_grad are defined by their ODS class)
//===----------------------------------------------------------------------===//

/// Element count of a static-shape tensor, or nullopt if it does not fit in
/// int64 (ShapedType::getNumElements would silently wrap).
static std::optional<int64_t> checkedNumElements(RankedTensorType type) {
  int64_t count = 1;
  for (int64_t size : type.getShape())
    if (llvm::MulOverflow(count, size, count))
      return std::nullopt;
  return count;
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType x = getX().getType(), y = getType();
  if (x.getElementType() != y.getElementType())
    return emitOpError() << "element type must be preserved: x has "
                         << x.getElementType() << ", y has "
                         << y.getElementType();
  std::optional<int64_t> xCount = checkedNumElements(x),
                         yCount = checkedNumElements(y);
  if (!xCount || !yCount)
    return emitOpError() << "element count of " << (xCount ? "y" : "x")
                         << " (shape " << shapeStr((xCount ? y : x).getShape())
                         << ") overflows int64";
  if (*xCount != *yCount)
    return emitOpError() << "element count must be preserved: x has " << *xCount
                         << " elements, y has " << *yCount;
  return success();
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

LogicalResult
AttentionOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                SmallVectorImpl<Type> &resultTypes) {
  return computeAttention(emitError, adaptor.getQ(), adaptor.getK(),
                          adaptor.getV(), adaptor.getCausal(),
                          adaptor.getScale().convertToDouble(), resultTypes);
}

namespace {

/// attention_grad and attention_block_grad: the forward's rules, `dout` and
/// `out` of q's type, `lse` the forward's; results (dq, dk, dv) of the types
/// of (q, k, v).
template <typename Adaptor>
LogicalResult computeAttentionGrad(EmitErrorFn emitError, Adaptor adaptor,
                                   SmallVectorImpl<Type> &resultTypes) {
  SmallVector<Type, 2> forward;
  if (failed(computeAttention(emitError, adaptor.getQ(), adaptor.getK(),
                              adaptor.getV(), adaptor.getCausal(),
                              adaptor.getScale().convertToDouble(), forward)) ||
      failed(checkType(emitError, "dout", adaptor.getDout().getType(),
                       forward[0], "type of q")) ||
      failed(checkType(emitError, "out", adaptor.getOut().getType(), forward[0],
                       "type of q")) ||
      failed(checkType(emitError, "lse", adaptor.getLse().getType(), forward[1],
                       "[B, N, Sq] f32")))
    return failure();
  resultTypes.append({adaptor.getQ().getType(), adaptor.getK().getType(),
                      adaptor.getV().getType()});
  return success();
}

} // namespace

LogicalResult
AttentionGradOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                    SmallVectorImpl<Type> &resultTypes) {
  return computeAttentionGrad(emitError, adaptor, resultTypes);
}

//===----------------------------------------------------------------------===//
// Ring attention
//===----------------------------------------------------------------------===//

namespace {

/// attention_block(_grad): chunks of equal length, `num_chunks >= 1`,
/// `0 <= kv_step < num_chunks`.
LogicalResult checkRingBlock(EmitErrorFn emitError, Value q, Value k,
                             int64_t kvStep, int64_t numChunks) {
  int64_t sq = tensorOf(q).getDimSize(1), sk = tensorOf(k).getDimSize(1);
  if (sq != sk)
    return emitError()
           << "q and k must hold chunks of equal length, found Sq = " << sq
           << ", Sk = " << sk;
  if (numChunks < 1)
    return emitError() << "num_chunks must be >= 1, found " << numChunks;
  if (kvStep < 0 || kvStep >= numChunks)
    return emitError() << "kv_step must be in [0, num_chunks = " << numChunks
                       << "), found " << kvStep;
  return success();
}

} // namespace

LogicalResult
AttentionBlockOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                     SmallVectorImpl<Type> &resultTypes) {
  if (failed(checkRingBlock(emitError, adaptor.getQ(), adaptor.getK(),
                            adaptor.getKvStepAttr().getInt(),
                            adaptor.getNumChunksAttr().getInt())))
    return failure();
  return computeAttention(emitError, adaptor.getQ(), adaptor.getK(),
                          adaptor.getV(), adaptor.getCausal(),
                          adaptor.getScale().convertToDouble(), resultTypes);
}

LogicalResult
AttentionBlockGradOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                         SmallVectorImpl<Type> &resultTypes) {
  if (failed(checkRingBlock(emitError, adaptor.getQ(), adaptor.getK(),
                            adaptor.getKvStepAttr().getInt(),
                            adaptor.getNumChunksAttr().getInt())))
    return failure();
  return computeAttentionGrad(emitError, adaptor, resultTypes);
}

LogicalResult
AttentionMergeOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                     SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType out = tensorOf(adaptor.getOutA());
  if (failed(checkRank(emitError, "out_a", out, 4, "[B, S, N, D]")))
    return failure();
  ArrayRef<int64_t> os = out.getShape();
  auto lse = RankedTensorType::get({os[0], os[2], os[1]},
                                   Float32Type::get(out.getContext()));
  if (failed(checkType(emitError, "lse_a", adaptor.getLseA().getType(), lse,
                       "[B, N, S] f32")) ||
      failed(checkType(emitError, "out_b", adaptor.getOutB().getType(), out,
                       "type of out_a")) ||
      failed(checkType(emitError, "lse_b", adaptor.getLseB().getType(), lse,
                       "[B, N, S] f32")))
    return failure();
  resultTypes.append({out, lse});
  return success();
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

LogicalResult
CrossEntropyOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                   SmallVectorImpl<Type> &resultTypes) {
  if (failed(checkCrossEntropy(emitError, adaptor.getLogits(),
                               adaptor.getLabels(), adaptor.getVocabSize())))
    return failure();
  resultTypes.push_back(scalarF32(adaptor.getLogits().getContext()));
  return success();
}

LogicalResult
CrossEntropyGradOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                       SmallVectorImpl<Type> &resultTypes) {
  if (failed(checkCrossEntropy(emitError, adaptor.getLogits(),
                               adaptor.getLabels(), adaptor.getVocabSize())))
    return failure();
  resultTypes.push_back(adaptor.getLogits().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// MoE
//===----------------------------------------------------------------------===//

LogicalResult
MoeRouterOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType logits = tensorOf(adaptor.getLogits());
  if (failed(checkRank(emitError, "logits", logits, 3, "[B, S, E]")))
    return failure();
  int64_t topK = adaptor.getTopKAttr().getInt();
  if (failed(checkCount(emitError, "top_k", topK, logits.getDimSize(2),
                        "number of experts")))
    return failure();
  SmallVector<int64_t> shape = {logits.getDimSize(0), logits.getDimSize(1),
                                topK};
  resultTypes.push_back(RankedTensorType::get(shape, logits.getElementType()));
  resultTypes.push_back(
      RankedTensorType::get(shape, IntegerType::get(logits.getContext(), 32)));
  return success();
}

LogicalResult
MoeRouterGradOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                    SmallVectorImpl<Type> &resultTypes) {
  if (failed(
          checkRouting(emitError, adaptor.getLogits(), adaptor.getExpertIds())))
    return failure();
  RankedTensorType logits = tensorOf(adaptor.getLogits());
  auto gates = RankedTensorType::get(
      tensorOf(adaptor.getExpertIds()).getShape(), logits.getElementType());
  if (failed(checkType(emitError, "dgates", adaptor.getDgates().getType(),
                       gates, "shape of expert_ids, element type of logits")))
    return failure();
  resultTypes.push_back(logits);
  return success();
}

LogicalResult
MoeAuxLossOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                 SmallVectorImpl<Type> &resultTypes) {
  if (failed(
          checkRouting(emitError, adaptor.getLogits(), adaptor.getExpertIds())))
    return failure();
  resultTypes.push_back(scalarF32(adaptor.getLogits().getContext()));
  return success();
}

LogicalResult
MoeAuxLossGradOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                     SmallVectorImpl<Type> &resultTypes) {
  if (failed(
          checkRouting(emitError, adaptor.getLogits(), adaptor.getExpertIds())))
    return failure();
  resultTypes.push_back(adaptor.getLogits().getType());
  return success();
}

LogicalResult
MoeDispatchOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                  SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType x = tensorOf(adaptor.getX());
  int64_t experts = adaptor.getNumExpertsAttr().getInt();
  int64_t capacity = adaptor.getCapacityAttr().getInt();
  if (failed(checkCount(emitError, "num_experts", experts)) ||
      failed(checkCount(emitError, "capacity", capacity)) ||
      failed(checkRank(emitError, "x", x, 3, "[B, S, H]")) ||
      failed(checkExpertIds(emitError, tensorOf(adaptor.getExpertIds()),
                            experts, x.getShape().take_front(2), "x")))
    return failure();
  resultTypes.push_back(RankedTensorType::get(
      {experts, x.getDimSize(0), capacity, x.getDimSize(2)},
      x.getElementType()));
  return success();
}

LogicalResult
MoeDispatchGradOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                      SmallVectorImpl<Type> &resultTypes) {
  RankedTensorType dbuf = tensorOf(adaptor.getDbuf());
  RankedTensorType ids = tensorOf(adaptor.getExpertIds());
  int64_t capacity = adaptor.getCapacityAttr().getInt();
  if (failed(checkCount(emitError, "capacity", capacity)) ||
      failed(checkExpertBuffer(emitError, "dbuf", dbuf, ids)))
    return failure();
  if (dbuf.getDimSize(2) != capacity)
    return emitError() << "dbuf capacity dim (" << dbuf.getDimSize(2)
                       << ") must equal capacity (" << capacity << ")";
  resultTypes.push_back(RankedTensorType::get(
      {ids.getDimSize(0), ids.getDimSize(1), dbuf.getDimSize(3)},
      dbuf.getElementType()));
  return success();
}

LogicalResult
MoeCombineOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                 SmallVectorImpl<Type> &resultTypes) {
  return computeCombine(emitError, adaptor.getBuf(), adaptor.getGates(),
                        adaptor.getExpertIds(), resultTypes);
}

LogicalResult
MoeCombineGradOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                     SmallVectorImpl<Type> &resultTypes) {
  SmallVector<Type, 1> forward;
  if (failed(computeCombine(emitError, adaptor.getBuf(), adaptor.getGates(),
                            adaptor.getExpertIds(), forward)) ||
      failed(checkType(emitError, "dy", adaptor.getDy().getType(), forward[0],
                       "type of moe_combine's result")))
    return failure();
  resultTypes.append(
      {adaptor.getBuf().getType(), adaptor.getGates().getType()});
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

LogicalResult
SumSquaresOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                                 SmallVectorImpl<Type> &resultTypes) {
  if (adaptor.getInputs().empty())
    return emitError() << "requires at least one operand";
  resultTypes.push_back(scalarF32(adaptor.getInputs()[0].getContext()));
  return success();
}

LogicalResult
ClipCoefOp::computeResultTypes(EmitErrorFn emitError, Adaptor adaptor,
                               SmallVectorImpl<Type> &resultTypes) {
  if (failed(checkPositive(emitError, "max_norm",
                           adaptor.getMaxNorm().convertToDouble())))
    return failure();
  resultTypes.append(2, adaptor.getSumsq().getType());
  return success();
}

Value AdamwOp::getUpdatedParameter() { return getParam(); }
Value AdamwOp::getParameterGradient() { return getGrad(); }
SmallVector<Value, 2> AdamwOp::getOptimizerStates() { return {getM(), getV()}; }

LogicalResult AdamwOp::computeResultTypes(EmitErrorFn emitError,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &resultTypes) {
  if (failed(checkUnitInterval(emitError, "beta1",
                               adaptor.getBeta1().convertToDouble())) ||
      failed(checkUnitInterval(emitError, "beta2",
                               adaptor.getBeta2().convertToDouble())) ||
      failed(checkPositive(emitError, "epsilon",
                           adaptor.getEpsilon().convertToDouble())) ||
      failed(checkNonNegative(emitError, "weight_decay",
                              adaptor.getWeightDecay().convertToDouble())))
    return failure();
  RankedTensorType param = tensorOf(adaptor.getParam());
  RankedTensorType grad = tensorOf(adaptor.getGrad());
  if (grad.getShape() != param.getShape())
    return emitError() << "grad shape " << shapeStr(grad.getShape())
                       << " must match param shape "
                       << shapeStr(param.getShape());
  return computeSameType(emitError,
                         {{"m", adaptor.getM()}, {"v", adaptor.getV()}},
                         "param", adaptor.getParam(), resultTypes,
                         /*count=*/3);
}

#define GET_OP_CLASSES
#include "autoshard/Dialect/Tfm/IR/TfmOps.cpp.inc"
