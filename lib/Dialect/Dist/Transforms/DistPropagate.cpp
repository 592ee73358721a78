//===- DistPropagate.cpp - Sharding propagation through factor rules ------===//
//
// `dist-propagate`: runs the ShardingPropagator (ShardingPropagator.h, where
// the algorithm is documented) on the module's only mesh.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/Analysis/ShardingPropagator.h"
#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"

namespace autoshard::dist {
#define GEN_PASS_DEF_DISTPROPAGATE
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace autoshard::dist

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

struct DistPropagatePass
    : public dist::impl::DistPropagateBase<DistPropagatePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<MeshOp> mesh = getSingleMesh(module, "dist-propagate");
    if (failed(mesh))
      return signalPassFailure();
    if (!*mesh)
      return;
    if (failed(ShardingPropagator(module, *mesh).run()))
      signalPassFailure();
  }
};

} // namespace
