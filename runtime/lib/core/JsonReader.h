//===- JsonReader.h - Checked access to artifact JSON -----------*- C++ -*-===//
//
// A JSON value plus the place it came from, with typed field getters that
// throw ArtifactError naming the artifact, the place, the field and the value
// found ("artifact 'a.json': function 'f', buffer 3: field 'offset' must be
// an integer >= 0, found -8").
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_LIB_CORE_JSONREADER_H
#define AUTOSHARD_RUNTIME_LIB_CORE_JSONREADER_H

#include "autoshard/runtime/Artifact.h"

#include <nlohmann/json.hpp>

#include <string>

namespace autoshard::runtime::detail {

using Json = nlohmann::json;

/// The deepest nesting of arrays and objects an artifact may have (a real
/// one is about 8 deep: top level, functions, code, attrs, a list).
inline constexpr int kMaxJsonDepth = 64;

/// The most dims and bytes a tensor of an artifact may have.
inline constexpr int kMaxTensorRank = 16;
inline constexpr int64_t kMaxTensorBytes = int64_t(1) << 48;

/// What scanJson found besides the document being shallow enough.
struct JsonScan {
  /// Byte offset of the first character inside the quotes of the string
  /// value of the top-level field "checksum" (the last one, as the parser
  /// keeps the last of repeated keys), or -1 when there is none.
  int64_t checksumValue = -1;
};

/// One pass over `text` before it is parsed: throws ArtifactError naming
/// `source`, the byte offset and the line when arrays and objects nest
/// deeper than kMaxJsonDepth (the parser and the error messages recurse on
/// nesting, so a hostile document must not reach them), and locates the
/// top-level "checksum" value. Does not validate the JSON otherwise.
JsonScan scanJson(std::string_view text, const std::string &source);

/// Short rendering of a JSON value for error messages.
std::string describe(const Json &value);

/// A JSON object or value at a named place of the artifact.
class JsonReader {
public:
  JsonReader(const Json &value, std::string source, std::string where)
      : value(value), source(std::move(source)), where(std::move(where)) {}

  /// Throws ArtifactError("artifact 'SRC': WHERE: message").
  [[noreturn]] void fail(const std::string &message) const;
  /// Same, about field `name`.
  [[noreturn]] void failField(std::string_view name,
                              const std::string &message) const;

  const Json &json() const { return value; }
  const std::string &place() const { return where; }
  /// A reader for another place of the same artifact.
  JsonReader at(const Json &child, std::string place) const {
    return JsonReader(child, source, std::move(place));
  }

  bool has(std::string_view name) const;
  /// The field `name`; throws if this is not an object or it is missing.
  const Json &field(std::string_view name) const;
  int64_t i64(std::string_view name) const;
  /// An integer field >= `min`.
  int64_t i64AtLeast(std::string_view name, int64_t min) const;
  double f64(std::string_view name) const;
  bool boolean(std::string_view name) const;
  std::string str(std::string_view name) const;
  /// A field that must be a JSON array / object.
  const Json &array(std::string_view name) const;
  const Json &object(std::string_view name) const;
  /// The `dtype` and `shape` fields; at most kMaxTensorRank dims and
  /// kMaxTensorBytes bytes.
  TensorType tensorType() const;

private:
  const Json &value;
  std::string source;
  std::string where;
};

} // namespace autoshard::runtime::detail

#endif // AUTOSHARD_RUNTIME_LIB_CORE_JSONREADER_H
