//===- HfTestUtil.h - Hand-made artifacts and HF dirs for tests -*- C++ -*-===//
//
// A state-only artifact (parameters, optimizer moments, a mesh, pipeline
// stages; one empty entry per stage) with a Hugging Face weight map, the
// deterministic global values the tests give its parameters, and writers
// and readers of Hugging Face directories. Shared by HfCheckpointTest.cpp
// and the MPI test runtime/test/mpi/HfCheckpointMpiTest.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_TRAIN_TEST_HFTESTUTIL_H
#define AUTOSHARD_RUNTIME_TRAIN_TEST_HFTESTUTIL_H

#include "autoshard/runtime/Artifact.h"
#include "autoshard/runtime/Executor.h"
#include "autoshard/runtime/train/Safetensors.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace autoshard::runtime::hftest {

using Json = nlohmann::ordered_json;

/// One state tensor of the test artifact.
struct StateDef {
  StateDef(std::string name, std::vector<int64_t> global,
           std::vector<int64_t> logical = {},
           std::vector<std::vector<std::string>> sharding = {},
           std::vector<int64_t> stages = {}, std::string kind = "param",
           std::string of = "")
      : name(std::move(name)), global(std::move(global)),
        logical(std::move(logical)), sharding(std::move(sharding)),
        stages(std::move(stages)), kind(std::move(kind)), of(std::move(of)) {}
  std::string name;
  std::vector<int64_t> global;
  std::vector<int64_t> logical;                   ///< Empty: the global shape.
  std::vector<std::vector<std::string>> sharding; ///< Empty: replicated.
  std::vector<int64_t> stages;                    ///< Empty: every stage.
  std::string kind = "param";
  std::string of;
  std::string dtype = "f32";
};

inline int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// The part JSON of the weight map.
inline Json part(const std::string &param, std::vector<int64_t> hfBegin,
                 std::vector<int64_t> hfShape, std::vector<int64_t> paramBegin,
                 int64_t squeeze = 0, bool transpose = false) {
  return Json{{"param", param},      {"hf_begin", hfBegin},
              {"hf_shape", hfShape}, {"param_begin", paramBegin},
              {"squeeze", squeeze},  {"transpose", transpose}};
}

/// The test model's state: an embedding with vocabulary padding, three
/// projections concatenated into one tensor, a transposed one, a [E, H, F]
/// expert parameter split into E tensors (squeezed and transposed), a
/// transposed head with padding, a norm and a scalar. `tp` > 1 shards the
/// big ones over a "tp" axis; `pp` > 1 puts the embedding on stage 0 and
/// the head on the last stage.
inline std::vector<StateDef> testState(int64_t tp = 1, int64_t pp = 1) {
  std::vector<std::vector<std::string>> col = {{}, {}}, row = {{}, {}},
                                        mid = {{}, {}, {}};
  if (tp > 1) {
    col = {{}, {"tp"}};
    row = {{"tp"}, {}};
    mid = {{}, {}, {"tp"}};
  }
  std::vector<int64_t> first, last;
  if (pp > 1) {
    first = {0};
    last = {pp - 1};
  }
  std::vector<StateDef> s = {
      {"wte", {6, 4}, {5, 4}, row, first},
      {"attn.wq", {4, 2}, {}, col},
      {"attn.wk", {4, 2}, {}, col},
      {"attn.wv", {4, 2}, {}, col},
      {"attn.wo", {2, 4}, {}, row},
      {"moe.w_gate", {2, 4, 6}, {}, mid},
      {"norm.weight", {4}, {}, {}},
      {"scale", {}, {}, {}},
      {"lm_head", {4, 6}, {4, 5}, col, last},
  };
  s.push_back({"wte.exp_avg", {6, 4}, {}, row, first, "opt_m", "wte"});
  return s;
}

/// The weight map of testState().
inline Json testMap() {
  Json tensors = Json::array({
      {{"name", "m.embed.weight"},
       {"shape", {5, 4}},
       {"parts", {part("wte", {0, 0}, {5, 4}, {0, 0})}}},
      {{"name", "m.attn.c_attn.weight"},
       {"shape", {4, 6}},
       {"parts",
        {part("attn.wq", {0, 0}, {4, 2}, {0, 0}),
         part("attn.wk", {0, 2}, {4, 2}, {0, 0}),
         part("attn.wv", {0, 4}, {4, 2}, {0, 0})}}},
      {{"name", "m.attn.c_attn.bias"},
       {"shape", {6}},
       {"parts", {part("", {0}, {6}, {})}}},
      {{"name", "m.experts.0.w1.weight"},
       {"shape", {6, 4}},
       {"parts", {part("moe.w_gate", {0, 0}, {6, 4}, {0, 0, 0}, 1, true)}}},
      {{"name", "m.attn.o_proj.weight"},
       {"shape", {4, 2}},
       {"parts", {part("attn.wo", {0, 0}, {4, 2}, {0, 0}, 0, true)}}},
      {{"name", "m.experts.1.w1.weight"},
       {"shape", {6, 4}},
       {"parts", {part("moe.w_gate", {0, 0}, {6, 4}, {1, 0, 0}, 1, true)}}},
      {{"name", "m.norm.weight"},
       {"shape", {4}},
       {"parts", {part("norm.weight", {0}, {4}, {0})}}},
      {{"name", "m.scale"},
       {"shape", Json::array()},
       {"parts", {part("scale", {}, {}, {})}}},
      {{"name", "lm_head.weight"},
       {"shape", {5, 4}},
       {"parts", {part("lm_head", {0, 0}, {5, 4}, {0, 0}, 0, true)}}},
  });
  return Json{
      {"architecture", "TestForCausalLM"},
      {"config", Json{{"model_type", "test"},
                      {"vocab_size", 5},
                      {"hidden_size", 4},
                      {"rms_norm_eps", 1e-5},
                      {"tie_word_embeddings", false}}
                     .dump()},
      {"check",
       {"vocab_size", "hidden_size", "rms_norm_eps", "tie_word_embeddings"}},
      {"defaults",
       Json{{"rms_norm_eps", 1e-6}, {"tie_word_embeddings", false}}.dump()},
      {"prefix", "m."},
      {"ignore", {".rotary_emb.inv_freq"}},
      {"tied", {"m.lm_head_copy.weight"}},
      {"tensors", tensors}};
}

/// A state-only artifact of `state` on the mesh `axes` x `sizes` (with a
/// "pp" axis: one empty entry per stage), `model.hf` = `hf` (null: none).
inline Json makeArtifact(const std::vector<StateDef> &state, const Json &hf,
                         std::vector<std::string> axes = {},
                         std::vector<int64_t> sizes = {}) {
  int64_t world = 1, pp = 0;
  std::map<std::string, int64_t> size;
  for (size_t i = 0; i < axes.size(); ++i) {
    world *= sizes[i];
    size[axes[i]] = sizes[i];
    if (axes[i] == "pp")
      pp = sizes[i];
  }
  Json states = Json::array();
  int64_t total = 0;
  std::vector<int64_t> held(std::max<int64_t>(pp, 1), 0);
  for (const StateDef &s : state) {
    std::vector<int64_t> local = s.global;
    for (size_t d = 0; d < s.sharding.size(); ++d)
      for (const std::string &ax : s.sharding[d])
        local[d] /= size.at(ax);
    int64_t bytes = numel(local) * (s.dtype == "f32" ? 4 : 2);
    total += bytes;
    for (int64_t st = 0; st < std::max<int64_t>(pp, 1); ++st)
      if (s.stages.empty() ||
          std::find(s.stages.begin(), s.stages.end(), st) != s.stages.end())
        held[st] += bytes;
    Json init = s.kind == "param" ? Json{{"kind", "normal"}, {"std", 0.02}}
                                  : Json{{"kind", "zeros"}};
    if (!s.logical.empty())
      init["logical_shape"] = s.logical;
    Json j = {{"name", s.name}, {"kind", s.kind},           {"dtype", s.dtype},
              {"shape", local}, {"global_shape", s.global}, {"init", init}};
    if (!s.of.empty())
      j["of"] = s.of;
    if (!s.sharding.empty())
      j["sharding"] = s.sharding;
    if (!s.stages.empty())
      j["stages"] = s.stages;
    states.push_back(j);
  }
  Json model = {{"name", "hf-test"},
                {"vocab_size", 5},
                {"padded_vocab_size", 6},
                {"batch", 1},
                {"seq", 4}};
  if (!hf.is_null())
    model["hf"] = hf;
  Json memory = {{"state_bytes", total},
                 {"constant_bytes", 0},
                 {"transient_bytes", 0},
                 {"peak_bytes", total}};
  Json functions = Json::array(), entries = Json::object();
  if (pp > 0) {
    Json stages = Json::array();
    for (int64_t st = 0; st < pp; ++st) {
      std::string f = "noop_pp" + std::to_string(st);
      functions.push_back({{"name", f},
                           {"frame_bytes", 0},
                           {"num_args", 0},
                           {"buffers", Json::array()},
                           {"code", Json::array()}});
      entries["noop@pp" + std::to_string(st)] = {{"entry", "noop"},
                                                 {"pp_stage", st},
                                                 {"function", f},
                                                 {"inputs", Json::object()},
                                                 {"outputs", Json::object()}};
      stages.push_back({{"pp_stage", st},
                        {"state_bytes", held[st]},
                        {"transient_bytes", 0},
                        {"peak_bytes", held[st]}});
    }
    memory["stages"] = stages;
  }
  return Json{{"format", "autoshard-artifact"},
              {"version", pp > 0 ? 3 : 2}, // 3: pipeline stages
              {"model", model},
              {"world_size", world},
              {"mesh", {{"axes", axes}, {"sizes", sizes}}},
              {"state", states},
              {"constants", Json::array()},
              {"functions", functions},
              {"entries", entries},
              {"memory", memory}};
}

inline Artifact parse(const Json &doc, const std::string &name = "test.json") {
  return parseArtifact(doc.dump(), name);
}

/// The value the tests give element `i` (row-major, global) of parameter
/// number `k`: exact in bf16 and f16 (8 significant bits), non-zero.
inline float valueOf(size_t k, int64_t i) {
  return static_cast<float>(k + 1) +
         0.125f * static_cast<float>(i % 7 + 1) * (i % 2 ? -1.0f : 1.0f);
}

/// The global values of parameter `s` (number `k`): valueOf inside its
/// logical shape, 0 in the padding.
inline std::vector<float> globalValues(const StateSpec &s, size_t k) {
  const std::vector<int64_t> &logical =
      s.logicalShape.empty() ? s.globalShape : s.logicalShape;
  int64_t n = numel(s.globalShape);
  std::vector<float> v(n, 0.0f);
  size_t rank = s.globalShape.size();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i;
    bool inside = true;
    for (size_t d = rank; d-- > 0;) {
      inside = inside && rest % s.globalShape[d] < logical[d];
      rest /= s.globalShape[d];
    }
    if (inside)
      v[i] = valueOf(k, i);
  }
  return v;
}

/// The block `rank` holds of the global row-major `values` of `s`.
inline std::vector<float> blockValues(const Artifact &a, const StateSpec &s,
                                      int64_t rank,
                                      const std::vector<float> &values) {
  std::vector<int64_t> off =
      a.mesh.blockIndex(s.sharding, rank, s.type.shape.size());
  size_t r = s.type.shape.size();
  for (size_t d = 0; d < r; ++d)
    off[d] *= s.type.shape[d];
  std::vector<float> out(numel(s.type.shape));
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
    int64_t rest = i, g = 0, stride = 1;
    for (size_t d = r; d-- > 0;) {
      g += (off[d] + rest % s.type.shape[d]) * stride;
      rest /= s.type.shape[d];
      stride *= s.globalShape[d];
    }
    out[i] = values[g];
  }
  return out;
}

/// Sets every parameter this executor holds to its test values.
inline void setTestValues(Executor &ex) {
  const Artifact &a = ex.artifact();
  for (size_t k = 0; k < a.state.size(); ++k) {
    const StateSpec &s = a.state[k];
    if (s.kind != StateKind::Param || !ex.holdsState(s.name))
      continue;
    std::vector<float> b = blockValues(a, s, ex.rank(), globalValues(s, k));
    ex.writeState(s.name, b.data());
  }
}

inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A tensor of a Hugging Face file.
struct HfData {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::string bytes;
};

/// Every tensor of safetensors file `path`, in file order.
inline std::vector<HfData> readTensors(const std::string &path) {
  SafetensorsHeader h = readSafetensorsHeader(path);
  std::string all = readFile(path);
  std::vector<HfData> out;
  for (const auto &[name, t] : h.tensors)
    out.push_back({name, t.dtype, t.shape,
                   all.substr(h.dataStart + t.begin, t.end - t.begin)});
  std::sort(out.begin(), out.end(), [&](const HfData &x, const HfData &y) {
    return h.tensors.at(x.name).begin < h.tensors.at(y.name).begin;
  });
  return out;
}

/// Writes `tensors` as safetensors file `path` (metadata format: pt).
inline void writeTensors(const std::string &path,
                         const std::vector<HfData> &tensors) {
  std::vector<SafetensorsTensor> meta;
  for (const HfData &t : tensors)
    meta.push_back({t.name, t.dtype, t.shape, 0, 0});
  SafetensorsLayout l = layoutSafetensors(meta, {{"format", "pt"}});
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << l.header;
  for (const HfData &t : tensors)
    out << t.bytes;
}

inline void writeText(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

/// The f32 values of an F32 tensor.
inline std::vector<float> floats(const HfData &t) {
  std::vector<float> v(t.bytes.size() / 4);
  std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
  return v;
}

} // namespace autoshard::runtime::hftest

#endif // AUTOSHARD_RUNTIME_TRAIN_TEST_HFTESTUTIL_H
