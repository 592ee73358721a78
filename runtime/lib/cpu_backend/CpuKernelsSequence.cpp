//===- CpuKernelsSequence.cpp - Embedding, RoPE, dropout, attention, loss -===//

#include "autoshard/runtime/cpu/Kernels.h"

#include "CpuKernels.h"

#include <type_traits>

namespace autoshard::runtime::cpu_kernels {

using namespace autoshard::runtime::cpu;

//===----------------------------------------------------------------------===//
// Embeddings (token and vocab-parallel) and position embeddings
//===----------------------------------------------------------------------===//

namespace {

/// The `shard` operand: an i64 scalar read when the kernel runs.
int64_t shardOf(void *p) { return *static_cast<const int64_t *>(p); }

/// embedding / vocab_embedding (`Op`; `VocabParallel`: the shard
/// operand) and their gradients (`Grad`); `rows` is the table or dy.
template <typename Op, bool Grad, bool VocabParallel>
BoundKernel bindEmbedding(const KernelSignature &sig, ArgSlot rows,
                          ResultSlot result) {
  EmbeddingShape s = Grad ? checkEmbeddingGrad(sig, VocabParallel)
                          : checkEmbedding(sig, VocabParallel);
  int64_t vocab = s.vocab, hidden = s.hidden, n = s.numIds;
  return withFloat.bindWithIds(
      sig, rows, Op::ids, [=](auto t, auto i, Operands o) {
        const auto *ids = o.in(Op::ids, i);
        const auto *x = o.in(rows, t);
        auto *y = o.out(result, t);
        if constexpr (Grad && VocabParallel)
          vocabEmbeddingGrad(ids, n, x, vocab, hidden, shardOf(o[Op::shard]),
                             y);
        else if constexpr (VocabParallel)
          vocabEmbedding(ids, n, x, vocab, hidden, shardOf(o[Op::shard]), y);
        else if constexpr (Grad)
          embeddingGrad(ids, n, x, vocab, hidden, y);
        else
          embedding(ids, n, x, vocab, hidden, y);
      });
}

} // namespace

template <> BoundKernel bind<ops::Embedding>(const KernelSignature &sig) {
  using Op = ops::Embedding;
  return bindEmbedding<Op, false, false>(sig, Op::table, Op::out);
}

template <> BoundKernel bind<ops::EmbeddingGrad>(const KernelSignature &sig) {
  using Op = ops::EmbeddingGrad;
  return bindEmbedding<Op, true, false>(sig, Op::dy, Op::dtable);
}

template <> BoundKernel bind<ops::VocabEmbedding>(const KernelSignature &sig) {
  using Op = ops::VocabEmbedding;
  return bindEmbedding<Op, false, true>(sig, Op::table, Op::out);
}

template <>
BoundKernel bind<ops::VocabEmbeddingGrad>(const KernelSignature &sig) {
  using Op = ops::VocabEmbeddingGrad;
  return bindEmbedding<Op, true, true>(sig, Op::dy, Op::dtable);
}

template <>
BoundKernel bind<ops::PositionEmbedding>(const KernelSignature &sig) {
  using Op = ops::PositionEmbedding;
  PositionEmbeddingShape s = checkPositionEmbedding(sig);
  return withFloat.bind(sig, Op::table, [=](auto t, Operands o) {
    positionEmbedding(o.in(Op::table, t), s.positions, s.hidden, s.seqLen,
                      o.out(Op::out, t), s.zigzagChunks);
  });
}

template <>
BoundKernel bind<ops::PositionEmbeddingGrad>(const KernelSignature &sig) {
  using Op = ops::PositionEmbeddingGrad;
  PositionEmbeddingShape s = checkPositionEmbeddingGrad(sig);
  return withFloat.bind(sig, Op::dy, [=](auto t, Operands o) {
    positionEmbeddingGrad(o.in(Op::dy, t), s.outer, s.seqLen, s.hidden,
                          s.positions, o.out(Op::dtable, t), s.zigzagChunks);
  });
}

//===----------------------------------------------------------------------===//
// RoPE and dropout
//===----------------------------------------------------------------------===//

namespace {

/// The float operand and result of rope(_local) and dropout(_local), x
/// and y, and of their gradients (`grad`: the ops with a dy), dy and dx.
/// The messages name the operand "x" either way.
template <typename Op, typename = void> struct Flow {
  static constexpr bool grad = false;
  static constexpr ArgSlot x = Op::x;
  static constexpr ResultSlot y = Op::y;
};
template <typename Op> struct Flow<Op, std::void_t<decltype(Op::dy)>> {
  static constexpr bool grad = true;
  static constexpr ArgSlot x = Op::dy;
  static constexpr ResultSlot y = Op::dx;
};

/// rope / rope_grad.
template <typename Op> BoundKernel bindRope(const KernelSignature &sig) {
  using F = Flow<Op>;
  RopeShape s = ropeShape(checkRope(sig, F::grad));
  return withFloat.bind(sig, F::x, "x", [=](auto t, Operands o) {
    if constexpr (F::grad)
      ropeGrad(o.in(F::x, t), o.out(F::y, t), s);
    else
      rope(o.in(F::x, t), o.out(F::y, t), s);
  });
}

/// rope_local / rope_local_grad: positions start at shard * seq, the shard
/// read when the kernel runs.
template <typename Op> BoundKernel bindRopeLocal(const KernelSignature &sig) {
  using F = Flow<Op>;
  RopeLocalDims d = checkRopeLocal(sig, F::grad);
  RopeShape base = ropeShape(d.rope);
  return withFloat.bind(sig, F::x, "x", [=](auto t, Operands o) {
    RopeShape s = base;
    s.positionOffset = ropeLocalOffset(d, shardOf(o[Op::shard]));
    if constexpr (F::grad)
      ropeGrad(o.in(F::x, t), o.out(F::y, t), s);
    else
      rope(o.in(F::x, t), o.out(F::y, t), s);
  });
}

/// The kernel's parameters but step and layer (read when it runs).
DropoutParams dropoutParams(const KernelSignature &sig, const DropoutShape &s) {
  DropoutParams base;
  base.rate = s.rate;
  base.site = s.site;
  base.seed = sig.seed;
  return base;
}

/// `base` with the step and layer operands of dropout op `Op`.
template <typename Op>
DropoutParams withStepAndLayer(DropoutParams base, Operands o) {
  base.step = *o.in<int64_t>(Op::step);
  base.layer = *o.in<int64_t>(Op::layer);
  return base;
}

/// Whether dropout op `Op` has the shard operands (dropout_local).
template <typename Op, typename = void> struct HasShards : std::false_type {};
template <typename Op>
struct HasShards<Op, std::void_t<decltype(Op::shards)>> : std::true_type {};

/// dropout_local / dropout_local_grad, and a dropout whose sequence is in
/// zig-zag order (`s` from checkDropout): x, step, layer, then one `i64`
/// scalar shard index per entry of `shard_dims`; the block offset along
/// `shard_dims[k]` is `shards[k] * shape[shard_dims[k]]`, read at run time.
template <typename Op>
BoundKernel bindDropoutBlock(const KernelSignature &sig,
                             const DropoutShape &s) {
  using F = Flow<Op>;
  DropoutParams base = dropoutParams(sig, s);
  DropoutBlock block;
  block.shape = s.shape;
  block.globalShape = s.globalShape;
  block.zigzagChunks = s.zigzagChunks;
  std::vector<int64_t> shardDims = s.shardDims;
  return withFloat.bind(sig, F::x, "x", [=](auto t, Operands o) {
    DropoutParams params = withStepAndLayer<Op>(base, o);
    DropoutBlock local = block;
    local.offsets.assign(local.shape.size(), 0);
    if constexpr (HasShards<Op>::value) {
      for (size_t k = 0; k < shardDims.size(); ++k)
        local.offsets[shardDims[k]] =
            shardOf(o.at(Op::shards, static_cast<int>(k))) *
            local.shape[shardDims[k]];
    }
    if constexpr (F::grad)
      dropoutGradBlock(o.in(F::x, t), o.out(F::y, t), local, params);
    else
      dropoutBlock(o.in(F::x, t), o.out(F::y, t), local, params);
  });
}

/// dropout / dropout_grad.
template <typename Op> BoundKernel bindDropout(const KernelSignature &sig) {
  using F = Flow<Op>;
  DropoutShape s = checkDropout(sig, /*local=*/false);
  if (s.zigzagChunks > 0) // the block kernel maps the sequence coordinate
    return bindDropoutBlock<Op>(sig, s);
  int64_t n = s.numel;
  DropoutParams base = dropoutParams(sig, s);
  return withFloat.bind(sig, F::x, "x", [=](auto t, Operands o) {
    DropoutParams params = withStepAndLayer<Op>(base, o);
    if constexpr (F::grad)
      dropoutGrad(o.in(F::x, t), o.out(F::y, t), n, params);
    else
      dropout(o.in(F::x, t), o.out(F::y, t), n, params);
  });
}

template <typename Op>
BoundKernel bindDropoutLocal(const KernelSignature &sig) {
  return bindDropoutBlock<Op>(sig, checkDropout(sig, /*local=*/true));
}

} // namespace

template <> BoundKernel bind<ops::Rope>(const KernelSignature &sig) {
  return bindRope<ops::Rope>(sig);
}
template <> BoundKernel bind<ops::RopeGrad>(const KernelSignature &sig) {
  return bindRope<ops::RopeGrad>(sig);
}
template <> BoundKernel bind<ops::RopeLocal>(const KernelSignature &sig) {
  return bindRopeLocal<ops::RopeLocal>(sig);
}
template <> BoundKernel bind<ops::RopeLocalGrad>(const KernelSignature &sig) {
  return bindRopeLocal<ops::RopeLocalGrad>(sig);
}
template <> BoundKernel bind<ops::Dropout>(const KernelSignature &sig) {
  return bindDropout<ops::Dropout>(sig);
}
template <> BoundKernel bind<ops::DropoutGrad>(const KernelSignature &sig) {
  return bindDropout<ops::DropoutGrad>(sig);
}
template <> BoundKernel bind<ops::DropoutLocal>(const KernelSignature &sig) {
  return bindDropoutLocal<ops::DropoutLocal>(sig);
}
template <>
BoundKernel bind<ops::DropoutLocalGrad>(const KernelSignature &sig) {
  return bindDropoutLocal<ops::DropoutLocalGrad>(sig);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

namespace {

/// Binds a kernel of the (q, lse) element types (T, L) the cpu kernels
/// support, T that of `q`: the bound kernel calls run(T{}, L{}, Operands).
template <typename Run>
BoundKernel bindAttentionTypes(const KernelSignature &sig, ArgSlot q, DType lse,
                               Run run) {
  OperandIndex index(sig);
  auto bound = [&](auto t, auto l) -> BoundKernel {
    using T = decltype(t);
    using L = decltype(l);
    return [=](void *const *p) { run(T{}, L{}, Operands(index, p)); };
  };
  DType qType = sig.arg(q).dtype;
  if (qType == DType::F32 && lse == DType::F32)
    return bound(float{}, float{});
  if (qType == DType::F64 && lse == DType::F32)
    return bound(double{}, float{});
  if (qType == DType::F64 && lse == DType::F64)
    return bound(double{}, double{});
  sig.fail("the cpu backend has no attention for q " +
           std::string(dtypeName(qType)) + " with lse " +
           std::string(dtypeName(lse)));
}

/// The shape of attention(_grad) or, with the positions of the chunk index
/// operand read when the kernel runs, of attention_block(_grad)
/// (`Block`).
template <typename Op, bool Block>
AttentionShape shapeAt(const AttentionDims &d, Operands o) {
  AttentionShape s = attentionShape(d);
  if constexpr (Block) {
    BlockPositions b = attentionBlockPositions(d, shardOf(o[Op::chunk]));
    s.qPos = b.q;
    s.kPos = b.k;
  }
  return s;
}

/// attention / attention_block (`Block`: the chunk index operand).
template <typename Op, bool Block>
BoundKernel bindAttention(const KernelSignature &sig) {
  AttentionDims d = Block ? checkAttentionBlock(sig) : checkAttention(sig);
  return bindAttentionTypes(
      sig, Op::q, d.lseType, [=](auto t, auto l, Operands o) {
        attention(o.in(Op::q, t), o.in(Op::k, t), o.in(Op::v, t),
                  o.out(Op::out, t), o.out(Op::lse, l),
                  shapeAt<Op, Block>(d, o));
      });
}

/// attention_grad / attention_block_grad (`Block`: the chunk index
/// operand).
template <typename Op, bool Block>
BoundKernel bindAttentionGrad(const KernelSignature &sig) {
  AttentionDims d =
      Block ? checkAttentionBlockGrad(sig) : checkAttentionGrad(sig);
  return bindAttentionTypes(
      sig, Op::q, d.lseType, [=](auto t, auto l, Operands o) {
        attentionGrad(o.in(Op::dout, t), o.in(Op::q, t), o.in(Op::k, t),
                      o.in(Op::v, t), o.in(Op::out, t), o.in(Op::lse, l),
                      o.out(Op::dq, t), o.out(Op::dk, t), o.out(Op::dv, t),
                      shapeAt<Op, Block>(d, o));
      });
}

} // namespace

template <> BoundKernel bind<ops::Attention>(const KernelSignature &sig) {
  return bindAttention<ops::Attention, false>(sig);
}

template <> BoundKernel bind<ops::AttentionBlock>(const KernelSignature &sig) {
  return bindAttention<ops::AttentionBlock, true>(sig);
}

template <> BoundKernel bind<ops::AttentionGrad>(const KernelSignature &sig) {
  return bindAttentionGrad<ops::AttentionGrad, false>(sig);
}

template <>
BoundKernel bind<ops::AttentionBlockGrad>(const KernelSignature &sig) {
  return bindAttentionGrad<ops::AttentionBlockGrad, true>(sig);
}

template <> BoundKernel bind<ops::AttentionMerge>(const KernelSignature &sig) {
  using Op = ops::AttentionMerge;
  AttentionMergeDims d = checkAttentionMerge(sig);
  return bindAttentionTypes(
      sig, Op::out_a, d.lseType, [=](auto t, auto l, Operands o) {
        attentionMerge(o.in(Op::out_a, t), o.in(Op::lse_a, l),
                       o.in(Op::out_b, t), o.in(Op::lse_b, l),
                       o.out(Op::out, t), o.out(Op::lse, l), d.batch, d.seq,
                       d.heads, d.headDim);
      });
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

template <> BoundKernel bind<ops::CrossEntropy>(const KernelSignature &sig) {
  using Op = ops::CrossEntropy;
  CrossEntropyShape s = crossEntropyShape(checkCrossEntropy(sig));
  return withFloat.bindWithIds(
      sig, Op::logits, Op::labels, [=](auto t, auto i, Operands o) {
        *o.out<float>(Op::loss) = static_cast<float>(
            crossEntropy(o.in(Op::logits, t), o.in(Op::labels, i), s));
      });
}

template <>
BoundKernel bind<ops::CrossEntropyGrad>(const KernelSignature &sig) {
  using Op = ops::CrossEntropyGrad;
  CrossEntropyShape s = crossEntropyShape(checkCrossEntropyGrad(sig));
  return withFloat.bindWithIds(
      sig, Op::logits, Op::labels, [=](auto t, auto i, Operands o) {
        crossEntropyGrad(*o.in<float>(Op::dloss), o.in(Op::logits, t),
                         o.in(Op::labels, i), o.out(Op::dlogits, t), s);
      });
}

//===----------------------------------------------------------------------===//
// Vocab-parallel loss
//===----------------------------------------------------------------------===//

template <> BoundKernel bind<ops::VocabCeMax>(const KernelSignature &sig) {
  using Op = ops::VocabCeMax;
  VocabCeShape s = vocabCeShape(checkVocabCeMax(sig));
  return withFloat.bind(sig, Op::logits, [=](auto t, Operands o) {
    vocabCeMax(o.in(Op::logits, t), s, shardOf(o[Op::shard]),
               o.out<float>(Op::max));
  });
}

template <> BoundKernel bind<ops::VocabCeStats>(const KernelSignature &sig) {
  using Op = ops::VocabCeStats;
  VocabCeShape s = vocabCeShape(checkVocabCeStats(sig));
  return withFloat.bindWithIds(
      sig, Op::logits, Op::labels, [=](auto t, auto i, Operands o) {
        vocabCeStats(o.in(Op::logits, t), o.in(Op::labels, i),
                     o.in<float>(Op::max), s, shardOf(o[Op::shard]),
                     o.out<float>(Op::stats));
      });
}

template <> BoundKernel bind<ops::VocabCeLoss>(const KernelSignature &sig) {
  using Op = ops::VocabCeLoss;
  VocabCeDims d = checkVocabCeLoss(sig);
  return bindOperands(sig, [=](Operands o) {
    *o.out<float>(Op::loss) = static_cast<float>(vocabCeLoss(
        o.in<float>(Op::stats), o.in<float>(Op::max), d.tokens, d.numTokens));
  });
}

template <> BoundKernel bind<ops::VocabCeGrad>(const KernelSignature &sig) {
  using Op = ops::VocabCeGrad;
  VocabCeDims d = checkVocabCeGrad(sig);
  VocabCeShape s = vocabCeShape(d);
  return withFloat.bindWithIds(
      sig, Op::logits, Op::labels, [=](auto t, auto i, Operands o) {
        vocabCeGrad(*o.in<float>(Op::dloss), o.in(Op::logits, t),
                    o.in(Op::labels, i), o.in<float>(Op::max),
                    o.in<float>(Op::stats), s, shardOf(o[Op::shard]),
                    d.numTokens, o.out(Op::dlogits, t));
      });
}

void registerSequenceKernels(KernelTable &t) {
  addBinders<ops::Embedding, ops::EmbeddingGrad, ops::PositionEmbedding,
             ops::PositionEmbeddingGrad, ops::Rope, ops::RopeGrad,
             ops::RopeLocal, ops::RopeLocalGrad, ops::Dropout, ops::DropoutGrad,
             ops::DropoutLocal, ops::DropoutLocalGrad, ops::Attention,
             ops::AttentionGrad, ops::AttentionBlock, ops::AttentionBlockGrad,
             ops::AttentionMerge, ops::CrossEntropy, ops::CrossEntropyGrad,
             ops::VocabEmbedding, ops::VocabEmbeddingGrad, ops::VocabCeMax,
             ops::VocabCeStats, ops::VocabCeLoss, ops::VocabCeGrad>(t);
}

} // namespace autoshard::runtime::cpu_kernels
