//===- HalfFloat.h - Exact widening of bf16 and f16 to f32 ------*- C++ -*-===//
//
// The 16-bit float formats an artifact may store (bf16: f32's upper half;
// f16: IEEE binary16) widened to f32. Every 16-bit value, subnormals, signed
// zeros, infinities and NaNs included, has an exact f32 value. Header-only:
// the CPU backend's casts and the training library's checkpoint readers
// share it.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_HALFFLOAT_H
#define AUTOSHARD_RUNTIME_HALFFLOAT_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace autoshard::runtime {

/// The f32 value of the bf16 bits `h`.
inline float bf16ToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// The f32 value of the IEEE binary16 bits `h`.
inline float f16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0x1F) { // inf / NaN
    bits = sign | 0x7F800000u | (mant << 13);
  } else if (exp != 0) { // normal
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) { // zero
    bits = sign;
  } else { // subnormal: mant * 2^-24
    float f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_HALFFLOAT_H
