//===- Elementwise.h - CPU elementwise and reduction kernels ----*- C++ -*-===//
//
// tfm.add/sub/mul with suffix broadcasting, tfm.scale, tfm.reduce_sum and
// its adjoint tfm.broadcast.
// All tensors are dense and row-major.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_CPU_ELEMENTWISE_H
#define AUTOSHARD_RUNTIME_CPU_ELEMENTWISE_H

#include <cstdint>
#include <vector>

namespace autoshard::runtime::cpu {

/// tfm.add: out = lhs + rhs. lhs and out have `numel` elements; rhs has
/// `rhsNumel` elements and its shape is lhs's shape or a suffix of it (1 for
/// a rank-0 scalar), so rhs repeats every rhsNumel elements of lhs. out may
/// alias lhs. Throws std::invalid_argument unless rhsNumel divides numel.
template <typename T>
void add(const T *lhs, const T *rhs, T *out, int64_t numel, int64_t rhsNumel);

/// tfm.sub: out = lhs - rhs, broadcasting as add().
template <typename T>
void sub(const T *lhs, const T *rhs, T *out, int64_t numel, int64_t rhsNumel);

/// tfm.mul: out = lhs * rhs, broadcasting as add().
template <typename T>
void mul(const T *lhs, const T *rhs, T *out, int64_t numel, int64_t rhsNumel);

/// tfm.scale: out = factor * x over `numel` elements (factor rounded to T
/// once). out may alias x.
template <typename T>
void scale(const T *x, T *out, int64_t numel, double factor);

/// tfm.reduce_sum: out = x summed over `dims` (sorted, unique, each in
/// [0, rank)), which are removed from the shape. Throws
/// std::invalid_argument on unsorted, repeated or out-of-range dims.
template <typename T>
void reduceSum(const T *x, T *out, const std::vector<int64_t> &shape,
               const std::vector<int64_t> &dims);

/// tfm.broadcast (the adjoint of reduceSum): `shape` is the shape of out;
/// `dims` (sorted, unique, each in [0, rank)) are the dims x lacks, and x's
/// shape is `shape` without them. out[i...] = x[i... without dims], so x is
/// repeated along `dims`. An empty `dims` is a copy. Throws
/// std::invalid_argument on unsorted, repeated or out-of-range dims.
template <typename T>
void broadcast(const T *x, T *out, const std::vector<int64_t> &shape,
               const std::vector<int64_t> &dims);

} // namespace autoshard::runtime::cpu

#endif // AUTOSHARD_RUNTIME_CPU_ELEMENTWISE_H
