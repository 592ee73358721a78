//===- CpuKernelsMoe.cpp - Mixture-of-experts binders ---------------------===//

#include "autoshard/runtime/cpu/Kernels.h"

#include "CpuKernels.h"

#include <utility>

namespace autoshard::runtime::cpu_kernels {

using namespace autoshard::runtime::cpu;

namespace {

/// Calls fn(T{}, I{}) for float type `t` and id type `ids`.
template <typename Fn>
BoundKernel withTypes(const KernelSignature &sig, DType t, DType ids, Fn &&fn) {
  return withMoeTypes(sig, withFloat, t, ids, std::forward<Fn>(fn));
}

BoundKernel bindRouter(const KernelSignature &sig) {
  using Op = ops::MoeRouter;
  OperandIndex at(sig);
  const TensorType &logits = sig.arg(Op::logits),
                   &ids = sig.result(Op::expert_ids);
  MoeDims d = checkMoeRouter(sig);
  MoeShape s = moeShape(d);
  bool renorm = d.renormalize;
  return withTypes(sig, logits.dtype, ids.dtype, [=](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    return BoundKernel([=](void *const *p) {
      moeRouter<T, I>(in<T>(p[at(Op::logits)]), out<T>(p[at(Op::gates)]),
                      out<I>(p[at(Op::expert_ids)]), s, renorm);
    });
  });
}

BoundKernel bindRouterGrad(const KernelSignature &sig) {
  using Op = ops::MoeRouterGrad;
  OperandIndex at(sig);
  const TensorType &logits = sig.arg(Op::logits),
                   &ids = sig.arg(Op::expert_ids);
  MoeDims d = checkMoeRouterGrad(sig);
  MoeShape s = moeShape(d);
  bool renorm = d.renormalize;
  return withTypes(sig, logits.dtype, ids.dtype, [=](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    return BoundKernel([=](void *const *p) {
      moeRouterGrad<T, I>(in<T>(p[at(Op::dgates)]), in<T>(p[at(Op::logits)]),
                          in<I>(p[at(Op::expert_ids)]),
                          out<T>(p[at(Op::dlogits)]), s, renorm);
    });
  });
}

BoundKernel bindAuxLoss(const KernelSignature &sig) {
  using Op = ops::MoeAuxLoss;
  OperandIndex at(sig);
  const TensorType &logits = sig.arg(Op::logits),
                   &ids = sig.arg(Op::expert_ids);
  MoeShape s = moeShape(checkMoeAuxLoss(sig));
  return withTypes(sig, logits.dtype, ids.dtype, [=](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    return BoundKernel([=](void *const *p) {
      *out<float>(p[at(Op::loss)]) = static_cast<float>(moeAuxLoss<T, I>(
          in<T>(p[at(Op::logits)]), in<I>(p[at(Op::expert_ids)]), s));
    });
  });
}

BoundKernel bindAuxLossGrad(const KernelSignature &sig) {
  using Op = ops::MoeAuxLossGrad;
  OperandIndex at(sig);
  const TensorType &logits = sig.arg(Op::logits),
                   &ids = sig.arg(Op::expert_ids);
  MoeShape s = moeShape(checkMoeAuxLossGrad(sig));
  return withTypes(sig, logits.dtype, ids.dtype, [=](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    return BoundKernel([=](void *const *p) {
      moeAuxLossGrad<T, I>(
          *in<float>(p[at(Op::dloss)]), in<T>(p[at(Op::logits)]),
          in<I>(p[at(Op::expert_ids)]), out<T>(p[at(Op::dlogits)]), s);
    });
  });
}

BoundKernel bindDispatch(const KernelSignature &sig) {
  using Op = ops::MoeDispatch;
  OperandIndex at(sig);
  const TensorType &x = sig.arg(Op::x), &ids = sig.arg(Op::expert_ids);
  MoeShape s = moeShape(checkMoeDispatch(sig));
  return withTypes(sig, x.dtype, ids.dtype, [=](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    return BoundKernel([=](void *const *p) {
      moeDispatch<T, I>(in<T>(p[at(Op::x)]), in<I>(p[at(Op::expert_ids)]),
                        out<T>(p[at(Op::buf)]), s);
    });
  });
}

BoundKernel bindDispatchGrad(const KernelSignature &sig) {
  using Op = ops::MoeDispatchGrad;
  OperandIndex at(sig);
  const TensorType &dbuf = sig.arg(Op::dbuf), &ids = sig.arg(Op::expert_ids);
  MoeShape s = moeShape(checkMoeDispatchGrad(sig));
  return withTypes(sig, dbuf.dtype, ids.dtype, [=](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    return BoundKernel([=](void *const *p) {
      moeDispatchGrad<T, I>(in<T>(p[at(Op::dbuf)]),
                            in<I>(p[at(Op::expert_ids)]), out<T>(p[at(Op::dx)]),
                            s);
    });
  });
}

BoundKernel bindCombine(const KernelSignature &sig) {
  using Op = ops::MoeCombine;
  OperandIndex at(sig);
  MoeShape s = moeShape(checkMoeCombine(sig));
  const TensorType &buf = sig.arg(Op::buf);
  return withTypes(
      sig, buf.dtype, sig.arg(Op::expert_ids).dtype, [=](auto t, auto i) {
        using T = decltype(t);
        using I = decltype(i);
        return BoundKernel([=](void *const *p) {
          moeCombine<T, I>(in<T>(p[at(Op::buf)]), in<T>(p[at(Op::gates)]),
                           in<I>(p[at(Op::expert_ids)]), out<T>(p[at(Op::y)]),
                           s);
        });
      });
}

BoundKernel bindCombineGrad(const KernelSignature &sig) {
  using Op = ops::MoeCombineGrad;
  OperandIndex at(sig);
  MoeShape s = moeShape(checkMoeCombineGrad(sig));
  const TensorType &buf = sig.arg(Op::buf);
  return withTypes(
      sig, buf.dtype, sig.arg(Op::expert_ids).dtype, [=](auto t, auto i) {
        using T = decltype(t);
        using I = decltype(i);
        return BoundKernel([=](void *const *p) {
          moeCombineGrad<T, I>(
              in<T>(p[at(Op::dy)]), in<T>(p[at(Op::buf)]),
              in<T>(p[at(Op::gates)]), in<I>(p[at(Op::expert_ids)]),
              out<T>(p[at(Op::dbuf)]), out<T>(p[at(Op::dgates)]), s);
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
