//===- CudaCommon.h - Helpers of the CUDA kernels -------------*- C++ -*-===//
//
// The per-backend context the binders capture (stream, cuBLAS handle, error
// word), error checking, element-type dispatch (f32 and bf16; ids i32 and
// i64) and launch helpers. The operand checks are the backend-neutral ones
// of autoshard/runtime/KernelChecks.h (runtime core), shared with the CPU
// backend.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_LIB_CUDA_CUDACOMMON_H
#define AUTOSHARD_RUNTIME_LIB_CUDA_CUDACOMMON_H

#include "autoshard/runtime/Backend.h"
#include "autoshard/runtime/KernelChecks.h"
#include "autoshard/runtime/cuda/CudaBackend.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

namespace autoshard::runtime::cuda {

using bf16 = __nv_bfloat16;

/// Codes a kernel writes into the backend's device error word (the first
/// one wins); the host reports them at the next synchronisation.
enum ErrorCode : int {
  kErrNone = 0,
  kErrEmbeddingId = 1,
  kErrLabel = 2,
  kErrExpertId = 3,
  kErrNegativeId = 4,
  kErrDropoutRange = 5,
  kErrAdamStep = 6,
  kErrMoeOverflow = 7,
};

/// What a bound kernel needs from its backend.
struct CudaContext {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  F32GemmMode f32Gemm = F32GemmMode::Fp32;
  int *errorWord = nullptr; ///< Device int, kErrNone when all is well.
  int numSMs = 1;
};

/// The context of the backend that is binding (set by CudaBackend::bind for
/// the duration of a binder call; binders capture it).
const CudaContext &currentContext();

/// Throws std::runtime_error("cuda: <what>: <error string>").
void throwCuda(cudaError_t err, const char *what, const char *file, int line);
void throwCublas(cublasStatus_t st, const char *what, const char *file,
                 int line);

#define AUTOSHARD_CUDA(call)                                                   \
  do {                                                                         \
    cudaError_t autoshard_err_ = (call);                                       \
    if (autoshard_err_ != cudaSuccess)                                         \
      ::autoshard::runtime::cuda::throwCuda(autoshard_err_, #call, __FILE__,   \
                                            __LINE__);                         \
  } while (0)
#define AUTOSHARD_CUBLAS(call)                                                 \
  do {                                                                         \
    cublasStatus_t autoshard_st_ = (call);                                     \
    if (autoshard_st_ != CUBLAS_STATUS_SUCCESS)                                \
      ::autoshard::runtime::cuda::throwCublas(autoshard_st_, #call, __FILE__,  \
                                              __LINE__);                       \
  } while (0)
/// Checks the launch that just happened.
#define AUTOSHARD_CUDA_LAUNCHED() AUTOSHARD_CUDA(cudaPeekAtLastError())

/// Device scratch memory owned by a bound kernel (outside the static memory
/// plan, like the CPU backend's communication staging buffers).
class DeviceBuffer {
public:
  explicit DeviceBuffer(int64_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  void *data() const { return ptr; }
  template <typename T> T *as() const { return static_cast<T *>(ptr); }
  int64_t bytes() const { return size; }

private:
  void *ptr = nullptr;
  int64_t size = 0;
};
using Scratch = std::shared_ptr<DeviceBuffer>;
inline Scratch scratch(int64_t bytes) {
  return std::make_shared<DeviceBuffer>(bytes);
}

/// Blocks of `threads` covering `n` items (at least 1, at most 2^31 - 1).
unsigned gridFor(int64_t n, int threads);

/// Copies `bytes` from device memory `src` to `dst` on stream `s` (nothing
/// when empty or in place).
void copyAsync(void *dst, const void *src, int64_t bytes, cudaStream_t s);

/// Casts of untyped operand pointers (e.g. variadic members, `o.at(...)`).
template <typename T> const T *in(void *p) { return static_cast<const T *>(p); }
template <typename T> T *out(void *p) { return static_cast<T *>(p); }

/// Threads per block of the grid-stride kernels (AUTOSHARD_GRID_LOOP), and
/// their blocks for `n` items: one item a thread, at most 65535 * 8 blocks
/// (the loop covers the rest).
constexpr int kGridLoopThreads = 256;
inline unsigned gridLoopBlocks(int64_t n) {
  return std::min<unsigned>(gridFor(n, kGridLoopThreads), 65535u * 8);
}

/// Launches the grid-stride `kernel` over `n` items on stream `s`
/// (gridLoopBlocks(n) blocks of kGridLoopThreads, no shared memory) with
/// `args` and checks the launch; nothing when `n` is 0.
template <typename... Params, typename... Args>
void launchGridLoop(int64_t n, cudaStream_t s, void (*kernel)(Params...),
                    Args... args) {
  if (n == 0)
    return;
  kernel<<<gridLoopBlocks(n), kGridLoopThreads, 0, s>>>(args...);
  AUTOSHARD_CUDA_LAUNCHED();
}

namespace kernels {

// The operand checks (argName, resultName, expectType, expectScalar,
// expectRank, expectExactRank, expectResultsLikeArg0, expectAllLikeArg0,
// product, typeOf, withId) and the per-op checks.
using namespace ::autoshard::runtime::checks;

/// withFloat(sig, dtype, what, fn) calls fn(T{}) with T = float or bf16
/// for an f32/bf16 `dtype`; fails naming `what` otherwise.
/// withFloat.bind(sig, slot, run) binds a kernel of the slot's type.
inline constexpr FloatDispatch<bf16> withFloat{DType::BF16, "cuda"};

/// The CUDA binder of op `Op` (OpTable.h): one specialization per op, in
/// the .cu file of its family.
template <typename Op> BoundKernel bind(const KernelSignature &sig);

/// Registers `bind<Op>` under each Op's name.
template <typename... Op> void addBinders(KernelTable &table) {
  (table.add(Op::kName, bind<Op>), ...);
}

/// tfm.gelu / tfm.gelu_grad (Elementwise.cu), also the second half of the
/// matmul's fused gelu epilogues (Gemm.cu).
template <> BoundKernel bind<ops::Gelu>(const KernelSignature &sig);
template <> BoundKernel bind<ops::GeluGrad>(const KernelSignature &sig);

/// Calls fn(T{}, I{}) (returning the BoundKernel) with T the float type of
/// slot `typed` (withFloat) and I the id type of slot `ids` (withId), in
/// that order; the messages name the slots.
template <typename FloatSlot, typename IdSlot, typename Fn>
BoundKernel withFloatAndId(const KernelSignature &sig, FloatSlot typed,
                           IdSlot ids, Fn &&fn) {
  return withFloat(
      sig, sig.type(typed).dtype, std::string(typed.name), [&](auto t) {
        return withId(sig, sig.type(ids).dtype, std::string(ids.name),
                      [&](auto i) -> BoundKernel { return fn(t, i); });
      });
}

/// Registration of each op family (one .cu file each).
void registerElementwiseKernels(KernelTable &table);
void registerGemmKernels(KernelTable &table);
void registerNormKernels(KernelTable &table);
void registerSequenceKernels(KernelTable &table);
void registerAttentionKernels(KernelTable &table);
void registerLossKernels(KernelTable &table);
void registerOptimizerKernels(KernelTable &table);
void registerMoeKernels(KernelTable &table);
void registerCommKernels(KernelTable &table);
void registerCastKernels(KernelTable &table);

} // namespace kernels
} // namespace autoshard::runtime::cuda

#endif // AUTOSHARD_RUNTIME_LIB_CUDA_CUDACOMMON_H
