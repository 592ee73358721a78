//===- ArtifactTestUtil.h - The hand-written test artifact ------*- C++ -*-===//

#ifndef AUTOSHARD_RUNTIME_TEST_ARTIFACTTESTUTIL_H
#define AUTOSHARD_RUNTIME_TEST_ARTIFACTTESTUTIL_H

#include "autoshard/runtime/Artifact.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>

namespace autoshard::runtime::test {

/// Path of runtime/test/data/tiny.json.
inline std::string tinyArtifactPath() {
  return std::string(AUTOSHARD_TEST_DATA_DIR) + "/tiny.json";
}

/// The tiny artifact as JSON, to be mutated by error tests.
inline nlohmann::json tinyArtifactJson() {
  std::ifstream in(tinyArtifactPath());
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

/// Index of function `name` in the JSON document.
inline nlohmann::json &jsonFunction(nlohmann::json &doc,
                                    const std::string &name) {
  for (nlohmann::json &f : doc["functions"])
    if (f["name"] == name)
      return f;
  throw std::runtime_error("no function " + name);
}

/// Parses artifact `text` (named `source`) and expects an ArtifactError
/// whose message contains every string of `needles`.
inline void expectArtifactError(const std::string &text,
                                const std::string &source,
                                std::initializer_list<std::string> needles) {
  try {
    parseArtifact(text, source);
    ADD_FAILURE() << "expected an ArtifactError";
  } catch (const ArtifactError &e) {
    std::string msg = e.what();
    for (const std::string &n : needles)
      EXPECT_NE(msg.find(n), std::string::npos)
          << "message lacks '" << n << "': " << msg;
  }
}

} // namespace autoshard::runtime::test

#endif // AUTOSHARD_RUNTIME_TEST_ARTIFACTTESTUTIL_H
