//===- Safetensors.cpp - safetensors header layout and parsing ------------===//

#include "autoshard/runtime/train/Safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

namespace autoshard::runtime {

namespace {

constexpr int64_t kMaxHeaderBytes = 100'000'000; // the reference reader's cap

int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

} // namespace

std::string safetensorsDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::F64:
    return "F64";
  case DType::BF16:
    return "BF16";
  case DType::F16:
    return "F16";
  case DType::I32:
    return "I32";
  case DType::I64:
    return "I64";
  }
  throw SafetensorsError("unknown dtype");
}

DType parseSafetensorsDType(const std::string &name) {
  for (DType d : {DType::F32, DType::F64, DType::BF16, DType::F16, DType::I32,
                  DType::I64})
    if (safetensorsDType(d) == name)
      return d;
  throw SafetensorsError("dtype '" + name +
                         "' is not one of F32, F64, BF16, F16, I32, I64");
}

SafetensorsLayout
layoutSafetensors(std::vector<SafetensorsTensor> tensors,
                  const std::map<std::string, std::string> &metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  std::set<std::string> names;
  int64_t offset = 0;
  for (SafetensorsTensor &t : tensors) {
    if (t.name.empty() || t.name == "__metadata__")
      throw SafetensorsError("tensor name '" + t.name + "' is not allowed");
    if (!names.insert(t.name).second)
      throw SafetensorsError("tensor '" + t.name + "' is listed twice");
    t.begin = offset;
    t.end = offset + numel(t.shape) * dtypeSize(t.dtype);
    offset = t.end;
    header[t.name] = {{"dtype", safetensorsDType(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {t.begin, t.end}}};
  }
  std::string json = header.dump();
  json.append((8 - (json.size() + 8) % 8) % 8, ' ');
  uint64_t n = json.size();
  SafetensorsLayout layout;
  layout.header.resize(8);
  for (int i = 0; i < 8; ++i)
    layout.header[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  layout.header += json;
  layout.fileBytes = layout.dataStart() + offset;
  layout.tensors = std::move(tensors);
  return layout;
}

const SafetensorsTensor &SafetensorsHeader::at(const std::string &name) const {
  auto it = tensors.find(name);
  if (it == tensors.end())
    throw SafetensorsError("'" + path + "' has no tensor '" + name + "'");
  return it->second;
}

SafetensorsHeader readSafetensorsHeader(const std::string &path) {
  auto fail = [&](const std::string &what) -> SafetensorsError {
    return SafetensorsError("safetensors file '" + path + "': " + what);
  };
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    throw fail(std::string("cannot open: ") + std::strerror(errno));
  SafetensorsHeader h;
  h.path = path;
  h.fileBytes = static_cast<int64_t>(in.tellg());
  in.seekg(0);
  unsigned char len[8];
  if (h.fileBytes < 8 || !in.read(reinterpret_cast<char *>(len), 8))
    throw fail("truncated: " + std::to_string(h.fileBytes) +
               " bytes, shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(len[i]) << (8 * i);
  if (n > static_cast<uint64_t>(kMaxHeaderBytes) ||
      static_cast<int64_t>(n) > h.fileBytes - 8)
    throw fail("header length " + std::to_string(n) + " exceeds the file (" +
               std::to_string(h.fileBytes) + " bytes) or 100 MB");
  std::string json(n, '\0');
  if (!in.read(json.data(), static_cast<std::streamsize>(n)))
    throw fail("cannot read the header");
  h.dataStart = 8 + static_cast<int64_t>(n);
  nlohmann::json doc = nlohmann::json::parse(json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    throw fail("the header is not a JSON object");
  int64_t dataBytes = h.fileBytes - h.dataStart;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (auto &[name, v] : doc.items()) {
    if (name == "__metadata__") {
      if (!v.is_object())
        throw fail("__metadata__ is not an object");
      for (auto &[k, s] : v.items()) {
        if (!s.is_string())
          throw fail("__metadata__ value of '" + k + "' is not a string");
        h.metadata[k] = s.get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string &what) {
      return fail("tensor '" + name + "': " + what);
    };
    if (!v.is_object() || !v.contains("dtype") || !v["dtype"].is_string() ||
        !v.contains("shape") || !v["shape"].is_array() ||
        !v.contains("data_offsets") || !v["data_offsets"].is_array() ||
        v["data_offsets"].size() != 2)
      throw bad("needs dtype, shape and data_offsets [begin, end], found " +
                v.dump());
    SafetensorsTensor t;
    t.name = name;
    try {
      t.dtype = parseSafetensorsDType(v["dtype"].get<std::string>());
    } catch (const SafetensorsError &e) {
      throw bad(e.what());
    }
    for (const auto &d : v["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        throw bad("shape " + v["shape"].dump() + " has a dim that is not >= 0");
      t.shape.push_back(d.get<int64_t>());
    }
    for (const auto &o : v["data_offsets"])
      if (!o.is_number_integer() || o.get<int64_t>() < 0)
        throw bad("data_offsets " + v["data_offsets"].dump() +
                  " are not byte offsets");
    t.begin = v["data_offsets"][0].get<int64_t>();
    t.end = v["data_offsets"][1].get<int64_t>();
    int64_t expected = numel(t.shape) * dtypeSize(t.dtype);
    if (t.end - t.begin != expected)
      throw bad("data_offsets [" + std::to_string(t.begin) + ", " +
                std::to_string(t.end) + ") hold " +
                std::to_string(t.end - t.begin) + " bytes, but " +
                TensorType{t.dtype, t.shape}.str() + " needs " +
                std::to_string(expected));
    if (t.end > dataBytes)
      throw bad("data ends at byte " + std::to_string(t.end) +
                " of the data, but the file holds only " +
                std::to_string(dataBytes) + " data bytes (truncated?)");
    ranges.push_back({t.begin, t.end});
    h.tensors[name] = std::move(t);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      throw fail("two tensors overlap at data byte " +
                 std::to_string(ranges[i].first));
  return h;
}

} // namespace autoshard::runtime
