//===- TfmDialect.cpp - Transformer graph dialect -------------------------===//

#include "autoshard/Dialect/Tfm/IR/TfmDialect.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

using namespace mlir;
using namespace autoshard::tfm;

#include "autoshard/Dialect/Tfm/IR/TfmOpsDialect.cpp.inc"

void TfmDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "autoshard/Dialect/Tfm/IR/TfmOps.cpp.inc"
      >();
  // Partition hooks (TfmPartitionHooks.cpp), attached as external models.
  attachPartitionInterfaces(getContext());
}
