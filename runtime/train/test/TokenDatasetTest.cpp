//===- TokenDatasetTest.cpp - Prepared token directories ------------------===//

#include "autoshard/runtime/train/TokenDataset.h"
#include "autoshard/runtime/train/CharDataset.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace autoshard::runtime;
namespace fs = std::filesystem;

namespace {

/// Writes a prepared directory for `text` with the character tokenizer, as
/// `python -m autoshard.data prepare --tokenizer char` does.
fs::path writeCharDir(const std::string &name, const std::string &text,
                      const std::string &dtype = "uint16") {
  fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  CharVocab v = CharVocab::fromText(text);
  size_t nTrain = static_cast<size_t>(double(text.size()) * 0.9);
  int elem = dtype == "uint16" ? 2 : 4;
  auto write = [&](const std::string &file, size_t begin, size_t end) {
    std::ofstream f(dir / file, std::ios::binary);
    for (size_t i = begin; i < end; ++i) {
      uint32_t id = static_cast<uint32_t>(v.encode(text[i]));
      f.write(reinterpret_cast<const char *>(&id), elem); // little-endian
    }
  };
  write("train.bin", 0, nTrain);
  write("val.bin", nTrain, text.size());
  nlohmann::json bytes = nlohmann::json::array();
  for (int32_t i = 0; i < v.size(); ++i) {
    char buf[3];
    std::snprintf(buf, sizeof(buf), "%02x",
                  static_cast<unsigned char>(v.decode(i)));
    bytes.push_back(buf);
  }
  nlohmann::json meta = {
      {"format", "autoshard-tokens"},
      {"version", 1},
      {"tokenizer", {{"kind", "char"}, {"spec", "char"}, {"eot_id", nullptr}}},
      {"vocab_size", v.size()},
      {"dtype", dtype},
      {"train", {{"file", "train.bin"}, {"tokens", nTrain}}},
      {"val", {{"file", "val.bin"}, {"tokens", text.size() - nTrain}}},
      {"token_bytes", bytes}};
  std::ofstream(dir / "meta.json") << meta.dump(1);
  return dir;
}

std::string sampleText() {
  std::string text;
  for (int i = 0; i < 5000; ++i)
    text.push_back(i % 61 == 0 ? '\n' : char('a' + (i * 31 + i / 7) % 26));
  return text;
}

void editMeta(const fs::path &dir,
              const std::function<void(nlohmann::json &)> &edit) {
  nlohmann::json m;
  std::ifstream(dir / "meta.json") >> m;
  edit(m);
  std::ofstream(dir / "meta.json") << m.dump();
}

std::string errorOf(const fs::path &dir) {
  try {
    TokenDataset::open(dir.string());
  } catch (const DataError &e) {
    return e.what();
  }
  return "";
}

TEST(TokenDataset, SameBatchesAsTheTextFile) {
  std::string text = sampleText();
  CharDataset c = CharDataset::fromText(text);
  for (const char *dtype : {"uint16", "uint32"}) {
    TokenDataset t = TokenDataset::open(
        writeCharDir(std::string("same-") + dtype, text, dtype).string());
    EXPECT_EQ(t.vocabSize(), c.vocabSize());
    EXPECT_EQ(t.tokenCount(Split::Train), c.tokenCount(Split::Train));
    EXPECT_EQ(t.tokenCount(Split::Val), c.tokenCount(Split::Val));
    const int64_t seq = 16, rows = 8;
    for (Split s : {Split::Train, Split::Val}) {
      std::vector<int32_t> a(rows * seq), al(rows * seq), b(rows * seq),
          bl(rows * seq);
      c.batch(s, 7, 3, seq, 0, rows, a.data(), al.data());
      t.batch(s, 7, 3, seq, 0, rows, b.data(), bl.data());
      EXPECT_EQ(a, b);
      EXPECT_EQ(al, bl);
    }
    EXPECT_EQ(t.decode(c.vocab().encode('q')), "q");
    EXPECT_EQ(t.sampleStart(), c.sampleStart()); // the newline
    EXPECT_FALSE(t.eotId().has_value());
  }
}

TEST(TokenDataset, OpenDatasetPicksTheKind) {
  std::string text = sampleText();
  fs::path dir = writeCharDir("pick", text);
  EXPECT_NE(dynamic_cast<TokenDataset *>(openDataset(dir.string()).get()),
            nullptr);
  std::ofstream(dir / "plain.txt") << text;
  EXPECT_NE(dynamic_cast<CharDataset *>(
                openDataset((dir / "plain.txt").string()).get()),
            nullptr);
}

TEST(TokenDataset, BadDirectories) {
  std::string text = sampleText();
  fs::path dir = writeCharDir("bad", text);
  // Truncated token file.
  fs::resize_file(dir / "train.bin", fs::file_size(dir / "train.bin") - 3);
  std::string e = errorOf(dir);
  EXPECT_NE(e.find("train.bin"), std::string::npos) << e;
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;

  dir = writeCharDir("bad", text);
  fs::remove(dir / "meta.json");
  EXPECT_NE(errorOf(dir).find("has no meta.json"), std::string::npos);

  dir = writeCharDir("bad", text);
  editMeta(dir, [](nlohmann::json &m) { m["dtype"] = "int8"; });
  EXPECT_NE(errorOf(dir).find("dtype \"int8\""), std::string::npos);

  dir = writeCharDir("bad", text);
  editMeta(dir, [](nlohmann::json &m) { m["version"] = 9; });
  EXPECT_NE(errorOf(dir).find("version 9 is newer"), std::string::npos);

  dir = writeCharDir("bad", text);
  editMeta(dir, [](nlohmann::json &m) { m["token_bytes"].erase(0); });
  EXPECT_NE(errorOf(dir).find("token_bytes has"), std::string::npos);

  dir = writeCharDir("bad", text);
  editMeta(dir, [](nlohmann::json &m) { m.erase("train"); });
  EXPECT_NE(errorOf(dir).find("field 'train' is missing"), std::string::npos);

  dir = writeCharDir("bad", text);
  editMeta(dir, [](nlohmann::json &m) { m["train"]["file"] = "../x.bin"; });
  EXPECT_NE(errorOf(dir).find("must be a file name"), std::string::npos);

  // An id outside the vocabulary fails when a window reads it.
  dir = writeCharDir("bad", text);
  {
    std::fstream f(dir / "val.bin",
                   std::ios::in | std::ios::out | std::ios::binary);
    uint16_t big = 60000;
    f.write(reinterpret_cast<const char *>(&big), 2);
  }
  TokenDataset t = TokenDataset::open(dir.string());
  std::vector<int32_t> out(4);
  try {
    t.read(Split::Val, 0, 4, out.data());
    ADD_FAILURE() << "no error for id 60000";
  } catch (const DataError &err) {
    EXPECT_NE(std::string(err.what()).find("id 60000"), std::string::npos);
  }
  // The model must cover the vocabulary.
  try {
    t.validate(16, t.vocabSize() - 1);
    ADD_FAILURE() << "no error for a model vocabulary below the data's";
  } catch (const DataError &err) {
    EXPECT_NE(std::string(err.what()).find("does not cover"),
              std::string::npos);
  }
}

} // namespace
