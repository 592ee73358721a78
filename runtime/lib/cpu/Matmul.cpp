//===- Matmul.cpp - CPU GEMM kernels --------------------------------------===//

#include "autoshard/runtime/cpu/Matmul.h"

#include "autoshard/runtime/cpu/Activation.h"

#include "Blas.h"
#include "Check.h"
#include "Instantiate.h"
#include "Parallel.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

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

int64_t epiloguePanelRows(int64_t n, int64_t elementBytes) {
  // A panel's result (~128 KiB) stays in a core's L2 between its GEMM and
  // its activation, and the rows still split over a few threads.
  constexpr int64_t kPanelBytes = 128 * 1024;
  const int64_t rowBytes = std::max<int64_t>(1, n * elementBytes);
  return std::clamp<int64_t>(kPanelBytes / rowBytes, 8, 1024);
}

namespace {

/// Runs gemm then epilogue(rowBegin, rowEnd) over panels of rows of the
/// result (f32, single-GEMM layout), or over the whole result otherwise.
/// `dst` receives the product; the caller has checked the shape. Only
/// oneDNN's sgemm gives a row the same bits whatever the row count: OpenBLAS
/// (its dgemm, the f64 oracle, and its sgemm on some cores, e.g. Haswell or
/// a CPU it reads as Prescott) rounds rows differently for another row
/// count, so there it keeps one GEMM and the epilogue stays matmul() then
/// the activation exactly.
template <typename T, typename Epilogue>
void gemmPanels(const T *lhs, const T *rhs, T *dst, const MatmulShape &shape,
                Epilogue epilogue) {
  const int64_t rows = shape.batch * shape.m, n = shape.n, k = shape.k;
  if (!std::is_same_v<T, float> || !detail::floatGemmOnOneDnn() ||
      shape.batchedRhs || shape.transposeLhs) {
    gemmBatches(lhs, rhs, dst, shape, T(0));
    epilogue(int64_t(0), rows);
    return;
  }
  const int64_t ldb = shape.transposeRhs ? k : n;
  // Each panel's GEMM runs on the thread that then activates it (the
  // libraries go serial inside a parallel region); one panel uses them all.
  detail::parallelChunks(
      rows, epiloguePanelRows(n, sizeof(T)),
      [&](int64_t, int64_t begin, int64_t end) {
        detail::gemm<T>(false, shape.transposeRhs, end - begin, n, k, T(1),
                        lhs + begin * k, k, rhs, ldb, T(0), dst + begin * n, n);
        epilogue(begin, end);
      });
}

template <typename T>
void checkNoOverlap(const char *op, const char *what, const T *p, int64_t numel,
                    const T *lhs, const T *rhs, const MatmulShape &shape) {
  const int64_t numRhs =
      (shape.batchedRhs ? shape.batch : 1) * shape.k * shape.n;
  if (overlaps(p, numel, lhs, shape.batch * shape.m * shape.k) ||
      overlaps(p, numel, rhs, numRhs))
    detail::fail(op,
                 std::string("the ") + what + " shares memory with lhs or rhs");
}

} // namespace

template <typename T>
void matmulGelu(const T *lhs, const T *rhs, T *pre, T *out,
                const MatmulShape &shape, bool tanhApprox) {
  const char *op = "matmul";
  checkShape(op, shape);
  const int64_t numOut = shape.batch * shape.m * shape.n, n = shape.n;
  checkNoOverlap(op, "result", out, numOut, lhs, rhs, shape);
  if (pre) {
    checkNoOverlap(op, "pre-activation", pre, numOut, lhs, rhs, shape);
    if (overlaps(pre, numOut, out, numOut))
      detail::fail(op, "the pre-activation shares memory with the result");
  }
  T *dst = pre ? pre : out;
  gemmPanels(lhs, rhs, dst, shape, [&](int64_t begin, int64_t end) {
    gelu<T>(dst + begin * n, out + begin * n, (end - begin) * n, tanhApprox);
  });
}

template <typename T>
void matmulGeluGrad(const T *lhs, const T *rhs, const T *x, T *dx,
                    const MatmulShape &shape, bool tanhApprox) {
  const char *op = "matmul";
  checkShape(op, shape);
  const int64_t numOut = shape.batch * shape.m * shape.n, n = shape.n;
  checkNoOverlap(op, "result", dx, numOut, lhs, rhs, shape);
  if (overlaps(dx, numOut, x, numOut))
    detail::fail(op, "the result shares memory with the pre-activation x");
  gemmPanels(lhs, rhs, dx, shape, [&](int64_t begin, int64_t end) {
    geluGrad<T>(dx + begin * n, x + begin * n, dx + begin * n,
                (end - begin) * n, tanhApprox);
  });
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
  template void matmulGelu<T>(const T *, const T *, T *, T *,                  \
                              const MatmulShape &, bool);                      \
  template void matmulGeluGrad<T>(const T *, const T *, const T *, T *,        \
                                  const MatmulShape &, bool);                  \
  template void matmulWgrad<T>(const T *, const T *, T *, int64_t, int64_t,    \
                               int64_t);
AUTOSHARD_FOR_EACH_FLOAT(INSTANTIATE)

} // namespace autoshard::runtime::cpu
