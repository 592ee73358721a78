//===- Elementwise.cpp - CPU elementwise and reduction kernels ------------===//

#include "autoshard/runtime/cpu/Elementwise.h"

#include "Check.h"
#include "Instantiate.h"
#include "Parallel.h"

#include <algorithm>
#include <functional>

namespace autoshard::runtime::cpu {
namespace {

/// out = op(lhs, rhs) with rhs repeating every rhsNumel elements; the inner
/// loop runs over contiguous memory of all three operands.
template <typename T, typename Op>
void broadcastBinary(const char *opName, const T *lhs, const T *rhs, T *out,
                     int64_t numel, int64_t rhsNumel, Op op) {
  detail::checkAtLeast(opName, "numel", numel, 0);
  detail::checkAtLeast(opName, "rhs numel", rhsNumel, 1);
  if (numel % rhsNumel != 0)
    detail::fail(opName, "rhs has " + std::to_string(rhsNumel) +
                             " elements, which do not divide lhs's " +
                             std::to_string(numel) +
                             " (rhs must be a suffix of lhs's shape)");
  if (rhsNumel == numel) {
    detail::parallelChunks(numel, detail::kElementwiseGrain,
                           [&](int64_t, int64_t b, int64_t e) {
                             for (int64_t i = b; i < e; ++i)
                               out[i] = op(lhs[i], rhs[i]);
                           });
    return;
  }
  // Chunks of whole repetitions of rhs.
  const int64_t reps = numel / rhsNumel;
  detail::parallelChunks(
      reps, std::max<int64_t>(1, detail::kElementwiseGrain / rhsNumel),
      [&](int64_t, int64_t b, int64_t e) {
        for (int64_t base = b * rhsNumel; base < e * rhsNumel; base += rhsNumel)
          for (int64_t i = 0; i < rhsNumel; ++i)
            out[base + i] = op(lhs[base + i], rhs[i]);
      });
}

/// A run of adjacent dims that are all reduced or all kept, merged into one.
struct Run {
  int64_t size;
  int64_t inStride;
  int64_t outStride;
  bool reduced;
};

template <typename T>
void reduceRuns(const std::vector<Run> &runs, size_t level, const T *x,
                T *out) {
  const Run &run = runs[level];
  if (level + 1 == runs.size()) {
    // Innermost run: contiguous in x (and in out when kept).
    if (run.reduced) {
      T sum = T(0);
      for (int64_t i = 0; i < run.size; ++i)
        sum += x[i];
      out[0] += sum;
    } else {
      for (int64_t i = 0; i < run.size; ++i)
        out[i] += x[i];
    }
    return;
  }
  for (int64_t i = 0; i < run.size; ++i)
    reduceRuns(runs, level + 1, x + i * run.inStride,
               run.reduced ? out : out + i * run.outStride);
}

/// The adjoint of reduceRuns: `x` is indexed with the outStride of a run
/// (kept dims only), `out` with its inStride (every dim).
template <typename T>
void broadcastRuns(const std::vector<Run> &runs, size_t level, const T *x,
                   T *out) {
  const Run &run = runs[level];
  if (level + 1 == runs.size()) {
    // Innermost run: contiguous in out (and in x when kept).
    if (run.reduced)
      std::fill(out, out + run.size, x[0]);
    else
      std::copy(x, x + run.size, out);
    return;
  }
  for (int64_t i = 0; i < run.size; ++i)
    broadcastRuns(runs, level + 1, run.reduced ? x : x + i * run.outStride,
                  out + i * run.inStride);
}

/// Checks `dims` against `shape` (the larger, full-rank shape), merges
/// adjacent dims of the same kind (skipping size-1 dims) into runs,
/// outermost first, and returns the element counts of the full shape and of
/// the shape without `dims`.
std::vector<Run> makeRuns(const char *op, const std::vector<int64_t> &shape,
                          const std::vector<int64_t> &dims, int64_t &fullNumel,
                          int64_t &keptNumel) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<bool> reduced(shape.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= rank)
      detail::fail(op, "dim " + std::to_string(dims[i]) +
                           " is out of range [0, " + std::to_string(rank) +
                           ")");
    if (i > 0 && dims[i] <= dims[i - 1])
      detail::fail(op, "dims must be sorted and unique, got " +
                           std::to_string(dims[i - 1]) + " before " +
                           std::to_string(dims[i]));
    reduced[dims[i]] = true;
  }
  fullNumel = 1;
  keptNumel = 1;
  for (int64_t d = 0; d < rank; ++d) {
    detail::checkAtLeast(op, "dim size", shape[d], 0);
    fullNumel *= shape[d];
    if (!reduced[d])
      keptNumel *= shape[d];
  }
  // Innermost first, so the recursion's inner loop is as long as possible.
  std::vector<Run> runs;
  int64_t inStride = 1, outStride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (shape[d] == 1)
      continue;
    if (!runs.empty() && runs.back().reduced == reduced[d])
      runs.back().size *= shape[d];
    else
      runs.push_back(Run{shape[d], inStride, outStride, reduced[d]});
    inStride *= shape[d];
    if (!reduced[d])
      outStride *= shape[d];
  }
  std::reverse(runs.begin(), runs.end());
  return runs;
}

} // namespace

template <typename T>
void add(const T *lhs, const T *rhs, T *out, int64_t numel, int64_t rhsNumel) {
  broadcastBinary("add", lhs, rhs, out, numel, rhsNumel, std::plus<T>());
}

template <typename T>
void sub(const T *lhs, const T *rhs, T *out, int64_t numel, int64_t rhsNumel) {
  broadcastBinary("sub", lhs, rhs, out, numel, rhsNumel, std::minus<T>());
}

template <typename T>
void mul(const T *lhs, const T *rhs, T *out, int64_t numel, int64_t rhsNumel) {
  broadcastBinary("mul", lhs, rhs, out, numel, rhsNumel, std::multiplies<T>());
}

template <typename T>
void scale(const T *x, T *out, int64_t numel, double factor) {
  detail::checkAtLeast("scale", "numel", numel, 0);
  const T f = static_cast<T>(factor);
  for (int64_t i = 0; i < numel; ++i)
    out[i] = f * x[i];
}

template <typename T>
void reduceSum(const T *x, T *out, const std::vector<int64_t> &shape,
               const std::vector<int64_t> &dims) {
  int64_t inNumel, outNumel;
  std::vector<Run> runs =
      makeRuns("reduce_sum", shape, dims, inNumel, outNumel);
  std::fill(out, out + outNumel, T(0));
  if (inNumel == 0)
    return;
  if (runs.empty()) {
    out[0] = x[0];
    return;
  }
  reduceRuns(runs, 0, x, out);
}

template <typename T>
void broadcast(const T *x, T *out, const std::vector<int64_t> &shape,
               const std::vector<int64_t> &dims) {
  int64_t outNumel, inNumel;
  std::vector<Run> runs = makeRuns("broadcast", shape, dims, outNumel, inNumel);
  if (outNumel == 0)
    return;
  if (runs.empty()) {
    out[0] = x[0];
    return;
  }
  broadcastRuns(runs, 0, x, out);
}

#define INSTANTIATE(T)                                                         \
  template void add<T>(const T *, const T *, T *, int64_t, int64_t);           \
  template void sub<T>(const T *, const T *, T *, int64_t, int64_t);           \
  template void mul<T>(const T *, const T *, T *, int64_t, int64_t);           \
  template void scale<T>(const T *, T *, int64_t, double);                     \
  template void reduceSum<T>(const T *, T *, const std::vector<int64_t> &,     \
                             const std::vector<int64_t> &);                    \
  template void broadcast<T>(const T *, T *, const std::vector<int64_t> &,     \
                             const std::vector<int64_t> &);
AUTOSHARD_FOR_EACH_FLOAT(INSTANTIATE)

} // namespace autoshard::runtime::cpu
