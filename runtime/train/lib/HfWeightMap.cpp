//===- HfWeightMap.cpp - The artifact's Hugging Face weight map -----------===//
//
// Parses `model.hf` (docs/hf-checkpoints.md) and checks it against the
// artifact's state, so that import and export may trust every box.
//
//===----------------------------------------------------------------------===//

#include "HfCommon.h"

#include <algorithm>
#include <map>
#include <set>

namespace autoshard::runtime {

using namespace checkpoint;

size_t HfPart::paramDim(size_t d) const {
  size_t k = hfShape.size();
  if (transpose && k >= 2 && d + 2 >= k)
    d = d == k - 1 ? k - 2 : k - 1;
  return static_cast<size_t>(squeeze) + d;
}

std::vector<int64_t> HfPart::paramShape() const {
  std::vector<int64_t> shape(static_cast<size_t>(squeeze) + hfShape.size(), 1);
  for (size_t d = 0; d < hfShape.size(); ++d)
    shape[paramDim(d)] = hfShape[d];
  return shape;
}

namespace hf {

const std::vector<int64_t> &logicalShape(const StateSpec &s) {
  return s.logicalShape.empty() ? s.globalShape : s.logicalShape;
}

Box paramBox(const HfPart &p) { return Box{p.paramBegin, p.paramShape()}; }

Box hfBox(const HfPart &p) { return Box{p.hfBegin, p.hfShape}; }

std::string boxStr(const Box &b) {
  std::string s = "[";
  for (size_t d = 0; d < b.shape.size(); ++d)
    s += (d ? ", " : "") + std::to_string(b.offset[d]) + ":" +
         std::to_string(b.offset[d] + b.shape[d]);
  return s + "]";
}

} // namespace hf

namespace {

using hf::boxStr;

/// Checked access to the JSON of `model.hf`: every failure names the
/// artifact and the place.
struct Reader {
  const Artifact &a;
  [[noreturn]] void fail(const std::string &where,
                         const std::string &what) const {
    throw ArtifactError("artifact '" + a.source + "': model.hf" +
                        (where.empty() ? "" : ": " + where) + ": " + what);
  }
  const Json &field(const Json &obj, const std::string &key,
                    const std::string &where) const {
    if (!obj.is_object() || !obj.contains(key))
      fail(where, "field '" + key + "' is missing");
    return obj[key];
  }
  std::string str(const Json &obj, const std::string &key,
                  const std::string &where) const {
    const Json &v = field(obj, key, where);
    if (!v.is_string())
      fail(where, "field '" + key + "' must be a string, found " + v.dump());
    return v.get<std::string>();
  }
  std::vector<std::string> strings(const Json &obj, const std::string &key,
                                   const std::string &where) const {
    std::vector<std::string> out;
    if (!obj.contains(key))
      return out;
    const Json &v = obj[key];
    if (!v.is_array())
      fail(where,
           "field '" + key + "' must be a list of strings, found " + v.dump());
    for (const Json &e : v) {
      if (!e.is_string())
        fail(where, "field '" + key + "' must be a list of strings, found " +
                        v.dump());
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  std::vector<int64_t> ints(const Json &obj, const std::string &key,
                            const std::string &where) const {
    const Json &v = field(obj, key, where);
    std::vector<int64_t> out;
    if (!v.is_array())
      fail(where,
           "field '" + key + "' must be a list of integers, found " + v.dump());
    for (const Json &e : v) {
      if (!e.is_number_integer() || e.get<int64_t>() < 0)
        fail(where,
             "field '" + key + "' must list integers >= 0, found " + v.dump());
      out.push_back(e.get<int64_t>());
    }
    return out;
  }
  /// A JSON object given as JSON text (the builder's form) or as an object.
  Json object(const Json &obj, const std::string &key, const std::string &where,
              bool required) const {
    if (!obj.contains(key)) {
      if (required)
        fail(where, "field '" + key + "' is missing");
      return Json::object();
    }
    const Json &v = obj[key];
    Json parsed =
        v.is_string() ? Json::parse(v.get<std::string>(), nullptr, false) : v;
    if (parsed.is_discarded() || !parsed.is_object())
      fail(where, "field '" + key +
                      "' must be a JSON object (or its text), found " +
                      v.dump());
    return parsed;
  }
};

HfPart parsePart(const Reader &r, const Json &j, const HfTensor &t,
                 const std::string &where) {
  HfPart p;
  p.param = r.str(j, "param", where);
  p.hfBegin = r.ints(j, "hf_begin", where);
  p.hfShape = r.ints(j, "hf_shape", where);
  size_t k = t.shape.size();
  if (p.hfBegin.size() != k || p.hfShape.size() != k)
    r.fail(where, "hf_begin and hf_shape must have the tensor's rank " +
                      std::to_string(k) + ", found " + shapeStr(p.hfBegin) +
                      " and " + shapeStr(p.hfShape));
  Box box = hf::hfBox(p);
  if (!contains(Box{std::vector<int64_t>(k, 0), t.shape}, box))
    r.fail(where, "the box " + boxStr(box) +
                      " lies outside the tensor's shape " + shapeStr(t.shape));
  if (j.contains("squeeze")) {
    const Json &v = j["squeeze"];
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      r.fail(where,
             "field 'squeeze' must be an integer >= 0, found " + v.dump());
    p.squeeze = v.get<int64_t>();
  }
  if (j.contains("transpose")) {
    const Json &v = j["transpose"];
    if (v.is_boolean())
      p.transpose = v.get<bool>();
    else if (v.is_number_integer() &&
             (v.get<int64_t>() == 0 || v.get<int64_t>() == 1))
      p.transpose = v.get<int64_t>() == 1;
    else
      r.fail(where,
             "field 'transpose' must be true or false, found " + v.dump());
  }
  if (p.transpose && k < 2)
    r.fail(where, "transposes a tensor of rank " + std::to_string(k) +
                      " (needs at least 2 dims)");
  if (p.param.empty()) { // zeros
    p.squeeze = 0;
    p.paramBegin.clear();
    return p;
  }
  p.stateIndex = r.a.findState(p.param);
  if (p.stateIndex < 0)
    r.fail(where, "names parameter '" + p.param +
                      "', which the artifact's state does not have");
  const StateSpec &s = r.a.state[p.stateIndex];
  if (s.kind != StateKind::Param)
    r.fail(where, "names '" + p.param + "', which is an optimizer state " +
                      "(of '" + s.of + "'), not a parameter");
  p.paramBegin = r.ints(j, "param_begin", where);
  const std::vector<int64_t> &logical = hf::logicalShape(s);
  std::vector<int64_t> shape = p.paramShape();
  if (p.paramBegin.size() != shape.size() || logical.size() != shape.size())
    r.fail(where, "maps onto a box of rank " + std::to_string(shape.size()) +
                      " (squeeze " + std::to_string(p.squeeze) + " + rank " +
                      std::to_string(k) + ") with param_begin " +
                      shapeStr(p.paramBegin) + ", but parameter '" + p.param +
                      "' has logical shape " + shapeStr(logical));
  Box pbox = hf::paramBox(p);
  if (!contains(Box{std::vector<int64_t>(logical.size(), 0), logical}, pbox))
    r.fail(where, "the parameter box " + boxStr(pbox) +
                      " lies outside the logical shape " + shapeStr(logical) +
                      " of '" + p.param + "'");
  return p;
}

/// Throws when two of `boxes` (each with its description) share an element.
void checkDisjoint(const Reader &r,
                   const std::vector<std::pair<Box, std::string>> &boxes,
                   const std::string &what) {
  for (size_t i = 0; i < boxes.size(); ++i)
    for (size_t j = i + 1; j < boxes.size(); ++j)
      if (overlaps(boxes[i].first, boxes[j].first))
        r.fail(what, boxes[i].second + " and " + boxes[j].second +
                         " overlap (" + boxStr(boxes[i].first) + " and " +
                         boxStr(boxes[j].first) + ")");
}

} // namespace

HfWeightMap parseHfWeightMap(const Artifact &a) {
  Json model = Json::parse(a.modelJson, nullptr, false);
  if (model.is_object() && model.contains("hf_incompatible")) {
    const Json &why = model["hf_incompatible"];
    throw ArtifactError(
        "artifact '" + a.source +
        "' has no Hugging Face form, so it cannot be read from or written as "
        "a Hugging Face checkpoint: " +
        (why.is_string() ? why.get<std::string>() : why.dump()));
  }
  if (!model.is_object() || !model.contains("hf"))
    throw ArtifactError("artifact '" + a.source +
                        "' was built without a Hugging Face weight map "
                        "(model.hf): rebuild it with the current "
                        "autoshard.models (python3 -m autoshard.models "
                        "config.json ...) and shard-opt");
  const Json &j = model["hf"];
  Reader r{a};
  if (!j.is_object())
    r.fail("", "must be an object, found " + j.dump());
  HfWeightMap m;
  m.architecture = r.str(j, "architecture", "");
  m.config = r.object(j, "config", "", true);
  m.defaults = r.object(j, "defaults", "", false);
  m.check = r.strings(j, "check", "");
  for (const std::string &key : m.check)
    if (!m.config.contains(key))
      r.fail("", "'check' names '" + key + "', which 'config' does not have");
  if (j.contains("prefix"))
    m.prefix = r.str(j, "prefix", "");
  m.ignore = r.strings(j, "ignore", "");
  m.tied = r.strings(j, "tied", "");
  const Json &tensors = r.field(j, "tensors", "");
  if (!tensors.is_array() || tensors.empty())
    r.fail("", "field 'tensors' must be a non-empty list");

  std::set<std::string> names;
  // Per parameter: its parts' boxes, for the coverage check.
  std::map<int64_t, std::vector<std::pair<Box, std::string>>> byParam;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Json &tj = tensors[i];
    std::string where = "tensors[" + std::to_string(i) + "]";
    HfTensor t;
    t.name = r.str(tj, "name", where);
    where = "tensor '" + t.name + "'";
    if (t.name.empty() || !names.insert(t.name).second)
      r.fail(where, t.name.empty() ? "has an empty name" : "is listed twice");
    t.shape = r.ints(tj, "shape", where);
    const Json &parts = r.field(tj, "parts", where);
    if (!parts.is_array() || parts.empty())
      r.fail(where, "field 'parts' must be a non-empty list");
    std::vector<std::pair<Box, std::string>> boxes;
    int64_t covered = 0;
    bool typed = false;
    for (size_t k = 0; k < parts.size(); ++k) {
      const Json &pj = parts[k];
      std::string pwhere = where + " part " + std::to_string(k);
      if (pj.is_object() && pj.contains("param") && pj["param"].is_string())
        pwhere += " (parameter '" + pj["param"].get<std::string>() + "')";
      HfPart p = parsePart(r, pj, t, pwhere);
      std::string label =
          "part " + std::to_string(k) +
          (p.param.empty() ? " (zeros)" : " ('" + p.param + "')");
      boxes.push_back({hf::hfBox(p), label});
      covered += product(p.hfShape);
      if (p.stateIndex >= 0) {
        DType d = a.state[p.stateIndex].type.dtype;
        if (typed && d != t.dtype)
          r.fail(where, "mixes parameters of dtypes " +
                            std::string(dtypeName(t.dtype)) + " and " +
                            std::string(dtypeName(d)) + " ('" + p.param + "')");
        t.dtype = d;
        typed = true;
        byParam[p.stateIndex].push_back(
            {hf::paramBox(p), "tensor '" + t.name + "' " + label});
      }
      t.parts.push_back(std::move(p));
    }
    checkDisjoint(r, boxes, where);
    if (covered != product(t.shape))
      r.fail(where, "its parts cover " + std::to_string(covered) +
                        " elements, but its shape " + shapeStr(t.shape) +
                        " has " + std::to_string(product(t.shape)));
    m.tensors.push_back(std::move(t));
  }
  // A zeros-only tensor takes the map's dtype (its first parameter's).
  auto named = [](const HfTensor &t) {
    return std::any_of(t.parts.begin(), t.parts.end(),
                       [](const HfPart &p) { return p.stateIndex >= 0; });
  };
  auto first = std::find_if(m.tensors.begin(), m.tensors.end(), named);
  for (HfTensor &t : m.tensors)
    if (!named(t) && first != m.tensors.end())
      t.dtype = first->dtype;

  for (size_t i = 0; i < a.state.size(); ++i) {
    const StateSpec &s = a.state[i];
    if (s.kind != StateKind::Param)
      continue;
    auto it = byParam.find(static_cast<int64_t>(i));
    if (it == byParam.end())
      r.fail("", "no tensor is made of parameter '" + s.name +
                     "' (an export would lose it)");
    checkDisjoint(r, it->second, "parameter '" + s.name + "'");
    int64_t covered = 0;
    for (const auto &[box, label] : it->second)
      covered += product(box.shape);
    const std::vector<int64_t> &logical = hf::logicalShape(s);
    if (covered != product(logical))
      r.fail("parameter '" + s.name + "'",
             "the parts naming it cover " + std::to_string(covered) +
                 " elements, but its logical shape " + shapeStr(logical) +
                 " has " + std::to_string(product(logical)));
  }
  return m;
}

} // namespace autoshard::runtime
