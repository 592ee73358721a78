//===- Gemm.cu - tfm.matmul and tfm.matmul_wgrad through cuBLAS -----------===//
//
// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so each
// product is one cublasGemmEx (or strided-batched) call with the operands
// swapped. f32 computes with CUBLAS_COMPUTE_32F (or the TF32 / bf16 tensor-
// core modes of F32GemmMode); bf16 takes bf16 inputs and outputs with fp32
// accumulation (CUBLAS_COMPUTE_32F). Shapes as the CPU kernels
// (runtime/include/autoshard/runtime/cpu/Matmul.h).
//
//===----------------------------------------------------------------------===//

#include "CudaCommon.h"

#include <climits>

namespace autoshard::runtime::cuda::kernels {
namespace {

/// One (possibly batched) row-major GEMM, resolved at bind time.
struct Gemm {
  bool transA = false, transB = false;
  int m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  int batch = 1;
  long long strideA = 0, strideB = 0, strideC = 0;
  cudaDataType_t type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
};

int toInt(const KernelSignature &sig, int64_t v, const char *what) {
  if (v < 0 || v > INT_MAX)
    sig.fail(std::string(what) + " " + std::to_string(v) +
             " does not fit cuBLAS's int");
  return static_cast<int>(v);
}

cublasComputeType_t computeFor(DType dtype, F32GemmMode mode) {
  if (dtype == DType::BF16)
    return CUBLAS_COMPUTE_32F;
  switch (mode) {
  case F32GemmMode::Tf32:
    return CUBLAS_COMPUTE_32F_FAST_TF32;
  case F32GemmMode::Bf16:
    return CUBLAS_COMPUTE_32F_FAST_16BF;
  default:
    return CUBLAS_COMPUTE_32F;
  }
}

/// C[b] = op(A[b]) op(B[b]) in row-major terms; see the file comment.
void runGemm(cublasHandle_t h, const Gemm &g, const void *a, const void *b,
             void *c) {
  if (g.m == 0 || g.n == 0)
    return;
  const float one = 1.0f, zero = 0.0f;
  cublasOperation_t opA = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (g.batch == 1)
    AUTOSHARD_CUBLAS(cublasGemmEx(h, opB, opA, g.n, g.m, g.k, &one, b, g.type,
                                  g.ldb, a, g.type, g.lda, &zero, c, g.type,
                                  g.ldc, g.compute, CUBLAS_GEMM_DEFAULT));
  else
    AUTOSHARD_CUBLAS(cublasGemmStridedBatchedEx(
        h, opB, opA, g.n, g.m, g.k, &one, b, g.type, g.ldb, g.strideB, a,
        g.type, g.lda, g.strideA, &zero, c, g.type, g.ldc, g.strideC, g.batch,
        g.compute, CUBLAS_GEMM_DEFAULT));
}

void checkFloat(const KernelSignature &sig, DType dtype) {
  if (dtype != DType::F32 && dtype != DType::BF16)
    sig.fail("operands have element type " + std::string(dtypeName(dtype)) +
             "; the cuda backend multiplies f32 or bf16");
}

BoundKernel bindGemm(const KernelSignature &sig, Gemm g) {
  const CudaContext &ctx = currentContext();
  cublasHandle_t h = ctx.blas;
  return [h, g](void *const *p) { runGemm(h, g, p[0], p[1], p[2]); };
}

BoundKernel bindMatmul(const KernelSignature &sig) {
  const TensorType &lhs = sig.args[0];
  MatmulDims d = checkMatmul(sig);
  bool tl = d.transposeLhs, tr = d.transposeRhs, batchedRhs = d.batchedRhs;
  int64_t batch = d.batch, m = d.m, k = d.k, n = d.n;
  checkFloat(sig, lhs.dtype);

  Gemm g;
  g.type = lhs.dtype == DType::BF16 ? CUDA_R_16BF : CUDA_R_32F;
  g.compute = computeFor(lhs.dtype, currentContext().f32Gemm);
  g.transA = tl;
  g.transB = tr;
  g.lda = toInt(sig, tl ? m : k, "lda");
  g.ldb = toInt(sig, tr ? k : n, "ldb");
  g.ldc = toInt(sig, n, "ldc");
  g.n = toInt(sig, n, "n");
  g.k = toInt(sig, k, "k");
  if (!batchedRhs && !tl) {
    // [batch * m, k] x [k, n]: one GEMM over all rows.
    g.m = toInt(sig, batch * m, "rows");
  } else {
    g.m = toInt(sig, m, "m");
    g.batch = toInt(sig, batch, "batch");
    g.strideA = m * k;
    g.strideB = batchedRhs ? k * n : 0;
    g.strideC = m * n;
  }
  if (batch == 0)
    return [](void *const *) {};
  return bindGemm(sig, g);
}

BoundKernel bindMatmulWgrad(const KernelSignature &sig) {
  const TensorType &x = sig.args[0];
  MatmulWgradDims d = checkMatmulWgrad(sig);
  int64_t rows = d.rows, k = d.k, n = d.n;
  checkFloat(sig, x.dtype);
  // dw [k, n] = x^T [k, rows] dy [rows, n].
  Gemm g;
  g.type = x.dtype == DType::BF16 ? CUDA_R_16BF : CUDA_R_32F;
  g.compute = computeFor(x.dtype, currentContext().f32Gemm);
  g.transA = true;
  g.transB = false;
  g.m = toInt(sig, k, "k");
  g.n = toInt(sig, n, "n");
  g.k = toInt(sig, rows, "rows");
  g.lda = toInt(sig, k, "lda");
  g.ldb = toInt(sig, n, "ldb");
  g.ldc = toInt(sig, n, "ldc");
  if (rows == 0) {
    int64_t bytes = sig.results[0].bytes();
    cudaStream_t s = currentContext().stream;
    return [=](void *const *p) {
      AUTOSHARD_CUDA(cudaMemsetAsync(p[2], 0, bytes, s));
    };
  }
  return bindGemm(sig, g);
}

} // namespace

void registerGemmKernels(KernelTable &t) {
  t.add("matmul", bindMatmul);
  t.add("matmul_wgrad", bindMatmulWgrad);
}

} // namespace autoshard::runtime::cuda::kernels
