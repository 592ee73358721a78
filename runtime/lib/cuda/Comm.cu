//===- Comm.cu - Communication kernels of the CUDA backend ----------------===//
//
// The `dist.*` kernels (docs/artifact-format.md, "Communication") on device
// memory, as runtime/lib/backend/CpuKernelsComm.cpp does them on the host:
// collectives over the Communicator of the instruction's group (the NCCL
// communicator, runtime/lib/cuda/NcclWorld.cpp, which orders its own stream
// against the compute stream with events), block packing with
// cudaMemcpy2DAsync into device staging buffers allocated at bind time, and
// `*_start` / `dist.wait` through CommContext's pending slots. A group of
// one rank never calls the communicator: every collective is a device copy.
//
//===----------------------------------------------------------------------===//

#include "autoshard/runtime/CommKernels.h"
#include "autoshard/runtime/Communicator.h"

#include "CudaCommon.h"

#include <algorithm>

namespace autoshard::runtime::cuda::kernels {
namespace {

using comm_kernels::finish;
using comm_kernels::Pending;
using comm_kernels::started;

class DoneRequest : public CommRequest {
public:
  void wait() override {}
};

/// `rows` rows of `rowBytes` from src (pitch srcPitch) to dst (dstPitch).
void copyRows(void *dst, int64_t dstPitch, const void *src, int64_t srcPitch,
              int64_t rows, int64_t rowBytes, cudaStream_t s) {
  if (rows <= 0 || rowBytes <= 0)
    return;
  AUTOSHARD_CUDA(cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, rowBytes, rows,
                                   cudaMemcpyDeviceToDevice, s));
}

/// [outer, G, inner] -> [G, outer, inner].
void pack(char *dst, const char *src, CommBlocks b, int64_t g, cudaStream_t s) {
  for (int64_t j = 0; j < g; ++j)
    copyRows(dst + j * b.outer * b.inner, b.inner, src + j * b.inner,
             g * b.inner, b.outer, b.inner, s);
}

/// [G, outer, inner] -> [outer, G, inner].
void unpack(char *dst, const char *src, CommBlocks b, int64_t g,
            cudaStream_t s) {
  for (int64_t j = 0; j < g; ++j)
    copyRows(dst + j * b.inner, g * b.inner, src + j * b.outer * b.inner,
             b.inner, b.outer, b.inner, s);
}

void expectReducible(const KernelSignature &sig, DType dtype) {
  if (dtype != DType::F32 && dtype != DType::BF16 && dtype != DType::I32 &&
      dtype != DType::I64 && dtype != DType::F64)
    sig.fail("cannot reduce " + std::string(dtypeName(dtype)));
}

Pending done(std::function<void()> after = {}) {
  return started(std::make_unique<DoneRequest>(), std::move(after));
}

/// A collective over a group of one rank: a device copy of `bytes`.
BoundKernel oneRank(const KernelSignature &sig, bool async, int64_t bytes,
                    cudaStream_t s) {
  return finish(sig, async, [=](void *const *p) {
    copyAsync(p[1], p[0], bytes, s);
    return done();
  });
}

template <bool Async> BoundKernel bindAllReduce(const KernelSignature &sig) {
  AllReduceShape shape = checkAllReduce(sig, expectReducible);
  Communicator &comm = *shape.comm;
  int64_t n = shape.count, bytes = shape.bytes;
  DType dtype = shape.dtype;
  ReduceOp op = shape.op;
  cudaStream_t s = currentContext().stream;
  if (comm.size() == 1)
    return oneRank(sig, Async, bytes, s);
  return finish(sig, Async, [&comm, n, dtype, op](void *const *p) {
    return started(comm.allReduce(p[0], p[1], n, dtype, op));
  });
}

template <bool Async> BoundKernel bindAllGather(const KernelSignature &sig) {
  AllGatherShape shape = checkAllGather(sig);
  Communicator &comm = *shape.comm;
  int64_t g = shape.groupSize, bytes = shape.bytes;
  CommBlocks b = shape.blocks;
  cudaStream_t s = currentContext().stream;
  if (g == 1)
    return oneRank(sig, Async, bytes, s);
  if (b.outer == 1)
    return finish(sig, Async, [&comm, bytes](void *const *p) {
      return started(comm.allGather(p[0], p[1], bytes));
    });
  Scratch tmp = scratch(bytes * g);
  return finish(sig, Async, [&comm, bytes, b, g, tmp, s](void *const *p) {
    char *y = static_cast<char *>(p[1]);
    return started(comm.allGather(p[0], tmp->data(), bytes),
                   [y, b, g, tmp, s] { unpack(y, tmp->as<char>(), b, g, s); });
  });
}

template <bool Async>
BoundKernel bindReduceScatter(const KernelSignature &sig) {
  ReduceScatterShape shape = checkReduceScatter(sig, expectReducible);
  Communicator &comm = *shape.comm;
  int64_t g = shape.groupSize, count = shape.count, bytes = shape.bytes;
  ReduceOp op = shape.op;
  DType dtype = shape.dtype;
  CommBlocks b = shape.blocks;
  cudaStream_t s = currentContext().stream;
  if (g == 1)
    return oneRank(sig, Async, bytes, s);
  if (b.outer == 1)
    return finish(sig, Async, [&comm, count, dtype, op](void *const *p) {
      return started(comm.reduceScatter(p[0], p[1], count, dtype, op));
    });
  Scratch tmp = scratch(bytes);
  return finish(
      sig, Async, [&comm, count, dtype, op, b, g, tmp, s](void *const *p) {
        pack(tmp->as<char>(), static_cast<char *>(p[0]), b, g, s);
        return started(comm.reduceScatter(tmp->data(), p[1], count, dtype, op),
                       [tmp] {});
      });
}

template <bool Async> BoundKernel bindAllToAll(const KernelSignature &sig) {
  AllToAllShape shape = checkAllToAll(sig);
  Communicator &comm = *shape.comm;
  int64_t g = shape.groupSize, pieceBytes = shape.pieceBytes,
          bytes = shape.bytes;
  CommBlocks split = shape.split, concat = shape.concat;
  cudaStream_t s = currentContext().stream;
  if (g == 1)
    return oneRank(sig, Async, bytes, s);
  bool packSend = split.outer != 1, unpackRecv = concat.outer != 1;
  // A separate send buffer also serves the in-place case (NCCL, like MPI,
  // needs distinct buffers for an all-to-all).
  Scratch send = scratch(bytes);
  Scratch recv = scratch(unpackRecv ? bytes : 0);
  return finish(sig, Async,
                [&comm, split, concat, g, pieceBytes, packSend, unpackRecv,
                 send, recv, bytes, s](void *const *p) {
                  const char *x = static_cast<char *>(p[0]);
                  char *y = static_cast<char *>(p[1]);
                  const void *src = x;
                  if (packSend) {
                    pack(send->as<char>(), x, split, g, s);
                    src = send->data();
                  } else if (x == y) {
                    copyAsync(send->data(), x, bytes, s);
                    src = send->data();
                  }
                  void *dst = unpackRecv ? recv->data() : y;
                  std::function<void()> after = [send] {};
                  if (unpackRecv)
                    after = [y, concat, g, send, recv, s] {
                      unpack(y, recv->as<char>(), concat, g, s);
                    };
                  return started(comm.allToAll(src, dst, pieceBytes),
                                 std::move(after));
                });
}

template <bool Async> BoundKernel bindBroadcast(const KernelSignature &sig) {
  BroadcastShape shape = checkCommBroadcast(sig);
  Communicator &comm = *shape.comm;
  int64_t root = shape.root, bytes = shape.bytes;
  cudaStream_t s = currentContext().stream;
  bool single = comm.size() == 1;
  return finish(sig, Async, [&comm, root, bytes, s, single](void *const *p) {
    if (comm.rank() == root)
      copyAsync(p[1], p[0], bytes, s);
    if (single)
      return done();
    return started(comm.broadcast(p[1], bytes, root));
  });
}

template <bool Async> BoundKernel bindPpermute(const KernelSignature &sig) {
  PpermuteShape shape = checkPpermute(sig);
  Communicator &comm = *shape.comm;
  int64_t from = shape.from, to = shape.to, bytes = shape.bytes;
  cudaStream_t s = currentContext().stream;
  Scratch copy = scratch(to >= 0 && from >= 0 ? bytes : 0);
  bool single = comm.size() == 1;
  return finish(sig, Async,
                [&comm, from, to, bytes, copy, s, single](void *const *p) {
                  if (single) { // 0 -> 0 is a copy; no pair: zeros
                    if (from >= 0)
                      copyAsync(p[1], p[0], bytes, s);
                    else if (bytes > 0)
                      AUTOSHARD_CUDA(cudaMemsetAsync(p[1], 0, bytes, s));
                    return done();
                  }
                  void *src = p[0];
                  if (to >= 0 && from >= 0 && p[0] == p[1]) {
                    copyAsync(copy->data(), p[0], bytes, s);
                    src = copy->data();
                  }
                  std::vector<Transfer> sends, recvs;
                  if (to >= 0)
                    sends.push_back({to, src, bytes});
                  if (from >= 0)
                    recvs.push_back({from, p[1], bytes});
                  else if (bytes > 0)
                    AUTOSHARD_CUDA(cudaMemsetAsync(p[1], 0, bytes, s));
                  return started(comm.exchange(sends, recvs), [copy] {});
                });
}

BoundKernel bindShardSlice(const KernelSignature &sig) {
  ShardSliceShape shape = checkShardSlice(sig);
  int64_t g = shape.groupSize, index = shape.index;
  CommBlocks b = shape.blocks;
  cudaStream_t s = currentContext().stream;
  Scratch tmp = scratch(shape.resultBytes);
  return [b, g, index, s, tmp](void *const *p) {
    const char *src = static_cast<char *>(p[0]) + index * b.inner;
    char *dst = static_cast<char *>(p[1]);
    if (p[0] == p[1]) { // in place: through a staging copy
      copyRows(tmp->data(), b.inner, src, g * b.inner, b.outer, b.inner, s);
      copyAsync(dst, tmp->data(), b.outer * b.inner, s);
    } else {
      copyRows(dst, b.inner, src, g * b.inner, b.outer, b.inner, s);
    }
  };
}

__global__ void storeI64Kernel(int64_t *dst, int64_t v) { *dst = v; }

BoundKernel bindAxisIndex(const KernelSignature &sig) {
  int64_t index = checkAxisIndex(sig);
  cudaStream_t s = currentContext().stream;
  return [index, s](void *const *p) {
    storeI64Kernel<<<1, 1, 0, s>>>(static_cast<int64_t *>(p[0]), index);
    AUTOSHARD_CUDA_LAUNCHED();
  };
}

/// One contiguous run of the flat layout of dist.pack (see cpu/Pack.h):
/// tensor `tensor`, rows of `inner` bytes at pitch `pitch` from byte
/// `tensorOffset`, to flat byte `flatOffset` (rows consecutive there).
struct Run {
  size_t tensor;
  int64_t tensorOffset, pitch, inner, rows, flatOffset;
};

std::vector<Run> packRuns(const KernelSignature &sig,
                          const std::vector<TensorType> &tensors,
                          const TensorType &flat, const std::string &what) {
  PackLayout layout = checkPack(sig, tensors, flat, what);
  int64_t groups = layout.groups, es = dtypeSize(flat.dtype);
  std::vector<Run> runs;
  int64_t offset = 0;
  for (int64_t g = 0; g < groups; ++g)
    for (size_t i = 0; i < tensors.size(); ++i) {
      const std::vector<int64_t> &shape = tensors[i].shape;
      int64_t outer = 1, inner = tensors[i].numel();
      if (groups > 1) {
        size_t d = static_cast<size_t>(layout.dims[i]);
        outer = product(shape, 0, d);
        inner = shape[d] / groups * product(shape, d + 1, shape.size());
      }
      runs.push_back({i, g * inner * es, groups * inner * es, inner * es, outer,
                      offset * es});
      offset += outer * inner;
    }
  return runs;
}

BoundKernel bindPack(const KernelSignature &sig) {
  std::vector<Run> runs = packRuns(sig, sig.args, sig.results[0], "arg");
  size_t n = sig.args.size();
  cudaStream_t s = currentContext().stream;
  return [runs, n, s](void *const *p) {
    char *flat = static_cast<char *>(p[n]);
    for (const Run &r : runs)
      copyRows(flat + r.flatOffset, r.inner,
               static_cast<char *>(p[r.tensor]) + r.tensorOffset, r.pitch,
               r.rows, r.inner, s);
  };
}

BoundKernel bindUnpack(const KernelSignature &sig) {
  std::vector<Run> runs = packRuns(sig, sig.results, sig.args[0], "result");
  cudaStream_t s = currentContext().stream;
  return [runs, s](void *const *p) {
    const char *flat = static_cast<char *>(p[0]);
    for (const Run &r : runs)
      copyRows(static_cast<char *>(p[1 + r.tensor]) + r.tensorOffset, r.pitch,
               flat + r.flatOffset, r.inner, r.rows, r.inner, s);
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

} // namespace autoshard::runtime::cuda::kernels
