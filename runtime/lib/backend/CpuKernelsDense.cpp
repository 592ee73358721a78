//===- CpuKernelsDense.cpp - Elementwise, GEMM, norm, optimizer binders ---===//

#include "autoshard/runtime/cpu/Kernels.h"

#include "CpuKernels.h"

#include <algorithm>
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
  const TensorType &lhs = sig.args[0], &rhs = sig.args[1];
  int64_t n = expectResultsLikeArg0(sig);
  bool suffix = rhs.dtype == lhs.dtype &&
                rhs.shape.size() <= lhs.shape.size() &&
                std::equal(rhs.shape.begin(), rhs.shape.end(),
                           lhs.shape.end() - rhs.shape.size());
  if (!suffix)
    sig.fail("rhs " + rhs.str() + " must have lhs " + lhs.str() +
             "'s dtype and a suffix of its shape");
  int64_t m = rhs.numel();
  if (m == 0 && n != 0)
    sig.fail("rhs " + rhs.str() + " is empty");
  return withFloat(sig, lhs.dtype, "lhs", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      Op::template apply<T>(in<T>(p[0]), in<T>(p[1]), out<T>(p[2]), n, m);
    };
  });
}

BoundKernel bindScale(const KernelSignature &sig) {
  int64_t n = expectResultsLikeArg0(sig);
  double factor = sig.attrs->getF64("factor");
  return withFloat(sig, sig.args[0].dtype, "x", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return
        [=](void *const *p) { scale<T>(in<T>(p[0]), out<T>(p[1]), n, factor); };
  });
}

BoundKernel bindReduceSum(const KernelSignature &sig) {
  const TensorType &x = sig.args[0];
  std::vector<int64_t> dims = sig.attrs->getI64Array("dims");
  std::vector<int64_t> kept;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (std::find(dims.begin(), dims.end(), int64_t(d)) == dims.end())
      kept.push_back(x.shape[d]);
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] < 0 || dims[i] >= int64_t(x.shape.size()) ||
        (i && dims[i] <= dims[i - 1]))
      sig.fail("attribute 'dims' must be sorted, unique and in [0, " +
               std::to_string(x.shape.size()) + ")");
  expectType(sig, sig.results[0], typeOf(x.dtype, kept), resultName(0));
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
  std::vector<int64_t> dims = sig.attrs->getI64Array("dims");
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] < 0 || dims[i] >= int64_t(y.shape.size()) ||
        (i && dims[i] <= dims[i - 1]))
      sig.fail("attribute 'dims' must be sorted, unique and in [0, " +
               std::to_string(y.shape.size()) + ")");
  std::vector<int64_t> kept;
  for (size_t d = 0; d < y.shape.size(); ++d)
    if (std::find(dims.begin(), dims.end(), int64_t(d)) == dims.end())
      kept.push_back(y.shape[d]);
  // x must be the result without the broadcast dims.
  expectType(sig, sig.args[0], typeOf(y.dtype, kept), argName(0));
  std::vector<int64_t> shape = y.shape;
  return withFloat(sig, y.dtype, "result", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      broadcast<T>(in<T>(p[0]), out<T>(p[1]), shape, dims);
    };
  });
}

BoundKernel bindReshape(const KernelSignature &sig) {
  const TensorType &x = sig.args[0], &y = sig.results[0];
  if (x.dtype != y.dtype || x.numel() != y.numel())
    sig.fail("result " + y.str() + " must keep x " + x.str() +
             "'s dtype and element count");
  int64_t bytes = x.bytes();
  return [=](void *const *p) {
    if (p[0] != p[1])
      std::memmove(p[1], p[0], bytes);
  };
}

/// Rows `index, index + count, ...` of the ids `x` (tfm.microbatch): a
/// strided row copy, whatever the element type.
BoundKernel bindMicrobatch(const KernelSignature &sig) {
  const TensorType &x = sig.args[0], &y = sig.results[0];
  int64_t index = sig.attrs->getI64("index");
  int64_t count = sig.attrs->getI64("count");
  if (x.shape.empty() || count < 1 || index < 0 || index >= count ||
      x.shape[0] % count != 0)
    sig.fail("x " + x.str() + " with index " + std::to_string(index) +
             " and count " + std::to_string(count) +
             ": need rank >= 1, 0 <= index < count and count dividing dim 0");
  std::vector<int64_t> shape = x.shape;
  shape[0] /= count;
  expectType(sig, y, typeOf(x.dtype, shape), resultName(0));
  int64_t rows = shape[0];
  int64_t rowBytes = rows ? y.bytes() / rows : 0;
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
  const TensorType &lhs = sig.args[0], &rhs = sig.args[1];
  expectRank(sig, lhs, 2, "lhs");
  expectRank(sig, rhs, 2, "rhs");
  MatmulShape s;
  s.transposeLhs = sig.attrs->getFlag("transpose_lhs");
  s.transposeRhs = sig.attrs->getFlag("transpose_rhs");
  size_t r = lhs.shape.size();
  s.batch = product(lhs.shape, 0, r - 2);
  s.m = lhs.shape[r - (s.transposeLhs ? 1 : 2)];
  s.k = lhs.shape[r - (s.transposeLhs ? 2 : 1)];
  size_t rr = rhs.shape.size();
  s.batchedRhs = rr > 2;
  if (s.batchedRhs &&
      (rr != r ||
       !std::equal(rhs.shape.begin(), rhs.shape.end() - 2, lhs.shape.begin())))
    sig.fail("rhs " + rhs.str() + " must be rank 2 or have lhs " + lhs.str() +
             "'s batch dims");
  int64_t rhsK = rhs.shape[rr - (s.transposeRhs ? 1 : 2)];
  s.n = rhs.shape[rr - (s.transposeRhs ? 2 : 1)];
  if (rhsK != s.k || rhs.dtype != lhs.dtype)
    sig.fail("rhs " + rhs.str() + " does not match lhs " + lhs.str() +
             " (contraction dim " + std::to_string(s.k) + ")");
  std::vector<int64_t> shape(lhs.shape.begin(), lhs.shape.end() - 2);
  shape.push_back(s.m);
  shape.push_back(s.n);
  expectType(sig, sig.results[0], typeOf(lhs.dtype, shape), resultName(0));
  return withFloat(sig, lhs.dtype, "lhs", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      matmul<T>(in<T>(p[0]), in<T>(p[1]), out<T>(p[2]), s);
    };
  });
}

BoundKernel bindMatmulWgrad(const KernelSignature &sig) {
  const TensorType &x = sig.args[0], &dy = sig.args[1];
  expectRank(sig, x, 2, "x");
  expectRank(sig, dy, 2, "dy");
  size_t r = x.shape.size();
  if (dy.shape.size() != r || dy.dtype != x.dtype ||
      !std::equal(x.shape.begin(), x.shape.end() - 1, dy.shape.begin()))
    sig.fail("dy " + dy.str() + " must share x " + x.str() + "'s leading dims");
  int64_t rows = product(x.shape, 0, r - 1), k = x.shape[r - 1],
          n = dy.shape[r - 1];
  expectType(sig, sig.results[0], typeOf(x.dtype, {k, n}), resultName(0));
  return withFloat(sig, x.dtype, "x", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      matmulWgrad<T>(in<T>(p[0]), in<T>(p[1]), out<T>(p[2]), rows, k, n);
    };
  });
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

/// Checks x [..., H] (operand `xIndex`), gamma and the optional beta [H];
/// returns {rows, H}.
std::pair<int64_t, int64_t> normShape(const KernelSignature &sig,
                                      size_t xIndex) {
  const TensorType &x = sig.args[xIndex];
  expectRank(sig, x, 1, "x");
  int64_t hidden = x.shape.back();
  for (size_t i = xIndex + 1; i < sig.args.size(); ++i)
    expectType(sig, sig.args[i], typeOf(x.dtype, {hidden}), argName(i));
  return {x.numel() / std::max<int64_t>(hidden, 1), hidden};
}

BoundKernel bindLayerNorm(const KernelSignature &sig) {
  auto [rows, hidden] = normShape(sig, 0);
  expectResultsLikeArg0(sig);
  double eps = sig.attrs->getF64("epsilon");
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
  expectType(sig, sig.args[1], sig.args[0], "x");
  auto [rows, hidden] = normShape(sig, 1);
  expectType(sig, sig.results[0], sig.args[0], resultName(0));
  expectType(sig, sig.results[1], sig.args[2], resultName(1));
  expectType(sig, sig.results[2], sig.args[2], resultName(2));
  double eps = sig.attrs->getF64("epsilon");
  return withFloat(sig, sig.args[0].dtype, "dy", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      layerNormGrad<T>(in<T>(p[0]), in<T>(p[1]), in<T>(p[2]), out<T>(p[3]),
                       out<T>(p[4]), out<T>(p[5]), rows, hidden, eps);
    };
  });
}

BoundKernel bindRmsNorm(const KernelSignature &sig) {
  auto [rows, hidden] = normShape(sig, 0);
  expectResultsLikeArg0(sig);
  double eps = sig.attrs->getF64("epsilon");
  return withFloat(sig, sig.args[0].dtype, "x", [=](auto tag) -> BoundKernel {
    using T = decltype(tag);
    return [=](void *const *p) {
      rmsNorm<T>(in<T>(p[0]), in<T>(p[1]), out<T>(p[2]), rows, hidden, eps);
    };
  });
}

BoundKernel bindRmsNormGrad(const KernelSignature &sig) {
  expectType(sig, sig.args[1], sig.args[0], "x");
  auto [rows, hidden] = normShape(sig, 1);
  expectType(sig, sig.results[0], sig.args[0], resultName(0));
  expectType(sig, sig.results[1], sig.args[2], resultName(1));
  double eps = sig.attrs->getF64("epsilon");
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
  expectScalar(sig, sig.results[0], DType::F32, resultName(0));
  struct Term {
    bool isDouble;
    int64_t numel;
  };
  std::vector<Term> terms;
  for (size_t i = 0; i < sig.args.size(); ++i) {
    DType dt = sig.args[i].dtype;
    if (dt != DType::F32 && dt != DType::F64)
      sig.fail(argName(i) + " is " + sig.args[i].str() +
               "; the cpu backend sums f32 or f64");
    terms.push_back({dt == DType::F64, sig.args[i].numel()});
  }
  size_t result = terms.size();
  return [=](void *const *p) {
    double sum = 0.0;
    for (size_t i = 0; i < terms.size(); ++i)
      sum += terms[i].isDouble ? sumSquares(in<double>(p[i]), terms[i].numel)
                               : sumSquares(in<float>(p[i]), terms[i].numel);
    *out<float>(p[result]) = static_cast<float>(sum);
  };
}

BoundKernel bindClipCoef(const KernelSignature &sig) {
  expectScalar(sig, sig.args[0], DType::F32, "sumsq");
  expectScalar(sig, sig.results[0], DType::F32, "coef");
  expectScalar(sig, sig.results[1], DType::F32, "norm");
  double maxNorm = sig.attrs->getF64("max_norm");
  if (!(maxNorm > 0))
    sig.fail("attribute 'max_norm' must be > 0, found " +
             std::to_string(maxNorm));
  return [=](void *const *p) {
    ClipCoef c = clipCoef(*in<float>(p[0]), maxNorm);
    *out<float>(p[1]) = static_cast<float>(c.coef);
    *out<float>(p[2]) = static_cast<float>(c.norm);
  };
}

BoundKernel bindAdamw(const KernelSignature &sig) {
  const TensorType &param = sig.args[0];
  expectType(sig, sig.args[1], param, "grad");
  expectType(sig, sig.args[2], param, "m");
  expectType(sig, sig.args[3], param, "v");
  expectScalar(sig, sig.args[4], DType::F32, "lr");
  expectScalar(sig, sig.args[5], DType::I64, "step");
  expectScalar(sig, sig.args[6], DType::F32, "grad_scale");
  int64_t n = expectResultsLikeArg0(sig);
  AdamWParams base;
  base.beta1 = sig.attrs->getF64("beta1");
  base.beta2 = sig.attrs->getF64("beta2");
  base.epsilon = sig.attrs->getF64("epsilon");
  base.weightDecay = sig.attrs->getF64("weight_decay");
  return withFloat(sig, param.dtype, "param", [=](auto tag) -> BoundKernel {
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
