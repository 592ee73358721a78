//===- CpuKernelsDense.cpp - Elementwise, GEMM, norm, optimizer binders ---===//

#include "autoshard/runtime/cpu/Kernels.h"

#include "CpuKernels.h"

#include <cstring>

namespace autoshard::runtime::cpu_kernels {

using namespace autoshard::runtime::cpu;

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

template <> BoundKernel bind<ops::Gelu>(const KernelSignature &sig) {
  using Op = ops::Gelu;
  int64_t n = expectAllLikeArg0(sig);
  bool approx = sig.attrs->getFlag("tanh_approx");
  return withFloat.bind(sig, Op::x, [=](auto t, Operands o) {
    gelu(o.in(Op::x, t), o.out(Op::y, t), n, approx);
  });
}

template <> BoundKernel bind<ops::GeluGrad>(const KernelSignature &sig) {
  using Op = ops::GeluGrad;
  int64_t n = expectAllLikeArg0(sig);
  bool approx = sig.attrs->getFlag("tanh_approx");
  return withFloat.bind(sig, Op::dy, [=](auto t, Operands o) {
    geluGrad(o.in(Op::dy, t), o.in(Op::x, t), o.out(Op::dx, t), n, approx);
  });
}

template <> BoundKernel bind<ops::Silu>(const KernelSignature &sig) {
  using Op = ops::Silu;
  int64_t n = expectAllLikeArg0(sig);
  return withFloat.bind(sig, Op::x, [=](auto t, Operands o) {
    silu(o.in(Op::x, t), o.out(Op::y, t), n);
  });
}

template <> BoundKernel bind<ops::SiluGrad>(const KernelSignature &sig) {
  using Op = ops::SiluGrad;
  int64_t n = expectAllLikeArg0(sig);
  return withFloat.bind(sig, Op::dy, [=](auto t, Operands o) {
    siluGrad(o.in(Op::dy, t), o.in(Op::x, t), o.out(Op::dx, t), n);
  });
}

template <> BoundKernel bind<ops::Swiglu>(const KernelSignature &sig) {
  using Op = ops::Swiglu;
  int64_t n = expectAllLikeArg0(sig);
  return withFloat.bind(sig, Op::gate, [=](auto t, Operands o) {
    swiglu(o.in(Op::gate, t), o.in(Op::up, t), o.out(Op::y, t), n);
  });
}

template <> BoundKernel bind<ops::SwigluGrad>(const KernelSignature &sig) {
  using Op = ops::SwigluGrad;
  int64_t n = expectAllLikeArg0(sig);
  return withFloat.bind(sig, Op::dy, [=](auto t, Operands o) {
    swigluGrad(o.in(Op::dy, t), o.in(Op::gate, t), o.in(Op::up, t),
               o.out(Op::dgate, t), o.out(Op::dup, t), n);
  });
}

//===----------------------------------------------------------------------===//
// Elementwise and shape
//===----------------------------------------------------------------------===//

namespace {

/// add/sub/mul (`Op`): rhs's shape is a suffix of lhs's; out is like lhs.
/// `kernel` is the cpu kernel, called (lhs, rhs, out, numel, rhsNumel).
template <typename Op, typename Kernel>
BoundKernel bindBinary(const KernelSignature &sig, Kernel kernel) {
  BinaryShape s = checkBinary(sig);
  int64_t n = s.numel, m = s.rhsNumel;
  return withFloat.bind(sig, Op::lhs, [=](auto t, Operands o) {
    kernel(o.in(Op::lhs, t), o.in(Op::rhs, t), o.out(Op::result, t), n, m);
  });
}

} // namespace

template <> BoundKernel bind<ops::Add>(const KernelSignature &sig) {
  return bindBinary<ops::Add>(sig, [](auto... a) { add(a...); });
}

template <> BoundKernel bind<ops::Sub>(const KernelSignature &sig) {
  return bindBinary<ops::Sub>(sig, [](auto... a) { sub(a...); });
}

template <> BoundKernel bind<ops::Mul>(const KernelSignature &sig) {
  return bindBinary<ops::Mul>(sig, [](auto... a) { mul(a...); });
}

template <> BoundKernel bind<ops::Scale>(const KernelSignature &sig) {
  using Op = ops::Scale;
  ScaleShape s = checkScale(sig);
  int64_t n = s.numel;
  double factor = s.factor;
  return withFloat.bind(sig, Op::x, [=](auto t, Operands o) {
    scale(o.in(Op::x, t), o.out(Op::result, t), n, factor);
  });
}

namespace {

/// reduce_sum / broadcast (`Op`): kernel(x, result, shape, dims) with the
/// shape and element type of `full`, the larger side (reduce_sum's x,
/// broadcast's result), and the checked attribute `dims`.
template <typename Op, typename Slot, typename Kernel>
BoundKernel bindOverDims(const KernelSignature &sig, std::vector<int64_t> dims,
                         Slot full, Kernel kernel) {
  std::vector<int64_t> shape = sig.type(full).shape;
  return withFloat.bind(sig, full, [=](auto t, Operands o) {
    kernel(o.in(Op::x, t), o.out(Op::result, t), shape, dims);
  });
}

} // namespace

template <> BoundKernel bind<ops::ReduceSum>(const KernelSignature &sig) {
  using Op = ops::ReduceSum;
  return bindOverDims<Op>(sig, checkReduceSum(sig), Op::x,
                          [](auto... a) { reduceSum(a...); });
}

template <> BoundKernel bind<ops::Broadcast>(const KernelSignature &sig) {
  using Op = ops::Broadcast;
  return bindOverDims<Op>(sig, checkBroadcast(sig), Op::result,
                          [](auto... a) { broadcast(a...); });
}

template <> BoundKernel bind<ops::Reshape>(const KernelSignature &sig) {
  using Op = ops::Reshape;
  int64_t bytes = checkReshape(sig);
  return bindOperands(sig, [=](Operands o) {
    if (o[Op::x] != o[Op::y])
      std::memmove(o[Op::y], o[Op::x], bytes);
  });
}

/// Rows `index, index + count, ...` of the ids `x` (tfm.microbatch): a
/// strided row copy, whatever the element type.
template <> BoundKernel bind<ops::Microbatch>(const KernelSignature &sig) {
  using Op = ops::Microbatch;
  MicrobatchShape s = checkMicrobatch(sig);
  int64_t index = s.index, count = s.count, rows = s.rows,
          rowBytes = s.rowBytes;
  return bindOperands(sig, [=](Operands o) {
    const char *src = o.in<char>(Op::x);
    char *dst = o.out<char>(Op::result);
    for (int64_t q = 0; q < rows; ++q)
      std::memcpy(dst + q * rowBytes, src + (q * count + index) * rowBytes,
                  rowBytes);
  });
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

template <> BoundKernel bind<ops::Matmul>(const KernelSignature &sig) {
  using Op = ops::Matmul;
  MatmulDims d = checkMatmul(sig);
  MatmulShape s = matmulShape(d);
  const bool approx = d.tanhApprox, keep = d.keepsPreActivation;
  switch (d.epilogue) {
  case MatmulEpilogue::None:
    return withFloat.bind(sig, Op::lhs, [=](auto t, Operands o) {
      matmul(o.in(Op::lhs, t), o.in(Op::rhs, t), o.out(Op::result, t), s);
    });
  case MatmulEpilogue::Gelu:
    return withFloat.bind(sig, Op::lhs, [=](auto t, Operands o) {
      matmulGelu(o.in(Op::lhs, t), o.in(Op::rhs, t),
                 keep ? o.out(Op::preact, t) : nullptr, o.out(Op::result, t), s,
                 approx);
    });
  case MatmulEpilogue::GeluGrad:
    return withFloat.bind(sig, Op::lhs, [=](auto t, Operands o) {
      matmulGeluGrad(o.in(Op::lhs, t), o.in(Op::rhs, t), o.in(Op::addend, t),
                     o.out(Op::result, t), s, approx);
    });
  case MatmulEpilogue::Add:
  case MatmulEpilogue::Bias:
    break;
  }
  MatmulAddend kind = d.epilogue == MatmulEpilogue::Bias ? MatmulAddend::Bias
                                                         : MatmulAddend::Full;
  return withFloat.bind(sig, Op::lhs, [=](auto t, Operands o) {
    matmulAdd(o.in(Op::lhs, t), o.in(Op::rhs, t), o.in(Op::addend, t),
              o.out(Op::result, t), s, kind);
  });
}

template <> BoundKernel bind<ops::MatmulWgrad>(const KernelSignature &sig) {
  using Op = ops::MatmulWgrad;
  MatmulWgradDims d = checkMatmulWgrad(sig);
  int64_t rows = d.rows, k = d.k, n = d.n;
  return withFloat.bind(sig, Op::x, [=](auto t, Operands o) {
    matmulWgrad(o.in(Op::x, t), o.in(Op::dy, t), o.out(Op::dw, t), rows, k, n);
  });
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

template <> BoundKernel bind<ops::LayerNorm>(const KernelSignature &sig) {
  using Op = ops::LayerNorm;
  NormShape d = checkNorm(sig);
  bool hasBeta = static_cast<int>(sig.args.size()) > Op::beta.index;
  return withFloat.bind(sig, Op::x, [=](auto t, Operands o) {
    layerNorm(o.in(Op::x, t), o.in(Op::gamma, t),
              hasBeta ? o.in(Op::beta, t) : nullptr, o.out(Op::y, t), d.rows,
              d.hidden, d.epsilon);
  });
}

template <> BoundKernel bind<ops::LayerNormGrad>(const KernelSignature &sig) {
  using Op = ops::LayerNormGrad;
  NormShape d = checkNormGrad(sig, /*withBeta=*/true);
  return withFloat.bind(sig, Op::dy, [=](auto t, Operands o) {
    layerNormGrad(o.in(Op::dy, t), o.in(Op::x, t), o.in(Op::gamma, t),
                  o.out(Op::dx, t), o.out(Op::dgamma, t), o.out(Op::dbeta, t),
                  d.rows, d.hidden, d.epsilon);
  });
}

template <> BoundKernel bind<ops::RmsNorm>(const KernelSignature &sig) {
  using Op = ops::RmsNorm;
  NormShape d = checkNorm(sig);
  return withFloat.bind(sig, Op::x, [=](auto t, Operands o) {
    rmsNorm(o.in(Op::x, t), o.in(Op::gamma, t), o.out(Op::y, t), d.rows,
            d.hidden, d.epsilon);
  });
}

template <> BoundKernel bind<ops::RmsNormGrad>(const KernelSignature &sig) {
  using Op = ops::RmsNormGrad;
  NormShape d = checkNormGrad(sig, /*withBeta=*/false);
  return withFloat.bind(sig, Op::dy, [=](auto t, Operands o) {
    rmsNormGrad(o.in(Op::dy, t), o.in(Op::x, t), o.in(Op::gamma, t),
                o.out(Op::dx, t), o.out(Op::dgamma, t), d.rows, d.hidden,
                d.epsilon);
  });
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

template <> BoundKernel bind<ops::SumSquares>(const KernelSignature &sig) {
  using Op = ops::SumSquares;
  std::vector<SumSquaresTerm> terms = checkSumSquares(sig, DType::F64, "cpu");
  return bindOperands(sig, [=](Operands o) {
    double sum = 0.0;
    for (size_t i = 0; i < terms.size(); ++i) {
      void *x = o.at(Op::inputs, static_cast<int>(i));
      sum += terms[i].dtype == DType::F64
                 ? sumSquares(static_cast<const double *>(x), terms[i].numel)
                 : sumSquares(static_cast<const float *>(x), terms[i].numel);
    }
    *o.out<float>(Op::result) = static_cast<float>(sum);
  });
}

template <> BoundKernel bind<ops::ClipCoef>(const KernelSignature &sig) {
  using Op = ops::ClipCoef;
  double maxNorm = checkClipCoef(sig);
  return bindOperands(sig, [=](Operands o) {
    ClipCoef c = clipCoef(*o.in<float>(Op::sumsq), maxNorm);
    *o.out<float>(Op::coef) = static_cast<float>(c.coef);
    *o.out<float>(Op::norm) = static_cast<float>(c.norm);
  });
}

template <> BoundKernel bind<ops::Adamw>(const KernelSignature &sig) {
  using Op = ops::Adamw;
  AdamwShape d = checkAdamw(sig);
  int64_t n = d.numel;
  AdamWParams base;
  base.beta1 = d.beta1;
  base.beta2 = d.beta2;
  base.epsilon = d.epsilon;
  base.weightDecay = d.weightDecay;
  return withFloat.bind(sig, Op::param, [=](auto t, Operands o) {
    AdamWParams params = base;
    params.lr = *o.in<float>(Op::lr);
    params.step = *o.in<int64_t>(Op::step);
    params.gradScale = *o.in<float>(Op::grad_scale);
    adamw(o.in(Op::param, t), o.in(Op::grad, t), o.in(Op::m, t), o.in(Op::v, t),
          o.out(Op::new_param, t), o.out(Op::new_m, t), o.out(Op::new_v, t), n,
          params);
  });
}

void registerDenseKernels(KernelTable &t) {
  addBinders<ops::Gelu, ops::GeluGrad, ops::Silu, ops::SiluGrad, ops::Swiglu,
             ops::SwigluGrad, ops::Add, ops::Sub, ops::Mul, ops::Scale,
             ops::ReduceSum, ops::Broadcast, ops::Reshape, ops::Microbatch,
             ops::Matmul, ops::MatmulWgrad, ops::LayerNorm, ops::LayerNormGrad,
             ops::RmsNorm, ops::RmsNormGrad, ops::SumSquares, ops::ClipCoef,
             ops::Adamw>(t);
}

} // namespace autoshard::runtime::cpu_kernels
