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

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_INIT_H
