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

namespace {

//===----------------------------------------------------------------------===//
// Elementwise and shape
//===----------------------------------------------------------------------===//

/// The kernels of add, sub and mul, as types.
struct AddOp {
  template <typename T>
  static void apply(const T *a, const T *b, T *o, int64_t n, int64_t m) {
    add<T>(a, b, o, n, m);
  }
};
struct SubOp {
  template <typename T>
  static void apply(const T *a, const T *b, T *o, int64_t n, int64_t m) {
    sub<T>(a, b, o, n, m);
  }
};
struct MulOp {
  template <typename T>
  static void apply(const T *a, const T *b, T *o, int64_t n, int64_t m) {
    mul<T>(a, b, o, n, m);
  }
};

/// add/sub/mul: rhs's shape is a suffix of lhs's; out is like lhs.
template <typename Op> BoundKernel bindBinary(const KernelSignature &sig) {
  BinaryShape s = checkBinary(sig);
  int64_t n = s.numel, m = s.rhsNumel;
  return withFloat(sig, sig.args[0].dtype, "lhs", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      Op::template apply<T>(in<T>(p[0]), in<T>(p[1]), out<T>(p[2]), n, m);
    };
  });
}

BoundKernel bindScale(const KernelSignature &sig) {
  using Op = ops::Scale;
  OperandIndex at(sig);
  ScaleShape s = checkScale(sig);
  int64_t n = s.numel;
  double factor = s.factor;
  return withFloat(
      sig, sig.arg(Op::x).dtype, "x", [=](auto tag) -> BoundKernel {
        using T = decltype(tag);
        return [=](void *const *p) {
          scale<T>(in<T>(p[at(Op::x)]), out<T>(p[at(Op::result)]), n, factor);
        };
      });
}

BoundKernel bindReduceSum(const KernelSignature &sig) {
  using Op = ops::ReduceSum;
  OperandIndex at(sig);
  const TensorType &x = sig.arg(Op::x);
  std::vector<int64_t> dims = checkReduceSum(sig);
  std::vector<int64_t> shape = x.shape;
  return withFloat(sig, x.dtype, "x", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      reduceSum<T>(in<T>(p[at(Op::x)]), out<T>(p[at(Op::result)]), shape, dims);
    };
  });
}

BoundKernel bindBroadcast(const KernelSignature &sig) {
  using Op = ops::Broadcast;
  OperandIndex at(sig);
  const TensorType &y = sig.result(Op::result);
  std::vector<int64_t> dims = checkBroadcast(sig);
  std::vector<int64_t> shape = y.shape;
  return withFloat(sig, y.dtype, "result", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      broadcast<T>(in<T>(p[at(Op::x)]), out<T>(p[at(Op::result)]), shape, dims);
    };
  });
}

BoundKernel bindReshape(const KernelSignature &sig) {
  using Op = ops::Reshape;
  OperandIndex at(sig);
  int64_t bytes = checkReshape(sig);
  return [=](void *const *p) {
    if (p[at(Op::x)] != p[at(Op::y)])
      std::memmove(p[at(Op::y)], p[at(Op::x)], bytes);
  };
}

/// Rows `index, index + count, ...` of the ids `x` (tfm.microbatch): a
/// strided row copy, whatever the element type.
BoundKernel bindMicrobatch(const KernelSignature &sig) {
  using Op = ops::Microbatch;
  OperandIndex at(sig);
  MicrobatchShape s = checkMicrobatch(sig);
  int64_t index = s.index, count = s.count, rows = s.rows,
          rowBytes = s.rowBytes;
  return [=](void *const *p) {
    const char *src = static_cast<const char *>(p[at(Op::x)]);
    char *dst = static_cast<char *>(p[at(Op::result)]);
    for (int64_t q = 0; q < rows; ++q)
      std::memcpy(dst + q * rowBytes, src + (q * count + index) * rowBytes,
                  rowBytes);
  };
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

BoundKernel bindMatmul(const KernelSignature &sig) {
  using Op = ops::Matmul;
  OperandIndex at(sig);
  MatmulDims d = checkMatmul(sig);
  MatmulShape s = matmulShape(d);
  if (d.epilogue == MatmulEpilogue::None)
    return withFloat(sig, sig.arg(Op::lhs).dtype, "lhs",
                     [=](auto tag) -> BoundKernel {
                       using T = decltype(tag);
                       return [=](void *const *p) {
                         matmul<T>(in<T>(p[at(Op::lhs)]), in<T>(p[at(Op::rhs)]),
                                   out<T>(p[at(Op::result)]), s);
                       };
                     });
  const bool approx = d.tanhApprox;
  if (d.epilogue == MatmulEpilogue::Gelu) {
    const bool keep = d.keepsPreActivation;
    return withFloat(
        sig, sig.arg(Op::lhs).dtype, "lhs", [=](auto tag) -> BoundKernel {
          using T = decltype(tag);
          return [=](void *const *p) {
            matmulGelu<T>(in<T>(p[at(Op::lhs)]), in<T>(p[at(Op::rhs)]),
                          keep ? out<T>(p[at(Op::preact)]) : nullptr,
                          out<T>(p[at(Op::result)]), s, approx);
          };
        });
  }
  if (d.epilogue == MatmulEpilogue::GeluGrad)
    return withFloat(
        sig, sig.arg(Op::lhs).dtype, "lhs", [=](auto tag) -> BoundKernel {
          using T = decltype(tag);
          return [=](void *const *p) {
            matmulGeluGrad<T>(in<T>(p[at(Op::lhs)]), in<T>(p[at(Op::rhs)]),
                              in<T>(p[at(Op::addend)]),
                              out<T>(p[at(Op::result)]), s, approx);
          };
        });
  MatmulAddend kind = d.epilogue == MatmulEpilogue::Bias ? MatmulAddend::Bias
                                                         : MatmulAddend::Full;
  return withFloat(
      sig, sig.arg(Op::lhs).dtype, "lhs", [=](auto tag) -> BoundKernel {
        using T = decltype(tag);
        return [=](void *const *p) {
          matmulAdd<T>(in<T>(p[at(Op::lhs)]), in<T>(p[at(Op::rhs)]),
                       in<T>(p[at(Op::addend)]), out<T>(p[at(Op::result)]), s,
                       kind);
        };
      });
}

BoundKernel bindMatmulWgrad(const KernelSignature &sig) {
  using Op = ops::MatmulWgrad;
  OperandIndex at(sig);
  MatmulWgradDims d = checkMatmulWgrad(sig);
  int64_t rows = d.rows, k = d.k, n = d.n;
  return withFloat(sig, sig.arg(Op::x).dtype, "x",
                   [=](auto tag) -> BoundKernel {
                     using T = decltype(tag);
                     return [=](void *const *p) {
                       matmulWgrad<T>(in<T>(p[at(Op::x)]), in<T>(p[at(Op::dy)]),
                                      out<T>(p[at(Op::dw)]), rows, k, n);
                     };
                   });
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

BoundKernel bindLayerNorm(const KernelSignature &sig) {
  using Op = ops::LayerNorm;
  OperandIndex at(sig);
  NormShape d = checkNorm(sig);
  int64_t rows = d.rows, hidden = d.hidden;
  double eps = d.epsilon;
  bool hasBeta = static_cast<int>(sig.args.size()) > Op::beta.index;
  return withFloat(
      sig, sig.arg(Op::x).dtype, "x", [=](auto tag) -> BoundKernel {
        using T = decltype(tag);
        return [=](void *const *p) {
          layerNorm<T>(in<T>(p[at(Op::x)]), in<T>(p[at(Op::gamma)]),
                       hasBeta ? in<T>(p[at(Op::beta)]) : nullptr,
                       out<T>(p[at(Op::y)]), rows, hidden, eps);
        };
      });
}

BoundKernel bindLayerNormGrad(const KernelSignature &sig) {
  using Op = ops::LayerNormGrad;
  OperandIndex at(sig);
  NormShape d = checkNormGrad(sig, /*withBeta=*/true);
  int64_t rows = d.rows, hidden = d.hidden;
  double eps = d.epsilon;
  return withFloat(
      sig, sig.arg(Op::dy).dtype, "dy", [=](auto tag) -> BoundKernel {
        using T = decltype(tag);
        return [=](void *const *p) {
          layerNormGrad<T>(in<T>(p[at(Op::dy)]), in<T>(p[at(Op::x)]),
                           in<T>(p[at(Op::gamma)]), out<T>(p[at(Op::dx)]),
                           out<T>(p[at(Op::dgamma)]), out<T>(p[at(Op::dbeta)]),
                           rows, hidden, eps);
        };
      });
}

BoundKernel bindRmsNorm(const KernelSignature &sig) {
  using Op = ops::RmsNorm;
  OperandIndex at(sig);
  NormShape d = checkNorm(sig);
  int64_t rows = d.rows, hidden = d.hidden;
  double eps = d.epsilon;
  return withFloat(sig, sig.arg(Op::x).dtype, "x",
                   [=](auto tag) -> BoundKernel {
                     using T = decltype(tag);
                     return [=](void *const *p) {
                       rmsNorm<T>(in<T>(p[at(Op::x)]), in<T>(p[at(Op::gamma)]),
                                  out<T>(p[at(Op::y)]), rows, hidden, eps);
                     };
                   });
}

BoundKernel bindRmsNormGrad(const KernelSignature &sig) {
  using Op = ops::RmsNormGrad;
  OperandIndex at(sig);
  NormShape d = checkNormGrad(sig, /*withBeta=*/false);
  int64_t rows = d.rows, hidden = d.hidden;
  double eps = d.epsilon;
  return withFloat(
      sig, sig.arg(Op::dy).dtype, "dy", [=](auto tag) -> BoundKernel {
        using T = decltype(tag);
        return [=](void *const *p) {
          rmsNormGrad<T>(in<T>(p[at(Op::dy)]), in<T>(p[at(Op::x)]),
                         in<T>(p[at(Op::gamma)]), out<T>(p[at(Op::dx)]),
                         out<T>(p[at(Op::dgamma)]), rows, hidden, eps);
        };
      });
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

BoundKernel bindSumSquares(const KernelSignature &sig) {
  std::vector<SumSquaresTerm> terms = checkSumSquares(sig, DType::F64, "cpu");
  size_t result = terms.size();
  return [=](void *const *p) {
    double sum = 0.0;
    for (size_t i = 0; i < terms.size(); ++i)
      sum += terms[i].dtype == DType::F64
                 ? sumSquares(in<double>(p[i]), terms[i].numel)
                 : sumSquares(in<float>(p[i]), terms[i].numel);
    *out<float>(p[result]) = static_cast<float>(sum);
  };
}

BoundKernel bindClipCoef(const KernelSignature &sig) {
  using Op = ops::ClipCoef;
  OperandIndex at(sig);
  double maxNorm = checkClipCoef(sig);
  return [=](void *const *p) {
    ClipCoef c = clipCoef(*in<float>(p[at(Op::sumsq)]), maxNorm);
    *out<float>(p[at(Op::coef)]) = static_cast<float>(c.coef);
    *out<float>(p[at(Op::norm)]) = static_cast<float>(c.norm);
  };
}

BoundKernel bindAdamw(const KernelSignature &sig) {
  using Op = ops::Adamw;
  OperandIndex at(sig);
  AdamwShape d = checkAdamw(sig);
  int64_t n = d.numel;
  AdamWParams base;
  base.beta1 = d.beta1;
  base.beta2 = d.beta2;
  base.epsilon = d.epsilon;
  base.weightDecay = d.weightDecay;
  return withFloat(
      sig, sig.arg(Op::param).dtype, "param", [=](auto tag) -> BoundKernel {
        using T = decltype(tag);
        return [=](void *const *p) {
          AdamWParams params = base;
          params.lr = *in<float>(p[at(Op::lr)]);
          params.step = *in<int64_t>(p[at(Op::step)]);
          params.gradScale = *in<float>(p[at(Op::grad_scale)]);
          adamw<T, T>(in<T>(p[at(Op::param)]), in<T>(p[at(Op::grad)]),
                      in<T>(p[at(Op::m)]), in<T>(p[at(Op::v)]),
                      out<T>(p[at(Op::new_param)]), out<T>(p[at(Op::new_m)]),
                      out<T>(p[at(Op::new_v)]), n, params);
        };
      });
}

} // namespace

void registerDenseKernels(KernelTable &t) {
  addBinders<ops::Gelu, ops::GeluGrad, ops::Silu, ops::SiluGrad, ops::Swiglu,
             ops::SwigluGrad>(t);
  t.add("add", bindBinary<AddOp>);
  t.add("sub", bindBinary<SubOp>);
  t.add("mul", bindBinary<MulOp>);
  t.add("scale", bindScale);
  t.add("reduce_sum", bindReduceSum);
  t.add("broadcast", bindBroadcast);
  t.add("reshape", bindReshape);
  t.add("microbatch", bindMicrobatch);
  t.add("matmul", bindMatmul);
  t.add("matmul_wgrad", bindMatmulWgrad);
  t.add("layer_norm", bindLayerNorm);
  t.add("layer_norm_grad", bindLayerNormGrad);
  t.add("rms_norm", bindRmsNorm);
  t.add("rms_norm_grad", bindRmsNormGrad);
  t.add("sum_squares", bindSumSquares);
  t.add("clip_coef", bindClipCoef);
  t.add("adamw", bindAdamw);
}

} // namespace autoshard::runtime::cpu_kernels
