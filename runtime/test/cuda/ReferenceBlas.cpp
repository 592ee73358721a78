//===- ReferenceBlas.cpp - A plain-loop GEMM for the test oracle ----------===//
//
// The CPU kernels' detail::gemm (runtime/lib/cpu/Blas.h) without OpenBLAS,
// for the CUDA conformance tests on a machine that has no OpenBLAS (the GPU
// box). Row-major C = alpha op(A) op(B) + beta C, accumulated in double.
//
//===----------------------------------------------------------------------===//

#include "Blas.h"

namespace autoshard::runtime::cpu::detail {

template <typename T>
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, T alpha,
          const T *a, int64_t lda, const T *b, int64_t ldb, T beta, T *c,
          int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < k; ++p)
        sum += double(transA ? a[p * lda + i] : a[i * lda + p]) *
               double(transB ? b[j * ldb + p] : b[p * ldb + j]);
      T &out = c[i * ldc + j];
      out = static_cast<T>(alpha * sum + (beta == T(0) ? T(0) : beta * out));
    }
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float,
                          const float *, int64_t, const float *, int64_t, float,
                          float *, int64_t);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double,
                           const double *, int64_t, const double *, int64_t,
                           double, double *, int64_t);

} // namespace autoshard::runtime::cpu::detail
