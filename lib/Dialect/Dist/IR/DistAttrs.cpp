//===- DistAttrs.cpp - Sharding attributes and dist types -----------------===//

#include "autoshard/Dialect/Dist/IR/DistAttrs.h"
#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/IR/DistTypes.h"
#include "autoshard/Dialect/Dist/IR/MeshLimits.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace autoshard::dist;

#include "autoshard/Dialect/Dist/IR/DistEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "autoshard/Dialect/Dist/IR/DistAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "autoshard/Dialect/Dist/IR/DistOpsTypes.cpp.inc"

// Registered here, beside the definitions (DESIGN.md §10).
void DistDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "autoshard/Dialect/Dist/IR/DistAttrs.cpp.inc"
      >();
}

void DistDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "autoshard/Dialect/Dist/IR/DistOpsTypes.cpp.inc"
      >();
}

void autoshard::dist::sortPartialAxes(llvm::MutableArrayRef<PartialAxis> axes) {
  llvm::sort(axes, [](const PartialAxis &a, const PartialAxis &b) {
    return a.axis.getValue() < b.axis.getValue();
  });
}

//===----------------------------------------------------------------------===//
// ShardingAttr: syntax
//===----------------------------------------------------------------------===//

// #dist.sharding<@mesh, [{a, b}, {}, ...] (, partial = {c: sum, ...})?>
Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  MLIRContext *ctx = parser.getContext();
  SMLoc loc = parser.getCurrentLocation();
  FlatSymbolRefAttr mesh;
  SmallVector<ArrayAttr> dims;
  SmallVector<PartialAxis> partial;

  auto parseAxis = [&](StringAttr &axis) -> ParseResult {
    std::string name;
    if (parser.parseKeywordOrString(&name))
      return failure();
    axis = StringAttr::get(ctx, name);
    return success();
  };
  auto parseDim = [&]() -> ParseResult {
    SmallVector<Attribute> axes;
    if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Braces, [&] {
          StringAttr axis;
          if (parseAxis(axis))
            return failure();
          axes.push_back(axis);
          return success();
        }))
      return failure();
    dims.push_back(ArrayAttr::get(ctx, axes));
    return success();
  };
  auto parsePartial = [&]() -> ParseResult {
    PartialAxis p;
    std::string kind;
    SMLoc kindLoc;
    if (parseAxis(p.axis) || parser.parseColon() ||
        parser.getCurrentLocation(&kindLoc) ||
        parser.parseKeywordOrString(&kind))
      return failure();
    std::optional<ReductionKind> k = symbolizeReductionKind(kind);
    if (!k)
      return parser.emitError(kindLoc)
             << "expected reduction 'sum' or 'max', found '" << kind << "'";
    p.kind = *k;
    partial.push_back(p);
    return success();
  };

  if (parser.parseLess() || parser.parseAttribute(mesh) ||
      parser.parseComma() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseDim))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("partial") || parser.parseEqual() ||
        parser.parseCommaSeparatedList(AsmParser::Delimiter::Braces,
                                       parsePartial))
      return {};
  }
  if (parser.parseGreater())
    return {};
  // Explicit ArrayRefs select the sorting builder, not Base::getChecked.
  return ShardingAttr::getChecked([&] { return parser.emitError(loc); }, ctx,
                                  mesh, ArrayRef<ArrayAttr>(dims),
                                  ArrayRef<PartialAxis>(partial));
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << '<';
  printer.printAttributeWithoutType(getMesh());
  printer << ", [";
  llvm::interleaveComma(getDims(), printer, [&](ArrayAttr axes) {
    printer << '{';
    llvm::interleaveComma(axes.getAsRange<StringAttr>(), printer,
                          [&](StringAttr axis) {
                            printer.printKeywordOrString(axis.getValue());
                          });
    printer << '}';
  });
  printer << ']';
  if (isPartial()) {
    printer << ", partial = {";
    llvm::interleaveComma(getPartialAxes(), printer, [&](const PartialAxis &p) {
      printer.printKeywordOrString(p.axis.getValue());
      printer << ": " << stringifyReductionKind(p.kind);
    });
    printer << '}';
  }
  printer << '>';
}

//===----------------------------------------------------------------------===//
// ShardingAttr: rules and helpers
//===----------------------------------------------------------------------===//

LogicalResult ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   FlatSymbolRefAttr mesh,
                                   ArrayRef<ArrayAttr> dims,
                                   ArrayRef<PartialAxis> partialAxes) {
  if (!mesh || mesh.getValue().empty())
    return emitError() << "sharding needs a mesh symbol"
                       << (mesh ? ", found an empty name (@\"\")" : "");
  // Every use of an axis with where it is, to name both places of a repeat.
  SmallVector<std::pair<Attribute, std::string>> uses;
  for (auto [dim, axes] : llvm::enumerate(dims)) {
    if (!axes)
      return emitError() << "sharding dim " << dim << " has no axis list";
    for (Attribute axis : axes)
      uses.emplace_back(axis, "dim " + std::to_string(dim));
  }
  for (const PartialAxis &p : partialAxes)
    uses.emplace_back(p.axis, "partial");
  // The builders sort; this keeps equal shardings one uniqued attribute.
  if (!llvm::is_sorted(
          partialAxes, [](const PartialAxis &a, const PartialAxis &b) {
            return a.axis && b.axis && a.axis.getValue() < b.axis.getValue();
          }))
    return emitError() << "sharding partial axes must be sorted by name";
  llvm::StringMap<StringRef> firstUse;
  for (const auto &[axisAttr, where] : uses) {
    auto axis = dyn_cast_or_null<StringAttr>(axisAttr);
    if (!axis)
      return emitError() << "sharding axis must be a string, found "
                         << axisAttr;
    auto [it, inserted] = firstUse.try_emplace(axis.getValue(), where);
    if (inserted)
      continue;
    InFlightDiagnostic diag = emitError() << "sharding uses axis '"
                                          << axis.getValue() << "' twice ";
    if (it->second == where)
      return diag << "in "
                  << (where == "partial" ? StringRef("the partial axes")
                                         : StringRef(where));
    return diag << "(" << it->second << " and " << where << ")";
  }
  return success();
}

ShardingAttr ShardingAttr::getReplicated(FlatSymbolRefAttr mesh, int64_t rank) {
  MLIRContext *ctx = mesh.getContext();
  SmallVector<ArrayAttr> dims(rank, ArrayAttr::get(ctx, {}));
  return get(ctx, mesh, dims);
}

SmallVector<StringAttr> ShardingAttr::getDimAxes(unsigned dim) const {
  return llvm::to_vector(getDims()[dim].getAsRange<StringAttr>());
}

SmallVector<StringAttr> ShardingAttr::getUsedAxes() const {
  SmallVector<StringAttr> axes;
  for (ArrayAttr dim : getDims())
    llvm::append_range(axes, dim.getAsRange<StringAttr>());
  for (const PartialAxis &p : getPartialAxes())
    axes.push_back(p.axis);
  return axes;
}

bool ShardingAttr::isReplicated() const {
  return !isPartial() &&
         llvm::all_of(getDims(), [](ArrayAttr axes) { return axes.empty(); });
}

std::optional<ReductionKind>
ShardingAttr::getPartialKind(StringRef axis) const {
  for (const PartialAxis &p : getPartialAxes())
    if (p.axis.getValue() == axis)
      return p.kind;
  return std::nullopt;
}

int64_t ShardingAttr::getNumShards(unsigned dim, MeshOp mesh) const {
  return mesh.getGroupSize(getDims()[dim]);
}

SmallVector<int64_t> ShardingAttr::getLocalShape(ArrayRef<int64_t> globalShape,
                                                 MeshOp mesh) const {
  assert(globalShape.size() == getDims().size() && "rank mismatch");
  SmallVector<int64_t> shape(globalShape);
  for (auto [dim, size] : llvm::enumerate(shape))
    if (!ShapedType::isDynamic(size))
      size /= getNumShards(dim, mesh);
  return shape;
}

RankedTensorType ShardingAttr::getLocalType(RankedTensorType globalType,
                                            MeshOp mesh) const {
  return globalType.clone(getLocalShape(globalType.getShape(), mesh));
}

RankedTensorType ShardingAttr::getGlobalType(RankedTensorType localType,
                                             MeshOp mesh) const {
  assert(localType.getRank() == getRank() && "rank mismatch");
  SmallVector<int64_t> shape(localType.getShape());
  for (auto [dim, size] : llvm::enumerate(shape)) {
    if (ShapedType::isDynamic(size))
      continue;
    std::optional<int64_t> global = checkedMul(size, getNumShards(dim, mesh));
    if (!global)
      return {};
    size = *global;
  }
  return localType.clone(shape);
}

std::string autoshard::dist::axisListToString(ArrayAttr axes) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(axes, os, [&](Attribute a) {
    if (auto name = dyn_cast<StringAttr>(a))
      os << name.getValue();
    else
      os << a;
  });
  os << ']';
  return text;
}

bool autoshard::dist::isWellFormedMesh(MeshOp mesh) {
  if (mesh.getAxisNames().size() != mesh.getAxisSizes().size() ||
      !llvm::all_of(mesh.getAxisNames(), llvm::IsaPred<StringAttr>) ||
      llvm::any_of(mesh.getAxisSizes(), [](int64_t size) { return size < 1; }))
    return false;
  std::optional<int64_t> devices = checkedProduct(mesh.getAxisSizes());
  return devices && *devices <= kMaxMeshDevices;
}

LogicalResult ShardingAttr::verifyAgainst(
    MeshOp mesh, Type type,
    function_ref<InFlightDiagnostic()> emitError) const {
  if (!mesh)
    return emitError() << "unknown mesh " << getMesh();
  assert(mesh.getSymName() == getMeshName() && "not this sharding's mesh");
  // Attribute verifiers may run before the mesh's own verifier, which
  // reports what is wrong with it.
  if (!isWellFormedMesh(mesh))
    return emitError() << "mesh " << getMesh() << " does not verify";
  for (StringAttr axis : getUsedAxes())
    if (!mesh.getAxisIndex(axis.getValue()))
      return emitError() << "unknown axis '" << axis.getValue() << "' for mesh "
                         << getMesh();
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType)
    return emitError() << "sharding applies to a ranked tensor, found " << type;
  if (tensorType.getRank() != getRank())
    return emitError() << "sharding has " << getRank()
                       << " dims but the tensor has rank "
                       << tensorType.getRank() << " (" << type << ")";
  // A dim of size 0 splits into empty shards: 0 is divisible by every
  // number of shards.
  for (auto [dim, size] : llvm::enumerate(tensorType.getShape())) {
    FailureOr<int64_t> shards =
        mesh.verifyGroupSize(getDims()[dim].getValue(), emitError);
    if (failed(shards))
      return failure();
    if (ShapedType::isDynamic(size) || size % *shards == 0)
      continue;
    return emitError() << "tensor dim " << dim << " of size " << size
                       << " is not divisible by " << *shards
                       << ", the product of the sizes of its axes "
                       << axisListToString(getDims()[dim]);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// AsyncType
//===----------------------------------------------------------------------===//

LogicalResult AsyncType::verify(function_ref<InFlightDiagnostic()> emitError,
                                Type valueType) {
  if (!valueType)
    return success();
  auto tensor = dyn_cast<RankedTensorType>(valueType);
  if (!tensor || !tensor.hasStaticShape())
    return emitError() << "!dist.async wraps a static-shape tensor, found "
                       << valueType;
  return success();
}
