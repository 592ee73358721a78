//===- ParamsFile.cpp - Final parameters as one safetensors file ----------===//

#include "ParamsFile.h"

#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/train/Safetensors.h"

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

/// Copies the row-major `block` (of `local` shape) into the row-major
/// `global` tensor at element offsets `origin`, `elem` bytes per element.
void placeBlock(unsigned char *global, const std::vector<int64_t> &globalShape,
                const unsigned char *block, const std::vector<int64_t> &local,
                const std::vector<int64_t> &origin, int64_t elem) {
  size_t rank = local.size();
  if (rank == 0) {
    std::memcpy(global, block, elem);
    return;
  }
  // Copy contiguous rows of the innermost dim, walking the outer dims.
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d)
    rows *= local[d];
  int64_t rowBytes = local[rank - 1] * elem;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t g = 0;
    for (size_t d = 0; d < rank; ++d)
      g = g * globalShape[d] + origin[d] + (d + 1 < rank ? idx[d] : 0);
    std::memcpy(global + g * elem, block + r * rowBytes, rowBytes);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < local[d])
        break;
      idx[d] = 0;
    }
  }
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
  CommContext *comm = executor.comm();
  int64_t worldSize = comm ? comm->world().size() : 1;
  bool writer = executor.rank() == 0;

  std::ostringstream header;
  header << "{\"__metadata__\":{\"format\":\"autoshard-params\",\"step\":\""
         << step << "\"}";
  std::vector<unsigned char> data;
  for (const StateSpec &spec : art.state) {
    if (spec.kind != StateKind::Param)
      continue;
    int64_t elem = dtypeSize(spec.type.dtype);
    // With a pipeline only some stages hold the tensor; the others send
    // zeros, which are not placed.
    std::vector<unsigned char> local =
        executor.holdsState(spec.name)
            ? executor.readState(spec.name)
            : std::vector<unsigned char>(spec.type.bytes(), 0);
    std::vector<unsigned char> global;
    if (worldSize == 1 ||
        (spec.sharding.isReplicated() && spec.stages.empty())) {
      global = std::move(local);
    } else {
      // Every rank's block, in world-rank order (the all-axes group is
      // numbered row-major over the mesh, i.e. by world rank).
      int64_t bytes = static_cast<int64_t>(local.size());
      std::vector<unsigned char> all(bytes * worldSize);
      comm->all().allGather(local.data(), all.data(), bytes)->wait();
      int64_t numel = 1;
      for (int64_t d : spec.globalShape)
        numel *= d;
      global.assign(numel * elem, 0);
      const std::vector<int64_t> &shape = spec.type.shape;
      for (int64_t r = 0; r < worldSize; ++r) {
        if (!spec.heldBy(art.pipelineStage(r)))
          continue;
        std::vector<int64_t> block =
            art.mesh.blockIndex(spec.sharding, r, shape.size());
        for (size_t d = 0; d < shape.size(); ++d)
          block[d] *= shape[d];
        placeBlock(global.data(), spec.globalShape, all.data() + r * bytes,
                   shape, block, elem);
      }
    }
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
