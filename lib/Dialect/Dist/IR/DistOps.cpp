//===- DistOps.cpp - Distribution ops -------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/IR/MeshLimits.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace autoshard::dist;

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

// dist.mesh @name [axis = size (: role)?, ...]
ParseResult MeshOp::parse(OpAsmParser &parser, OperationState &result) {
  StringAttr name;
  if (parser.parseSymbolName(name, SymbolTable::getSymbolAttrName(),
                             result.attributes))
    return failure();
  SmallVector<Attribute> names, roles;
  SmallVector<int64_t> sizes;
  auto parseAxis = [&]() -> ParseResult {
    std::string axis;
    int64_t size;
    if (parser.parseKeywordOrString(&axis) || parser.parseEqual() ||
        parser.parseInteger(size))
      return failure();
    if (succeeded(parser.parseOptionalColon())) {
      SMLoc loc = parser.getCurrentLocation();
      StringRef keyword;
      if (parser.parseKeyword(&keyword))
        return failure();
      std::optional<AxisRole> role = symbolizeAxisRole(keyword);
      if (!role)
        return parser.emitError(loc)
               << "unknown axis role '" << keyword
               << "' (known: data, context, tensor, expert, pipeline)";
      if (roles.size() != names.size())
        return parser.emitError(loc)
               << "axis '" << axis
               << "' has a role but an earlier axis has none; either every "
                  "axis of a mesh has a role or none has";
      roles.push_back(AxisRoleAttr::get(parser.getContext(), *role));
    } else if (!roles.empty()) {
      return parser.emitError(parser.getCurrentLocation())
             << "axis '" << axis
             << "' has no role but an earlier axis has one; either every "
                "axis of a mesh has a role or none has";
    }
    names.push_back(parser.getBuilder().getStringAttr(axis));
    sizes.push_back(size);
    return success();
  };
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Square,
                                     parseAxis) ||
      parser.parseOptionalAttrDict(result.attributes))
    return failure();
  Builder &b = parser.getBuilder();
  result.addAttribute(getAxisNamesAttrName(result.name), b.getArrayAttr(names));
  result.addAttribute(getAxisSizesAttrName(result.name),
                      b.getDenseI64ArrayAttr(sizes));
  if (!roles.empty())
    result.addAttribute(getAxisRolesAttrName(result.name),
                        b.getArrayAttr(roles));
  return success();
}

void MeshOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printSymbolName(getSymName());
  p << " [";
  ArrayAttr roles = getAxisRolesAttr();
  llvm::interleaveComma(
      llvm::enumerate(llvm::zip(getAxisNames(), getAxisSizes())), p,
      [&](auto it) {
        auto [name, size] = it.value();
        p.printKeywordOrString(cast<StringAttr>(name).getValue());
        p << " = " << size;
        if (roles && it.index() < roles.size())
          p << " : "
            << stringifyAxisRole(
                   cast<AxisRoleAttr>(roles[it.index()]).getValue());
      });
  p << "]";
  p.printOptionalAttrDict((*this)->getAttrs(),
                          {getSymNameAttrName(), getAxisNamesAttrName(),
                           getAxisSizesAttrName(), getAxisRolesAttrName()});
}

LogicalResult MeshOp::verify() {
  if (getSymName().empty())
    return emitOpError() << "needs a name, found an empty one (@\"\")";
  if (getAxisNames().size() != getAxisSizes().size())
    return emitOpError() << "has " << getAxisNames().size()
                         << " axis names but " << getAxisSizes().size()
                         << " axis sizes";
  if (getAxisNames().empty())
    return emitOpError() << "must have at least one axis";
  llvm::DenseSet<StringRef> seen;
  for (auto [nameAttr, size] : llvm::zip(getAxisNames(), getAxisSizes())) {
    StringRef name = cast<StringAttr>(nameAttr).getValue();
    if (!seen.insert(name).second)
      return emitOpError() << "axis '" << name << "' is declared twice";
    if (size < 1)
      return emitOpError() << "axis '" << name
                           << "' must have size >= 1, found " << size;
  }
  if (ArrayAttr roles = getAxisRolesAttr()) {
    if (roles.size() != getAxisNames().size())
      return emitOpError() << "has " << getAxisNames().size() << " axes but "
                           << roles.size() << " axis roles";
    llvm::SmallDenseMap<AxisRole, StringRef> owner;
    for (auto [nameAttr, roleAttr] : llvm::zip(getAxisNames(), roles)) {
      StringRef name = cast<StringAttr>(nameAttr).getValue();
      AxisRole role = cast<AxisRoleAttr>(roleAttr).getValue();
      auto [it, inserted] = owner.try_emplace(role, name);
      if (!inserted)
        return emitOpError()
               << "role '" << stringifyAxisRole(role) << "' is given to axes '"
               << it->second << "' and '" << name << "'";
    }
  }
  std::optional<int64_t> devices = checkedProduct(getAxisSizes());
  if (!devices || *devices > kMaxMeshDevices) {
    InFlightDiagnostic diag = emitOpError()
                              << "device count (product of the axis sizes ";
    llvm::interleave(
        llvm::zip(getAxisNames(), getAxisSizes()), diag,
        [&](auto it) {
          diag << cast<StringAttr>(std::get<0>(it)).getValue() << " = "
               << std::get<1>(it);
        },
        " × ");
    diag << ") must be at most " << kMaxMeshDevices << " (2^24), found ";
    if (!devices)
      return diag << "more than int64 holds";
    return diag << *devices;
  }
  return success();
}

std::optional<unsigned> MeshOp::getAxisIndex(StringRef axis) {
  for (auto [i, name] : llvm::enumerate(getAxisNames()))
    if (cast<StringAttr>(name).getValue() == axis)
      return i;
  return std::nullopt;
}

std::optional<AxisRole> MeshOp::getAxisRole(StringRef axis) {
  ArrayAttr roles = getAxisRolesAttr();
  std::optional<unsigned> index = getAxisIndex(axis);
  if (!roles || !index || *index >= roles.size())
    return std::nullopt;
  return cast<AxisRoleAttr>(roles[*index]).getValue();
}

StringAttr MeshOp::getAxisWithRole(AxisRole role) {
  ArrayAttr roles = getAxisRolesAttr();
  if (!roles)
    return {};
  for (auto [name, roleAttr] : llvm::zip(getAxisNames(), roles))
    if (cast<AxisRoleAttr>(roleAttr).getValue() == role)
      return cast<StringAttr>(name);
  return {};
}

int64_t MeshOp::getAxisSize(StringRef axis) {
  std::optional<unsigned> index = getAxisIndex(axis);
  assert(index && "not an axis of this mesh");
  return getAxisSizes()[*index];
}

// The verifier guarantees that the product of all axis sizes fits in int64,
// so on a verified mesh no product of sizes of distinct axes overflows; a
// mesh that does not verify is a caller bug, reported rather than wrapped.
int64_t MeshOp::getNumDevices() {
  std::optional<int64_t> n = checkedProduct(getAxisSizes());
  if (!n)
    llvm::report_fatal_error("dist.mesh device count overflows int64; the "
                             "mesh does not verify");
  return *n;
}

int64_t MeshOp::getGroupSize(ArrayRef<Attribute> axes) {
  SmallVector<int64_t> sizes;
  for (Attribute axis : axes)
    sizes.push_back(getAxisSize(cast<StringAttr>(axis).getValue()));
  std::optional<int64_t> n = checkedProduct(sizes);
  if (!n)
    llvm::report_fatal_error("dist.mesh group size overflows int64; the mesh "
                             "does not verify");
  return *n;
}

FailureOr<int64_t>
MeshOp::verifyGroupSize(ArrayRef<Attribute> axes,
                        function_ref<InFlightDiagnostic()> emitError) {
  SmallVector<int64_t> sizes;
  for (Attribute axis : axes) {
    StringRef name = cast<StringAttr>(axis).getValue();
    int64_t size = getAxisSize(name);
    if (size < 1)
      return emitError() << "axis '" << name << "' of mesh @" << getSymName()
                         << " has size " << size << "; axis sizes must be >= 1";
    sizes.push_back(size);
  }
  std::optional<int64_t> n = checkedProduct(sizes);
  if (!n) {
    InFlightDiagnostic diag =
        emitError() << "the product of the sizes of axes "
                    << axisListToString(ArrayAttr::get(getContext(), axes))
                    << " of mesh @" << getSymName() << " (";
    llvm::interleave(sizes, diag, " × ");
    return diag << ") overflows int64";
  }
  return *n;
}

SmallVector<int64_t> MeshOp::getDeviceCoords(int64_t device) {
  assert(device >= 0 && device < getNumDevices() && "no such device");
  ArrayRef<int64_t> sizes = getAxisSizes();
  SmallVector<int64_t> coords(sizes.size());
  for (int64_t i = sizes.size() - 1; i >= 0; --i) {
    coords[i] = device % sizes[i];
    device /= sizes[i];
  }
  return coords;
}

int64_t MeshOp::getDeviceId(ArrayRef<int64_t> coords) {
  ArrayRef<int64_t> sizes = getAxisSizes();
  assert(coords.size() == sizes.size() && "one coordinate per axis");
  // With coordinates in range, every partial id is below getNumDevices(),
  // which fits in int64 on a verified mesh.
  int64_t id = 0;
  for (auto [coord, size] : llvm::zip(coords, sizes)) {
    assert(coord >= 0 && coord < size && "coordinate out of range");
    id = id * size + coord;
  }
  return id;
}

int64_t MeshOp::getIndexInGroup(int64_t device, ArrayAttr axes) {
  SmallVector<int64_t> coords = getDeviceCoords(device);
  int64_t index = 0;
  for (auto axis : axes.getAsRange<StringAttr>()) {
    unsigned i = *getAxisIndex(axis.getValue());
    index = index * getAxisSizes()[i] + coords[i];
  }
  return index;
}

SmallVector<int64_t> MeshOp::getDeviceGroup(int64_t device, ArrayAttr axes) {
  SmallVector<int64_t> coords = getDeviceCoords(device);
  SmallVector<unsigned> axisIndices;
  for (auto axis : axes.getAsRange<StringAttr>())
    axisIndices.push_back(*getAxisIndex(axis.getValue()));
  int64_t groupSize = getGroupSize(axes);
  SmallVector<int64_t> group;
  group.reserve(groupSize);
  // Decompose each group index over `axes` (last listed = minor).
  for (int64_t index = 0; index < groupSize; ++index) {
    int64_t rest = index;
    for (unsigned i : llvm::reverse(axisIndices)) {
      coords[i] = rest % getAxisSizes()[i];
      rest /= getAxisSizes()[i];
    }
    group.push_back(getDeviceId(coords));
  }
  return group;
}

FailureOr<MeshOp> autoshard::dist::getSingleMesh(ModuleOp module,
                                                 StringRef passName) {
  SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
  if (meshes.size() > 1)
    return meshes[1].emitOpError()
           << passName << " supports one mesh per module, found "
           << meshes.size();
  return meshes.empty() ? MeshOp() : meshes.front();
}

MeshOp autoshard::dist::lookupMesh(Operation *from, FlatSymbolRefAttr meshRef) {
  return SymbolTable::lookupNearestSymbolFrom<MeshOp>(from, meshRef);
}

MeshOp autoshard::dist::lookupMesh(SymbolTableCollection &symbolTables,
                                   Operation *from, FlatSymbolRefAttr meshRef) {
  return symbolTables.lookupNearestSymbolFrom<MeshOp>(from, meshRef);
}

FailureOr<MeshOp> autoshard::dist::lookupMeshOrError(
    SymbolTableCollection *symbolTables, Operation *from,
    FlatSymbolRefAttr meshRef, function_ref<InFlightDiagnostic()> emitError) {
  Operation *symbol = symbolTables
                          ? symbolTables->lookupNearestSymbolFrom(from, meshRef)
                          : SymbolTable::lookupNearestSymbolFrom(from, meshRef);
  if (!symbol) {
    // (MLIR prints an empty reference as `@<<INVALID EMPTY SYMBOL>>`.)
    if (meshRef.getValue().empty())
      return emitError() << "unknown mesh @\"\" (an empty name)";
    return emitError() << "unknown mesh " << meshRef;
  }
  auto mesh = dyn_cast<MeshOp>(symbol);
  if (!mesh)
    return emitError() << "symbol " << meshRef << " is not a dist.mesh (found "
                       << symbol->getName() << ")";
  return mesh;
}

//===----------------------------------------------------------------------===//
// Custom directives
//===----------------------------------------------------------------------===//

// [dp, tp]
static ParseResult parseMeshAxes(OpAsmParser &parser, ArrayAttr &axes) {
  SmallVector<Attribute> names;
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Square, [&] {
        std::string name;
        if (parser.parseKeywordOrString(&name))
          return failure();
        names.push_back(parser.getBuilder().getStringAttr(name));
        return success();
      }))
    return failure();
  axes = parser.getBuilder().getArrayAttr(names);
  return success();
}

static void printMeshAxes(OpAsmPrinter &p, Operation *, ArrayAttr axes) {
  p << '[';
  llvm::interleaveComma(axes.getAsRange<StringAttr>(), p, [&](StringAttr a) {
    p.printKeywordOrString(a.getValue());
  });
  p << ']';
}

// [0 -> 1, 1 -> 0], stored flattened.
static ParseResult parsePairs(OpAsmParser &parser, DenseI64ArrayAttr &pairs) {
  SmallVector<int64_t> flat;
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Square, [&] {
        int64_t source, target;
        if (parser.parseInteger(source) || parser.parseArrow() ||
            parser.parseInteger(target))
          return failure();
        flat.append({source, target});
        return success();
      }))
    return failure();
  pairs = parser.getBuilder().getDenseI64ArrayAttr(flat);
  return success();
}

static void printPairs(OpAsmPrinter &p, Operation *, DenseI64ArrayAttr pairs) {
  ArrayRef<int64_t> flat = pairs.asArrayRef();
  p << '[';
  for (size_t i = 0; i + 1 < flat.size(); i += 2)
    p << (i ? ", " : "") << flat[i] << " -> " << flat[i + 1];
  p << ']';
}

// sum | max, without the attribute's `#dist.reduction<...>` wrapper.
static ParseResult parseReduction(OpAsmParser &parser,
                                  ReductionKindAttr &reduction) {
  SMLoc loc = parser.getCurrentLocation();
  std::string keyword;
  if (parser.parseKeywordOrString(&keyword))
    return failure();
  std::optional<ReductionKind> kind = symbolizeReductionKind(keyword);
  if (!kind)
    return parser.emitError(loc)
           << "expected reduction 'sum' or 'max', found '" << keyword << "'";
  reduction = ReductionKindAttr::get(parser.getContext(), *kind);
  return success();
}

static void printReduction(OpAsmPrinter &p, Operation *,
                           ReductionKindAttr reduction) {
  p << stringifyReductionKind(reduction.getValue());
}

//===----------------------------------------------------------------------===//
// Sharding ops
//===----------------------------------------------------------------------===//

/// Checks that `sharding` names a mesh in scope and fits `type` on it.
static LogicalResult verifyShardingUse(Operation *op, ShardingAttr sharding,
                                       Type type,
                                       SymbolTableCollection &symbolTables) {
  auto emitError = [&] { return op->emitOpError(); };
  FailureOr<MeshOp> mesh =
      lookupMeshOrError(&symbolTables, op, sharding.getMesh(), emitError);
  if (failed(mesh))
    return failure();
  return sharding.verifyAgainst(*mesh, type, emitError);
}

//===----------------------------------------------------------------------===//
// Communication ops: rules shared by every kind
//===----------------------------------------------------------------------===//

/// `group size 4 over axes [dp, tp]`, the phrase every group rule uses.
static std::string describeGroup(Operation *op, int64_t groupSize) {
  return "group size " + std::to_string(groupSize) + " over axes " +
         axisListToString(op->getAttrOfType<ArrayAttr>("axes"));
}

/// Rules that need no mesh: a non-empty axis list without repeats, then the
/// kind's own group-independent shape rules.
template <typename OpT> static LogicalResult verifyCommOp(OpT op) {
  ArrayAttr axes = op.getAxes();
  if (axes.empty())
    return op.emitOpError() << "must name at least one mesh axis";
  llvm::DenseSet<StringRef> seen;
  for (auto axis : axes.template getAsRange<StringAttr>())
    if (!seen.insert(axis.getValue()).second)
      return op.emitOpError() << "lists axis '" << axis.getValue()
                              << "' twice in " << axisListToString(axes);
  return op.verifyShapes(std::nullopt);
}

/// Rules that need the mesh: it exists, has the axes, and the shapes fit the
/// size of the device group.
template <typename OpT>
static LogicalResult verifyCommOpSymbolUses(OpT op,
                                            SymbolTableCollection &tables) {
  auto emitError = [&] { return op.emitOpError(); };
  FailureOr<MeshOp> mesh =
      lookupMeshOrError(&tables, op, op.getMeshAttr(), emitError);
  if (failed(mesh))
    return failure();
  for (auto axis : op.getAxes().template getAsRange<StringAttr>())
    if (!mesh->getAxisIndex(axis.getValue()))
      return op.emitOpError() << "unknown axis '" << axis.getValue()
                              << "' for mesh " << op.getMeshAttr();
  FailureOr<int64_t> groupSize =
      mesh->verifyGroupSize(op.getAxes().getValue(), emitError);
  if (failed(groupSize))
    return failure();
  return op.verifyShapes(*groupSize);
}

/// The result tensor exists (a `_start` handle wraps one) and has the
/// operand's rank and element type.
static LogicalResult verifyResultLike(Operation *op, ShapedType in,
                                      TensorType out) {
  if (!out)
    return op->emitOpError() << "handle must wrap the result tensor type, "
                                "found "
                             << op->getResult(0).getType();
  if (out.getElementType() != in.getElementType())
    return op->emitOpError()
           << "result element type " << out.getElementType()
           << " must match operand element type " << in.getElementType();
  if (out.getRank() != in.getRank())
    return op->emitOpError() << "result rank " << out.getRank()
                             << " must equal operand rank " << in.getRank();
  return success();
}

/// Result type equals the operand type (all_reduce, broadcast, ppermute).
static LogicalResult verifySameType(Operation *op, ShapedType in,
                                    TensorType out) {
  if (failed(verifyResultLike(op, in, out)))
    return failure();
  if (out != in)
    return op->emitOpError()
           << "result type " << out << " must equal operand type " << in;
  return success();
}

/// `dim` is a dim of `in`, named `what` in the diagnostic.
static LogicalResult verifyDimIndex(Operation *op, StringRef what, int64_t dim,
                                    ShapedType in) {
  if (dim < 0 || dim >= in.getRank())
    return op->emitOpError()
           << what << " " << dim << " must be a dim of the operand, in [0, "
           << in.getRank() << ")";
  return success();
}

/// Dims other than `changed` are the same in operand and result.
static LogicalResult verifyOtherDims(Operation *op, ShapedType in,
                                     ShapedType out,
                                     ArrayRef<int64_t> changed) {
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (!llvm::is_contained(changed, d) &&
        in.getDimSize(d) != out.getDimSize(d))
      return op->emitOpError()
             << "result dim " << d << " must equal operand dim " << d << " ("
             << in.getDimSize(d) << "), found " << out.getDimSize(d);
  return success();
}

/// `operand dim 1 of size 8`, or with `role` `operand split_dim 1 of size 8`.
static std::string describeOperandDim(ShapedType in, int64_t dim,
                                      StringRef role = "dim") {
  return ("operand " + role + " " + Twine(dim) + " of size " +
          Twine(in.getDimSize(dim)))
      .str();
}

/// Operand dim `dim` splits evenly over the group (`groupSize` >= 1). A dim of
/// size 0 splits into empty slices, so it is divisible by every group size.
static LogicalResult verifyDivisible(Operation *op, ShapedType in, int64_t dim,
                                     int64_t groupSize) {
  if (in.getDimSize(dim) % groupSize != 0)
    return op->emitOpError()
           << describeOperandDim(in, dim) << " must be divisible by the "
           << describeGroup(op, groupSize);
  return success();
}

/// Result dim `dim` is `expected`, derived as `how` followed by the group
/// (for the message); `expected` is nullopt when the derivation overflows
/// int64, which no result type can satisfy.
static LogicalResult verifyResultDim(Operation *op, ShapedType out, int64_t dim,
                                     std::optional<int64_t> expected,
                                     StringRef how, int64_t groupSize) {
  if (!expected)
    return op->emitOpError()
           << "result dim " << dim << " would be " << how << " "
           << describeGroup(op, groupSize) << ", which overflows int64";
  if (out.getDimSize(dim) != *expected)
    return op->emitOpError()
           << "result dim " << dim << " must be " << *expected << " (" << how
           << " " << describeGroup(op, groupSize) << "), found "
           << out.getDimSize(dim);
  return success();
}

/// A group index attribute (`root`, `peer`, a ppermute endpoint) is
/// non-negative and, once the group size is known, below it.
static LogicalResult verifyGroupIndex(Operation *op, StringRef what,
                                      int64_t index,
                                      std::optional<int64_t> groupSize) {
  if (index < 0)
    return op->emitOpError()
           << what << " must be non-negative, found " << index;
  if (groupSize && index >= *groupSize)
    return op->emitOpError() << what << " " << index << " must be below the "
                             << describeGroup(op, *groupSize);
  return success();
}

//===----------------------------------------------------------------------===//
// Communication ops: the rules of each kind
//===----------------------------------------------------------------------===//

static LogicalResult verifyAllReduce(Operation *op, ShapedType in,
                                     TensorType out) {
  return verifySameType(op, in, out);
}

static LogicalResult verifyAllGather(Operation *op,
                                     std::optional<int64_t> groupSize,
                                     ShapedType in, TensorType out,
                                     int64_t dim) {
  if (failed(verifyResultLike(op, in, out)) ||
      failed(verifyDimIndex(op, "gather_dim", dim, in)) ||
      failed(verifyOtherDims(op, in, out, dim)))
    return failure();
  if (!groupSize)
    return success();
  return verifyResultDim(op, out, dim,
                         checkedMul(in.getDimSize(dim), *groupSize),
                         describeOperandDim(in, dim) + " ×", *groupSize);
}

/// Also the rules of `dist.shard_slice`, whose dim attribute is `dimName`.
static LogicalResult verifyReduceScatter(Operation *op,
                                         std::optional<int64_t> groupSize,
                                         ShapedType in, TensorType out,
                                         int64_t dim,
                                         StringRef dimName = "scatter_dim") {
  if (failed(verifyResultLike(op, in, out)) ||
      failed(verifyDimIndex(op, dimName, dim, in)) ||
      failed(verifyOtherDims(op, in, out, dim)))
    return failure();
  if (!groupSize)
    return success();
  return failure(
      failed(verifyDivisible(op, in, dim, *groupSize)) ||
      failed(verifyResultDim(op, out, dim, in.getDimSize(dim) / *groupSize,
                             describeOperandDim(in, dim) + " /", *groupSize)));
}

/// `ragged_dim` of a sharding op, when set, is a dim of `type`.
static LogicalResult verifyRaggedDim(Operation *op,
                                     std::optional<uint64_t> raggedDim,
                                     ShapedType type) {
  if (!raggedDim)
    return success();
  return verifyDimIndex(op, "ragged_dim", static_cast<int64_t>(*raggedDim),
                        type);
}

static LogicalResult verifyAllToAll(Operation *op,
                                    std::optional<int64_t> groupSize,
                                    ShapedType in, TensorType out,
                                    int64_t splitDim, int64_t concatDim,
                                    std::optional<uint64_t> raggedDim) {
  if (failed(verifyResultLike(op, in, out)) ||
      failed(verifyDimIndex(op, "split_dim", splitDim, in)) ||
      failed(verifyDimIndex(op, "concat_dim", concatDim, in)) ||
      failed(verifyOtherDims(op, in, out, {splitDim, concatDim})) ||
      failed(verifyRaggedDim(op, raggedDim, in)))
    return failure();
  // The slots of a ragged all-to-all are indexed by the dims before
  // `ragged_dim`: the split and concatenated dims must be among them.
  if (raggedDim &&
      static_cast<int64_t>(*raggedDim) <= std::max(splitDim, concatDim))
    return op->emitOpError()
           << "ragged_dim " << *raggedDim << " must come after split_dim "
           << splitDim << " and concat_dim " << concatDim;
  if (!groupSize)
    return success();
  if (failed(verifyDivisible(op, in, splitDim, *groupSize)))
    return failure();
  // Splitting and concatenating the same dim leaves its size unchanged.
  if (splitDim == concatDim)
    return verifyResultDim(op, out, splitDim, in.getDimSize(splitDim),
                           "split and concatenated over the", *groupSize);
  std::string split = describeOperandDim(in, splitDim, "split_dim") + " /";
  std::string concat = describeOperandDim(in, concatDim, "concat_dim") + " ×";
  return failure(
      failed(verifyResultDim(op, out, splitDim,
                             in.getDimSize(splitDim) / *groupSize, split,
                             *groupSize)) ||
      failed(verifyResultDim(op, out, concatDim,
                             checkedMul(in.getDimSize(concatDim), *groupSize),
                             concat, *groupSize)));
}

static LogicalResult verifyBroadcast(Operation *op,
                                     std::optional<int64_t> groupSize,
                                     ShapedType in, TensorType out,
                                     int64_t root) {
  return failure(failed(verifySameType(op, in, out)) ||
                 failed(verifyGroupIndex(op, "root", root, groupSize)));
}

static LogicalResult verifyPpermute(Operation *op,
                                    std::optional<int64_t> groupSize,
                                    ShapedType in, TensorType out,
                                    ArrayRef<int64_t> pairs) {
  if (failed(verifySameType(op, in, out)))
    return failure();
  if (pairs.size() % 2 != 0)
    return op->emitOpError() << "pairs must hold (source, target) pairs, "
                                "found an odd number of indices ("
                             << pairs.size() << ")";
  llvm::DenseSet<int64_t> sources, targets;
  for (size_t i = 0; i < pairs.size(); i += 2) {
    int64_t source = pairs[i], target = pairs[i + 1];
    if (failed(verifyGroupIndex(op, "source", source, groupSize)) ||
        failed(verifyGroupIndex(op, "target", target, groupSize)))
      return failure();
    if (!sources.insert(source).second)
      return op->emitOpError()
             << "source " << source << " appears in more than one pair";
    if (!targets.insert(target).second)
      return op->emitOpError()
             << "target " << target << " appears in more than one pair";
  }
  return success();
}

/// send/recv and their `_start` forms; `handle` is the `_start` result type,
/// null for the blocking forms.
static LogicalResult verifyPeer(Operation *op, std::optional<int64_t> groupSize,
                                int64_t peer, Type handle) {
  if (auto async = dyn_cast_or_null<AsyncType>(handle)) {
    // A send yields nothing when waited on; a recv yields the tensor.
    bool isSend = op->getNumOperands() == 1;
    if (isSend && async.getValueType())
      return op->emitOpError() << "send handle must carry no value "
                                  "(!dist.async), found "
                               << handle;
    if (!isSend && !async.getValueType())
      return op->emitOpError() << "recv handle must wrap the received tensor "
                                  "type, found "
                               << handle;
  }
  return verifyGroupIndex(op, "peer", peer, groupSize);
}

//===----------------------------------------------------------------------===//
// WaitOp
//===----------------------------------------------------------------------===//

LogicalResult WaitOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands, DictionaryAttr,
    OpaqueProperties, RegionRange, SmallVectorImpl<Type> &inferredReturnTypes) {
  auto handle = dyn_cast<AsyncType>(operands.front().getType());
  if (!handle)
    return failure();
  if (Type value = handle.getValueType())
    inferredReturnTypes.push_back(value);
  return success();
}

//===----------------------------------------------------------------------===//
// Local coordinate ops: shard_slice, axis_index
//===----------------------------------------------------------------------===//

LogicalResult ShardSliceOp::verify() { return verifyCommOp(*this); }

LogicalResult
ShardSliceOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyCommOpSymbolUses(*this, symbolTable);
}

// The shape rules of a reduce-scatter: the dim shrinks by the group size.
LogicalResult ShardSliceOp::verifyShapes(std::optional<int64_t> groupSize) {
  return verifyReduceScatter(getOperation(), groupSize, getInput().getType(),
                             getResult().getType(), getDim(), "dim");
}

LogicalResult AxisIndexOp::verify() { return verifyCommOp(*this); }

LogicalResult
AxisIndexOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyCommOpSymbolUses(*this, symbolTable);
}

LogicalResult AxisIndexOp::verifyShapes(std::optional<int64_t>) {
  return success();
}

//===----------------------------------------------------------------------===//
// Flat buffers: pack, unpack
//===----------------------------------------------------------------------===//

/// The layout rules shared by `dist.pack` and `dist.unpack` (see
/// Dist_PackLayoutDoc in DistOps.td): `tensors` are the unpacked side,
/// `flat` the 1-D buffer, `what` names the tensors in messages.
static LogicalResult verifyPackLayout(Operation *op, TypeRange tensors,
                                      ShapedType flat, int64_t numGroups,
                                      ArrayRef<int64_t> scatterDims,
                                      StringRef what) {
  if (tensors.empty())
    return op->emitOpError() << "needs at least one " << what;
  if (!flat.hasStaticShape())
    return op->emitOpError()
           << "flat buffer must have a static shape, found " << flat;
  if (numGroups < 1)
    return op->emitOpError()
           << "num_groups must be at least 1, found " << numGroups;
  if (numGroups == 1 && !scatterDims.empty())
    return op->emitOpError()
           << "scatter_dims must be empty when num_groups is 1";
  if (numGroups > 1 && scatterDims.size() != tensors.size())
    return op->emitOpError()
           << "scatter_dims must have one dim per " << what << " ("
           << tensors.size() << "), found " << scatterDims.size();
  int64_t total = 0;
  for (auto [index, type] : llvm::enumerate(tensors)) {
    auto tensor = cast<ShapedType>(type);
    if (tensor.getElementType() != flat.getElementType())
      return op->emitOpError() << what << " " << index << " element type "
                               << tensor.getElementType()
                               << " must match the flat buffer's element type "
                               << flat.getElementType();
    if (numGroups > 1) {
      int64_t dim = scatterDims[index];
      if (dim < 0 || dim >= tensor.getRank())
        return op->emitOpError()
               << "scatter_dims[" << index << "] = " << dim << " must be a dim "
               << "of " << what << " " << index << ", in [0, "
               << tensor.getRank() << ")";
      if (tensor.getDimSize(dim) % numGroups != 0)
        return op->emitOpError()
               << what << " " << index << " dim " << dim << " of size "
               << tensor.getDimSize(dim) << " must be divisible by num_groups "
               << numGroups;
    }
    int64_t n = 1;
    for (int64_t size : tensor.getShape())
      if (llvm::MulOverflow(n, size, n))
        return op->emitOpError()
               << what << " " << index << " has more elements than int64 holds";
    if (llvm::AddOverflow(total, n, total))
      return op->emitOpError()
             << "the " << what << "s have more elements than int64 holds";
  }
  if (flat.getDimSize(0) != total)
    return op->emitOpError()
           << "flat buffer must have " << total << " elements (the " << what
           << "s together), found " << flat.getDimSize(0);
  return success();
}

LogicalResult PackOp::verify() {
  return verifyPackLayout(getOperation(), getInputs().getTypes(),
                          getResult().getType(), getNumGroups(),
                          getScatterDims(), "input");
}

LogicalResult UnpackOp::verify() {
  return verifyPackLayout(getOperation(), getResults().getTypes(),
                          getInput().getType(), getNumGroups(),
                          getScatterDims(), "result");
}

#include "autoshard/Dialect/Dist/IR/DistInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "autoshard/Dialect/Dist/IR/DistOps.cpp.inc"
