//===- Blas.cpp - Typed row-major GEMM over oneDNN and OpenBLAS -----------===//

#include "Blas.h"

#include "Check.h"

#include <cblas.h>
#if AUTOSHARD_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

namespace autoshard::runtime::cpu::detail {
namespace {

blasint toBlasInt(int64_t value) {
  if (value < 0 || value > std::numeric_limits<blasint>::max())
    fail("gemm",
         "size " + std::to_string(value) + " does not fit BLAS's integer type");
  return static_cast<blasint>(value);
}

CBLAS_TRANSPOSE toTrans(bool transpose) {
  return transpose ? CblasTrans : CblasNoTrans;
}

template <typename T>
void scaleMatrix(int64_t m, int64_t n, T beta, T *c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
}

// Overloads picking the CBLAS routine of the element type.
void blasGemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb,
              blasint m, blasint n, blasint k, float alpha, const float *a,
              blasint lda, const float *b, blasint ldb, float beta, float *c,
              blasint ldc) {
  cblas_sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void blasGemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb,
              blasint m, blasint n, blasint k, double alpha, const double *a,
              blasint lda, const double *b, blasint ldb, double beta, double *c,
              blasint ldc) {
  cblas_dgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

} // namespace

bool floatGemmOnOneDnn() {
#if AUTOSHARD_HAVE_ONEDNN
  static const bool onOneDnn = [] {
    const char *v = std::getenv("AUTOSHARD_CPU_GEMM");
    if (!v || !*v || std::string_view(v) == "onednn")
      return true;
    if (std::string_view(v) == "openblas")
      return false;
    fail("gemm", std::string("AUTOSHARD_CPU_GEMM='") + v +
                     "': expected 'onednn' or 'openblas'");
  }();
  return onOneDnn;
#else
  return false;
#endif
}

template <typename T>
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, T alpha,
          const T *a, int64_t lda, const T *b, int64_t ldb, T beta, T *c,
          int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (k == 0)
    return scaleMatrix(m, n, beta, c, ldc);
#if AUTOSHARD_HAVE_ONEDNN
  if constexpr (std::is_same_v<T, float>) {
    if (floatGemmOnOneDnn()) {
      // Row-major, like the CBLAS call below; dnnl_dim_t is 64-bit.
      dnnl_status_t st = dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m,
                                    n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      if (st != dnnl_success)
        fail("gemm", "dnnl_sgemm failed with status " + std::to_string(st) +
                         " (m " + std::to_string(m) + ", n " +
                         std::to_string(n) + ", k " + std::to_string(k) + ")");
      return;
    }
  }
#endif
  blasGemm(CblasRowMajor, toTrans(transA), toTrans(transB), toBlasInt(m),
           toBlasInt(n), toBlasInt(k), alpha, a, toBlasInt(lda), b,
           toBlasInt(ldb), beta, c, toBlasInt(ldc));
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float,
                          const float *, int64_t, const float *, int64_t, float,
                          float *, int64_t);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double,
                           const double *, int64_t, const double *, int64_t,
                           double, double *, int64_t);

} // namespace autoshard::runtime::cpu::detail
