//===- ParamsFile.cpp - Final parameters as one safetensors file ----------===//

#include "ParamsFile.h"

#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/train/Safetensors.h"
#include "autoshard/runtime/train/StateGather.h"

#include <cerrno>
#include <cstring>
#include <fstream>
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
  // Opening for append creates the file (rewritten at the end) and leaves
  // an existing one intact should the run fail.
  std::ofstream probe(path, std::ios::binary | std::ios::app);
  if (!probe)
    throw std::runtime_error(flag + ": cannot write '" + path +
                             "': " + std::strerror(errno));
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
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(len), 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  out.write(reinterpret_cast<const char *>(data.data()),
            static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out)
    throw std::runtime_error("--save-params: writing '" + path +
                             "' failed: " + std::strerror(errno));
}

} // namespace autoshard::shardrun
