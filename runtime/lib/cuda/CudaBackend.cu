//===- CudaBackend.cu - Device memory, init and kernel binding ------------===//

#include "autoshard/runtime/Init.h"
#include "autoshard/runtime/cuda/CudaBackend.h"

#include "CudaCommon.h"
#include "DeviceMath.cuh"

#include <cstdlib>
#include <cstring>
#include <new>

namespace autoshard::runtime::cuda {

//===----------------------------------------------------------------------===//
// Errors, scratch, context
//===----------------------------------------------------------------------===//

void throwCuda(cudaError_t err, const char *what, const char *file, int line) {
  (void)cudaGetLastError(); // clear a sticky launch error if possible
  throw std::runtime_error(std::string("cuda: ") + what + ": " +
                           cudaGetErrorString(err) + " (" + file + ":" +
                           std::to_string(line) + ")");
}

void throwCublas(cublasStatus_t st, const char *what, const char *file,
                 int line) {
  throw std::runtime_error(std::string("cublas: ") + what + ": " +
                           cublasGetStatusString(st) + " (" + file + ":" +
                           std::to_string(line) + ")");
}

DeviceBuffer::DeviceBuffer(int64_t bytes) : size(bytes) {
  if (bytes > 0)
    AUTOSHARD_CUDA(cudaMalloc(&ptr, static_cast<size_t>(bytes)));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr)
    cudaFree(ptr);
}

unsigned gridFor(int64_t n, int threads) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks < 1)
    blocks = 1;
  if (blocks > 0x7fffffff)
    blocks = 0x7fffffff;
  return static_cast<unsigned>(blocks);
}

void copyAsync(void *dst, const void *src, int64_t bytes, cudaStream_t s) {
  if (bytes > 0 && dst != src)
    AUTOSHARD_CUDA(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
}

namespace {
thread_local const CudaContext *bindingContext = nullptr;
} // namespace

const CudaContext &currentContext() {
  if (!bindingContext)
    throw std::logic_error("cuda kernel bound outside CudaBackend::bind");
  return *bindingContext;
}

F32GemmMode parseF32GemmMode(const std::string &name) {
  if (name == "fp32" || name == "f32")
    return F32GemmMode::Fp32;
  if (name == "tf32")
    return F32GemmMode::Tf32;
  if (name == "bf16")
    return F32GemmMode::Bf16;
  throw std::invalid_argument("unknown f32 GEMM mode '" + name +
                              "' (expected fp32, tf32 or bf16)");
}

bool deviceAvailable(std::string *why) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    if (why)
      *why = std::string("no usable CUDA device (") + cudaGetErrorString(err) +
             ")";
    return false;
  }
  if (count == 0) {
    if (why)
      *why = "no CUDA device found";
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Backend
//===----------------------------------------------------------------------===//

struct CudaBackend::Impl {
  CudaContext ctx;
  int *errorWord = nullptr;
  int *flag = nullptr; ///< hasNaN's result.
  void *blasWorkspace = nullptr;
  std::string name;

  /// Throws if a kernel recorded an error since the last check.
  void checkErrors() {
    int word = 0;
    AUTOSHARD_CUDA(cudaMemcpyAsync(&word, errorWord, sizeof(int),
                                   cudaMemcpyDeviceToHost, ctx.stream));
    AUTOSHARD_CUDA(cudaStreamSynchronize(ctx.stream));
    if (word == kErrNone)
      return;
    AUTOSHARD_CUDA(cudaMemsetAsync(errorWord, 0, sizeof(int), ctx.stream));
    switch (word) {
    case kErrEmbeddingId:
      throw std::out_of_range("embedding: an id is outside [0, vocab)");
    case kErrLabel:
      throw std::out_of_range("cross entropy: a label is outside [0, "
                              "vocab_size)");
    case kErrExpertId:
      throw std::out_of_range("moe: an expert id is outside [0, experts)");
    case kErrNegativeId:
      throw std::out_of_range("vocab_embedding: an id is negative");
    case kErrDropoutRange:
      throw std::invalid_argument("dropout: step >= 2^32 or layer >= 2^16");
    case kErrAdamStep:
      throw std::invalid_argument("adamw: step must be >= 1");
    case kErrMoeOverflow:
      throw std::runtime_error(
          "moe_dispatch: a sequence routes more tokens to one expert than "
          "the dropless bound (capacity) of its buffers (rebuild the model "
          "with a larger --max-tokens-per-expert, at most the sequence "
          "length, which never overflows)");
    default:
      throw std::runtime_error("cuda kernel error " + std::to_string(word));
    }
  }
};

namespace {
int defaultDevice() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    return 0;
  for (const char *var :
       {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"})
    if (const char *v = std::getenv(var); v && *v)
      return std::atoi(v) % count;
  return 0;
}
} // namespace

CudaBackend::CudaBackend(CudaBackendOptions options)
    : impl(std::make_unique<Impl>()) {
  std::string why;
  if (!deviceAvailable(&why))
    throw std::runtime_error("the cuda backend needs a GPU: " + why);
  CudaContext &c = impl->ctx;
  c.device = options.device >= 0 ? options.device : defaultDevice();
  c.f32Gemm = options.f32Gemm;
  if (const char *env = std::getenv("AUTOSHARD_CUDA_F32_GEMM"); env && *env)
    c.f32Gemm = parseF32GemmMode(env);
  AUTOSHARD_CUDA(cudaSetDevice(c.device));
  cudaDeviceProp prop;
  AUTOSHARD_CUDA(cudaGetDeviceProperties(&prop, c.device));
  c.numSMs = prop.multiProcessorCount;
  impl->name = std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
               std::to_string(prop.minor) + ", " +
               std::to_string(prop.multiProcessorCount) + " SMs, " +
               std::to_string(prop.totalGlobalMem >> 30) + " GiB)";
  AUTOSHARD_CUDA(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
  AUTOSHARD_CUDA(cudaMalloc(&impl->errorWord, sizeof(int)));
  AUTOSHARD_CUDA(cudaMalloc(&impl->flag, sizeof(int)));
  AUTOSHARD_CUDA(cudaMemset(impl->errorWord, 0, sizeof(int)));
  c.errorWord = impl->errorWord;
  AUTOSHARD_CUBLAS(cublasCreate(&c.blas));
  AUTOSHARD_CUBLAS(cublasSetStream(c.blas, c.stream));
  // A fixed workspace keeps cuBLAS from allocating during a step (32 MiB is
  // cuBLAS's own recommendation for Hopper).
  constexpr size_t kWorkspace = 32u << 20;
  AUTOSHARD_CUDA(cudaMalloc(&impl->blasWorkspace, kWorkspace));
  AUTOSHARD_CUBLAS(cublasSetWorkspace(c.blas, impl->blasWorkspace, kWorkspace));
}

CudaBackend::~CudaBackend() {
  CudaContext &c = impl->ctx;
  if (c.stream)
    cudaStreamSynchronize(c.stream);
  if (c.blas)
    cublasDestroy(c.blas);
  cudaFree(impl->blasWorkspace);
  cudaFree(impl->errorWord);
  cudaFree(impl->flag);
  if (c.stream)
    cudaStreamDestroy(c.stream);
}

void *CudaBackend::stream() const { return impl->ctx.stream; }
int CudaBackend::device() const { return impl->ctx.device; }
std::string CudaBackend::describe() const { return impl->name; }

void *CudaBackend::allocateImpl(int64_t bytes) {
  void *ptr = nullptr;
  // cudaMalloc aligns to at least 256 bytes.
  if (cudaMalloc(&ptr, static_cast<size_t>(bytes)) != cudaSuccess) {
    (void)cudaGetLastError();
    throw std::bad_alloc();
  }
  return ptr;
}

void CudaBackend::deallocateImpl(void *ptr) {
  cudaStreamSynchronize(impl->ctx.stream);
  cudaFree(ptr);
}

void CudaBackend::copyToDevice(void *dst, const void *src, int64_t bytes) {
  if (bytes <= 0)
    return;
  AUTOSHARD_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice,
                                 impl->ctx.stream));
  // The host buffer may be reused as soon as we return.
  AUTOSHARD_CUDA(cudaStreamSynchronize(impl->ctx.stream));
}

void CudaBackend::copyToHost(void *dst, const void *src, int64_t bytes) {
  if (bytes > 0)
    AUTOSHARD_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost,
                                   impl->ctx.stream));
  impl->checkErrors(); // synchronises
}

void CudaBackend::fill(void *dst, unsigned char byte, int64_t bytes) {
  if (bytes > 0)
    AUTOSHARD_CUDA(cudaMemsetAsync(dst, byte, bytes, impl->ctx.stream));
}

void CudaBackend::synchronize() { impl->checkErrors(); }

namespace {

template <typename T>
__global__ void nanKernel(const T *x, int64_t n, int *flag) {
  AUTOSHARD_GRID_LOOP(i, n) {
    if (isnan(toF(x[i]))) {
      *flag = 1;
      return;
    }
  }
}

/// Init of one element; see Init.h (initNormalBlock / zeroOutsideLogical).
struct InitParams {
  int rank;
  int kind; // 0 normal, 1 zeros, 2 ones
  int64_t local[16];
  int64_t offset[16];
  int64_t logical[16];
  double stddev;
  uint64_t seed;
  uint64_t nameHash;
};

template <typename T> __device__ __forceinline__ T castInit(double v) {
  return static_cast<T>(v);
}
template <> __device__ __forceinline__ bf16 castInit<bf16>(double v) {
  return __float2bfloat16_rn(static_cast<float>(v));
}

template <typename T>
__global__ void initKernel(T *out, int64_t n, InitParams p) {
  AUTOSHARD_GRID_LOOP(e, n) {
    if (p.kind == 1) {
      out[e] = castInit<T>(0.0);
      continue;
    }
    // Local coordinates (innermost fastest) -> global coordinates.
    int64_t rest = e;
    int64_t coord[16];
    for (int d = p.rank - 1; d >= 0; --d) {
      coord[d] = rest % p.local[d] + p.offset[d];
      rest /= p.local[d];
    }
    bool inside = true;
    uint64_t index = 0;
    for (int d = 0; d < p.rank; ++d) {
      inside = inside && coord[d] < p.logical[d];
      index = index * static_cast<uint64_t>(p.logical[d]) +
              static_cast<uint64_t>(coord[d]);
    }
    double v = 0.0;
    if (inside)
      v = p.kind == 2 ? 1.0
                      : p.stddev * initNormal(p.seed, p.nameHash,
                                              p.rank == 0 ? 0 : index);
    out[e] = castInit<T>(v);
  }
}

} // namespace

bool CudaBackend::hasNaN(const void *data, DType dtype, int64_t numel) {
  if (numel <= 0 || (dtype != DType::F32 && dtype != DType::BF16))
    return false;
  cudaStream_t s = impl->ctx.stream;
  AUTOSHARD_CUDA(cudaMemsetAsync(impl->flag, 0, sizeof(int), s));
  unsigned blocks = std::min<unsigned>(gridFor(numel, 256), 4096);
  if (dtype == DType::F32)
    nanKernel<<<blocks, 256, 0, s>>>(static_cast<const float *>(data), numel,
                                     impl->flag);
  else
    nanKernel<<<blocks, 256, 0, s>>>(static_cast<const bf16 *>(data), numel,
                                     impl->flag);
  AUTOSHARD_CUDA_LAUNCHED();
  int flag = 0;
  AUTOSHARD_CUDA(cudaMemcpyAsync(&flag, impl->flag, sizeof(int),
                                 cudaMemcpyDeviceToHost, s));
  AUTOSHARD_CUDA(cudaStreamSynchronize(s));
  return flag != 0;
}

void CudaBackend::initState(void *data, const StateSpec &spec, uint64_t seed,
                            const std::vector<int64_t> &globalOffset) {
  const std::vector<int64_t> &local = spec.type.shape;
  const std::vector<int64_t> &logical = spec.initShape(globalOffset);
  size_t rank = local.size();
  InitParams p{};
  p.rank = static_cast<int>(rank);
  p.kind = spec.init == InitKind::Normal  ? 0
           : spec.init == InitKind::Zeros ? 1
                                          : 2;
  for (size_t d = 0; d < rank; ++d) {
    p.local[d] = local[d];
    p.offset[d] = globalOffset.empty() ? 0 : globalOffset[d];
    p.logical[d] = logical[d];
  }
  p.stddev = spec.initStd;
  p.seed = seed;
  p.nameHash = fnv1a64(spec.name);
  int64_t n = spec.type.numel();
  if (n <= 0)
    return;
  cudaStream_t s = impl->ctx.stream;
  unsigned blocks = std::min<unsigned>(gridFor(n, 256), 65535);
  switch (spec.type.dtype) {
  case DType::F32:
    initKernel<<<blocks, 256, 0, s>>>(static_cast<float *>(data), n, p);
    break;
  case DType::BF16:
    initKernel<<<blocks, 256, 0, s>>>(static_cast<bf16 *>(data), n, p);
    break;
  case DType::I32:
    initKernel<<<blocks, 256, 0, s>>>(static_cast<int32_t *>(data), n, p);
    break;
  case DType::I64:
    initKernel<<<blocks, 256, 0, s>>>(static_cast<int64_t *>(data), n, p);
    break;
  default:
    throw ArtifactError("state '" + spec.name +
                        "': the cuda backend cannot initialise " +
                        spec.type.str());
  }
  AUTOSHARD_CUDA_LAUNCHED();
}

BoundKernel CudaBackend::bind(const KernelSignature &signature) const {
  AUTOSHARD_CUDA(cudaSetDevice(impl->ctx.device));
  const CudaContext *saved = bindingContext;
  bindingContext = &impl->ctx;
  struct Restore {
    const CudaContext *saved;
    ~Restore() { bindingContext = saved; }
  } restore{saved};
  return kernelTable().bind(signature, name());
}

const KernelTable &CudaBackend::kernelTable() {
  static const KernelTable table = [] {
    KernelTable t;
    kernels::registerElementwiseKernels(t);
    kernels::registerGemmKernels(t);
    kernels::registerNormKernels(t);
    kernels::registerSequenceKernels(t);
    kernels::registerAttentionKernels(t);
    kernels::registerLossKernels(t);
    kernels::registerOptimizerKernels(t);
    kernels::registerMoeKernels(t);
    kernels::registerCommKernels(t);
    kernels::registerCastKernels(t);
    return t;
  }();
  return table;
}

} // namespace autoshard::runtime::cuda
