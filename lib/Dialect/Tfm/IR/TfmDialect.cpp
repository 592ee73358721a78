//===- TfmDialect.cpp - Transformer graph dialect -------------------------===//

#include "autoshard/Dialect/Tfm/IR/TfmDialect.h"
#include "autoshard/Dialect/Dist/Interfaces/ShardingInterfaces.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

using namespace mlir;
using namespace autoshard::tfm;

#include "autoshard/Dialect/Tfm/IR/TfmOpsDialect.cpp.inc"

void TfmDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "autoshard/Dialect/Tfm/IR/TfmOps.cpp.inc"
      >();
  // Every op's sharding rule is an external model (lib/Dialect/Tfm/Sharding),
  // so that this dialect does not depend on dist. The promise lets the dist
  // passes report a tool that forgot to register the models.
  declarePromisedInterfaces<dist::ShardingRuleOpInterface,
#define GET_OP_LIST
#include "autoshard/Dialect/Tfm/IR/TfmOps.cpp.inc"
                            >();
}
