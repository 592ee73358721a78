//===- Instantiate.h - Explicit instantiation lists -------------*- C++ -*-===//
//
// The kernels are templates defined in their .cpp files and instantiated for
// the element types below; each .cpp applies these lists to a macro that
// spells one instantiation.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_LIB_CPU_INSTANTIATE_H
#define AUTOSHARD_RUNTIME_LIB_CPU_INSTANTIATE_H

#include <cstdint>

/// Applies MACRO(T) for every float element type.
#define AUTOSHARD_FOR_EACH_FLOAT(MACRO) MACRO(float) MACRO(double)

/// Applies MACRO(T, I) for every float element type and id type.
#define AUTOSHARD_FOR_EACH_FLOAT_AND_ID(MACRO)                                 \
  MACRO(float, int32_t)                                                        \
  MACRO(float, int64_t) MACRO(double, int32_t) MACRO(double, int64_t)

#endif // AUTOSHARD_RUNTIME_LIB_CPU_INSTANTIATE_H
