//===- SafetensorsTest.cpp - safetensors header layout and parsing --------===//

#include "autoshard/runtime/train/Safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

using namespace autoshard::runtime;

namespace {

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "/" + name;
}

/// Writes `layout`'s header and `dataBytes` zero bytes to `path`.
void writeFile(const std::string &path, const std::string &header,
               int64_t dataBytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << header << std::string(dataBytes, '\0');
}

/// A header of JSON text `json` (8-byte length prefix).
std::string rawHeader(const std::string &json) {
  std::string h(8, '\0');
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i)
    h[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return h + json;
}

std::string errorOf(const std::string &path) {
  try {
    readSafetensorsHeader(path);
  } catch (const SafetensorsError &e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, LayoutRoundTrips) {
  SafetensorsLayout l =
      layoutSafetensors({{"a", DType::F32, {2, 3}, 0, 0},
                         {"b.exp_avg", DType::BF16, {5}, 0, 0},
                         {"c", DType::I64, {}, 0, 0}},
                        {{"autoshard.step", "7"}, {"a", "{\"offset\":[0,4]}"}});
  EXPECT_EQ(l.dataStart() % 8, 0); // data 8-byte aligned
  EXPECT_EQ(l.tensors[0].begin, 0);
  EXPECT_EQ(l.tensors[0].end, 24);
  EXPECT_EQ(l.tensors[1].end, 34);
  EXPECT_EQ(l.tensors[2].end, 42);
  EXPECT_EQ(l.fileBytes, l.dataStart() + 42);
  std::string path = tempPath("roundtrip.safetensors");
  writeFile(path, l.header, 42);
  SafetensorsHeader h = readSafetensorsHeader(path);
  EXPECT_EQ(h.dataStart, l.dataStart());
  EXPECT_EQ(h.fileBytes, l.fileBytes);
  ASSERT_EQ(h.tensors.size(), 3u);
  EXPECT_EQ(h.at("b.exp_avg").dtype, DType::BF16);
  EXPECT_EQ(h.at("a").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(h.at("c").shape, std::vector<int64_t>{});
  EXPECT_EQ(h.metadata.at("autoshard.step"), "7");
  EXPECT_EQ(h.metadata.at("a"), "{\"offset\":[0,4]}");
  EXPECT_THROW(h.at("missing"), SafetensorsError);
}

TEST(Safetensors, LayoutRejectsDuplicateNames) {
  EXPECT_THROW(
      layoutSafetensors(
          {{"a", DType::F32, {1}, 0, 0}, {"a", DType::F32, {1}, 0, 0}}, {}),
      SafetensorsError);
  EXPECT_THROW(layoutSafetensors({{"__metadata__", DType::F32, {1}, 0, 0}}, {}),
               SafetensorsError);
}

TEST(Safetensors, ReaderNamesEveryDefect) {
  std::string p = tempPath("bad.safetensors");
  EXPECT_NE(errorOf(tempPath("does-not-exist")).find("cannot open"),
            std::string::npos);
  writeFile(p, "abc", 0);
  EXPECT_NE(errorOf(p).find("truncated"), std::string::npos);
  writeFile(p, rawHeader("{\"a\":1"), 0);
  EXPECT_NE(errorOf(p).find("not a JSON object"), std::string::npos);
  std::string h = rawHeader("{}");
  h[0] = static_cast<char>(200); // length past the file
  writeFile(p, h, 0);
  EXPECT_NE(errorOf(p).find("exceeds the file"), std::string::npos);
  writeFile(p,
            rawHeader("{\"w\":{\"dtype\":\"U8\",\"shape\":[2],\"data_"
                      "offsets\":[0,2]}}"),
            2);
  EXPECT_NE(errorOf(p).find("'U8'"), std::string::npos);
  writeFile(p,
            rawHeader("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_"
                      "offsets\":[0,4]}}"),
            4);
  EXPECT_NE(errorOf(p).find("needs 8"), std::string::npos);
  writeFile(p,
            rawHeader("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_"
                      "offsets\":[0,8]}}"),
            4); // data cut short
  EXPECT_NE(errorOf(p).find("truncated"), std::string::npos);
  writeFile(p,
            rawHeader("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_"
                      "offsets\":[0,8]},\"v\":{\"dtype\":\"F32\",\"shape\":[1],"
                      "\"data_offsets\":[4,8]}}"),
            8);
  EXPECT_NE(errorOf(p).find("overlap"), std::string::npos);
  writeFile(p, rawHeader("{\"w\":{\"dtype\":\"F32\"}}"), 0);
  EXPECT_NE(errorOf(p).find("tensor 'w'"), std::string::npos);
  std::remove(p.c_str());
}

} // namespace
