//===- Parallel.h - Deterministic parallel loops of CPU kernels -*- C++ -*-===//
//
// Kernels split their work into chunks whose boundaries depend only on the
// problem size, never on the thread count; a kernel that reduces inside a
// chunk and combines the chunks' results in chunk order therefore gives
// bitwise the same result on 1 thread and on N (the same plan on another
// machine, or with another --threads, trains identically).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_LIB_CPU_PARALLEL_H
#define AUTOSHARD_RUNTIME_LIB_CPU_PARALLEL_H

#include <algorithm>
#include <cstdint>

namespace autoshard::runtime::cpu::detail {

/// Elements per chunk of an elementwise kernel: large enough that a chunk's
/// work (~10 us) dwarfs OpenMP's fork/join, small enough to balance 2-16
/// threads on the model sizes the CPU backend runs.
constexpr int64_t kElementwiseGrain = 16384;

/// Calls fn(chunk, begin, end) for the chunks [c * grain, min(n, (c + 1) *
/// grain)) of [0, n), spread statically over the OpenMP pool (serially when
/// there is one chunk, or when already inside a parallel region). fn must
/// not throw: check arguments before the loop.
template <typename Fn> void parallelChunks(int64_t n, int64_t grain, Fn fn) {
  if (n <= 0)
    return;
  const int64_t chunks = (n + grain - 1) / grain;
  if (chunks == 1) {
    fn(int64_t(0), int64_t(0), n);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c)
    fn(c, c * grain, std::min(n, (c + 1) * grain));
}

/// Number of chunks parallelChunks(n, grain, ...) makes.
inline int64_t chunkCount(int64_t n, int64_t grain) {
  return n <= 0 ? 0 : (n + grain - 1) / grain;
}

} // namespace autoshard::runtime::cpu::detail

#endif // AUTOSHARD_RUNTIME_LIB_CPU_PARALLEL_H
