//===- StateGather.cpp - A state tensor gathered to its global shape ------===//

#include "autoshard/runtime/train/StateGather.h"

#include "autoshard/runtime/Communicator.h"

#include <cstring>

namespace autoshard::runtime {

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

bool needsGather(const Executor &executor, const StateSpec &spec) {
  CommContext *comm = executor.comm();
  int64_t worldSize = comm ? comm->world().size() : 1;
  return worldSize > 1 &&
         !(spec.sharding.isReplicated() && spec.stages.empty());
}

std::vector<unsigned char> gatherState(const Executor &executor,
                                       const StateSpec &spec, bool keep) {
  const Artifact &art = executor.artifact();
  CommContext *comm = executor.comm();
  int64_t worldSize = comm ? comm->world().size() : 1;
  // With a pipeline only some stages hold the tensor; the others send
  // zeros, which are not placed.
  std::vector<unsigned char> local =
      executor.holdsState(spec.name)
          ? executor.readState(spec.name)
          : std::vector<unsigned char>(spec.type.bytes(), 0);
  if (!needsGather(executor, spec))
    return keep ? local : std::vector<unsigned char>();
  // Every rank's block, in world-rank order (the all-axes group is
  // numbered row-major over the mesh, i.e. by world rank).
  int64_t bytes = static_cast<int64_t>(local.size());
  std::vector<unsigned char> all(bytes * worldSize);
  comm->all().allGather(local.data(), all.data(), bytes)->wait();
  if (!keep)
    return {};
  int64_t elem = dtypeSize(spec.type.dtype);
  int64_t numel = 1;
  for (int64_t d : spec.globalShape)
    numel *= d;
  std::vector<unsigned char> global(numel * elem, 0);
  const std::vector<int64_t> &shape = spec.type.shape;
  for (int64_t r = 0; r < worldSize; ++r) {
    if (!spec.heldBy(art.pipelineStage(r)))
      continue;
    std::vector<int64_t> block =
        art.mesh.blockIndex(spec.sharding, r, shape.size());
    for (size_t d = 0; d < shape.size(); ++d)
      block[d] *= shape[d];
    placeBlock(global.data(), spec.globalShape, all.data() + r * bytes, shape,
               block, elem);
  }
  return global;
}

} // namespace autoshard::runtime
