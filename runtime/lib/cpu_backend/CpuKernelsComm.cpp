//===- CpuKernelsComm.cpp - Communication kernels of the CPU backend ------===//
//
// The `dist.*` kernels (docs/artifact-format.md, "Communication") on host
// memory. The collectives are core's (CommKernels.h) over host copies
// (HostCommDevice): contiguous blocks go straight to the Communicator of
// the instruction's group; a gather, scatter or all-to-all on a non-leading
// dim packs its blocks into a staging buffer before the call and/or
// unpacks them after it. The local ones (shard_slice, axis_index, pack,
// unpack) are here.
//
//===----------------------------------------------------------------------===//

#include "CpuKernels.h"

#include "autoshard/runtime/CommKernels.h"
#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/cpu/Pack.h"

#include <cstdint>
#include <cstring>
#include <memory>

namespace autoshard::runtime::cpu_kernels {

namespace {

/// Host memory for the shared collectives (CommKernels.h).
class HostCommDevice : public comm_kernels::CommDevice {
public:
  void copyRows(void *dst, int64_t dstPitch, const void *src, int64_t srcPitch,
                int64_t rows, int64_t rowBytes) const override {
    auto *d = static_cast<unsigned char *>(dst);
    auto *s = static_cast<const unsigned char *>(src);
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(d + r * dstPitch, s + r * srcPitch, rowBytes);
  }
  void zero(void *dst, int64_t bytes) const override {
    std::memset(dst, 0, bytes);
  }
  std::shared_ptr<void> scratch(int64_t bytes) const override {
    auto buffer = std::make_shared<std::vector<unsigned char>>(
        static_cast<size_t>(bytes));
    return std::shared_ptr<void>(buffer, buffer->data());
  }
  void usedRows(const void *src, int64_t slots, int64_t rows, int64_t rowBytes,
                int64_t *counts) const override {
    const auto *s = static_cast<const unsigned char *>(src);
    for (int64_t i = 0; i < slots; ++i) {
      const unsigned char *slot = s + i * rows * rowBytes;
      int64_t n = rows;
      while (n > 0 && isZero(slot + (n - 1) * rowBytes, rowBytes))
        --n;
      counts[i] = n;
    }
  }
  void upload(void *dst, const void *host, int64_t bytes) const override {
    copy(dst, host, bytes);
  }
  void download(void *host, const void *src, int64_t bytes) const override {
    copy(host, src, bytes);
  }

private:
  /// Whether all `n` bytes at `p` are zero (8 at a time, then the rest).
  static bool isZero(const unsigned char *p, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t word;
      std::memcpy(&word, p + i, 8);
      if (word != 0)
        return false;
    }
    for (; i < n; ++i)
      if (p[i] != 0)
        return false;
    return true;
  }
};

std::shared_ptr<const comm_kernels::CommDevice> hostDevice() {
  static const auto device = std::make_shared<const HostCommDevice>();
  return device;
}

void expectReducible(const KernelSignature &sig, DType dtype) {
  if (dtype != DType::F32 && dtype != DType::F64 && dtype != DType::I32 &&
      dtype != DType::I64)
    sig.fail("cannot reduce " + std::string(dtypeName(dtype)) +
             " (the cpu backend reduces f32, f64, i32, i64)");
}

/// The layout of `dist.pack` / `dist.unpack` (checkPack) as cpu/Pack.h
/// takes it.
struct Packing {
  std::vector<cpu::PackedTensor> tensors;
  int64_t groups = 1;
  int64_t elemBytes = 0;
};

/// Checks `tensors`, the unpacked side (named `what`), against the 1-D
/// buffer `flat`.
Packing packing(const KernelSignature &sig,
                const std::vector<TensorType> &tensors, const TensorType &flat,
                const std::string &what) {
  PackLayout layout = checkPack(sig, tensors, flat, what);
  Packing k;
  for (size_t i = 0; i < tensors.size(); ++i)
    k.tensors.push_back({tensors[i].shape, layout.dims[i]});
  k.groups = layout.groups;
  k.elemBytes = dtypeSize(flat.dtype);
  return k;
}

} // namespace

template <> BoundKernel bind<ops::DistShardSlice>(const KernelSignature &sig) {
  using Op = ops::DistShardSlice;
  ShardSliceShape s = checkShardSlice(sig);
  CommBlocks b = s.blocks;
  int64_t g = s.groupSize, index = s.index;
  return bindOperands(sig, [b, g, index](Operands o) {
    // Block `index` of [outer, G, inner]; in place it moves rows forward,
    // which memmove allows (never backward: dst <= src).
    const auto *src = o.in<unsigned char>(Op::input);
    auto *dst = o.out<unsigned char>(Op::result);
    for (int64_t r = 0; r < b.outer; ++r)
      std::memmove(dst + r * b.inner, src + (r * g + index) * b.inner, b.inner);
  });
}

template <> BoundKernel bind<ops::DistAxisIndex>(const KernelSignature &sig) {
  using Op = ops::DistAxisIndex;
  int64_t index = checkAxisIndex(sig);
  return bindOperands(
      sig, [index](Operands o) { *o.out<int64_t>(Op::result) = index; });
}

template <> BoundKernel bind<ops::DistPack>(const KernelSignature &sig) {
  using Op = ops::DistPack;
  Packing k = packing(sig, sig.args, sig.result(Op::result), "arg");
  return bindOperands(sig, [k](Operands o) {
    cpu::pack(k.tensors, k.groups, k.elemBytes, o.group(Op::inputs),
              o[Op::result]);
  });
}

template <> BoundKernel bind<ops::DistUnpack>(const KernelSignature &sig) {
  using Op = ops::DistUnpack;
  Packing k = packing(sig, sig.results, sig.arg(Op::input), "result");
  return bindOperands(sig, [k](Operands o) {
    cpu::unpack(k.tensors, k.groups, k.elemBytes, o[Op::input],
                o.group(Op::results));
  });
}

void registerCommKernels(KernelTable &t) {
  addBinders<ops::DistPack, ops::DistUnpack, ops::DistShardSlice,
             ops::DistAxisIndex>(t);
  comm_kernels::registerCollectiveKernels(t, {hostDevice, expectReducible});
  comm_kernels::registerPointToPointKernels(t);
}

} // namespace autoshard::runtime::cpu_kernels
