//===- Matmul.cpp - CPU GEMM kernels --------------------------------------===//

#include "autoshard/runtime/cpu/Matmul.h"

#include "Blas.h"
#include "Check.h"
#include "Instantiate.h"

#include <algorithm>
#include <cstdint>

namespace autoshard::runtime::cpu {

namespace {

void checkShape(const char *op, const MatmulShape &shape) {
  detail::checkAtLeast(op, "batch", shape.batch, 0);
  detail::checkAtLeast(op, "m", shape.m, 0);
  detail::checkAtLeast(op, "n", shape.n, 0);
  detail::checkAtLeast(op, "k", shape.k, 0);
}

/// out[b] = op(lhs[b]) op(rhs[b or shared]) + beta * out[b].
template <typename T>
void gemmBatches(const T *lhs, const T *rhs, T *out, const MatmulShape &shape,
                 T beta) {
  const int64_t m = shape.m, n = shape.n, k = shape.k;
  const int64_t lda = shape.transposeLhs ? m : k;
  const int64_t ldb = shape.transposeRhs ? k : n;
  if (!shape.batchedRhs && !shape.transposeLhs) {
    // [batch * m, k] x [k, n]: one GEMM over all rows.
    detail::gemm<T>(false, shape.transposeRhs, shape.batch * m, n, k, T(1), lhs,
                    lda, rhs, ldb, beta, out, n);
    return;
  }
  const int64_t rhsBatchStride = shape.batchedRhs ? k * n : 0;
  for (int64_t b = 0; b < shape.batch; ++b)
    detail::gemm<T>(shape.transposeLhs, shape.transposeRhs, m, n, k, T(1),
                    lhs + b * m * k, lda, rhs + b * rhsBatchStride, ldb, beta,
                    out + b * m * n, n);
}

/// Whether [a, a + na) and [b, b + nb) share an element (none when empty).
template <typename T>
bool overlaps(const T *a, int64_t na, const T *b, int64_t nb) {
  auto lo = [](const T *p) { return reinterpret_cast<uintptr_t>(p); };
  return na > 0 && nb > 0 && lo(a) < lo(b + nb) && lo(b) < lo(a + na);
}

} // namespace

template <typename T>
void matmul(const T *lhs, const T *rhs, T *out, const MatmulShape &shape) {
  checkShape("matmul", shape);
  gemmBatches(lhs, rhs, out, shape, T(0));
}

template <typename T>
void matmulAdd(const T *lhs, const T *rhs, const T *addend, T *out,
               const MatmulShape &shape, MatmulAddend kind) {
  const char *op = "matmul";
  checkShape(op, shape);
  const int64_t rows = shape.batch * shape.m, n = shape.n;
  const int64_t numOut = rows * n;
  const int64_t numRhs = (shape.batchedRhs ? shape.batch : 1) * shape.k * n;
  const bool bias = kind == MatmulAddend::Bias;
  if (overlaps(out, numOut, lhs, shape.batch * shape.m * shape.k) ||
      overlaps(out, numOut, rhs, numRhs))
    detail::fail(op, "the result shares memory with lhs or rhs");
  if ((bias || addend != out) &&
      overlaps(out, numOut, addend, bias ? n : numOut))
    detail::fail(op, std::string("the result shares memory with the ") +
                         (bias ? "bias" : "addend") +
                         " without being it (only an addend may be the "
                         "result itself)");
  if (bias)
    for (int64_t r = 0; r < rows; ++r)
      std::copy(addend, addend + n, out + r * n);
  else if (addend != out)
    std::copy(addend, addend + numOut, out);
  gemmBatches(lhs, rhs, out, shape, T(1));
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
  template void matmulAdd<T>(const T *, const T *, const T *, T *,             \
                             const MatmulShape &, MatmulAddend);               \
  template void matmulWgrad<T>(const T *, const T *, T *, int64_t, int64_t,    \
                               int64_t);
AUTOSHARD_FOR_EACH_FLOAT(INSTANTIATE)

} // namespace autoshard::runtime::cpu
