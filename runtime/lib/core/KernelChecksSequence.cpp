//===- KernelChecksSequence.cpp - Embedding, attention, loss checks -------===//
//===//

#include "autoshard/runtime/KernelChecks.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace autoshard::runtime::checks {

namespace {

/// ids.shape + [hidden].
std::vector<int64_t> withHidden(const TensorType &ids, int64_t hidden) {
  std::vector<int64_t> shape = ids.shape;
  shape.push_back(hidden);
  return shape;
}

} // namespace

//===----------------------------------------------------------------------===//
// Embeddings
//===----------------------------------------------------------------------===//

EmbeddingShape checkEmbedding(const KernelSignature &sig, bool vocabParallel) {
  const TensorType &ids = sig.args[0], &table = sig.args[1];
  expectExactRank(sig, table, 2, "table");
  if (vocabParallel)
    expectScalar(sig, sig.args[2], DType::I64, "shard");
  EmbeddingShape s;
  s.vocab = table.shape[0];
  s.hidden = table.shape[1];
  s.numIds = ids.numel();
  expectResult(sig, typeOf(table.dtype, withHidden(ids, s.hidden)));
  return s;
}

EmbeddingShape checkEmbeddingGrad(const KernelSignature &sig,
                                  bool vocabParallel) {
  const TensorType &ids = sig.args[0], &dy = sig.args[1];
  expectRank(sig, dy, 1, "dy");
  if (vocabParallel)
    expectScalar(sig, sig.args[2], DType::I64, "shard");
  EmbeddingShape s;
  s.hidden = dy.shape.back();
  s.numIds = ids.numel();
  s.vocab = sig.attrs->getI64("num_embeddings");
  if (vocabParallel && s.vocab < 1)
    sig.fail("attribute 'num_embeddings' must be >= 1, found " +
             std::to_string(s.vocab));
  expectType(sig, dy, typeOf(dy.dtype, withHidden(ids, s.hidden)), "dy");
  expectResult(sig, typeOf(dy.dtype, {s.vocab, s.hidden}));
  return s;
}

int64_t zigzagChunksOf(const KernelSignature &sig, int64_t seqLen) {
  if (!sig.attrs || !sig.attrs->has("zigzag_chunks"))
    return 0;
  int64_t n = sig.attrs->getI64("zigzag_chunks");
  if (n < 2 || n % 2 != 0 || seqLen % n != 0)
    sig.fail("zigzag_chunks must be even, >= 2 and divide the sequence "
             "length " +
             std::to_string(seqLen) + ", found " + std::to_string(n));
  return n;
}

PositionEmbeddingShape checkPositionEmbedding(const KernelSignature &sig) {
  const TensorType &table = sig.args[0];
  expectExactRank(sig, table, 2, "table");
  PositionEmbeddingShape s;
  s.positions = table.shape[0];
  s.hidden = table.shape[1];
  s.seqLen = sig.attrs->getI64("seq_len");
  expectResult(sig, typeOf(table.dtype, {s.seqLen, s.hidden}));
  s.zigzagChunks = zigzagChunksOf(sig, s.seqLen);
  return s;
}

PositionEmbeddingShape checkPositionEmbeddingGrad(const KernelSignature &sig) {
  const TensorType &dy = sig.args[0];
  expectRank(sig, dy, 2, "dy");
  size_t r = dy.shape.size();
  PositionEmbeddingShape s;
  s.outer = product(dy.shape, 0, r - 2);
  s.seqLen = dy.shape[r - 2];
  s.hidden = dy.shape[r - 1];
  s.positions = sig.attrs->getI64("num_positions");
  expectResult(sig, typeOf(dy.dtype, {s.positions, s.hidden}));
  s.zigzagChunks = zigzagChunksOf(sig, s.seqLen);
  return s;
}

//===----------------------------------------------------------------------===//
// RoPE and dropout
//===----------------------------------------------------------------------===//

namespace {

/// rope(_local)(_grad)'s x and theta (the order is checkRope's and
/// checkRopeLocal's: on the whole sequence, or on seq_len).
RopeDims ropeDims(const KernelSignature &sig, bool grad) {
  const TensorType &x = sig.args[0];
  expectExactRank(sig, x, 4, grad ? "dy" : "x");
  expectResultsLikeArg0(sig);
  RopeDims s;
  s.batch = x.shape[0];
  s.seq = x.shape[1];
  s.heads = x.shape[2];
  s.headDim = x.shape[3];
  s.theta = sig.attrs->getF64("theta");
  if (s.headDim % 2 != 0 || !(s.theta > 0))
    sig.fail("needs an even head dim and theta > 0, found " + x.str() +
             " and theta " + std::to_string(s.theta));
  return s;
}

} // namespace

RopeDims checkRope(const KernelSignature &sig, bool grad) {
  RopeDims s = ropeDims(sig, grad);
  s.seqLen = s.seq;
  s.zigzagChunks = zigzagChunksOf(sig, s.seqLen);
  return s;
}

RopeLocalDims checkRopeLocal(const KernelSignature &sig, bool grad) {
  RopeLocalDims s;
  s.rope = ropeDims(sig, grad);
  expectScalar(sig, sig.args[1], DType::I64, "shard");
  s.seqLen = sig.attrs->getI64("seq_len");
  if (s.rope.seq < 1 || s.seqLen < 1 || s.seqLen % s.rope.seq != 0)
    sig.fail("seq_len must be a positive multiple of the local sequence "
             "length " +
             std::to_string(s.rope.seq) + ", found " +
             std::to_string(s.seqLen));
  s.numShards = s.seqLen / s.rope.seq;
  s.rope.seqLen = s.seqLen;
  s.rope.zigzagChunks = zigzagChunksOf(sig, s.seqLen);
  return s;
}

namespace {

/// A block index read at run time (`dist.axis_index` over the sequence's
/// axes) must name one of the `count` blocks.
void checkBlockIndex(const char *op, const char *what, int64_t index,
                     int64_t count) {
  if (index < 0 || index >= count)
    throw std::runtime_error(std::string(op) + ": " + what + " index " +
                             std::to_string(index) + " is outside 0.." +
                             std::to_string(count - 1));
}

} // namespace

int64_t ropeLocalOffset(const RopeLocalDims &d, int64_t shard) {
  checkBlockIndex("rope_local", "shard", shard, d.numShards);
  return shard * d.rope.seq;
}

namespace {

/// dropout_local: the shard operands (after x, step, layer) against
/// `shard_dims` and `global_shape`.
void checkDropoutBlock(const KernelSignature &sig, DropoutShape &s) {
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
  s.shape = shape;
  s.globalShape = std::move(globalShape);
  s.shardDims = std::move(shardDims);
}

} // namespace

DropoutShape checkDropout(const KernelSignature &sig, bool local) {
  DropoutShape s;
  s.numel = expectResultsLikeArg0(sig);
  expectScalar(sig, sig.args[1], DType::I64, "step");
  expectScalar(sig, sig.args[2], DType::I64, "layer");
  if (local)
    checkDropoutBlock(sig, s);
  s.rate = sig.attrs->getF64("rate");
  s.site = sig.attrs->getI64("site");
  if (!local) {
    s.shape = sig.args[0].shape;
    s.globalShape = s.shape;
  }
  if (sig.attrs->has("zigzag_chunks")) {
    if (s.globalShape.size() < 2)
      sig.fail("zigzag_chunks needs x of rank >= 2 ([..., S, H]: the "
               "sequence is the second-to-last dim), found rank " +
               std::to_string(s.globalShape.size()));
    s.zigzagChunks =
        zigzagChunksOf(sig, s.globalShape[s.globalShape.size() - 2]);
  }
  return s;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

namespace {

/// Checks q, k, v (operands first..first+2) and lse against them.
AttentionDims attentionDims(const KernelSignature &sig, size_t first,
                            const TensorType &lse) {
  const TensorType &q = sig.args[first], &k = sig.args[first + 1],
                   &v = sig.args[first + 2];
  expectExactRank(sig, q, 4, "q");
  expectExactRank(sig, k, 4, "k");
  expectType(sig, v, k, "v");
  AttentionDims s;
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
  s.lseType = lse.dtype;
  return s;
}

void expectLse(const KernelSignature &sig, const TensorType &lse,
               const AttentionDims &s) {
  expectType(sig, lse, typeOf(lse.dtype, {s.batch, s.heads, s.seqQ}), "lse");
}

} // namespace

namespace {

AttentionDims checkAttentionShape(const KernelSignature &sig) {
  const TensorType &lse = sig.results[1];
  AttentionDims s = attentionDims(sig, 0, lse);
  expectType(sig, sig.results[0], sig.args[0], "out");
  expectLse(sig, lse, s);
  return s;
}

/// A whole-sequence attention(_grad): its causal mask cannot take zig-zag
/// order (the visible keys of a row are no prefix).
void checkOriginalOrder(const KernelSignature &sig, const AttentionDims &s) {
  if (s.causal && sig.attrs->has("zigzag_chunks"))
    sig.fail("a causal attention of a sequence in zig-zag order needs ring "
             "attention blocks (attention_block), found zigzag_chunks " +
             std::to_string(sig.attrs->getI64("zigzag_chunks")) +
             " on the whole sequence");
}

AttentionDims checkAttentionGradShape(const KernelSignature &sig) {
  const TensorType &q = sig.args[1], &lse = sig.args[5];
  AttentionDims s = attentionDims(sig, 1, lse);
  expectType(sig, sig.args[0], q, "dout");
  expectType(sig, sig.args[4], q, "out");
  expectLse(sig, lse, s);
  for (size_t i = 0; i < 3; ++i)
    expectType(sig, sig.results[i], sig.args[1 + i], resultName(i));
  return s;
}

} // namespace

namespace {

/// The ring attributes of attention_block(_grad) and its `chunk` operand.
void checkBlock(const KernelSignature &sig, AttentionDims &s, size_t chunk) {
  expectScalar(sig, sig.args[chunk], DType::I64, "chunk");
  s.kvStep = sig.attrs->getI64("kv_step");
  s.numChunks = sig.attrs->getI64("num_chunks");
  if (s.numChunks < 1 || s.kvStep < 0 || s.kvStep >= s.numChunks)
    sig.fail("needs num_chunks >= 1 and 0 <= kv_step < num_chunks, found "
             "kv_step " +
             std::to_string(s.kvStep) + ", num_chunks " +
             std::to_string(s.numChunks));
  if (s.seqQ != s.seqK)
    sig.fail("needs chunks of equal length (seqQ == seqK), found " +
             std::to_string(s.seqQ) + " and " + std::to_string(s.seqK));
  s.zigzagChunks = zigzagChunksOf(sig, s.numChunks * s.seqQ);
  // Every block must be one rank's chunk pair (or inside one), so that
  // positions increase over its rows: n divides 2 num_chunks.
  if (s.zigzagChunks > 0 && (2 * s.numChunks) % s.zigzagChunks != 0)
    sig.fail("needs zigzag_chunks dividing 2 num_chunks, found zigzag_chunks " +
             std::to_string(s.zigzagChunks) + ", num_chunks " +
             std::to_string(s.numChunks));
}

} // namespace

AttentionDims checkAttention(const KernelSignature &sig) {
  AttentionDims s = checkAttentionShape(sig);
  checkOriginalOrder(sig, s);
  return s;
}

AttentionDims checkAttentionBlock(const KernelSignature &sig) {
  AttentionDims s = checkAttentionShape(sig);
  checkBlock(sig, s, 3);
  return s;
}

AttentionDims checkAttentionBlockGrad(const KernelSignature &sig) {
  AttentionDims s = checkAttentionGradShape(sig);
  checkBlock(sig, s, 6);
  return s;
}

BlockPositions attentionBlockPositions(const AttentionDims &d, int64_t chunk) {
  checkBlockIndex("attention_block", "chunk", chunk, d.numChunks);
  int64_t kvChunk =
      ((chunk - d.kvStep) % d.numChunks + d.numChunks) % d.numChunks;
  int64_t seqLen = d.numChunks * d.seqQ;
  return {{chunk * d.seqQ, seqLen, d.zigzagChunks},
          {kvChunk * d.seqK, seqLen, d.zigzagChunks}};
}

AttentionMergeDims checkAttentionMerge(const KernelSignature &sig) {
  const TensorType &out = sig.args[0], &lse = sig.args[1];
  expectExactRank(sig, out, 4, "out_a");
  AttentionMergeDims s;
  s.batch = out.shape[0];
  s.seq = out.shape[1];
  s.heads = out.shape[2];
  s.headDim = out.shape[3];
  s.lseType = lse.dtype;
  expectType(sig, lse, typeOf(lse.dtype, {s.batch, s.heads, s.seq}), "lse_a");
  expectType(sig, sig.args[2], out, "out_b");
  expectType(sig, sig.args[3], lse, "lse_b");
  expectType(sig, sig.results[0], out, "out");
  expectType(sig, sig.results[1], lse, "lse");
  return s;
}

AttentionDims checkAttentionGrad(const KernelSignature &sig) {
  AttentionDims s = checkAttentionGradShape(sig);
  checkOriginalOrder(sig, s);
  return s;
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

namespace {

/// Checks logits [..., V] and labels [...] (operands first, first + 1).
CrossEntropyDims lossDims(const KernelSignature &sig, size_t first) {
  const TensorType &logits = sig.args[first], &labels = sig.args[first + 1];
  expectRank(sig, logits, 1, "logits");
  std::vector<int64_t> lead(logits.shape.begin(), logits.shape.end() - 1);
  if (labels.shape != lead)
    sig.fail("labels " + labels.str() + " must have the leading dims of " +
             "logits " + logits.str());
  CrossEntropyDims s;
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

} // namespace

CrossEntropyDims checkCrossEntropy(const KernelSignature &sig) {
  CrossEntropyDims s = lossDims(sig, 0);
  expectScalar(sig, sig.results[0], DType::F32, "loss");
  return s;
}

CrossEntropyDims checkCrossEntropyGrad(const KernelSignature &sig) {
  expectScalar(sig, sig.args[0], DType::F32, "dloss");
  CrossEntropyDims s = lossDims(sig, 1);
  expectType(sig, sig.results[0], sig.args[1], "dlogits");
  return s;
}

//===----------------------------------------------------------------------===//
// Vocab-parallel loss
//===----------------------------------------------------------------------===//

namespace {

/// Checks local logits [..., Vl] and the `vocab_size` attribute; sets
/// `lead` to the leading dims.
VocabCeDims vocabCeDims(const KernelSignature &sig, const TensorType &logits,
                        std::vector<int64_t> &lead) {
  expectRank(sig, logits, 1, "logits");
  lead.assign(logits.shape.begin(), logits.shape.end() - 1);
  VocabCeDims s;
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

/// The attribute `num_tokens`: at least the local token count and 1.
int64_t numTokensAttr(const KernelSignature &sig, int64_t tokens) {
  int64_t numTokens = sig.attrs->getI64("num_tokens");
  if (numTokens < std::max<int64_t>(tokens, 1))
    sig.fail("attribute 'num_tokens' must be >= the local token count " +
             std::to_string(tokens) + " (and >= 1), found " +
             std::to_string(numTokens));
  return numTokens;
}

} // namespace

VocabCeDims checkVocabCeMax(const KernelSignature &sig) {
  std::vector<int64_t> lead;
  VocabCeDims s = vocabCeDims(sig, sig.args[0], lead);
  expectScalar(sig, sig.args[1], DType::I64, "shard");
  expectResult(sig, typeOf(DType::F32, lead));
  return s;
}

VocabCeDims checkVocabCeStats(const KernelSignature &sig) {
  const TensorType &logits = sig.args[0], &labels = sig.args[1];
  std::vector<int64_t> lead;
  VocabCeDims s = vocabCeDims(sig, logits, lead);
  expectLabels(sig, labels, lead, logits);
  expectType(sig, sig.args[2], typeOf(DType::F32, lead), "max");
  expectScalar(sig, sig.args[3], DType::I64, "shard");
  expectResult(sig, typeOf(DType::F32, statsShape(lead)));
  return s;
}

VocabCeDims checkVocabCeLoss(const KernelSignature &sig) {
  const TensorType &stats = sig.args[0], &max = sig.args[1];
  expectType(sig, max, typeOf(DType::F32, max.shape), "max");
  expectType(sig, stats, typeOf(DType::F32, statsShape(max.shape)), "stats");
  expectScalar(sig, sig.results[0], DType::F32, "loss");
  VocabCeDims s;
  s.tokens = max.numel();
  s.numTokens = numTokensAttr(sig, s.tokens);
  return s;
}

VocabCeDims checkVocabCeGrad(const KernelSignature &sig) {
  expectScalar(sig, sig.args[0], DType::F32, "dloss");
  const TensorType &logits = sig.args[1], &labels = sig.args[2];
  std::vector<int64_t> lead;
  VocabCeDims s = vocabCeDims(sig, logits, lead);
  expectLabels(sig, labels, lead, logits);
  expectType(sig, sig.args[3], typeOf(DType::F32, lead), "max");
  expectType(sig, sig.args[4], typeOf(DType::F32, statsShape(lead)), "stats");
  expectScalar(sig, sig.args[5], DType::I64, "shard");
  expectType(sig, sig.results[0], logits, "dlogits");
  s.numTokens = numTokensAttr(sig, s.tokens);
  return s;
}

} // namespace autoshard::runtime::checks
