//===- Init.h - Deterministic parameter initialisation ----------*- C++ -*-===//
//
// The counter-based initialisation of docs/artifact-format.md
// ("Initialisation"): element i of state `name` is a function of
// (seed, name, i) only, so every sharding plan and every backend starts from
// the same full weights (DESIGN.md §6). Header-only and host/device
// portable so that the CUDA backend initialises on the device with the same
// code.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_INIT_H
#define AUTOSHARD_RUNTIME_INIT_H

#include "autoshard/runtime/Philox.h"

#include <cmath>
#include <cstdint>
#include <string_view>

namespace autoshard::runtime {

/// Key word XORed into the high seed word of the init stream ("INIT").
constexpr uint32_t kInitDomain = 0x494E4954u;

/// 64-bit FNV-1a hash of `bytes` (offset basis 0xcbf29ce484222325, prime
/// 0x100000001b3).
inline uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

/// The standard normal sample of global element `index` of the tensor whose
/// name hashes to `nameHash`: Box-Muller on the Philox block
/// (counter = (j_lo, j_hi, h_lo, h_hi), j = index / 2; key = (seed_lo,
/// seed_hi ^ "INIT")); cos for even indices, sin for odd ones, in double.
AUTOSHARD_HOST_DEVICE inline double initNormal(uint64_t seed, uint64_t nameHash,
                                               uint64_t index) {
  uint64_t j = index / 2;
  PhiloxKey key = philoxKey(seed);
  key.word[1] ^= kInitDomain;
  PhiloxBlock counter{{static_cast<uint32_t>(j), static_cast<uint32_t>(j >> 32),
                       static_cast<uint32_t>(nameHash),
                       static_cast<uint32_t>(nameHash >> 32)}};
  PhiloxBlock w = philox4x32_10(counter, key);
  constexpr double kTwoPow32 = 4294967296.0;
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  double u1 = (static_cast<double>(w.word[0]) + 1.0) / kTwoPow32; // (0, 1]
  double u2 = static_cast<double>(w.word[1]) / kTwoPow32;         // [0, 1)
  double r = std::sqrt(-2.0 * std::log(u1));
  return (index & 1) ? r * std::sin(kTwoPi * u2) : r * std::cos(kTwoPi * u2);
}

/// Writes elements [begin, begin + count) of a normal(0, stddev) tensor
/// named by `nameHash` into out[0..count) (a shard passes the global index
/// of its first element; a non-contiguous shard calls this per run).
template <typename T>
void initNormalRange(T *out, int64_t count, uint64_t begin, double stddev,
                     uint64_t seed, uint64_t nameHash) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = static_cast<T>(stddev * initNormal(seed, nameHash, begin + i));
}

/// Normal init of a block of a tensor whose *logical* shape may be smaller
/// than its buffer's (a padded vocabulary; docs/artifact-format.md,
/// "Initialisation"). The block has `rank` dims of sizes `local[d]`, and its
/// first element sits at global coordinates `offset` (null: all 0). An
/// element with global coordinates `g` inside `logical` (g[d] <
/// logical[d] for every d) gets `stddev * initNormal(seed, nameHash, i)`
/// with `i` the row-major index of `g` in `logical`; every other element
/// (the padding) is 0. With `logical` the global shape this is the plain
/// init of the global tensor, so the padded tensor restricted to the
/// logical shape equals the unpadded tensor.
template <typename T>
void initNormalBlock(T *out, size_t rank, const int64_t *local,
                     const int64_t *offset, const int64_t *logical,
                     double stddev, uint64_t seed, uint64_t nameHash) {
  if (rank == 0) {
    initNormalRange(out, 1, 0, stddev, seed, nameHash);
    return;
  }
  const int64_t inner = local[rank - 1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d)
    rows *= local[d];
  if (inner <= 0 || rows <= 0)
    return;
  // The elements of each row that lie inside the logical shape form one
  // prefix run [0, count) (offsets only grow along the row).
  const int64_t first = offset ? offset[rank - 1] : 0;
  int64_t count = logical[rank - 1] - first;
  count = count < 0 ? 0 : (count > inner ? inner : count);
  constexpr size_t kMaxRank = 16;
  int64_t idx[kMaxRank] = {}; // local coordinates of the row start
  for (int64_t row = 0; row < rows; ++row) {
    T *dst = out + row * inner;
    bool inside = count > 0;
    uint64_t begin = 0;
    for (size_t d = 0; inside && d < rank; ++d) {
      int64_t g = (d + 1 < rank ? idx[d] : 0) + (offset ? offset[d] : 0);
      if (d + 1 < rank && g >= logical[d])
        inside = false;
      begin =
          begin * static_cast<uint64_t>(logical[d]) + static_cast<uint64_t>(g);
    }
    int64_t n = inside ? count : 0;
    initNormalRange(dst, n, begin, stddev, seed, nameHash);
    for (int64_t i = n; i < inner; ++i)
      dst[i] = T(0);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < local[d])
        break;
      idx[d] = 0;
    }
  }
}

/// Zeroes the elements of a block (as in initNormalBlock) that lie outside
/// `logical`: the padding of a `ones`/`zeros` state.
template <typename T>
void zeroOutsideLogical(T *out, size_t rank, const int64_t *local,
                        const int64_t *offset, const int64_t *logical) {
  if (rank == 0)
    return;
  const int64_t inner = local[rank - 1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d)
    rows *= local[d];
  if (inner <= 0 || rows <= 0)
    return;
  const int64_t first = offset ? offset[rank - 1] : 0;
  int64_t count = logical[rank - 1] - first;
  count = count < 0 ? 0 : (count > inner ? inner : count);
  constexpr size_t kMaxRank = 16;
  int64_t idx[kMaxRank] = {};
  for (int64_t row = 0; row < rows; ++row) {
    bool inside = true;
    for (size_t d = 0; inside && d + 1 < rank; ++d)
      inside = idx[d] + (offset ? offset[d] : 0) < logical[d];
    for (int64_t i = inside ? count : 0; i < inner; ++i)
      out[row * inner + i] = T(0);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < local[d])
        break;
      idx[d] = 0;
    }
  }
}

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_INIT_H
