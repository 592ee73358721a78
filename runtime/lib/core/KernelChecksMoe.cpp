//===- KernelChecksMoe.cpp - Mixture-of-experts operand checks ------------===//

#include "autoshard/runtime/KernelChecks.h"

namespace autoshard::runtime::checks {

namespace {

/// Batch, seq and top-k from ids [B, S, K].
MoeDims fromIds(const KernelSignature &sig, const TensorType &ids) {
  expectExactRank(sig, ids, 3, "expert_ids");
  MoeDims s;
  s.batch = ids.shape[0];
  s.seq = ids.shape[1];
  s.topK = ids.shape[2];
  return s;
}

/// Checks logits [B, S, E] against ids [B, S, K]; sets numExperts.
void withLogits(const KernelSignature &sig, const TensorType &logits,
                MoeDims &s) {
  expectExactRank(sig, logits, 3, "logits");
  s.numExperts = logits.shape[2];
  expectType(sig, logits, typeOf(logits.dtype, {s.batch, s.seq, s.numExperts}),
             "logits");
  if (s.topK < 1 || s.topK > s.numExperts)
    sig.fail("top-k " + std::to_string(s.topK) + " must be in [1, " +
             std::to_string(s.numExperts) + "]");
}

/// Checks an expert buffer [E, B, C, H]; sets numExperts, capacity, hidden.
void withBuffer(const KernelSignature &sig, const TensorType &buf, MoeDims &s) {
  expectExactRank(sig, buf, 4, "buf");
  s.numExperts = buf.shape[0];
  s.capacity = buf.shape[2];
  s.hidden = buf.shape[3];
  if (buf.shape[1] != s.batch || s.topK > s.numExperts)
    sig.fail("expert buffer " + buf.str() + " does not fit batch " +
             std::to_string(s.batch) + " and top-k " + std::to_string(s.topK));
  s.zigzagChunks = zigzagChunksOf(sig, s.seq);
}

/// [B, S, H] of the expert buffer's batch, seq and hidden.
TensorType tokensOf(DType dtype, const MoeDims &s) {
  return typeOf(dtype, {s.batch, s.seq, s.hidden});
}

/// Checks buf (operand `first`), gates and ids of combine(_grad).
MoeDims combineDims(const KernelSignature &sig, size_t first) {
  const TensorType &buf = sig.args[first], &ids = sig.args[first + 2];
  MoeDims s = fromIds(sig, ids);
  withBuffer(sig, buf, s);
  expectType(sig, sig.args[first + 1], typeOf(buf.dtype, ids.shape), "gates");
  return s;
}

} // namespace

MoeDims checkMoeRouter(const KernelSignature &sig) {
  const TensorType &logits = sig.args[0], &ids = sig.results[1];
  MoeDims s = fromIds(sig, ids);
  withLogits(sig, logits, s);
  expectType(sig, sig.results[0], typeOf(logits.dtype, ids.shape), "gates");
  if (sig.attrs->getI64("top_k") != s.topK)
    sig.fail("attribute 'top_k' " + std::to_string(sig.attrs->getI64("top_k")) +
             " differs from expert_ids " + ids.str());
  s.renormalize = sig.attrs->getFlag("renormalize");
  return s;
}

MoeDims checkMoeRouterGrad(const KernelSignature &sig) {
  const TensorType &logits = sig.args[1], &ids = sig.args[2];
  MoeDims s = fromIds(sig, ids);
  withLogits(sig, logits, s);
  expectType(sig, sig.args[0], typeOf(logits.dtype, ids.shape), "dgates");
  expectType(sig, sig.results[0], logits, "dlogits");
  s.renormalize = sig.attrs->getFlag("renormalize");
  return s;
}

MoeDims checkMoeAuxLoss(const KernelSignature &sig) {
  MoeDims s = fromIds(sig, sig.args[1]);
  withLogits(sig, sig.args[0], s);
  expectScalar(sig, sig.results[0], DType::F32, "loss");
  return s;
}

MoeDims checkMoeAuxLossGrad(const KernelSignature &sig) {
  expectScalar(sig, sig.args[0], DType::F32, "dloss");
  const TensorType &logits = sig.args[1];
  MoeDims s = fromIds(sig, sig.args[2]);
  withLogits(sig, logits, s);
  expectType(sig, sig.results[0], logits, "dlogits");
  return s;
}

MoeDims checkMoeDispatch(const KernelSignature &sig) {
  const TensorType &x = sig.args[0];
  MoeDims s = fromIds(sig, sig.args[1]);
  expectExactRank(sig, x, 3, "x");
  s.hidden = x.shape[2];
  expectType(sig, x, tokensOf(x.dtype, s), "x");
  int64_t experts = sig.attrs->getI64("num_experts");
  int64_t capacity = sig.attrs->getI64("capacity");
  expectType(sig, sig.results[0],
             typeOf(x.dtype, {experts, s.batch, capacity, s.hidden}), "buf");
  withBuffer(sig, sig.results[0], s);
  s.dropless = sig.attrs->getFlag("dropless");
  return s;
}

MoeDims checkMoeDispatchGrad(const KernelSignature &sig) {
  const TensorType &dbuf = sig.args[0];
  MoeDims s = fromIds(sig, sig.args[1]);
  withBuffer(sig, dbuf, s);
  if (sig.attrs->getI64("capacity") != s.capacity)
    sig.fail("attribute 'capacity' differs from dbuf " + dbuf.str());
  expectType(sig, sig.results[0], tokensOf(dbuf.dtype, s), "dx");
  return s;
}

MoeDims checkMoeCombine(const KernelSignature &sig) {
  MoeDims s = combineDims(sig, 0);
  expectType(sig, sig.results[0], tokensOf(sig.args[0].dtype, s), "y");
  return s;
}

MoeDims checkMoeCombineGrad(const KernelSignature &sig) {
  MoeDims s = combineDims(sig, 1);
  const TensorType &buf = sig.args[1];
  expectType(sig, sig.args[0], tokensOf(buf.dtype, s), "dy");
  expectType(sig, sig.results[0], buf, "dbuf");
  expectType(sig, sig.results[1], sig.args[2], "dgates");
  return s;
}

} // namespace autoshard::runtime::checks
