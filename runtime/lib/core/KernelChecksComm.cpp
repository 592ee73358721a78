//===- KernelChecksComm.cpp - Operand checks of the dist.* kernels --------===//

#include "autoshard/runtime/KernelChecks.h"

#include <string>

namespace autoshard::runtime::checks {

Communicator &groupOf(const KernelSignature &sig) {
  if (!sig.comm)
    sig.fail("'" + std::string(sig.op) +
             "' needs the job's communicators, but this executor has none "
             "(an artifact for several ranks runs under shard-run -n N, i.e. "
             "MPI)");
  try {
    return sig.comm->group(sig.attrs->getStringArray("axes"));
  } catch (const CommError &e) {
    sig.fail(e.what());
  }
}

size_t dimAttr(const KernelSignature &sig, const char *name, size_t rank) {
  int64_t d = sig.attrs->getI64(name);
  if (d < 0 || d >= static_cast<int64_t>(rank))
    sig.fail("attribute '" + std::string(name) + "' is " + std::to_string(d) +
             ", not a dim of the rank-" + std::to_string(rank) + " operand");
  return static_cast<size_t>(d);
}

int64_t groupIndexAttr(const KernelSignature &sig, const char *name,
                       int64_t size) {
  int64_t v = sig.attrs->getI64(name);
  if (v < 0 || v >= size)
    sig.fail("attribute '" + std::string(name) + "' is " + std::to_string(v) +
             ", outside the group of " + std::to_string(size));
  return v;
}

ReduceOp reductionOf(const KernelSignature &sig) {
  try {
    return parseReduceOp(sig.attrs->getString("reduction"));
  } catch (const CommError &e) {
    sig.fail(e.what());
  }
}

std::vector<std::string> meshAxes(const KernelSignature &sig) {
  if (!sig.mesh)
    sig.fail("'" + std::string(sig.op) + "' needs the mesh and the rank");
  std::vector<std::string> axes = sig.attrs->getStringArray("axes");
  for (const std::string &a : axes)
    if (sig.mesh->axisIndex(a) < 0)
      sig.fail("axis '" + a + "' is not an axis of the mesh");
  return axes;
}

CommBlocks blocksOf(const std::vector<int64_t> &shape, size_t dim, int64_t g,
                    int64_t elemBytes) {
  CommBlocks b;
  b.outer = product(shape, 0, dim);
  b.inner = shape[dim] / g * product(shape, dim + 1, shape.size()) * elemBytes;
  return b;
}

namespace {

/// Fails unless dim `d` of `x` splits into `g` equal slices; returns the
/// type of one slice.
TensorType sliceOf(const KernelSignature &sig, const TensorType &x, size_t d,
                   int64_t g) {
  if (x.shape[d] % g != 0)
    sig.fail("dim " + std::to_string(d) + " of " + x.str() +
             " is not divisible by the group size " + std::to_string(g));
  TensorType slice = x;
  slice.shape[d] /= g;
  return slice;
}

/// A `Shape` of a collective over one dim with the instruction's group
/// (`comm`) and its size.
template <typename Shape> Shape onGroup(const KernelSignature &sig) {
  Shape s;
  s.comm = &groupOf(sig);
  s.groupSize = s.comm->size();
  return s;
}

} // namespace

AllReduceShape checkAllReduce(const KernelSignature &sig,
                              ReducibleCheck reducible) {
  AllReduceShape s;
  s.comm = &groupOf(sig);
  s.count = expectResultsLikeArg0(sig);
  s.bytes = sig.args[0].bytes();
  s.dtype = sig.args[0].dtype;
  reducible(sig, s.dtype);
  s.op = reductionOf(sig);
  return s;
}

AllGatherShape checkAllGather(const KernelSignature &sig) {
  auto s = onGroup<AllGatherShape>(sig);
  const TensorType &x = sig.args[0];
  size_t d = dimAttr(sig, "gather_dim", x.shape.size());
  TensorType want = x;
  want.shape[d] *= s.groupSize;
  expectResult(sig, want);
  // Each member's whole operand is one [outer, 1, inner] block row.
  s.blocks = blocksOf(x.shape, d, 1, dtypeSize(x.dtype));
  s.bytes = x.bytes();
  return s;
}

ReduceScatterShape checkReduceScatter(const KernelSignature &sig,
                                      ReducibleCheck reducible) {
  auto s = onGroup<ReduceScatterShape>(sig);
  const TensorType &x = sig.args[0];
  size_t d = dimAttr(sig, "scatter_dim", x.shape.size());
  TensorType want = sliceOf(sig, x, d, s.groupSize);
  expectResult(sig, want);
  reducible(sig, x.dtype);
  s.op = reductionOf(sig);
  s.dtype = x.dtype;
  s.blocks = blocksOf(x.shape, d, s.groupSize, dtypeSize(x.dtype));
  s.count = want.numel();
  s.bytes = x.bytes();
  return s;
}

AllToAllShape checkAllToAll(const KernelSignature &sig) {
  auto s = onGroup<AllToAllShape>(sig);
  const TensorType &x = sig.args[0];
  size_t sd = dimAttr(sig, "split_dim", x.shape.size());
  size_t cd = dimAttr(sig, "concat_dim", x.shape.size());
  TensorType piece = sliceOf(sig, x, sd, s.groupSize);
  TensorType want = piece;
  want.shape[cd] *= s.groupSize;
  expectResult(sig, want);
  int64_t es = dtypeSize(x.dtype);
  s.split = blocksOf(x.shape, sd, s.groupSize, es); // x as [outer, G, inner]
  s.concat =
      blocksOf(want.shape, cd, s.groupSize, es); // y as [outer, G, inner]
  s.pieceBytes = piece.bytes();
  s.bytes = x.bytes();
  if (sig.attrs->has("ragged_dim")) {
    size_t rd = dimAttr(sig, "ragged_dim", x.shape.size());
    if (rd <= std::max(sd, cd))
      sig.fail("attribute 'ragged_dim' is " + std::to_string(rd) +
               ", not after split_dim " + std::to_string(sd) +
               " and concat_dim " + std::to_string(cd));
    s.raggedRows = x.shape[rd];
    s.rowBytes = product(x.shape, rd + 1, x.shape.size()) * es;
  }
  return s;
}

BroadcastShape checkCommBroadcast(const KernelSignature &sig) {
  BroadcastShape s;
  s.comm = &groupOf(sig);
  expectResultsLikeArg0(sig);
  s.root = groupIndexAttr(sig, "root", s.comm->size());
  s.bytes = sig.args[0].bytes();
  return s;
}

PpermuteShape checkPpermute(const KernelSignature &sig) {
  PpermuteShape s;
  s.comm = &groupOf(sig);
  expectResultsLikeArg0(sig);
  std::vector<int64_t> pairs = sig.attrs->getI64Array("pairs");
  if (pairs.size() % 2 != 0)
    sig.fail("attribute 'pairs' must list source, target pairs, found " +
             std::to_string(pairs.size()) + " numbers");
  int64_t g = s.comm->size(), me = s.comm->rank();
  for (size_t i = 0; i < pairs.size(); i += 2) {
    for (int k = 0; k < 2; ++k)
      if (pairs[i + k] < 0 || pairs[i + k] >= g)
        sig.fail("attribute 'pairs' names " + std::to_string(pairs[i + k]) +
                 ", outside the group of " + std::to_string(g));
    if (pairs[i] == me)
      s.to = pairs[i + 1];
    if (pairs[i + 1] == me)
      s.from = pairs[i];
  }
  s.bytes = sig.args[0].bytes();
  return s;
}

PeerShape checkPeer(const KernelSignature &sig, bool send) {
  PeerShape s;
  s.comm = &groupOf(sig);
  s.peer = groupIndexAttr(sig, "peer", s.comm->size());
  s.bytes = (send ? sig.args[0] : sig.results[0]).bytes();
  return s;
}

ShardSliceShape checkShardSlice(const KernelSignature &sig) {
  std::vector<std::string> axes = meshAxes(sig);
  const TensorType &x = sig.args[0];
  ShardSliceShape s;
  s.groupSize = sig.mesh->groupSize(axes);
  size_t d = dimAttr(sig, "dim", x.shape.size());
  TensorType want = sliceOf(sig, x, d, s.groupSize);
  expectResult(sig, want);
  s.index = sig.mesh->indexInGroup(sig.rank, axes);
  s.blocks = blocksOf(x.shape, d, s.groupSize, dtypeSize(x.dtype));
  s.resultBytes = want.bytes();
  return s;
}

int64_t checkAxisIndex(const KernelSignature &sig) {
  std::vector<std::string> axes = meshAxes(sig);
  expectResult(sig, typeOf(DType::I64, {}));
  return sig.mesh->indexInGroup(sig.rank, axes);
}

PackLayout checkPack(const KernelSignature &sig,
                     const std::vector<TensorType> &tensors,
                     const TensorType &flat, const std::string &what) {
  PackLayout layout;
  int64_t &groups = layout.groups;
  groups = sig.attrs->has("num_groups") ? sig.attrs->getI64("num_groups") : 1;
  std::vector<int64_t> dims;
  if (sig.attrs->has("scatter_dims"))
    dims = sig.attrs->getI64Array("scatter_dims");
  if (groups < 1)
    sig.fail("attribute 'num_groups' must be at least 1, found " +
             std::to_string(groups));
  if (groups == 1 ? !dims.empty() : dims.size() != tensors.size())
    sig.fail("attribute 'scatter_dims' has " + std::to_string(dims.size()) +
             " dims; it needs " +
             std::to_string(groups == 1 ? 0 : tensors.size()) +
             " (one per tensor when num_groups > 1, none otherwise)");
  if (tensors.empty())
    sig.fail("needs at least one " + what);
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].dtype != flat.dtype)
      sig.fail(what + " " + std::to_string(i) + " is " + tensors[i].str() +
               ", but the flat buffer is " + flat.str());
  layout.dims.assign(tensors.size(), 0);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::vector<int64_t> &shape = tensors[i].shape;
    if (groups > 1) {
      int64_t d = dims[i];
      if (d < 0 || d >= static_cast<int64_t>(shape.size()))
        sig.fail("pack: scatter dim " + std::to_string(d) + " of tensor " +
                 std::to_string(i) + " is not one of its " +
                 std::to_string(shape.size()) + " dims");
      if (shape[d] % groups != 0)
        sig.fail("pack: dim " + std::to_string(d) + " (size " +
                 std::to_string(shape[d]) + ") of tensor " + std::to_string(i) +
                 " is not divisible by num_groups " + std::to_string(groups));
      layout.dims[i] = d;
    }
    layout.total += tensors[i].numel();
  }
  expectType(sig, flat, typeOf(flat.dtype, {layout.total}), "the flat buffer");
  return layout;
}

} // namespace autoshard::runtime::checks
