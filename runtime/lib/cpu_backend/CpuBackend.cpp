//===- CpuBackend.cpp - Host memory, init and kernel binding --------------===//

#include "autoshard/runtime/CpuBackend.h"
#include "autoshard/runtime/Init.h"

#include "CpuKernels.h"
#include "CpuLowPrecision.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

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

/// Init of the local block at `offset` (global coordinates; empty: the
/// origin) of a state: the counter-based init keyed on each element's index
/// in the logical shape (`spec.logicalShape`, else the global shape), and 0
/// for the elements outside the logical shape (a padded vocabulary).
template <typename T>
void initTensor(T *out, const StateSpec &spec, uint64_t seed,
                const std::vector<int64_t> &offset) {
  const std::vector<int64_t> &local = spec.type.shape;
  const std::vector<int64_t> &logical = spec.initShape(offset);
  size_t rank = local.size();
  const int64_t *off = offset.empty() ? nullptr : offset.data();
  int64_t n = spec.type.numel();
  switch (spec.init) {
  case InitKind::Normal:
    return initNormalBlock(out, rank, local.data(), off, logical.data(),
                           spec.initStd, seed, fnv1a64(spec.name));
  case InitKind::Zeros:
    return std::fill(out, out + n, T(0));
  case InitKind::Ones:
    std::fill(out, out + n, T(1));
    return zeroOutsideLogical(out, rank, local.data(), off, logical.data());
  }
}
} // namespace

bool CpuBackend::hasNaN(const void *data, DType dtype, int64_t numel) {
  switch (dtype) {
  case DType::F32:
    return anyNaN<float>(data, numel);
  case DType::F64:
    return anyNaN<double>(data, numel);
  case DType::BF16:
  case DType::F16:
    return cpu_kernels::anyNaN16(data, dtype, numel);
  default:
    return false;
  }
}

void CpuBackend::initState(void *data, const StateSpec &spec, uint64_t seed,
                           const std::vector<int64_t> &globalOffset) {
  switch (spec.type.dtype) {
  case DType::F32:
    return initTensor(static_cast<float *>(data), spec, seed, globalOffset);
  case DType::F64:
    return initTensor(static_cast<double *>(data), spec, seed, globalOffset);
  case DType::BF16:
  case DType::F16: { // initialised in f32, stored rounded
    std::vector<float> wide(static_cast<size_t>(spec.type.numel()));
    initTensor(wide.data(), spec, seed, globalOffset);
    return cpu_kernels::floatsTo16(wide.data(), data, spec.type.dtype,
                                   spec.type.numel());
  }
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
  return cpu_kernels::bindWithLowPrecision(kernelTable(), signature, name());
}

const KernelTable &CpuBackend::kernelTable() {
  static const KernelTable table = [] {
    KernelTable t;
    cpu_kernels::registerDenseKernels(t);
    cpu_kernels::registerSequenceKernels(t);
    cpu_kernels::registerMoeKernels(t);
    cpu_kernels::registerCommKernels(t);
    cpu_kernels::registerCastKernels(t);
    return t;
  }();
  return table;
}

} // namespace autoshard::runtime
