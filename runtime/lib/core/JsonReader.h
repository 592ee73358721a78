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
  /// The `dtype` and `shape` fields.
  TensorType tensorType() const;

private:
  const Json &value;
  std::string source;
  std::string where;
};

} // namespace autoshard::runtime::detail

#endif // AUTOSHARD_RUNTIME_LIB_CORE_JSONREADER_H
