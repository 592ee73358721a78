//===- OneDnnEltwise.h - oneDNN's eltwise primitives for f32 ----*- C++ -*-===//
//
// The exact GELU, forward and backward, on oneDNN's JIT eltwise primitive
// (algorithm eltwise_gelu_erf; what PyTorch's mkldnn path runs). SLEEF's
// 1-ULP erff is about 8x slower on AVX2; oneDNN's polynomial erf is
// accurate to about 1e-7 absolute. Threads: the one OpenMP pool.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_LIB_CPU_ONEDNNELTWISE_H
#define AUTOSHARD_RUNTIME_LIB_CPU_ONEDNNELTWISE_H

#include <cstdint>

namespace autoshard::runtime::cpu::detail {

/// True when this build has oneDNN (AUTOSHARD_SCALAR_KERNELS=1 turns it off,
/// as it does the SLEEF loops).
bool hasOneDnn();

/// y = 0.5 x (1 + erf(x / sqrt 2)) over n contiguous floats.
void oneDnnGeluErf(const float *x, float *y, int64_t n);

/// dx = dy * gelu'(x) over n contiguous floats.
void oneDnnGeluErfGrad(const float *dy, const float *x, float *dx, int64_t n);

} // namespace autoshard::runtime::cpu::detail

#endif // AUTOSHARD_RUNTIME_LIB_CPU_ONEDNNELTWISE_H
