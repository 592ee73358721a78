//===- HfCheckpointTest.cpp - Hugging Face import, export, weight map -----===//
//
// On the hand-made artifact of HfTestUtil.h: every defect of a weight map;
// export -> import bit for bit (concatenated, transposed, squeezed parts,
// zero parts, vocabulary padding, a scalar), sharded exports with an
// index, BF16/F16 -> F32 widening, every checkpoint error; the per-rank
// reads of a 4-rank plan (one executor per rank, without communication);
// the export directory checks and a write failure.
//
//===----------------------------------------------------------------------===//

#include "HfTestUtil.h"

#include "autoshard/runtime/CpuBackend.h"
#include "autoshard/runtime/train/Checkpoint.h"
#include "autoshard/runtime/train/HfCheckpoint.h"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <functional>

using namespace autoshard::runtime;
using namespace autoshard::runtime::hftest;
namespace fs = std::filesystem;

namespace {

std::string tempDir(const std::string &name) {
  std::string d = ::testing::TempDir() + "/hf-" + name;
  fs::remove_all(d);
  return d;
}

/// The message of the exception `body` throws as E ("" if none).
template <typename E> std::string errorOf(const std::function<void()> &body) {
  try {
    body();
  } catch (const E &e) {
    return e.what();
  }
  return "";
}

#define EXPECT_HAS(text, part)                                                 \
  EXPECT_NE(std::string(text).find(part), std::string::npos)                   \
      << "'" << (text) << "' lacks '" << (part) << "'"

/// The CPU backend posing as a device whose memory the host cannot read
/// (a GPU): state goes through readState/writeState copies.
class DeviceLikeBackend : public CpuBackend {
public:
  bool hostAccessible() const override { return false; }
};

/// An executor of `a` (as rank `rank`, without communication), its state
/// initialised.
struct Job {
  CpuBackend host;
  DeviceLikeBackend device;
  std::unique_ptr<Executor> ex;
  Job(const Artifact &a, int64_t rank = 0, bool zeroParams = false,
      bool deviceLike = false) {
    ExecutorOptions o;
    o.rank = rank;
    Backend &b = deviceLike ? static_cast<Backend &>(device) : host;
    ex = std::make_unique<Executor>(a, b, o);
    ex->initState(zeroParams);
  }
};

/// `a`'s test values exported to a fresh directory `name`.
std::string exportTestValues(const Artifact &a, const std::string &name,
                             int64_t maxShard = kHfMaxShardBytes) {
  Job r(a);
  setTestValues(*r.ex);
  std::string dir = tempDir(name);
  exportHfCheckpoint(*r.ex, dir, maxShard);
  return dir;
}

class Hf : public ::testing::Test {
protected:
  Artifact a = parse(makeArtifact(testState(), testMap()));
};

//===----------------------------------------------------------------------===//
// The weight map
//===----------------------------------------------------------------------===//

/// The ArtifactError of parsing testMap() after `edit`.
std::string mapError(const std::function<void(Json &)> &edit) {
  Json hf = testMap();
  edit(hf);
  Artifact a = parse(makeArtifact(testState(), hf));
  return errorOf<ArtifactError>([&] { parseHfWeightMap(a); });
}

Json &tensorNamed(Json &hf, const std::string &name) {
  for (Json &t : hf["tensors"])
    if (t["name"] == name)
      return t;
  throw std::runtime_error("no tensor " + name);
}

TEST_F(Hf, MapParses) {
  HfWeightMap m = parseHfWeightMap(a);
  EXPECT_EQ(m.architecture, "TestForCausalLM");
  EXPECT_EQ(m.prefix, "m.");
  ASSERT_EQ(m.tensors.size(), 9u);
  const HfPart &e1 = m.tensors[5].parts[0];
  EXPECT_EQ(e1.paramShape(), (std::vector<int64_t>{1, 4, 6}));
  EXPECT_EQ(e1.paramDim(0), 2u);
  EXPECT_EQ(e1.paramDim(1), 1u);
  EXPECT_EQ(m.tensors[2].parts[0].stateIndex, -1); // zeros
  EXPECT_EQ(m.config["vocab_size"], 5);
}

TEST_F(Hf, MapNamesEveryDefect) {
  EXPECT_HAS(errorOf<ArtifactError>([] {
               parseHfWeightMap(parse(makeArtifact(testState(), nullptr)));
             }),
             "was built without a Hugging Face weight map (model.hf): rebuild "
             "it with the current autoshard.models");
  Json bad = makeArtifact(testState(), nullptr);
  bad["model"]["hf_incompatible"] = "rope_scaling 'yarn' is not supported";
  EXPECT_HAS(errorOf<ArtifactError>([&] { parseHfWeightMap(parse(bad)); }),
             "cannot be read from or written as a Hugging Face checkpoint: "
             "rope_scaling 'yarn' is not supported");
  EXPECT_HAS(
      mapError([](Json &hf) {
        tensorNamed(hf, "m.embed.weight")["parts"][0]["hf_shape"] = {6, 4};
      }),
      "tensor 'm.embed.weight' part 0 (parameter 'wte'): the box [0:6, "
      "0:4] lies outside the tensor's shape [5, 4]");
  EXPECT_HAS(mapError([](Json &hf) {
               Json &t = tensorNamed(hf, "m.embed.weight");
               t["shape"] = {6, 4};
               t["parts"][0]["hf_shape"] = {6, 4};
             }),
             "the parameter box [0:6, 0:4] lies outside the logical shape [5, "
             "4] of 'wte'");
  EXPECT_HAS(
      mapError([](Json &hf) {
        tensorNamed(hf, "m.norm.weight")["parts"][0]["param"] = "nope";
      }),
      "names parameter 'nope', which the artifact's state does not have");
  EXPECT_HAS(mapError([](Json &hf) {
               tensorNamed(hf, "m.embed.weight")["parts"][0]["param"] =
                   "wte.exp_avg";
             }),
             "which is an optimizer state (of 'wte'), not a parameter");
  EXPECT_HAS(mapError([](Json &hf) {
               tensorNamed(
                   hf, "m.attn.c_attn.weight")["parts"][1]["hf_begin"] = {0, 1};
             }),
             "part 0 ('attn.wq') and part 1 ('attn.wk') overlap");
  EXPECT_HAS(mapError([](Json &hf) {
               Json &t = tensorNamed(hf, "m.experts.1.w1.weight");
               t["parts"][0]["param_begin"] = {0, 0, 0};
             }),
             "parameter 'moe.w_gate': tensor 'm.experts.0.w1.weight' part 0 "
             "('moe.w_gate') and tensor 'm.experts.1.w1.weight' part 0 "
             "('moe.w_gate') overlap");
  EXPECT_HAS(mapError([](Json &hf) {
               hf["tensors"].erase(hf["tensors"].begin() + 6); // m.norm.weight
             }),
             "no tensor is made of parameter 'norm.weight'");
  EXPECT_HAS(mapError([](Json &hf) {
               Json &t = tensorNamed(hf, "m.attn.c_attn.weight");
               t["parts"].erase(t["parts"].begin() + 2);
             }),
             "tensor 'm.attn.c_attn.weight': its parts cover 16 elements, but "
             "its shape [4, 6] has 24");
  EXPECT_HAS(mapError([](Json &hf) {
               Json &t = tensorNamed(hf, "m.experts.1.w1.weight");
               t["shape"] = {3, 4};
               t["parts"][0]["hf_shape"] = {3, 4};
             }),
             "parameter 'moe.w_gate': the parts naming it cover 36 elements, "
             "but its logical shape [2, 4, 6] has 48");
  EXPECT_HAS(mapError([](Json &hf) {
               tensorNamed(hf, "m.norm.weight")["parts"][0]["squeeze"] = 1;
             }),
             "maps onto a box of rank 2 (squeeze 1 + rank 1)");
  EXPECT_HAS(mapError([](Json &hf) { hf["check"].push_back("n_head"); }),
             "'check' names 'n_head', which 'config' does not have");
  EXPECT_HAS(mapError([](Json &hf) { hf["config"] = "{not json"; }),
             "field 'config' must be a JSON object (or its text)");
  EXPECT_HAS(mapError([](Json &hf) { hf.erase("architecture"); }),
             "model.hf: field 'architecture' is missing");
  EXPECT_HAS(mapError([](Json &hf) {
               tensorNamed(hf, "m.norm.weight")["name"] = "m.embed.weight";
             }),
             "tensor 'm.embed.weight': is listed twice");
  EXPECT_HAS(mapError([](Json &hf) {
               tensorNamed(hf, "m.norm.weight")["parts"][0]["transpose"] = true;
             }),
             "transposes a tensor of rank 1");
}

//===----------------------------------------------------------------------===//
// Export, import
//===----------------------------------------------------------------------===//

TEST_F(Hf, ExportWritesTheHfLayout) {
  std::string dir = exportTestValues(a, "layout");
  Json config = Json::parse(readFile(dir + "/config.json"));
  EXPECT_EQ(config["architectures"], Json::array({"TestForCausalLM"}));
  EXPECT_EQ(config["torch_dtype"], "float32");
  EXPECT_EQ(config["dtype"], "float32");
  EXPECT_EQ(config["hidden_size"], 4);
  EXPECT_FALSE(fs::exists(dir + "/model.safetensors.index.json"));
  SafetensorsHeader h = readSafetensorsHeader(dir + "/model.safetensors");
  EXPECT_EQ(h.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  EXPECT_EQ(h.dataStart % 8, 0);
  std::vector<HfData> t = readTensors(dir + "/model.safetensors");
  std::vector<std::string> names;
  for (const HfData &d : t)
    names.push_back(d.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{
                "m.embed.weight", "m.attn.c_attn.weight", "m.attn.c_attn.bias",
                "m.experts.0.w1.weight", "m.attn.o_proj.weight",
                "m.experts.1.w1.weight", "m.norm.weight", "m.scale",
                "lm_head.weight"})); // map order
  auto value = [&](const char *param, std::vector<int64_t> idx) {
    int64_t k = a.findState(param);
    const std::vector<int64_t> &g = a.state[k].globalShape;
    int64_t i = 0;
    for (size_t d = 0; d < g.size(); ++d)
      i = i * g[d] + idx[d];
    return valueOf(k, i);
  };
  // Embedding: the logical rows only.
  std::vector<float> embed = floats(t[0]);
  ASSERT_EQ(embed.size(), 20u);
  EXPECT_EQ(embed[4 * 4 + 3], value("wte", {4, 3}));
  // c_attn: the columns are q | k | v.
  std::vector<float> qkv = floats(t[1]);
  EXPECT_EQ(qkv[1 * 6 + 0], value("attn.wq", {1, 0}));
  EXPECT_EQ(qkv[1 * 6 + 3], value("attn.wk", {1, 1}));
  EXPECT_EQ(qkv[3 * 6 + 5], value("attn.wv", {3, 1}));
  EXPECT_EQ(floats(t[2]), std::vector<float>(6, 0.0f)); // zero part
  // Expert 1's [F, H] from w_gate [E, H, F]: squeezed and transposed.
  std::vector<float> e1 = floats(t[5]);
  EXPECT_EQ(e1[5 * 4 + 2], value("moe.w_gate", {1, 2, 5}));
  EXPECT_EQ(floats(t[4])[3 * 2 + 1], value("attn.wo", {1, 3}));
  EXPECT_EQ(t[7].shape, std::vector<int64_t>{});
  EXPECT_EQ(floats(t[7])[0], value("scale", {}));
  // Head [H, Vp] -> [V, H], the padding column left out.
  EXPECT_EQ(t[8].shape, (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(floats(t[8])[4 * 4 + 1], value("lm_head", {1, 4}));
}

/// Expects every parameter of `ex` to hold its test values exactly.
void expectTestValues(const Executor &ex) {
  const Artifact &a = ex.artifact();
  for (size_t k = 0; k < a.state.size(); ++k) {
    const StateSpec &s = a.state[k];
    if (!ex.holdsState(s.name))
      continue;
    std::vector<float> want =
        s.kind == StateKind::Param
            ? blockValues(a, s, ex.rank(), globalValues(s, k))
            : std::vector<float>(numel(s.type.shape), 0.0f);
    EXPECT_EQ(ex.readStateAs<float>(s.name), want)
        << s.name << " on rank " << ex.rank();
  }
}

TEST_F(Hf, ExportImportRoundTripsBitForBit) {
  std::string dir = exportTestValues(a, "roundtrip");
  for (bool zeroParams : {false, true}) { // after the random init, or not
    Job r(a, 0, zeroParams);
    HfImportStats st = importHfCheckpoint(*r.ex, dir);
    EXPECT_EQ(st.tensors, 9);
    EXPECT_EQ(st.files, 1);
    // Each tensor once, but c_attn's [4, 2] boxes are read as spans of
    // rows (3 x 80 bytes, the gaps between their rows included).
    EXPECT_EQ(st.bytesRead, 524 - 96 + 3 * 80);
    expectTestValues(*r.ex); // the padding row/column zero, moments zero
  }
}

TEST_F(Hf, StateOffTheHostRoundTrips) {
  // Export from and import into state the host cannot address: staged.
  Job from(a, 0, false, /*deviceLike=*/true);
  setTestValues(*from.ex);
  ASSERT_EQ(from.ex->stateHostPointer("wte"), nullptr);
  std::string dir = tempDir("device");
  exportHfCheckpoint(*from.ex, dir);
  EXPECT_EQ(
      readFile(dir + "/model.safetensors"),
      readFile(exportTestValues(a, "device-host") + "/model.safetensors"));
  Job to(a, 0, /*zeroParams=*/true, /*deviceLike=*/true);
  importHfCheckpoint(*to.ex, dir);
  expectTestValues(*to.ex);
}

TEST_F(Hf, ShardedExportWithIndexImports) {
  std::string dir = exportTestValues(a, "sharded", /*maxShard=*/130);
  EXPECT_FALSE(fs::exists(dir + "/model.safetensors"));
  Json index = Json::parse(readFile(dir + "/model.safetensors.index.json"));
  int64_t total = 0, files = 0;
  for (const HfData &d :
       readTensors(dir + "/model-00001-of-00005.safetensors")) {
    total += d.bytes.size();
    EXPECT_EQ(index["weight_map"][d.name], "model-00001-of-00005.safetensors");
  }
  for (const fs::directory_entry &e : fs::directory_iterator(dir))
    files += e.path().extension() == ".safetensors";
  EXPECT_EQ(files, 5); // 80 | 96 24 | 96 32 | 96 16 4 | 80 bytes
  EXPECT_EQ(index["metadata"]["total_size"],
            80 + 96 + 24 + 96 + 32 + 96 + 16 + 4 + 80);
  EXPECT_EQ(total, 80);
  EXPECT_EQ(index["weight_map"]["lm_head.weight"],
            "model-00005-of-00005.safetensors");
  Job r(a);
  EXPECT_EQ(importHfCheckpoint(*r.ex, dir).files, 5);
  expectTestValues(*r.ex);
}

TEST_F(Hf, ReExportReplacesTheEarlierOne) {
  std::string dir = exportTestValues(a, "replace", /*maxShard=*/130);
  Job r(a);
  setTestValues(*r.ex);
  exportHfCheckpoint(*r.ex, dir); // now one file, no index
  EXPECT_TRUE(fs::exists(dir + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(dir + "/model-00001-of-00005.safetensors"));
  for (const fs::directory_entry &e : fs::directory_iterator(dir + "/.."))
    EXPECT_EQ(e.path().filename().string().find("hf-replace."),
              std::string::npos)
        << e.path(); // no tmp or old directory left
}

/// Rewrites the tensors of `dir`'s model.safetensors with `edit`.
void editTensors(const std::string &dir,
                 const std::function<void(std::vector<HfData> &)> &edit) {
  std::string path = dir + "/model.safetensors";
  std::vector<HfData> t = readTensors(path);
  edit(t);
  writeTensors(path, t);
}

HfData &named(std::vector<HfData> &t, const std::string &name) {
  for (HfData &d : t)
    if (d.name == name)
      return d;
  throw std::runtime_error("no tensor " + name);
}

TEST_F(Hf, ImportsBf16AndF16IntoF32Exactly) {
  std::string dir = exportTestValues(a, "bf16");
  editTensors(dir, [](std::vector<HfData> &t) {
    for (size_t i = 0; i < t.size(); ++i) {
      std::vector<float> f = floats(t[i]);
      std::string half(f.size() * 2, '\0');
      bool bf16 = i % 2 == 0;
      for (size_t j = 0; j < f.size(); ++j) {
        uint32_t bits;
        std::memcpy(&bits, &f[j], 4);
        uint16_t h = static_cast<uint16_t>(bits >> 16); // exact: 8-bit values
        if (!bf16) { // f16: rebias the exponent, 10-bit mantissa
          uint32_t e = (bits >> 23) & 0xFF;
          h = static_cast<uint16_t>(((bits >> 16) & 0x8000) |
                                    (f[j] == 0 ? 0 : (e - 112) << 10) |
                                    ((bits >> 13) & 0x3FF));
        }
        std::memcpy(&half[2 * j], &h, 2);
      }
      t[i].dtype = bf16 ? DType::BF16 : DType::F16;
      t[i].bytes = half;
    }
  });
  Job r(a);
  importHfCheckpoint(*r.ex, dir);
  expectTestValues(*r.ex);
}

TEST_F(Hf, ImportAcceptsBareNamesIgnoredAndTiedTensors) {
  std::string dir = exportTestValues(a, "bare");
  editTensors(dir, [](std::vector<HfData> &t) {
    for (HfData &d : t)
      if (d.name.rfind("m.", 0) == 0)
        d.name = d.name.substr(2); // saved from the base model
    t.push_back({"m.layers.0.rotary_emb.inv_freq",
                 DType::F32,
                 {2},
                 std::string(8, '\1')});
    t.push_back({"lm_head_copy.weight", DType::F32, {1}, std::string(4, '\0')});
  });
  Job r(a);
  importHfCheckpoint(*r.ex, dir);
  expectTestValues(*r.ex);
}

/// The agreed CheckpointError of importing `dir` into `a`.
std::string importError(const Artifact &a, const std::string &dir) {
  Job r(a);
  try {
    importHfCheckpoint(*r.ex, dir);
  } catch (const CheckpointError &e) {
    EXPECT_TRUE(e.agreed);
    return e.what();
  }
  return "";
}

TEST_F(Hf, ImportNamesEveryCheckpointDefect) {
  std::string dir = exportTestValues(a, "defects");
  std::string file = dir + "/model.safetensors";
  std::string good = readFile(file);
  auto reset = [&] { writeText(file, good); };

  editTensors(dir, [](std::vector<HfData> &t) {
    t.erase(t.begin() + 6); // m.norm.weight
  });
  EXPECT_HAS(importError(a, dir),
             "has no tensor 'm.norm.weight' (nor 'norm.weight') (it holds "
             "parameter 'norm.weight')");
  reset();
  editTensors(dir, [](std::vector<HfData> &t) {
    t.push_back({"m.layers.9.mlp.weight", DType::F32, {2}, std::string(8, 0)});
  });
  EXPECT_HAS(importError(a, dir), "model.safetensors': tensor "
                                  "'m.layers.9.mlp.weight' is not part of the "
                                  "model of artifact 'test.json'");
  reset();
  editTensors(dir, [](std::vector<HfData> &t) {
    HfData &d = named(t, "m.norm.weight");
    d.shape = {2, 2};
  });
  EXPECT_HAS(importError(a, dir), "tensor 'm.norm.weight' has shape [2, 2], "
                                  "but the model needs [4]");
  reset();
  editTensors(dir, [](std::vector<HfData> &t) {
    HfData &d = named(t, "m.norm.weight");
    d.dtype = DType::I32;
  });
  EXPECT_HAS(importError(a, dir),
             "tensor 'm.norm.weight' is I32, but the model's parameters are "
             "F32 (F32, BF16 or F16 are read)");
  reset();
  editTensors(dir, [](std::vector<HfData> &t) {
    HfData &d = named(t, "m.attn.c_attn.bias");
    float one = 1.0f;
    std::memcpy(&d.bytes[4 * 4], &one, 4);
  });
  EXPECT_HAS(importError(a, dir),
             "tensor 'm.attn.c_attn.bias' holds 1.000000 at [4], inside the "
             "box [0:6] that the model holds as zeros");

  // Corrupt headers.
  writeText(file, std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}");
  EXPECT_HAS(importError(a, dir), "model.safetensors': header length");
  std::string len(8, '\0');
  len[0] = 4;
  writeText(file, len + "{no}");
  EXPECT_HAS(importError(a, dir),
             "model.safetensors': the header is not a JSON object");
  reset();
  writeText(file, good.substr(0, good.size() - 8)); // the data cut short
  EXPECT_HAS(importError(a, dir), "(truncated?)");
  reset();

  // config.json.
  std::string config = readFile(dir + "/config.json");
  Json c = Json::parse(config);
  c["hidden_size"] = 4.0; // numerically equal: fine
  c["rms_norm_eps"] = 0.00001;
  writeText(dir + "/config.json", c.dump());
  Job ok(a);
  EXPECT_NO_THROW(importHfCheckpoint(*ok.ex, dir));
  c["hidden_size"] = 8;
  writeText(dir + "/config.json", c.dump());
  EXPECT_HAS(importError(a, dir), dir + "/config.json: 'hidden_size' is 8, "
                                        "but the model was built with 4");
  c["hidden_size"] = 4;
  c.erase("rms_norm_eps"); // transformers' default 1e-6 applies
  writeText(dir + "/config.json", c.dump());
  EXPECT_HAS(importError(a, dir),
             "'rms_norm_eps' is absent, so transformers' default 1e-06 "
             "applies, but the model was built with 1e-05");
  c["rms_norm_eps"] = 1e-5;
  c["tie_word_embeddings"] = 0; // not a bool: exact comparison
  writeText(dir + "/config.json", c.dump());
  EXPECT_HAS(importError(a, dir), "'tie_word_embeddings' is 0, but the model "
                                  "was built with false");
  c["model_type"] = "gpt2";
  writeText(dir + "/config.json", c.dump());
  EXPECT_HAS(importError(a, dir), "'model_type' is \"gpt2\", but the model "
                                  "was built as \"test\"");
  fs::remove(dir + "/config.json");
  EXPECT_HAS(importError(a, dir), "cannot open the Hugging Face config");
  writeText(dir + "/config.json", config);

  fs::remove(file);
  EXPECT_HAS(importError(a, dir), "has neither model.safetensors nor "
                                  "model.safetensors.index.json");
  EXPECT_HAS(importError(a, dir + "-nope"), "-nope' does not exist");

  // The artifact's side.
  Json incompatible = makeArtifact(testState(), nullptr);
  incompatible["model"]["hf_incompatible"] = "sliding window attention";
  EXPECT_HAS(importError(parse(incompatible), dir),
             "cannot be read from or written as a Hugging Face checkpoint: "
             "sliding window attention");
}

TEST_F(Hf, IndexDefects) {
  // Shards: 80 | 96 24 | 96 32 | 96 16 4 | 80 bytes.
  std::string dir = exportTestValues(a, "index", /*maxShard=*/130);
  std::string index = dir + "/model.safetensors.index.json";
  Json doc = Json::parse(readFile(index));
  doc["weight_map"]["m.norm.weight"] = "model-00001-of-00005.safetensors";
  writeText(index, doc.dump());
  EXPECT_HAS(importError(a, dir),
             "puts tensor 'm.norm.weight' in "
             "'model-00001-of-00005.safetensors', which does not hold it");
  writeText(index, "{\"metadata\": {}}");
  EXPECT_HAS(importError(a, dir), "has no 'weight_map' object");
  fs::remove_all(dir);
  dir = exportTestValues(a, "index", /*maxShard=*/130);
  fs::remove(dir + "/model-00003-of-00005.safetensors");
  EXPECT_HAS(importError(a, dir),
             "names 'model-00003-of-00005.safetensors', which does not exist");
}

//===----------------------------------------------------------------------===//
// Several ranks
//===----------------------------------------------------------------------===//

TEST(HfRanks, EachRankReadsItsBlocks) {
  // One 1-rank export, read by each rank of a [pp=2, tp=2] plan.
  Artifact one = parse(makeArtifact(testState(), testMap()));
  std::string dir = exportTestValues(one, "ranks");
  Artifact four =
      parse(makeArtifact(testState(2, 2), testMap(), {"pp", "tp"}, {2, 2}));
  int64_t readByAll = 0;
  for (int64_t rank = 0; rank < 4; ++rank) {
    Job r(four, rank);
    HfImportStats st = importHfCheckpoint(*r.ex, dir);
    expectTestValues(*r.ex);
    readByAll = std::max(readByAll, st.bytesRead);
  }
  // Tensor bytes: 80 + 96 + 24 + 96 + 32 + 96 + 16 + 4 + 80 = 524. The
  // zero part is read by rank 0 (its turn), the embedding only by stage
  // 0, the head only by stage 1, the sharded boxes in halves.
  EXPECT_LT(readByAll, 524);
}

//===----------------------------------------------------------------------===//
// The export directory
//===----------------------------------------------------------------------===//

TEST_F(Hf, ExportDirChecks) {
  std::string dir = tempDir("target");
  EXPECT_NO_THROW(checkHfExportDir(dir)); // absent
  fs::create_directories(dir);
  EXPECT_NO_THROW(checkHfExportDir(dir)); // empty
  writeText(dir + "/notes.txt", "mine");
  EXPECT_HAS(errorOf<CheckpointError>([&] { checkHfExportDir(dir); }),
             "it holds 'notes.txt', which an export does not write, so it is "
             "not an earlier export");
  fs::remove(dir + "/notes.txt");
  writeText(dir + "/model.safetensors", "x");
  EXPECT_HAS(errorOf<CheckpointError>([&] { checkHfExportDir(dir); }),
             "it holds no config.json");
  writeText(dir + "/config.json", "{}");
  EXPECT_NO_THROW(checkHfExportDir(dir));
  EXPECT_HAS(errorOf<CheckpointError>(
                 [&] { checkHfExportDir("/nonexistent/dir/out"); }),
             "its parent directory '/nonexistent/dir' does not exist");
  writeText(dir + "-file", "");
  EXPECT_HAS(errorOf<CheckpointError>([&] { checkHfExportDir(dir + "-file"); }),
             "it exists and is not a directory");
  // A crashed export's leftovers: a tmp dir of a dead process is removed.
  std::string stale = dir + ".tmp-999999999";
  fs::create_directories(stale);
  checkHfExportDir(dir);
  EXPECT_FALSE(fs::exists(stale));
}

TEST_F(Hf, WriteFailureLeavesTheDirectoryUntouched) {
  std::string dir = exportTestValues(a, "full");
  std::string before = readFile(dir + "/model.safetensors");
  Job r(a);
  setTestValues(*r.ex);
  r.ex->writeState("scale", std::vector<float>{42.0f}.data());
  // Files may grow to 300 bytes only: the header fits, the data does not.
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit old;
  getrlimit(RLIMIT_FSIZE, &old);
  rlimit small = old;
  small.rlim_cur = 300;
  setrlimit(RLIMIT_FSIZE, &small);
  std::string err;
  bool agreed = false;
  try {
    exportHfCheckpoint(*r.ex, dir);
  } catch (const CheckpointError &e) {
    err = e.what();
    agreed = e.agreed;
  }
  setrlimit(RLIMIT_FSIZE, &old);
  EXPECT_TRUE(agreed);
  EXPECT_HAS(err, "Hugging Face export to '" + dir + "' failed on rank 0: ");
  EXPECT_HAS(err, "File too large");
  EXPECT_HAS(err, "(the directory is unchanged)");
  EXPECT_EQ(readFile(dir + "/model.safetensors"), before);
  EXPECT_FALSE(fs::exists(dir + ".tmp-" + std::to_string(::getpid())));
}

} // namespace
