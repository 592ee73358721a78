//===- DistOps.td - Distribution ops -----------------------*- tablegen -*-===//

#ifndef AUTOSHARD_DIALECT_DIST_IR_DISTOPS_TD
#define AUTOSHARD_DIALECT_DIST_IR_DISTOPS_TD

include "autoshard/Dialect/Dist/IR/DistDialect.td"
include "autoshard/Dialect/Dist/IR/DistAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Dist_MeshOp : Dist_Op<"mesh", [Symbol]> {
  let summary = "a named device mesh with ordered, named axes";
  let description = [{
    Declares a device mesh. Axes are listed major to minor; device ids are
    assigned row-major, so the last axis varies fastest (tensor parallelism
    on the last axis stays inside a node).

    ```mlir
    dist.mesh @m [pp = 2, dp = 2, cp = 1, tp = 2]
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axis_names,
                       DenseI64ArrayAttr:$axis_sizes);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

#endif // AUTOSHARD_DIALECT_DIST_IR_DISTOPS_TD
