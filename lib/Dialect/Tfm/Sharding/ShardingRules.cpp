//===- ShardingRules.cpp - Factor sharding rules of the tfm ops -----------===//
//
// dist::ShardingRuleOpInterface external models of every tfm op (the
// semantics of a rule are documented on `dist::ShardingRule`). Conventions:
//
// * Batch-like dims (batch, sequence, heads, hidden of elementwise ops) are
//   PassThrough factors shared by every operand and result that has them.
// * Contracted / summed dims are Reduction factors: sharding them leaves the
//   results that lack the dim partial (sum). Gradient ops whose weight-like
//   results sum over the leading dims (matmul_wgrad, layer_norm_grad's
//   dgamma, embedding_grad, ...) make those leading dims Reduction factors;
//   results that keep the dim (dx) are simply split on it.
// * Dims that a nonlinear computation mixes (the normalised dim of a norm,
//   the sequence and head dims inside attention, the rotate-half pairs of
//   rope, experts inside the router and the MoE dispatch / combine) are
//   NeedsReplication.
// * `needsHook` marks factors whose sharding is legal only through the op's
//   partition hook: vocab-parallel embedding / cross-entropy (vocab offset),
//   the loss mean (local sums divided by the global token count), positions
//   (rope, dropout, position_embedding), sum_squares (no double counting of
//   replicated operands).
// * `linearOperandGroups` says through which operands a partial (sum) value
//   may flow without being reduced first.
//
// Each op's rule is an overload of `ruleOf`; the model is attached to every
// op of the dialect, so an op without a rule does not compile.
//
//===----------------------------------------------------------------------===//

#include "ExternalModels.h"

#include "autoshard/Dialect/Dist/Interfaces/ShardingInterfaces.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

#include "mlir/IR/BuiltinTypes.h"

#include <initializer_list>

using namespace mlir;
using namespace autoshard::tfm;
using autoshard::dist::FactorKind;
using autoshard::dist::FactorReduction;
using autoshard::dist::ShardingRule;

namespace {

ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

int64_t rankOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getRank();
}

constexpr FactorKind kPass = FactorKind::PassThrough;
constexpr FactorKind kRed = FactorKind::Reduction;
constexpr FactorKind kRepl = FactorKind::NeedsReplication;

/// Builds a rule for `op`: every operand / result dim starts unmapped (-1).
class RuleBuilder {
public:
  explicit RuleBuilder(Operation *op) : op(op) {
    for (Value operand : op->getOperands())
      rule.operandDims.emplace_back(rankOf(operand), -1);
    for (Value result : op->getResults())
      rule.resultDims.emplace_back(rankOf(result), -1);
  }

  int64_t factor(int64_t size, FactorKind kind, bool hook = false) {
    return rule.addFactor(size, kind, hook);
  }
  /// Ties dim `dim` of operand `i` to factor `f` (negative dims count from
  /// the end).
  RuleBuilder &operand(unsigned i, int64_t dim, int64_t f) {
    auto &dims = rule.operandDims[i];
    dims[dim < 0 ? dims.size() + dim : dim] = f;
    return *this;
  }
  RuleBuilder &result(unsigned i, int64_t dim, int64_t f) {
    auto &dims = rule.resultDims[i];
    dims[dim < 0 ? dims.size() + dim : dim] = f;
    return *this;
  }
  /// One factor for dim `dim` of operand `i`, tied to the same dim of the
  /// listed further operands and results.
  int64_t shared(FactorKind kind, unsigned i, int64_t dim,
                 std::initializer_list<unsigned> operands,
                 std::initializer_list<unsigned> results, bool hook = false) {
    int64_t d = dim < 0 ? rankOf(op->getOperand(i)) + dim : dim;
    int64_t f = factor(shapeOf(op->getOperand(i))[d], kind, hook);
    operand(i, d, f);
    for (unsigned o : operands)
      operand(o, d, f);
    for (unsigned r : results)
      result(r, d, f);
    return f;
  }
  /// Every dim of operand 0 as its own factor of `kind`, tied to the same
  /// dims of the listed operands and results (elementwise ops).
  void elementwise(FactorKind kind, std::initializer_list<unsigned> operands,
                   std::initializer_list<unsigned> results, bool hook = false) {
    for (int64_t d = 0, e = rankOf(op->getOperand(0)); d < e; ++d)
      shared(kind, 0, d, operands, results, hook);
  }
  void linear(std::initializer_list<int64_t> group) {
    rule.linearOperandGroups.emplace_back(group);
  }

  ShardingRule take() {
    // Fill the per-factor extension vectors so consumers can index them.
    rule.needsHook.resize(rule.factorSizes.size(), false);
    rule.reductionKinds.resize(rule.factorSizes.size(), FactorReduction::Sum);
    return std::move(rule);
  }

  Operation *op;
  ShardingRule rule;
};

/// Elementwise ops: every dim pass-through across all operands and results
/// of the same shape as operand 0; `linearIn` are the linear groups.
ShardingRule
elementwiseRule(Operation *op,
                std::initializer_list<std::initializer_list<int64_t>> linearIn,
                bool hook = false) {
  RuleBuilder b(op);
  ArrayRef<int64_t> shape = shapeOf(op->getOperand(0));
  for (int64_t d = 0, e = shape.size(); d < e; ++d) {
    int64_t f = b.factor(shape[d], kPass, hook);
    for (auto [i, operand] : llvm::enumerate(op->getOperands()))
      if (shapeOf(operand) == shape)
        b.operand(i, d, f);
    for (auto [i, result] : llvm::enumerate(op->getResults()))
      if (shapeOf(result) == shape)
        b.result(i, d, f);
  }
  for (auto group : linearIn)
    b.linear(group);
  return b.take();
}

/// Suffix-broadcasting binary op: `rhs` dims tie to the trailing `lhs` dims.
ShardingRule binaryRule(Operation *op, bool additive) {
  RuleBuilder b(op);
  int64_t lhsRank = rankOf(op->getOperand(0));
  int64_t rhsRank = rankOf(op->getOperand(1));
  for (int64_t d = 0; d < lhsRank; ++d) {
    int64_t f = b.shared(kPass, 0, d, {}, {0});
    if (d >= lhsRank - rhsRank)
      b.operand(1, d - (lhsRank - rhsRank), f);
  }
  if (additive) {
    b.linear({0, 1});
  } else {
    b.linear({0});
    b.linear({1});
  }
  return b.take();
}

/// Norm forward: leading dims pass-through, the normalised dim replicated.
ShardingRule normRule(Operation *op) {
  RuleBuilder b(op);
  int64_t rank = rankOf(op->getOperand(0));
  for (int64_t d = 0; d + 1 < rank; ++d)
    b.shared(kPass, 0, d, {}, {0});
  int64_t h = b.shared(kRepl, 0, rank - 1, {}, {0});
  for (unsigned i = 1; i < op->getNumOperands(); ++i)
    b.operand(i, 0, h); // gamma, beta
  return b.take();
}

/// Norm backward `(dy, x, gamma) -> (dx, dgamma[, dbeta])`: leading dims are
/// split in dx and summed into dgamma / dbeta (Reduction), H replicated.
ShardingRule normGradRule(Operation *op) {
  RuleBuilder b(op);
  int64_t rank = rankOf(op->getOperand(0));
  for (int64_t d = 0; d + 1 < rank; ++d)
    b.shared(kRed, 0, d, {1}, {0});
  int64_t h = b.shared(kRepl, 0, rank - 1, {1}, {0});
  b.operand(2, 0, h);
  for (unsigned r = 1; r < op->getNumResults(); ++r)
    b.result(r, 0, h);
  b.linear({0});
  return b.take();
}

} // namespace

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

/// `[..., M, K] x [K, N] -> [..., M, N]`: batch, M and N pass-through, K a
/// reduction (the row-parallel matmul leaves its result partial).
static ShardingRule ruleOf(MatmulOp op) {
  RuleBuilder b(op);
  int64_t rank = rankOf(op.getLhs());
  int64_t rhsRank = rankOf(op.getRhs());
  ArrayRef<int64_t> lhsShape = shapeOf(op.getLhs());
  ArrayRef<int64_t> rhsShape = shapeOf(op.getRhs());
  for (int64_t d = 0; d + 2 < rank; ++d) {
    int64_t f = b.shared(kPass, 0, d, {}, {0});
    if (rhsRank == rank)
      b.operand(1, d, f);
  }
  int64_t mDim = op.getTransposeLhs() ? rank - 1 : rank - 2;
  int64_t kLhs = op.getTransposeLhs() ? rank - 2 : rank - 1;
  int64_t kRhs = op.getTransposeRhs() ? rhsRank - 1 : rhsRank - 2;
  int64_t nDim = op.getTransposeRhs() ? rhsRank - 2 : rhsRank - 1;
  int64_t m = b.factor(lhsShape[mDim], kPass);
  b.operand(0, mDim, m).result(0, rank - 2, m);
  int64_t n = b.factor(rhsShape[nDim], kPass);
  b.operand(1, nDim, n).result(0, rank - 1, n);
  int64_t k = b.factor(lhsShape[kLhs], kRed);
  b.operand(0, kLhs, k).operand(1, kRhs, k);
  b.linear({0});
  b.linear({1});
  return b.take();
}

/// `[..., K] x [..., N] -> [K, N]`: leading dims reduced (the data-parallel
/// gradient is partial over the batch axes), K and N pass-through.
static ShardingRule ruleOf(MatmulWgradOp op) {
  RuleBuilder b(op);
  int64_t rank = rankOf(op.getX());
  for (int64_t d = 0; d + 1 < rank; ++d)
    b.shared(kRed, 0, d, {1}, {});
  int64_t k = b.factor(shapeOf(op.getX()).back(), kPass);
  b.operand(0, -1, k).result(0, 0, k);
  int64_t n = b.factor(shapeOf(op.getDy()).back(), kPass);
  b.operand(1, -1, n).result(0, 1, n);
  b.linear({0});
  b.linear({1});
  return b.take();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static ShardingRule ruleOf(AddOp op) { return binaryRule(op, true); }
static ShardingRule ruleOf(SubOp op) { return binaryRule(op, true); }
static ShardingRule ruleOf(MulOp op) { return binaryRule(op, false); }
static ShardingRule ruleOf(ScaleOp op) { return elementwiseRule(op, {{0}}); }
/// A conversion is elementwise; it is linear up to rounding, so a partial
/// sum may pass through it (a bf16 weight gradient is reduced after its cast
/// to f32, in f32).
static ShardingRule ruleOf(CastOp op) { return elementwiseRule(op, {{0}}); }

/// Summed dims are reductions, the others pass through to the result.
static ShardingRule ruleOf(ReduceSumOp op) {
  RuleBuilder b(op);
  ArrayRef<int64_t> reduced = op.getDims();
  int64_t out = 0;
  for (int64_t d = 0, e = rankOf(op.getX()); d < e; ++d) {
    if (llvm::is_contained(reduced, d)) {
      b.shared(kRed, 0, d, {}, {});
    } else {
      int64_t f = b.shared(kPass, 0, d, {}, {});
      b.result(0, out++, f);
    }
  }
  b.linear({0});
  return b.take();
}

/// New dims exist only in the result (each rank writes its slice).
static ShardingRule ruleOf(BroadcastOp op) {
  RuleBuilder b(op);
  ArrayRef<int64_t> added = op.getDims();
  ArrayRef<int64_t> shape = shapeOf(op.getResult());
  int64_t in = 0;
  for (int64_t d = 0, e = shape.size(); d < e; ++d) {
    int64_t f = b.factor(shape[d], kPass);
    b.result(0, d, f);
    if (!llvm::is_contained(added, d))
      b.operand(0, in++, f);
  }
  b.linear({0});
  return b.take();
}

//===----------------------------------------------------------------------===//
// Embeddings
//===----------------------------------------------------------------------===//

/// A lookup is a one-hot matmul: V is a reduction (a vocab-sharded table
/// leaves `out` partial, via the hook that masks rows outside the shard and
/// subtracts the vocab offset); ids dims and H pass through.
static ShardingRule ruleOf(EmbeddingOp op) {
  RuleBuilder b(op);
  for (int64_t d = 0, e = rankOf(op.getIds()); d < e; ++d)
    b.shared(kPass, 0, d, {}, {0});
  int64_t v = b.factor(shapeOf(op.getTable())[0], kRed, /*hook=*/true);
  b.operand(1, 0, v);
  int64_t h = b.factor(shapeOf(op.getTable())[1], kPass);
  b.operand(1, 1, h).result(0, -1, h);
  b.linear({1});
  return b.take();
}

/// Scatter-add: ids dims are reductions (dtable partial over the batch
/// axes), V of dtable passes through with the hook (local rows only), H
/// passes through.
static ShardingRule ruleOf(EmbeddingGradOp op) {
  RuleBuilder b(op);
  for (int64_t d = 0, e = rankOf(op.getIds()); d < e; ++d)
    b.shared(kRed, 0, d, {1}, {});
  int64_t v = b.factor(shapeOf(op.getDtable())[0], kPass, /*hook=*/true);
  b.result(0, 0, v);
  int64_t h = b.factor(shapeOf(op.getDy()).back(), kPass);
  b.operand(1, -1, h).result(0, 1, h);
  b.linear({1});
  return b.take();
}

/// `out[s] = table[s]`: when `S == P` the position dim passes through;
/// otherwise `out`'s S dim passes through with the hook (row offset) and the
/// table's P dim is replicated.
/// The microbatch's rows are the major part (size `B / count`) of the
/// batch dim: a split of it keeps whole groups of `count` rows per rank, so
/// the local op on the local rows is the microbatch of those rows.
static ShardingRule ruleOf(MicrobatchOp op) {
  RuleBuilder b(op);
  int64_t rows = shapeOf(op.getResult())[0];
  int64_t f = b.factor(rows, kPass);
  b.operand(0, 0, f).result(0, 0, f);
  for (int64_t d = 1, e = rankOf(op.getX()); d < e; ++d)
    b.shared(kPass, 0, d, {}, {0});
  return b.take();
}

static ShardingRule ruleOf(PositionEmbeddingOp op) {
  RuleBuilder b(op);
  int64_t p = shapeOf(op.getTable())[0];
  int64_t s = static_cast<int64_t>(op.getSeqLen());
  int64_t f = b.factor(s, kPass, /*hook=*/s != p);
  b.result(0, 0, f);
  if (s == p)
    b.operand(0, 0, f);
  b.shared(kPass, 0, 1, {}, {0});
  b.linear({0});
  return b.take();
}

/// `dtable[s] = sum_{lead} dy[..., s, :]`: leading dims reduce; S passes
/// through when `S == P`, else it is a reduction (the hook gathers `dy`
/// over it). Either way S needs the hook: with `S == P` the local op sums
/// only the local rows (`num_positions` = local rows), which the generic
/// clone of the op cannot express.
static ShardingRule ruleOf(PositionEmbeddingGradOp op) {
  RuleBuilder b(op);
  int64_t rank = rankOf(op.getDy());
  for (int64_t d = 0; d + 2 < rank; ++d)
    b.shared(kRed, 0, d, {}, {});
  int64_t s = shapeOf(op.getDy())[rank - 2];
  bool full = s == static_cast<int64_t>(op.getNumPositions());
  int64_t f = b.factor(s, full ? kPass : kRed, /*hook=*/true);
  b.operand(0, rank - 2, f);
  if (full)
    b.result(0, 0, f);
  int64_t h = b.factor(shapeOf(op.getDy()).back(), kPass);
  b.operand(0, -1, h).result(0, 1, h);
  b.linear({0});
  return b.take();
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

static ShardingRule ruleOf(LayerNormOp op) { return normRule(op); }
static ShardingRule ruleOf(LayerNormGradOp op) { return normGradRule(op); }
static ShardingRule ruleOf(RmsNormOp op) { return normRule(op); }
static ShardingRule ruleOf(RmsNormGradOp op) { return normGradRule(op); }

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

static ShardingRule ruleOf(GeluOp op) { return elementwiseRule(op, {}); }
static ShardingRule ruleOf(GeluGradOp op) { return elementwiseRule(op, {{0}}); }
static ShardingRule ruleOf(SiluOp op) { return elementwiseRule(op, {}); }
static ShardingRule ruleOf(SiluGradOp op) { return elementwiseRule(op, {{0}}); }
/// `silu(gate) * up` is linear in `up`.
static ShardingRule ruleOf(SwigluOp op) { return elementwiseRule(op, {{1}}); }
static ShardingRule ruleOf(SwigluGradOp op) {
  return elementwiseRule(op, {{0}});
}

//===----------------------------------------------------------------------===//
// Positional / shape
//===----------------------------------------------------------------------===//

/// `[B, S, N, D]`: B and heads pass through, S passes through with the hook
/// (global positions), D is replicated (rotate-half pairs `i`, `i + D/2`).
static ShardingRule ropeRule(Operation *op) {
  RuleBuilder b(op);
  b.shared(kPass, 0, 0, {}, {0});
  b.shared(kPass, 0, 1, {}, {0}, /*hook=*/true);
  b.shared(kPass, 0, 2, {}, {0});
  b.shared(kRepl, 0, 3, {}, {0});
  b.linear({0});
  return b.take();
}
static ShardingRule ruleOf(RopeOp op) { return ropeRule(op); }
static ShardingRule ruleOf(RopeGradOp op) { return ropeRule(op); }

/// Row-major reshape: the two shapes are cut into groups of dims with equal
/// products. In a group, equal leading dims share a factor; a dim split into
/// several (`[.., H] -> [.., N, D]`) or merged from several shares a factor
/// with its major part (`N` is the major part of `H`); the other dims of the
/// group are unmapped (replicated). Size-1 dims are unmapped.
static ShardingRule ruleOf(ReshapeOp op) {
  RuleBuilder b(op);
  ArrayRef<int64_t> in = shapeOf(op.getX());
  ArrayRef<int64_t> out = shapeOf(op.getY());
  size_t i = 0, o = 0;
  while (i < in.size() && o < out.size()) {
    if (in[i] == 1) {
      ++i;
      continue;
    }
    if (out[o] == 1) {
      ++o;
      continue;
    }
    // The group starts at (i, o); its major dims get a shared factor when
    // one divides the other (the smaller one is the major part).
    int64_t a = in[i], c = out[o];
    if (a % c == 0 || c % a == 0) {
      int64_t f = b.factor(std::min(a, c), kPass);
      b.operand(0, i, f).result(0, o, f);
    }
    // Advance to the end of the group.
    int64_t pin = in[i++], pout = out[o++];
    while (pin != pout) {
      if (pin < pout) {
        if (i >= in.size())
          break;
        pin *= in[i++];
      } else {
        if (o >= out.size())
          break;
        pout *= out[o++];
      }
    }
  }
  b.linear({0});
  return b.take();
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

/// Elementwise; every dim needs the hook (the mask uses global indices).
static ShardingRule ruleOf(DropoutOp op) {
  return elementwiseRule(op, {{0}}, /*hook=*/true);
}
static ShardingRule ruleOf(DropoutGradOp op) {
  return elementwiseRule(op, {{0}}, /*hook=*/true);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// Shared factors of attention and its gradient. q-like tensors are
/// `[B, Sq, N, D]`, kv-like `[B, Sk, G, D]`, lse `[B, N, Sq]`. The heads
/// factor has the size `G` of the kv heads and is the major part of q's `N`
/// (query head `n` uses kv head `n / (N/G)`): sharding heads on axes of
/// size `t` needs `G % t == 0` and splits q heads and kv heads alike. When
/// Sq == Sk the sequence is one pass-through factor of q-like, kv-like and
/// lse values whose sharding needs the hook (context parallelism: ring
/// attention); otherwise Sq and Sk need replication. D is replicated.
static ShardingRule attentionRule(Operation *op, ArrayRef<unsigned> qLike,
                                  ArrayRef<unsigned> kvLike,
                                  ArrayRef<unsigned> qLikeResults,
                                  ArrayRef<unsigned> kvLikeResults,
                                  std::optional<unsigned> lseOperand,
                                  std::optional<unsigned> lseResult,
                                  bool linearInFirst) {
  RuleBuilder b(op);
  Value q = op->getOperand(qLike.front());
  Value k = op->getOperand(kvLike.front());
  ArrayRef<int64_t> qs = shapeOf(q), ks = shapeOf(k);
  int64_t batch = b.factor(qs[0], kPass);
  // Equal lengths: one sequence factor, shardable only through the hook
  // (ring attention, RingAttention.cpp); else two replicated ones.
  int64_t sq, sk;
  if (qs[1] == ks[1]) {
    sq = sk = b.factor(qs[1], kPass, /*hook=*/true);
  } else {
    sq = b.factor(qs[1], kRepl);
    sk = b.factor(ks[1], kRepl);
  }
  int64_t heads = b.factor(ks[2], kPass);
  int64_t d = b.factor(qs[3], kRepl);
  auto tie = [&](bool isOperand, unsigned i, int64_t seq) {
    int64_t fs[4] = {batch, seq, heads, d};
    for (int64_t dim = 0; dim < 4; ++dim)
      isOperand ? b.operand(i, dim, fs[dim]) : b.result(i, dim, fs[dim]);
  };
  for (unsigned i : qLike)
    tie(true, i, sq);
  for (unsigned i : kvLike)
    tie(true, i, sk);
  for (unsigned i : qLikeResults)
    tie(false, i, sq);
  for (unsigned i : kvLikeResults)
    tie(false, i, sk);
  auto tieLse = [&](bool isOperand, unsigned i) {
    int64_t fs[3] = {batch, heads, sq};
    for (int64_t dim = 0; dim < 3; ++dim)
      isOperand ? b.operand(i, dim, fs[dim]) : b.result(i, dim, fs[dim]);
  };
  if (lseOperand)
    tieLse(true, *lseOperand);
  if (lseResult)
    tieLse(false, *lseResult);
  if (linearInFirst)
    b.linear({0});
  return b.take();
}

static ShardingRule ruleOf(AttentionOp op) {
  return attentionRule(op, /*qLike=*/{0}, /*kvLike=*/{1, 2},
                       /*qLikeResults=*/{0}, /*kvLikeResults=*/{}, std::nullopt,
                       /*lseResult=*/1, /*linear=*/false);
}

/// `(dout, q, k, v, out, lse) -> (dq, dk, dv)`, linear in `dout`.
static ShardingRule ruleOf(AttentionGradOp op) {
  return attentionRule(op, /*qLike=*/{0, 1, 4}, /*kvLike=*/{2, 3},
                       /*qLikeResults=*/{0}, /*kvLikeResults=*/{1, 2},
                       /*lseOperand=*/5, std::nullopt, /*linear=*/true);
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

/// Token dims are reductions with the hook: with tokens sharded, each rank
/// computes `sum over its tokens / T_global` (T_global = the product of the
/// global label dims), so that the partial (sum) loss over the token axes
/// is the global mean. V passes through with the hook (vocab-parallel: max
/// and sum all-reduces of the softmax statistics inside the hook, the loss
/// is then complete over the vocab axes).
static ShardingRule ruleOf(CrossEntropyOp op) {
  RuleBuilder b(op);
  for (int64_t d = 0, e = rankOf(op.getLabels()); d < e; ++d)
    b.shared(kRed, 1, d, {0}, {}, /*hook=*/true);
  int64_t v = b.factor(shapeOf(op.getLogits()).back(), kPass, /*hook=*/true);
  b.operand(0, -1, v);
  return b.take();
}

/// `(dloss, logits, labels) -> dlogits`: token dims pass through with the
/// hook (divide by the global token count), V passes through with the hook
/// (vocab offset and the cross-rank softmax statistics). Linear in `dloss`.
static ShardingRule ruleOf(CrossEntropyGradOp op) {
  RuleBuilder b(op);
  for (int64_t d = 0, e = rankOf(op.getLabels()); d < e; ++d)
    b.shared(kPass, 2, d, {1}, {0}, /*hook=*/true);
  int64_t v = b.factor(shapeOf(op.getLogits()).back(), kPass, /*hook=*/true);
  b.operand(1, -1, v).result(0, -1, v);
  b.linear({0});
  return b.take();
}

//===----------------------------------------------------------------------===//
// MoE
//===----------------------------------------------------------------------===//

/// `[B, S, E] -> [B, S, K] x 2`: B and S pass through, E and K replicated.
static ShardingRule ruleOf(MoeRouterOp op) {
  RuleBuilder b(op);
  b.shared(kPass, 0, 0, {}, {0, 1});
  b.shared(kPass, 0, 1, {}, {0, 1});
  b.shared(kRepl, 0, 2, {}, {});
  int64_t k = b.factor(shapeOf(op.getGates()).back(), kRepl);
  b.result(0, 2, k).result(1, 2, k);
  return b.take();
}

/// `(dgates [B,S,K], logits [B,S,E], ids [B,S,K]) -> dlogits [B,S,E]`.
static ShardingRule ruleOf(MoeRouterGradOp op) {
  RuleBuilder b(op);
  b.shared(kPass, 0, 0, {1, 2}, {0});
  b.shared(kPass, 0, 1, {1, 2}, {0});
  b.shared(kRepl, 0, 2, {2}, {});
  b.shared(kRepl, 1, 2, {}, {0});
  b.linear({0});
  return b.take();
}

/// Per-sequence statistics: B is a reduction with the hook (each rank sums
/// its sequences' terms and divides by the global B), S, E, K replicated.
static ShardingRule ruleOf(MoeAuxLossOp op) {
  RuleBuilder b(op);
  b.shared(kRed, 0, 0, {1}, {}, /*hook=*/true);
  b.shared(kRepl, 0, 1, {1}, {});
  b.shared(kRepl, 0, 2, {}, {});
  b.shared(kRepl, 1, 2, {}, {});
  return b.take();
}

/// `(dloss, logits [B,S,E], ids [B,S,K]) -> dlogits`: B passes through with
/// the hook (global B in the scale).
static ShardingRule ruleOf(MoeAuxLossGradOp op) {
  RuleBuilder b(op);
  b.shared(kPass, 1, 0, {2}, {0}, /*hook=*/true);
  b.shared(kRepl, 1, 1, {2}, {0});
  b.shared(kRepl, 1, 2, {}, {0});
  b.shared(kRepl, 2, 2, {}, {});
  b.linear({0});
  return b.take();
}

namespace {
/// Factors of the MoE dispatch / combine family. Tokens are `[B, S, H]`,
/// routing `[B, S, K]`, buffers `[E, B, C, H]`. B and H pass through; S, K
/// and C need replication (slot order is per sequence), and so does E: these
/// ops route each rank's own sequences over all experts. Expert parallelism
/// is the layout of the buffers between them (`E` on `ep`, pinned by
/// dist-apply-plan), reached from and back to the token layout (`B` on
/// `{dp, ep}`) by one all-to-all each, which dist-partition derives.
struct MoeFactors {
  int64_t e, b, s, k, c, h;
};
MoeFactors moeFactors(RuleBuilder &b, ArrayRef<int64_t> bufShape,
                      ArrayRef<int64_t> routeShape, FactorKind hiddenKind) {
  MoeFactors f;
  f.e = b.factor(bufShape[0], kRepl);
  f.b = b.factor(bufShape[1], kPass);
  f.c = b.factor(bufShape[2], kRepl);
  f.h = b.factor(bufShape[3], hiddenKind);
  f.s = b.factor(routeShape[1], kRepl);
  f.k = b.factor(routeShape[2], kRepl);
  return f;
}
void tieBuf(RuleBuilder &b, bool isOperand, unsigned i, const MoeFactors &f) {
  int64_t fs[4] = {f.e, f.b, f.c, f.h};
  for (int64_t d = 0; d < 4; ++d)
    isOperand ? b.operand(i, d, fs[d]) : b.result(i, d, fs[d]);
}
void tieTokens(RuleBuilder &b, bool isOperand, unsigned i,
               const MoeFactors &f) {
  int64_t fs[3] = {f.b, f.s, f.h};
  for (int64_t d = 0; d < 3; ++d)
    isOperand ? b.operand(i, d, fs[d]) : b.result(i, d, fs[d]);
}
void tieRoute(RuleBuilder &b, bool isOperand, unsigned i, const MoeFactors &f) {
  int64_t fs[3] = {f.b, f.s, f.k};
  for (int64_t d = 0; d < 3; ++d)
    isOperand ? b.operand(i, d, fs[d]) : b.result(i, d, fs[d]);
}
} // namespace

/// `(x [B,S,H], ids [B,S,K]) -> buf [E,B,C,H]`.
static ShardingRule ruleOf(MoeDispatchOp op) {
  RuleBuilder b(op);
  MoeFactors f =
      moeFactors(b, shapeOf(op.getBuf()), shapeOf(op.getExpertIds()), kPass);
  tieTokens(b, true, 0, f);
  tieRoute(b, true, 1, f);
  tieBuf(b, false, 0, f);
  b.linear({0});
  return b.take();
}

/// `(dbuf [E,B,C,H], ids) -> dx [B,S,H]`.
static ShardingRule ruleOf(MoeDispatchGradOp op) {
  RuleBuilder b(op);
  MoeFactors f =
      moeFactors(b, shapeOf(op.getDbuf()), shapeOf(op.getExpertIds()), kPass);
  tieBuf(b, true, 0, f);
  tieRoute(b, true, 1, f);
  tieTokens(b, false, 0, f);
  b.linear({0});
  return b.take();
}

/// `(buf [E,B,C,H], gates, ids) -> y [B,S,H]`: linear in `buf` and in
/// `gates`.
static ShardingRule ruleOf(MoeCombineOp op) {
  RuleBuilder b(op);
  MoeFactors f =
      moeFactors(b, shapeOf(op.getBuf()), shapeOf(op.getExpertIds()), kPass);
  tieBuf(b, true, 0, f);
  tieRoute(b, true, 1, f);
  tieRoute(b, true, 2, f);
  tieTokens(b, false, 0, f);
  b.linear({0});
  b.linear({1});
  return b.take();
}

/// `(dy [B,S,H], buf, gates, ids) -> (dbuf, dgates)`: H is a reduction
/// (dgates sums over H, dbuf keeps it split). Linear in `dy`.
static ShardingRule ruleOf(MoeCombineGradOp op) {
  RuleBuilder b(op);
  MoeFactors f =
      moeFactors(b, shapeOf(op.getBuf()), shapeOf(op.getExpertIds()), kRed);
  tieTokens(b, true, 0, f);
  tieBuf(b, true, 1, f);
  tieRoute(b, true, 2, f);
  tieRoute(b, true, 3, f);
  tieBuf(b, false, 0, f);
  tieRoute(b, false, 1, f);
  b.linear({0});
  return b.take();
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

/// Every dim of every input is a reduction with the hook: the hook sums each
/// input's local squares over only the axes that input is sharded on (a
/// replicated input is not counted twice).
static ShardingRule ruleOf(SumSquaresOp op) {
  RuleBuilder b(op);
  for (auto [i, input] : llvm::enumerate(op.getInputs()))
    for (int64_t d = 0, e = rankOf(input); d < e; ++d)
      b.shared(kRed, i, d, {}, {}, /*hook=*/true);
  return b.take();
}

/// Scalars only: no factors.
static ShardingRule ruleOf(ClipCoefOp op) { return RuleBuilder(op).take(); }

/// `param`, `grad`, `m`, `v` and the three results share every dim
/// (pass-through: ZeRO shards them on dp); the scalars have no dims.
static ShardingRule ruleOf(AdamwOp op) {
  RuleBuilder b(op);
  for (int64_t d = 0, e = rankOf(op.getParam()); d < e; ++d)
    b.shared(kPass, 0, d, {1, 2, 3}, {0, 1, 2});
  return b.take();
}

//===----------------------------------------------------------------------===//
// Local ops
//===----------------------------------------------------------------------===//

/// The local ops that partition hooks emit (vocab-parallel, ring attention,
/// rope / dropout on a chunk) are already per-rank (they only appear after
/// dist-partition): no dim is tied to a factor, so nothing propagates
/// through them and they are never partitioned again.
static ShardingRule localOpRule(Operation *op) {
  return RuleBuilder(op).take();
}

static ShardingRule ruleOf(VocabEmbeddingOp op) { return localOpRule(op); }
static ShardingRule ruleOf(VocabEmbeddingGradOp op) { return localOpRule(op); }
static ShardingRule ruleOf(VocabCeMaxOp op) { return localOpRule(op); }
static ShardingRule ruleOf(VocabCeStatsOp op) { return localOpRule(op); }
static ShardingRule ruleOf(VocabCeLossOp op) { return localOpRule(op); }
static ShardingRule ruleOf(VocabCeGradOp op) { return localOpRule(op); }
static ShardingRule ruleOf(DropoutLocalOp op) { return localOpRule(op); }
static ShardingRule ruleOf(DropoutLocalGradOp op) { return localOpRule(op); }
static ShardingRule ruleOf(RopeLocalOp op) { return localOpRule(op); }
static ShardingRule ruleOf(RopeLocalGradOp op) { return localOpRule(op); }
static ShardingRule ruleOf(AttentionBlockOp op) { return localOpRule(op); }
static ShardingRule ruleOf(AttentionBlockGradOp op) { return localOpRule(op); }
static ShardingRule ruleOf(AttentionMergeOp op) { return localOpRule(op); }

//===----------------------------------------------------------------------===//
// External model
//===----------------------------------------------------------------------===//

namespace {
template <typename OpTy>
struct RuleModel
    : autoshard::dist::ShardingRuleOpInterface::ExternalModel<RuleModel<OpTy>,
                                                              OpTy> {
  ShardingRule getShardingRule(Operation *op) const {
    return ruleOf(cast<OpTy>(op));
  }
};

template <typename... OpTys> void attachRuleModels(MLIRContext *ctx) {
  (OpTys::template attachInterface<RuleModel<OpTys>>(*ctx), ...);
}
} // namespace

void autoshard::tfm::attachShardingRuleModels(MLIRContext *ctx) {
  attachRuleModels<
#define GET_OP_LIST
#include "autoshard/Dialect/Tfm/IR/TfmOps.cpp.inc"
      >(ctx);
}
