//===- DistAttrs.h - Sharding attributes ------------------------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_DIST_IR_DISTATTRS_H
#define AUTOSHARD_DIALECT_DIST_IR_DISTATTRS_H

#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/Hashing.h"

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

} // namespace autoshard::dist

#define GET_ATTRDEF_CLASSES
#include "autoshard/Dialect/Dist/IR/DistAttrs.h.inc"

#endif // AUTOSHARD_DIALECT_DIST_IR_DISTATTRS_H
