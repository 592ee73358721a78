//===- Registration.h - What every autoshard tool registers -----*- C++ -*-===//
//
// The dialects (ours and the upstream ones model IR uses) and the external
// models that a tool running autoshard IR through its passes needs, in one
// place for shard-opt and the fuzz targets (tools/fuzz).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_TOOLS_REGISTRATION_H
#define AUTOSHARD_TOOLS_REGISTRATION_H

#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "autoshard/Dialect/Rt/IR/RtDialect.h"
#include "autoshard/Dialect/Tfm/IR/TfmDialect.h"
#include "autoshard/Dialect/Tfm/Sharding/ShardingInterfaceImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

namespace autoshard {

/// Adds the tfm, dist and rt dialects, the upstream dialects model IR uses
/// (func, arith, tensor) and the tfm ops' sharding models to `registry`.
inline void registerAutoshardDialects(mlir::DialectRegistry &registry) {
  registry.insert<tfm::TfmDialect, dist::DistDialect, rt::RtDialect,
                  mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::tensor::TensorDialect>();
  // The tfm ops' sharding rules and partition hooks (dist interfaces).
  tfm::registerShardingInterfaceExternalModels(registry);
}

} // namespace autoshard

#endif // AUTOSHARD_TOOLS_REGISTRATION_H
