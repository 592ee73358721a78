//===- ArtifactV2Test.cpp - Mesh, sharding, sharded init, comm checks -----===//
//
// Format version 2 without MPI: the mesh and world size, per-tensor
// `sharding` / `global_shape` checks, the pairing of `dist.*_start` with
// `dist.wait`, and the sharded initialisation: on a 2x2 mesh, the union of
// every rank's blocks equals the 1-device init bitwise.
//
//===----------------------------------------------------------------------===//

#include "ArtifactTestUtil.h"

#include "autoshard/runtime/CpuBackend.h"
#include "autoshard/runtime/Executor.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace autoshard::runtime;
using namespace autoshard::runtime::test;
using Json = nlohmann::json;

namespace {

void expectError(const Json &doc, std::initializer_list<std::string> needles) {
  expectArtifactError(doc.dump(), "v2.json", needles);
}

/// A state-only artifact: `states` = (name, global shape, sharding) on
/// `mesh`; shapes in the document are local.
Json stateArtifact(
    const std::vector<std::string> &axes, const std::vector<int64_t> &sizes,
    const std::vector<std::tuple<std::string, std::vector<int64_t>, Json>>
        &states) {
  Json doc = {
      {"format", "autoshard-artifact"},
      {"version", 2},
      {"model",
       {{"vocab_size", 8}, {"padded_vocab_size", 8}, {"batch", 2}, {"seq", 4}}},
      {"constants", Json::array()},
      {"functions", Json::array()},
      {"entries", Json::object()}};
  int64_t world = 1;
  for (int64_t s : sizes)
    world *= s;
  doc["world_size"] = world;
  doc["mesh"] = {{"axes", axes}, {"sizes", sizes}};
  doc["plan"] = {{"note", "test"}};
  int64_t bytes = 0;
  Json list = Json::array();
  for (const auto &[name, global, sharding] : states) {
    std::vector<int64_t> local = global;
    for (size_t d = 0; d < sharding.size(); ++d)
      for (const Json &a : sharding[d])
        for (size_t i = 0; i < axes.size(); ++i)
          if (axes[i] == a.get<std::string>())
            local[d] /= sizes[i];
    int64_t n = 1;
    for (int64_t x : local)
      n *= x;
    bytes += 4 * n;
    list.push_back({{"name", name},
                    {"kind", "param"},
                    {"dtype", "f32"},
                    {"shape", local},
                    {"global_shape", global},
                    {"sharding", sharding},
                    {"init", {{"kind", "normal"}, {"std", 1.0}}}});
  }
  doc["state"] = list;
  doc["memory"] = {{"state_bytes", bytes},
                   {"constant_bytes", 0},
                   {"transient_bytes", 0},
                   {"peak_bytes", bytes}};
  return doc;
}

TEST(ArtifactV2, ShardedInitIsTheSliceOfTheUnshardedInit) {
  using S = std::tuple<std::string, std::vector<int64_t>, Json>;
  std::vector<S> sharded = {
      {"a", {8, 6}, Json::parse(R"([["dp"], ["tp"]])")},
      {"b", {8}, Json::parse(R"([["dp", "tp"]])")},
      {"c", {6, 4}, Json::parse(R"([[], ["tp", "dp"]])")},
      {"d", {4, 2, 6}, Json::parse(R"([["tp"], [], ["dp"]])")},
      {"e", {3, 5}, Json::parse(R"([[], []])")},
  };
  std::vector<S> whole;
  for (const auto &[n, g, s] : sharded)
    whole.push_back({n, g, Json(std::vector<Json>(g.size(), Json::array()))});
  Artifact a = parseArtifact(
      stateArtifact({"dp", "tp"}, {2, 2}, sharded).dump(), "sharded");
  Artifact ref = parseArtifact(stateArtifact({}, {}, whole).dump(), "whole");
  EXPECT_EQ(a.worldSize, 4);
  EXPECT_EQ(a.planJson, R"({"note":"test"})");
  CpuBackend backend;
  Executor full(ref, backend);
  full.initState();
  for (const StateSpec &s : a.state) {
    std::vector<float> want = full.readStateAs<float>(s.name);
    std::vector<float> got(want.size(), 0);
    std::vector<int> hits(want.size(), 0);
    const std::vector<int64_t> &g = s.globalShape;
    for (int64_t rank = 0; rank < 4; ++rank) {
      ExecutorOptions opts;
      opts.rank = rank;
      Executor ex(a, backend, opts);
      ex.initState();
      std::vector<float> block = ex.readStateAs<float>(s.name);
      std::vector<int64_t> off = ex.shardOffset(s.sharding, s.type.shape);
      const std::vector<int64_t> &l = s.type.shape;
      std::vector<int64_t> idx(l.size(), 0);
      for (size_t k = 0; k < block.size(); ++k) {
        int64_t lin = 0;
        for (size_t d = 0; d < l.size(); ++d)
          lin = lin * g[d] + off[d] + idx[d];
        got[lin] = block[k];
        ++hits[lin];
        for (size_t d = l.size(); d-- > 0;) {
          if (++idx[d] < l[d])
            break;
          idx[d] = 0;
        }
      }
    }
    EXPECT_EQ(std::memcmp(got.data(), want.data(), 4 * want.size()), 0)
        << s.name;
    for (size_t i = 0; i < hits.size(); ++i) {
      // Replicated tensors: every rank holds all of it.
      int want = s.sharding.isReplicated() ? 4 : 1;
      EXPECT_EQ(hits[i], want) << s.name << " element " << i;
    }
  }
}

TEST(ArtifactV2, PaddedInitIsTheUnpaddedInitPlusZerosUnderAnySharding) {
  // An LM head [H, V] = [6, 11] padded to [6, 16] and an embedding
  // [V, H] = [11, 6] padded to [16, 6] (init.logical_shape), initialised
  // whole and sharded on a 2x2 mesh: the logical part equals the unpadded
  // tensor of the same name, the padding is 0.
  using S = std::tuple<std::string, std::vector<int64_t>, Json>;
  struct Case {
    std::string name;
    std::vector<int64_t> padded, logical;
    Json sharding;
  };
  const std::vector<Case> cases = {
      {"lm_head", {6, 16}, {6, 11}, Json::parse(R"([["dp"], ["tp"]])")},
      {"lm_head", {6, 16}, {6, 11}, Json::parse(R"([[], ["dp", "tp"]])")},
      {"lm_head", {6, 16}, {6, 11}, Json::parse(R"([[], []])")},
      {"wte", {16, 6}, {11, 6}, Json::parse(R"([["tp", "dp"], []])")},
      {"wte", {16, 6}, {11, 6}, Json::parse(R"([["tp"], ["dp"]])")}};
  CpuBackend backend;
  for (const Case &c : cases) {
    Json unpadded = stateArtifact(
        {}, {}, {S{c.name, c.logical, Json::parse(R"([[], []])")}});
    Artifact unpaddedArtifact = parseArtifact(unpadded.dump(), "unpadded");
    Executor ref(unpaddedArtifact, backend);
    ref.initState();
    std::vector<float> want = ref.readStateAs<float>(c.name);
    Json doc =
        stateArtifact({"dp", "tp"}, {2, 2}, {S{c.name, c.padded, c.sharding}});
    doc["state"][0]["init"]["logical_shape"] = c.logical;
    Artifact a = parseArtifact(doc.dump(), "padded");
    ASSERT_EQ(a.state[0].logicalShape, c.logical);
    const StateSpec &s = a.state[0];
    const int64_t cols = c.padded[1], lcols = c.logical[1];
    for (int64_t rank = 0; rank < 4; ++rank) {
      ExecutorOptions opts;
      opts.rank = rank;
      Executor ex(a, backend, opts);
      ex.initState();
      std::vector<float> block = ex.readStateAs<float>(c.name);
      std::vector<int64_t> off = ex.shardOffset(s.sharding, s.type.shape);
      const int64_t br = s.type.shape[0], bc = s.type.shape[1];
      for (int64_t r = 0; r < br; ++r)
        for (int64_t k = 0; k < bc; ++k) {
          int64_t gr = off[0] + r, gc = off[1] + k;
          float expect =
              gr < c.logical[0] && gc < lcols ? want[gr * lcols + gc] : 0.0f;
          ASSERT_EQ(block[r * bc + k], expect)
              << c.name << " " << c.sharding.dump() << " rank " << rank
              << " global (" << gr << ", " << gc << ") of " << cols;
        }
    }
  }
}

TEST(ArtifactV2, LogicalShapeErrors) {
  using S = std::tuple<std::string, std::vector<int64_t>, Json>;
  Json ok = stateArtifact({"dp"}, {2},
                          {S{"a", {4, 2}, Json::parse(R"([["dp"], []])")}});
  Json d = ok;
  d["state"][0]["init"]["logical_shape"] = {5, 2};
  expectError(d, {"logical_shape", "fit in it"});
  d["state"][0]["init"]["logical_shape"] = {4};
  expectError(d, {"logical_shape", "must have the rank"});
  d["state"][0]["init"]["logical_shape"] = {3, -1};
  expectError(d, {"logical_shape", "must list dims >= 0"});
  d["state"][0]["init"]["logical_shape"] = {3, 2};
  EXPECT_NO_THROW(parseArtifact(d.dump(), "ok"));
}

TEST(ArtifactV2, MeshAndShardingErrors) {
  using S = std::tuple<std::string, std::vector<int64_t>, Json>;
  Json ok = stateArtifact({"dp"}, {2},
                          {S{"a", {4, 2}, Json::parse(R"([["dp"], []])")}});
  EXPECT_NO_THROW(parseArtifact(ok.dump(), "ok"));
  Json d = ok;
  d["world_size"] = 4;
  expectError(d, {"field 'world_size' is 4", "mesh has 2 devices"});
  d = ok;
  d["mesh"]["axes"] = {"dp", "dp"};
  d["mesh"]["sizes"] = {2, 1};
  expectError(d, {"names axis 'dp' twice"});
  d = ok;
  d["state"][0]["sharding"] = Json::parse(R"([["tp"], []])");
  expectError(d, {"state[0]", "'tp', which is not an axis of the mesh"});
  d = ok;
  d["state"][0]["sharding"] = Json::parse(R"([["dp"], ["dp"]])");
  expectError(d, {"names axis 'dp' twice"});
  d = ok;
  d["state"][0]["sharding"] = Json::parse(R"([["dp"]])");
  expectError(d, {"lists 1 dims", "has 2"});
  d = ok;
  d["state"][0]["global_shape"] = {2, 2};
  expectError(d, {"field 'global_shape' is f32[2, 2]",
                  "sharded [[dp], []] on the mesh gives f32[4, 2]"});
  d = ok;
  d["version"] = 6;
  expectError(d, {"reads versions 1 to 5"});
}

TEST(ArtifactV2, AsyncHandlesArePaired) {
  Json doc = tinyArtifactJson();
  doc["version"] = 2;
  doc["world_size"] = 2;
  doc["mesh"] = {{"axes", {"dp"}}, {"sizes", {2}}};
  Json &code = jsonFunction(doc, "train_step")["code"];
  // Instruction 9 adds into buffer 27 (the wte gradient).
  Json start = {
      {"op", "dist.all_reduce_start"},
      {"args", {27}},
      {"results", {27}},
      {"attrs", {{"axes", {"dp"}}, {"reduction", "sum"}, {"handle", 0}}}};
  Json wait = {{"op", "dist.wait"},
               {"args", {27, 27}},
               {"results", {27}},
               {"attrs", {{"handle", 0}}}};
  Json good = doc;
  auto &gc = jsonFunction(good, "train_step")["code"];
  gc.insert(gc.begin() + 10, wait);
  gc.insert(gc.begin() + 10, start);
  Artifact a = parseArtifact(good.dump(), "good");
  const Instruction &s = a.functions[a.findFunction("train_step")].code[10];
  EXPECT_EQ(s.attrs.getStringArray("axes"), std::vector<std::string>{"dp"});
  EXPECT_EQ(s.attrs.getString("reduction"), "sum");

  Json d = doc;
  jsonFunction(d, "train_step")["code"].insert(
      jsonFunction(d, "train_step")["code"].begin() + 10, start);
  expectError(d, {"handle 0 is never waited on"});
  d = doc;
  jsonFunction(d, "train_step")["code"].insert(
      jsonFunction(d, "train_step")["code"].begin() + 10, wait);
  expectError(d, {"waits on handle 0", "no earlier dist.*_start"});
  d = good;
  jsonFunction(d, "train_step")["code"][11]["args"] = {27};
  expectError(d, {"must name the buffers of instruction 10"});
  d = good;
  jsonFunction(d, "train_step")["code"][10]["attrs"]["axes"] = {"tp"};
  expectError(d, {"'tp', which is not an axis of the mesh"});
  d = good;
  jsonFunction(d, "train_step")["code"][10]["attrs"]["reduction"] = "mean";
  expectError(d, {"must be \"sum\" or \"max\", found \"mean\""});
  (void)code;
}

TEST(ArtifactV2, CollectivesNeedACommunicator) {
  // A 2-rank artifact without communicators: init works, binding a
  // collective fails clearly.
  Artifact a =
      loadArtifact(std::string(AUTOSHARD_TEST_DATA_DIR) + "/tiny-dp2.json");
  CpuBackend backend;
  ExecutorOptions opts;
  opts.rank = 1;
  try {
    Executor ex(a, backend, opts);
    ADD_FAILURE() << "expected an ArtifactError";
  } catch (const ArtifactError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "'dist.all_reduce' needs the job's communicators"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
