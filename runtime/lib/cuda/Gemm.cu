//===- Gemm.cu - tfm.matmul and tfm.matmul_wgrad through cuBLAS -----------===//
//
// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so each
// product is one cublasGemmEx (or strided-batched) call with the operands
// swapped. f32 computes with CUBLAS_COMPUTE_32F (or the TF32 / bf16 tensor-
// core modes of F32GemmMode); bf16 takes bf16 inputs and outputs with fp32
// accumulation (CUBLAS_COMPUTE_32F). Shapes as the CPU kernels
// (runtime/include/autoshard/runtime/cpu/Matmul.h).
//
// A fused epilogue (rt-fuse-epilogues: a third argument) is the same GEMM
// with beta = 1 over a result that already holds the addend: a device copy
// of it first (none when it is the result itself, in place), or, for a
// bias, the bias written into every row. The gelu epilogues are the GEMM
// followed by the gelu / gelu_grad kernel on the product (cuBLASLt's GELU
// epilogues are the tanh form only; the exact form is the default here).
//
//===----------------------------------------------------------------------===//

#include "CudaCommon.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <stdexcept>

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
  float beta = 0.0f; ///< 1 adds the product to what C holds.
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

/// C[b] = op(A[b]) op(B[b]) + beta C[b] in row-major terms; see the file
/// comment.
void runGemm(cublasHandle_t h, const Gemm &g, const void *a, const void *b,
             void *c) {
  if (g.m == 0 || g.n == 0)
    return;
  const float one = 1.0f, beta = g.beta;
  cublasOperation_t opA = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (g.batch == 1)
    AUTOSHARD_CUBLAS(cublasGemmEx(h, opB, opA, g.n, g.m, g.k, &one, b, g.type,
                                  g.ldb, a, g.type, g.lda, &beta, c, g.type,
                                  g.ldc, g.compute, CUBLAS_GEMM_DEFAULT));
  else
    AUTOSHARD_CUBLAS(cublasGemmStridedBatchedEx(
        h, opB, opA, g.n, g.m, g.k, &one, b, g.type, g.ldb, g.strideB, a,
        g.type, g.lda, g.strideA, &beta, c, g.type, g.ldc, g.strideC, g.batch,
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

/// out[r, j] = bias[j] for every row r of `total / n`.
template <typename T>
__global__ void fillRowsKernel(const T *bias, T *out, int64_t total,
                               int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = bias[i % n];
}

/// Whether device ranges [a, a + na) and [b, b + nb) bytes meet.
bool overlaps(const void *a, int64_t na, const void *b, int64_t nb) {
  auto at = [](const void *p, int64_t off) {
    return reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(off);
  };
  return na > 0 && nb > 0 && at(a, 0) < at(b, nb) && at(b, 0) < at(a, na);
}

/// The matmul `g` (beta = 1) over a result prefilled with the addend
/// p[2]: args lhs, rhs, addend; result p[3].
BoundKernel bindGemmEpilogue(const KernelSignature &sig, Gemm g,
                             MatmulEpilogue epilogue) {
  const CudaContext &ctx = currentContext();
  cublasHandle_t h = ctx.blas;
  cudaStream_t s = ctx.stream;
  g.beta = 1.0f;
  bool bias = epilogue == MatmulEpilogue::Bias;
  int64_t outBytes = sig.results[0].bytes(), n = sig.args[2].numel();
  int64_t lhsBytes = sig.args[0].bytes(), rhsBytes = sig.args[1].bytes();
  int64_t addBytes = sig.args[2].bytes(), total = sig.results[0].numel();
  unsigned blocks = std::min<unsigned>(gridFor(total, 256), 65535u * 8);
  bool isBf16 = sig.args[0].dtype == DType::BF16;
  return [=](void *const *p) {
    if (overlaps(p[3], outBytes, p[0], lhsBytes) ||
        overlaps(p[3], outBytes, p[1], rhsBytes))
      throw std::invalid_argument(
          "matmul: the result shares memory with lhs or rhs");
    if ((bias || p[2] != p[3]) && overlaps(p[3], outBytes, p[2], addBytes))
      throw std::invalid_argument("matmul: the result shares memory with the "
                                  "addend without being it");
    if (total == 0)
      return;
    if (!bias) {
      copyAsync(p[3], p[2], outBytes, s);
    } else if (isBf16) {
      fillRowsKernel<bf16>
          <<<blocks, 256, 0, s>>>(in<bf16>(p[2]), out<bf16>(p[3]), total, n);
      AUTOSHARD_CUDA_LAUNCHED();
    } else {
      fillRowsKernel<float>
          <<<blocks, 256, 0, s>>>(in<float>(p[2]), out<float>(p[3]), total, n);
      AUTOSHARD_CUDA_LAUNCHED();
    }
    runGemm(h, g, p[0], p[1], p[3]);
  };
}

/// The matmul `g` and then gelu (p: lhs, rhs, out[, pre]) or gelu_grad
/// (p: lhs, rhs, x, dx) on its product, in place or from the pre-activation.
BoundKernel bindGemmActivation(const KernelSignature &sig, const Gemm &g,
                               const MatmulDims &d) {
  const CudaContext &ctx = currentContext();
  cublasHandle_t h = ctx.blas;
  KernelSignature act = sig;
  act.op = d.epilogue == MatmulEpilogue::Gelu ? "gelu" : "gelu_grad";
  act.args.assign(d.epilogue == MatmulEpilogue::Gelu ? 1 : 2, sig.results[0]);
  act.results.assign(1, sig.results[0]);
  int64_t outBytes = sig.results[0].bytes();
  int64_t lhsBytes = sig.args[0].bytes(), rhsBytes = sig.args[1].bytes();
  if (d.epilogue == MatmulEpilogue::Gelu) {
    BoundKernel gelu = bindGelu(act);
    bool keep = d.keepsPreActivation;
    return [=](void *const *p) {
      void *product = keep ? p[3] : p[2];
      if (overlaps(p[2], outBytes, p[0], lhsBytes) ||
          overlaps(p[2], outBytes, p[1], rhsBytes) ||
          overlaps(product, outBytes, p[0], lhsBytes) ||
          overlaps(product, outBytes, p[1], rhsBytes) ||
          (keep && overlaps(p[2], outBytes, p[3], outBytes)))
        throw std::invalid_argument("matmul: a result shares memory with lhs, "
                                    "rhs or the other result");
      runGemm(h, g, p[0], p[1], product);
      void *ops[] = {product, p[2]};
      gelu(ops);
    };
  }
  BoundKernel geluGrad = bindGeluGrad(act);
  return [=](void *const *p) {
    if (overlaps(p[3], outBytes, p[0], lhsBytes) ||
        overlaps(p[3], outBytes, p[1], rhsBytes) ||
        overlaps(p[3], outBytes, p[2], outBytes))
      throw std::invalid_argument(
          "matmul: the result shares memory with lhs, rhs or x");
    runGemm(h, g, p[0], p[1], p[3]);
    void *ops[] = {p[3], p[2], p[3]};
    geluGrad(ops);
  };
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
  if (d.epilogue == MatmulEpilogue::Gelu ||
      d.epilogue == MatmulEpilogue::GeluGrad)
    return bindGemmActivation(sig, g, d);
  if (d.epilogue != MatmulEpilogue::None)
    return bindGemmEpilogue(sig, g, d.epilogue);
  if (batch == 0)
    return [](void *const *) {};
  return bindGemm(sig, g);
}

BoundKernel bindMatmulWgrad(const KernelSignature &sig) {
  using Op = ops::MatmulWgrad;
  OperandIndex at(sig);
  const TensorType &x = sig.arg(Op::x);
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
    int64_t bytes = sig.result(Op::dw).bytes();
    cudaStream_t s = currentContext().stream;
    return [=](void *const *p) {
      AUTOSHARD_CUDA(cudaMemsetAsync(p[at(Op::dw)], 0, bytes, s));
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
