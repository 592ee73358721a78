//===- Mesh.cpp - Device mesh coordinates, groups and shard blocks --------===//
//
// The rank arithmetic of docs/artifact-format.md ("Mesh and sharding"):
// row-major ranks, group index = coordinates on the group's axes (first
// axis major), shard block of a dim split over several axes.
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/Artifact.h"

namespace autoshard::runtime {

bool Sharding::isReplicated() const {
  for (const auto &axes : dims)
    if (!axes.empty())
      return false;
  return true;
}

std::string Sharding::str() const {
  std::string s = "[";
  for (size_t d = 0; d < dims.size(); ++d) {
    s += d ? ", [" : "[";
    for (size_t i = 0; i < dims[d].size(); ++i)
      s += (i ? ", " : "") + dims[d][i];
    s += "]";
  }
  return s + "]";
}

int64_t Mesh::numDevices() const {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return n;
}

int64_t Mesh::axisIndex(std::string_view axis) const {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] == axis)
      return static_cast<int64_t>(i);
  return -1;
}

std::vector<int64_t> Mesh::coords(int64_t rank) const {
  std::vector<int64_t> c(sizes.size());
  for (size_t i = sizes.size(); i-- > 0;) {
    c[i] = rank % sizes[i];
    rank /= sizes[i];
  }
  return c;
}

int64_t Mesh::groupSize(const std::vector<std::string> &group) const {
  int64_t n = 1;
  for (const std::string &axis : group)
    n *= sizes.at(axisIndex(axis));
  return n;
}

int64_t Mesh::indexInGroup(int64_t rank,
                           const std::vector<std::string> &group) const {
  std::vector<int64_t> c = coords(rank);
  int64_t index = 0;
  for (const std::string &axis : group) {
    int64_t a = axisIndex(axis);
    index = index * sizes[a] + c[a];
  }
  return index;
}

int64_t Mesh::indexWithAxisInnermost(int64_t rank,
                                     std::string_view axis) const {
  const int64_t inner = axisIndex(axis);
  if (inner < 0)
    return rank;
  std::vector<int64_t> c = coords(rank);
  int64_t index = 0;
  for (size_t a = 0; a < axes.size(); ++a)
    if (int64_t(a) != inner)
      index = index * sizes[a] + c[a];
  return index * sizes[size_t(inner)] + c[size_t(inner)];
}

int64_t Mesh::groupColor(int64_t rank,
                         const std::vector<std::string> &group) const {
  std::vector<int64_t> c = coords(rank);
  int64_t color = 0;
  for (size_t a = 0; a < axes.size(); ++a) {
    bool inGroup = false;
    for (const std::string &axis : group)
      inGroup |= axis == axes[a];
    if (!inGroup)
      color = color * sizes[a] + c[a];
  }
  return color;
}

int64_t Mesh::rankInGroup(int64_t rank, const std::vector<std::string> &group,
                          int64_t index) const {
  std::vector<int64_t> c = coords(rank);
  for (size_t i = group.size(); i-- > 0;) {
    int64_t a = axisIndex(group[i]);
    c[a] = index % sizes[a];
    index /= sizes[a];
  }
  int64_t r = 0;
  for (size_t a = 0; a < sizes.size(); ++a)
    r = r * sizes[a] + c[a];
  return r;
}

std::vector<int64_t> Mesh::blockIndex(const Sharding &sharding, int64_t rank,
                                      size_t tensorRank) const {
  std::vector<int64_t> blocks(tensorRank, 0);
  for (size_t d = 0; d < sharding.dims.size() && d < tensorRank; ++d)
    blocks[d] = indexInGroup(rank, sharding.dims[d]);
  return blocks;
}

std::vector<int64_t> Mesh::numBlocks(const Sharding &sharding,
                                     size_t tensorRank) const {
  std::vector<int64_t> n(tensorRank, 1);
  for (size_t d = 0; d < sharding.dims.size() && d < tensorRank; ++d)
    n[d] = groupSize(sharding.dims[d]);
  return n;
}

} // namespace autoshard::runtime
