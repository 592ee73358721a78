//===- CudaBackend.h - The CUDA backend ------------------------*- C++ -*-===//
//
// Device memory (cudaMalloc) and CUDA kernels behind the Backend interface
// (DESIGN.md §8): every op the CPU backend binds, in f32 and bf16 (ids i32 or
// i64), with the CPU backend's semantics. Float math runs in fp32 (bf16
// tensors are loaded, computed in fp32 and rounded once when stored); GEMMs
// go through cuBLAS with fp32 accumulation. All kernels of one backend run in
// order on one compute stream; scalar operands (lr, step, shard, ...) live in
// device memory and are read by the kernels, so a training step never waits
// for the host. Weight init runs on the device with the counter-based
// Philox init of Init.h, so a GPU run starts from the CPU run's weights.
//
// Errors: CUDA and cuBLAS failures throw std::runtime_error naming the call.
// Bad data found by a kernel (an id or label out of range) sets a device
// error word; the next copyToHost()/synchronize() throws std::out_of_range
// naming the op.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_CUDA_CUDABACKEND_H
#define AUTOSHARD_RUNTIME_CUDA_CUDABACKEND_H

#include "autoshard/runtime/Backend.h"

#include <memory>
#include <string>

namespace autoshard::runtime::cuda {

/// How f32 GEMMs use the tensor cores. bf16 GEMMs always take bf16 inputs
/// with fp32 accumulation (CUBLAS_COMPUTE_32F).
enum class F32GemmMode {
  Fp32, ///< CUBLAS_COMPUTE_32F: IEEE fp32 (conformance, the default).
  Tf32, ///< CUBLAS_COMPUTE_32F_FAST_TF32: TF32 inputs, fp32 accumulation.
  Bf16, ///< CUBLAS_COMPUTE_32F_FAST_16BF: bf16 inputs, fp32 accumulation.
};

/// Parses "fp32" / "tf32" / "bf16"; throws std::invalid_argument otherwise.
F32GemmMode parseF32GemmMode(const std::string &name);

/// Options of a CudaBackend.
struct CudaBackendOptions {
  /// CUDA device ordinal; -1: LOCAL_RANK (or OMPI_COMM_WORLD_LOCAL_RANK)
  /// modulo the device count, else 0.
  int device = -1;
  /// Tensor-core use of f32 GEMMs; the environment variable
  /// AUTOSHARD_CUDA_F32_GEMM (fp32|tf32|bf16) overrides the default.
  F32GemmMode f32Gemm = F32GemmMode::Fp32;
};

/// Whether a CUDA device can be used; otherwise `why` (if given) says why
/// (no driver, no device, ...). Never throws.
bool deviceAvailable(std::string *why = nullptr);

/// The CUDA backend. Creating it selects the device and creates the compute
/// stream and the cuBLAS handle; throws std::runtime_error when no device is
/// usable.
class CudaBackend : public Backend {
public:
  explicit CudaBackend(CudaBackendOptions options = {});
  ~CudaBackend() override;
  CudaBackend(const CudaBackend &) = delete;
  CudaBackend &operator=(const CudaBackend &) = delete;

  std::string_view name() const override { return "cuda"; }
  /// Synchronous copies (they wait for the compute stream).
  void copyToDevice(void *dst, const void *src, int64_t bytes) override;
  void copyToHost(void *dst, const void *src, int64_t bytes) override;
  /// Ordered on the compute stream.
  void fill(void *dst, unsigned char byte, int64_t bytes) override;
  bool hasNaN(const void *data, DType dtype, int64_t numel) override;
  /// Same values as CpuBackend::initState, computed on the device (f32, bf16
  /// rounded from the fp32 value, i32, i64).
  void initState(void *data, const StateSpec &spec, uint64_t seed,
                 const std::vector<int64_t> &globalOffset) override;
  BoundKernel bind(const KernelSignature &signature) const override;
  /// Waits for the compute stream; throws on a kernel's error.
  void synchronize() override;

  /// The compute stream (a cudaStream_t) that every kernel runs on; the
  /// NCCL communicator orders its communication stream against it.
  void *stream() const;
  /// The device ordinal in use.
  int device() const;
  /// "NVIDIA H200 (sm_90, 132 SMs)" etc., for logs.
  std::string describe() const;

  /// The binders of every op (runtime/lib/cuda/*.cu).
  static const KernelTable &kernelTable();

  struct Impl;

protected:
  void *allocateImpl(int64_t bytes) override;
  void deallocateImpl(void *ptr) override;

private:
  std::unique_ptr<Impl> impl;
};

} // namespace autoshard::runtime::cuda

#endif // AUTOSHARD_RUNTIME_CUDA_CUDABACKEND_H
