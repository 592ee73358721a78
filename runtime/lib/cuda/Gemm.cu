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

/// The GEMM `g` of operands `a` and `b` into result `c`.
BoundKernel bindGemm(const KernelSignature &sig, Gemm g, ArgSlot a, ArgSlot b,
                     ResultSlot c) {
  const CudaContext &ctx = currentContext();
  cublasHandle_t h = ctx.blas;
  return bindOperands(sig,
                      [=](Operands o) { runGemm(h, g, o[a], o[b], o[c]); });
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

/// The matmul `g` (beta = 1) over the result prefilled with the addend (the
/// third arg).
BoundKernel bindGemmEpilogue(const KernelSignature &sig, Gemm g,
                             MatmulEpilogue epilogue) {
  using Op = ops::Matmul;
  const CudaContext &ctx = currentContext();
  cublasHandle_t h = ctx.blas;
  cudaStream_t s = ctx.stream;
  g.beta = 1.0f;
  bool bias = epilogue == MatmulEpilogue::Bias;
  const TensorType &result = sig.result(Op::result);
  int64_t outBytes = result.bytes(), n = sig.arg(Op::addend).numel();
  int64_t lhsBytes = sig.arg(Op::lhs).bytes(),
          rhsBytes = sig.arg(Op::rhs).bytes();
  int64_t addBytes = sig.arg(Op::addend).bytes(), total = result.numel();
  bool isBf16 = sig.arg(Op::lhs).dtype == DType::BF16;
  return bindOperands(sig, [=](Operands o) {
    void *lhs = o[Op::lhs], *rhs = o[Op::rhs], *addend = o[Op::addend],
         *out = o[Op::result];
    if (overlaps(out, outBytes, lhs, lhsBytes) ||
        overlaps(out, outBytes, rhs, rhsBytes))
      throw std::invalid_argument(
          "matmul: the result shares memory with lhs or rhs");
    if ((bias || addend != out) && overlaps(out, outBytes, addend, addBytes))
      throw std::invalid_argument("matmul: the result shares memory with the "
                                  "addend without being it");
    if (total == 0)
      return;
    if (!bias)
      copyAsync(out, addend, outBytes, s);
    else if (isBf16)
      launchGridLoop(total, s, fillRowsKernel<bf16>, o.in<bf16>(Op::addend),
                     o.out<bf16>(Op::result), total, n);
    else
      launchGridLoop(total, s, fillRowsKernel<float>, o.in<float>(Op::addend),
                     o.out<float>(Op::result), total, n);
    runGemm(h, g, lhs, rhs, out);
  });
}

/// The matmul `g` and then gelu (into result, from preact when kept) or
/// gelu_grad (the addend slot holds its x; into result) on its product, in
/// place or from the pre-activation.
BoundKernel bindGemmActivation(const KernelSignature &sig, const Gemm &g,
                               const MatmulDims &d) {
  using Op = ops::Matmul;
  const CudaContext &ctx = currentContext();
  cublasHandle_t h = ctx.blas;
  const TensorType &result = sig.result(Op::result);
  KernelSignature act = sig;
  act.op = d.epilogue == MatmulEpilogue::Gelu ? "gelu" : "gelu_grad";
  act.args.assign(d.epilogue == MatmulEpilogue::Gelu ? 1 : 2, result);
  act.results.assign(1, result);
  int64_t outBytes = result.bytes();
  int64_t lhsBytes = sig.arg(Op::lhs).bytes(),
          rhsBytes = sig.arg(Op::rhs).bytes();
  if (d.epilogue == MatmulEpilogue::Gelu) {
    BoundKernel gelu = bind<ops::Gelu>(act);
    bool keep = d.keepsPreActivation;
    return bindOperands(sig, [=](Operands o) {
      void *lhs = o[Op::lhs], *rhs = o[Op::rhs], *out = o[Op::result];
      void *product = keep ? o[Op::preact] : out;
      if (overlaps(out, outBytes, lhs, lhsBytes) ||
          overlaps(out, outBytes, rhs, rhsBytes) ||
          overlaps(product, outBytes, lhs, lhsBytes) ||
          overlaps(product, outBytes, rhs, rhsBytes) ||
          (keep && overlaps(out, outBytes, o[Op::preact], outBytes)))
        throw std::invalid_argument("matmul: a result shares memory with lhs, "
                                    "rhs or the other result");
      runGemm(h, g, lhs, rhs, product);
      void *geluOperands[] = {product, out}; // x, y
      gelu(geluOperands);
    });
  }
  BoundKernel geluGrad = bind<ops::GeluGrad>(act);
  return bindOperands(sig, [=](Operands o) {
    void *lhs = o[Op::lhs], *rhs = o[Op::rhs], *x = o[Op::addend],
         *out = o[Op::result];
    if (overlaps(out, outBytes, lhs, lhsBytes) ||
        overlaps(out, outBytes, rhs, rhsBytes) ||
        overlaps(out, outBytes, x, outBytes))
      throw std::invalid_argument(
          "matmul: the result shares memory with lhs, rhs or x");
    runGemm(h, g, lhs, rhs, out);
    void *geluGradOperands[] = {out, x, out}; // dy, x, dx
    geluGrad(geluGradOperands);
  });
}

} // namespace

template <> BoundKernel bind<ops::Matmul>(const KernelSignature &sig) {
  using Op = ops::Matmul;
  const TensorType &lhs = sig.arg(Op::lhs);
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
  return bindGemm(sig, g, Op::lhs, Op::rhs, Op::result);
}

template <> BoundKernel bind<ops::MatmulWgrad>(const KernelSignature &sig) {
  using Op = ops::MatmulWgrad;
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
    return bindOperands(sig, [=](Operands o) {
      AUTOSHARD_CUDA(cudaMemsetAsync(o[Op::dw], 0, bytes, s));
    });
  }
  return bindGemm(sig, g, Op::x, Op::dy, Op::dw);
}

void registerGemmKernels(KernelTable &t) {
  addBinders<ops::Matmul, ops::MatmulWgrad>(t);
}

} // namespace autoshard::runtime::cuda::kernels
