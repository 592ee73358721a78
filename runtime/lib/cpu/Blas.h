//===- Blas.h - Typed row-major GEMM over oneDNN and OpenBLAS ---*- C++ -*-===//

#ifndef AUTOSHARD_RUNTIME_LIB_CPU_BLAS_H
#define AUTOSHARD_RUNTIME_LIB_CPU_BLAS_H

#include <cstdint>

namespace autoshard::runtime::cpu::detail {

/// Row-major C = alpha * op(A) op(B) + beta * C, with op(A) [m, k] and
/// op(B) [k, n], leading dims lda/ldb/ldc (elements between rows as stored).
/// float: oneDNN's dnnl_sgemm when built with it (about 20% faster than
/// OpenBLAS on the main job, bitwise the same on any thread count);
/// AUTOSHARD_CPU_GEMM=openblas runs cblas_sgemm instead. double (the fp64
/// oracle): cblas_dgemm. With k == 0 it only scales C by beta. Throws
/// std::invalid_argument when a size exceeds BLAS's int, when the library
/// fails, or on a bad AUTOSHARD_CPU_GEMM.
template <typename T>
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, T alpha,
          const T *a, int64_t lda, const T *b, int64_t ldb, T beta, T *c,
          int64_t ldc);

/// Whether float GEMMs run on oneDNN (see gemm()).
bool floatGemmOnOneDnn();

} // namespace autoshard::runtime::cpu::detail

#endif // AUTOSHARD_RUNTIME_LIB_CPU_BLAS_H
