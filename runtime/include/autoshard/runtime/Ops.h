//===- Ops.h - The kernels an artifact may name -----------------*- C++ -*-===//
//
// Lookup in the generated op table (OpTable.h, from the tfm and dist ODS
// through RtKernels.td): the arity, attributes and operand names of every
// kernel, so the loader rejects an unknown op or a wrong operand count
// before any backend binds it, and binders name operands by slot
// (`ops::Matmul::lhs`).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_OPS_H
#define AUTOSHARD_RUNTIME_OPS_H

#include "autoshard/runtime/OpTable.h"

#include <string_view>

namespace autoshard::runtime {

/// Prefix of the communication kernels (`dist.all_reduce`, ...): the dist
/// op names, distinct from every tfm kernel name (`broadcast` is the tensor
/// op, `dist.broadcast` the collective).
constexpr std::string_view kCommPrefix = "dist.";

/// Whether `op` is a communication kernel (`dist.*`).
bool isCommOp(std::string_view op);
/// Whether `op` starts an asynchronous communication (`dist.*_start`): its
/// results are written by the time the matching `dist.wait` returns.
bool isAsyncStartOp(std::string_view op);

/// Every known kernel, in the table's (stable) order.
constexpr ConstSpan<OpSpec> allOps() {
  return {kOpTable, static_cast<int>(sizeof(kOpTable) / sizeof(kOpTable[0]))};
}

/// The ABI of kernel `name` ("matmul", "dist.wait"), or nullptr if the
/// runtime does not know the op. Header-only: rt-export calls it too.
constexpr const OpSpec *lookupOp(std::string_view name) {
  for (const OpSpec &op : allOps())
    if (op.name == name)
      return &op;
  return nullptr;
}

} // namespace autoshard::runtime

#endif // AUTOSHARD_RUNTIME_OPS_H
