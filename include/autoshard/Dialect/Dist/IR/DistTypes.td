//===- DistTypes.td - Distribution types -------------------*- tablegen -*-===//

#ifndef AUTOSHARD_DIALECT_DIST_IR_DISTTYPES_TD
#define AUTOSHARD_DIALECT_DIST_IR_DISTTYPES_TD

include "autoshard/Dialect/Dist/IR/DistDialect.td"
include "mlir/IR/AttrTypeBase.td"

class Dist_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Dist_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Dist_AsyncType : Dist_Type<"Async", "async"> {
  let summary = "handle of an in-flight asynchronous collective";
  let description = [{
    Returned by the `*_start` form of a collective and consumed by
    `dist.wait`, which yields the collective's result: a value of the
    wrapped tensor type. A handle of a `dist.send_start` carries no value
    and is written without parameter.

    ```mlir
    !dist.async<tensor<8x128xf32>>   // completes to a tensor<8x128xf32>
    !dist.async                      // a send: completes to nothing
    ```
  }];
  let parameters = (ins OptionalParameter<"::mlir::Type">:$valueType);
  let assemblyFormat = "(`<` $valueType^ `>`)?";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The tensor type `dist.wait` yields, or null for a send.
    ::mlir::RankedTensorType getTensorType() const {
      return ::llvm::cast_if_present<::mlir::RankedTensorType>(getValueType());
    }
  }];
}

#endif // AUTOSHARD_DIALECT_DIST_IR_DISTTYPES_TD
