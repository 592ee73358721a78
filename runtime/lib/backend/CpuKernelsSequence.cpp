//===- CpuKernelsSequence.cpp - Embedding, RoPE, dropout, attention, loss -===//

#include "autoshard/runtime/cpu/Kernels.h"

#include "CpuKernels.h"

#include <algorithm>

namespace autoshard::runtime::cpu_kernels {

using namespace autoshard::runtime::cpu;

namespace {

/// ids.shape + [hidden].
std::vector<int64_t> withHidden(const TensorType &ids, int64_t hidden) {
  std::vector<int64_t> shape = ids.shape;
  shape.push_back(hidden);
  return shape;
}

//===----------------------------------------------------------------------===//
// Embeddings
//===----------------------------------------------------------------------===//

BoundKernel bindEmbedding(const KernelSignature &sig) {
  const TensorType &ids = sig.args[0], &table = sig.args[1];
  expectExactRank(sig, table, 2, "table");
  int64_t vocab = table.shape[0], hidden = table.shape[1], n = ids.numel();
  expectType(sig, sig.results[0], typeOf(table.dtype, withHidden(ids, hidden)),
             resultName(0));
  return withFloat(sig, table.dtype, "table", [&](auto t) -> BoundKernel {
    using T = decltype(t);
    return withId(sig, ids.dtype, "ids", [=](auto i) -> BoundKernel {
      using I = decltype(i);
      return [=](void *const *p) {
        embedding<T, I>(in<I>(p[0]), n, in<T>(p[1]), vocab, hidden,
                        out<T>(p[2]));
      };
    });
  });
}

BoundKernel bindEmbeddingGrad(const KernelSignature &sig) {
  const TensorType &ids = sig.args[0], &dy = sig.args[1];
  expectRank(sig, dy, 1, "dy");
  int64_t hidden = dy.shape.back(), n = ids.numel();
  int64_t vocab = sig.attrs->getI64("num_embeddings");
  expectType(sig, dy, typeOf(dy.dtype, withHidden(ids, hidden)), "dy");
  expectType(sig, sig.results[0], typeOf(dy.dtype, {vocab, hidden}),
             resultName(0));
  return withFloat(sig, dy.dtype, "dy", [&](auto t) -> BoundKernel {
    using T = decltype(t);
    return withId(sig, ids.dtype, "ids", [=](auto i) -> BoundKernel {
      using I = decltype(i);
      return [=](void *const *p) {
        embeddingGrad<T, I>(in<I>(p[0]), n, in<T>(p[1]), vocab, hidden,
                            out<T>(p[2]));
      };
    });
  });
}

BoundKernel bindPositionEmbedding(const KernelSignature &sig) {
  const TensorType &table = sig.args[0];
  expectExactRank(sig, table, 2, "table");
  int64_t positions = table.shape[0], hidden = table.shape[1];
  int64_t seqLen = sig.attrs->getI64("seq_len");
  expectType(sig, sig.results[0], typeOf(table.dtype, {seqLen, hidden}),
             resultName(0));
  return withFloat(sig, table.dtype, "table", [=](auto t) -> BoundKernel {
    using T = decltype(t);
    return [=](void *const *p) {
      positionEmbedding<T>(in<T>(p[0]), positions, hidden, seqLen,
                           out<T>(p[1]));
    };
  });
}

BoundKernel bindPositionEmbeddingGrad(const KernelSignature &sig) {
  const TensorType &dy = sig.args[0];
  expectRank(sig, dy, 2, "dy");
  size_t r = dy.shape.size();
  int64_t outer = product(dy.shape, 0, r - 2), seqLen = dy.shape[r - 2],
          hidden = dy.shape[r - 1];
  int64_t positions = sig.attrs->getI64("num_positions");
  expectType(sig, sig.results[0], typeOf(dy.dtype, {positions, hidden}),
             resultName(0));
  return withFloat(sig, dy.dtype, "dy", [=](auto t) -> BoundKernel {
    using T = decltype(t);
    return [=](void *const *p) {
      positionEmbeddingGrad<T>(in<T>(p[0]), outer, seqLen, hidden, positions,
                               out<T>(p[1]));
    };
  });
}

//===----------------------------------------------------------------------===//
// RoPE and dropout
//===----------------------------------------------------------------------===//

template <bool Grad> BoundKernel bindRope(const KernelSignature &sig) {
  const TensorType &x = sig.args[0];
  expectExactRank(sig, x, 4, Grad ? "dy" : "x");
  expectResultsLikeArg0(sig);
  RopeShape s;
  s.batch = x.shape[0];
  s.seq = x.shape[1];
  s.heads = x.shape[2];
  s.headDim = x.shape[3];
  s.theta = sig.attrs->getF64("theta");
  if (s.headDim % 2 != 0 || !(s.theta > 0))
    sig.fail("needs an even head dim and theta > 0, found " + x.str() +
             " and theta " + std::to_string(s.theta));
  return withFloat(sig, x.dtype, "x", [=](auto t) -> BoundKernel {
    using T = decltype(t);
    return [=](void *const *p) {
      if constexpr (Grad)
        ropeGrad<T>(in<T>(p[0]), out<T>(p[1]), s);
      else
        rope<T>(in<T>(p[0]), out<T>(p[1]), s);
    };
  });
}

template <bool Grad> BoundKernel bindDropout(const KernelSignature &sig) {
  int64_t n = expectResultsLikeArg0(sig);
  expectScalar(sig, sig.args[1], DType::I64, "step");
  expectScalar(sig, sig.args[2], DType::I64, "layer");
  DropoutParams base;
  base.rate = sig.attrs->getF64("rate");
  base.site = sig.attrs->getI64("site");
  base.seed = sig.seed;
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
  expectResultsLikeArg0(sig);
  expectScalar(sig, sig.args[1], DType::I64, "step");
  expectScalar(sig, sig.args[2], DType::I64, "layer");
  const std::vector<int64_t> &shape = sig.args[0].shape;
  std::vector<int64_t> globalShape = sig.attrs->getI64Array("global_shape");
  std::vector<int64_t> shardDims = sig.attrs->getI64Array("shard_dims");
  const size_t numShards = sig.args.size() - 3;
  if (shardDims.size() != numShards)
    sig.fail("needs one shard operand per shard_dims entry: " +
             std::to_string(shardDims.size()) + " shard_dims, " +
             std::to_string(numShards) + " shard operands");
  if (globalShape.size() != shape.size())
    sig.fail("global_shape must have the rank " + std::to_string(shape.size()) +
             " of x, found rank " + std::to_string(globalShape.size()));
  for (size_t k = 0; k < numShards; ++k) {
    expectScalar(sig, sig.args[3 + k], DType::I64, "shard");
    int64_t d = shardDims[k];
    if (d < 0 || d >= static_cast<int64_t>(shape.size()) ||
        (k > 0 && shardDims[k - 1] >= d))
      sig.fail("shard_dims must be strictly increasing dims of x");
    if (shape[d] < 1 || globalShape[d] % shape[d] != 0)
      sig.fail("global dim " + std::to_string(d) + " (" +
               std::to_string(globalShape[d]) +
               ") is not a multiple of the local dim " +
               std::to_string(shape[d]));
  }
  for (size_t d = 0; d < shape.size(); ++d)
    if (std::find(shardDims.begin(), shardDims.end(), int64_t(d)) ==
            shardDims.end() &&
        shape[d] != globalShape[d])
      sig.fail("dim " + std::to_string(d) + " is not sharded, so the local " +
               "dim " + std::to_string(shape[d]) +
               " must equal the global dim " + std::to_string(globalShape[d]));
  DropoutParams base;
  base.rate = sig.attrs->getF64("rate");
  base.site = sig.attrs->getI64("site");
  base.seed = sig.seed;
  DropoutBlock block;
  block.shape = shape;
  block.globalShape = globalShape;
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

/// Checks q, k, v (operands first..first+2) and returns the shape.
AttentionShape attentionShape(const KernelSignature &sig, size_t first) {
  const TensorType &q = sig.args[first], &k = sig.args[first + 1],
                   &v = sig.args[first + 2];
  expectExactRank(sig, q, 4, "q");
  expectExactRank(sig, k, 4, "k");
  expectType(sig, v, k, "v");
  AttentionShape s;
  s.batch = q.shape[0];
  s.seqQ = q.shape[1];
  s.heads = q.shape[2];
  s.headDim = q.shape[3];
  s.seqK = k.shape[1];
  s.kvHeads = k.shape[2];
  if (k.dtype != q.dtype || k.shape[0] != s.batch || k.shape[3] != s.headDim ||
      s.kvHeads == 0 || s.heads % s.kvHeads != 0)
    sig.fail("k " + k.str() + " does not fit q " + q.str());
  s.causal = sig.attrs->getFlag("causal");
  s.scale = sig.attrs->getF64("scale");
  if (s.causal && s.seqQ != s.seqK)
    sig.fail("causal attention needs seqQ == seqK, found " + q.str() + " and " +
             k.str());
  return s;
}

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

BoundKernel bindAttention(const KernelSignature &sig) {
  AttentionShape s = attentionShape(sig, 0);
  const TensorType &q = sig.args[0], &lse = sig.results[1];
  expectType(sig, sig.results[0], q, "out");
  expectType(sig, lse, typeOf(lse.dtype, {s.batch, s.heads, s.seqQ}), "lse");
  return withAttentionTypes(
      sig, q.dtype, lse.dtype, [=](auto t, auto l) -> BoundKernel {
        using T = decltype(t);
        using L = decltype(l);
        return [=](void *const *p) {
          attention<T, L>(in<T>(p[0]), in<T>(p[1]), in<T>(p[2]), out<T>(p[3]),
                          out<L>(p[4]), s);
        };
      });
}

BoundKernel bindAttentionGrad(const KernelSignature &sig) {
  AttentionShape s = attentionShape(sig, 1);
  const TensorType &q = sig.args[1], &lse = sig.args[5];
  expectType(sig, sig.args[0], q, "dout");
  expectType(sig, sig.args[4], q, "out");
  expectType(sig, lse, typeOf(lse.dtype, {s.batch, s.heads, s.seqQ}), "lse");
  for (size_t i = 0; i < 3; ++i)
    expectType(sig, sig.results[i], sig.args[1 + i], resultName(i));
  return withAttentionTypes(
      sig, q.dtype, lse.dtype, [=](auto t, auto l) -> BoundKernel {
        using T = decltype(t);
        using L = decltype(l);
        return [=](void *const *p) {
          attentionGrad<T, L>(in<T>(p[0]), in<T>(p[1]), in<T>(p[2]),
                              in<T>(p[3]), in<T>(p[4]), in<L>(p[5]),
                              out<T>(p[6]), out<T>(p[7]), out<T>(p[8]), s);
        };
      });
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

/// Checks logits [..., V] and labels [...]; returns the shape.
CrossEntropyShape lossShape(const KernelSignature &sig, size_t first) {
  const TensorType &logits = sig.args[first], &labels = sig.args[first + 1];
  expectRank(sig, logits, 1, "logits");
  std::vector<int64_t> lead(logits.shape.begin(), logits.shape.end() - 1);
  if (labels.shape != lead)
    sig.fail("labels " + labels.str() + " must have the leading dims of " +
             "logits " + logits.str());
  CrossEntropyShape s;
  s.tokens = labels.numel();
  s.classes = logits.shape.back();
  s.vocabSize = sig.attrs->has("vocab_size") ? sig.attrs->getI64("vocab_size")
                                             : s.classes;
  if (s.vocabSize < 1 || s.vocabSize > s.classes)
    sig.fail("attribute 'vocab_size' must be in [1, " +
             std::to_string(s.classes) + "], found " +
             std::to_string(s.vocabSize));
  return s;
}

BoundKernel bindCrossEntropy(const KernelSignature &sig) {
  CrossEntropyShape s = lossShape(sig, 0);
  expectScalar(sig, sig.results[0], DType::F32, "loss");
  return withFloat(
      sig, sig.args[0].dtype, "logits", [&](auto t) -> BoundKernel {
        using T = decltype(t);
        return withId(sig, sig.args[1].dtype, "labels",
                      [=](auto i) -> BoundKernel {
                        using I = decltype(i);
                        return [=](void *const *p) {
                          *out<float>(p[2]) = static_cast<float>(
                              crossEntropy<T, I>(in<T>(p[0]), in<I>(p[1]), s));
                        };
                      });
      });
}

BoundKernel bindCrossEntropyGrad(const KernelSignature &sig) {
  expectScalar(sig, sig.args[0], DType::F32, "dloss");
  CrossEntropyShape s = lossShape(sig, 1);
  expectType(sig, sig.results[0], sig.args[1], "dlogits");
  return withFloat(
      sig, sig.args[1].dtype, "logits", [&](auto t) -> BoundKernel {
        using T = decltype(t);
        return withId(sig, sig.args[2].dtype, "labels",
                      [=](auto i) -> BoundKernel {
                        using I = decltype(i);
                        return [=](void *const *p) {
                          crossEntropyGrad<T, I>(*in<float>(p[0]), in<T>(p[1]),
                                                 in<I>(p[2]), out<T>(p[3]), s);
                        };
                      });
      });
}

//===----------------------------------------------------------------------===//
// Vocab-parallel embedding and loss
//===----------------------------------------------------------------------===//

/// The `shard` operand: an i64 scalar read when the kernel runs.
int64_t shardOf(void *p) { return *in<int64_t>(p); }

BoundKernel bindVocabEmbedding(const KernelSignature &sig) {
  const TensorType &ids = sig.args[0], &table = sig.args[1];
  expectExactRank(sig, table, 2, "table");
  expectScalar(sig, sig.args[2], DType::I64, "shard");
  int64_t vocab = table.shape[0], hidden = table.shape[1], n = ids.numel();
  expectType(sig, sig.results[0], typeOf(table.dtype, withHidden(ids, hidden)),
             resultName(0));
  return withFloat(sig, table.dtype, "table", [&](auto t) -> BoundKernel {
    using T = decltype(t);
    return withId(sig, ids.dtype, "ids", [=](auto i) -> BoundKernel {
      using I = decltype(i);
      return [=](void *const *p) {
        vocabEmbedding<T, I>(in<I>(p[0]), n, in<T>(p[1]), vocab, hidden,
                             shardOf(p[2]), out<T>(p[3]));
      };
    });
  });
}

BoundKernel bindVocabEmbeddingGrad(const KernelSignature &sig) {
  const TensorType &ids = sig.args[0], &dy = sig.args[1];
  expectRank(sig, dy, 1, "dy");
  expectScalar(sig, sig.args[2], DType::I64, "shard");
  int64_t hidden = dy.shape.back(), n = ids.numel();
  int64_t vocab = sig.attrs->getI64("num_embeddings");
  if (vocab < 1)
    sig.fail("attribute 'num_embeddings' must be >= 1, found " +
             std::to_string(vocab));
  expectType(sig, dy, typeOf(dy.dtype, withHidden(ids, hidden)), "dy");
  expectType(sig, sig.results[0], typeOf(dy.dtype, {vocab, hidden}),
             resultName(0));
  return withFloat(sig, dy.dtype, "dy", [&](auto t) -> BoundKernel {
    using T = decltype(t);
    return withId(sig, ids.dtype, "ids", [=](auto i) -> BoundKernel {
      using I = decltype(i);
      return [=](void *const *p) {
        vocabEmbeddingGrad<T, I>(in<I>(p[0]), n, in<T>(p[1]), vocab, hidden,
                                 shardOf(p[2]), out<T>(p[3]));
      };
    });
  });
}

/// Checks local logits [..., Vl] and the `vocab_size` attribute; returns the
/// shape and sets `lead` to the leading dims.
VocabCeShape vocabCeShape(const KernelSignature &sig, const TensorType &logits,
                          std::vector<int64_t> &lead) {
  expectRank(sig, logits, 1, "logits");
  lead.assign(logits.shape.begin(), logits.shape.end() - 1);
  VocabCeShape s;
  s.tokens = product(logits.shape, 0, logits.shape.size() - 1);
  s.classes = logits.shape.back();
  s.vocabSize =
      sig.attrs->has("vocab_size") ? sig.attrs->getI64("vocab_size") : 0;
  if (s.vocabSize < 1)
    sig.fail("attribute 'vocab_size' must be >= 1, found " +
             std::to_string(s.vocabSize));
  if (s.classes < 1)
    sig.fail("logits " + logits.str() + " must have a vocabulary dim >= 1");
  return s;
}

/// Fails unless `labels` has the leading dims `lead` of the logits.
void expectLabels(const KernelSignature &sig, const TensorType &labels,
                  const std::vector<int64_t> &lead, const TensorType &logits) {
  if (labels.shape != lead)
    sig.fail("labels " + labels.str() + " must have the leading dims of " +
             "logits " + logits.str());
}

/// lead + [2].
std::vector<int64_t> statsShape(std::vector<int64_t> lead) {
  lead.push_back(2);
  return lead;
}

BoundKernel bindVocabCeMax(const KernelSignature &sig) {
  const TensorType &logits = sig.args[0];
  std::vector<int64_t> lead;
  VocabCeShape s = vocabCeShape(sig, logits, lead);
  expectScalar(sig, sig.args[1], DType::I64, "shard");
  expectType(sig, sig.results[0], typeOf(DType::F32, lead), resultName(0));
  return withFloat(sig, logits.dtype, "logits", [=](auto t) -> BoundKernel {
    using T = decltype(t);
    return [=](void *const *p) {
      vocabCeMax<T>(in<T>(p[0]), s, shardOf(p[1]), out<float>(p[2]));
    };
  });
}

BoundKernel bindVocabCeStats(const KernelSignature &sig) {
  const TensorType &logits = sig.args[0], &labels = sig.args[1];
  std::vector<int64_t> lead;
  VocabCeShape s = vocabCeShape(sig, logits, lead);
  expectLabels(sig, labels, lead, logits);
  expectType(sig, sig.args[2], typeOf(DType::F32, lead), "max");
  expectScalar(sig, sig.args[3], DType::I64, "shard");
  expectType(sig, sig.results[0], typeOf(DType::F32, statsShape(lead)),
             resultName(0));
  return withFloat(sig, logits.dtype, "logits", [&](auto t) -> BoundKernel {
    using T = decltype(t);
    return withId(sig, labels.dtype, "labels", [=](auto i) -> BoundKernel {
      using I = decltype(i);
      return [=](void *const *p) {
        vocabCeStats<T, I>(in<T>(p[0]), in<I>(p[1]), in<float>(p[2]), s,
                           shardOf(p[3]), out<float>(p[4]));
      };
    });
  });
}

BoundKernel bindVocabCeLoss(const KernelSignature &sig) {
  const TensorType &stats = sig.args[0], &max = sig.args[1];
  expectType(sig, max, typeOf(DType::F32, max.shape), "max");
  expectType(sig, stats, typeOf(DType::F32, statsShape(max.shape)), "stats");
  expectScalar(sig, sig.results[0], DType::F32, "loss");
  int64_t tokens = max.numel();
  int64_t numTokens = sig.attrs->getI64("num_tokens");
  if (numTokens < std::max<int64_t>(tokens, 1))
    sig.fail("attribute 'num_tokens' must be >= the local token count " +
             std::to_string(tokens) + " (and >= 1), found " +
             std::to_string(numTokens));
  return [=](void *const *p) {
    *out<float>(p[2]) = static_cast<float>(
        vocabCeLoss(in<float>(p[0]), in<float>(p[1]), tokens, numTokens));
  };
}

BoundKernel bindVocabCeGrad(const KernelSignature &sig) {
  expectScalar(sig, sig.args[0], DType::F32, "dloss");
  const TensorType &logits = sig.args[1], &labels = sig.args[2];
  std::vector<int64_t> lead;
  VocabCeShape s = vocabCeShape(sig, logits, lead);
  expectLabels(sig, labels, lead, logits);
  expectType(sig, sig.args[3], typeOf(DType::F32, lead), "max");
  expectType(sig, sig.args[4], typeOf(DType::F32, statsShape(lead)), "stats");
  expectScalar(sig, sig.args[5], DType::I64, "shard");
  expectType(sig, sig.results[0], logits, "dlogits");
  int64_t numTokens = sig.attrs->getI64("num_tokens");
  if (numTokens < std::max<int64_t>(s.tokens, 1))
    sig.fail("attribute 'num_tokens' must be >= the local token count " +
             std::to_string(s.tokens) + " (and >= 1), found " +
             std::to_string(numTokens));
  return withFloat(sig, logits.dtype, "logits", [&](auto t) -> BoundKernel {
    using T = decltype(t);
    return withId(sig, labels.dtype, "labels", [=](auto i) -> BoundKernel {
      using I = decltype(i);
      return [=](void *const *p) {
        vocabCeGrad<T, I>(*in<float>(p[0]), in<T>(p[1]), in<I>(p[2]),
                          in<float>(p[3]), in<float>(p[4]), s, shardOf(p[5]),
                          numTokens, out<T>(p[6]));
      };
    });
  });
}

} // namespace

void registerSequenceKernels(KernelTable &t) {
  t.add("embedding", bindEmbedding);
  t.add("embedding_grad", bindEmbeddingGrad);
  t.add("position_embedding", bindPositionEmbedding);
  t.add("position_embedding_grad", bindPositionEmbeddingGrad);
  t.add("rope", bindRope<false>);
  t.add("rope_grad", bindRope<true>);
  t.add("dropout", bindDropout<false>);
  t.add("dropout_grad", bindDropout<true>);
  t.add("dropout_local", bindDropoutLocal<false>);
  t.add("dropout_local_grad", bindDropoutLocal<true>);
  t.add("attention", bindAttention);
  t.add("attention_grad", bindAttentionGrad);
  t.add("cross_entropy", bindCrossEntropy);
  t.add("cross_entropy_grad", bindCrossEntropyGrad);
  t.add("vocab_embedding", bindVocabEmbedding);
  t.add("vocab_embedding_grad", bindVocabEmbeddingGrad);
  t.add("vocab_ce_max", bindVocabCeMax);
  t.add("vocab_ce_stats", bindVocabCeStats);
  t.add("vocab_ce_loss", bindVocabCeLoss);
  t.add("vocab_ce_grad", bindVocabCeGrad);
}

} // namespace autoshard::runtime::cpu_kernels
