//===- ShardingInterfaceImpl.h - Tfm models of the dist sharding -*- C++
//-*-===//
//
// The tfm dialect's implementation of the dist sharding contract
// (autoshard/Dialect/Dist/Interfaces/ShardingInterfaces.h): every tfm op's
// factor sharding rule and the partition hooks of the ops that need one,
// attached as external models, as upstream's Linalg implements the Shard
// dialect's ShardingInterface
// (linalg::registerShardingInterfaceExternalModels).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_TFM_SHARDING_SHARDINGINTERFACEIMPL_H
#define AUTOSHARD_DIALECT_TFM_SHARDING_SHARDINGINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace autoshard::tfm {

/// Registers, for when the tfm dialect is loaded, the external models of
/// dist::ShardingRuleOpInterface (every tfm op) and
/// dist::PartitionOpInterface (the ops with a partition hook); loads the
/// dist dialect, whose ops the hooks create. Every tool whose registry runs
/// dist passes on tfm IR must call it: without it those passes report that
/// the models are missing.
void registerShardingInterfaceExternalModels(mlir::DialectRegistry &registry);

} // namespace autoshard::tfm

#endif // AUTOSHARD_DIALECT_TFM_SHARDING_SHARDINGINTERFACEIMPL_H
