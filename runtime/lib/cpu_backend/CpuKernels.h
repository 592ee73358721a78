//===- CpuKernels.h - Helpers of the CPU kernel binders ---------*- C++ -*-===//
//
// Each binder checks an instruction's operand types against its op with the
// backend-neutral checks of autoshard/runtime/KernelChecks.h (so a malformed
// artifact fails at load time, never with an out-of-bounds access), derives
// the kernel's shape struct and returns a closure over the CPU kernel of the
// right element type.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_LIB_BACKEND_CPUKERNELS_H
#define AUTOSHARD_RUNTIME_LIB_BACKEND_CPUKERNELS_H

#include "autoshard/runtime/Backend.h"
#include "autoshard/runtime/KernelChecks.h"
#include "autoshard/runtime/cpu/Attention.h"
#include "autoshard/runtime/cpu/Loss.h"
#include "autoshard/runtime/cpu/Matmul.h"
#include "autoshard/runtime/cpu/Moe.h"
#include "autoshard/runtime/cpu/Rope.h"
#include "autoshard/runtime/cpu/VocabParallel.h"

#include <string>

namespace autoshard::runtime::cpu_kernels {

// The operand checks (argName, resultName, expectType, expectScalar,
// expectRank, expectExactRank, expectResultsLikeArg0, expectAllLikeArg0,
// product, typeOf, withId) and the per-op checks.
using namespace ::autoshard::runtime::checks;

/// The CPU binder of op `Op` (OpTable.h): one specialization per op, in
/// the CpuKernels*.cpp of its family.
template <typename Op> BoundKernel bind(const KernelSignature &sig);

/// Registers `bind<Op>` under each Op's name.
template <typename... Op> void addBinders(KernelTable &table) {
  (table.add(Op::kName, bind<Op>), ...);
}

/// Registers the binders of each op family.
void registerDenseKernels(KernelTable &table);
void registerSequenceKernels(KernelTable &table);
void registerMoeKernels(KernelTable &table);
/// The communication kernels (`dist.*`, CpuKernelsComm.cpp).
void registerCommKernels(KernelTable &table);

/// The shared checks' results as the CPU kernels' shape structs
/// (CpuKernelChecks.cpp).
cpu::MatmulShape matmulShape(const MatmulDims &d);
cpu::RopeShape ropeShape(const RopeDims &d);
cpu::AttentionShape attentionShape(const AttentionDims &d);
cpu::CrossEntropyShape crossEntropyShape(const CrossEntropyDims &d);
cpu::VocabCeShape vocabCeShape(const VocabCeDims &d);
cpu::MoeShape moeShape(const MoeDims &d);

/// The CPU's float dispatch (f32, f64): `withFloat.bind(sig, slot, run)`
/// binds `run(T{}, Operands)` for the type of `slot`, `bindWithIds` adds
/// an id type (KernelChecks.h).
inline constexpr FloatDispatch<double> withFloat{DType::F64, "cpu"};

} // namespace autoshard::runtime::cpu_kernels

#endif // AUTOSHARD_RUNTIME_LIB_BACKEND_CPUKERNELS_H
