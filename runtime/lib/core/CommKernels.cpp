//===- CommKernels.cpp - Backend-neutral parts of the dist.* kernels ------===//

#include "autoshard/runtime/CommKernels.h"

#include <string>
#include <utility>
#include <vector>

namespace autoshard::runtime::comm_kernels {

using namespace checks;

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

Pending started(std::unique_ptr<CommRequest> request,
                std::function<void()> after) {
  Pending p;
  p.request = std::move(request);
  p.finish = std::move(after);
  return p;
}

namespace {

class DoneRequest : public CommRequest {
public:
  void wait() override {}
};

using Device = std::shared_ptr<const CommDevice>;
using Scratch = std::shared_ptr<void>;

/// A collective over a group of one rank: a copy of `bytes`.
BoundKernel oneRank(const KernelSignature &sig, bool async, int64_t bytes,
                    Device dev) {
  return finish(sig, async, [dev, bytes](void *const *p) {
    dev->copy(p[1], p[0], bytes);
    return done();
  });
}

BoundKernel bindAllReduce(const KernelSignature &sig, const CommBackend &be,
                          bool async) {
  AllReduceShape s = checkAllReduce(sig, be.reducible);
  Communicator &comm = *s.comm;
  int64_t n = s.count;
  DType dtype = s.dtype;
  ReduceOp op = s.op;
  if (comm.size() == 1)
    return oneRank(sig, async, s.bytes, be.device());
  return finish(sig, async, [&comm, n, dtype, op](void *const *p) {
    return started(comm.allReduce(p[0], p[1], n, dtype, op));
  });
}

BoundKernel bindAllGather(const KernelSignature &sig, const CommBackend &be,
                          bool async) {
  AllGatherShape s = checkAllGather(sig);
  Communicator &comm = *s.comm;
  int64_t g = s.groupSize, bytes = s.bytes;
  CommBlocks b = s.blocks;
  Device dev = be.device();
  if (g == 1)
    return oneRank(sig, async, bytes, dev);
  if (b.outer == 1)
    return finish(sig, async, [&comm, bytes](void *const *p) {
      return started(comm.allGather(p[0], p[1], bytes));
    });
  Scratch tmp = dev->scratch(bytes * g);
  return finish(sig, async, [&comm, dev, bytes, b, g, tmp](void *const *p) {
    void *y = p[1];
    return started(comm.allGather(p[0], tmp.get(), bytes),
                   [dev, y, b, g, tmp] { dev->unpack(y, tmp.get(), b, g); });
  });
}

BoundKernel bindReduceScatter(const KernelSignature &sig, const CommBackend &be,
                              bool async) {
  ReduceScatterShape s = checkReduceScatter(sig, be.reducible);
  Communicator &comm = *s.comm;
  int64_t g = s.groupSize, count = s.count;
  DType dtype = s.dtype;
  ReduceOp op = s.op;
  CommBlocks b = s.blocks;
  Device dev = be.device();
  if (g == 1)
    return oneRank(sig, async, s.bytes, dev);
  if (b.outer == 1)
    return finish(sig, async, [&comm, count, dtype, op](void *const *p) {
      return started(comm.reduceScatter(p[0], p[1], count, dtype, op));
    });
  Scratch tmp = dev->scratch(s.bytes);
  return finish(
      sig, async, [&comm, dev, count, dtype, op, b, g, tmp](void *const *p) {
        dev->pack(tmp.get(), p[0], b, g);
        return started(comm.reduceScatter(tmp.get(), p[1], count, dtype, op),
                       [tmp] {}); // keeps the staging alive until the wait
      });
}

BoundKernel bindAllToAll(const KernelSignature &sig, const CommBackend &be,
                         bool async) {
  AllToAllShape s = checkAllToAll(sig);
  Communicator &comm = *s.comm;
  int64_t g = s.groupSize, pieceBytes = s.pieceBytes, bytes = s.bytes;
  CommBlocks split = s.split, concat = s.concat;
  Device dev = be.device();
  if (g == 1)
    return oneRank(sig, async, bytes, dev);
  bool packSend = split.outer != 1, unpackRecv = concat.outer != 1;
  // A separate send buffer also serves the in-place case (MPI and NCCL
  // need distinct buffers for an all-to-all).
  Scratch send = dev->scratch(bytes);
  Scratch recv = dev->scratch(unpackRecv ? bytes : 0);
  return finish(sig, async,
                [&comm, dev, split, concat, g, pieceBytes, packSend, unpackRecv,
                 send, recv, bytes](void *const *p) {
                  const void *x = p[0];
                  void *y = p[1];
                  const void *src = x;
                  if (packSend) {
                    dev->pack(send.get(), x, split, g);
                    src = send.get();
                  } else if (x == y) {
                    dev->copy(send.get(), x, bytes);
                    src = send.get();
                  }
                  void *dst = unpackRecv ? recv.get() : y;
                  std::function<void()> after = [send] {};
                  if (unpackRecv)
                    after = [dev, y, concat, g, send, recv] {
                      dev->unpack(y, recv.get(), concat, g);
                    };
                  return started(comm.allToAll(src, dst, pieceBytes),
                                 std::move(after));
                });
}

BoundKernel bindBroadcast(const KernelSignature &sig, const CommBackend &be,
                          bool async) {
  BroadcastShape s = checkCommBroadcast(sig);
  Communicator &comm = *s.comm;
  int64_t root = s.root, bytes = s.bytes;
  Device dev = be.device();
  bool single = comm.size() == 1;
  return finish(sig, async, [&comm, dev, root, bytes, single](void *const *p) {
    if (comm.rank() == root)
      dev->copy(p[1], p[0], bytes);
    if (single)
      return done();
    return started(comm.broadcast(p[1], bytes, root));
  });
}

BoundKernel bindPpermute(const KernelSignature &sig, const CommBackend &be,
                         bool async) {
  PpermuteShape s = checkPpermute(sig);
  Communicator &comm = *s.comm;
  int64_t from = s.from, to = s.to, bytes = s.bytes;
  Device dev = be.device();
  // In place, the send reads a copy of the operand.
  Scratch copy = dev->scratch(to >= 0 && from >= 0 ? bytes : 0);
  bool single = comm.size() == 1;
  return finish(sig, async,
                [&comm, dev, from, to, bytes, copy, single](void *const *p) {
                  if (single) { // 0 -> 0 is a copy; no pair: zeros
                    if (from >= 0)
                      dev->copy(p[1], p[0], bytes);
                    else if (bytes > 0)
                      dev->zero(p[1], bytes);
                    return done();
                  }
                  void *src = p[0];
                  if (to >= 0 && from >= 0 && p[0] == p[1]) {
                    dev->copy(copy.get(), p[0], bytes);
                    src = copy.get();
                  }
                  std::vector<Transfer> sends, recvs;
                  if (to >= 0)
                    sends.push_back({to, src, bytes});
                  if (from >= 0)
                    recvs.push_back({from, p[1], bytes});
                  else if (bytes > 0) // no source: zeros
                    dev->zero(p[1], bytes);
                  return started(comm.exchange(sends, recvs), [copy] {});
                });
}

} // namespace

Pending done(std::function<void()> after) {
  return started(std::make_unique<DoneRequest>(), std::move(after));
}

void CommDevice::copy(void *dst, const void *src, int64_t bytes) const {
  if (bytes > 0 && dst != src)
    copyRows(dst, bytes, src, bytes, 1, bytes);
}

void CommDevice::pack(void *dst, const void *src, CommBlocks b,
                      int64_t g) const {
  auto *d = static_cast<unsigned char *>(dst);
  auto *s = static_cast<const unsigned char *>(src);
  for (int64_t j = 0; j < g; ++j)
    copyRows(d + j * b.outer * b.inner, b.inner, s + j * b.inner, g * b.inner,
             b.outer, b.inner);
}

void CommDevice::unpack(void *dst, const void *src, CommBlocks b,
                        int64_t g) const {
  auto *d = static_cast<unsigned char *>(dst);
  auto *s = static_cast<const unsigned char *>(src);
  for (int64_t j = 0; j < g; ++j)
    copyRows(d + j * b.inner, g * b.inner, s + j * b.outer * b.inner, b.inner,
             b.outer, b.inner);
}

void registerCollectiveKernels(KernelTable &t, CommBackend be) {
  using Binder =
      BoundKernel (*)(const KernelSignature &, const CommBackend &, bool async);
  const std::pair<std::string, Binder> collectives[] = {
      {"dist.all_reduce", bindAllReduce},
      {"dist.all_gather", bindAllGather},
      {"dist.reduce_scatter", bindReduceScatter},
      {"dist.all_to_all", bindAllToAll},
      {"dist.broadcast", bindBroadcast},
      {"dist.ppermute", bindPpermute}};
  // Each collective and its `_start` form.
  for (const auto &[op, bind] : collectives)
    for (bool async : {false, true})
      t.add(async ? op + "_start" : op,
            [be, bind = bind, async](const KernelSignature &sig) {
              return bind(sig, be, async);
            });
}

template <bool Async> BoundKernel bindSend(const KernelSignature &sig) {
  checks::PeerShape s = checks::checkPeer(sig, /*send=*/true);
  Communicator &comm = *s.comm;
  int64_t peer = s.peer, bytes = s.bytes;
  return finish(sig, Async, [&comm, peer, bytes](void *const *p) {
    return started(comm.exchange({{peer, p[0], bytes}}, {}));
  });
}

template <bool Async> BoundKernel bindRecv(const KernelSignature &sig) {
  checks::PeerShape s = checks::checkPeer(sig, /*send=*/false);
  Communicator &comm = *s.comm;
  int64_t peer = s.peer, bytes = s.bytes;
  return finish(sig, Async, [&comm, peer, bytes](void *const *p) {
    return started(comm.exchange({}, {{peer, p[0], bytes}}));
  });
}

template BoundKernel bindSend<false>(const KernelSignature &);
template BoundKernel bindSend<true>(const KernelSignature &);
template BoundKernel bindRecv<false>(const KernelSignature &);
template BoundKernel bindRecv<true>(const KernelSignature &);

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

void registerPointToPointKernels(KernelTable &t) {
  t.add("dist.send", bindSend<false>);
  t.add("dist.send_start", bindSend<true>);
  t.add("dist.recv", bindRecv<false>);
  t.add("dist.recv_start", bindRecv<true>);
  t.add("dist.wait", bindWait);
}

} // namespace autoshard::runtime::comm_kernels
