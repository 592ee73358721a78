//===- RtExport.cpp - rt program to the JSON artifact ---------------------===//
//
// Implements `rt-export` (see Passes.td): prints the planned rt program in
// the format of docs/artifact-format.md. Every decision has been taken by
// rt-lower and rt-plan-memory; this pass only translates, and fails on
// anything the format cannot express instead of guessing.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistAttrNames.h"
#include "autoshard/Dialect/Dist/IR/DistAttrs.h"
#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Rt/IR/RtOps.h"
#include "autoshard/Dialect/Rt/Transforms/Passes.h"
#include "autoshard/Dialect/Tfm/IR/TfmAttrNames.h"
#include "autoshard/runtime/EntryAbi.h"
#include "autoshard/runtime/Ops.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/xxhash.h"

#include <map>
#include <set>

namespace autoshard::rt {
#define GEN_PASS_DEF_RTEXPORT
#include "autoshard/Dialect/Rt/Transforms/Passes.h.inc"
} // namespace autoshard::rt

using namespace mlir;
using namespace autoshard::rt;
namespace json = llvm::json;

namespace {

/// The format version written: version 5 = version 4 plus the top-level
/// `checksum`, which a version-5 reader requires and verifies. (Version 2
/// was a program without pipeline stages, 3 one with them, 4 one with
/// entries' `zigzag_chunks`; version 5 holds any of them.)
constexpr int64_t kFormatVersion = 5;

/// The checksum's value before it is computed: its 16 hex digits are
/// hashed as '0' (docs/artifact-format.md, "Checksum").
constexpr llvm::StringLiteral kChecksumPlaceholder = "xxh3-64:0000000000000000";

/// The artifact's name of an element type.
FailureOr<StringRef> getDtypeName(Type type) {
  if (type.isF32())
    return StringRef("f32");
  if (type.isF64())
    return StringRef("f64");
  if (type.isBF16())
    return StringRef("bf16");
  if (type.isF16())
    return StringRef("f16");
  if (type.isInteger(32))
    return StringRef("i32");
  if (type.isInteger(64))
    return StringRef("i64");
  return failure();
}

/// Converts an attribute to JSON: unit attributes as `true`, integers,
/// floats, strings, integer arrays, and arrays and dictionaries of those.
FailureOr<json::Value> toJson(Attribute attr) {
  if (isa<UnitAttr>(attr))
    return json::Value(true);
  if (auto boolean = dyn_cast<BoolAttr>(attr))
    return json::Value(boolean.getValue());
  if (auto integer = dyn_cast<IntegerAttr>(attr))
    return json::Value(integer.getValue().getSExtValue());
  if (auto real = dyn_cast<FloatAttr>(attr))
    return json::Value(real.getValueAsDouble());
  if (auto string = dyn_cast<StringAttr>(attr))
    return json::Value(string.getValue());
  if (auto ints = dyn_cast<DenseI64ArrayAttr>(attr))
    return json::Value(json::Array(ints.asArrayRef()));
  if (auto ints = dyn_cast<DenseI32ArrayAttr>(attr))
    return json::Value(json::Array(ints.asArrayRef()));
  if (auto array = dyn_cast<ArrayAttr>(attr)) {
    json::Array elements;
    for (Attribute element : array) {
      FailureOr<json::Value> value = toJson(element);
      if (failed(value))
        return failure();
      elements.push_back(std::move(*value));
    }
    return json::Value(std::move(elements));
  }
  if (auto dict = dyn_cast<DictionaryAttr>(attr)) {
    json::Object object;
    for (NamedAttribute entry : dict) {
      FailureOr<json::Value> value = toJson(entry.getValue());
      if (failed(value))
        return failure();
      object[entry.getName().getValue()] = std::move(*value);
    }
    return json::Value(std::move(object));
  }
  return failure();
}

/// Whether `attr` has the artifact form `kind` of the runtime's op table.
bool hasAttrKind(Attribute attr, autoshard::runtime::AttrKind kind) {
  using autoshard::runtime::AttrKind;
  switch (kind) {
  case AttrKind::Unit:
    return isa<UnitAttr>(attr);
  case AttrKind::Bool:
    return isa<BoolAttr>(attr);
  case AttrKind::Int:
    return isa<IntegerAttr>(attr);
  case AttrKind::Float:
    return isa<FloatAttr>(attr);
  case AttrKind::String:
    return isa<StringAttr>(attr);
  case AttrKind::IntArray:
    return isa<DenseI64ArrayAttr, DenseI32ArrayAttr>(attr);
  case AttrKind::StringArray:
    if (auto array = dyn_cast<ArrayAttr>(attr))
      return llvm::all_of(array, llvm::IsaPred<StringAttr>);
    return false;
  }
  return false;
}

/// "2", "2 to 3", "1 or more".
std::string describeCount(int lo, int hi) {
  return std::to_string(lo) + (hi == lo ? ""
                               : hi < 0 ? " or more"
                                        : " to " + std::to_string(hi));
}

/// Checks `kernel` against the runtime's op table (the generated OpTable.h
/// the runtime's loader also checks against), so that an artifact the
/// runtime would reject fails here, naming the IR.
LogicalResult verifyKernelAbi(KernelOp kernel) {
  StringRef name = kernel.getKernel();
  const autoshard::runtime::OpSpec *spec =
      autoshard::runtime::lookupOp(std::string_view(name.data(), name.size()));
  if (!spec)
    return kernel.emitOpError()
           << "names kernel '" << name
           << "', which the runtime's op table (RtKernels.td) does not have";
  auto counted = [&](StringRef what, int count, int lo,
                     int hi) -> LogicalResult {
    if (count >= lo && (hi < 0 || count <= hi))
      return success();
    return kernel.emitOpError() << "has " << count << " " << what << "; '"
                                << name << "' has " << describeCount(lo, hi);
  };
  if (failed(counted("args", kernel.getArgs().size(), spec->minArgs,
                     spec->maxArgs)) ||
      failed(counted("results", kernel.getResults().size(), spec->minResults,
                     spec->maxResults)))
    return failure();
  DictionaryAttr attrs = kernel.getAttrsAttr();
  for (const autoshard::runtime::AttrSpec &attr : spec->attrs) {
    StringRef attrName(attr.name.data(), attr.name.size());
    Attribute value = attrs ? attrs.get(attrName) : Attribute();
    if (!value && attr.required)
      return kernel.emitOpError()
             << "'" << name << "' needs attribute '" << attrName << "'";
    if (value && !hasAttrKind(value, attr.kind))
      return kernel.emitOpError() << "attribute '" << attrName << "' of '"
                                  << name << "' has the wrong kind: " << value;
  }
  if (attrs)
    for (NamedAttribute attr : attrs) {
      StringRef attrName = attr.getName().getValue();
      if (!spec->findAttr(std::string_view(attrName.data(), attrName.size())))
        return kernel.emitOpError()
               << "'" << name << "' has no attribute '" << attrName
               << "' in the runtime's op table";
    }
  return success();
}

/// The elements of a dense constant, row-major, as JSON numbers.
json::Array getElements(DenseElementsAttr value) {
  json::Array elements;
  if (isa<FloatType>(value.getElementType())) {
    for (APFloat element : value.getValues<APFloat>()) {
      bool lostInfo;
      element.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                      &lostInfo);
      elements.push_back(element.convertToDouble());
    }
  } else {
    for (APInt element : value.getValues<APInt>())
      elements.push_back(element.getSExtValue());
  }
  return elements;
}

/// Whether `value` holds a table: an array of objects (a function's
/// buffers or code, the state table, ...).
bool containsTable(const json::Value &value) {
  if (const json::Array *array = value.getAsArray())
    return llvm::any_of(*array, [](const json::Value &element) {
      return element.getAsObject() || containsTable(element);
    });
  if (const json::Object *object = value.getAsObject())
    return llvm::any_of(
        *object, [](const auto &entry) { return containsTable(entry.second); });
  return false;
}

/// Prints `value` so that it reads (and FileChecks) by line: each row of a
/// table (a buffer, an instruction, a state entry) and anything short goes
/// on one line, everything else has one line per element. Keys are sorted,
/// as in llvm::json's own printer.
void printJson(llvm::raw_ostream &os, const json::Value &value, unsigned indent,
               bool isRow) {
  constexpr size_t kLineWidth = 100;
  std::string compact = llvm::formatv("{0}", value).str();
  const json::Object *object = value.getAsObject();
  const json::Array *array = value.getAsArray();
  if ((!object && !array) || indent + compact.size() <= kLineWidth ||
      (isRow && !containsTable(value))) {
    os << compact;
    return;
  }
  std::string pad(indent + 2, ' ');
  bool first = true;
  auto separate = [&] {
    os << (first ? "\n" : ",\n") << pad;
    first = false;
  };
  if (object) {
    SmallVector<StringRef> keys;
    for (const auto &entry : *object)
      keys.push_back(entry.first);
    llvm::sort(keys);
    os << '{';
    for (StringRef key : keys) {
      separate();
      os << llvm::formatv("{0}", json::Value(key)) << ": ";
      printJson(os, *object->get(key), indent + 2, /*isRow=*/false);
    }
    os << '\n' << std::string(indent, ' ') << '}';
    return;
  }
  os << '[';
  for (const json::Value &element : *array) {
    separate();
    printJson(os, element, indent + 2, /*isRow=*/true);
  }
  os << '\n' << std::string(indent, ' ') << ']';
}

/// Builds the artifact of a module.
class ArtifactWriter {
public:
  explicit ArtifactWriter(ModuleOp module) : module(module) {}

  FailureOr<json::Value> write();

private:
  FailureOr<json::Object> describeType(Operation *op, Type type);
  FailureOr<json::Value> writeState();
  FailureOr<int64_t> getConstantId(ConstOp op);
  FailureOr<json::Value> writeFunction(FuncOp func);
  FailureOr<json::Value> writeSlots(FuncOp func, bool outputs);
  FailureOr<json::Value> writeModel();
  LogicalResult findMesh();
  LogicalResult addSharding(Operation *op, Type localType, json::Object &entry,
                            bool isSlot = false);

  ModuleOp module;
  /// The program's mesh (at most one `dist.mesh`; none: one device).
  autoshard::dist::MeshOp mesh;
  json::Array constants;
  DenseMap<Attribute, int64_t> constantIds;
  int64_t constantBytes = 0;
  int64_t stateBytes = 0;
  std::array<int64_t, 3> stateBytesByKind{};
};

/// `{dtype, shape}` of a buffer type; errors name `op`.
FailureOr<json::Object> ArtifactWriter::describeType(Operation *op, Type type) {
  auto buffer = cast<BufferType>(type);
  FailureOr<StringRef> dtype = getDtypeName(buffer.getElementType());
  if (failed(dtype))
    return op->emitOpError() << "element type " << buffer.getElementType()
                             << " has no artifact dtype (f32, f64, bf16, "
                                "f16, i32, i64)";
  return json::Object{{"dtype", *dtype},
                      {"shape", json::Array(buffer.getShape())}};
}

LogicalResult ArtifactWriter::findMesh() {
  for (auto op : module.getOps<autoshard::dist::MeshOp>()) {
    if (mesh)
      return op.emitOpError()
             << "is a second mesh; rt-export writes one mesh per artifact";
    mesh = op;
  }
  return success();
}

/// `global_shape` and `sharding` (per dim, the mesh axes major to minor) of
/// a state or an I/O slot, from its `dist.sharding` attribute (set by
/// rt-lower from the entry's arg/result attributes); replicated without one.
/// An I/O slot may be partial (`partial`: axis -> reduction; test programs,
/// e.g. the resharding tests), a state never.
LogicalResult ArtifactWriter::addSharding(Operation *op, Type localType,
                                          json::Object &entry, bool isSlot) {
  auto buffer = cast<BufferType>(localType);
  auto sharding =
      op->getAttrOfType<autoshard::dist::ShardingAttr>("rt.sharding");
  json::Array dims;
  SmallVector<int64_t> global(buffer.getShape());
  if (sharding) {
    if (!mesh || mesh.getSymName() != sharding.getMeshName())
      return op->emitOpError()
             << "sharding " << sharding << " names no mesh of this module";
    if (sharding.isPartial() && !isSlot)
      return op->emitOpError() << "sharding " << sharding
                               << " is partial; a state must be reduced first";
    if (sharding.isPartial()) {
      json::Object partial;
      for (const autoshard::dist::PartialAxis &p : sharding.getPartialAxes())
        partial[p.axis.getValue()] =
            autoshard::dist::stringifyReductionKind(p.kind);
      entry["partial"] = std::move(partial);
    }
    if (sharding.getRank() != static_cast<int64_t>(buffer.getShape().size()))
      return op->emitOpError() << "sharding " << sharding << " does not have "
                               << "the rank of " << localType;
    RankedTensorType globalType =
        sharding.getGlobalType(buffer.getTensorType(), mesh);
    if (!globalType)
      return op->emitOpError() << "global shape of " << localType << " sharded "
                               << sharding << " overflows";
    global.assign(globalType.getShape().begin(), globalType.getShape().end());
    for (unsigned d = 0; d < sharding.getRank(); ++d) {
      json::Array axes;
      for (StringAttr axis : sharding.getDimAxes(d))
        axes.push_back(axis.getValue());
      dims.push_back(std::move(axes));
    }
  } else {
    for (size_t d = 0; d < buffer.getShape().size(); ++d)
      dims.push_back(json::Array());
  }
  entry["global_shape"] = json::Array(global);
  entry["sharding"] = std::move(dims);
  return success();
}

FailureOr<json::Value> ArtifactWriter::writeState() {
  json::Array states;
  for (StateDefOp def : module.getOps<StateDefOp>()) {
    FailureOr<json::Object> entry = describeType(def, def.getType());
    if (failed(entry))
      return failure();
    (*entry)["name"] = def.getSymName();
    (*entry)["kind"] = stringifyStateKind(def.getKind());
    if (def.getOf())
      (*entry)["of"] = *def.getOf();
    json::Object init{{"kind", stringifyInitKind(def.getInit())}};
    if (def.getInitStd())
      init["std"] = def.getInitStd()->convertToDouble();
    if (def.getKind() == StateKind::Param)
      (*entry)["weight_decay"] = def.getWeightDecay();
    if (failed(addSharding(def, def.getType(), *entry)))
      return failure();
    if (std::optional<ArrayRef<int64_t>> logical = def.getLogicalShape()) {
      // The unpadded shape must fit in the (global) padded one.
      const json::Array *global = entry->getArray("global_shape");
      bool fits = global && global->size() == logical->size();
      for (size_t d = 0; fits && d < logical->size(); ++d)
        fits = (*logical)[d] <= *(*global)[d].getAsInteger();
      if (!fits)
        return def.emitOpError() << "logical shape does not fit in the global "
                                    "shape of the state";
      init["logical_shape"] = json::Array(*logical);
    }
    (*entry)["init"] = std::move(init);
    states.push_back(std::move(*entry));
    // The runtime packs the pool by decreasing element size: no padding.
    int64_t bytes = def.getBufferType().getSizeInBytes();
    stateBytes += bytes;
    stateBytesByKind[static_cast<unsigned>(def.getKind())] += bytes;
  }
  return json::Value(std::move(states));
}

FailureOr<int64_t> ArtifactWriter::getConstantId(ConstOp op) {
  auto value = cast<DenseElementsAttr>(op.getValue());
  auto [it, inserted] = constantIds.try_emplace(value, constants.size());
  if (!inserted)
    return it->second;
  FailureOr<json::Object> entry = describeType(op, op.getType());
  if (failed(entry))
    return failure();
  (*entry)["id"] = it->second;
  (*entry)["data"] = getElements(value);
  constants.push_back(std::move(*entry));
  constantBytes += cast<BufferType>(op.getType()).getSizeInBytes();
  return it->second;
}

FailureOr<json::Value> ArtifactWriter::writeFunction(FuncOp func) {
  if (!func.isPlanned())
    return func.emitOpError()
           << "is not planned (no frame_bytes); run rt-plan-memory before "
              "rt-export";
  DenseMap<Value, int64_t> ids;
  json::Array buffers, code;
  // Adds buffer `value` to the table with the kind-specific `fields`.
  auto addBuffer = [&](Operation *op, Value value,
                       json::Object fields) -> LogicalResult {
    FailureOr<json::Object> entry = describeType(op, value.getType());
    if (failed(entry))
      return failure();
    int64_t id = ids.size();
    ids[value] = id;
    (*entry)["id"] = id;
    for (auto &field : fields)
      (*entry)[field.first] = std::move(field.second);
    buffers.push_back(std::move(*entry));
    return success();
  };
  auto idsOf = [&](ValueRange values) {
    return json::Array(llvm::map_range(
        values, [&](Value value) { return json::Value(ids.lookup(value)); }));
  };
  auto placed = [](std::optional<int64_t> offset, Type type) {
    return json::Object{{"offset", *offset},
                        {"bytes", cast<BufferType>(type).getSizeInBytes()}};
  };

  for (BlockArgument arg : func.getArguments())
    if (failed(addBuffer(
            func, arg,
            json::Object{{"kind", "arg"}, {"index", arg.getArgNumber()}})))
      return failure();
  for (Operation &op : func.getBody().front()) {
    LogicalResult result =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](AllocOp alloc) {
              json::Object fields = placed(alloc.getOffset(), alloc.getType());
              fields["kind"] = "local";
              fields["category"] = stringifyCategory(alloc.getCategory());
              return addBuffer(alloc, alloc, std::move(fields));
            })
            .Case<InputOp, OutputOp>([&](auto slot) {
              json::Object fields = placed(slot.getOffset(), slot.getType());
              fields["kind"] = isa<InputOp>(slot) ? "input" : "output";
              fields["role"] = slot.getRole();
              return addBuffer(slot, slot, std::move(fields));
            })
            .Case([&](ViewOp view) {
              return addBuffer(
                  view, view,
                  json::Object{{"kind", "alias"},
                               {"of", ids.lookup(view.getSource())}});
            })
            .Case([&](StateOp state) {
              return addBuffer(
                  state, state,
                  json::Object{{"kind", "state"}, {"name", state.getName()}});
            })
            .Case([&](ConstOp constant) -> LogicalResult {
              FailureOr<int64_t> id = getConstantId(constant);
              if (failed(id))
                return failure();
              return addBuffer(constant, constant,
                               json::Object{{"kind", "const"}, {"const", *id}});
            })
            .Case([&](KernelOp kernel) -> LogicalResult {
              if (failed(verifyKernelAbi(kernel)))
                return failure();
              json::Value attrs = json::Object();
              if (kernel.getAttrs()) {
                FailureOr<json::Value> converted = toJson(*kernel.getAttrs());
                if (failed(converted))
                  return kernel.emitOpError()
                         << "has an attribute with no artifact form (unit, "
                            "integer, float, string, integer or string "
                            "array): "
                         << *kernel.getAttrs();
                attrs = std::move(*converted);
              }
              code.push_back(
                  json::Object{{"op", kernel.getKernel()},
                               {"args", idsOf(kernel.getArgs())},
                               {"results", idsOf(kernel.getResults())},
                               {"attrs", std::move(attrs)}});
              return success();
            })
            .Case([&](CallOp call) {
              code.push_back(
                  json::Object{{"op", "call"},
                               {"callee", call.getCallee()},
                               {"args", idsOf(call.getOperands())},
                               {"frame_offset", *call.getFrameOffset()}});
              return success();
            })
            .Case([](ReturnOp) { return success(); })
            .Default([](Operation *op) {
              return op->emitOpError() << "has no artifact form";
            });
    if (failed(result))
      return failure();
  }
  return json::Value(json::Object{{"name", func.getSymName()},
                                  {"frame_bytes", *func.getFrameBytes()},
                                  {"num_args", func.getNumArguments()},
                                  {"buffers", std::move(buffers)},
                                  {"code", std::move(code)}});
}

/// The `inputs` or `outputs` map of an entry: role -> {dtype, shape}.
FailureOr<json::Value> ArtifactWriter::writeSlots(FuncOp func, bool outputs) {
  json::Object slots;
  for (Operation &op : func.getBody().front()) {
    if (!(outputs ? isa<OutputOp>(op) : isa<InputOp>(op)))
      continue;
    StringRef role = op.getAttrOfType<StringAttr>("role").getValue();
    // shard-run feeds and reads whole values: a partial one (e.g. a loss
    // left partial by hand-written shardings) fails here, not at run time.
    auto sharding =
        op.getAttrOfType<autoshard::dist::ShardingAttr>("rt.sharding");
    if (sharding && sharding.isPartial() &&
        autoshard::runtime::entry_abi::isRunnerRole(role.str(), !outputs))
      return op.emitOpError()
             << "entry '" << func.getSymName() << "' "
             << (outputs ? "output '" : "input '") << role << "' is partial ("
             << sharding << "); shard-run " << (outputs ? "reads" : "feeds")
             << " whole values: make its sharding not partial (dist-partition "
                "then reduces it)";
    FailureOr<json::Object> slot = describeType(&op, op.getResult(0).getType());
    if (failed(slot) ||
        failed(addSharding(&op, op.getResult(0).getType(), *slot,
                           /*isSlot=*/true)))
      return failure();
    slots[role] = std::move(*slot);
  }
  return json::Value(std::move(slots));
}

/// The module's `tfm.model` summary, with the `seq` key the format names
/// (the builder writes `seq_len`). The runtime needs the vocabulary and the
/// compiled batch shape, so those keys are required.
FailureOr<json::Value> ArtifactWriter::writeModel() {
  auto model =
      module->getAttrOfType<DictionaryAttr>(autoshard::tfm::kModelAttrName);
  if (!model)
    return module.emitError()
           << "rt-export: the module has no 'tfm.model' dictionary (the "
              "artifact's model summary)";
  json::Object object;
  for (NamedAttribute entry : model)
    // Informational keys without a JSON form are left out.
    if (FailureOr<json::Value> field = toJson(entry.getValue());
        succeeded(field))
      object[entry.getName().getValue()] = std::move(*field);
  if (!object.get("seq"))
    if (const json::Value *seqLen = object.get("seq_len"))
      object["seq"] = *seqLen;
  for (StringRef key : {"vocab_size", "padded_vocab_size", "batch", "seq"})
    if (!object.getInteger(key))
      return module.emitError()
             << "rt-export: 'tfm.model' needs an integer '" << key
             << "' (the runtime sizes batches and masks sampling with it)";
  return json::Value(std::move(object));
}

FailureOr<json::Value> ArtifactWriter::write() {
  if (failed(findMesh()))
    return failure();
  FailureOr<json::Value> state = writeState();
  FailureOr<json::Value> model = writeModel();
  if (failed(state) || failed(model))
    return failure();
  json::Array functions;
  json::Object entries, entryMemory;
  int64_t transientBytes = 0;
  // Pipeline stages (`pp_stage` on entry functions): the state each stage's
  // programs read or write, and its largest frame.
  std::map<int64_t, std::set<std::string>> stageStates;
  std::map<int64_t, int64_t> stageTransient;
  for (FuncOp func : module.getOps<FuncOp>()) {
    if (!func.isEntry() || !func.getPpStage())
      continue;
    int64_t stage = *func.getPpStage();
    func.walk(
        [&](StateOp op) { stageStates[stage].insert(op.getName().str()); });
    stageTransient[stage] =
        std::max(stageTransient[stage], *func.getFrameBytes());
  }
  for (FuncOp func : module.getOps<FuncOp>()) {
    FailureOr<json::Value> function = writeFunction(func);
    if (failed(function))
      return failure();
    functions.push_back(std::move(*function));
    if (!func.isEntry())
      continue;
    FailureOr<json::Value> inputs = writeSlots(func, /*outputs=*/false);
    FailureOr<json::Value> outputs = writeSlots(func, /*outputs=*/true);
    if (failed(inputs) || failed(outputs))
      return failure();
    // One key per stage of a pipelined entry: `train_step@pp1`.
    std::string name = func.getEntry()->str();
    json::Object entry{{"function", func.getSymName()},
                       {"inputs", std::move(*inputs)},
                       {"outputs", std::move(*outputs)}};
    // Zig-zag cp (dist-zigzag-sequence): shard-run permutes the sequences
    // it feeds this entry.
    if (auto order = module->getAttrOfType<DictionaryAttr>(
            autoshard::dist::kSequenceOrderAttrName))
      if (auto chunks = order.getAs<IntegerAttr>(name))
        entry["zigzag_chunks"] = chunks.getInt();
    if (func.getPpStage()) {
      entry["entry"] = name;
      entry["pp_stage"] = *func.getPpStage();
      name += "@pp" + std::to_string(*func.getPpStage());
    }
    entries[name] = std::move(entry);
    json::Value breakdown = json::Object();
    if (func.getPeakBreakdown())
      breakdown = *toJson(*func.getPeakBreakdown());
    entryMemory[name] =
        json::Object{{"frame_bytes", *func.getFrameBytes()},
                     {"breakdown_at_peak", std::move(breakdown)}};
    // Entries never run concurrently: they share one transient arena.
    transientBytes = std::max(transientBytes, *func.getFrameBytes());
  }

  json::Object stateBreakdown;
  for (unsigned kind = 0; kind < stateBytesByKind.size(); ++kind)
    stateBreakdown[stringifyStateKind(static_cast<StateKind>(kind))] =
        stateBytesByKind[kind];
  json::Object memory{
      {"state_bytes", stateBytes},
      {"constant_bytes", constantBytes},
      {"transient_bytes", transientBytes},
      {"peak_bytes", stateBytes + constantBytes + transientBytes},
      {"entries", std::move(entryMemory)},
      {"state_breakdown", std::move(stateBreakdown)}};
  if (!stageStates.empty()) {
    // Per stage: what one of its ranks allocates (the state it holds, the
    // constants, the largest frame of its entries).
    json::Array stages;
    for (auto &[stage, names] : stageStates) {
      int64_t held = 0;
      for (StateDefOp def : module.getOps<StateDefOp>())
        if (names.count(def.getSymName().str()))
          held += def.getBufferType().getSizeInBytes();
      stages.push_back(json::Object{
          {"pp_stage", stage},
          {"state_bytes", held},
          {"transient_bytes", stageTransient[stage]},
          {"peak_bytes", held + constantBytes + stageTransient[stage]}});
    }
    memory["stages"] = std::move(stages);
    // Which stages hold each state tensor.
    for (json::Value &v : *state->getAsArray()) {
      json::Object &obj = *v.getAsObject();
      json::Array holders;
      for (auto &[stage, names] : stageStates)
        if (names.count(obj.getString("name")->str()))
          holders.push_back(stage);
      obj["stages"] = std::move(holders);
    }
  }

  // The mesh (row-major ranks) and the plan it came from (`dist.plan`,
  // informational).
  json::Array axes, sizes;
  int64_t worldSize = 1;
  if (mesh) {
    for (Attribute name : mesh.getAxisNames())
      axes.push_back(cast<StringAttr>(name).getValue());
    for (int64_t size : mesh.getAxisSizes())
      sizes.push_back(size);
    worldSize = mesh.getNumDevices();
  }
  json::Object meshJson{{"axes", std::move(axes)}, {"sizes", std::move(sizes)}};
  json::Value plan = json::Object();
  if (auto planAttr = module->getAttrOfType<DictionaryAttr>(
          autoshard::dist::kPlanAttrName)) {
    FailureOr<json::Value> converted = toJson(planAttr);
    if (failed(converted))
      return module.emitError()
             << "rt-export: 'dist.plan' has a value with no JSON form: "
             << planAttr;
    plan = std::move(*converted);
  }

  return json::Value(json::Object{
      {"format", "autoshard-artifact"},
      {"version", kFormatVersion},
      {"checksum", kChecksumPlaceholder},
      {"producer", "shard-opt (autoshard) MLIR " LLVM_VERSION_STRING},
      {"model", std::move(*model)},
      {"world_size", worldSize},
      {"mesh", std::move(meshJson)},
      {"plan", std::move(plan)},
      {"state", std::move(*state)},
      {"constants", std::move(constants)},
      {"functions", std::move(functions)},
      {"entries", std::move(entries)},
      {"memory", std::move(memory)}});
}

struct RtExportPass : public autoshard::rt::impl::RtExportBase<RtExportPass> {
  using RtExportBase::RtExportBase;

  void runOnOperation() override {
    markAllAnalysesPreserved();
    FailureOr<json::Value> artifact = ArtifactWriter(getOperation()).write();
    if (failed(artifact))
      return signalPassFailure();
    std::string text;
    llvm::raw_string_ostream os(text);
    printJson(os, *artifact, 0, /*isRow=*/false);
    os << '\n';
    // The keys are sorted: "checksum" is the top level's first, so its
    // placeholder's first occurrence is the field's value.
    size_t at = text.find(("\"" + kChecksumPlaceholder + "\"").str());
    if (at == std::string::npos) {
      getOperation().emitError()
          << "rt-export: the artifact's 'checksum' field was not printed";
      return signalPassFailure();
    }
    size_t digits = at + 1 + llvm::StringRef("xxh3-64:").size();
    uint64_t hash = llvm::xxh3_64bits(llvm::StringRef(text));
    std::string hex = llvm::formatv("{0:x-16}", hash).str();
    text.replace(digits, hex.size(), hex);
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(output, &error);
    if (!file) {
      getOperation().emitError()
          << "rt-export: cannot open '" << output << "': " << error;
      return signalPassFailure();
    }
    file->os() << text;
    file->keep();
  }
};

} // namespace
