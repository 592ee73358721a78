//===- CpuKernelsMoe.cpp - Mixture-of-experts binders ---------------------===//

#include "autoshard/runtime/cpu/Kernels.h"

#include "CpuKernels.h"

namespace autoshard::runtime::cpu_kernels {

using namespace autoshard::runtime::cpu;

namespace {

/// Batch, seq and top-k from ids [B, S, K].
MoeShape fromIds(const KernelSignature &sig, const TensorType &ids) {
  expectExactRank(sig, ids, 3, "expert_ids");
  MoeShape s;
  s.batch = ids.shape[0];
  s.seq = ids.shape[1];
  s.topK = ids.shape[2];
  return s;
}

/// Checks logits [B, S, E] against ids [B, S, K]; sets numExperts.
void withLogits(const KernelSignature &sig, const TensorType &logits,
                MoeShape &s) {
  expectExactRank(sig, logits, 3, "logits");
  s.numExperts = logits.shape[2];
  expectType(sig, logits, typeOf(logits.dtype, {s.batch, s.seq, s.numExperts}),
             "logits");
  if (s.topK < 1 || s.topK > s.numExperts)
    sig.fail("top-k " + std::to_string(s.topK) + " must be in [1, " +
             std::to_string(s.numExperts) + "]");
}

/// Checks an expert buffer [E, B, C, H]; sets numExperts, capacity, hidden.
void withBuffer(const KernelSignature &sig, const TensorType &buf,
                MoeShape &s) {
  expectExactRank(sig, buf, 4, "buf");
  s.numExperts = buf.shape[0];
  s.capacity = buf.shape[2];
  s.hidden = buf.shape[3];
  if (buf.shape[1] != s.batch || s.topK > s.numExperts)
    sig.fail("expert buffer " + buf.str() + " does not fit batch " +
             std::to_string(s.batch) + " and top-k " + std::to_string(s.topK));
}

/// Calls fn(T{}, I{}) for float type `t` and id type `ids`.
template <typename Fn>
BoundKernel withTypes(const KernelSignature &sig, DType t, DType ids, Fn &&fn) {
  return withFloat(sig, t, "float operands", [&](auto tt) -> BoundKernel {
    return withId(sig, ids, "expert_ids",
                  [&](auto it) -> BoundKernel { return fn(tt, it); });
  });
}

BoundKernel bindRouter(const KernelSignature &sig) {
  const TensorType &logits = sig.args[0], &ids = sig.results[1];
  MoeShape s = fromIds(sig, ids);
  withLogits(sig, logits, s);
  expectType(sig, sig.results[0], typeOf(logits.dtype, ids.shape), "gates");
  if (sig.attrs->getI64("top_k") != s.topK)
    sig.fail("attribute 'top_k' " + std::to_string(sig.attrs->getI64("top_k")) +
             " differs from expert_ids " + ids.str());
  bool renorm = sig.attrs->getFlag("renormalize");
  return withTypes(sig, logits.dtype, ids.dtype, [=](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    return BoundKernel([=](void *const *p) {
      moeRouter<T, I>(in<T>(p[0]), out<T>(p[1]), out<I>(p[2]), s, renorm);
    });
  });
}

BoundKernel bindRouterGrad(const KernelSignature &sig) {
  const TensorType &logits = sig.args[1], &ids = sig.args[2];
  MoeShape s = fromIds(sig, ids);
  withLogits(sig, logits, s);
  expectType(sig, sig.args[0], typeOf(logits.dtype, ids.shape), "dgates");
  expectType(sig, sig.results[0], logits, "dlogits");
  bool renorm = sig.attrs->getFlag("renormalize");
  return withTypes(sig, logits.dtype, ids.dtype, [=](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    return BoundKernel([=](void *const *p) {
      moeRouterGrad<T, I>(in<T>(p[0]), in<T>(p[1]), in<I>(p[2]), out<T>(p[3]),
                          s, renorm);
    });
  });
}

BoundKernel bindAuxLoss(const KernelSignature &sig) {
  const TensorType &logits = sig.args[0], &ids = sig.args[1];
  MoeShape s = fromIds(sig, ids);
  withLogits(sig, logits, s);
  expectScalar(sig, sig.results[0], DType::F32, "loss");
  return withTypes(sig, logits.dtype, ids.dtype, [=](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    return BoundKernel([=](void *const *p) {
      *out<float>(p[2]) =
          static_cast<float>(moeAuxLoss<T, I>(in<T>(p[0]), in<I>(p[1]), s));
    });
  });
}

BoundKernel bindAuxLossGrad(const KernelSignature &sig) {
  expectScalar(sig, sig.args[0], DType::F32, "dloss");
  const TensorType &logits = sig.args[1], &ids = sig.args[2];
  MoeShape s = fromIds(sig, ids);
  withLogits(sig, logits, s);
  expectType(sig, sig.results[0], logits, "dlogits");
  return withTypes(sig, logits.dtype, ids.dtype, [=](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    return BoundKernel([=](void *const *p) {
      moeAuxLossGrad<T, I>(*in<float>(p[0]), in<T>(p[1]), in<I>(p[2]),
                           out<T>(p[3]), s);
    });
  });
}

BoundKernel bindDispatch(const KernelSignature &sig) {
  const TensorType &x = sig.args[0], &ids = sig.args[1];
  MoeShape s = fromIds(sig, ids);
  expectExactRank(sig, x, 3, "x");
  s.hidden = x.shape[2];
  expectType(sig, x, typeOf(x.dtype, {s.batch, s.seq, s.hidden}), "x");
  int64_t experts = sig.attrs->getI64("num_experts");
  int64_t capacity = sig.attrs->getI64("capacity");
  expectType(sig, sig.results[0],
             typeOf(x.dtype, {experts, s.batch, capacity, s.hidden}), "buf");
  withBuffer(sig, sig.results[0], s);
  return withTypes(sig, x.dtype, ids.dtype, [=](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    return BoundKernel([=](void *const *p) {
      moeDispatch<T, I>(in<T>(p[0]), in<I>(p[1]), out<T>(p[2]), s);
    });
  });
}

BoundKernel bindDispatchGrad(const KernelSignature &sig) {
  const TensorType &dbuf = sig.args[0], &ids = sig.args[1];
  MoeShape s = fromIds(sig, ids);
  withBuffer(sig, dbuf, s);
  if (sig.attrs->getI64("capacity") != s.capacity)
    sig.fail("attribute 'capacity' differs from dbuf " + dbuf.str());
  expectType(sig, sig.results[0],
             typeOf(dbuf.dtype, {s.batch, s.seq, s.hidden}), "dx");
  return withTypes(sig, dbuf.dtype, ids.dtype, [=](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    return BoundKernel([=](void *const *p) {
      moeDispatchGrad<T, I>(in<T>(p[0]), in<I>(p[1]), out<T>(p[2]), s);
    });
  });
}

/// Checks buf (operand `first`), gates and ids of combine(_grad).
MoeShape combineShape(const KernelSignature &sig, size_t first) {
  const TensorType &buf = sig.args[first], &ids = sig.args[first + 2];
  MoeShape s = fromIds(sig, ids);
  withBuffer(sig, buf, s);
  expectType(sig, sig.args[first + 1], typeOf(buf.dtype, ids.shape), "gates");
  return s;
}

BoundKernel bindCombine(const KernelSignature &sig) {
  MoeShape s = combineShape(sig, 0);
  const TensorType &buf = sig.args[0];
  expectType(sig, sig.results[0], typeOf(buf.dtype, {s.batch, s.seq, s.hidden}),
             "y");
  return withTypes(sig, buf.dtype, sig.args[2].dtype, [=](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    return BoundKernel([=](void *const *p) {
      moeCombine<T, I>(in<T>(p[0]), in<T>(p[1]), in<I>(p[2]), out<T>(p[3]), s);
    });
  });
}

BoundKernel bindCombineGrad(const KernelSignature &sig) {
  MoeShape s = combineShape(sig, 1);
  const TensorType &buf = sig.args[1];
  expectType(sig, sig.args[0], typeOf(buf.dtype, {s.batch, s.seq, s.hidden}),
             "dy");
  expectType(sig, sig.results[0], buf, "dbuf");
  expectType(sig, sig.results[1], sig.args[2], "dgates");
  return withTypes(sig, buf.dtype, sig.args[3].dtype, [=](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    return BoundKernel([=](void *const *p) {
      moeCombineGrad<T, I>(in<T>(p[0]), in<T>(p[1]), in<T>(p[2]), in<I>(p[3]),
                           out<T>(p[4]), out<T>(p[5]), s);
    });
  });
}

} // namespace

void registerMoeKernels(KernelTable &t) {
  t.add("moe_router", bindRouter);
  t.add("moe_router_grad", bindRouterGrad);
  t.add("moe_aux_loss", bindAuxLoss);
  t.add("moe_aux_loss_grad", bindAuxLossGrad);
  t.add("moe_dispatch", bindDispatch);
  t.add("moe_dispatch_grad", bindDispatchGrad);
  t.add("moe_combine", bindCombine);
  t.add("moe_combine_grad", bindCombineGrad);
}

} // namespace autoshard::runtime::cpu_kernels
