//===- DistHoistArgumentGathers.cpp - gather arguments at call sites ------===//
//
// Implements `dist-hoist-argument-gathers` (see Passes.td for the contract):
// an argument whose only use in its function is a blocking all-gather is
// gathered at every call site instead, so that the caller can start the
// gather of the next layer's weights behind the current layer
// (dist-overlap-collectives).
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"

namespace autoshard::dist {
#define GEN_PASS_DEF_DISTHOISTARGUMENTGATHERS
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace autoshard::dist

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

/// The blocking all-gather that is `arg`'s only use, in its own block and
/// over a group without a pipeline axis (stage programs differ); null when
/// there is none.
AllGatherOp soleGather(BlockArgument arg, SymbolTableCollection &symbols) {
  if (!arg.hasOneUse())
    return {};
  auto gather = dyn_cast<AllGatherOp>(*arg.getUsers().begin());
  if (!gather || gather->getBlock() != arg.getOwner())
    return {};
  MeshOp mesh = lookupMesh(symbols, gather, gather.getMeshAttr());
  if (!mesh || llvm::any_of(gather.getAxes(), [&](Attribute a) {
        return mesh.hasAxisRole(cast<StringAttr>(a).getValue(),
                                AxisRole::Pipeline);
      }))
    return {};
  return gather;
}

struct DistHoistArgumentGathersPass
    : public dist::impl::DistHoistArgumentGathersBase<
          DistHoistArgumentGathersPass> {
  using DistHoistArgumentGathersBase::DistHoistArgumentGathersBase;

  void runOnOperation() override {
    // A hoisted gather lands in its caller, which may be a function whose
    // argument it now gathers: repeat until nothing moves (at most the call
    // depth).
    while (runOnce()) {
    }
  }

  /// One round over every function; returns whether an argument moved.
  bool runOnce() {
    ModuleOp module = getOperation();
    SymbolTableCollection symbols;
    SymbolUserMap users(symbols, module);
    bool changed = false;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (!func.isPrivate() || func.isExternal())
        continue;
      SmallVector<func::CallOp> calls;
      bool onlyCalls = true;
      for (Operation *user : users.getUsers(func)) {
        auto call = dyn_cast<func::CallOp>(user);
        onlyCalls &= call && call.getCallee() == func.getSymName();
        if (call)
          calls.push_back(call);
      }
      if (!onlyCalls || calls.empty())
        continue;
      Block &entry = func.getBody().front();
      for (BlockArgument arg : entry.getArguments()) {
        AllGatherOp gather = soleGather(arg, symbols);
        if (!gather)
          continue;
        unsigned i = arg.getArgNumber();
        for (func::CallOp call : calls) {
          OpBuilder builder(call);
          IRMapping map;
          map.map(arg, call.getOperand(i));
          call->setOperand(i, builder.clone(*gather, map)->getResult(0));
        }
        arg.setType(gather.getResult().getType());
        gather.getResult().replaceAllUsesWith(arg);
        gather.erase();
        ++numArguments;
        changed = true;
      }
      func.setType(FunctionType::get(
          func.getContext(), entry.getArgumentTypes(), func.getResultTypes()));
    }
    return changed;
  }
};

} // namespace
