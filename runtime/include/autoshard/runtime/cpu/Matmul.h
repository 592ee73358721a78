//===- Matmul.h - CPU GEMM kernels (tfm.matmul, tfm.matmul_wgrad) -*- C++ -*-//
//
// All tensors are dense and row-major. Every product is one or more GEMM
// calls (oneDNN's sgemm or OpenBLAS's sgemm/dgemm, Blas.h).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_CPU_MATMUL_H
#define AUTOSHARD_RUNTIME_CPU_MATMUL_H

#include <cstdint>

namespace autoshard::runtime::cpu {

/// Shape of tfm.matmul. lhs is [batch, m, k] ([batch, k, m] if transposeLhs),
/// where batch is the product of lhs's leading dims (1 for a rank-2 lhs). rhs
/// is [k, n] ([n, k] if transposeRhs), shared by every batch, or, with
/// batchedRhs, [batch, k, n] ([batch, n, k]). The result is [batch, m, n].
struct MatmulShape {
  int64_t batch = 1;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  bool transposeLhs = false;
  bool transposeRhs = false;
  bool batchedRhs = false;
};

/// tfm.matmul: out[b] = op(lhs[b]) * op(rhs[b or shared]), op = optional
/// transpose. A shared rhs with an untransposed lhs is a single GEMM with
/// batch * m rows. Throws std::invalid_argument on negative sizes.
template <typename T>
void matmul(const T *lhs, const T *rhs, T *out, const MatmulShape &shape);

/// What a fused matmul adds to its product (the epilogue of
/// rt-fuse-epilogues, docs/artifact-format.md).
enum class MatmulAddend {
  Full, ///< The result's shape [batch, m, n]; it may be `out` (in place).
  Bias, ///< [n], added to every row of the result.
};

/// tfm.matmul followed by an add, in one GEMM: out = matmul(lhs, rhs) +
/// addend. Copies the addend into out (a full one unless it is out; a bias
/// into every row), then runs matmul()'s GEMMs with beta = 1. Throws
/// std::invalid_argument when out shares memory with lhs or rhs (the GEMM
/// would overwrite what it reads), or with a bias or a full addend that is
/// not out itself.
template <typename T>
void matmulAdd(const T *lhs, const T *rhs, const T *addend, T *out,
               const MatmulShape &shape, MatmulAddend kind);

/// Rows of one panel of a fused activation epilogue (matmulGelu,
/// matmulGeluGrad): a function of n and the element size only, so the
/// panels, and the results, do not depend on the thread count.
int64_t epiloguePanelRows(int64_t n, int64_t elementBytes);

/// tfm.matmul followed by tfm.gelu, fused: pre = matmul(lhs, rhs) and out =
/// gelu(pre) (exact, or the tanh form with tanhApprox; as cpu::gelu()).
/// `pre` may be null when nothing else reads the pre-activation. In f32,
/// for a shared rhs and an untransposed lhs the batch * m rows run in panels of
/// epiloguePanelRows(n) rows spread over the threads, each GEMM'd and then
/// activated while it is still in the core's cache; other layouts run
/// matmul() and then the activation. Element for element the same as
/// matmul() + gelu() whenever the GEMM library's results do not depend on
/// the row count (checked by MatmulTest). Throws std::invalid_argument on
/// negative sizes or when out or pre shares memory with lhs or rhs.
template <typename T>
void matmulGelu(const T *lhs, const T *rhs, T *pre, T *out,
                const MatmulShape &shape, bool tanhApprox);

/// tfm.matmul followed by tfm.gelu_grad, fused: dx = gelu_grad(dy = matmul(
/// lhs, rhs), x) = gelu'(x) * matmul(lhs, rhs), x of the result's shape (the
/// pre-activation saved by the forward). Panels as matmulGelu(). Throws
/// std::invalid_argument on negative sizes or when dx shares memory with
/// lhs, rhs or x.
template <typename T>
void matmulGeluGrad(const T *lhs, const T *rhs, const T *x, T *dx,
                    const MatmulShape &shape, bool tanhApprox);

/// tfm.matmul_wgrad, the weight gradient of a linear layer: x is [rows, k],
/// dy is [rows, n] (rows = product of the shared leading dims); writes
/// dw [k, n] = x^T dy, i.e. the sum over all rows of the outer products.
template <typename T>
void matmulWgrad(const T *x, const T *dy, T *dw, int64_t rows, int64_t k,
                 int64_t n);

} // namespace autoshard::runtime::cpu

#endif // AUTOSHARD_RUNTIME_CPU_MATMUL_H
