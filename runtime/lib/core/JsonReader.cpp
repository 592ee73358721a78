//===- JsonReader.cpp - Checked access to artifact JSON -------------------===//

#include "JsonReader.h"

namespace autoshard::runtime::detail {

JsonScan scanJson(std::string_view text, const std::string &source) {
  JsonScan scan;
  // Per open container: whether it is an object (keys at depth 1 matter).
  char stack[kMaxJsonDepth];
  int depth = 0;
  // After a top-level key "checksum" and its ':' the next string is its
  // value.
  enum { None, SawKey, SawColon } checksum = None;
  int64_t line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (c == '"') {
      size_t begin = i + 1;
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i; // the escaped character (an escaped quote does not end it)
      std::string_view token = text.substr(begin, i - begin);
      if (checksum == SawColon)
        scan.checksumValue = static_cast<int64_t>(begin);
      checksum = depth == 1 && stack[0] == '{' && checksum != SawColon &&
                         token == "checksum"
                     ? SawKey
                     : None;
      continue;
    } else if (c == ':') {
      if (checksum == SawKey)
        checksum = SawColon;
      continue;
    } else if (c == '{' || c == '[') {
      if (depth == kMaxJsonDepth)
        throw ArtifactError("artifact '" + source +
                            "': JSON nests arrays and objects deeper than " +
                            std::to_string(kMaxJsonDepth) +
                            " levels (at byte " + std::to_string(i) +
                            ", line " + std::to_string(line) +
                            "); an artifact is a few levels deep");
      stack[depth++] = c;
    } else if (c == '}' || c == ']') {
      if (depth > 0)
        --depth;
    }
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
      checksum = None;
  }
  return scan;
}

std::string describe(const Json &value) {
  std::string s = value.dump();
  constexpr size_t kMax = 60;
  if (s.size() > kMax)
    s = s.substr(0, kMax) + "...";
  return s;
}

void JsonReader::fail(const std::string &message) const {
  throw ArtifactError("artifact '" + source + "': " + where + ": " + message);
}

void JsonReader::failField(std::string_view name,
                           const std::string &message) const {
  fail("field '" + std::string(name) + "' " + message);
}

bool JsonReader::has(std::string_view name) const {
  return value.is_object() && value.contains(name);
}

const Json &JsonReader::field(std::string_view name) const {
  if (!value.is_object())
    fail("expected a JSON object, found " + describe(value));
  auto it = value.find(name);
  if (it == value.end())
    fail("missing field '" + std::string(name) + "'");
  return *it;
}

int64_t JsonReader::i64(std::string_view name) const {
  const Json &v = field(name);
  if (!v.is_number_integer() ||
      (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX))
    failField(name, "must be an integer, found " + describe(v));
  return v.get<int64_t>();
}

int64_t JsonReader::i64AtLeast(std::string_view name, int64_t min) const {
  int64_t v = i64(name);
  if (v < min)
    failField(name, "must be >= " + std::to_string(min) + ", found " +
                        std::to_string(v));
  return v;
}

double JsonReader::f64(std::string_view name) const {
  const Json &v = field(name);
  if (!v.is_number())
    failField(name, "must be a number, found " + describe(v));
  return v.get<double>();
}

bool JsonReader::boolean(std::string_view name) const {
  const Json &v = field(name);
  if (!v.is_boolean())
    failField(name, "must be true or false, found " + describe(v));
  return v.get<bool>();
}

std::string JsonReader::str(std::string_view name) const {
  const Json &v = field(name);
  if (!v.is_string())
    failField(name, "must be a string, found " + describe(v));
  return v.get<std::string>();
}

const Json &JsonReader::array(std::string_view name) const {
  const Json &v = field(name);
  if (!v.is_array())
    failField(name, "must be a list, found " + describe(v));
  return v;
}

const Json &JsonReader::object(std::string_view name) const {
  const Json &v = field(name);
  if (!v.is_object())
    failField(name, "must be an object, found " + describe(v));
  return v;
}

TensorType JsonReader::tensorType() const {
  TensorType t;
  std::string name = str("dtype");
  std::optional<DType> dtype = parseDType(name);
  if (!dtype)
    failField("dtype", "has unknown dtype '" + name +
                           "' (expected f32, f64, bf16, f16, i32 or i64)");
  t.dtype = *dtype;
  for (const Json &d : array("shape")) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      failField("shape",
                "must list integers >= 0, found " + describe(field("shape")));
    t.shape.push_back(d.get<int64_t>());
  }
  // Bounded so that element counts, byte sizes and offsets cannot
  // overflow int64 anywhere downstream (no device holds 2^48 bytes).
  if (t.shape.size() > static_cast<size_t>(kMaxTensorRank))
    failField("shape", "has " + std::to_string(t.shape.size()) +
                           " dims, more than " +
                           std::to_string(kMaxTensorRank));
  int64_t bytes = dtypeSize(t.dtype);
  for (int64_t d : t.shape) {
    if (d != 0 && bytes > kMaxTensorBytes / d)
      failField("shape", describe(field("shape")) + " of " + name +
                             " is more than 2^48 bytes");
    bytes *= d;
  }
  return t;
}

} // namespace autoshard::runtime::detail
