//===- Pack.h - CPU kernels of dist.pack / dist.unpack ----------*- C++ -*-===//
//
// The flat buffers of bucketed collectives (docs/Dialects/DistOps.md,
// `dist.pack`): with G = numGroups, the flat buffer is G equal segments;
// segment g holds, for each tensor i in order, block g of tensor i along dim
// dims[i] (G equal blocks), flattened row-major. With G = 1 (dims empty) it
// is the concatenation of the flattened tensors. Byte-level: any element
// type, given its size.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_CPU_PACK_H
#define AUTOSHARD_RUNTIME_CPU_PACK_H

#include <cstdint>
#include <vector>

namespace autoshard::runtime::cpu {

/// The layout of one tensor in a flat buffer: its shape and, when
/// numGroups > 1, the dim split into numGroups blocks.
struct PackedTensor {
  std::vector<int64_t> shape;
  int64_t dim = 0;
};

/// Number of elements of the flat buffer of `tensors` (their total). Throws
/// std::invalid_argument unless numGroups >= 1 and, when numGroups > 1,
/// every tensor's `dim` is one of its dims and divisible by numGroups.
int64_t packedSize(const std::vector<PackedTensor> &tensors, int64_t numGroups);

/// dist.pack: copies tensors[i] (at srcs[i]) into the flat buffer `dst`.
void pack(const std::vector<PackedTensor> &tensors, int64_t numGroups,
          int64_t elemBytes, const void *const *srcs, void *dst);

/// dist.unpack: the inverse of pack, from the flat `src` to dsts[i].
void unpack(const std::vector<PackedTensor> &tensors, int64_t numGroups,
            int64_t elemBytes, const void *src, void *const *dsts);

} // namespace autoshard::runtime::cpu

#endif // AUTOSHARD_RUNTIME_CPU_PACK_H
