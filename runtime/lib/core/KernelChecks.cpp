//===- KernelChecks.cpp - Operand checks; dense, norm, optimizer ----------===//

#include "autoshard/runtime/KernelChecks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace autoshard::runtime::checks {

//===----------------------------------------------------------------------===//
// Operand checks
//===----------------------------------------------------------------------===//

std::string argName(size_t i) { return "arg " + std::to_string(i); }

namespace {
/// A float attribute as written ("-0.99", "inf", "nan", "1e+10").
std::string formatAttr(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}
} // namespace
std::string resultName(size_t i) { return "result " + std::to_string(i); }

void expectType(const KernelSignature &sig, const TensorType &got,
                const TensorType &want, const std::string &what) {
  if (got != want)
    sig.fail(what + " is " + got.str() + ", expected " + want.str());
}

void expectResult(const KernelSignature &sig, const TensorType &want) {
  expectType(sig, sig.results[0], want, resultName(0));
}

void expectScalar(const KernelSignature &sig, const TensorType &got,
                  DType dtype, const std::string &what) {
  expectType(sig, got, typeOf(dtype, {}), what);
}

void expectRank(const KernelSignature &sig, const TensorType &got, size_t rank,
                const std::string &what) {
  if (got.shape.size() < rank)
    sig.fail(what + " is " + got.str() +
             ", expected rank >= " + std::to_string(rank));
}

void expectExactRank(const KernelSignature &sig, const TensorType &got,
                     size_t rank, const std::string &what) {
  if (got.shape.size() != rank)
    sig.fail(what + " is " + got.str() + ", expected rank " +
             std::to_string(rank));
}

int64_t expectResultsLikeArg0(const KernelSignature &sig) {
  for (size_t i = 0; i < sig.results.size(); ++i)
    expectType(sig, sig.results[i], sig.args[0], resultName(i));
  return sig.args[0].numel();
}

int64_t expectAllLikeArg0(const KernelSignature &sig) {
  for (size_t i = 1; i < sig.args.size(); ++i)
    expectType(sig, sig.args[i], sig.args[0], argName(i));
  return expectResultsLikeArg0(sig);
}

int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i)
    n *= shape[i];
  return n;
}

TensorType typeOf(DType dtype, std::vector<int64_t> shape) {
  TensorType t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

//===----------------------------------------------------------------------===//
// Elementwise and shape ops
//===----------------------------------------------------------------------===//

BinaryShape checkBinary(const KernelSignature &sig) {
  const TensorType &lhs = sig.args[0], &rhs = sig.args[1];
  BinaryShape s;
  s.numel = expectResultsLikeArg0(sig);
  bool suffix = rhs.dtype == lhs.dtype &&
                rhs.shape.size() <= lhs.shape.size() &&
                std::equal(rhs.shape.begin(), rhs.shape.end(),
                           lhs.shape.end() - rhs.shape.size());
  if (!suffix)
    sig.fail("rhs " + rhs.str() + " must have lhs " + lhs.str() +
             "'s dtype and a suffix of its shape");
  s.rhsNumel = rhs.numel();
  if (s.rhsNumel == 0 && s.numel != 0)
    sig.fail("rhs " + rhs.str() + " is empty");
  return s;
}

ScaleShape checkScale(const KernelSignature &sig) {
  ScaleShape s;
  s.numel = expectResultsLikeArg0(sig);
  s.factor = sig.attrs->getF64("factor");
  return s;
}

namespace {

/// reduce_sum / broadcast: the attribute `dims` (sorted, unique dims of
/// `full`, x / the result) and `other` (the result / x, named `what`) of
/// `full`'s type without them.
std::vector<int64_t> checkDims(const KernelSignature &sig,
                               const TensorType &full, const TensorType &other,
                               const std::string &what) {
  std::vector<int64_t> dims = sig.attrs->getI64Array("dims");
  size_t rank = full.shape.size();
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] < 0 || dims[i] >= int64_t(rank) ||
        (i && dims[i] <= dims[i - 1]))
      sig.fail("attribute 'dims' must be sorted, unique and in [0, " +
               std::to_string(rank) + ")");
  std::vector<int64_t> kept;
  for (size_t d = 0; d < rank; ++d)
    if (std::find(dims.begin(), dims.end(), int64_t(d)) == dims.end())
      kept.push_back(full.shape[d]);
  expectType(sig, other, typeOf(full.dtype, kept), what);
  return dims;
}

} // namespace

std::vector<int64_t> checkReduceSum(const KernelSignature &sig) {
  return checkDims(sig, sig.args[0], sig.results[0], resultName(0));
}

std::vector<int64_t> checkBroadcast(const KernelSignature &sig) {
  // x must be the result without the broadcast dims.
  return checkDims(sig, sig.results[0], sig.args[0], argName(0));
}

int64_t checkReshape(const KernelSignature &sig) {
  const TensorType &x = sig.args[0], &y = sig.results[0];
  if (x.dtype != y.dtype || x.numel() != y.numel())
    sig.fail("result " + y.str() + " must keep x " + x.str() +
             "'s dtype and element count");
  return x.bytes();
}

MicrobatchShape checkMicrobatch(const KernelSignature &sig) {
  const TensorType &x = sig.args[0], &y = sig.results[0];
  MicrobatchShape s;
  s.index = sig.attrs->getI64("index");
  s.count = sig.attrs->getI64("count");
  if (x.shape.empty() || s.count < 1 || s.index < 0 || s.index >= s.count ||
      x.shape[0] % s.count != 0)
    sig.fail("x " + x.str() + " with index " + std::to_string(s.index) +
             " and count " + std::to_string(s.count) +
             ": need rank >= 1, 0 <= index < count and count dividing dim 0");
  std::vector<int64_t> shape = x.shape;
  shape[0] /= s.count;
  expectType(sig, y, typeOf(x.dtype, shape), resultName(0));
  s.rows = shape[0];
  s.rowBytes = s.rows ? y.bytes() / s.rows : 0;
  return s;
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

MatmulDims checkMatmul(const KernelSignature &sig) {
  const TensorType &lhs = sig.args[0], &rhs = sig.args[1];
  expectRank(sig, lhs, 2, "lhs");
  expectRank(sig, rhs, 2, "rhs");
  MatmulDims s;
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
  const TensorType product = typeOf(lhs.dtype, shape);
  for (size_t i = 0; i < sig.results.size(); ++i)
    expectType(sig, sig.results[i], product, resultName(i));
  // The fused epilogue (MatmulEpilogue).
  std::string epilogue =
      sig.attrs->has("epilogue") ? sig.attrs->getString("epilogue") : "";
  if (!epilogue.empty() && epilogue != "bias" && epilogue != "gelu" &&
      epilogue != "gelu_grad")
    sig.fail("attribute 'epilogue' must be \"bias\", \"gelu\", "
             "\"gelu_grad\" or absent, found \"" +
             epilogue + "\"");
  s.tanhApprox = sig.attrs->getFlag("tanh_approx");
  if (s.tanhApprox && epilogue != "gelu" && epilogue != "gelu_grad")
    sig.fail("attribute 'tanh_approx' needs epilogue \"gelu\" or "
             "\"gelu_grad\"");
  if (sig.results.size() == 2 && epilogue != "gelu")
    sig.fail("a second result (the pre-activation) needs epilogue \"gelu\"");
  if (epilogue == "gelu") {
    if (sig.args.size() != 2)
      sig.fail("epilogue \"gelu\" takes no third argument, found " +
               sig.args[2].str());
    s.epilogue = MatmulEpilogue::Gelu;
    s.keepsPreActivation = sig.results.size() == 2;
    return s;
  }
  if (sig.args.size() < 3) {
    if (!epilogue.empty())
      sig.fail("epilogue \"" + epilogue + "\" needs " +
               (epilogue == "bias" ? "the bias" : "the pre-activation x") +
               " as a third argument");
    return s;
  }
  if (epilogue == "gelu_grad") {
    s.epilogue = MatmulEpilogue::GeluGrad;
    expectType(sig, sig.args[2], sig.results[0],
               "pre-activation x (arg 2, of the result's type)");
  } else if (epilogue == "bias") {
    s.epilogue = MatmulEpilogue::Bias;
    expectType(sig, sig.args[2], typeOf(lhs.dtype, {s.n}), "bias (arg 2)");
  } else {
    s.epilogue = MatmulEpilogue::Add;
    expectType(sig, sig.args[2], sig.results[0],
               "addend (arg 2, added to the result)");
  }
  return s;
}

MatmulWgradDims checkMatmulWgrad(const KernelSignature &sig) {
  const TensorType &x = sig.args[0], &dy = sig.args[1];
  expectRank(sig, x, 2, "x");
  expectRank(sig, dy, 2, "dy");
  size_t r = x.shape.size();
  if (dy.shape.size() != r || dy.dtype != x.dtype ||
      !std::equal(x.shape.begin(), x.shape.end() - 1, dy.shape.begin()))
    sig.fail("dy " + dy.str() + " must share x " + x.str() + "'s leading dims");
  MatmulWgradDims s;
  s.rows = product(x.shape, 0, r - 1);
  s.k = x.shape[r - 1];
  s.n = dy.shape[r - 1];
  expectResult(sig, typeOf(x.dtype, {s.k, s.n}));
  return s;
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

namespace {

/// Checks x [..., H] (operand `xIndex`), gamma and the optional beta [H].
NormShape normShape(const KernelSignature &sig, size_t xIndex) {
  const TensorType &x = sig.args[xIndex];
  expectRank(sig, x, 1, "x");
  NormShape s;
  s.hidden = x.shape.back();
  for (size_t i = xIndex + 1; i < sig.args.size(); ++i)
    expectType(sig, sig.args[i], typeOf(x.dtype, {s.hidden}), argName(i));
  s.rows = x.numel() / std::max<int64_t>(s.hidden, 1);
  return s;
}

} // namespace

NormShape checkNorm(const KernelSignature &sig) {
  NormShape s = normShape(sig, 0);
  expectResultsLikeArg0(sig);
  s.epsilon = sig.attrs->getF64("epsilon");
  return s;
}

NormShape checkNormGrad(const KernelSignature &sig, bool withBeta) {
  expectType(sig, sig.args[1], sig.args[0], "x");
  NormShape s = normShape(sig, 1);
  expectType(sig, sig.results[0], sig.args[0], resultName(0));
  expectType(sig, sig.results[1], sig.args[2], resultName(1));
  if (withBeta)
    expectType(sig, sig.results[2], sig.args[2], resultName(2));
  s.epsilon = sig.attrs->getF64("epsilon");
  return s;
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

std::vector<SumSquaresTerm> checkSumSquares(const KernelSignature &sig,
                                            DType wide,
                                            std::string_view backend) {
  expectScalar(sig, sig.results[0], DType::F32, resultName(0));
  std::vector<SumSquaresTerm> terms;
  for (size_t i = 0; i < sig.args.size(); ++i) {
    DType dt = sig.args[i].dtype;
    if (dt != DType::F32 && dt != wide)
      sig.fail(argName(i) + " is " + sig.args[i].str() + "; the " +
               std::string(backend) + " backend sums f32 or " +
               std::string(dtypeName(wide)));
    terms.push_back({dt, sig.args[i].numel()});
  }
  return terms;
}

double checkClipCoef(const KernelSignature &sig) {
  expectScalar(sig, sig.args[0], DType::F32, "sumsq");
  expectScalar(sig, sig.results[0], DType::F32, "coef");
  expectScalar(sig, sig.results[1], DType::F32, "norm");
  double maxNorm = sig.attrs->getF64("max_norm");
  if (!(maxNorm > 0) || !std::isfinite(maxNorm))
    sig.fail("attribute 'max_norm' (the gradient clip) must be finite and "
             "> 0, found " +
             formatAttr(maxNorm));
  return maxNorm;
}

AdamwShape checkAdamw(const KernelSignature &sig) {
  const TensorType &param = sig.args[0];
  expectType(sig, sig.args[1], param, "grad");
  expectType(sig, sig.args[2], param, "m");
  expectType(sig, sig.args[3], param, "v");
  expectScalar(sig, sig.args[4], DType::F32, "lr");
  expectScalar(sig, sig.args[5], DType::I64, "step");
  expectScalar(sig, sig.args[6], DType::F32, "grad_scale");
  AdamwShape s;
  s.numel = expectResultsLikeArg0(sig);
  s.beta1 = sig.attrs->getF64("beta1");
  s.beta2 = sig.attrs->getF64("beta2");
  s.epsilon = sig.attrs->getF64("epsilon");
  s.weightDecay = sig.attrs->getF64("weight_decay");
  // The ranges of torch.optim.AdamW: outside them the moments or the
  // update diverge (beta2 < 0 makes v negative, so sqrt(v) NaN).
  for (const char *beta : {"beta1", "beta2"}) {
    double b = beta[4] == '1' ? s.beta1 : s.beta2;
    if (!(b >= 0 && b < 1))
      sig.fail(std::string("attribute '") + beta +
               "' must be in [0, 1), found " + formatAttr(b));
  }
  if (!(s.epsilon > 0) || !std::isfinite(s.epsilon))
    sig.fail("attribute 'epsilon' must be finite and > 0, found " +
             formatAttr(s.epsilon));
  if (!(s.weightDecay >= 0) || !std::isfinite(s.weightDecay))
    sig.fail("attribute 'weight_decay' must be finite and >= 0, found " +
             formatAttr(s.weightDecay));
  return s;
}

} // namespace autoshard::runtime::checks
