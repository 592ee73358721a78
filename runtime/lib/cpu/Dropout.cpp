//===- Dropout.cpp - CPU dropout kernels ----------------------------------===//

#include "autoshard/runtime/cpu/Dropout.h"

#include "autoshard/runtime/SequencePositions.h"

#include "Check.h"
#include "Instantiate.h"

#include <cmath>
#include <string>
#include <vector>

namespace autoshard::runtime::cpu {
namespace {

void checkRange(const char *what, int64_t value, int64_t bound) {
  if (value < 0 || value >= bound)
    detail::fail("dropout", std::string(what) + " " + std::to_string(value) +
                                " is out of range [0, " +
                                std::to_string(bound) + ")");
}

/// out = in * keep * 1 / (1 - rate); dropout's forward and backward are the
/// same linear map.
template <typename T>
void applyMask(const T *in, T *out, int64_t numel,
               const DropoutParams &params) {
  detail::checkAtLeast("dropout", "numel", numel, 0);
  const DropoutStream stream = makeDropoutStream(params);
  const T keepScale = static_cast<T>(1.0 / (1.0 - params.rate));
  const uint64_t first = static_cast<uint64_t>(params.indexOffset);
  int64_t i = 0;
  while (i < numel) {
    const uint64_t index = first + static_cast<uint64_t>(i);
    const PhiloxBlock bits = stream.block(index >> 2);
    // The elements of this block of four that lie in [i, numel).
    for (uint64_t w = index & 3; w < 4 && i < numel; ++w, ++i)
      out[i] =
          (bits.word[w] >> 8) >= stream.threshold ? in[i] * keepScale : T(0);
  }
}

/// applyMask over the block: one contiguous run of global indices per local
/// row (the innermost dim is contiguous in both layouts).
template <typename T>
void applyMaskBlock(const T *in, T *out, const DropoutBlock &block,
                    const DropoutParams &params) {
  checkDropoutBlock(block);
  const size_t rank = block.shape.size();
  int64_t numel = 1;
  for (int64_t d : block.shape)
    numel *= d;
  if (numel == 0)
    return;
  if (rank == 0) {
    applyMask(in, out, 1, params);
    return;
  }
  // Row-major strides of the global shape.
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank - 1; d > 0; --d)
    stride[d - 1] = stride[d] * block.globalShape[d];
  const int64_t rowLen = block.shape[rank - 1];
  const int64_t rows = numel / rowLen;
  std::vector<int64_t> index(rank, 0); // local coordinates of the row
  DropoutParams rowParams = params;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t global = 0;
    for (size_t d = 0; d < rank; ++d) {
      int64_t g = block.offsets[d] + index[d];
      if (block.zigzagChunks > 0 && d + 2 == rank)
        g = zigzagPosition(g, block.globalShape[d], block.zigzagChunks);
      global += g * stride[d];
    }
    rowParams.indexOffset = params.indexOffset + global;
    applyMask(in + r * rowLen, out + r * rowLen, rowLen, rowParams);
    // Next row: increment the local coordinates of dims [0, rank - 1).
    for (size_t d = rank - 1; d > 0; --d) {
      if (++index[d - 1] < block.shape[d - 1])
        break;
      index[d - 1] = 0;
    }
  }
}

} // namespace

void checkDropoutBlock(const DropoutBlock &block) {
  const size_t rank = block.shape.size();
  if (block.globalShape.size() != rank || block.offsets.size() != rank)
    detail::fail("dropout", "block of rank " + std::to_string(rank) +
                                " needs a global shape and offsets of that "
                                "rank, found " +
                                std::to_string(block.globalShape.size()) +
                                " and " + std::to_string(block.offsets.size()));
  for (size_t d = 0; d < rank; ++d) {
    const int64_t local = block.shape[d], global = block.globalShape[d],
                  offset = block.offsets[d];
    if (local < 0 || offset < 0 || offset > global - local)
      detail::fail("dropout", "block dim " + std::to_string(d) + " of size " +
                                  std::to_string(local) + " at offset " +
                                  std::to_string(offset) +
                                  " does not fit in the global dim " +
                                  std::to_string(global));
  }
}

DropoutStream makeDropoutStream(const DropoutParams &params) {
  if (!(params.rate >= 0.0 && params.rate < 1.0))
    detail::fail("dropout",
                 "rate must be in [0, 1), got " + std::to_string(params.rate));
  checkRange("step", params.step, int64_t(1) << 32);
  checkRange("layer", params.layer, int64_t(1) << 16);
  checkRange("site", params.site, int64_t(1) << 16);
  detail::checkAtLeast("dropout", "index offset", params.indexOffset, 0);
  DropoutStream stream;
  stream.key = philoxKey(params.seed);
  stream.step = static_cast<uint32_t>(params.step);
  stream.layerSite = static_cast<uint32_t>(params.layer << 16 | params.site);
  stream.threshold = static_cast<uint32_t>(std::ceil(params.rate * 16777216.0));
  return stream;
}

template <typename T>
void dropout(const T *x, T *y, int64_t numel, const DropoutParams &params) {
  applyMask(x, y, numel, params);
}

template <typename T>
void dropoutGrad(const T *dy, T *dx, int64_t numel,
                 const DropoutParams &params) {
  applyMask(dy, dx, numel, params);
}

template <typename T>
void dropoutBlock(const T *x, T *y, const DropoutBlock &block,
                  const DropoutParams &params) {
  applyMaskBlock(x, y, block, params);
}

template <typename T>
void dropoutGradBlock(const T *dy, T *dx, const DropoutBlock &block,
                      const DropoutParams &params) {
  applyMaskBlock(dy, dx, block, params);
}

#define INSTANTIATE(T)                                                         \
  template void dropout<T>(const T *, T *, int64_t, const DropoutParams &);    \
  template void dropoutGrad<T>(const T *, T *, int64_t,                        \
                               const DropoutParams &);                         \
  template void dropoutBlock<T>(const T *, T *, const DropoutBlock &,          \
                                const DropoutParams &);                        \
  template void dropoutGradBlock<T>(const T *, T *, const DropoutBlock &,      \
                                    const DropoutParams &);
AUTOSHARD_FOR_EACH_FLOAT(INSTANTIATE)

} // namespace autoshard::runtime::cpu
