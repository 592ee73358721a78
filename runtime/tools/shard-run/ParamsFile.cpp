//===- ParamsFile.cpp - Final parameters as one safetensors file ----------===//

#include "ParamsFile.h"

#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/train/AtomicFile.h"
#include "autoshard/runtime/train/Safetensors.h"
#include "autoshard/runtime/train/StateGather.h"

#include <sstream>
#include <stdexcept>

namespace autoshard::shardrun {

using namespace autoshard::runtime;

namespace {

std::string jsonShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace

void checkWritablePath(const std::string &flag, const std::string &path) {
  // Nothing is created at `path` now: the file is written (atomically)
  // after the run, and an existing one stays intact should the run fail.
  try {
    checkCreatable(path);
  } catch (const std::runtime_error &e) {
    throw std::runtime_error(flag + ": " + e.what());
  }
}

void saveParams(const Executor &executor, const std::string &path,
                int64_t step) {
  const Artifact &art = executor.artifact();
  bool writer = executor.rank() == 0;

  std::ostringstream header;
  header << "{\"__metadata__\":{\"format\":\"autoshard-params\",\"step\":\""
         << step << "\"}";
  std::vector<unsigned char> data;
  for (const StateSpec &spec : art.state) {
    if (spec.kind != StateKind::Param)
      continue;
    std::vector<unsigned char> global = gatherState(executor, spec, writer);
    if (!writer)
      continue;
    if (spec.name.find_first_of("\"\\") != std::string::npos)
      throw ArtifactError("--save-params: parameter name '" + spec.name +
                          "' has a quote or backslash");
    int64_t begin = static_cast<int64_t>(data.size());
    data.insert(data.end(), global.begin(), global.end());
    header << ",\"" << spec.name << "\":{\"dtype\":\""
           << safetensorsDType(spec.type.dtype)
           << "\",\"shape\":" << jsonShape(spec.globalShape)
           << ",\"data_offsets\":[" << begin << "," << data.size() << "]}";
  }
  if (!writer)
    return;
  header << "}";
  std::string h = header.str();
  h.append((8 - h.size() % 8) % 8, ' '); // the data starts 8-byte aligned
  uint64_t n = h.size();
  unsigned char len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = static_cast<unsigned char>(n >> (8 * i));
  try {
    AtomicFile out(path);
    out.write(len, 8);
    out.write(h);
    out.write(data.data(), data.size());
    out.commit();
  } catch (const std::runtime_error &e) {
    throw std::runtime_error("--save-params: " + std::string(e.what()) + " ('" +
                             path + "' is unchanged)");
  }
}

} // namespace autoshard::shardrun
