//===- SequencePositions.h - Where a sequence block's rows lie --*- C++ -*-===//
//
// Under zig-zag context parallelism (DESIGN.md §5, CP; algorithms.md §2.3,
// as in ring-flash-attn's zigzag and torchtitan's head-tail load balancing)
// a program holds every sequence permuted: the S positions are cut into
// n = 2 cp chunks of h = S / n, and permuted chunk q holds original chunk
//   q / 2          for even q,
//   n - 1 - q / 2  for odd q,
// so that the contiguous block of cp rank r (permuted chunks 2r and 2r + 1)
// holds the original chunks r and n - 1 - r and every rank does the same
// causal attention work. The position-dependent kernels (the causal mask,
// rope, position embeddings, dropout's mask, MoE slot order) map a row's
// permuted index back to its original position with this header; n = 0 is
// the identity (contiguous chunks). Host and device code share it.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_SEQUENCEPOSITIONS_H
#define AUTOSHARD_RUNTIME_SEQUENCEPOSITIONS_H

#include "autoshard/runtime/HostDevice.h"

#include <cstdint>

namespace autoshard::runtime {

/// The original position of permuted index `p` of a sequence of `seqLen`
/// positions in zig-zag order of `zigzagChunks` chunks (0: identity).
/// Requires 0 <= p < seqLen and, when zigzagChunks > 0, zigzagChunks even
/// and dividing seqLen (checked where the kernel is bound).
AUTOSHARD_HOST_DEVICE inline int64_t zigzagPosition(int64_t p, int64_t seqLen,
                                                    int64_t zigzagChunks) {
  if (zigzagChunks <= 0)
    return p;
  int64_t h = seqLen / zigzagChunks;
  int64_t q = p / h;
  int64_t chunk = q % 2 == 0 ? q / 2 : zigzagChunks - 1 - q / 2;
  return chunk * h + p % h;
}

/// The permuted index that holds original position `pos`: the inverse of
/// zigzagPosition.
AUTOSHARD_HOST_DEVICE inline int64_t zigzagIndex(int64_t pos, int64_t seqLen,
                                                 int64_t zigzagChunks) {
  if (zigzagChunks <= 0)
    return pos;
  int64_t h = seqLen / zigzagChunks;
  int64_t chunk = pos / h;
  int64_t q =
      chunk < zigzagChunks / 2 ? 2 * chunk : 2 * (zigzagChunks - 1 - chunk) + 1;
  return q * h + pos % h;
}

/// The original positions of a block of rows: row i of the block is the
/// permuted index `start + i` of a sequence of `seqLen` positions.
struct SequencePositions {
  int64_t start = 0;        ///< permuted index of the block's row 0
  int64_t seqLen = 0;       ///< the whole sequence (zigzagChunks > 0 only)
  int64_t zigzagChunks = 0; ///< n of the zig-zag order; 0: identity

  /// The original position of block row i.
  AUTOSHARD_HOST_DEVICE int64_t at(int64_t i) const {
    return zigzagPosition(start + i, seqLen, zigzagChunks);
  }

  /// The number of rows j in [0, len) with at(j) <= pos. When at() is
  /// increasing on the block (increasingOver), these are rows 0 .. count-1:
  /// the keys a causal query at `pos` sees form a prefix.
  AUTOSHARD_HOST_DEVICE int64_t countAtOrBefore(int64_t pos,
                                                int64_t len) const {
    if (zigzagChunks <= 0)
      return clampCount(pos - start + 1, len);
    int64_t h = seqLen / zigzagChunks, count = 0;
    for (int64_t j = 0; j < len;) {
      // One permuted chunk at a time: contiguous original positions.
      int64_t run = h - (start + j) % h;
      if (run > len - j)
        run = len - j;
      count += clampCount(pos - at(j) + 1, run);
      j += run;
    }
    return count;
  }

  /// Whether at() increases over rows [0, len): true for the identity and
  /// for a zig-zag block inside one rank's chunk pair [2 r h, 2 (r + 1) h).
  AUTOSHARD_HOST_DEVICE bool increasingOver(int64_t len) const {
    if (zigzagChunks <= 0 || len <= 1)
      return true;
    int64_t pair = 2 * (seqLen / zigzagChunks);
    return start / pair == (start + len - 1) / pair;
  }

private:
  AUTOSHARD_HOST_DEVICE static int64_t clampCount(int64_t n, int64_t len) {
    return n < 0 ? 0 : (n > len ? len : n);
  }
};

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_SEQUENCEPOSITIONS_H
