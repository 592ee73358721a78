//===- Philox.h - Counter-based random numbers (Philox-4x32-10) -*- C++ -*-===//
//
// Philox-4x32-10 from J. K. Salmon, M. A. Moraes, R. O. Dror, D. E. Shaw,
// "Parallel Random Numbers: As Easy as 1, 2, 3", SC'11 (the Random123
// library). A counter-based generator: the output is a pure function of a
// 128-bit counter and a 64-bit key, so every backend and every sharding plan
// draws the same number for the same logical element (DESIGN.md §6).
//
// Header-only and free of host-only constructs so that the CUDA backend uses
// the very same code for its dropout masks and weight initialisation.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_PHILOX_H
#define AUTOSHARD_RUNTIME_PHILOX_H

#include "autoshard/runtime/HostDevice.h"

#include <cstdint>

namespace autoshard::runtime {

/// A 128-bit Philox counter or output block: four 32-bit words.
struct PhiloxBlock {
  uint32_t word[4];
};

/// A 64-bit Philox key: two 32-bit words.
struct PhiloxKey {
  uint32_t word[2];
};

namespace detail {
// Multipliers and Weyl key increments of Philox-4x32 (Salmon et al., table 2
// and Random123's philox.h).
constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;

AUTOSHARD_HOST_DEVICE inline void mulHiLo(uint32_t a, uint32_t b, uint32_t &hi,
                                          uint32_t &lo) {
  uint64_t product = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  hi = static_cast<uint32_t>(product >> 32);
  lo = static_cast<uint32_t>(product);
}

/// One Philox-4x32 round: two 32x32->64 multiplications, then the S-box
/// permutation (hi1^c1^k0, lo1, hi0^c3^k1, lo0).
AUTOSHARD_HOST_DEVICE inline PhiloxBlock philoxRound(PhiloxBlock c,
                                                     PhiloxKey k) {
  uint32_t hi0, lo0, hi1, lo1;
  mulHiLo(kPhiloxM0, c.word[0], hi0, lo0);
  mulHiLo(kPhiloxM1, c.word[2], hi1, lo1);
  return PhiloxBlock{
      {hi1 ^ c.word[1] ^ k.word[0], lo1, hi0 ^ c.word[3] ^ k.word[1], lo0}};
}
} // namespace detail

/// Philox-4x32-10: encrypts `counter` under `key` with 10 rounds, bumping the
/// key by the Weyl constants between rounds. Matches Random123's
/// philox4x32(ctr, key) and its published known-answer vectors.
AUTOSHARD_HOST_DEVICE inline PhiloxBlock philox4x32_10(PhiloxBlock counter,
                                                       PhiloxKey key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key.word[0] += detail::kPhiloxW0;
      key.word[1] += detail::kPhiloxW1;
    }
    counter = detail::philoxRound(counter, key);
  }
  return counter;
}

/// The key of a 64-bit seed: low word first.
AUTOSHARD_HOST_DEVICE inline PhiloxKey philoxKey(uint64_t seed) {
  return PhiloxKey{
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
}

/// Maps the top 24 bits of a random word to [0, 1) exactly (multiples of
/// 2^-24), so float and double consumers see the same value.
AUTOSHARD_HOST_DEVICE inline float uniform24(uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

/// The random stream of one dropout site (DESIGN.md §6): the mask bit of an
/// element depends only on (seed, step, layer, site, global element index).
///
/// Layout: key = seed (low word, high word); counter = (block low word,
/// block high word, step, layer << 16 | site) with block = index / 4; the
/// element uses output word index % 4. step < 2^32, layer < 2^16 and
/// site < 2^16 (the CPU kernels check this). An element is kept iff
/// (word >> 8) >= threshold, threshold = ceil(rate * 2^24), i.e. iff
/// uniform24(word) >= rate; kept elements are scaled by 1 / (1 - rate).
struct DropoutStream {
  PhiloxKey key;
  uint32_t step;
  uint32_t layerSite;
  uint32_t threshold;

  /// The four random words of the block holding element `index`.
  AUTOSHARD_HOST_DEVICE PhiloxBlock block(uint64_t blockIndex) const {
    PhiloxBlock counter{{static_cast<uint32_t>(blockIndex),
                         static_cast<uint32_t>(blockIndex >> 32), step,
                         layerSite}};
    return philox4x32_10(counter, key);
  }

  /// Whether element `index` is kept (not dropped).
  AUTOSHARD_HOST_DEVICE bool keep(uint64_t index) const {
    return (block(index >> 2).word[index & 3] >> 8) >= threshold;
  }
};

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_PHILOX_H
