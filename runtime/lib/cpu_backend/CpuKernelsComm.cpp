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

BoundKernel bindShardSlice(const KernelSignature &sig) {
  using Op = ops::DistShardSlice;
  OperandIndex at(sig);
  ShardSliceShape s = checkShardSlice(sig);
  CommBlocks b = s.blocks;
  int64_t g = s.groupSize, index = s.index;
  return [b, g, index, at](void *const *p) {
    // Block `index` of [outer, G, inner]; in place it moves rows forward,
    // which memmove allows (never backward: dst <= src).
    const unsigned char *src = static_cast<unsigned char *>(p[at(Op::input)]);
    unsigned char *dst = static_cast<unsigned char *>(p[at(Op::result)]);
    for (int64_t o = 0; o < b.outer; ++o)
      std::memmove(dst + o * b.inner, src + (o * g + index) * b.inner, b.inner);
  };
}

BoundKernel bindAxisIndex(const KernelSignature &sig) {
  using Op = ops::DistAxisIndex;
  OperandIndex at(sig);
  int64_t index = checkAxisIndex(sig);
  return [index, at](void *const *p) {
    *static_cast<int64_t *>(p[at(Op::result)]) = index;
  };
}

/// The cpu/Pack.h layout of `dist.pack` / `dist.unpack` (checkPack).
std::vector<cpu::PackedTensor> packedTensors(const PackLayout &layout,
                                             const std::vector<TensorType> &t) {
  std::vector<cpu::PackedTensor> tensors;
  for (size_t i = 0; i < t.size(); ++i)
    tensors.push_back({t[i].shape, layout.dims[i]});
  return tensors;
}

BoundKernel bindPack(const KernelSignature &sig) {
  PackLayout checked = checkPack(sig, sig.args, sig.results[0], "arg");
  auto layout = packedTensors(checked, sig.args);
  int64_t groups = checked.groups;
  size_t n = layout.size();
  int64_t elemBytes = dtypeSize(sig.results[0].dtype);
  return [layout, groups, n, elemBytes](void *const *p) {
    cpu::pack(layout, groups, elemBytes, p, p[n]);
  };
}

BoundKernel bindUnpack(const KernelSignature &sig) {
  using Op = ops::DistUnpack;
  OperandIndex at(sig);
  PackLayout checked =
      checkPack(sig, sig.results, sig.arg(Op::input), "result");
  auto layout = packedTensors(checked, sig.results);
  int64_t groups = checked.groups;
  int64_t elemBytes = dtypeSize(sig.arg(Op::input).dtype);
  return [layout, groups, elemBytes, at](void *const *p) {
    cpu::unpack(layout, groups, elemBytes, p[at(Op::input)], p + 1);
  };
}

} // namespace

void registerCommKernels(KernelTable &t) {
  t.add("dist.pack", bindPack);
  t.add("dist.unpack", bindUnpack);
  t.add("dist.shard_slice", bindShardSlice);
  t.add("dist.axis_index", bindAxisIndex);
  comm_kernels::registerCollectiveKernels(t, {hostDevice, expectReducible});
  comm_kernels::registerPointToPointKernels(t);
}

} // namespace autoshard::runtime::cpu_kernels
