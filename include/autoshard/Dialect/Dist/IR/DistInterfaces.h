//===- DistInterfaces.h - Communication op interface ------------*- C++ -*-===//
//
// CommOpInterface (DistInterfaces.td): what a dist communication op does,
// for passes that cost, reorder or rewrite communication without reading op
// names. The AsyncCommunication trait is in DistOps.h.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_DIST_IR_DISTINTERFACES_H
#define AUTOSHARD_DIALECT_DIST_IR_DISTINTERFACES_H

#include "autoshard/Dialect/Dist/IR/DistAttrs.h"
#include "mlir/IR/OpDefinition.h"

#include "autoshard/Dialect/Dist/IR/DistInterfaces.h.inc"

#endif // AUTOSHARD_DIALECT_DIST_IR_DISTINTERFACES_H
