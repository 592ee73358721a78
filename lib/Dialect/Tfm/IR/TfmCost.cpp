//===- TfmCost.cpp - FLOP and byte counts of tfm ops ----------------------===//
//
// TfmCostOpInterface for every tfm op: FLOPs (a multiply-add counts 2) and
// bytes (every operand read once plus every result written once: the
// roofline's minimum traffic) of one execution on the op's operand shapes,
// global before `dist-partition`, per-rank after. The per-element FLOP
// figures are the ones each op's ODS description states ("FLOPs: ..."); the
// planner's cost model (lib/Planner) turns them into time with a roofline
// per op kind.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace autoshard::tfm {

double tensorElements(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked)
    return 0;
  double n = 1;
  for (int64_t d : ranked.getShape())
    n *= static_cast<double>(d);
  return n;
}

double tensorBytes(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked)
    return 0;
  unsigned bits = ranked.getElementType().getIntOrFloatBitWidth();
  return tensorElements(type) * static_cast<double>((bits + 7) / 8);
}

namespace {

/// Bytes of every operand read once plus every result written once.
double ioBytes(Operation *op) {
  double bytes = 0;
  for (Type t : op->getOperandTypes())
    bytes += tensorBytes(t);
  for (Type t : op->getResultTypes())
    bytes += tensorBytes(t);
  return bytes;
}

/// `flopsPerElement` FLOPs per element of `reference`, minimum traffic.
OpCost perElement(Operation *op, Type reference, double flopsPerElement) {
  return OpCost{flopsPerElement * tensorElements(reference), ioBytes(op)};
}

/// Same, per element of the first result.
OpCost perResultElement(Operation *op, double flopsPerElement) {
  return perElement(op, op->getResult(0).getType(), flopsPerElement);
}

/// Same, per element of the first operand.
OpCost perOperandElement(Operation *op, double flopsPerElement) {
  return perElement(op, op->getOperand(0).getType(), flopsPerElement);
}

/// Product of the leading dims (all but the last) of `type`.
double leadingElements(Type type) {
  auto ranked = cast<RankedTensorType>(type);
  if (ranked.getRank() == 0)
    return 1;
  return tensorElements(type) / static_cast<double>(ranked.getShape().back());
}

/// Attention FLOPs `4 * B * N * Sq * Sk * D`, halved when causal (the fused
/// kernel skips the masked half), for q `[B, Sq, N, D]` and k `[B, Sk, G,
/// D]`.
double attentionFlops(Type q, Type k, bool causal) {
  auto kt = cast<RankedTensorType>(k);
  double flops =
      4.0 * tensorElements(q) * static_cast<double>(kt.getDimSize(1));
  return causal ? flops / 2 : flops;
}

/// The kernel problem of attention with q `[B, Sq, N, D]` and k `[B, Sk,
/// G, D]`.
AttentionShape attentionShape(Type q, Type k, bool causal) {
  auto qt = cast<RankedTensorType>(q);
  AttentionShape s;
  s.seqQ = qt.getDimSize(1);
  s.seqK = cast<RankedTensorType>(k).getDimSize(1);
  s.batchHeads = leadingElements(q) / static_cast<double>(s.seqQ);
  s.causal = causal;
  return s;
}

} // namespace

// Linear algebra: 2·(result elements)·K.
OpCost MatmulOp::getCost() {
  // K is lhs's last dim, or its second-to-last with transpose_lhs.
  ArrayRef<int64_t> lhs = cast<RankedTensorType>(getLhs().getType()).getShape();
  double k =
      static_cast<double>(getTransposeLhs() ? lhs[lhs.size() - 2] : lhs.back());
  return OpCost{2.0 * tensorElements(getResult().getType()) * k,
                ioBytes(getOperation())};
}
OpCost MatmulWgradOp::getCost() {
  // dw[K, N] = x[T, K]^T dy[T, N]: 2·T·K·N.
  return OpCost{2.0 * leadingElements(getX().getType()) *
                    tensorElements(getDw().getType()),
                ioBytes(getOperation())};
}
RooflineKind MatmulOp::getRooflineKind() { return RooflineKind::Gemm; }
RooflineKind MatmulWgradOp::getRooflineKind() { return RooflineKind::Gemm; }
// Result [..., M, N]: a weight shared by every batch entry (2-D rhs) folds
// the batch dims into M, a batched rhs makes a batched GEMM; K from the
// FLOPs (2·M·N·K per entry).
std::optional<GemmShape> MatmulOp::getGemmShape() {
  ArrayRef<int64_t> shape = getResult().getType().getShape();
  GemmShape g;
  double batch = 1;
  for (int64_t d : shape.drop_back(2))
    batch *= static_cast<double>(d);
  g.n = static_cast<double>(shape.back());
  g.m = static_cast<double>(shape[shape.size() - 2]);
  if (getRhs().getType().getRank() == 2) {
    g.m *= batch;
    batch = 1;
  }
  g.batch = batch;
  double outputs = g.batch * g.m * g.n;
  g.k = outputs > 0 ? getCost().flops / (2 * outputs) : 0;
  return g;
}
// dw [K, N] summed over the tokens (x's leading dims): M = K rows, the
// reduction over the tokens.
std::optional<GemmShape> MatmulWgradOp::getGemmShape() {
  ArrayRef<int64_t> dw = getDw().getType().getShape();
  if (dw.size() != 2)
    return std::nullopt;
  GemmShape g;
  g.m = static_cast<double>(dw[0]);
  g.n = static_cast<double>(dw[1]);
  g.k = g.m * g.n > 0 ? getCost().flops / (2 * g.m * g.n) : 0;
  return g;
}

// Elementwise and reductions.
OpCost AddOp::getCost() { return perResultElement(getOperation(), 1); }
OpCost SubOp::getCost() { return perResultElement(getOperation(), 1); }
OpCost MulOp::getCost() { return perResultElement(getOperation(), 1); }
OpCost ScaleOp::getCost() { return perResultElement(getOperation(), 1); }
OpCost ReduceSumOp::getCost() { return perOperandElement(getOperation(), 1); }
OpCost BroadcastOp::getCost() { return perResultElement(getOperation(), 0); }
OpCost CastOp::getCost() { return perResultElement(getOperation(), 0); }

// Embeddings: gathers read only the rows they touch (the result's size).
OpCost EmbeddingOp::getCost() {
  return OpCost{0, tensorBytes(getIds().getType()) +
                       2 * tensorBytes(getOut().getType())};
}
OpCost EmbeddingGradOp::getCost() {
  return OpCost{tensorElements(getDy().getType()), ioBytes(getOperation())};
}
OpCost MicrobatchOp::getCost() {
  return OpCost{0, 2 * tensorBytes(getResult().getType())};
}
OpCost PositionEmbeddingOp::getCost() {
  return OpCost{0, 2 * tensorBytes(getOut().getType())};
}
OpCost PositionEmbeddingGradOp::getCost() {
  return perOperandElement(getOperation(), 1);
}

// Norms (per element of x; dy for layer_norm_grad).
OpCost LayerNormOp::getCost() { return perOperandElement(getOperation(), 8); }
OpCost LayerNormGradOp::getCost() {
  return perOperandElement(getOperation(), 12);
}
OpCost RmsNormOp::getCost() { return perOperandElement(getOperation(), 4); }
OpCost RmsNormGradOp::getCost() { return perOperandElement(getOperation(), 8); }

// Activations.
OpCost GeluOp::getCost() { return perOperandElement(getOperation(), 10); }
OpCost GeluGradOp::getCost() { return perOperandElement(getOperation(), 16); }
OpCost SiluOp::getCost() { return perOperandElement(getOperation(), 5); }
OpCost SiluGradOp::getCost() { return perOperandElement(getOperation(), 8); }
OpCost SwigluOp::getCost() { return perResultElement(getOperation(), 6); }
OpCost SwigluGradOp::getCost() { return perOperandElement(getOperation(), 10); }

// Positional, views, dropout.
OpCost RopeOp::getCost() { return perOperandElement(getOperation(), 3); }
OpCost RopeGradOp::getCost() { return perOperandElement(getOperation(), 3); }
OpCost ReshapeOp::getCost() { return OpCost{}; }
OpCost DropoutOp::getCost() { return perResultElement(getOperation(), 12); }
OpCost DropoutGradOp::getCost() { return perResultElement(getOperation(), 12); }
OpCost DropoutLocalOp::getCost() {
  return perResultElement(getOperation(), 12);
}
OpCost DropoutLocalGradOp::getCost() {
  return perResultElement(getOperation(), 12);
}

// Attention (fused; traffic is q, k, v, out, lse: no Sq x Sk matrix).
OpCost AttentionOp::getCost() {
  return OpCost{attentionFlops(getQ().getType(), getK().getType(), getCausal()),
                ioBytes(getOperation())};
}
OpCost AttentionGradOp::getCost() {
  // 10·B·N·Sq·Sk·D (2.5x the forward: recomputed scores plus dq, dk, dv).
  return OpCost{
      2.5 * attentionFlops(getQ().getType(), getK().getType(), getCausal()),
      ioBytes(getOperation())};
}
RooflineKind AttentionOp::getRooflineKind() { return RooflineKind::Attention; }
RooflineKind AttentionGradOp::getRooflineKind() {
  return RooflineKind::Attention;
}
std::optional<AttentionShape> AttentionOp::getAttentionShape() {
  return attentionShape(getQ().getType(), getK().getType(), getCausal());
}
std::optional<AttentionShape> AttentionGradOp::getAttentionShape() {
  return attentionShape(getQ().getType(), getK().getType(), getCausal());
}

// Ring attention blocks: the attention of one (query chunk, key chunk) pair,
// counted unmasked (whether a block is skipped is known at run time only).
OpCost AttentionBlockOp::getCost() {
  return OpCost{attentionFlops(getQ().getType(), getK().getType(), false),
                ioBytes(getOperation())};
}
OpCost AttentionBlockGradOp::getCost() {
  return OpCost{2.5 * attentionFlops(getQ().getType(), getK().getType(), false),
                ioBytes(getOperation())};
}
// Kernels that score every (query, key) pair of the block: the attention
// roofline, the block's score elements (unmasked, as the FLOPs).
RooflineKind AttentionBlockOp::getRooflineKind() {
  return RooflineKind::Attention;
}
RooflineKind AttentionBlockGradOp::getRooflineKind() {
  return RooflineKind::Attention;
}
std::optional<AttentionShape> AttentionBlockOp::getAttentionShape() {
  return attentionShape(getQ().getType(), getK().getType(), false);
}
std::optional<AttentionShape> AttentionBlockGradOp::getAttentionShape() {
  return attentionShape(getQ().getType(), getK().getType(), false);
}
OpCost AttentionMergeOp::getCost() {
  return perResultElement(getOperation(), 8);
}
OpCost RopeLocalOp::getCost() { return perResultElement(getOperation(), 3); }
OpCost RopeLocalGradOp::getCost() {
  return perResultElement(getOperation(), 3);
}

// Losses: about 5 FLOPs per logit.
OpCost CrossEntropyOp::getCost() {
  return perOperandElement(getOperation(), 5);
}
OpCost CrossEntropyGradOp::getCost() {
  return perResultElement(getOperation(), 5);
}
OpCost VocabEmbeddingOp::getCost() {
  return OpCost{0, tensorBytes(getIds().getType()) +
                       2 * tensorBytes(getOut().getType())};
}
OpCost VocabEmbeddingGradOp::getCost() {
  return OpCost{tensorElements(getDy().getType()), ioBytes(getOperation())};
}
OpCost VocabCeMaxOp::getCost() { return perOperandElement(getOperation(), 1); }
OpCost VocabCeStatsOp::getCost() {
  return perOperandElement(getOperation(), 4);
}
OpCost VocabCeLossOp::getCost() { return perOperandElement(getOperation(), 2); }
OpCost VocabCeGradOp::getCost() { return perResultElement(getOperation(), 5); }

// MoE (per token of the router logits [B, S, E]: E = last dim).
OpCost MoeRouterOp::getCost() {
  auto logits = cast<RankedTensorType>(getLogits().getType());
  double e = static_cast<double>(logits.getShape().back());
  double k = static_cast<double>(getTopK());
  return OpCost{leadingElements(logits) * (5 * e + k * e),
                ioBytes(getOperation())};
}
OpCost MoeRouterGradOp::getCost() {
  return perElement(getOperation(), getLogits().getType(), 4);
}
OpCost MoeAuxLossOp::getCost() {
  return perElement(getOperation(), getLogits().getType(), 5);
}
OpCost MoeAuxLossGradOp::getCost() {
  return perElement(getOperation(), getLogits().getType(), 4);
}
OpCost MoeDispatchOp::getCost() {
  return OpCost{0, 2 * tensorBytes(getX().getType()) *
                       static_cast<double>(
                           cast<RankedTensorType>(getExpertIds().getType())
                               .getShape()
                               .back())};
}
OpCost MoeDispatchGradOp::getCost() {
  return perResultElement(getOperation(), 1);
}
OpCost MoeCombineOp::getCost() {
  // 2·B·S·K·H: weighted sum of K expert outputs per token.
  return perElement(
      getOperation(), getY().getType(),
      2.0 *
          static_cast<double>(
              cast<RankedTensorType>(getGates().getType()).getShape().back()));
}
OpCost MoeCombineGradOp::getCost() {
  return perElement(
      getOperation(), getDy().getType(),
      4.0 *
          static_cast<double>(
              cast<RankedTensorType>(getGates().getType()).getShape().back()));
}

// Optimizer.
OpCost SumSquaresOp::getCost() {
  double n = 0;
  for (Value v : getInputs())
    n += tensorElements(v.getType());
  return OpCost{2 * n, ioBytes(getOperation())};
}
OpCost ClipCoefOp::getCost() { return OpCost{4, ioBytes(getOperation())}; }
OpCost AdamwOp::getCost() { return perOperandElement(getOperation(), 12); }

} // namespace autoshard::tfm
