//===- DistInterfaces.td - Communication op interface ------*- tablegen -*-===//
//
// The interface and trait through which passes learn what a dist
// communication op does, instead of reading its name.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_DIST_IR_DISTINTERFACES_TD
#define AUTOSHARD_DIALECT_DIST_IR_DISTINTERFACES_TD

include "mlir/IR/OpBase.td"

def Dist_CommOpInterface : OpInterface<"CommOpInterface"> {
  let cppNamespace = "::autoshard::dist";
  let description = [{
    A communication op over the device group that `axes` of `mesh` span: a
    collective or a point-to-point op, in its blocking or its asynchronous
    `*_start` form (which returns a `!dist.async` handle that `dist.wait`
    completes).
  }];
  let methods = [
    StaticInterfaceMethod<[{
        Returns what the op communicates (both forms alike). Static, so that
        a reader of the rt form can ask the registered op an `rt.kernel`
        names (`getInterface<CommOpInterface>()`).
      }], "::autoshard::dist::CommKind", "getCommKind">,
    InterfaceMethod<"True for the asynchronous `*_start` form.",
      "bool", "isAsync">,
    InterfaceMethod<"Returns the mesh of the device group.",
      "::mlir::FlatSymbolRefAttr", "getMeshAttr">,
    InterfaceMethod<"Returns the mesh axes the device group spans.",
      "::mlir::ArrayAttr", "getAxes">,
    StaticInterfaceMethod<[{
        Returns the name of the op's asynchronous `*_start` form (its own
        name for that form), which takes the same operands and attributes.
      }], "::llvm::StringRef", "getStartOpName">,
  ];
}

// Starts or completes an asynchronous communication (`*_start` ops and
// `dist.wait`): between the two, the communication reads the operand and
// writes the result buffer behind the compute. C++ class in DistOps.h.
def Dist_AsyncCommunication : NativeOpTrait<"AsyncCommunication"> {
  let cppNamespace = "::autoshard::dist::trait";
}

#endif // AUTOSHARD_DIALECT_DIST_IR_DISTINTERFACES_TD
