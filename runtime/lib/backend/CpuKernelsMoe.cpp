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
  const TensorType &logits = sig.args[0], &ids = sig.results[1];
  MoeDims d = checkMoeRouter(sig);
  MoeShape s = moeShape(d);
  bool renorm = d.renormalize;
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
  MoeDims d = checkMoeRouterGrad(sig);
  MoeShape s = moeShape(d);
  bool renorm = d.renormalize;
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
  MoeShape s = moeShape(checkMoeAuxLoss(sig));
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
  const TensorType &logits = sig.args[1], &ids = sig.args[2];
  MoeShape s = moeShape(checkMoeAuxLossGrad(sig));
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
  MoeShape s = moeShape(checkMoeDispatch(sig));
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
  MoeShape s = moeShape(checkMoeDispatchGrad(sig));
  return withTypes(sig, dbuf.dtype, ids.dtype, [=](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    return BoundKernel([=](void *const *p) {
      moeDispatchGrad<T, I>(in<T>(p[0]), in<I>(p[1]), out<T>(p[2]), s);
    });
  });
}

BoundKernel bindCombine(const KernelSignature &sig) {
  MoeShape s = moeShape(checkMoeCombine(sig));
  const TensorType &buf = sig.args[0];
  return withTypes(sig, buf.dtype, sig.args[2].dtype, [=](auto t, auto i) {
    using T = decltype(t);
    using I = decltype(i);
    return BoundKernel([=](void *const *p) {
      moeCombine<T, I>(in<T>(p[0]), in<T>(p[1]), in<I>(p[2]), out<T>(p[3]), s);
    });
  });
}

BoundKernel bindCombineGrad(const KernelSignature &sig) {
  MoeShape s = moeShape(checkMoeCombineGrad(sig));
  const TensorType &buf = sig.args[1];
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
