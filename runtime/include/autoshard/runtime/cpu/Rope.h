//===- Rope.h - CPU rotary position embedding kernels -----------*- C++ -*-===//
//
// RoPE (Su et al. 2021, "RoFormer") in the rotate-half convention of GPT-NeoX
// and Llama: dims i and i + D/2 form a pair rotated by angle
// p * theta^(-2i/D) at position p.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_CPU_ROPE_H
#define AUTOSHARD_RUNTIME_CPU_ROPE_H

#include "autoshard/runtime/SequencePositions.h"

#include <cstdint>

namespace autoshard::runtime::cpu {

/// Shape of tfm.rope: x is [batch, seq, heads, headDim] row-major, headDim
/// even. Positions are positionOffset + 0..seq-1 (the op uses offset 0; a
/// sequence shard passes its first global position). Angles are computed in
/// double, then rounded to T.
struct RopeShape {
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t heads = 0;
  int64_t headDim = 0;
  double theta = 10000.0;
  int64_t positionOffset = 0;
  /// With zigzagChunks > 0 the rows are permuted indices of a sequence of
  /// seqLen positions in zig-zag order (SequencePositions.h): row p is
  /// rotated by the angle of original position zigzagPosition(
  /// positionOffset + p, seqLen, zigzagChunks).
  int64_t seqLen = 0;
  int64_t zigzagChunks = 0;
};

/// tfm.rope: y[.., i] = x[i] cos - x[i + D/2] sin,
/// y[.., i + D/2] = x[i + D/2] cos + x[i] sin. y may alias x.
template <typename T> void rope(const T *x, T *y, const RopeShape &shape);

/// tfm.rope_grad: the transpose of rope(), i.e. rotation by -angle. dx may
/// alias dy.
template <typename T> void ropeGrad(const T *dy, T *dx, const RopeShape &shape);

} // namespace autoshard::runtime::cpu

#endif // AUTOSHARD_RUNTIME_CPU_ROPE_H
