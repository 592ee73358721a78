//===- ExternalModels.h - Attaching the tfm sharding models -----*- C++ -*-===//
//
// One function per file of this library;
// registerShardingInterfaceExternalModels (ShardingInterfaceImpl.cpp) calls
// them when the tfm dialect is loaded. Private to the library.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_LIB_DIALECT_TFM_SHARDING_EXTERNALMODELS_H
#define AUTOSHARD_LIB_DIALECT_TFM_SHARDING_EXTERNALMODELS_H

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace autoshard::tfm {
/// dist::ShardingRuleOpInterface on every tfm op (ShardingRules.cpp).
void attachShardingRuleModels(mlir::MLIRContext *ctx);
/// dist::PartitionOpInterface on the ops with a partition hook
/// (PartitionHooks.cpp).
void attachPartitionModels(mlir::MLIRContext *ctx);
/// The context-parallel hooks: ring attention, rope on a sequence chunk
/// (RingAttention.cpp).
void attachRingAttentionModels(mlir::MLIRContext *ctx);
} // namespace autoshard::tfm

#endif // AUTOSHARD_LIB_DIALECT_TFM_SHARDING_EXTERNALMODELS_H
