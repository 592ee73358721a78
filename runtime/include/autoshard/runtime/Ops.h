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
  int maxArgs; ///< -1: variadic (any count >= minArgs).
  int numResults;
  std::vector<std::string_view> requiredAttrs;
};

/// The signature of op `name` (without the "tfm." prefix), or nullptr if the
/// runtime does not know the op.
const OpSignature *lookupOp(std::string_view name);

/// Every known op, in a stable order.
const std::vector<OpSignature> &allOps();

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_OPS_H
