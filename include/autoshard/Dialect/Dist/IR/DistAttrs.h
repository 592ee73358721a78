//===- DistAttrs.h - Sharding attributes ------------------------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_DIST_IR_DISTATTRS_H
#define AUTOSHARD_DIALECT_DIST_IR_DISTATTRS_H

#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/Support/MathExtras.h"

#include <optional>

#include "autoshard/Dialect/Dist/IR/DistEnums.h.inc"

namespace autoshard::dist {

class MeshOp;

/// A mesh axis over which a sharded value is partial, with the reduction
/// that is pending over it.
struct PartialAxis {
  mlir::StringAttr axis;
  ReductionKind kind;

  bool operator==(const PartialAxis &other) const {
    return axis == other.axis && kind == other.kind;
  }
};

inline llvm::hash_code hash_value(const PartialAxis &p) {
  return llvm::hash_combine(p.axis, p.kind);
}

/// Sorts partial axes by name, the canonical order stored in ShardingAttr.
void sortPartialAxes(llvm::MutableArrayRef<PartialAxis> axes);

/// `[a, b]`: a list of mesh axis names as diagnostics print it.
std::string axisListToString(mlir::ArrayAttr axes);

//===----------------------------------------------------------------------===//
// Overflow-checked size arithmetic
//
// Every product of mesh axis sizes or tensor dims in the dist dialect goes
// through these, so that a mesh or a shape whose sizes do not fit in int64
// is reported instead of wrapping (a wrapped product of 0 used to divide by
// zero, and a wrapped product could make a wrong shape verify).
//===----------------------------------------------------------------------===//

/// `a * b`, or nullopt if it does not fit in int64.
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t result;
  if (llvm::MulOverflow(a, b, result))
    return std::nullopt;
  return result;
}

/// Product of `factors` (1 if empty), or nullopt if it does not fit in int64.
inline std::optional<int64_t> checkedProduct(llvm::ArrayRef<int64_t> factors) {
  int64_t product = 1;
  for (int64_t factor : factors) {
    std::optional<int64_t> next = checkedMul(product, factor);
    if (!next)
      return std::nullopt;
    product = *next;
  }
  return product;
}

} // namespace autoshard::dist

#define GET_ATTRDEF_CLASSES
#include "autoshard/Dialect/Dist/IR/DistAttrs.h.inc"

#endif // AUTOSHARD_DIALECT_DIST_IR_DISTATTRS_H
