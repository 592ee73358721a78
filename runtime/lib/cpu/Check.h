//===- Check.h - Argument checks shared by the CPU kernels ------*- C++ -*-===//
//
// Every failed check throws with the kernel, the argument and the value
// found, e.g. "embedding: id 70 at position 3 is out of range [0, 64)".
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_LIB_CPU_CHECK_H
#define AUTOSHARD_RUNTIME_LIB_CPU_CHECK_H

#include <cstdint>
#include <stdexcept>
#include <string>

namespace autoshard::runtime::cpu::detail {

/// Throws std::invalid_argument("<op>: <message>").
[[noreturn]] inline void fail(const char *op, const std::string &message) {
  throw std::invalid_argument(std::string(op) + ": " + message);
}

/// Requires a size or count to be >= min.
inline void checkAtLeast(const char *op, const char *what, int64_t value,
                         int64_t min) {
  if (value < min)
    fail(op, std::string(what) + " must be >= " + std::to_string(min) +
                 ", got " + std::to_string(value));
}

/// Requires index `value` (found at `position`) to be in [0, bound); throws
/// std::out_of_range otherwise.
template <typename I>
void checkIndex(const char *op, const char *what, I value, int64_t position,
                int64_t bound) {
  if (value < 0 || static_cast<int64_t>(value) >= bound)
    throw std::out_of_range(std::string(op) + ": " + what + " " +
                            std::to_string(value) + " at position " +
                            std::to_string(position) + " is out of range [0, " +
                            std::to_string(bound) + ")");
}

/// Checks every index of ids[0..count) against [0, bound).
template <typename I>
void checkIndices(const char *op, const char *what, const I *ids, int64_t count,
                  int64_t bound) {
  for (int64_t i = 0; i < count; ++i)
    checkIndex(op, what, ids[i], i, bound);
}

} // namespace autoshard::runtime::cpu::detail

#endif // AUTOSHARD_RUNTIME_LIB_CPU_CHECK_H
