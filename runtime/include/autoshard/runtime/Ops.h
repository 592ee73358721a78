//===- Ops.h - Operand signatures of the tfm ops ----------------*- C++ -*-===//
//
// The arity and required attributes of every tfm op an artifact may name
// (spec/tfm-ops.md, docs/Dialects/TfmOps.md), so the loader rejects an
// unknown op or a wrong operand count before any backend binds it.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_OPS_H
#define AUTOSHARD_RUNTIME_OPS_H

#include <cstdint>
#include <string_view>
#include <vector>

namespace autoshard::runtime {

/// Operand counts and required attributes of one op.
struct OpSignature {
  std::string_view name;
  int minArgs;
  int maxArgs;    ///< -1: variadic (any count >= minArgs).
  int numResults; ///< The most results; -1: variadic (at least one).
  std::vector<std::string_view> requiredAttrs;
  /// The fewest results, -1: numResults (`dist.wait`: 0, one for a
  /// collective or receive, none for a send; `matmul`: 1, or 2 with the
  /// fused gelu epilogue keeping its pre-activation).
  int minResults = -1;
};

/// Prefix of the communication kernels (`dist.all_reduce`, ...): the dist
/// op names, distinct from every tfm kernel name (`broadcast` is the tensor
/// op, `dist.broadcast` the collective).
constexpr std::string_view kCommPrefix = "dist.";

/// Whether `op` is a communication kernel (`dist.*`).
bool isCommOp(std::string_view op);
/// Whether `op` starts an asynchronous communication (`dist.*_start`): its
/// results are written by the time the matching `dist.wait` returns.
bool isAsyncStartOp(std::string_view op);

/// The signature of op `name` (without the "tfm." prefix), or nullptr if the
/// runtime does not know the op.
const OpSignature *lookupOp(std::string_view name);

/// Every known op, in a stable order.
const std::vector<OpSignature> &allOps();

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_OPS_H
