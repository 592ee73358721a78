//===- ShardingInterfaceImpl.cpp - Tfm models of the dist sharding --------===//

#include "autoshard/Dialect/Tfm/Sharding/ShardingInterfaceImpl.h"
#include "ExternalModels.h"

#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "autoshard/Dialect/Tfm/IR/TfmDialect.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

using namespace mlir;

void autoshard::tfm::registerShardingInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, TfmDialect *) {
    // The partition hooks create dist collectives.
    ctx->getOrLoadDialect<dist::DistDialect>();
    attachShardingRuleModels(ctx);
    attachPartitionModels(ctx);
    attachRingAttentionModels(ctx);
  });
}
