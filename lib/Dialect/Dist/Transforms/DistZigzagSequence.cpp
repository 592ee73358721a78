//===- DistZigzagSequence.cpp - Zig-zag order for balanced ring attention -===//
//
// Under cp_layout=zigzag every entry holds its sequences permuted
// (algorithms.md §2.3): the contiguous block of cp rank r is the original
// chunks r and 2cp-1-r. The permutation is invisible to every op but those of
// TfmSequenceOrderOpInterface, which this pass tells the order; shard-run
// permutes what it feeds (dist.sequence_order, rt-export).
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistAttrNames.h"
#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Dist/Transforms/Plan.h"
#include "autoshard/Dialect/Tfm/IR/TfmAttrNames.h"
#include "autoshard/Dialect/Tfm/IR/TfmInterfaces.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace autoshard::dist {
#define GEN_PASS_DEF_DISTZIGZAGSEQUENCE
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace autoshard::dist

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

/// The sequence length of the entry's first sequence input.
int64_t sequenceLength(func::FuncOp entry) {
  for (unsigned i = 0, e = entry.getNumArguments(); i < e; ++i) {
    auto type = dyn_cast<RankedTensorType>(entry.getArgument(i).getType());
    if (entry.getArgAttr(i, tfm::kInputAttrName) && type && type.getRank() >= 2)
      return type.getDimSize(1);
  }
  return 0;
}

struct DistZigzagSequencePass
    : public dist::impl::DistZigzagSequenceBase<DistZigzagSequencePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<std::optional<Plan>> read =
        Plan::fromModule(module, "dist-zigzag-sequence");
    if (failed(read))
      return signalPassFailure();
    std::optional<Plan> &plan = *read;
    if (!plan || plan->cpLayout != "zigzag")
      return;
    MeshOp mesh;
    module.walk([&](MeshOp op) { mesh = op; });
    StringAttr cpAxis =
        mesh ? mesh.getAxisWithRole(AxisRole::Context) : nullptr;
    if (!cpAxis) {
      module.emitError() << "dist-zigzag-sequence: plan cp_layout=zigzag, but "
                            "the mesh has no axis of role context";
      return signalPassFailure();
    }
    const int64_t chunks = 2 * plan->cp;

    // Every entry: they share the layer functions, and an entry with whole
    // sequences (sampling) reshards them over cp inside like the others; so
    // every function the entries call holds its sequences permuted.
    SmallVector<func::FuncOp> entries;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (!fn.isPublic() || fn.isExternal())
        continue;
      int64_t seq = sequenceLength(fn);
      if (seq % chunks != 0) {
        fn.emitError() << "plan cp=" << plan->cp
                       << ",cp_layout=zigzag: the sequence length " << seq
                       << " of entry '" << fn.getSymName()
                       << "' is not divisible by 2*cp = " << chunks
                       << " (use a multiple, or cp_layout=contiguous)";
        return signalPassFailure();
      }
      entries.push_back(fn);
    }
    module.walk([&](tfm::TfmSequenceOrderOpInterface op) {
      op.setSequenceZigzagChunks(chunks);
    });

    Builder b(module.getContext());
    SmallVector<NamedAttribute> order;
    for (func::FuncOp entry : entries)
      order.push_back(
          b.getNamedAttr(entry.getSymName(), b.getI64IntegerAttr(chunks)));
    module->setAttr(kSequenceOrderAttrName, b.getDictionaryAttr(order));
  }
};

} // namespace
