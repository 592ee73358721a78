//===- CpuBackend.h - The CPU backend (host memory, CPU kernels) -*- C++
//-*-===//
//
// Host memory (64-byte aligned) and the CPU kernels of
// autoshard/runtime/cpu/ behind the Backend interface: every forward,
// backward and optimizer tfm op, in f32 and f64 (ids i32 or i64). The
// oracle for the other backends' conformance tests (DESIGN.md §8).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_CPUBACKEND_H
#define AUTOSHARD_RUNTIME_CPUBACKEND_H

#include "autoshard/runtime/Backend.h"

namespace autoshard::runtime {

/// The CPU backend.
class CpuBackend : public Backend {
public:
  std::string_view name() const override { return "cpu"; }
  void copyToDevice(void *dst, const void *src, int64_t bytes) override;
  void copyToHost(void *dst, const void *src, int64_t bytes) override;
  void fill(void *dst, unsigned char byte, int64_t bytes) override;
  bool hostAccessible() const override { return true; }
  bool hasNaN(const void *data, DType dtype, int64_t numel) override;
  void initState(void *data, const StateSpec &spec, uint64_t seed,
                 const std::vector<int64_t> &globalOffset) override;
  BoundKernel bind(const KernelSignature &signature) const override;

  /// The binders of every op (see runtime/lib/cpu_backend/CpuKernels*.cpp).
  static const KernelTable &kernelTable();

protected:
  void *allocateImpl(int64_t bytes) override;
  void deallocateImpl(void *ptr) override;
};

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_CPUBACKEND_H
