//===- ShardingInterfaces.cpp - The sharding contract ---------------------===//

#include "autoshard/Dialect/Dist/Interfaces/ShardingInterfaces.h"

#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Operation.h"

using namespace mlir;
using namespace autoshard::dist;

#include "autoshard/Dialect/Dist/Interfaces/ShardingInterfaces.cpp.inc"

PartitionContext::~PartitionContext() = default;

/// Whether `op`'s dialect promised `InterfaceT` for it and nothing attached
/// it yet (attaching a model resolves the promise).
template <typename InterfaceT> static bool hasUnresolvedPromise(Operation *op) {
  Dialect *dialect = op->getName().getDialect();
  return dialect &&
         dialect_extension_detail::hasPromisedInterface(
             *dialect, op->getName().getTypeID(), InterfaceT::getInterfaceID());
}

LogicalResult autoshard::dist::verifyShardingModelsRegistered(Operation *root) {
  WalkResult result = root->walk([](Operation *op) {
    StringRef missing;
    if (hasUnresolvedPromise<ShardingRuleOpInterface>(op))
      missing = "ShardingRuleOpInterface";
    else if (hasUnresolvedPromise<PartitionOpInterface>(op))
      missing = "PartitionOpInterface";
    if (missing.empty())
      return WalkResult::advance();
    op->emitOpError() << "has no dist " << missing
                      << " model: its dialect promised one, but its sharding "
                         "external models were never registered in this "
                         "tool's DialectRegistry";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}
