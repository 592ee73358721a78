//===- CpuBackend.cpp - Host memory, init and kernel binding --------------===//

#include "autoshard/runtime/CpuBackend.h"
#include "autoshard/runtime/Init.h"

#include "CpuKernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

namespace autoshard::runtime {

void *CpuBackend::allocateImpl(int64_t bytes) {
  // aligned_alloc needs a size that is a multiple of the alignment.
  constexpr size_t kAlign = 64;
  size_t size = (static_cast<size_t>(bytes) + kAlign - 1) / kAlign * kAlign;
  void *ptr = std::aligned_alloc(kAlign, size);
  if (!ptr)
    throw std::bad_alloc();
  return ptr;
}

void CpuBackend::deallocateImpl(void *ptr) { std::free(ptr); }

void CpuBackend::copyToDevice(void *dst, const void *src, int64_t bytes) {
  if (bytes > 0)
    std::memcpy(dst, src, bytes);
}

void CpuBackend::copyToHost(void *dst, const void *src, int64_t bytes) {
  if (bytes > 0)
    std::memcpy(dst, src, bytes);
}

void CpuBackend::fill(void *dst, unsigned char byte, int64_t bytes) {
  if (bytes > 0)
    std::memset(dst, byte, bytes);
}

namespace {
template <typename T> bool anyNaN(const void *data, int64_t numel) {
  const T *x = static_cast<const T *>(data);
  for (int64_t i = 0; i < numel; ++i)
    if (std::isnan(x[i]))
      return true;
  return false;
}

/// Normal init of the local block at `offset` (global coordinates) of a
/// tensor of `spec.globalShape`: one initNormalRange per run of the last dim.
template <typename T>
void initNormalBlock(T *out, const StateSpec &spec, uint64_t seed,
                     const std::vector<int64_t> &offset) {
  const std::vector<int64_t> &local = spec.type.shape;
  const std::vector<int64_t> &global =
      spec.globalShape.empty() ? local : spec.globalShape;
  uint64_t hash = fnv1a64(spec.name);
  size_t rank = local.size();
  if (rank == 0)
    return initNormalRange(out, 1, 0, spec.initStd, seed, hash);
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank - 1; d-- > 0;)
    stride[d] = stride[d + 1] * global[d + 1];
  int64_t inner = local[rank - 1];
  int64_t rows = spec.type.numel() / std::max<int64_t>(inner, 1);
  if (inner == 0)
    return;
  std::vector<int64_t> idx(rank, 0); // local coordinates of the row start
  for (int64_t row = 0; row < rows; ++row) {
    uint64_t begin = 0;
    for (size_t d = 0; d < rank; ++d)
      begin +=
          static_cast<uint64_t>(idx[d] + (offset.empty() ? 0 : offset[d])) *
          stride[d];
    initNormalRange(out + row * inner, inner, begin, spec.initStd, seed, hash);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < local[d])
        break;
      idx[d] = 0;
    }
  }
}

template <typename T>
void initTensor(T *out, const StateSpec &spec, uint64_t seed,
                const std::vector<int64_t> &offset) {
  int64_t n = spec.type.numel();
  switch (spec.init) {
  case InitKind::Normal:
    return initNormalBlock(out, spec, seed, offset);
  case InitKind::Zeros:
    return std::fill(out, out + n, T(0));
  case InitKind::Ones:
    return std::fill(out, out + n, T(1));
  }
}
} // namespace

bool CpuBackend::hasNaN(const void *data, DType dtype, int64_t numel) {
  switch (dtype) {
  case DType::F32:
    return anyNaN<float>(data, numel);
  case DType::F64:
    return anyNaN<double>(data, numel);
  default:
    return false; // no CPU kernel computes in 16-bit floats
  }
}

void CpuBackend::initState(void *data, const StateSpec &spec, uint64_t seed,
                           const std::vector<int64_t> &globalOffset) {
  switch (spec.type.dtype) {
  case DType::F32:
    return initTensor(static_cast<float *>(data), spec, seed, globalOffset);
  case DType::F64:
    return initTensor(static_cast<double *>(data), spec, seed, globalOffset);
  case DType::I32:
    return initTensor(static_cast<int32_t *>(data), spec, seed, globalOffset);
  case DType::I64:
    return initTensor(static_cast<int64_t *>(data), spec, seed, globalOffset);
  default:
    throw ArtifactError("state '" + spec.name +
                        "': the cpu backend cannot "
                        "initialise " +
                        spec.type.str());
  }
}

BoundKernel CpuBackend::bind(const KernelSignature &signature) const {
  return kernelTable().bind(signature, name());
}

const KernelTable &CpuBackend::kernelTable() {
  static const KernelTable table = [] {
    KernelTable t;
    cpu_kernels::registerDenseKernels(t);
    cpu_kernels::registerSequenceKernels(t);
    cpu_kernels::registerMoeKernels(t);
    cpu_kernels::registerCommKernels(t);
    return t;
  }();
  return table;
}

} // namespace autoshard::runtime
