//===- ArtifactFuzz.cpp - libFuzzer target: the runtime's artifact loader -===//
//
// One input = the text of a model.json. It goes through the runtime's
// loader (autoshard::runtime::parseArtifact: JSON parse, then every
// structural and per-kernel check), linked as it is in shard-run. An
// ArtifactError is the loader's documented answer to a bad artifact; any
// other exception, a crash, an ASan report, a timeout or running out of
// memory is a bug. scripts/fuzz.sh builds and runs it (seed corpus: the
// artifacts the compiler writes for the test models under several plans).
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/Artifact.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    autoshard::runtime::parseArtifact(
        std::string_view(reinterpret_cast<const char *>(data), size),
        "fuzz.json");
  } catch (const autoshard::runtime::ArtifactError &) {
  }
  return 0;
}
