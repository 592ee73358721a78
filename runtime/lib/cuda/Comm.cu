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

#include "autoshard/runtime/Communicator.h"

#include "CudaCommon.h"

#include <algorithm>

namespace autoshard::runtime::cuda::kernels {
namespace {

using Pending = CommContext::Pending;
using StartFn = std::function<Pending(void *const *operands)>;

class DoneRequest : public CommRequest {
public:
  void wait() override {}
};

Communicator &groupOf(const KernelSignature &sig) {
  if (!sig.comm)
    sig.fail("'" + std::string(sig.op) +
             "' needs the job's communicators, but this executor has none");
  try {
    return sig.comm->group(sig.attrs->getStringArray("axes"));
  } catch (const CommError &e) {
    sig.fail(e.what());
  }
}

void copyAsync(void *dst, const void *src, int64_t bytes, cudaStream_t s) {
  if (bytes > 0 && dst != src)
    AUTOSHARD_CUDA(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
}

/// `rows` rows of `rowBytes` from src (pitch srcPitch) to dst (dstPitch).
void copyRows(void *dst, int64_t dstPitch, const void *src, int64_t srcPitch,
              int64_t rows, int64_t rowBytes, cudaStream_t s) {
  if (rows <= 0 || rowBytes <= 0)
    return;
  AUTOSHARD_CUDA(cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, rowBytes, rows,
                                   cudaMemcpyDeviceToDevice, s));
}

struct Blocks {
  int64_t outer = 1, inner = 0; // inner in bytes
};

Blocks blocksOf(const std::vector<int64_t> &shape, size_t dim, int64_t g,
                int64_t elemBytes) {
  Blocks b;
  b.outer = product(shape, 0, dim);
  b.inner = shape[dim] / g * product(shape, dim + 1, shape.size()) * elemBytes;
  return b;
}

/// [outer, G, inner] -> [G, outer, inner].
void pack(char *dst, const char *src, Blocks b, int64_t g, cudaStream_t s) {
  for (int64_t j = 0; j < g; ++j)
    copyRows(dst + j * b.outer * b.inner, b.inner, src + j * b.inner,
             g * b.inner, b.outer, b.inner, s);
}

/// [G, outer, inner] -> [outer, G, inner].
void unpack(char *dst, const char *src, Blocks b, int64_t g, cudaStream_t s) {
  for (int64_t j = 0; j < g; ++j)
    copyRows(dst + j * b.inner, g * b.inner, src + j * b.outer * b.inner,
             b.inner, b.outer, b.inner, s);
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
  if (dtype != DType::F32 && dtype != DType::BF16 && dtype != DType::I32 &&
      dtype != DType::I64 && dtype != DType::F64)
    sig.fail("cannot reduce " + std::string(dtypeName(dtype)));
}

ReduceOp reductionOf(const KernelSignature &sig) {
  try {
    return parseReduceOp(sig.attrs->getString("reduction"));
  } catch (const CommError &e) {
    sig.fail(e.what());
  }
}

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

Pending done(std::function<void()> after = {}) {
  return started(std::make_unique<DoneRequest>(), std::move(after));
}

template <bool Async> BoundKernel bindAllReduce(const KernelSignature &sig) {
  Communicator &comm = groupOf(sig);
  int64_t n = expectResultsLikeArg0(sig);
  DType dtype = sig.args[0].dtype;
  expectReducible(sig, dtype);
  ReduceOp op = reductionOf(sig);
  cudaStream_t s = currentContext().stream;
  int64_t bytes = sig.args[0].bytes();
  if (comm.size() == 1)
    return finish(sig, Async, [=](void *const *p) {
      copyAsync(p[1], p[0], bytes, s);
      return done();
    });
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
  Blocks b = blocksOf(x.shape, d, 1, dtypeSize(x.dtype));
  int64_t bytes = x.bytes();
  cudaStream_t s = currentContext().stream;
  if (g == 1)
    return finish(sig, Async, [=](void *const *p) {
      copyAsync(p[1], p[0], bytes, s);
      return done();
    });
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
  cudaStream_t s = currentContext().stream;
  if (g == 1) {
    int64_t bytes = x.bytes();
    return finish(sig, Async, [=](void *const *p) {
      copyAsync(p[1], p[0], bytes, s);
      return done();
    });
  }
  if (b.outer == 1)
    return finish(sig, Async, [&comm, count, dtype, op](void *const *p) {
      return started(comm.reduceScatter(p[0], p[1], count, dtype, op));
    });
  Scratch tmp = scratch(x.bytes());
  return finish(
      sig, Async, [&comm, count, dtype, op, b, g, tmp, s](void *const *p) {
        pack(tmp->as<char>(), static_cast<char *>(p[0]), b, g, s);
        return started(comm.reduceScatter(tmp->data(), p[1], count, dtype, op),
                       [tmp] {});
      });
}

template <bool Async> BoundKernel bindAllToAll(const KernelSignature &sig) {
  Communicator &comm = groupOf(sig);
  const TensorType &x = sig.args[0];
  int64_t g = comm.size();
  size_t sd = dimAttr(sig, "split_dim", x.shape.size());
  size_t cd = dimAttr(sig, "concat_dim", x.shape.size());
  if (x.shape[sd] % g != 0)
    sig.fail("dim " + std::to_string(sd) + " of " + x.str() +
             " is not divisible by the group size " + std::to_string(g));
  TensorType piece = x;
  piece.shape[sd] /= g;
  TensorType want = piece;
  want.shape[cd] *= g;
  expectType(sig, sig.results[0], want, resultName(0));
  int64_t es = dtypeSize(x.dtype);
  Blocks split = blocksOf(x.shape, sd, g, es);
  Blocks concat = blocksOf(want.shape, cd, g, es);
  int64_t pieceBytes = piece.bytes();
  cudaStream_t s = currentContext().stream;
  if (g == 1) {
    int64_t bytes = x.bytes();
    return finish(sig, Async, [=](void *const *p) {
      copyAsync(p[1], p[0], bytes, s);
      return done();
    });
  }
  bool packSend = split.outer != 1, unpackRecv = concat.outer != 1;
  // A separate send buffer also serves the in-place case (NCCL, like MPI,
  // needs distinct buffers for an all-to-all).
  Scratch send = scratch(x.bytes());
  Scratch recv = scratch(unpackRecv ? want.bytes() : 0);
  int64_t bytes = x.bytes();
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
  Communicator &comm = groupOf(sig);
  expectResultsLikeArg0(sig);
  int64_t root = groupIndexAttr(sig, "root", comm.size());
  int64_t bytes = sig.args[0].bytes();
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
  Communicator &comm = groupOf(sig);
  expectResultsLikeArg0(sig);
  std::vector<int64_t> pairs = sig.attrs->getI64Array("pairs");
  if (pairs.size() % 2 != 0)
    sig.fail("attribute 'pairs' must list source, target pairs");
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
  cudaStream_t s = currentContext().stream;
  Scratch copy = scratch(to >= 0 && from >= 0 ? bytes : 0);
  bool single = g == 1;
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
  cudaStream_t s = currentContext().stream;
  Scratch tmp = scratch(want.bytes());
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
  std::vector<std::string> axes = meshAxes(sig);
  expectType(sig, sig.results[0], typeOf(DType::I64, {}), resultName(0));
  int64_t index = sig.mesh->indexInGroup(sig.rank, axes);
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
  int64_t groups =
      sig.attrs->has("num_groups") ? sig.attrs->getI64("num_groups") : 1;
  std::vector<int64_t> dims;
  if (sig.attrs->has("scatter_dims"))
    dims = sig.attrs->getI64Array("scatter_dims");
  if (groups < 1)
    sig.fail("attribute 'num_groups' must be at least 1, found " +
             std::to_string(groups));
  if (groups == 1 ? !dims.empty() : dims.size() != tensors.size())
    sig.fail("attribute 'scatter_dims' has " + std::to_string(dims.size()) +
             " dims; it needs " +
             std::to_string(groups == 1 ? 0 : tensors.size()));
  if (tensors.empty())
    sig.fail("needs at least one " + what);
  int64_t es = dtypeSize(flat.dtype), total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].dtype != flat.dtype)
      sig.fail(what + " " + std::to_string(i) + " is " + tensors[i].str() +
               ", but the flat buffer is " + flat.str());
    if (groups > 1) {
      int64_t d = dims[i];
      if (d < 0 || d >= int64_t(tensors[i].shape.size()) ||
          tensors[i].shape[d] % groups != 0)
        sig.fail("scatter dim " + std::to_string(d) + " of " + what + " " +
                 std::to_string(i) + " is not a dim divisible by num_groups");
    }
    total += tensors[i].numel();
  }
  expectType(sig, flat, typeOf(flat.dtype, {total}), "the flat buffer");
  std::vector<Run> runs;
  int64_t offset = 0;
  for (int64_t g = 0; g < groups; ++g)
    for (size_t i = 0; i < tensors.size(); ++i) {
      const std::vector<int64_t> &shape = tensors[i].shape;
      int64_t outer = 1, inner = tensors[i].numel();
      if (groups > 1) {
        size_t d = static_cast<size_t>(dims[i]);
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
  t.add("dist.send", bindSend<false>);
  t.add("dist.send_start", bindSend<true>);
  t.add("dist.recv", bindRecv<false>);
  t.add("dist.recv_start", bindRecv<true>);
  t.add("dist.wait", bindWait);
}

} // namespace autoshard::runtime::cuda::kernels
