//===- CpuKernelsSequence.cpp - Embedding, RoPE, dropout, attention, loss -===//

#include "autoshard/runtime/cpu/Kernels.h"

#include "CpuKernels.h"

namespace autoshard::runtime::cpu_kernels {

using namespace autoshard::runtime::cpu;

namespace {

//===----------------------------------------------------------------------===//
// Embeddings (token and vocab-parallel) and position embeddings
//===----------------------------------------------------------------------===//

/// The `shard` operand: an i64 scalar read when the kernel runs.
int64_t shardOf(void *p) { return *in<int64_t>(p); }

/// embedding / vocab_embedding (`VocabParallel`: operand 2 is the shard)
/// and their gradients (`Grad`); operand 1 is the table or dy.
template <bool Grad, bool VocabParallel>
BoundKernel bindEmbedding(const KernelSignature &sig) {
  EmbeddingShape s = Grad ? checkEmbeddingGrad(sig, VocabParallel)
                          : checkEmbedding(sig, VocabParallel);
  int64_t vocab = s.vocab, hidden = s.hidden, n = s.numIds;
  const char *what = Grad ? "dy" : "table";
  return withFloat(sig, sig.args[1].dtype, what, [&](auto t) -> BoundKernel {
    using T = decltype(t);
    return withId(sig, sig.args[0].dtype, "ids", [=](auto i) -> BoundKernel {
      using I = decltype(i);
      return [=](void *const *p) {
        const I *ids = in<I>(p[0]);
        const T *x = in<T>(p[1]);
        if constexpr (Grad && VocabParallel)
          vocabEmbeddingGrad<T, I>(ids, n, x, vocab, hidden, shardOf(p[2]),
                                   out<T>(p[3]));
        else if constexpr (VocabParallel)
          vocabEmbedding<T, I>(ids, n, x, vocab, hidden, shardOf(p[2]),
                               out<T>(p[3]));
        else if constexpr (Grad)
          embeddingGrad<T, I>(ids, n, x, vocab, hidden, out<T>(p[2]));
        else
          embedding<T, I>(ids, n, x, vocab, hidden, out<T>(p[2]));
      };
    });
  });
}

BoundKernel bindPositionEmbedding(const KernelSignature &sig) {
  using Op = ops::PositionEmbedding;
  OperandIndex at(sig);
  PositionEmbeddingShape s = checkPositionEmbedding(sig);
  int64_t positions = s.positions, hidden = s.hidden, seqLen = s.seqLen;
  return withFloat(
      sig, sig.arg(Op::table).dtype, "table", [=](auto t) -> BoundKernel {
        using T = decltype(t);
        return [=](void *const *p) {
          positionEmbedding<T>(in<T>(p[at(Op::table)]), positions, hidden,
                               seqLen, out<T>(p[at(Op::out)]));
        };
      });
}

BoundKernel bindPositionEmbeddingGrad(const KernelSignature &sig) {
  using Op = ops::PositionEmbeddingGrad;
  OperandIndex at(sig);
  PositionEmbeddingShape s = checkPositionEmbeddingGrad(sig);
  int64_t outer = s.outer, seqLen = s.seqLen, hidden = s.hidden,
          positions = s.positions;
  return withFloat(
      sig, sig.arg(Op::dy).dtype, "dy", [=](auto t) -> BoundKernel {
        using T = decltype(t);
        return [=](void *const *p) {
          positionEmbeddingGrad<T>(in<T>(p[at(Op::dy)]), outer, seqLen, hidden,
                                   positions, out<T>(p[at(Op::dtable)]));
        };
      });
}

//===----------------------------------------------------------------------===//
// RoPE and dropout
//===----------------------------------------------------------------------===//

template <bool Grad> BoundKernel bindRope(const KernelSignature &sig) {
  RopeShape s = ropeShape(checkRope(sig, Grad));
  return withFloat(sig, sig.args[0].dtype, "x", [=](auto t) -> BoundKernel {
    using T = decltype(t);
    return [=](void *const *p) {
      if constexpr (Grad)
        ropeGrad<T>(in<T>(p[0]), out<T>(p[1]), s);
      else
        rope<T>(in<T>(p[0]), out<T>(p[1]), s);
    };
  });
}

/// rope_local / rope_local_grad: positions start at shard * seq, the shard
/// read when the kernel runs.
template <bool Grad> BoundKernel bindRopeLocal(const KernelSignature &sig) {
  RopeLocalDims d = checkRopeLocal(sig, Grad);
  RopeShape base = ropeShape(d.rope);
  return withFloat(sig, sig.args[0].dtype, "x", [=](auto t) -> BoundKernel {
    using T = decltype(t);
    return [=](void *const *p) {
      RopeShape s = base;
      s.positionOffset = ropeLocalOffset(d, shardOf(p[1]));
      if constexpr (Grad)
        ropeGrad<T>(in<T>(p[0]), out<T>(p[2]), s);
      else
        rope<T>(in<T>(p[0]), out<T>(p[2]), s);
    };
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

template <bool Grad> BoundKernel bindDropout(const KernelSignature &sig) {
  DropoutShape s = checkDropout(sig, /*local=*/false);
  int64_t n = s.numel;
  DropoutParams base = dropoutParams(sig, s);
  return withFloat(sig, sig.args[0].dtype, "x", [=](auto t) -> BoundKernel {
    using T = decltype(t);
    return [=](void *const *p) {
      DropoutParams params = base;
      params.step = *in<int64_t>(p[1]);
      params.layer = *in<int64_t>(p[2]);
      if constexpr (Grad)
        dropoutGrad<T>(in<T>(p[0]), out<T>(p[3]), n, params);
      else
        dropout<T>(in<T>(p[0]), out<T>(p[3]), n, params);
    };
  });
}

/// dropout_local / dropout_local_grad: x, step, layer, then one `i64`
/// scalar shard index per entry of `shard_dims`; the block offset along
/// `shard_dims[k]` is `shards[k] * shape[shard_dims[k]]`, read at run time.
template <bool Grad> BoundKernel bindDropoutLocal(const KernelSignature &sig) {
  DropoutShape s = checkDropout(sig, /*local=*/true);
  DropoutParams base = dropoutParams(sig, s);
  DropoutBlock block;
  block.shape = s.shape;
  block.globalShape = s.globalShape;
  std::vector<int64_t> shardDims = s.shardDims;
  const size_t numShards = shardDims.size();
  const size_t result = sig.args.size();
  return withFloat(sig, sig.args[0].dtype, "x", [=](auto t) -> BoundKernel {
    using T = decltype(t);
    return [=](void *const *p) {
      DropoutParams params = base;
      params.step = *in<int64_t>(p[1]);
      params.layer = *in<int64_t>(p[2]);
      DropoutBlock local = block;
      local.offsets.assign(local.shape.size(), 0);
      for (size_t k = 0; k < numShards; ++k)
        local.offsets[shardDims[k]] =
            *in<int64_t>(p[3 + k]) * local.shape[shardDims[k]];
      if constexpr (Grad)
        dropoutGradBlock<T>(in<T>(p[0]), out<T>(p[result]), local, params);
      else
        dropoutBlock<T>(in<T>(p[0]), out<T>(p[result]), local, params);
    };
  });
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// Calls fn(T{}, L{}) for the (q, lse) element types the kernels support.
template <typename Fn>
BoundKernel withAttentionTypes(const KernelSignature &sig, DType q, DType lse,
                               Fn &&fn) {
  if (q == DType::F32 && lse == DType::F32)
    return fn(float{}, float{});
  if (q == DType::F64 && lse == DType::F32)
    return fn(double{}, float{});
  if (q == DType::F64 && lse == DType::F64)
    return fn(double{}, double{});
  sig.fail("the cpu backend has no attention for q " +
           std::string(dtypeName(q)) + " with lse " +
           std::string(dtypeName(lse)));
}

/// The shape of attention_block(_grad) with the offsets of the chunk index
/// operand `p[chunk]`, read when the kernel runs.
AttentionShape blockShape(const AttentionDims &d, void *chunk) {
  AttentionShape s = attentionShape(d);
  BlockOffsets o = attentionBlockOffsets(d, shardOf(chunk));
  s.qOffset = o.q;
  s.kOffset = o.k;
  return s;
}

/// attention / attention_block (`Block`: operand 3 is the chunk index and
/// the results follow it).
template <bool Block> BoundKernel bindAttention(const KernelSignature &sig) {
  AttentionDims d = Block ? checkAttentionBlock(sig) : checkAttention(sig);
  constexpr int r = Block ? 4 : 3; // first result
  return withAttentionTypes(
      sig, sig.args[0].dtype, d.lseType, [=](auto t, auto l) -> BoundKernel {
        using T = decltype(t);
        using L = decltype(l);
        return [=](void *const *p) {
          attention<T, L>(in<T>(p[0]), in<T>(p[1]), in<T>(p[2]), out<T>(p[r]),
                          out<L>(p[r + 1]),
                          Block ? blockShape(d, p[3]) : attentionShape(d));
        };
      });
}

/// attention_grad / attention_block_grad (`Block`: operand 6 is the chunk
/// index and the results follow it).
template <bool Block>
BoundKernel bindAttentionGrad(const KernelSignature &sig) {
  AttentionDims d =
      Block ? checkAttentionBlockGrad(sig) : checkAttentionGrad(sig);
  constexpr int r = Block ? 7 : 6; // first result
  return withAttentionTypes(
      sig, sig.args[1].dtype, d.lseType, [=](auto t, auto l) -> BoundKernel {
        using T = decltype(t);
        using L = decltype(l);
        return [=](void *const *p) {
          attentionGrad<T, L>(in<T>(p[0]), in<T>(p[1]), in<T>(p[2]),
                              in<T>(p[3]), in<T>(p[4]), in<L>(p[5]),
                              out<T>(p[r]), out<T>(p[r + 1]), out<T>(p[r + 2]),
                              Block ? blockShape(d, p[6]) : attentionShape(d));
        };
      });
}

BoundKernel bindAttentionMerge(const KernelSignature &sig) {
  using Op = ops::AttentionMerge;
  OperandIndex at(sig);
  AttentionMergeDims d = checkAttentionMerge(sig);
  return withAttentionTypes(
      sig, sig.arg(Op::out_a).dtype, d.lseType,
      [=](auto t, auto l) -> BoundKernel {
        using T = decltype(t);
        using L = decltype(l);
        return [=](void *const *p) {
          attentionMerge<T, L>(in<T>(p[at(Op::out_a)]), in<L>(p[at(Op::lse_a)]),
                               in<T>(p[at(Op::out_b)]), in<L>(p[at(Op::lse_b)]),
                               out<T>(p[at(Op::out)]), out<L>(p[at(Op::lse)]),
                               d.batch, d.seq, d.heads, d.headDim);
        };
      });
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

BoundKernel bindCrossEntropy(const KernelSignature &sig) {
  using Op = ops::CrossEntropy;
  OperandIndex at(sig);
  CrossEntropyShape s = crossEntropyShape(checkCrossEntropy(sig));
  return withFloat(
      sig, sig.arg(Op::logits).dtype, "logits", [&](auto t) -> BoundKernel {
        using T = decltype(t);
        return withId(sig, sig.arg(Op::labels).dtype, "labels",
                      [=](auto i) -> BoundKernel {
                        using I = decltype(i);
                        return [=](void *const *p) {
                          *out<float>(p[at(Op::loss)]) = static_cast<float>(
                              crossEntropy<T, I>(in<T>(p[at(Op::logits)]),
                                                 in<I>(p[at(Op::labels)]), s));
                        };
                      });
      });
}

BoundKernel bindCrossEntropyGrad(const KernelSignature &sig) {
  using Op = ops::CrossEntropyGrad;
  OperandIndex at(sig);
  CrossEntropyShape s = crossEntropyShape(checkCrossEntropyGrad(sig));
  return withFloat(
      sig, sig.arg(Op::logits).dtype, "logits", [&](auto t) -> BoundKernel {
        using T = decltype(t);
        return withId(sig, sig.arg(Op::labels).dtype, "labels",
                      [=](auto i) -> BoundKernel {
                        using I = decltype(i);
                        return [=](void *const *p) {
                          crossEntropyGrad<T, I>(*in<float>(p[at(Op::dloss)]),
                                                 in<T>(p[at(Op::logits)]),
                                                 in<I>(p[at(Op::labels)]),
                                                 out<T>(p[at(Op::dlogits)]), s);
                        };
                      });
      });
}

//===----------------------------------------------------------------------===//
// Vocab-parallel loss
//===----------------------------------------------------------------------===//

BoundKernel bindVocabCeMax(const KernelSignature &sig) {
  using Op = ops::VocabCeMax;
  OperandIndex at(sig);
  const TensorType &logits = sig.arg(Op::logits);
  VocabCeShape s = vocabCeShape(checkVocabCeMax(sig));
  return withFloat(sig, logits.dtype, "logits", [=](auto t) -> BoundKernel {
    using T = decltype(t);
    return [=](void *const *p) {
      vocabCeMax<T>(in<T>(p[at(Op::logits)]), s, shardOf(p[at(Op::shard)]),
                    out<float>(p[at(Op::max)]));
    };
  });
}

BoundKernel bindVocabCeStats(const KernelSignature &sig) {
  using Op = ops::VocabCeStats;
  OperandIndex at(sig);
  const TensorType &logits = sig.arg(Op::logits), &labels = sig.arg(Op::labels);
  VocabCeShape s = vocabCeShape(checkVocabCeStats(sig));
  return withFloat(sig, logits.dtype, "logits", [&](auto t) -> BoundKernel {
    using T = decltype(t);
    return withId(sig, labels.dtype, "labels", [=](auto i) -> BoundKernel {
      using I = decltype(i);
      return [=](void *const *p) {
        vocabCeStats<T, I>(in<T>(p[at(Op::logits)]), in<I>(p[at(Op::labels)]),
                           in<float>(p[at(Op::max)]), s,
                           shardOf(p[at(Op::shard)]),
                           out<float>(p[at(Op::stats)]));
      };
    });
  });
}

BoundKernel bindVocabCeLoss(const KernelSignature &sig) {
  using Op = ops::VocabCeLoss;
  OperandIndex at(sig);
  VocabCeDims d = checkVocabCeLoss(sig);
  int64_t tokens = d.tokens, numTokens = d.numTokens;
  return [=](void *const *p) {
    *out<float>(p[at(Op::loss)]) = static_cast<float>(
        vocabCeLoss(in<float>(p[at(Op::stats)]), in<float>(p[at(Op::max)]),
                    tokens, numTokens));
  };
}

BoundKernel bindVocabCeGrad(const KernelSignature &sig) {
  using Op = ops::VocabCeGrad;
  OperandIndex at(sig);
  const TensorType &logits = sig.arg(Op::logits), &labels = sig.arg(Op::labels);
  VocabCeDims d = checkVocabCeGrad(sig);
  VocabCeShape s = vocabCeShape(d);
  int64_t numTokens = d.numTokens;
  return withFloat(sig, logits.dtype, "logits", [&](auto t) -> BoundKernel {
    using T = decltype(t);
    return withId(sig, labels.dtype, "labels", [=](auto i) -> BoundKernel {
      using I = decltype(i);
      return [=](void *const *p) {
        vocabCeGrad<T, I>(
            *in<float>(p[at(Op::dloss)]), in<T>(p[at(Op::logits)]),
            in<I>(p[at(Op::labels)]), in<float>(p[at(Op::max)]),
            in<float>(p[at(Op::stats)]), s, shardOf(p[at(Op::shard)]),
            numTokens, out<T>(p[at(Op::dlogits)]));
      };
    });
  });
}

} // namespace

void registerSequenceKernels(KernelTable &t) {
  t.add("embedding", bindEmbedding<false, false>);
  t.add("embedding_grad", bindEmbedding<true, false>);
  t.add("position_embedding", bindPositionEmbedding);
  t.add("position_embedding_grad", bindPositionEmbeddingGrad);
  t.add("rope", bindRope<false>);
  t.add("rope_grad", bindRope<true>);
  t.add("rope_local", bindRopeLocal<false>);
  t.add("rope_local_grad", bindRopeLocal<true>);
  t.add("dropout", bindDropout<false>);
  t.add("dropout_grad", bindDropout<true>);
  t.add("dropout_local", bindDropoutLocal<false>);
  t.add("dropout_local_grad", bindDropoutLocal<true>);
  t.add("attention", bindAttention<false>);
  t.add("attention_grad", bindAttentionGrad<false>);
  t.add("attention_block", bindAttention<true>);
  t.add("attention_block_grad", bindAttentionGrad<true>);
  t.add("attention_merge", bindAttentionMerge);
  t.add("cross_entropy", bindCrossEntropy);
  t.add("cross_entropy_grad", bindCrossEntropyGrad);
  t.add("vocab_embedding", bindEmbedding<false, true>);
  t.add("vocab_embedding_grad", bindEmbedding<true, true>);
  t.add("vocab_ce_max", bindVocabCeMax);
  t.add("vocab_ce_stats", bindVocabCeStats);
  t.add("vocab_ce_loss", bindVocabCeLoss);
  t.add("vocab_ce_grad", bindVocabCeGrad);
}

} // namespace autoshard::runtime::cpu_kernels
