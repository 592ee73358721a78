//===- CpuLowPrecision.h - bf16/f16 storage on the CPU backend --*- C++ -*-===//
//
// The CPU kernels compute in f32 or f64. A mixed-precision artifact
// (tfm-mixed-precision) stores activations in bf16 (or f16): the CPU backend
// binds the `cast` kernel natively and every other instruction with a
// 16-bit float operand through its f32 kernel, converting the 16-bit
// operands to f32 scratch buffers before the call and the 16-bit results
// back (rounding to nearest even) after it, or at the `dist.wait` of an
// asynchronous collective. So a bf16 program runs on the CPU with bf16
// storage and f32 arithmetic: the oracle for the CUDA backend's bf16 kernels
// up to their accumulation order.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_LIB_BACKEND_CPULOWPRECISION_H
#define AUTOSHARD_RUNTIME_LIB_BACKEND_CPULOWPRECISION_H

#include "autoshard/runtime/Backend.h"

#include <cstdint>
#include <string_view>

namespace autoshard::runtime::cpu_kernels {

/// Registers the `cast` kernel (CpuKernelsCast.cpp).
void registerCastKernels(KernelTable &table);

/// Binds `signature` with `table`; an instruction with bf16/f16 operands
/// that its kernel does not take is bound through the f32 kernel with
/// conversions around it (see above).
BoundKernel bindWithLowPrecision(const KernelTable &table,
                                 const KernelSignature &signature,
                                 std::string_view backendName);

/// Whether `numel` 16-bit floats (bf16 or f16) at `data` hold a NaN.
bool anyNaN16(const void *data, DType dtype, int64_t numel);

/// Converts `numel` floats to bf16 / f16 (`dtype`), rounding to nearest even.
void floatsTo16(const float *src, void *dst, DType dtype, int64_t numel);

} // namespace autoshard::runtime::cpu_kernels

#endif // AUTOSHARD_RUNTIME_LIB_BACKEND_CPULOWPRECISION_H
