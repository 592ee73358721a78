//===- TfmVJP.cpp - Gradient rules of the tfm forward ops ----------------===//
//
// TfmVJPOpInterface implementations: given the gradients of an op's results,
// each rule emits the gradients of its operands with the dialect's gradient
// ops (their semantics are in TfmOps.td and spec/tfm-ops.md). `tfm-autodiff`
// calls a rule only when at least one result gradient is non-null. Integer
// operands (token ids, labels, expert ids, step and layer indices) get a null
// gradient.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/Sequence.h"

using namespace mlir;
using namespace autoshard::tfm;

namespace {

int64_t rankOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getRank();
}

/// Gradient of the `rhs` of an elementwise op with suffix broadcasting: `grad`
/// has the shape of `lhs` and is summed over the leading dims that `rhs`
/// lacks (none when the shapes are equal).
Value sumToOperandShape(OpBuilder &b, Location loc, Value grad, Value rhs) {
  int64_t extra = rankOf(grad) - rankOf(rhs);
  if (extra == 0)
    return grad;
  auto dims = llvm::to_vector(llvm::seq<int64_t>(0, extra));
  return ReduceSumOp::create(b, loc, grad, dims);
}

/// Rules whose only differentiable operand is the first one and whose
/// gradient is `grad`; the remaining `numOperands - 1` operands (ids, step,
/// layer) get none.
LogicalResult firstOperandOnly(Operation *op, Value grad,
                               SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(grad);
  operandGrads.append(op->getNumOperands() - 1, Value());
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

/// With `A = lhs`, `B = rhs` and `op(.)` the optional transposes:
///
///   y = A B      dA = dy B^T      dB = A^T dy
///   y = A B^T    dA = dy B        dB = dy^T A
///   y = A^T B    dA = B dy^T      dB = A dy
///   y = A^T B^T  dA = B^T dy^T    dB = dy^T A^T
///
/// all batched over `A`'s leading dims. A 2-D `B` is a weight shared by every
/// leading index of `A`, so its gradient is summed over them: that is
/// `tfm.matmul_wgrad` (`x^T dy` over all leading dims; `dB` of `y = A B^T` is
/// its transpose, `matmul_wgrad(dy, A)`), which needs `K` innermost in `A`.
/// So `transpose_lhs` with a 2-D `B` is only differentiable when `A` is 2-D
/// too (plain matmuls); the builder never emits the batched form.
LogicalResult MatmulOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0], lhs = getLhs(), rhs = getRhs();
  bool tl = getTransposeLhs(), tr = getTransposeRhs();
  if (tl && rankOf(rhs) != rankOf(lhs))
    return emitOpError() << "has no gradient rule for transpose_lhs with a "
                            "rank-2 rhs shared by a batched lhs of rank "
                         << rankOf(lhs);
  Location loc = getLoc();
  Value dLhs = tl ? MatmulOp::create(b, loc, rhs, dy, tr, /*transposeRhs=*/true)
                  : MatmulOp::create(b, loc, dy, rhs, /*transposeLhs=*/false,
                                     /*transposeRhs=*/!tr);
  Value dRhs;
  if (rankOf(rhs) == 2 && !tl)
    dRhs = tr ? MatmulWgradOp::create(b, loc, dy, lhs)
              : MatmulWgradOp::create(b, loc, lhs, dy);
  else
    dRhs = tr ? MatmulOp::create(b, loc, dy, lhs, /*transposeLhs=*/true, tl)
              : MatmulOp::create(b, loc, lhs, dy, /*transposeLhs=*/!tl,
                                 /*transposeRhs=*/false);
  operandGrads.append({dLhs, dRhs});
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  operandGrads.append({dy, sumToOperandShape(b, getLoc(), dy, getRhs())});
  return success();
}

LogicalResult SubOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  Value dRhs = sumToOperandShape(b, getLoc(), dy, getRhs());
  operandGrads.append({dy, ScaleOp::create(b, getLoc(), dRhs, -1.0)});
  return success();
}

/// `rhs` is broadcast into `lhs`, so `dy * rhs` already has `lhs`'s shape
/// while `dy * lhs` is summed over the broadcast dims.
LogicalResult MulOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  Value dy = resultGrads[0];
  Location loc = getLoc();
  Value dLhs = MulOp::create(b, loc, dy, getRhs());
  Value dRhs =
      sumToOperandShape(b, loc, MulOp::create(b, loc, dy, getLhs()), getRhs());
  operandGrads.append({dLhs, dRhs});
  return success();
}

LogicalResult ScaleOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(ScaleOp::create(b, getLoc(), resultGrads[0],
                                         getFactor().convertToDouble()));
  return success();
}

LogicalResult ReduceSumOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(BroadcastOp::create(b, getLoc(), getX().getType(),
                                             resultGrads[0], getDims()));
  return success();
}

LogicalResult BroadcastOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      ReduceSumOp::create(b, getLoc(), resultGrads[0], getDims()));
  return success();
}

//===----------------------------------------------------------------------===//
// Embeddings
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  int64_t vocab = getTable().getType().getDimSize(0);
  operandGrads.append(
      {Value(),
       EmbeddingGradOp::create(b, getLoc(), getIds(), resultGrads[0], vocab)});
  return success();
}

LogicalResult
PositionEmbeddingOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  int64_t positions = getTable().getType().getDimSize(0);
  operandGrads.push_back(
      PositionEmbeddingGradOp::create(b, getLoc(), resultGrads[0], positions));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

/// layer_norm_grad always produces dbeta; it is the gradient of beta only
/// when the forward op has one.
LogicalResult LayerNormOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  auto grad =
      LayerNormGradOp::create(b, getLoc(), resultGrads[0], getX(), getGamma(),
                              getEpsilon().convertToDouble());
  operandGrads.append({grad.getDx(), grad.getDgamma()});
  if (getBeta())
    operandGrads.push_back(grad.getDbeta());
  return success();
}

LogicalResult RmsNormOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  auto grad = RmsNormGradOp::create(b, getLoc(), resultGrads[0], getX(),
                                    getGamma(), getEpsilon().convertToDouble());
  operandGrads.append({grad.getDx(), grad.getDgamma()});
  return success();
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

LogicalResult GeluOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      GeluGradOp::create(b, getLoc(), resultGrads[0], getX(), getTanhApprox()));
  return success();
}

LogicalResult SiluOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      SiluGradOp::create(b, getLoc(), resultGrads[0], getX()));
  return success();
}

LogicalResult SwigluOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  auto grad =
      SwigluGradOp::create(b, getLoc(), resultGrads[0], getGate(), getUp());
  operandGrads.append({grad.getDgate(), grad.getDup()});
  return success();
}

//===----------------------------------------------------------------------===//
// Positional / shape
//===----------------------------------------------------------------------===//

/// A rotation's transpose is the rotation by the opposite angle.
LogicalResult RopeOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(RopeGradOp::create(b, getLoc(), resultGrads[0],
                                            getTheta().convertToDouble()));
  return success();
}

/// The gradient of a conversion is the conversion back: an f32 master
/// weight cast to bf16 gets an f32 gradient.
LogicalResult CastOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      CastOp::create(b, getLoc(), getX().getType(), resultGrads[0]));
  return success();
}

LogicalResult ReshapeOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(
      ReshapeOp::create(b, getLoc(), getX().getType(), resultGrads[0]));
  return success();
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

/// The gradient regenerates the forward mask from the same (step, layer,
/// site) key instead of saving it.
LogicalResult DropoutOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  Value dx = DropoutGradOp::create(b, getLoc(), resultGrads[0], getStep(),
                                   getLayer(), getRate().convertToDouble(),
                                   static_cast<int64_t>(getSite()));
  return firstOperandOnly(*this, dx, operandGrads);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// The backward reads the saved `out` and `lse`; nothing may differentiate
/// through `lse` itself (the builder never uses it in the forward).
LogicalResult AttentionOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  if (resultGrads[1])
    return emitOpError()
           << "has no gradient rule for its lse result (it reaches the loss)";
  auto grad = AttentionGradOp::create(
      b, getLoc(), resultGrads[0], getQ(), getK(), getV(), getOut(), getLse(),
      getCausal(), getScale().convertToDouble());
  operandGrads.append({grad.getDq(), grad.getDk(), grad.getDv()});
  return success();
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  std::optional<int64_t> vocab;
  if (std::optional<uint64_t> v = getVocabSize())
    vocab = static_cast<int64_t>(*v);
  Value dLogits = CrossEntropyGradOp::create(b, getLoc(), resultGrads[0],
                                             getLogits(), getLabels(), vocab);
  return firstOperandOnly(*this, dLogits, operandGrads);
}

//===----------------------------------------------------------------------===//
// MoE
//===----------------------------------------------------------------------===//

/// Only the gates carry gradient (`expert_ids` is an integer result).
LogicalResult MoeRouterOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(MoeRouterGradOp::create(b, getLoc(), resultGrads[0],
                                                 getLogits(), getExpertIds(),
                                                 getRenormalize()));
  return success();
}

LogicalResult MoeAuxLossOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Value dLogits = MoeAuxLossGradOp::create(b, getLoc(), resultGrads[0],
                                           getLogits(), getExpertIds());
  return firstOperandOnly(*this, dLogits, operandGrads);
}

LogicalResult MoeDispatchOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value dx =
      MoeDispatchGradOp::create(b, getLoc(), resultGrads[0], getExpertIds(),
                                static_cast<int64_t>(getCapacity()));
  return firstOperandOnly(*this, dx, operandGrads);
}

LogicalResult MoeCombineOp::buildVJP(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  auto grad = MoeCombineGradOp::create(b, getLoc(), resultGrads[0], getBuf(),
                                       getGates(), getExpertIds());
  operandGrads.append({grad.getDbuf(), grad.getDgates(), Value()});
  return success();
}
