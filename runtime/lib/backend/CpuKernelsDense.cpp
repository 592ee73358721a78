//===- CpuKernelsDense.cpp - Elementwise, GEMM, norm, optimizer binders ---===//

#include "autoshard/runtime/cpu/Kernels.h"

#include "CpuKernels.h"

#include <cstring>

namespace autoshard::runtime::cpu_kernels {

using namespace autoshard::runtime::cpu;

namespace {

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

BoundKernel bindGelu(const KernelSignature &sig) {
  int64_t n = expectAllLikeArg0(sig);
  bool approx = sig.attrs->getFlag("tanh_approx");
  return withFloat(sig, sig.args[0].dtype, "x", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return
        [=](void *const *p) { gelu<T>(in<T>(p[0]), out<T>(p[1]), n, approx); };
  });
}

BoundKernel bindGeluGrad(const KernelSignature &sig) {
  int64_t n = expectAllLikeArg0(sig);
  bool approx = sig.attrs->getFlag("tanh_approx");
  return withFloat(sig, sig.args[0].dtype, "dy", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      geluGrad<T>(in<T>(p[0]), in<T>(p[1]), out<T>(p[2]), n, approx);
    };
  });
}

BoundKernel bindSilu(const KernelSignature &sig) {
  int64_t n = expectAllLikeArg0(sig);
  return withFloat(sig, sig.args[0].dtype, "x", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) { silu<T>(in<T>(p[0]), out<T>(p[1]), n); };
  });
}

BoundKernel bindSiluGrad(const KernelSignature &sig) {
  int64_t n = expectAllLikeArg0(sig);
  return withFloat(sig, sig.args[0].dtype, "dy", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      siluGrad<T>(in<T>(p[0]), in<T>(p[1]), out<T>(p[2]), n);
    };
  });
}

BoundKernel bindSwiglu(const KernelSignature &sig) {
  int64_t n = expectAllLikeArg0(sig);
  return withFloat(sig, sig.args[0].dtype, "gate",
                   [=](auto tag) -> BoundKernel {
                     using T = decltype(tag);
                     return [=](void *const *p) {
                       swiglu<T>(in<T>(p[0]), in<T>(p[1]), out<T>(p[2]), n);
                     };
                   });
}

BoundKernel bindSwigluGrad(const KernelSignature &sig) {
  int64_t n = expectAllLikeArg0(sig);
  return withFloat(sig, sig.args[0].dtype, "dy", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      swigluGrad<T>(in<T>(p[0]), in<T>(p[1]), in<T>(p[2]), out<T>(p[3]),
                    out<T>(p[4]), n);
    };
  });
}

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
  ScaleShape s = checkScale(sig);
  int64_t n = s.numel;
  double factor = s.factor;
  return withFloat(sig, sig.args[0].dtype, "x", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return
        [=](void *const *p) { scale<T>(in<T>(p[0]), out<T>(p[1]), n, factor); };
  });
}

BoundKernel bindReduceSum(const KernelSignature &sig) {
  const TensorType &x = sig.args[0];
  std::vector<int64_t> dims = checkReduceSum(sig);
  std::vector<int64_t> shape = x.shape;
  return withFloat(sig, x.dtype, "x", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      reduceSum<T>(in<T>(p[0]), out<T>(p[1]), shape, dims);
    };
  });
}

BoundKernel bindBroadcast(const KernelSignature &sig) {
  const TensorType &y = sig.results[0];
  std::vector<int64_t> dims = checkBroadcast(sig);
  std::vector<int64_t> shape = y.shape;
  return withFloat(sig, y.dtype, "result", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      broadcast<T>(in<T>(p[0]), out<T>(p[1]), shape, dims);
    };
  });
}

BoundKernel bindReshape(const KernelSignature &sig) {
  int64_t bytes = checkReshape(sig);
  return [=](void *const *p) {
    if (p[0] != p[1])
      std::memmove(p[1], p[0], bytes);
  };
}

/// Rows `index, index + count, ...` of the ids `x` (tfm.microbatch): a
/// strided row copy, whatever the element type.
BoundKernel bindMicrobatch(const KernelSignature &sig) {
  MicrobatchShape s = checkMicrobatch(sig);
  int64_t index = s.index, count = s.count, rows = s.rows,
          rowBytes = s.rowBytes;
  return [=](void *const *p) {
    const char *src = static_cast<const char *>(p[0]);
    char *dst = static_cast<char *>(p[1]);
    for (int64_t q = 0; q < rows; ++q)
      std::memcpy(dst + q * rowBytes, src + (q * count + index) * rowBytes,
                  rowBytes);
  };
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

BoundKernel bindMatmul(const KernelSignature &sig) {
  MatmulDims d = checkMatmul(sig);
  MatmulShape s = matmulShape(d);
  if (d.epilogue == MatmulEpilogue::None)
    return withFloat(sig, sig.args[0].dtype, "lhs",
                     [=](auto tag) -> BoundKernel {
                       using T = decltype(tag);
                       return [=](void *const *p) {
                         matmul<T>(in<T>(p[0]), in<T>(p[1]), out<T>(p[2]), s);
                       };
                     });
  const bool approx = d.tanhApprox;
  if (d.epilogue == MatmulEpilogue::Gelu) {
    const bool keep = d.keepsPreActivation;
    return withFloat(sig, sig.args[0].dtype, "lhs",
                     [=](auto tag) -> BoundKernel {
                       using T = decltype(tag);
                       return [=](void *const *p) {
                         matmulGelu<T>(in<T>(p[0]), in<T>(p[1]),
                                       keep ? out<T>(p[3]) : nullptr,
                                       out<T>(p[2]), s, approx);
                       };
                     });
  }
  if (d.epilogue == MatmulEpilogue::GeluGrad)
    return withFloat(
        sig, sig.args[0].dtype, "lhs", [=](auto tag) -> BoundKernel {
          using T = decltype(tag);
          return [=](void *const *p) {
            matmulGeluGrad<T>(in<T>(p[0]), in<T>(p[1]), in<T>(p[2]),
                              out<T>(p[3]), s, approx);
          };
        });
  MatmulAddend kind = d.epilogue == MatmulEpilogue::Bias ? MatmulAddend::Bias
                                                         : MatmulAddend::Full;
  return withFloat(sig, sig.args[0].dtype, "lhs", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      matmulAdd<T>(in<T>(p[0]), in<T>(p[1]), in<T>(p[2]), out<T>(p[3]), s,
                   kind);
    };
  });
}

BoundKernel bindMatmulWgrad(const KernelSignature &sig) {
  MatmulWgradDims d = checkMatmulWgrad(sig);
  int64_t rows = d.rows, k = d.k, n = d.n;
  return withFloat(sig, sig.args[0].dtype, "x", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      matmulWgrad<T>(in<T>(p[0]), in<T>(p[1]), out<T>(p[2]), rows, k, n);
    };
  });
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

BoundKernel bindLayerNorm(const KernelSignature &sig) {
  NormShape d = checkNorm(sig);
  int64_t rows = d.rows, hidden = d.hidden;
  double eps = d.epsilon;
  bool hasBeta = sig.args.size() == 3;
  return withFloat(sig, sig.args[0].dtype, "x", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      layerNorm<T>(in<T>(p[0]), in<T>(p[1]), hasBeta ? in<T>(p[2]) : nullptr,
                   out<T>(p[hasBeta ? 3 : 2]), rows, hidden, eps);
    };
  });
}

BoundKernel bindLayerNormGrad(const KernelSignature &sig) {
  NormShape d = checkNormGrad(sig, /*withBeta=*/true);
  int64_t rows = d.rows, hidden = d.hidden;
  double eps = d.epsilon;
  return withFloat(sig, sig.args[0].dtype, "dy", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      layerNormGrad<T>(in<T>(p[0]), in<T>(p[1]), in<T>(p[2]), out<T>(p[3]),
                       out<T>(p[4]), out<T>(p[5]), rows, hidden, eps);
    };
  });
}

BoundKernel bindRmsNorm(const KernelSignature &sig) {
  NormShape d = checkNorm(sig);
  int64_t rows = d.rows, hidden = d.hidden;
  double eps = d.epsilon;
  return withFloat(sig, sig.args[0].dtype, "x", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      rmsNorm<T>(in<T>(p[0]), in<T>(p[1]), out<T>(p[2]), rows, hidden, eps);
    };
  });
}

BoundKernel bindRmsNormGrad(const KernelSignature &sig) {
  NormShape d = checkNormGrad(sig, /*withBeta=*/false);
  int64_t rows = d.rows, hidden = d.hidden;
  double eps = d.epsilon;
  return withFloat(sig, sig.args[0].dtype, "dy", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      rmsNormGrad<T>(in<T>(p[0]), in<T>(p[1]), in<T>(p[2]), out<T>(p[3]),
                     out<T>(p[4]), rows, hidden, eps);
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
  double maxNorm = checkClipCoef(sig);
  return [=](void *const *p) {
    ClipCoef c = clipCoef(*in<float>(p[0]), maxNorm);
    *out<float>(p[1]) = static_cast<float>(c.coef);
    *out<float>(p[2]) = static_cast<float>(c.norm);
  };
}

BoundKernel bindAdamw(const KernelSignature &sig) {
  AdamwShape d = checkAdamw(sig);
  int64_t n = d.numel;
  AdamWParams base;
  base.beta1 = d.beta1;
  base.beta2 = d.beta2;
  base.epsilon = d.epsilon;
  base.weightDecay = d.weightDecay;
  return withFloat(
      sig, sig.args[0].dtype, "param", [=](auto tag) -> BoundKernel {
        using T = decltype(tag);
        return [=](void *const *p) {
          AdamWParams params = base;
          params.lr = *in<float>(p[4]);
          params.step = *in<int64_t>(p[5]);
          params.gradScale = *in<float>(p[6]);
          adamw<T, T>(in<T>(p[0]), in<T>(p[1]), in<T>(p[2]), in<T>(p[3]),
                      out<T>(p[7]), out<T>(p[8]), out<T>(p[9]), n, params);
        };
      });
}

} // namespace

void registerDenseKernels(KernelTable &t) {
  t.add("gelu", bindGelu);
  t.add("gelu_grad", bindGeluGrad);
  t.add("silu", bindSilu);
  t.add("silu_grad", bindSiluGrad);
  t.add("swiglu", bindSwiglu);
  t.add("swiglu_grad", bindSwigluGrad);
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
