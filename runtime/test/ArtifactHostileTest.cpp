//===- ArtifactHostileTest.cpp - Bad artifacts fail clearly, never run ----===//
//
// Hostile or corrupted artifacts (issue 19 item 5): JSON nested too deep or
// too large, programs that read memory nothing wrote or never write an
// output, a content checksum that does not match, version labels whose
// required fields are missing, absurd sizes, and optimizer attributes out
// of range. Each must end with an ArtifactError naming the problem.
//
//===----------------------------------------------------------------------===//

#include "ArtifactTestUtil.h"

#include "autoshard/runtime/CpuBackend.h"
#include "autoshard/runtime/Executor.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>

using namespace autoshard::runtime;
using namespace autoshard::runtime::test;
using Json = nlohmann::json;

namespace {

void expectTextError(const std::string &text,
                     std::initializer_list<std::string> needles) {
  expectArtifactError(text, "hostile.json", needles);
}

void expectError(const Json &doc, std::initializer_list<std::string> needles) {
  expectTextError(doc.dump(), needles);
}

/// `doc` as a version-5 document with its correct checksum, as rt-export
/// writes it (indented, keys sorted).
std::string withChecksum(Json doc) {
  doc["version"] = 5;
  doc["checksum"] = "xxh3-64:0000000000000000";
  std::string text = doc.dump(1);
  size_t value = text.find("\"checksum\": \"") + 13;
  std::string sum = artifactChecksum(text, value);
  text.replace(value, sum.size(), sum);
  return text;
}

Json tinyDp2Json() {
  std::ifstream in(std::string(AUTOSHARD_TEST_DATA_DIR) + "/tiny-dp2.json");
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str());
}

TEST(ArtifactHostile, DeepNestingIsRefusedBeforeParsing) {
  // The reproducer: 52,400 nested arrays crashed the loader.
  std::string deep(52400, '[');
  deep += std::string(52400, ']');
  expectTextError(
      deep, {"hostile.json", "deeper than 64 levels", "at byte 64, line 1"});
  // Inside a valid artifact, in an attribute.
  std::string nested = std::string(100, '[') + std::string(100, ']');
  Json doc = tinyArtifactJson();
  std::string text = doc.dump();
  text.insert(text.size() - 1, ",\"junk\":" + nested);
  expectTextError(text, {"deeper than 64 levels"});
  // Brackets inside strings do not count.
  doc["producer"] = std::string(1000, '[');
  EXPECT_NO_THROW(parseArtifact(doc.dump(), "strings.json"));
}

TEST(ArtifactHostile, NumbersTheParserCannotHoldAreAnError) {
  // Found by artifact-fuzz: nlohmann throws out_of_range (406), not a
  // parse_error, for a number past double's range; it aborted the loader.
  expectTextError("1e999", {"hostile.json", "1e999"});
  Json doc = tinyArtifactJson();
  std::string text = doc.dump();
  text.insert(text.size() - 1, ",\"junk\":-1e999");
  expectTextError(text, {"hostile.json"});
}

TEST(ArtifactHostile, OversizedFileIsRefusedBeforeReading) {
  std::string path = ::testing::TempDir() + "/huge-artifact.json";
  std::FILE *f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(::ftruncate(fileno(f), kMaxArtifactBytes + 1), 0); // sparse
  std::fclose(f);
  try {
    loadArtifact(path);
    ADD_FAILURE() << "expected an ArtifactError";
  } catch (const ArtifactError &e) {
    EXPECT_NE(std::string(e.what()).find("has 1073741825 bytes, more than"),
              std::string::npos)
        << e.what();
  }
  std::remove(path.c_str());
}

TEST(ArtifactHostile, ReadsOfUnwrittenBuffersAreRejected) {
  // A deleted matmul: the add reads its result.
  Json doc = tinyArtifactJson();
  jsonFunction(doc, "block")["code"].erase(1);
  expectError(doc, {"function 'block', instruction 1 ('add')",
                    "reads buffer 6 (f32[2, 4, 4])",
                    "no earlier instruction of function 'block' writes it"});
  // A deleted matmul_wgrad: the wte gradient the add accumulates into.
  doc = tinyArtifactJson();
  jsonFunction(doc, "train_step")["code"].erase(5);
  expectError(
      doc, {"function 'train_step', instruction 8 ('add')", "reads buffer 27"});
  // A deleted reduction (sum_squares): clip_coef reads its result.
  doc = tinyArtifactJson();
  jsonFunction(doc, "train_step")["code"].erase(10);
  expectError(doc, {"instruction 10 ('clip_coef')", "reads buffer 34"});
  // Through a call: block_bwd writes arguments 5..8, the gradients; the
  // caller's block_bwd call deleted, the embedding_grad reads one.
  doc = tinyArtifactJson();
  jsonFunction(doc, "train_step")["code"].erase(7);
  expectError(doc, {"function 'train_step', instruction 7 ('embedding_grad')",
                    "reads buffer 29"});
  // A callee that reads an argument before writing it makes the caller
  // pass a written buffer: the call to block passes the output it writes
  // (fine), but an unwritten local as the input it reads is not.
  doc = tinyArtifactJson();
  jsonFunction(doc, "train_step")["code"].erase(0); // the embedding
  expectError(doc, {"function 'train_step', instruction 0 ('call')",
                    "passes buffer 19", "as argument 0, which 'block' reads"});
}

TEST(ArtifactHostile, EntriesMustWriteTheirOutputs) {
  Json doc = tinyArtifactJson();
  jsonFunction(doc, "eval")["code"] = Json::array();
  expectError(doc, {"entry 'eval'", "output 'loss' (buffer",
                    "is never written by function 'eval' (0 instructions)"});
  doc = tinyArtifactJson();
  jsonFunction(doc, "train_step")["code"].erase(11); // clip_coef: grad_norm
  // (its result feeds the adamw steps too: the first read is reported)
  expectError(doc, {"function 'train_step', instruction 11 ('adamw')",
                    "reads buffer 35"});
  // The logits entry without its last matmul.
  doc = tinyArtifactJson();
  jsonFunction(doc, "logits")["code"].erase(2);
  expectError(doc, {"entry 'logits'", "output 'logits'"});
}

TEST(ArtifactHostile, ChecksumIsVerified) {
  Json doc = tinyArtifactJson();
  std::string good = withChecksum(doc);
  Artifact a = parseArtifact(good, "good.json");
  EXPECT_EQ(a.version, 5);
  // One byte of content changed (the epsilon of a layer norm).
  std::string bad = good;
  size_t at = bad.find("1e-05");
  ASSERT_NE(at, std::string::npos);
  bad[at + 4] = '6';
  expectTextError(
      bad, {"field 'checksum' is xxh3-64:",
            "but the content hashes to xxh3-64:", "corrupted or edited"});
  // The checksum itself damaged.
  bad = good;
  at = bad.find("xxh3-64:") + 8;
  bad[at] = bad[at] == '0' ? '1' : '0';
  expectTextError(bad, {"field 'checksum' is xxh3-64:"});
  // Malformed, missing, or in a version before 5.
  Json v5 = Json::parse(good);
  v5["checksum"] = "crc32:1234";
  expectError(v5, {"field 'checksum' must be \"xxh3-64:\" and 16 lowercase"});
  v5.erase("checksum");
  expectError(v5, {"missing field 'checksum'"});
  doc["version"] = 4;
  doc["checksum"] = "xxh3-64:0000000000000000";
  expectError(doc, {"field 'checksum' needs format version 5 or later",
                    "says version 4"});
}

TEST(ArtifactHostile, EachVersionsRequiredFields) {
  // A 2-rank (version 2) artifact relabelled version 1.
  Json doc = tinyDp2Json();
  doc["version"] = 1;
  expectError(doc, {"field 'world_size' is 2",
                    "a version-1 artifact is a single-device program"});
  // Version 3 is a pipelined program; version 4 one in zig-zag order.
  doc = tinyDp2Json();
  doc["version"] = 3;
  expectError(doc, {"field 'version' is 3", "no entry has a 'pp_stage'"});
  doc["version"] = 4;
  expectError(doc, {"field 'version' is 4", "'zigzag_chunks'"});
  // A field of a later version in an earlier one.
  doc = tinyDp2Json();
  doc["entries"]["eval"]["pp_stage"] = 0;
  expectError(doc, {"entry 'eval'", "field 'pp_stage' needs format version 3",
                    "says version 2"});
  doc = tinyDp2Json();
  doc["memory"]["stages"] = Json::array();
  expectError(doc, {"memory", "field 'stages' needs format version 3"});
  // The version message names the range read.
  doc["version"] = 6;
  expectError(doc,
              {"field 'version' is 6", "this runtime reads versions 1 to 5"});
}

TEST(ArtifactHostile, AbsurdSizesAreRefused) {
  Json doc = tinyArtifactJson();
  doc["model"]["padded_vocab_size"] = int64_t(1) << 40;
  expectError(doc, {"model", "field 'padded_vocab_size' is 1099511627776",
                    "more than 2147483647 (token ids are i32)"});
  doc = tinyArtifactJson();
  doc["model"]["batch"] = int64_t(1) << 40;
  expectError(doc, {"field 'batch' times 'seq'"});
  // A shape whose byte size overflows int64 (2^62 x 4 x 4 bytes).
  doc = tinyArtifactJson();
  doc["state"][0]["shape"] = {int64_t(1) << 62, 4};
  expectError(doc, {"state[0]", "field 'shape' [4611686018427387904,4] of f32",
                    "more than 2^48 bytes"});
  doc = tinyArtifactJson();
  jsonFunction(doc, "block")["buffers"][5]["shape"] = std::vector<int>(17, 1);
  expectError(doc, {"function 'block', buffer 5",
                    "field 'shape' has 17 dims, more than 16"});
  doc = tinyArtifactJson();
  jsonFunction(doc, "block")["num_args"] = int64_t(1) << 40;
  expectError(doc, {"function 'block'", "field 'num_args' is 1099511627776",
                    "has only 7 buffers"});
}

TEST(ArtifactHostile, OptimizerAttributesAreRangeChecked) {
  struct Case {
    const char *attr;
    double value;
    const char *message;
  };
  for (const Case &c :
       {Case{"beta2", -0.99,
             "attribute 'beta2' must be in [0, 1), found -0.99"},
        Case{"beta1", 1.0, "attribute 'beta1' must be in [0, 1), found 1"},
        Case{"epsilon", 0.0, "attribute 'epsilon' must be finite and > 0"},
        Case{"weight_decay", -0.1,
             "attribute 'weight_decay' must be finite and >= 0, found -0.1"}}) {
    Json doc = tinyArtifactJson();
    jsonFunction(doc, "train_step")["code"][13]["attrs"][c.attr] = c.value;
    Artifact a = parseArtifact(doc.dump(), "adamw.json");
    CpuBackend backend;
    try {
      Executor ex(a, backend);
      ADD_FAILURE() << "expected an ArtifactError for " << c.attr;
    } catch (const ArtifactError &e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("instruction 13 ('adamw')"), std::string::npos) << msg;
      EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
    }
  }
  Json doc = tinyArtifactJson();
  jsonFunction(doc, "train_step")["code"][11]["attrs"]["max_norm"] = -1.0;
  Artifact a = parseArtifact(doc.dump(), "clip.json");
  CpuBackend backend;
  EXPECT_THROW(Executor(a, backend), ArtifactError);
}

} // namespace
