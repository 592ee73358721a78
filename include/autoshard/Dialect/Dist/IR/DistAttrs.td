//===- DistAttrs.td - Sharding attributes ------------------*- tablegen -*-===//

#ifndef AUTOSHARD_DIALECT_DIST_IR_DISTATTRS_TD
#define AUTOSHARD_DIALECT_DIST_IR_DISTATTRS_TD

include "autoshard/Dialect/Dist/IR/DistDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Dist_ReductionKind : I32EnumAttr<"ReductionKind",
    "reduction applied to partial values and by reducing collectives", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Max", 1, "max">,
    ]> {
  let cppNamespace = "::autoshard::dist";
  let genSpecializedAttr = 0;
}

def Dist_ReductionKindAttr : EnumAttr<Dist_Dialect, Dist_ReductionKind, "reduction">;

#endif // AUTOSHARD_DIALECT_DIST_IR_DISTATTRS_TD
