//===- VecMath.cpp - CPU feature check for the vectorised kernels ---------===//

#include "VecMath.h"

#include <cstdlib>
#include <cstring>

namespace autoshard::runtime::cpu::detail {

bool hasAvx2Fma() {
#if !AUTOSHARD_HAVE_SLEEF_AVX2
  return false; // built without SLEEF or not for x86-64
#else
  // AUTOSHARD_SCALAR_KERNELS=1 forces the scalar templates (to compare).
  static const bool value = [] {
    const char *scalar = std::getenv("AUTOSHARD_SCALAR_KERNELS");
    if (scalar && std::strcmp(scalar, "1") == 0)
      return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return value;
#endif
}

} // namespace autoshard::runtime::cpu::detail
