//===- CpuKernelsComm.cpp - Communication kernels of the CPU backend ------===//
//
// The `dist.*` kernels (docs/artifact-format.md, "Communication") on host
// memory, over the Communicator of the instruction's group (CommContext).
// Collectives move contiguous blocks; a gather, scatter or all-to-all on a
// non-leading dim packs its blocks into a staging buffer before the call
// and/or unpacks them after it. Staging buffers are allocated once per
// instruction when it is bound; they are communication workspace outside
// the static memory plan (see docs/artifact-format.md).
//
// A blocking kernel starts the operation and waits for it. A `*_start`
// kernel starts it and parks the request (and the unpack step) in the
// CommContext slot of (function, handle); `dist.wait` with that handle
// completes it.
//
//===----------------------------------------------------------------------===//

#include "CpuKernels.h"

#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/cpu/Pack.h"

#include <cstring>
#include <memory>

namespace autoshard::runtime::cpu_kernels {

namespace {

using Pending = CommContext::Pending;
using StartFn = std::function<Pending(void *const *operands)>;
using Staging = std::shared_ptr<std::vector<unsigned char>>;

Staging staging(int64_t bytes) {
  return std::make_shared<std::vector<unsigned char>>(
      static_cast<size_t>(bytes));
}

/// The communicator of the instruction's `axes`; fails clearly without one.
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

/// Copies `rows` rows of `rowBytes` from src (stride srcStride) to dst
/// (stride dstStride).
void copyRows(unsigned char *dst, int64_t dstStride, const unsigned char *src,
              int64_t srcStride, int64_t rows, int64_t rowBytes) {
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * dstStride, src + r * srcStride, rowBytes);
}

/// A view of a tensor as [outer, G, inner] blocks (bytes) around `dim`:
/// block (o, g) holds the g-th slice of `dim` of outer index o.
struct Blocks {
  int64_t outer = 1, inner = 0; // inner in bytes
};

/// Blocks of a tensor of `shape` split into `g` equal slices along `dim`.
Blocks blocksOf(const std::vector<int64_t> &shape, size_t dim, int64_t g,
                int64_t elemBytes) {
  Blocks b;
  b.outer = product(shape, 0, dim);
  b.inner = shape[dim] / g * product(shape, dim + 1, shape.size()) * elemBytes;
  return b;
}

/// [outer, G, inner] -> [G, outer, inner].
void pack(unsigned char *dst, const unsigned char *src, Blocks b, int64_t g) {
  for (int64_t j = 0; j < g; ++j)
    copyRows(dst + j * b.outer * b.inner, b.inner, src + j * b.inner,
             g * b.inner, b.outer, b.inner);
}

/// [G, outer, inner] -> [outer, G, inner].
void unpack(unsigned char *dst, const unsigned char *src, Blocks b, int64_t g) {
  for (int64_t j = 0; j < g; ++j)
    copyRows(dst + j * b.inner, g * b.inner, src + j * b.outer * b.inner,
             b.inner, b.outer, b.inner);
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

void expectReducible(const KernelSignature &sig, DType dtype) {
  if (dtype != DType::F32 && dtype != DType::F64 && dtype != DType::I32 &&
      dtype != DType::I64)
    sig.fail("cannot reduce " + std::string(dtypeName(dtype)) +
             " (the cpu backend reduces f32, f64, i32, i64)");
}

ReduceOp reductionOf(const KernelSignature &sig) {
  try {
    return parseReduceOp(sig.attrs->getString("reduction"));
  } catch (const CommError &e) {
    sig.fail(e.what());
  }
}

/// Wraps the start of an operation into a blocking kernel or, for a
/// `*_start` op, one that parks it in its handle's slot.
BoundKernel finish(const KernelSignature &sig, bool async, StartFn start) {
  if (!async)
    return [start = std::move(start)](void *const *operands) {
      Pending p = start(operands);
      p.request->wait();
      if (p.finish)
        p.finish();
    };
  int64_t handle = sig.attrs->getI64("handle");
  Pending *slot = &sig.comm->pending(sig.function, handle);
  return [slot, handle, start = std::move(start)](void *const *operands) {
    if (slot->request)
      throw CommError("handle " + std::to_string(handle) +
                      " is still pending (started twice without a wait)");
    *slot = start(operands);
  };
}

Pending started(std::unique_ptr<CommRequest> r,
                std::function<void()> after = {}) {
  Pending p;
  p.request = std::move(r);
  p.finish = std::move(after);
  return p;
}

template <bool Async> BoundKernel bindAllReduce(const KernelSignature &sig) {
  Communicator &comm = groupOf(sig);
  int64_t n = expectResultsLikeArg0(sig);
  DType dtype = sig.args[0].dtype;
  expectReducible(sig, dtype);
  ReduceOp op = reductionOf(sig);
  return finish(sig, Async, [&comm, n, dtype, op](void *const *p) {
    return started(comm.allReduce(p[0], p[1], n, dtype, op));
  });
}

template <bool Async> BoundKernel bindAllGather(const KernelSignature &sig) {
  Communicator &comm = groupOf(sig);
  const TensorType &x = sig.args[0];
  int64_t g = comm.size();
  size_t d = dimAttr(sig, "gather_dim", x.shape.size());
  TensorType want = x;
  want.shape[d] *= g;
  expectType(sig, sig.results[0], want, resultName(0));
  // Each member's whole operand is one [outer, 1, inner] block row.
  Blocks b = blocksOf(x.shape, d, 1, dtypeSize(x.dtype));
  int64_t bytes = x.bytes();
  if (b.outer == 1)
    return finish(sig, Async, [&comm, bytes](void *const *p) {
      return started(comm.allGather(p[0], p[1], bytes));
    });
  Staging tmp = staging(bytes * g);
  return finish(sig, Async, [&comm, bytes, b, g, tmp](void *const *p) {
    unsigned char *y = static_cast<unsigned char *>(p[1]);
    return started(comm.allGather(p[0], tmp->data(), bytes),
                   [y, b, g, tmp] { unpack(y, tmp->data(), b, g); });
  });
}

template <bool Async>
BoundKernel bindReduceScatter(const KernelSignature &sig) {
  Communicator &comm = groupOf(sig);
  const TensorType &x = sig.args[0];
  int64_t g = comm.size();
  size_t d = dimAttr(sig, "scatter_dim", x.shape.size());
  if (x.shape[d] % g != 0)
    sig.fail("dim " + std::to_string(d) + " of " + x.str() +
             " is not divisible by the group size " + std::to_string(g));
  TensorType want = x;
  want.shape[d] /= g;
  expectType(sig, sig.results[0], want, resultName(0));
  expectReducible(sig, x.dtype);
  ReduceOp op = reductionOf(sig);
  DType dtype = x.dtype;
  Blocks b = blocksOf(x.shape, d, g, dtypeSize(dtype));
  int64_t count = want.numel();
  if (b.outer == 1)
    return finish(sig, Async, [&comm, count, dtype, op](void *const *p) {
      return started(comm.reduceScatter(p[0], p[1], count, dtype, op));
    });
  Staging tmp = staging(x.bytes());
  return finish(
      sig, Async, [&comm, count, dtype, op, b, g, tmp](void *const *p) {
        pack(tmp->data(), static_cast<unsigned char *>(p[0]), b, g);
        return started(comm.reduceScatter(tmp->data(), p[1], count, dtype, op),
                       [tmp] {}); // keeps the staging alive until the wait
      });
}

template <bool Async> BoundKernel bindAllToAll(const KernelSignature &sig) {
  Communicator &comm = groupOf(sig);
  const TensorType &x = sig.args[0];
  int64_t g = comm.size();
  size_t s = dimAttr(sig, "split_dim", x.shape.size());
  size_t c = dimAttr(sig, "concat_dim", x.shape.size());
  if (x.shape[s] % g != 0)
    sig.fail("dim " + std::to_string(s) + " of " + x.str() +
             " is not divisible by the group size " + std::to_string(g));
  TensorType piece = x;
  piece.shape[s] /= g;
  TensorType want = piece;
  want.shape[c] *= g;
  expectType(sig, sig.results[0], want, resultName(0));
  int64_t es = dtypeSize(x.dtype);
  Blocks split = blocksOf(x.shape, s, g, es);     // x as [outer, G, inner]
  Blocks concat = blocksOf(want.shape, c, g, es); // y as [outer, G, inner]
  int64_t pieceBytes = piece.bytes();
  bool packSend = split.outer != 1, unpackRecv = concat.outer != 1;
  Staging send = staging(packSend ? x.bytes() : 0);
  Staging recv = staging(unpackRecv ? want.bytes() : 0);
  return finish(sig, Async,
                [&comm, split, concat, g, pieceBytes, packSend, unpackRecv,
                 send, recv, bytes = x.bytes()](void *const *p) {
                  const unsigned char *x = static_cast<unsigned char *>(p[0]);
                  unsigned char *y = static_cast<unsigned char *>(p[1]);
                  const void *src = x;
                  if (packSend) {
                    pack(send->data(), x, split, g);
                    src = send->data();
                  } else if (x == y) { // in place: MPI needs distinct buffers
                    send->resize(bytes);
                    std::memcpy(send->data(), x, bytes);
                    src = send->data();
                  }
                  void *dst = unpackRecv ? recv->data() : y;
                  std::function<void()> after = [send] {};
                  if (unpackRecv)
                    after = [y, concat, g, send, recv] {
                      unpack(y, recv->data(), concat, g);
                    };
                  return started(comm.allToAll(src, dst, pieceBytes),
                                 std::move(after));
                });
}

template <bool Async> BoundKernel bindBroadcast(const KernelSignature &sig) {
  Communicator &comm = groupOf(sig);
  expectResultsLikeArg0(sig);
  int64_t root = groupIndexAttr(sig, "root", comm.size());
  int64_t bytes = sig.args[0].bytes();
  return finish(sig, Async, [&comm, root, bytes](void *const *p) {
    if (comm.rank() == root && p[0] != p[1] && bytes > 0)
      std::memcpy(p[1], p[0], bytes);
    return started(comm.broadcast(p[1], bytes, root));
  });
}

template <bool Async> BoundKernel bindPpermute(const KernelSignature &sig) {
  Communicator &comm = groupOf(sig);
  expectResultsLikeArg0(sig);
  std::vector<int64_t> pairs = sig.attrs->getI64Array("pairs");
  if (pairs.size() % 2 != 0)
    sig.fail("attribute 'pairs' must list source, target pairs, found " +
             std::to_string(pairs.size()) + " numbers");
  int64_t g = comm.size(), me = comm.rank();
  int64_t from = -1, to = -1;
  for (size_t i = 0; i < pairs.size(); i += 2) {
    for (int k = 0; k < 2; ++k)
      if (pairs[i + k] < 0 || pairs[i + k] >= g)
        sig.fail("attribute 'pairs' names " + std::to_string(pairs[i + k]) +
                 ", outside the group of " + std::to_string(g));
    if (pairs[i] == me)
      to = pairs[i + 1];
    if (pairs[i + 1] == me)
      from = pairs[i];
  }
  int64_t bytes = sig.args[0].bytes();
  Staging copy = staging(0);
  return finish(sig, Async, [&comm, from, to, bytes, copy](void *const *p) {
    void *src = p[0];
    if (to >= 0 && from >= 0 && p[0] == p[1]) {
      copy->assign(static_cast<unsigned char *>(p[0]),
                   static_cast<unsigned char *>(p[0]) + bytes);
      src = copy->data();
    }
    std::vector<Transfer> sends, recvs;
    if (to >= 0)
      sends.push_back({to, src, bytes});
    if (from >= 0)
      recvs.push_back({from, p[1], bytes});
    else if (bytes > 0) // no source: zeros
      std::memset(p[1], 0, bytes);
    return started(comm.exchange(sends, recvs), [copy] {});
  });
}

template <bool Async> BoundKernel bindSend(const KernelSignature &sig) {
  Communicator &comm = groupOf(sig);
  int64_t peer = groupIndexAttr(sig, "peer", comm.size());
  int64_t bytes = sig.args[0].bytes();
  return finish(sig, Async, [&comm, peer, bytes](void *const *p) {
    return started(comm.exchange({{peer, p[0], bytes}}, {}));
  });
}

template <bool Async> BoundKernel bindRecv(const KernelSignature &sig) {
  Communicator &comm = groupOf(sig);
  int64_t peer = groupIndexAttr(sig, "peer", comm.size());
  int64_t bytes = sig.results[0].bytes();
  return finish(sig, Async, [&comm, peer, bytes](void *const *p) {
    return started(comm.exchange({}, {{peer, p[0], bytes}}));
  });
}

BoundKernel bindWait(const KernelSignature &sig) {
  if (!sig.comm)
    sig.fail("'dist.wait' needs the job's communicators, but this executor "
             "has none");
  int64_t handle = sig.attrs->getI64("handle");
  Pending *slot = &sig.comm->pending(sig.function, handle);
  return [slot, handle](void *const *) {
    if (!slot->request)
      throw CommError("dist.wait: handle " + std::to_string(handle) +
                      " has no operation in flight");
    slot->request->wait();
    std::function<void()> after = std::move(slot->finish);
    slot->request.reset();
    slot->finish = nullptr;
    if (after)
      after();
  };
}

/// The mesh, and the instruction's axes checked against it.
std::vector<std::string> meshAxes(const KernelSignature &sig) {
  if (!sig.mesh)
    sig.fail("'" + std::string(sig.op) + "' needs the mesh and the rank");
  std::vector<std::string> axes = sig.attrs->getStringArray("axes");
  for (const std::string &a : axes)
    if (sig.mesh->axisIndex(a) < 0)
      sig.fail("axis '" + a + "' is not an axis of the mesh");
  return axes;
}

BoundKernel bindShardSlice(const KernelSignature &sig) {
  std::vector<std::string> axes = meshAxes(sig);
  const TensorType &x = sig.args[0];
  int64_t g = sig.mesh->groupSize(axes);
  size_t d = dimAttr(sig, "dim", x.shape.size());
  if (x.shape[d] % g != 0)
    sig.fail("dim " + std::to_string(d) + " of " + x.str() +
             " is not divisible by the group size " + std::to_string(g));
  TensorType want = x;
  want.shape[d] /= g;
  expectType(sig, sig.results[0], want, resultName(0));
  int64_t index = sig.mesh->indexInGroup(sig.rank, axes);
  Blocks b = blocksOf(x.shape, d, g, dtypeSize(x.dtype));
  return [b, g, index](void *const *p) {
    // Block `index` of [outer, G, inner]; in place it moves rows forward,
    // which memmove allows (never backward: dst <= src).
    const unsigned char *src = static_cast<unsigned char *>(p[0]);
    unsigned char *dst = static_cast<unsigned char *>(p[1]);
    for (int64_t o = 0; o < b.outer; ++o)
      std::memmove(dst + o * b.inner, src + (o * g + index) * b.inner, b.inner);
  };
}

BoundKernel bindAxisIndex(const KernelSignature &sig) {
  std::vector<std::string> axes = meshAxes(sig);
  expectType(sig, sig.results[0], typeOf(DType::I64, {}), resultName(0));
  int64_t index = sig.mesh->indexInGroup(sig.rank, axes);
  return [index](void *const *p) { *static_cast<int64_t *>(p[0]) = index; };
}

/// The flat layout of `dist.pack` / `dist.unpack`: `tensors` is the unpacked
/// side, `flat` the 1-D buffer; `num_groups` defaults to 1 and
/// `scatter_dims` to none (rt-lower omits attributes at their default).
std::vector<cpu::PackedTensor>
packLayout(const KernelSignature &sig, const std::vector<TensorType> &tensors,
           const TensorType &flat, const std::string &what, int64_t &groups) {
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
  std::vector<cpu::PackedTensor> layout;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].dtype != flat.dtype)
      sig.fail(what + " " + std::to_string(i) + " is " + tensors[i].str() +
               ", but the flat buffer is " + flat.str());
    layout.push_back({tensors[i].shape, groups == 1 ? 0 : dims[i]});
  }
  int64_t total = 0;
  try {
    total = cpu::packedSize(layout, groups);
  } catch (const std::invalid_argument &e) {
    sig.fail(e.what());
  }
  expectType(sig, flat, typeOf(flat.dtype, {total}), "the flat buffer");
  return layout;
}

BoundKernel bindPack(const KernelSignature &sig) {
  int64_t groups = 1;
  auto layout = packLayout(sig, sig.args, sig.results[0], "arg", groups);
  size_t n = layout.size();
  int64_t elemBytes = dtypeSize(sig.results[0].dtype);
  return [layout, groups, n, elemBytes](void *const *p) {
    cpu::pack(layout, groups, elemBytes, p, p[n]);
  };
}

BoundKernel bindUnpack(const KernelSignature &sig) {
  int64_t groups = 1;
  auto layout = packLayout(sig, sig.results, sig.args[0], "result", groups);
  int64_t elemBytes = dtypeSize(sig.args[0].dtype);
  return [layout, groups, elemBytes](void *const *p) {
    cpu::unpack(layout, groups, elemBytes, p[0], p + 1);
  };
}

} // namespace

void registerCommKernels(KernelTable &t) {
  t.add("dist.pack", bindPack);
  t.add("dist.unpack", bindUnpack);
  t.add("dist.shard_slice", bindShardSlice);
  t.add("dist.axis_index", bindAxisIndex);
  t.add("dist.all_reduce", bindAllReduce<false>);
  t.add("dist.all_reduce_start", bindAllReduce<true>);
  t.add("dist.all_gather", bindAllGather<false>);
  t.add("dist.all_gather_start", bindAllGather<true>);
  t.add("dist.reduce_scatter", bindReduceScatter<false>);
  t.add("dist.reduce_scatter_start", bindReduceScatter<true>);
  t.add("dist.all_to_all", bindAllToAll<false>);
  t.add("dist.all_to_all_start", bindAllToAll<true>);
  t.add("dist.broadcast", bindBroadcast<false>);
  t.add("dist.broadcast_start", bindBroadcast<true>);
  t.add("dist.ppermute", bindPpermute<false>);
  t.add("dist.ppermute_start", bindPpermute<true>);
  t.add("dist.send", bindSend<false>);
  t.add("dist.send_start", bindSend<true>);
  t.add("dist.recv", bindRecv<false>);
  t.add("dist.recv_start", bindRecv<true>);
  t.add("dist.wait", bindWait);
}

} // namespace autoshard::runtime::cpu_kernels
