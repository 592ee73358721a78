//===- DistOps.h - Distribution ops -----------------------------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_DIST_IR_DISTOPS_H
#define AUTOSHARD_DIALECT_DIST_IR_DISTOPS_H

#include "autoshard/Dialect/Dist/IR/DistAttrs.h"
#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "autoshard/Dialect/Dist/IR/DistInterfaces.h"
#include "autoshard/Dialect/Dist/IR/DistTypes.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace autoshard::dist {

/// The side-effect resource of communication: collectives, point-to-point
/// ops and waits read and write it, so they keep their relative order and
/// are never merged or erased, while pure compute moves freely around them.
struct CommunicationResource
    : public mlir::SideEffects::Resource::Base<CommunicationResource> {
  llvm::StringRef getName() override { return "dist.communication"; }
};

namespace trait {

/// Starts or completes an asynchronous communication (the `*_start` ops and
/// `dist.wait`): between the two the communication reads the started op's
/// operand and writes its result, so accesses to those buffers must not
/// move across either.
template <typename ConcreteType>
class AsyncCommunication
    : public mlir::OpTrait::TraitBase<ConcreteType, AsyncCommunication> {};

} // namespace trait
} // namespace autoshard::dist

#define GET_OP_CLASSES
#include "autoshard/Dialect/Dist/IR/DistOps.h.inc"

namespace autoshard::dist {

/// The mesh `meshRef` names, looked up from the nearest symbol table around
/// `from`; null if there is none.
MeshOp lookupMesh(mlir::Operation *from, mlir::FlatSymbolRefAttr meshRef);
/// As above, caching symbol tables in `symbolTables`.
MeshOp lookupMesh(mlir::SymbolTableCollection &symbolTables,
                  mlir::Operation *from, mlir::FlatSymbolRefAttr meshRef);

/// For verifiers: the mesh `meshRef` names, looked up from `from` (through
/// `symbolTables` if given). Reports through `emitError` and fails if no
/// symbol has that name ("unknown mesh @x") or the symbol is not a mesh
/// ("symbol @m is not a dist.mesh (found func.func)").
mlir::FailureOr<MeshOp>
lookupMeshOrError(mlir::SymbolTableCollection *symbolTables,
                  mlir::Operation *from, mlir::FlatSymbolRefAttr meshRef,
                  llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// For module passes that work on one mesh: the module's only `dist.mesh`,
/// a null MeshOp if it has none, or failure (reported on the second mesh,
/// naming `passName` and the count) if it has several.
mlir::FailureOr<MeshOp> getSingleMesh(mlir::ModuleOp module,
                                      llvm::StringRef passName);

} // namespace autoshard::dist

#endif // AUTOSHARD_DIALECT_DIST_IR_DISTOPS_H
