//===- Pack.cpp - CPU kernels of dist.pack / dist.unpack ------------------===//

#include "autoshard/runtime/cpu/Pack.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace autoshard::runtime::cpu {

namespace {

/// Tensor `t` viewed as [outer, G, inner]: block g of its dim is the G-th
/// slice; `inner` counts elements.
struct BlockView {
  int64_t outer = 1, inner = 1;
};

BlockView viewOf(const PackedTensor &t, int64_t numGroups) {
  BlockView v;
  if (numGroups == 1) {
    v.outer = 1;
    for (int64_t s : t.shape)
      v.inner *= s;
    return v;
  }
  size_t d = static_cast<size_t>(t.dim);
  for (size_t i = 0; i < d; ++i)
    v.outer *= t.shape[i];
  v.inner = t.shape[d] / numGroups;
  for (size_t i = d + 1; i < t.shape.size(); ++i)
    v.inner *= t.shape[i];
  return v;
}

/// Calls fn(tensor index, outer index o, group g, flat offset) in the flat
/// layout's order, for each contiguous run of `inner` elements.
template <typename Fn>
void forEachRun(const std::vector<PackedTensor> &tensors, int64_t numGroups,
                Fn &&fn) {
  packedSize(tensors, numGroups); // checks the layout
  int64_t offset = 0;
  for (int64_t g = 0; g < numGroups; ++g)
    for (size_t i = 0; i < tensors.size(); ++i) {
      BlockView v = viewOf(tensors[i], numGroups);
      for (int64_t o = 0; o < v.outer; ++o) {
        fn(i, v, o, g, offset);
        offset += v.inner;
      }
    }
}

} // namespace

int64_t packedSize(const std::vector<PackedTensor> &tensors,
                   int64_t numGroups) {
  if (numGroups < 1)
    throw std::invalid_argument("pack: num_groups must be at least 1, found " +
                                std::to_string(numGroups));
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const PackedTensor &t = tensors[i];
    int64_t n = 1;
    for (int64_t s : t.shape)
      n *= s;
    if (numGroups > 1) {
      if (t.dim < 0 || t.dim >= static_cast<int64_t>(t.shape.size()))
        throw std::invalid_argument("pack: scatter dim " +
                                    std::to_string(t.dim) + " of tensor " +
                                    std::to_string(i) + " is not one of its " +
                                    std::to_string(t.shape.size()) + " dims");
      if (t.shape[t.dim] % numGroups != 0)
        throw std::invalid_argument("pack: dim " + std::to_string(t.dim) +
                                    " (size " + std::to_string(t.shape[t.dim]) +
                                    ") of tensor " + std::to_string(i) +
                                    " is not divisible by num_groups " +
                                    std::to_string(numGroups));
    }
    total += n;
  }
  return total;
}

void pack(const std::vector<PackedTensor> &tensors, int64_t numGroups,
          int64_t elemBytes, const void *const *srcs, void *dst) {
  auto *out = static_cast<unsigned char *>(dst);
  forEachRun(tensors, numGroups,
             [&](size_t i, BlockView v, int64_t o, int64_t g, int64_t offset) {
               const auto *in = static_cast<const unsigned char *>(srcs[i]);
               std::memcpy(out + offset * elemBytes,
                           in + ((o * numGroups + g) * v.inner) * elemBytes,
                           v.inner * elemBytes);
             });
}

void unpack(const std::vector<PackedTensor> &tensors, int64_t numGroups,
            int64_t elemBytes, const void *src, void *const *dsts) {
  const auto *in = static_cast<const unsigned char *>(src);
  forEachRun(tensors, numGroups,
             [&](size_t i, BlockView v, int64_t o, int64_t g, int64_t offset) {
               auto *out = static_cast<unsigned char *>(dsts[i]);
               std::memcpy(out + ((o * numGroups + g) * v.inner) * elemBytes,
                           in + offset * elemBytes, v.inner * elemBytes);
             });
}

} // namespace autoshard::runtime::cpu
