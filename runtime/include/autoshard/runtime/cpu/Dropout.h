//===- Dropout.h - CPU dropout kernels --------------------------*- C++ -*-===//
//
// Inverted dropout (Srivastava et al. 2014) with a plan-independent mask drawn
// from Philox-4x32-10 (see autoshard/runtime/Philox.h for the stream layout).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_CPU_DROPOUT_H
#define AUTOSHARD_RUNTIME_CPU_DROPOUT_H

#include "autoshard/runtime/Philox.h"

#include <cstdint>
#include <vector>

namespace autoshard::runtime::cpu {

/// Parameters of tfm.dropout / tfm.dropout_grad. rate in [0, 1); step in
/// [0, 2^32); layer and site in [0, 2^16). The tensor's element i has global
/// element index indexOffset + i (a shard of a contiguous range passes its
/// offset).
struct DropoutParams {
  double rate = 0.0;
  uint64_t seed = 0;
  int64_t step = 0;
  int64_t layer = 0;
  int64_t site = 0;
  int64_t indexOffset = 0;
};

/// The Philox stream of `params`. Throws std::invalid_argument when the rate,
/// step, layer, site or offset is out of range.
DropoutStream makeDropoutStream(const DropoutParams &params);

/// tfm.dropout: y = x * keep / (1 - rate) over `numel` elements, keep drawn
/// per global element index. y may alias x.
template <typename T>
void dropout(const T *x, T *y, int64_t numel, const DropoutParams &params);

/// tfm.dropout_grad: dx = dy * keep / (1 - rate) with the forward's mask.
/// dx may alias dy.
template <typename T>
void dropoutGrad(const T *dy, T *dx, int64_t numel,
                 const DropoutParams &params);

/// The block of a sharded tensor that a rank holds (tfm.dropout_local): its
/// local `shape`, the `globalShape` of the whole tensor (same rank) and, per
/// dim, the global coordinate of the block's first element. Local element
/// `i` is global element `i + offsets`, whose row-major index in
/// `globalShape` keys its mask bit.
struct DropoutBlock {
  std::vector<int64_t> shape;
  std::vector<int64_t> globalShape;
  std::vector<int64_t> offsets;
  /// > 0: the second-to-last dim is a sequence in zig-zag order
  /// (SequencePositions.h) and its global coordinate g keys the mask as
  /// original position zigzagPosition(g, globalShape[rank - 2], n), so that
  /// a permuted program draws the mask of the original order.
  int64_t zigzagChunks = 0;
};

/// Throws std::invalid_argument unless the ranks agree, every offset is >= 0
/// and every block fits in the global shape (offset + local <= global).
void checkDropoutBlock(const DropoutBlock &block);

/// tfm.dropout_local: tfm.dropout of the block `block` of a global tensor,
/// i.e. the restriction to the block of the global op's result (the mask of
/// each element is the one of its global row-major index, plus
/// `params.indexOffset`). y may alias x.
template <typename T>
void dropoutBlock(const T *x, T *y, const DropoutBlock &block,
                  const DropoutParams &params);

/// tfm.dropout_local_grad: dropoutGrad of a block (same mask as the
/// forward's). dx may alias dy.
template <typename T>
void dropoutGradBlock(const T *dy, T *dx, const DropoutBlock &block,
                      const DropoutParams &params);

} // namespace autoshard::runtime::cpu

#endif // AUTOSHARD_RUNTIME_CPU_DROPOUT_H
