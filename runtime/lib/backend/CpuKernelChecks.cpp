//===- CpuKernelChecks.cpp - Operand checks of the CPU kernel binders -----===//

#include "CpuKernels.h"

namespace autoshard::runtime::cpu_kernels {

std::string argName(size_t i) { return "arg " + std::to_string(i); }
std::string resultName(size_t i) { return "result " + std::to_string(i); }

void expectType(const KernelSignature &sig, const TensorType &got,
                const TensorType &want, const std::string &what) {
  if (got != want)
    sig.fail(what + " is " + got.str() + ", expected " + want.str());
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

} // namespace autoshard::runtime::cpu_kernels
