//===- ArtifactTest.cpp - Artifact loading and validation -----------------===//

#include "ArtifactTestUtil.h"

#include "autoshard/runtime/Ops.h"

#include <gtest/gtest.h>

#include <functional>

using namespace autoshard::runtime;
using namespace autoshard::runtime::test;
using Json = nlohmann::json;

namespace {

/// Parses `doc` and expects an ArtifactError whose message contains every
/// string of `needles`.
void expectError(const Json &doc, std::initializer_list<std::string> needles) {
  expectArtifactError(doc.dump(), "mutated.json", needles);
}

/// Mutates a copy of the tiny artifact and expects the error.
void expectMutationError(const std::function<void(Json &)> &mutate,
                         std::initializer_list<std::string> needles) {
  Json doc = tinyArtifactJson();
  mutate(doc);
  expectError(doc, needles);
}

TEST(ArtifactTest, LoadsTheTinyArtifact) {
  Artifact a = loadArtifact(tinyArtifactPath());
  EXPECT_EQ(a.version, 1);
  EXPECT_EQ(a.model.vocabSize, 8);
  EXPECT_EQ(a.model.paddedVocabSize, 10);
  EXPECT_EQ(a.state.size(), 12u);
  ASSERT_EQ(a.functions.size(), 5u);
  const Function &train = a.functions[a.findFunction("train_step")];
  EXPECT_EQ(train.buffers[22].kind, BufferKind::Alias);
  EXPECT_EQ(rootBuffer(train, 25), 24);
  EXPECT_TRUE(train.code[1].isCall());
  EXPECT_EQ(a.functions[train.code[1].callee].name, "block");
  EXPECT_EQ(train.code[3].attrs.getI64("vocab_size"), 8);
  EXPECT_TRUE(train.code[2].attrs.getFlag("transpose_rhs"));
  EXPECT_FALSE(train.code[2].attrs.getFlag("transpose_lhs"));
  const EntrySpec *e = a.findEntry("train_step");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->inputs.size(), 4u);
  EXPECT_EQ(a.memory.peakBytes, 2564);
}

TEST(ArtifactTest, MalformedJson) {
  try {
    parseArtifact("{\"format\": \"autoshard-artifact\", ", "broken.json");
    FAIL();
  } catch (const ArtifactError &e) {
    EXPECT_NE(std::string(e.what()).find("broken.json': malformed JSON"),
              std::string::npos)
        << e.what();
  }
}

TEST(ArtifactTest, MissingFile) {
  EXPECT_THROW(loadArtifact("/nonexistent/a.json"), ArtifactError);
}

TEST(ArtifactTest, WrongFormatAndVersion) {
  expectMutationError([](Json &d) { d["format"] = "onnx"; },
                      {"field 'format'", "\"onnx\""});
  expectMutationError([](Json &d) { d["version"] = 6; },
                      {"field 'version' is 6", "reads versions 1 to 5"});
  expectMutationError([](Json &d) { d["version"] = "1"; },
                      {"field 'version' must be an integer", "\"1\""});
}

TEST(ArtifactTest, MissingField) {
  expectMutationError([](Json &d) { d.erase("memory"); },
                      {"top level", "missing field 'memory'"});
  expectMutationError(
      [](Json &d) { jsonFunction(d, "block")["buffers"][5].erase("offset"); },
      {"function 'block', buffer 5", "missing field 'offset'"});
}

TEST(ArtifactTest, UnknownDtypeAndOp) {
  expectMutationError(
      [](Json &d) { jsonFunction(d, "block")["buffers"][6]["dtype"] = "f8"; },
      {"function 'block', buffer 6", "unknown dtype 'f8'"});
  expectMutationError(
      [](Json &d) { jsonFunction(d, "block")["code"][2]["op"] = "frobnicate"; },
      {"function 'block', instruction 2", "unknown op 'frobnicate'"});
}

TEST(ArtifactTest, BufferIdOutOfRange) {
  expectMutationError(
      [](Json &d) { jsonFunction(d, "block")["code"][1]["args"][0] = 40; },
      {"function 'block', instruction 1 ('matmul')", "buffer id 40", "[0, 7)"});
  expectMutationError(
      [](Json &d) { jsonFunction(d, "block")["buffers"][3]["id"] = 9; },
      {"function 'block'", "field 'id'", "9"});
}

TEST(ArtifactTest, AliasElementCount) {
  expectMutationError(
      [](Json &d) {
        jsonFunction(d, "train_step")["buffers"][22]["shape"] = {8, 11};
      },
      {"function 'train_step', buffer 22", "f32[8, 11]", "element count"});
  expectMutationError(
      [](Json &d) { jsonFunction(d, "train_step")["buffers"][22]["of"] = 22; },
      {"buffer 22", "field 'of'"});
}

TEST(ArtifactTest, CallArity) {
  expectMutationError(
      [](Json &d) {
        jsonFunction(d, "train_step")["code"][1]["args"].erase(4);
      },
      {"instruction 1 ('call')", "passes 4 args", "num_args 5"});
  expectMutationError(
      [](Json &d) { jsonFunction(d, "train_step")["code"][1]["args"][1] = 6; },
      {"argument 1 is f32[10, 4]", "expects f32[4, 4]"});
  expectMutationError(
      [](Json &d) { jsonFunction(d, "train_step")["code"][1]["callee"] = "x"; },
      {"field 'callee'", "'x'"});
}

TEST(ArtifactTest, OpArityAndAttributes) {
  expectMutationError(
      [](Json &d) { jsonFunction(d, "block")["code"][2]["args"].push_back(0); },
      {"instruction 2 ('add')", "has 3 ids", "takes 2"});
  // A matmul takes an optional third argument (a fused epilogue's addend).
  expectMutationError(
      [](Json &d) {
        jsonFunction(d, "block")["code"][1]["args"] = {5, 1, 0, 0};
      },
      {"instruction 1 ('matmul')", "has 4 ids", "takes 2 to 3"});
  expectMutationError(
      [](Json &d) { jsonFunction(d, "block")["code"][0].erase("attrs"); },
      {"instruction 0 ('layer_norm')", "needs attribute 'epsilon'"});
}

TEST(ArtifactTest, FrameBounds) {
  expectMutationError(
      [](Json &d) { jsonFunction(d, "block")["buffers"][6]["offset"] = 200; },
      {"function 'block', buffer 6", "[200, 328)", "frame_bytes 256"});
  expectMutationError(
      [](Json &d) {
        jsonFunction(d, "train_step")["code"][1]["frame_offset"] = 1600;
      },
      {"instruction 1 ('call')", "exceeds frame_bytes 1792"});
  expectMutationError(
      [](Json &d) { jsonFunction(d, "block")["buffers"][6]["offset"] = 2; },
      {"buffer 6", "not a multiple of the element size"});
}

TEST(ArtifactTest, MemoryTotals) {
  expectMutationError([](Json &d) { d["memory"]["peak_bytes"] = 2563; },
                      {"memory", "'peak_bytes' is 2563", "2564"});
  expectMutationError([](Json &d) { d["memory"]["state_bytes"] = 700; },
                      {"'state_bytes' is 700", "768"});
  expectMutationError(
      [](Json &d) { d["memory"]["entries"]["eval"]["frame_bytes"] = 1; },
      {"memory, entry 'eval'", "frame_bytes", "704"});
}

TEST(ArtifactTest, OverlappingLiveBuffers) {
  // dh (buffer 28) moved onto dwte (27), which is live until the updates.
  expectMutationError(
      [](Json &d) {
        jsonFunction(d, "train_step")["buffers"][28]["offset"] = 1280;
      },
      {"function 'train_step'", "buffer 27", "buffer 28", "overlaps"});
  // A value inside the frame of a call that is live across it.
  expectMutationError(
      [](Json &d) {
        jsonFunction(d, "train_step")["code"][1]["frame_offset"] = 128;
      },
      {"the frame of 'block'", "overlaps"});
}

TEST(ArtifactTest, Recursion) {
  expectMutationError(
      [](Json &d) {
        Json &block = jsonFunction(d, "block");
        block["code"].push_back({{"op", "call"},
                                 {"callee", "block"},
                                 {"args", {0, 1, 2, 3, 4}},
                                 {"frame_offset", 0}});
      },
      {"calls 'block' recursively"});
}

TEST(ArtifactTest, EntrySlots) {
  expectMutationError(
      [](Json &d) {
        d["entries"]["eval"]["inputs"]["tokens"]["dtype"] = "i64";
      },
      {"input 'tokens' is i32[2, 4]", "declares i64[2, 4]"});
  expectMutationError(
      [](Json &d) { d["entries"]["eval"]["outputs"].erase("loss"); },
      {"output 'loss' is not declared by entry 'eval'"});
  expectMutationError(
      [](Json &d) { jsonFunction(d, "block")["buffers"][6]["kind"] = "input"; },
      {"function 'block'", "missing field 'role'"});
}

TEST(ArtifactTest, StateReferences) {
  expectMutationError(
      [](Json &d) { jsonFunction(d, "eval")["buffers"][3]["name"] = "wpe"; },
      {"function 'eval', buffer 3", "names no state tensor: 'wpe'"});
  expectMutationError([](Json &d) { d["state"][4]["of"] = "nothing"; },
                      {"state 'wte.exp_avg'", "names no parameter"});
  expectMutationError(
      [](Json &d) { d["state"][0]["init"]["kind"] = "uniform"; },
      {"state[0]", "unknown value 'uniform'"});
}

TEST(ArtifactTest, EveryOpHasASignature) {
  for (const char *op : {"matmul", "layer_norm_grad", "adamw", "attention_grad",
                         "moe_combine", "cross_entropy_grad", "sum_squares",
                         "reshape", "dropout_grad", "broadcast", "microbatch",
                         "cast", "attention_block", "attention_block_grad",
                         "attention_merge", "rope_local", "rope_local_grad"})
    EXPECT_NE(lookupOp(op), nullptr) << op;
  EXPECT_EQ(lookupOp("call"), nullptr);
  size_t comm = 0;
  for (const OpSpec &op : allOps())
    comm += isCommOp(op.name);
  // tfm kernels: 42, 6 vocab_*, dropout_local, dropout_local_grad,
  // microbatch, cast, and the 5 of context parallelism (attention_block,
  // attention_block_grad, attention_merge, rope_local, rope_local_grad).
  EXPECT_EQ(allOps().size - comm, 57u);
  EXPECT_EQ(comm, 21u); // dist.*: 8 ops, 8 _start forms, wait, 4 local
}

} // namespace

TEST(ArtifactTest, MeshIndexWithPipelineInnermostGroupsAReplicasStages) {
  // Mesh [pp=2, dp=2]: rank = stage * 2 + replica. With pp innermost the
  // replica's two stages are consecutive: replica 0 = ranks 0, 2.
  autoshard::runtime::Mesh m;
  m.axes = {"pp", "dp"};
  m.sizes = {2, 2};
  EXPECT_EQ(m.indexWithAxisInnermost(0, "pp"), 0);
  EXPECT_EQ(m.indexWithAxisInnermost(2, "pp"), 1);
  EXPECT_EQ(m.indexWithAxisInnermost(1, "pp"), 2);
  EXPECT_EQ(m.indexWithAxisInnermost(3, "pp"), 3);
  // Already innermost, or no such axis: the rank itself.
  m.axes = {"dp", "pp"};
  for (int64_t r = 0; r < 4; ++r)
    EXPECT_EQ(m.indexWithAxisInnermost(r, "pp"), r);
  m.axes = {"dp", "tp"};
  EXPECT_EQ(m.indexWithAxisInnermost(3, "pp"), 3);
  // [pp=2, dp=2, tp=2]: (stage 1, dp 0, tp 1) = rank 5 -> (dp 0, tp 1,
  // stage 1) = 3.
  m.axes = {"pp", "dp", "tp"};
  m.sizes = {2, 2, 2};
  EXPECT_EQ(m.indexWithAxisInnermost(5, "pp"), 3);
}
