//===- DistDialect.cpp - Distribution dialect -----------------------------===//

#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/IR/MeshLimits.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace autoshard::dist;

#include "autoshard/Dialect/Dist/IR/DistOpsDialect.cpp.inc"

void DistDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "autoshard/Dialect/Dist/IR/DistOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// The discardable `dist.sharding` attribute
//===----------------------------------------------------------------------===//

/// Checks one sharding value held by `dist.sharding` on (or for an
/// argument/result of) `op`, for a value of type `type`.
static LogicalResult
verifyShardingValue(Operation *op, Attribute value, Type type,
                    function_ref<InFlightDiagnostic()> emitError) {
  auto sharding = dyn_cast<ShardingAttr>(value);
  if (!sharding)
    return emitError() << "expects a #dist.sharding, found " << value;
  FailureOr<MeshOp> mesh = lookupMeshOrError(/*symbolTables=*/nullptr, op,
                                             sharding.getMesh(), emitError);
  if (failed(mesh))
    return failure();
  return sharding.verifyAgainst(*mesh, type, emitError);
}

/// Rejects `dist.*` attribute names this dialect does not define, so that a
/// misspelt one is not silently ignored.
static LogicalResult verifyKnownName(Operation *op, NamedAttribute attr) {
  if (attr.getName() == DistDialect::getShardingAttrName())
    return success();
  return op->emitError() << "unknown attribute '" << attr.getName().getValue()
                         << "' of the dist dialect (known: "
                         << DistDialect::getShardingAttrName() << ")";
}

// `dist.sharding` on an op: one sharding for its single result, or an array
// with one sharding per result.
LogicalResult DistDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  // Module-level records of `dist-apply-plan` (Dist/Transforms/Plan.h): the
  // plan with every key, and the ZeRO states left unsharded.
  if (attr.getName() == kPlanAttrName) {
    if (!isa<DictionaryAttr>(attr.getValue()))
      return op->emitOpError()
             << "'dist.plan' expects a dictionary, found " << attr.getValue();
    return success();
  }
  if (attr.getName() == kSequenceOrderAttrName) {
    auto entries = dyn_cast<DictionaryAttr>(attr.getValue());
    bool ok = entries && llvm::all_of(entries, [](NamedAttribute entry) {
                auto n = dyn_cast<IntegerAttr>(entry.getValue());
                return n && n.getInt() >= 2 && n.getInt() % 2 == 0;
              });
    if (!ok)
      return op->emitOpError()
             << "'dist.sequence_order' expects a dictionary of entry names "
                "to even zig-zag chunk counts >= 2, found "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kZeroUnshardedAttrName) {
    auto names = dyn_cast<ArrayAttr>(attr.getValue());
    if (!names || !llvm::all_of(names, llvm::IsaPred<StringAttr>))
      return op->emitOpError()
             << "'dist.zero_unsharded' expects an array of strings, found "
             << attr.getValue();
    return success();
  }
  // Set by `dist-partition` on every function it rewrote to per-rank types:
  // the `dist.sharding` of its arguments and results then describes the
  // global layout of local values.
  if (attr.getName() == getPartitionedAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()) || !isa<FunctionOpInterface>(op))
      return op->emitOpError() << "'" << getPartitionedAttrName()
                               << "' must be a unit attribute on a function";
    return success();
  }
  // Set by `dist-pipeline-split` on each stage's program: the entry it is a
  // stage of, and the stage (its ranks' coordinate on `pp`).
  // What a point-to-point transfer carries (dist-pipeline-split); both ends
  // carry the same tag, matched by dist-verify-comm. The plan dist-auto-plan
  // chose, as --plan text.
  if (attr.getName() == kTagAttrName ||
      attr.getName() == kPipelineScheduleAttrName ||
      attr.getName() == kAutoPlanAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError()
             << "'" << attr.getName() << "' must be a string, found "
             << attr.getValue();
    return success();
  }
  if (attr.getName() == kEntryAttrName || attr.getName() == kPpStageAttrName) {
    bool ok = attr.getName() == kEntryAttrName
                  ? isa<StringAttr>(attr.getValue())
                  : isa<IntegerAttr>(attr.getValue());
    if (!ok || !isa<FunctionOpInterface>(op))
      return op->emitOpError()
             << "'" << attr.getName() << "' must be a "
             << (attr.getName() == kEntryAttrName ? "string" : "integer")
             << " attribute on a function, found " << attr.getValue();
    return success();
  }
  // dist-pipeline-split: the stages (model chunks) a rank's program runs,
  // and the half of a backward call cut for the zero-bubble schedules.
  if (attr.getName() == kPpChunksAttrName) {
    if (!isa<DenseI64ArrayAttr>(attr.getValue()) ||
        !isa<FunctionOpInterface>(op))
      return op->emitOpError() << "'dist.pp_chunks' must be an i64 array "
                                  "attribute on a function, found "
                               << attr.getValue();
    return success();
  }
  if (attr.getName() == kBackwardPartAttrName) {
    auto part = dyn_cast<StringAttr>(attr.getValue());
    if (!part || (part.getValue() != "input" && part.getValue() != "weight"))
      return op->emitOpError() << "'dist.backward_part' must be \"input\" or "
                                  "\"weight\", found "
                               << attr.getValue();
    return success();
  }
  // dist-pipeline-split on the module: each stage's first layer, the layer
  // count and each stage's FLOPs (microbatch 0, forward and backward).
  if (attr.getName() == kPipelineStagesAttrName) {
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!dict || !dict.getAs<DenseI64ArrayAttr>("first_layer") ||
        !dict.getAs<IntegerAttr>("num_layers") ||
        !dict.getAs<DenseI64ArrayAttr>("flops"))
      return op->emitOpError()
             << "'dist.pipeline_stages' must be a dictionary with "
                "first_layer and flops (i64 arrays) and num_layers, found "
             << attr.getValue();
    return success();
  }
  if (failed(verifyKnownName(op, attr)))
    return failure();
  StringRef name = getShardingAttrName();
  if (auto array = dyn_cast<ArrayAttr>(attr.getValue())) {
    if (array.size() != op->getNumResults())
      return op->emitOpError() << "'" << name << "' has " << array.size()
                               << " shardings but the op has "
                               << op->getNumResults() << " results";
    for (auto [i, value] : llvm::enumerate(array))
      if (failed(verifyShardingValue(
              op, value, op->getResult(i).getType(), [&, i = i] {
                return op->emitOpError()
                       << "'" << name << "' of result " << i << ": ";
              })))
        return failure();
    return success();
  }
  if (op->getNumResults() != 1)
    return op->emitOpError()
           << "'" << name << "' with one sharding needs an op with one "
           << "result, found " << op->getNumResults()
           << " (use an array, one sharding per result)";
  return verifyShardingValue(
      op, attr.getValue(), op->getResult(0).getType(),
      [&] { return op->emitOpError() << "'" << name << "': "; });
}

/// Type of argument or result `index` of `op`: from the function type when
/// `op` is a function (declarations have no body), else from the region.
static Type getArgOrResultType(Operation *op, unsigned regionIndex,
                               unsigned index, bool isResult) {
  if (auto fn = dyn_cast<FunctionOpInterface>(op))
    return isResult ? fn.getResultTypes()[index] : fn.getArgumentTypes()[index];
  if (isResult)
    return {};
  return op->getRegion(regionIndex).getArgument(index).getType();
}

/// Where to report a problem with the attribute of argument `index`: the
/// argument's own location when the op has a body (a function definition)
/// and the argument has a known location, else none (report on the op;
/// declarations have no argument values).
static std::optional<Location> getArgLoc(Operation *op, unsigned regionIndex,
                                         unsigned index) {
  if (regionIndex >= op->getNumRegions())
    return std::nullopt;
  Region &region = op->getRegion(regionIndex);
  if (region.empty() || index >= region.getNumArguments())
    return std::nullopt;
  Location loc = region.getArgument(index).getLoc();
  if (isa<UnknownLoc>(loc))
    return std::nullopt;
  return loc;
}

static LogicalResult verifyArgOrResultAttr(Operation *op, unsigned regionIndex,
                                           unsigned index, NamedAttribute attr,
                                           bool isResult) {
  if (failed(verifyKnownName(op, attr)))
    return failure();
  StringRef what = isResult ? "result" : "argument";
  Type type = getArgOrResultType(op, regionIndex, index, isResult);
  if (!type)
    return op->emitOpError() << "'" << attr.getName().getValue()
                             << "' on a result of a non-function op";
  std::optional<Location> argLoc =
      isResult ? std::nullopt : getArgLoc(op, regionIndex, index);
  // After `dist-partition` the type is per-rank: check the sharding against
  // the global type it implies.
  auto sharding = dyn_cast<ShardingAttr>(attr.getValue());
  auto tensor = dyn_cast<RankedTensorType>(type);
  // (Only on a mesh that can be read and has the sharding's axes: else the
  // check below reports the problem.)
  if (op->hasAttr(DistDialect::getPartitionedAttrName()) && sharding &&
      tensor && sharding.getRank() == tensor.getRank())
    if (MeshOp mesh = lookupMesh(op, sharding.getMesh());
        mesh && isWellFormedMesh(mesh) &&
        llvm::all_of(sharding.getUsedAxes(), [&](StringAttr axis) {
          return mesh.getAxisIndex(axis.getValue()).has_value();
        }))
      if (RankedTensorType global = sharding.getGlobalType(tensor, mesh))
        type = global;
  return verifyShardingValue(op, attr.getValue(), type, [&] {
    InFlightDiagnostic diag =
        argLoc ? mlir::emitError(*argLoc) : op->emitOpError();
    return std::move(diag << "'" << attr.getName().getValue() << "' of " << what
                          << " " << index << ": ");
  });
}

LogicalResult DistDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  return verifyArgOrResultAttr(op, regionIndex, argIndex, attr,
                               /*isResult=*/false);
}

LogicalResult DistDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  return verifyArgOrResultAttr(op, regionIndex, resultIndex, attr,
                               /*isResult=*/true);
}
