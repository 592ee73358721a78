//===- CpuKernels.h - Helpers of the CPU kernel binders ---------*- C++ -*-===//
//
// Each binder checks an instruction's operand types against its op (so a
// malformed artifact fails at load time, never with an out-of-bounds
// access), derives the kernel's shape struct and returns a closure over the
// CPU kernel of the right element type.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_LIB_BACKEND_CPUKERNELS_H
#define AUTOSHARD_RUNTIME_LIB_BACKEND_CPUKERNELS_H

#include "autoshard/runtime/Backend.h"

#include <string>

namespace autoshard::runtime::cpu_kernels {

/// Registers the binders of each op family.
void registerDenseKernels(KernelTable &table);
void registerSequenceKernels(KernelTable &table);
void registerMoeKernels(KernelTable &table);
/// The communication kernels (`dist.*`, CpuKernelsComm.cpp).
void registerCommKernels(KernelTable &table);

/// Operand pointer casts.
template <typename T> const T *in(void *p) { return static_cast<const T *>(p); }
template <typename T> T *out(void *p) { return static_cast<T *>(p); }

/// "arg 1" / "result 0", for messages.
std::string argName(size_t i);
std::string resultName(size_t i);

/// Calls fn(T{}) with T = float or double for a f32/f64 `dtype`; fails
/// naming `what` otherwise.
template <typename Fn>
BoundKernel withFloat(const KernelSignature &sig, DType dtype,
                      const std::string &what, Fn &&fn) {
  if (dtype == DType::F32)
    return fn(float{});
  if (dtype == DType::F64)
    return fn(double{});
  sig.fail(what + " has element type " + std::string(dtypeName(dtype)) +
           "; the cpu backend computes in f32 or f64");
}

/// Calls fn(I{}) with I = int32_t or int64_t for an i32/i64 `dtype`.
template <typename Fn>
BoundKernel withId(const KernelSignature &sig, DType dtype,
                   const std::string &what, Fn &&fn) {
  if (dtype == DType::I32)
    return fn(int32_t{});
  if (dtype == DType::I64)
    return fn(int64_t{});
  sig.fail(what + " must hold i32 or i64 ids, found " +
           std::string(dtypeName(dtype)));
}

/// Fails unless `got` equals `want`.
void expectType(const KernelSignature &sig, const TensorType &got,
                const TensorType &want, const std::string &what);
/// Fails unless `got` is a scalar (rank 0) of `dtype`.
void expectScalar(const KernelSignature &sig, const TensorType &got,
                  DType dtype, const std::string &what);
/// Fails unless `got` has rank >= `rank`.
void expectRank(const KernelSignature &sig, const TensorType &got, size_t rank,
                const std::string &what);
/// Fails unless `got` has exactly rank `rank`.
void expectExactRank(const KernelSignature &sig, const TensorType &got,
                     size_t rank, const std::string &what);
/// Fails unless every result has the type of arg 0; returns its numel.
int64_t expectResultsLikeArg0(const KernelSignature &sig);
/// Fails unless every arg and result has the type of arg 0; returns numel.
int64_t expectAllLikeArg0(const KernelSignature &sig);
/// Product of shape[begin, end).
int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end);
/// A type with `dtype` and `shape`.
TensorType typeOf(DType dtype, std::vector<int64_t> shape);

} // namespace autoshard::runtime::cpu_kernels

#endif // AUTOSHARD_RUNTIME_LIB_BACKEND_CPUKERNELS_H
