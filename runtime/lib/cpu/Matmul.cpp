//===- Matmul.cpp - CPU GEMM kernels --------------------------------------===//

#include "autoshard/runtime/cpu/Matmul.h"

#include "Blas.h"
#include "Check.h"
#include "Instantiate.h"

namespace autoshard::runtime::cpu {

template <typename T>
void matmul(const T *lhs, const T *rhs, T *out, const MatmulShape &shape) {
  const char *op = "matmul";
  detail::checkAtLeast(op, "batch", shape.batch, 0);
  detail::checkAtLeast(op, "m", shape.m, 0);
  detail::checkAtLeast(op, "n", shape.n, 0);
  detail::checkAtLeast(op, "k", shape.k, 0);
  const int64_t m = shape.m, n = shape.n, k = shape.k;
  const int64_t lda = shape.transposeLhs ? m : k;
  const int64_t ldb = shape.transposeRhs ? k : n;
  if (!shape.batchedRhs && !shape.transposeLhs) {
    // [batch * m, k] x [k, n]: one GEMM over all rows.
    detail::gemm<T>(false, shape.transposeRhs, shape.batch * m, n, k, T(1), lhs,
                    lda, rhs, ldb, T(0), out, n);
    return;
  }
  const int64_t rhsBatchStride = shape.batchedRhs ? k * n : 0;
  for (int64_t b = 0; b < shape.batch; ++b)
    detail::gemm<T>(shape.transposeLhs, shape.transposeRhs, m, n, k, T(1),
                    lhs + b * m * k, lda, rhs + b * rhsBatchStride, ldb, T(0),
                    out + b * m * n, n);
}

template <typename T>
void matmulWgrad(const T *x, const T *dy, T *dw, int64_t rows, int64_t k,
                 int64_t n) {
  const char *op = "matmul_wgrad";
  detail::checkAtLeast(op, "rows", rows, 0);
  detail::checkAtLeast(op, "k", k, 0);
  detail::checkAtLeast(op, "n", n, 0);
  detail::gemm<T>(true, false, k, n, rows, T(1), x, k, dy, n, T(0), dw, n);
}

#define INSTANTIATE(T)                                                         \
  template void matmul<T>(const T *, const T *, T *, const MatmulShape &);     \
  template void matmulWgrad<T>(const T *, const T *, T *, int64_t, int64_t,    \
                               int64_t);
AUTOSHARD_FOR_EACH_FLOAT(INSTANTIATE)

} // namespace autoshard::runtime::cpu
