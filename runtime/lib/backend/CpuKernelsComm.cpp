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

#include "autoshard/runtime/CommKernels.h"
#include "autoshard/runtime/Communicator.h"
#include "autoshard/runtime/cpu/Pack.h"

#include <cstring>
#include <memory>

namespace autoshard::runtime::cpu_kernels {

namespace {

using comm_kernels::finish;
using comm_kernels::Pending;
using comm_kernels::started;
using Staging = std::shared_ptr<std::vector<unsigned char>>;

Staging staging(int64_t bytes) {
  return std::make_shared<std::vector<unsigned char>>(
      static_cast<size_t>(bytes));
}

/// Copies `rows` rows of `rowBytes` from src (stride srcStride) to dst
/// (stride dstStride).
void copyRows(unsigned char *dst, int64_t dstStride, const unsigned char *src,
              int64_t srcStride, int64_t rows, int64_t rowBytes) {
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * dstStride, src + r * srcStride, rowBytes);
}

/// [outer, G, inner] -> [G, outer, inner].
void pack(unsigned char *dst, const unsigned char *src, CommBlocks b,
          int64_t g) {
  for (int64_t j = 0; j < g; ++j)
    copyRows(dst + j * b.outer * b.inner, b.inner, src + j * b.inner,
             g * b.inner, b.outer, b.inner);
}

/// [G, outer, inner] -> [outer, G, inner].
void unpack(unsigned char *dst, const unsigned char *src, CommBlocks b,
            int64_t g) {
  for (int64_t j = 0; j < g; ++j)
    copyRows(dst + j * b.inner, g * b.inner, src + j * b.outer * b.inner,
             b.inner, b.outer, b.inner);
}

void expectReducible(const KernelSignature &sig, DType dtype) {
  if (dtype != DType::F32 && dtype != DType::F64 && dtype != DType::I32 &&
      dtype != DType::I64)
    sig.fail("cannot reduce " + std::string(dtypeName(dtype)) +
             " (the cpu backend reduces f32, f64, i32, i64)");
}

template <bool Async> BoundKernel bindAllReduce(const KernelSignature &sig) {
  AllReduceShape s = checkAllReduce(sig, expectReducible);
  Communicator &comm = *s.comm;
  int64_t n = s.count;
  DType dtype = s.dtype;
  ReduceOp op = s.op;
  return finish(sig, Async, [&comm, n, dtype, op](void *const *p) {
    return started(comm.allReduce(p[0], p[1], n, dtype, op));
  });
}

template <bool Async> BoundKernel bindAllGather(const KernelSignature &sig) {
  AllGatherShape s = checkAllGather(sig);
  Communicator &comm = *s.comm;
  int64_t g = s.groupSize, bytes = s.bytes;
  CommBlocks b = s.blocks;
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
  ReduceScatterShape s = checkReduceScatter(sig, expectReducible);
  Communicator &comm = *s.comm;
  int64_t g = s.groupSize, count = s.count;
  DType dtype = s.dtype;
  ReduceOp op = s.op;
  CommBlocks b = s.blocks;
  if (b.outer == 1)
    return finish(sig, Async, [&comm, count, dtype, op](void *const *p) {
      return started(comm.reduceScatter(p[0], p[1], count, dtype, op));
    });
  Staging tmp = staging(s.bytes);
  return finish(
      sig, Async, [&comm, count, dtype, op, b, g, tmp](void *const *p) {
        pack(tmp->data(), static_cast<unsigned char *>(p[0]), b, g);
        return started(comm.reduceScatter(tmp->data(), p[1], count, dtype, op),
                       [tmp] {}); // keeps the staging alive until the wait
      });
}

template <bool Async> BoundKernel bindAllToAll(const KernelSignature &sig) {
  AllToAllShape s = checkAllToAll(sig);
  Communicator &comm = *s.comm;
  int64_t g = s.groupSize, pieceBytes = s.pieceBytes;
  CommBlocks split = s.split, concat = s.concat;
  bool packSend = split.outer != 1, unpackRecv = concat.outer != 1;
  Staging send = staging(packSend ? s.bytes : 0);
  Staging recv = staging(unpackRecv ? s.bytes : 0);
  return finish(sig, Async,
                [&comm, split, concat, g, pieceBytes, packSend, unpackRecv,
                 send, recv, bytes = s.bytes](void *const *p) {
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
  BroadcastShape s = checkCommBroadcast(sig);
  Communicator &comm = *s.comm;
  int64_t root = s.root, bytes = s.bytes;
  return finish(sig, Async, [&comm, root, bytes](void *const *p) {
    if (comm.rank() == root && p[0] != p[1] && bytes > 0)
      std::memcpy(p[1], p[0], bytes);
    return started(comm.broadcast(p[1], bytes, root));
  });
}

template <bool Async> BoundKernel bindPpermute(const KernelSignature &sig) {
  PpermuteShape s = checkPpermute(sig);
  Communicator &comm = *s.comm;
  int64_t from = s.from, to = s.to, bytes = s.bytes;
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

BoundKernel bindShardSlice(const KernelSignature &sig) {
  ShardSliceShape s = checkShardSlice(sig);
  CommBlocks b = s.blocks;
  int64_t g = s.groupSize, index = s.index;
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
  int64_t index = checkAxisIndex(sig);
  return [index](void *const *p) { *static_cast<int64_t *>(p[0]) = index; };
}

/// The cpu/Pack.h layout of `dist.pack` / `dist.unpack` (checkPack).
std::vector<cpu::PackedTensor> packedTensors(const PackLayout &layout,
                                             const std::vector<TensorType> &t) {
  std::vector<cpu::PackedTensor> tensors;
  for (size_t i = 0; i < t.size(); ++i)
    tensors.push_back({t[i].shape, layout.dims[i]});
  return tensors;
}

BoundKernel bindPack(const KernelSignature &sig) {
  PackLayout checked = checkPack(sig, sig.args, sig.results[0], "arg");
  auto layout = packedTensors(checked, sig.args);
  int64_t groups = checked.groups;
  size_t n = layout.size();
  int64_t elemBytes = dtypeSize(sig.results[0].dtype);
  return [layout, groups, n, elemBytes](void *const *p) {
    cpu::pack(layout, groups, elemBytes, p, p[n]);
  };
}

BoundKernel bindUnpack(const KernelSignature &sig) {
  PackLayout checked = checkPack(sig, sig.results, sig.args[0], "result");
  auto layout = packedTensors(checked, sig.results);
  int64_t groups = checked.groups;
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
  comm_kernels::registerPointToPointKernels(t);
}

} // namespace autoshard::runtime::cpu_kernels
