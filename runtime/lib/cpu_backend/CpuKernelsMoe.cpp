//===- CpuKernelsMoe.cpp - Mixture-of-experts binders ---------------------===//

#include "autoshard/runtime/cpu/Kernels.h"

#include "CpuKernels.h"

namespace autoshard::runtime::cpu_kernels {

using namespace autoshard::runtime::cpu;

template <> BoundKernel bind<ops::MoeRouter>(const KernelSignature &sig) {
  using Op = ops::MoeRouter;
  MoeDims d = checkMoeRouter(sig);
  MoeShape s = moeShape(d);
  bool renorm = d.renormalize;
  return bindMoe<Op>(sig, withFloat, Op::logits,
                     [=](auto t, auto i, Operands o) {
                       moeRouter(o.in(Op::logits, t), o.out(Op::gates, t),
                                 o.out(Op::expert_ids, i), s, renorm);
                     });
}

template <> BoundKernel bind<ops::MoeRouterGrad>(const KernelSignature &sig) {
  using Op = ops::MoeRouterGrad;
  MoeDims d = checkMoeRouterGrad(sig);
  MoeShape s = moeShape(d);
  bool renorm = d.renormalize;
  return bindMoe<Op>(sig, withFloat, Op::logits,
                     [=](auto t, auto i, Operands o) {
                       moeRouterGrad(o.in(Op::dgates, t), o.in(Op::logits, t),
                                     o.in(Op::expert_ids, i),
                                     o.out(Op::dlogits, t), s, renorm);
                     });
}

template <> BoundKernel bind<ops::MoeAuxLoss>(const KernelSignature &sig) {
  using Op = ops::MoeAuxLoss;
  MoeShape s = moeShape(checkMoeAuxLoss(sig));
  return bindMoe<Op>(
      sig, withFloat, Op::logits, [=](auto t, auto i, Operands o) {
        *o.out<float>(Op::loss) = static_cast<float>(
            moeAuxLoss(o.in(Op::logits, t), o.in(Op::expert_ids, i), s));
      });
}

template <> BoundKernel bind<ops::MoeAuxLossGrad>(const KernelSignature &sig) {
  using Op = ops::MoeAuxLossGrad;
  MoeShape s = moeShape(checkMoeAuxLossGrad(sig));
  return bindMoe<Op>(
      sig, withFloat, Op::logits, [=](auto t, auto i, Operands o) {
        moeAuxLossGrad(*o.in<float>(Op::dloss), o.in(Op::logits, t),
                       o.in(Op::expert_ids, i), o.out(Op::dlogits, t), s);
      });
}

template <> BoundKernel bind<ops::MoeDispatch>(const KernelSignature &sig) {
  using Op = ops::MoeDispatch;
  MoeShape s = moeShape(checkMoeDispatch(sig));
  return bindMoe<Op>(sig, withFloat, Op::x, [=](auto t, auto i, Operands o) {
    moeDispatch(o.in(Op::x, t), o.in(Op::expert_ids, i), o.out(Op::buf, t), s);
  });
}

template <> BoundKernel bind<ops::MoeDispatchGrad>(const KernelSignature &sig) {
  using Op = ops::MoeDispatchGrad;
  MoeShape s = moeShape(checkMoeDispatchGrad(sig));
  return bindMoe<Op>(sig, withFloat, Op::dbuf, [=](auto t, auto i, Operands o) {
    moeDispatchGrad(o.in(Op::dbuf, t), o.in(Op::expert_ids, i),
                    o.out(Op::dx, t), s);
  });
}

template <> BoundKernel bind<ops::MoeCombine>(const KernelSignature &sig) {
  using Op = ops::MoeCombine;
  MoeShape s = moeShape(checkMoeCombine(sig));
  return bindMoe<Op>(sig, withFloat, Op::buf, [=](auto t, auto i, Operands o) {
    moeCombine(o.in(Op::buf, t), o.in(Op::gates, t), o.in(Op::expert_ids, i),
               o.out(Op::y, t), s);
  });
}

template <> BoundKernel bind<ops::MoeCombineGrad>(const KernelSignature &sig) {
  using Op = ops::MoeCombineGrad;
  MoeShape s = moeShape(checkMoeCombineGrad(sig));
  return bindMoe<Op>(sig, withFloat, Op::buf, [=](auto t, auto i, Operands o) {
    moeCombineGrad(o.in(Op::dy, t), o.in(Op::buf, t), o.in(Op::gates, t),
                   o.in(Op::expert_ids, i), o.out(Op::dbuf, t),
                   o.out(Op::dgates, t), s);
  });
}

void registerMoeKernels(KernelTable &t) {
  addBinders<ops::MoeRouter, ops::MoeRouterGrad, ops::MoeAuxLoss,
             ops::MoeAuxLossGrad, ops::MoeDispatch, ops::MoeDispatchGrad,
             ops::MoeCombine, ops::MoeCombineGrad>(t);
}

} // namespace autoshard::runtime::cpu_kernels
