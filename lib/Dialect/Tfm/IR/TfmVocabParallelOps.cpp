//===- TfmVocabParallelOps.cpp - Result types of the vocab-parallel ops ---===//
//
// The `computeResultTypes` rules of the vocab-parallel cross-entropy ops
// (`tfm.vocab_ce_*`), which the partition hook of cross_entropy emits
// (lib/Dialect/Tfm/Sharding/PartitionHooks.cpp). The vocab_embedding ops
// share the rules of embedding and embedding_grad (their ODS computeBody).
//
//===----------------------------------------------------------------------===//

#include "ShapeChecks.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace autoshard::tfm;
using namespace autoshard::tfm::checks;

//===----------------------------------------------------------------------===//
// Result types of the vocab-parallel local ops
//===----------------------------------------------------------------------===//

namespace {

RankedTensorType f32Tensor(MLIRContext *ctx, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, Float32Type::get(ctx));
}

/// `type` is `f32` with shape `shape`.
LogicalResult checkF32(EmitErrorFn emitError, StringRef name,
                       RankedTensorType type, ArrayRef<int64_t> shape,
                       StringRef source) {
  return checkType(emitError, name, type, f32Tensor(type.getContext(), shape),
                   source);
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
