//===- Artifact.cpp - Parse the JSON artifact -----------------------------===//
//
// Field-level parsing: every field's presence, type and spelling. The
// cross-reference checks (ids, arities, frames, memory) are in
// ArtifactVerify.cpp.
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/Artifact.h"
#include "autoshard/runtime/Ops.h"

#include "ArtifactVerify.h"
#include "JsonReader.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace autoshard::runtime {

using detail::describe;
using detail::Json;
using detail::JsonReader;

//===----------------------------------------------------------------------===//
// AttrMap
//===----------------------------------------------------------------------===//

void AttrMap::set(std::string name, AttrValue value) {
  values[std::move(name)] = std::move(value);
}

bool AttrMap::has(std::string_view name) const {
  return values.find(name) != values.end();
}

const AttrValue &AttrMap::get(std::string_view name,
                              const char *expected) const {
  auto it = values.find(name);
  if (it == values.end())
    throw ArtifactError(context + ": missing attribute '" + std::string(name) +
                        "' (" + expected + ")");
  return it->second;
}

double AttrMap::getF64(std::string_view name) const {
  const AttrValue &v = get(name, "a float");
  if (const double *d = std::get_if<double>(&v))
    return *d;
  if (const int64_t *i = std::get_if<int64_t>(&v))
    return static_cast<double>(*i);
  throw ArtifactError(context + ": attribute '" + std::string(name) +
                      "' must be a float");
}

int64_t AttrMap::getI64(std::string_view name) const {
  if (const int64_t *i = std::get_if<int64_t>(&get(name, "an integer")))
    return *i;
  throw ArtifactError(context + ": attribute '" + std::string(name) +
                      "' must be an integer");
}

bool AttrMap::getFlag(std::string_view name) const {
  auto it = values.find(name);
  if (it == values.end())
    return false;
  if (const bool *b = std::get_if<bool>(&it->second))
    return *b;
  throw ArtifactError(context + ": unit attribute '" + std::string(name) +
                      "' must be true or false");
}

std::vector<int64_t> AttrMap::getI64Array(std::string_view name) const {
  if (const auto *a =
          std::get_if<std::vector<int64_t>>(&get(name, "an integer list")))
    return *a;
  throw ArtifactError(context + ": attribute '" + std::string(name) +
                      "' must be a list of integers");
}

std::string AttrMap::getString(std::string_view name) const {
  if (const auto *v = std::get_if<std::string>(&get(name, "a string")))
    return *v;
  throw ArtifactError(context + ": attribute '" + std::string(name) +
                      "' must be a string");
}

std::vector<std::string> AttrMap::getStringArray(std::string_view name) const {
  const AttrValue &v = get(name, "a list of strings");
  if (const auto *a = std::get_if<std::vector<std::string>>(&v))
    return *a;
  if (const auto *a = std::get_if<std::vector<int64_t>>(&v); a && a->empty())
    return {};
  throw ArtifactError(context + ": attribute '" + std::string(name) +
                      "' must be a list of strings");
}

//===----------------------------------------------------------------------===//
// Artifact lookups
//===----------------------------------------------------------------------===//

int64_t Artifact::findFunction(std::string_view name) const {
  for (size_t i = 0; i < functions.size(); ++i)
    if (functions[i].name == name)
      return static_cast<int64_t>(i);
  return -1;
}

const EntrySpec *Artifact::findEntry(std::string_view key) const {
  for (const EntrySpec &e : entries)
    if (e.key == key)
      return &e;
  return nullptr;
}

const EntrySpec *Artifact::findEntry(std::string_view name,
                                     int64_t stage) const {
  for (const EntrySpec &e : entries)
    if (e.name == name && (e.ppStage < 0 || e.ppStage == stage))
      return &e;
  return nullptr;
}

int64_t Artifact::pipelineStage(int64_t rank) const {
  int64_t axis = mesh.axisIndex("pp");
  if (memory.stages.empty() || axis < 0)
    return -1;
  return mesh.coords(rank)[axis];
}

bool StateSpec::heldBy(int64_t stage) const {
  return stages.empty() || stage < 0 ||
         std::find(stages.begin(), stages.end(), stage) != stages.end();
}

const std::vector<int64_t> &
StateSpec::initShape(const std::vector<int64_t> &offset) const {
  const std::vector<int64_t> &local = type.shape;
  const std::vector<int64_t> &global =
      globalShape.empty() ? local : globalShape;
  const std::vector<int64_t> &logical =
      logicalShape.empty() ? global : logicalShape;
  size_t rank = local.size();
  if (rank > 16 || logical.size() != rank ||
      (!offset.empty() && offset.size() != rank))
    throw ArtifactError("state '" + name + "': cannot initialise " +
                        type.str() + " (rank over 16, or logical " +
                        "shape or offset of another rank)");
  return logical;
}

const StageMemory *MemoryPlan::findStage(int64_t stage) const {
  for (const StageMemory &m : stages)
    if (m.ppStage == stage)
      return &m;
  return nullptr;
}

int64_t Artifact::findState(std::string_view name) const {
  for (size_t i = 0; i < state.size(); ++i)
    if (state[i].name == name)
      return static_cast<int64_t>(i);
  return -1;
}

int64_t rootBuffer(const Function &fn, int64_t id) {
  // Verified acyclic at load time.
  while (fn.buffers[id].kind == BufferKind::Alias)
    id = fn.buffers[id].of;
  return id;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {

/// Picks the enum value whose spelling is `field`'s value.
template <typename E>
E parseEnum(const JsonReader &r, std::string_view field,
            std::initializer_list<std::pair<std::string_view, E>> choices) {
  std::string s = r.str(field);
  std::string expected;
  for (const auto &[name, value] : choices) {
    if (s == name)
      return value;
    expected += (expected.empty() ? "" : ", ") + std::string(name);
  }
  r.failField(field, "has unknown value '" + s + "' (expected one of " +
                         expected + ")");
}

/// The optional `sharding` and `global_shape` fields of a state entry or an
/// entry slot whose local type is `local` (version 2). Without `sharding`
/// the tensor is replicated; without `global_shape` it is computed.
void parseSharding(const JsonReader &r, const Mesh &mesh,
                   const TensorType &local, Sharding &sharding,
                   std::vector<int64_t> &globalShape) {
  size_t rank = local.shape.size();
  if (r.has("sharding")) {
    const Json &dims = r.array("sharding");
    if (dims.size() != rank)
      r.failField("sharding", "lists " + std::to_string(dims.size()) +
                                  " dims, but the shape " + local.str() +
                                  " has " + std::to_string(rank));
    std::vector<std::string> used;
    for (const Json &dim : dims) {
      if (!dim.is_array())
        r.failField("sharding", "must list one list of mesh axis names per "
                                "dim, found " +
                                    describe(dim));
      std::vector<std::string> &axes = sharding.dims.emplace_back();
      for (const Json &axis : dim) {
        if (!axis.is_string())
          r.failField("sharding",
                      "must list mesh axis names, found " + describe(axis));
        std::string name = axis.get<std::string>();
        if (mesh.axisIndex(name) < 0)
          r.failField("sharding",
                      "names '" + name + "', which is not an axis of the mesh");
        if (std::find(used.begin(), used.end(), name) != used.end())
          r.failField("sharding", "names axis '" + name + "' twice");
        used.push_back(name);
        axes.push_back(name);
      }
    }
  }
  std::vector<int64_t> blocks = mesh.numBlocks(sharding, rank);
  std::vector<int64_t> expected(rank);
  for (size_t d = 0; d < rank; ++d)
    expected[d] = local.shape[d] * blocks[d];
  if (!r.has("global_shape")) {
    globalShape = expected;
    return;
  }
  for (const Json &v : r.array("global_shape")) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      r.failField("global_shape", "must list dims >= 0, found " + describe(v));
    globalShape.push_back(v.get<int64_t>());
  }
  if (globalShape != expected) {
    TensorType g{local.dtype, globalShape}, e{local.dtype, expected};
    r.failField("global_shape", "is " + g.str() + ", but the local shape " +
                                    local.str() + " sharded " + sharding.str() +
                                    " on the mesh gives " + e.str());
  }
}

StateSpec parseState(const JsonReader &r, const Mesh &mesh) {
  StateSpec s;
  s.name = r.str("name");
  s.kind = parseEnum<StateKind>(r, "kind",
                                {{"param", StateKind::Param},
                                 {"opt_m", StateKind::OptM},
                                 {"opt_v", StateKind::OptV}});
  if (s.kind != StateKind::Param)
    s.of = r.str("of");
  s.type = r.tensorType();
  JsonReader init = r.at(r.object("init"), r.place() + ", field 'init'");
  s.init = parseEnum<InitKind>(init, "kind",
                               {{"normal", InitKind::Normal},
                                {"zeros", InitKind::Zeros},
                                {"ones", InitKind::Ones}});
  if (s.init == InitKind::Normal) {
    s.initStd = init.f64("std");
    if (!(s.initStd >= 0) || !std::isfinite(s.initStd))
      init.failField("std", "must be finite and >= 0, found " +
                                describe(init.field("std")));
  }
  if (r.has("weight_decay"))
    s.weightDecay = r.boolean("weight_decay");
  parseSharding(r, mesh, s.type, s.sharding, s.globalShape);
  if (r.has("stages")) {
    const Json &stages = r.array("stages");
    for (const Json &v : stages) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0)
        r.failField("stages",
                    "must list pipeline stages >= 0, found " + describe(v));
      s.stages.push_back(v.get<int64_t>());
    }
    if (s.stages.empty())
      r.failField("stages", "is empty (no stage holds the tensor)");
  }
  if (init.has("logical_shape")) {
    for (const Json &v : init.array("logical_shape")) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0)
        init.failField("logical_shape",
                       "must list dims >= 0, found " + describe(v));
      s.logicalShape.push_back(v.get<int64_t>());
    }
    bool fits = s.logicalShape.size() == s.globalShape.size();
    for (size_t d = 0; fits && d < s.logicalShape.size(); ++d)
      fits = s.logicalShape[d] <= s.globalShape[d];
    if (!fits)
      init.failField("logical_shape",
                     "must have the rank of the global shape " +
                         TensorType{s.type.dtype, s.globalShape}.str() +
                         " and fit in it");
  }
  return s;
}

/// Appends `value` to `out` in the bytes of `dtype`.
void encodeElement(const JsonReader &r, const Json &value, DType dtype,
                   std::vector<unsigned char> &out) {
  auto append = [&](auto v) {
    size_t n = out.size();
    out.resize(n + sizeof(v));
    std::memcpy(out.data() + n, &v, sizeof(v));
  };
  if (!value.is_number())
    r.failField("data", "must list numbers, found " + describe(value));
  switch (dtype) {
  case DType::F32:
    return append(value.get<float>());
  case DType::F64:
    return append(value.get<double>());
  case DType::BF16: {
    float f = value.get<float>();
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits += 0x7FFFu + ((bits >> 16) & 1u); // round to nearest even
    return append(static_cast<uint16_t>(bits >> 16));
  }
  case DType::I32:
  case DType::I64: {
    bool is32 = dtype == DType::I32;
    if (!value.is_number_integer() ||
        (is32 && (value.get<int64_t>() < INT32_MIN ||
                  value.get<int64_t>() > INT32_MAX)))
      r.failField("data", "must list " + std::string(dtypeName(dtype)) +
                              " integers, found " + describe(value));
    if (is32)
      return append(value.get<int32_t>());
    return append(value.get<int64_t>());
  }
  case DType::F16:
    break;
  }
  r.failField("dtype", "f16 constants are not supported by this runtime");
}

ConstantSpec parseConstant(const JsonReader &r) {
  ConstantSpec c;
  c.type = r.tensorType();
  const Json &data = r.array("data");
  if (static_cast<int64_t>(data.size()) != c.type.numel())
    r.failField("data", "has " + std::to_string(data.size()) +
                            " elements, but the shape " + c.type.str() +
                            " has " + std::to_string(c.type.numel()));
  for (const Json &v : data)
    encodeElement(r, v, c.type.dtype, c.data);
  return c;
}

BufferSpec parseBuffer(const JsonReader &r, const Artifact &a) {
  BufferSpec b;
  b.kind = parseEnum<BufferKind>(r, "kind",
                                 {{"arg", BufferKind::Arg},
                                  {"local", BufferKind::Local},
                                  {"alias", BufferKind::Alias},
                                  {"state", BufferKind::State},
                                  {"const", BufferKind::Const},
                                  {"input", BufferKind::Input},
                                  {"output", BufferKind::Output}});
  b.type = r.tensorType();
  switch (b.kind) {
  case BufferKind::Arg:
    b.index = r.i64AtLeast("index", 0);
    break;
  case BufferKind::Local:
    b.category = r.str("category");
    if (b.category != "activation" && b.category != "grad" &&
        b.category != "workspace" && b.category != "io")
      r.failField("category", "has unknown value '" + b.category +
                                  "' (expected activation, grad, workspace "
                                  "or io)");
    [[fallthrough]];
  case BufferKind::Input:
  case BufferKind::Output:
    b.offset = r.i64AtLeast("offset", 0);
    b.bytes = r.i64AtLeast("bytes", 0);
    if (b.kind != BufferKind::Local)
      b.role = r.str("role");
    break;
  case BufferKind::Alias:
    b.of = r.i64("of");
    break;
  case BufferKind::State: {
    std::string name = r.str("name");
    b.stateIndex = a.findState(name);
    if (b.stateIndex < 0)
      r.failField("name", "names no state tensor: '" + name + "'");
    break;
  }
  case BufferKind::Const:
    b.constIndex = r.i64("const");
    if (b.constIndex < 0 ||
        b.constIndex >= static_cast<int64_t>(a.constants.size()))
      r.failField("const", "is out of range [0, " +
                               std::to_string(a.constants.size()) +
                               "), found " + std::to_string(b.constIndex));
    break;
  }
  return b;
}

AttrValue parseAttr(const JsonReader &r, const std::string &name,
                    const Json &v) {
  if (v.is_boolean())
    return v.get<bool>();
  if (v.is_number_integer())
    return v.get<int64_t>();
  if (v.is_number_float())
    return v.get<double>();
  if (v.is_string())
    return v.get<std::string>();
  if (v.is_array() && !v.empty() && v[0].is_string()) {
    std::vector<std::string> strings;
    for (const Json &e : v) {
      if (!e.is_string())
        r.fail("attribute '" + name + "' must be a list of strings, found " +
               describe(v));
      strings.push_back(e.get<std::string>());
    }
    return strings;
  }
  if (v.is_array()) {
    std::vector<int64_t> ints;
    for (const Json &e : v) {
      if (!e.is_number_integer())
        r.fail("attribute '" + name + "' must be a list of integers, found " +
               describe(v));
      ints.push_back(e.get<int64_t>());
    }
    return ints;
  }
  r.fail("attribute '" + name + "' has an unsupported value " + describe(v));
}

std::vector<int64_t> parseIds(const JsonReader &r, std::string_view field) {
  std::vector<int64_t> ids;
  for (const Json &v : r.array(field)) {
    if (!v.is_number_integer())
      r.failField(field, "must list buffer ids, found " + describe(v));
    ids.push_back(v.get<int64_t>());
  }
  return ids;
}

Instruction parseInstruction(const JsonReader &r, const Artifact &a) {
  Instruction inst;
  inst.op = r.str("op");
  inst.args = parseIds(r, "args");
  inst.attrs.context = r.place();
  if (inst.op == "call") {
    std::string callee = r.str("callee");
    inst.callee = a.findFunction(callee);
    if (inst.callee < 0)
      r.failField("callee", "names no function: '" + callee + "'");
    inst.frameOffset = r.i64AtLeast("frame_offset", 0);
    return inst;
  }
  const OpSpec *sig = lookupOp(inst.op);
  if (!sig)
    r.failField("op", "names an unknown op '" + inst.op + "'");
  inst.results = parseIds(r, "results");
  // "2", "2 to 3", "1 or more".
  auto range = [](int lo, int hi) {
    return std::to_string(lo) + (hi == lo ? ""
                                 : hi < 0 ? " or more"
                                          : " to " + std::to_string(hi));
  };
  int numArgs = static_cast<int>(inst.args.size());
  if (numArgs < sig->minArgs || (sig->maxArgs >= 0 && numArgs > sig->maxArgs))
    r.failField("args", "has " + std::to_string(numArgs) + " ids; '" + inst.op +
                            "' takes " + range(sig->minArgs, sig->maxArgs));
  int numResults = static_cast<int>(inst.results.size());
  if (numResults < sig->minResults ||
      (sig->maxResults >= 0 && numResults > sig->maxResults))
    r.failField("results", "has " + std::to_string(numResults) + " ids; '" +
                               inst.op + "' has " +
                               (sig->maxResults < 0 && sig->minResults == 1
                                    ? std::string("one or more")
                                    : range(sig->minResults, sig->maxResults)) +
                               " results");
  if (r.has("attrs")) {
    for (const auto &[name, value] : r.object("attrs").items())
      inst.attrs.set(name, parseAttr(r, name, value));
  }
  for (const AttrSpec &attr : sig->attrs)
    if (attr.required && !inst.attrs.has(attr.name))
      r.fail("'" + inst.op + "' needs attribute '" + std::string(attr.name) +
             "'");
  return inst;
}

void parseFunction(const JsonReader &r, Artifact &a, Function &fn) {
  fn.frameBytes = r.i64AtLeast("frame_bytes", 0);
  fn.numArgs = r.i64AtLeast("num_args", 0);
  const Json &buffers = r.array("buffers");
  // Every argument has its own buffer of kind "arg".
  if (fn.numArgs > static_cast<int64_t>(buffers.size()))
    r.failField("num_args", "is " + std::to_string(fn.numArgs) +
                                ", but the function has only " +
                                std::to_string(buffers.size()) +
                                " buffers (each argument needs one)");
  fn.buffers.resize(buffers.size());
  std::vector<bool> seen(buffers.size(), false);
  for (size_t i = 0; i < buffers.size(); ++i) {
    JsonReader br =
        r.at(buffers[i], r.place() + ", buffers[" + std::to_string(i) + "]");
    int64_t id = br.i64("id");
    if (id < 0 || id >= static_cast<int64_t>(buffers.size()) || seen[id])
      br.failField("id",
                   (id >= 0 && id < int64_t(buffers.size())
                        ? "repeats buffer id "
                        : "must be a unique id in [0, " +
                              std::to_string(buffers.size()) + "), found ") +
                       std::to_string(id));
    seen[id] = true;
    fn.buffers[id] = parseBuffer(
        r.at(buffers[i], r.place() + ", buffer " + std::to_string(id)), a);
  }
  const Json &code = r.array("code");
  for (size_t i = 0; i < code.size(); ++i) {
    std::string place = r.place() + ", instruction " + std::to_string(i);
    if (code[i].is_object() && code[i].contains("op") &&
        code[i]["op"].is_string())
      place += " ('" + code[i]["op"].get<std::string>() + "')";
    fn.code.push_back(parseInstruction(r.at(code[i], place), a));
  }
}

Slot parseSlot(const JsonReader &r, const std::string &role, const Mesh &mesh) {
  Slot s;
  s.role = role;
  s.type = r.tensorType();
  parseSharding(r, mesh, s.type, s.sharding, s.globalShape);
  if (r.has("partial")) {
    for (const auto &[axis, kind] : r.object("partial").items()) {
      if (mesh.axisIndex(axis) < 0)
        r.failField("partial",
                    "names '" + axis + "', which is not an axis of the mesh");
      for (const auto &dim : s.sharding.dims)
        if (std::find(dim.begin(), dim.end(), axis) != dim.end())
          r.failField("partial",
                      "names axis '" + axis + "', which also splits a dim");
      if (!kind.is_string() || (kind.get<std::string>() != "sum" &&
                                kind.get<std::string>() != "max"))
        r.failField("partial", "maps '" + axis +
                                   "' to something other than \"sum\" or "
                                   "\"max\": " +
                                   describe(kind));
      s.partial.emplace_back(axis, kind.get<std::string>());
    }
    std::sort(s.partial.begin(), s.partial.end(),
              [&](const auto &x, const auto &y) {
                return mesh.axisIndex(x.first) < mesh.axisIndex(y.first);
              });
  }
  return s;
}

EntrySpec parseEntry(const JsonReader &r, const std::string &name,
                     const Artifact &a) {
  EntrySpec e;
  e.name = e.key = name;
  if (r.has("pp_stage")) {
    e.name = r.str("entry");
    e.ppStage = r.i64AtLeast("pp_stage", 0);
  }
  if (r.has("zigzag_chunks")) {
    if (a.version < 4)
      r.failField("zigzag_chunks", "needs format version 4, found version " +
                                       std::to_string(a.version));
    e.zigzagChunks = r.i64AtLeast("zigzag_chunks", 2);
    if (e.zigzagChunks % 2 != 0)
      r.failField("zigzag_chunks",
                  "must be even (two chunks per cp rank), found " +
                      std::to_string(e.zigzagChunks));
  }
  std::string fn = r.str("function");
  e.function = a.findFunction(fn);
  if (e.function < 0)
    r.failField("function", "names no function: '" + fn + "'");
  for (const char *field : {"inputs", "outputs"}) {
    std::vector<Slot> &slots = field[0] == 'i' ? e.inputs : e.outputs;
    for (const auto &[role, slot] : r.object(field).items())
      slots.push_back(
          parseSlot(r.at(slot, r.place() + ", " + field + " '" + role + "'"),
                    role, a.mesh));
  }
  return e;
}

void parseMemory(const JsonReader &r, Artifact &a) {
  MemoryPlan &m = a.memory;
  m.stateBytes = r.i64AtLeast("state_bytes", 0);
  m.constantBytes = r.i64AtLeast("constant_bytes", 0);
  m.transientBytes = r.i64AtLeast("transient_bytes", 0);
  m.peakBytes = r.i64AtLeast("peak_bytes", 0);
  if (r.has("stages")) {
    const Json &stages = r.array("stages");
    for (size_t i = 0; i < stages.size(); ++i) {
      JsonReader sr =
          r.at(stages[i], "memory, stages[" + std::to_string(i) + "]");
      StageMemory sm;
      sm.ppStage = sr.i64AtLeast("pp_stage", 0);
      sm.stateBytes = sr.i64AtLeast("state_bytes", 0);
      sm.transientBytes = sr.i64AtLeast("transient_bytes", 0);
      sm.peakBytes = sr.i64AtLeast("peak_bytes", 0);
      m.stages.push_back(sm);
    }
  }
  if (r.has("entries")) {
    for (const auto &[name, entry] : r.object("entries").items()) {
      JsonReader er = r.at(entry, "memory, entry '" + name + "'");
      if (!a.findEntry(name))
        er.fail("names no entry");
      const EntrySpec &spec = *a.findEntry(name);
      int64_t frame = er.i64("frame_bytes");
      if (frame != a.functions[spec.function].frameBytes)
        er.failField("frame_bytes",
                     "is " + std::to_string(frame) + ", but function '" +
                         a.functions[spec.function].name + "' has " +
                         std::to_string(a.functions[spec.function].frameBytes));
      if (er.has("breakdown_at_peak"))
        for (const auto &[cat, bytes] : er.object("breakdown_at_peak").items())
          m.breakdownAtPeak[name][cat] =
              er.at(er.object("breakdown_at_peak"), er.place())
                  .i64AtLeast(cat, 0);
    }
  }
  if (r.has("state_breakdown"))
    for (const auto &[kind, bytes] : r.object("state_breakdown").items())
      m.stateBreakdown[kind] =
          r.at(r.object("state_breakdown"), "memory, state_breakdown")
              .i64AtLeast(kind, 0);
}

void parseMesh(const JsonReader &r, Mesh &mesh) {
  const Json &axes = r.array("axes");
  const Json &sizes = r.array("sizes");
  if (axes.size() != sizes.size())
    r.fail("'axes' lists " + std::to_string(axes.size()) +
           " names but 'sizes' " + std::to_string(sizes.size()) + " sizes");
  int64_t devices = 1;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (!axes[i].is_string() || axes[i].get<std::string>().empty())
      r.failField("axes",
                  "must list non-empty names, found " + describe(axes[i]));
    std::string name = axes[i].get<std::string>();
    if (mesh.axisIndex(name) >= 0)
      r.failField("axes", "names axis '" + name + "' twice");
    if (!sizes[i].is_number_integer() || sizes[i].get<int64_t>() < 1 ||
        sizes[i].get<int64_t>() > (int64_t(1) << 24))
      r.failField("sizes",
                  "must list sizes in [1, 2^24], found " + describe(sizes[i]));
    devices *= sizes[i].get<int64_t>();
    if (devices > (int64_t(1) << 24))
      r.failField("sizes", "give more than 2^24 devices");
    mesh.axes.push_back(name);
    mesh.sizes.push_back(sizes[i].get<int64_t>());
  }
}

void parseModel(const JsonReader &r, ModelInfo &model) {
  if (r.has("name"))
    model.name = r.str("name");
  // Token ids are i32: a vocabulary beyond it cannot be fed or sampled.
  auto atMost = [&](std::string_view field, int64_t value, int64_t max,
                    const char *why) {
    if (value > max)
      r.failField(field, "is " + std::to_string(value) + ", more than " +
                             std::to_string(max) + " (" + why + ")");
    return value;
  };
  constexpr int64_t kMaxI32 = INT32_MAX;
  model.vocabSize = atMost("vocab_size", r.i64AtLeast("vocab_size", 1), kMaxI32,
                           "token ids are i32");
  model.paddedVocabSize = atMost(
      "padded_vocab_size", r.i64AtLeast("padded_vocab_size", model.vocabSize),
      kMaxI32, "token ids are i32");
  // Batches are allocated on the host before any kernel runs.
  model.batch = r.i64AtLeast("batch", 1);
  model.seq = r.i64AtLeast("seq", 1);
  if (model.batch > kMaxI32 / model.seq)
    r.failField("batch", "times 'seq' is " + std::to_string(model.batch) +
                             " x " + std::to_string(model.seq) +
                             ", more than " + std::to_string(kMaxI32) +
                             " tokens per step");
}

} // namespace

std::string artifactChecksum(std::string_view json, size_t valueOffset) {
  constexpr std::string_view kPrefix = "xxh3-64:";
  std::string text(json);
  size_t digits = valueOffset + kPrefix.size();
  if (digits + 16 <= text.size())
    std::fill(text.begin() + digits, text.begin() + digits + 16, '0');
  char hex[17];
  std::snprintf(
      hex, sizeof(hex), "%016llx",
      static_cast<unsigned long long>(XXH3_64bits(text.data(), text.size())));
  return std::string(kPrefix) + hex;
}

namespace {

/// Checks the top-level `checksum` (version 5 on; docs/artifact-format.md,
/// "Checksum") against the text it was read from.
void verifyChecksum(const JsonReader &top, std::string_view text,
                    const detail::JsonScan &scan) {
  std::string given = top.str("checksum");
  bool wellFormed =
      given.size() == 24 && given.rfind("xxh3-64:", 0) == 0 &&
      given.find_first_not_of("0123456789abcdef", 8) == std::string::npos;
  if (!wellFormed || scan.checksumValue < 0)
    top.failField("checksum",
                  "must be \"xxh3-64:\" and 16 lowercase hex digits, found \"" +
                      given + "\"");
  std::string actual =
      artifactChecksum(text, static_cast<size_t>(scan.checksumValue));
  if (given != actual)
    top.failField("checksum",
                  "is " + given + ", but the content hashes to " + actual +
                      ": the file was corrupted or edited after rt-export "
                      "wrote it (export it again with shard-opt)");
}

/// The fields a version introduced: an artifact of an earlier version that
/// has one is mislabelled (a reader of that version would ignore it).
void checkVersionFields(const JsonReader &top, const Json &doc,
                        int64_t version) {
  auto needs = [&](const JsonReader &r, std::string_view field, int64_t since) {
    if (r.has(field) && version < since)
      r.failField(field, "needs format version " + std::to_string(since) +
                             " or later, but the artifact says version " +
                             std::to_string(version));
  };
  needs(top, "checksum", kChecksumArtifactVersion);
  bool staged = false, zigzag = false;
  if (doc.contains("entries") && doc["entries"].is_object())
    for (const auto &[key, entry] : doc["entries"].items()) {
      JsonReader er = top.at(entry, "entry '" + key + "'");
      needs(er, "pp_stage", 3);
      needs(er, "entry", 3);
      staged = staged || er.has("pp_stage");
      zigzag = zigzag || er.has("zigzag_chunks");
    }
  if (doc.contains("memory"))
    needs(top.at(doc["memory"], "memory"), "stages", 3);
  // The fields that made rt-export choose versions 3 and 4.
  if (version == 3 && !staged)
    top.failField("version",
                  "is 3 (a pipelined program), but no entry has a "
                  "'pp_stage' (version 3 is written for pipeline stages "
                  "only: a program without them is version 2)");
  if (version == 4 && !zigzag)
    top.failField("version",
                  "is 4 (sequences in zig-zag order), but no entry has "
                  "'zigzag_chunks' (a program without them is version 2 or "
                  "3)");
}

} // namespace

namespace {
Artifact parseArtifactText(std::string_view text, const std::string &source);
} // namespace

Artifact parseArtifact(std::string_view text, const std::string &source) {
  try {
    return parseArtifactText(text, source);
  } catch (const Json::exception &e) {
    // A number the parser cannot hold (1e999), a value of another type
    // than a reader expected: a bad artifact, never an abort.
    throw ArtifactError("artifact '" + source + "': " + e.what());
  }
}

namespace {
Artifact parseArtifactText(std::string_view text, const std::string &source) {
  if (static_cast<int64_t>(text.size()) > kMaxArtifactBytes)
    throw ArtifactError("artifact '" + source + "' has " +
                        std::to_string(text.size()) + " bytes, more than the " +
                        std::to_string(kMaxArtifactBytes) +
                        " an artifact may have (it holds no weights)");
  detail::JsonScan scan = detail::scanJson(text, source);
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::parse_error &e) {
    throw ArtifactError("artifact '" + source +
                        "': malformed JSON: " + e.what());
  }
  JsonReader top(doc, source, "top level");
  std::string format = top.str("format");
  if (format != "autoshard-artifact")
    top.failField("format",
                  "must be \"autoshard-artifact\", found \"" + format + "\"");
  Artifact a;
  a.source = source;
  a.version = top.i64("version");
  if (a.version < kMinArtifactVersion || a.version > kArtifactVersion)
    top.failField("version", "is " + std::to_string(a.version) +
                                 ", but this runtime reads versions " +
                                 std::to_string(kMinArtifactVersion) + " to " +
                                 std::to_string(kArtifactVersion));
  checkVersionFields(top, doc, a.version);
  // First, so that a corrupted file says so rather than what broke.
  if (a.version >= kChecksumArtifactVersion)
    verifyChecksum(top, text, scan);
  if (top.has("producer"))
    a.producer = top.str("producer");
  parseModel(top.at(top.object("model"), "model"), a.model);
  a.modelJson = top.object("model").dump();
  a.worldSize = top.i64AtLeast("world_size", 1);
  if (a.version == 1 && a.worldSize != 1)
    top.failField("world_size",
                  "is " + std::to_string(a.worldSize) +
                      ", but a version-1 artifact is a single-device program "
                      "(world_size 1, no mesh axes; a sharded program is "
                      "version 2 or later)");
  if (a.version >= 2 || top.has("mesh"))
    parseMesh(top.at(top.object("mesh"), "mesh"), a.mesh);
  if (a.mesh.numDevices() != a.worldSize)
    top.failField("world_size",
                  "is " + std::to_string(a.worldSize) + ", but the mesh has " +
                      std::to_string(a.mesh.numDevices()) + " devices");
  if (top.has("plan"))
    a.planJson = top.object("plan").dump();

  const Json &state = top.array("state");
  for (size_t i = 0; i < state.size(); ++i) {
    std::string place = "state[" + std::to_string(i) + "]";
    a.state.push_back(parseState(top.at(state[i], place), a.mesh));
    if (a.findState(a.state.back().name) != static_cast<int64_t>(i))
      top.at(state[i], place)
          .failField("name",
                     "repeats state name '" + a.state.back().name + "'");
  }

  const Json &constants = top.array("constants");
  a.constants.resize(constants.size());
  std::vector<bool> seen(constants.size(), false);
  for (size_t i = 0; i < constants.size(); ++i) {
    JsonReader cr =
        top.at(constants[i], "constants[" + std::to_string(i) + "]");
    int64_t id = cr.i64("id");
    if (id < 0 || id >= static_cast<int64_t>(constants.size()) || seen[id])
      cr.failField("id", "must be a unique id in [0, " +
                             std::to_string(constants.size()) + "), found " +
                             std::to_string(id));
    seen[id] = true;
    a.constants[id] = parseConstant(cr);
  }

  // Names first, so calls can refer to functions defined later.
  const Json &functions = top.array("functions");
  a.functions.resize(functions.size());
  for (size_t i = 0; i < functions.size(); ++i) {
    JsonReader fr =
        top.at(functions[i], "functions[" + std::to_string(i) + "]");
    a.functions[i].name = fr.str("name");
    if (a.findFunction(a.functions[i].name) != static_cast<int64_t>(i))
      fr.failField("name",
                   "repeats function name '" + a.functions[i].name + "'");
  }
  for (size_t i = 0; i < functions.size(); ++i)
    parseFunction(
        top.at(functions[i], "function '" + a.functions[i].name + "'"), a,
        a.functions[i]);

  for (const auto &[name, entry] : top.object("entries").items())
    a.entries.push_back(
        parseEntry(top.at(entry, "entry '" + name + "'"), name, a));
  parseMemory(top.at(top.object("memory"), "memory"), a);

  detail::verifyArtifact(a);
  return a;
}

} // namespace

Artifact loadArtifact(const std::string &path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ArtifactError("artifact '" + path +
                        "' is a directory (pass its model.json)");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ArtifactError("cannot open artifact '" + path +
                        "': " + std::strerror(errno));
  // Bound the read before it allocates (a device or a huge file).
  auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > static_cast<uintmax_t>(kMaxArtifactBytes))
    throw ArtifactError("artifact '" + path + "' has " + std::to_string(size) +
                        " bytes, more than the " +
                        std::to_string(kMaxArtifactBytes) +
                        " an artifact may have (it holds no weights)");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    throw ArtifactError("error reading artifact '" + path + "'");
  return parseArtifact(text.str(), path);
}

} // namespace autoshard::runtime
