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

/// The ragged all-to-all (`ragged_dim`; dropless MoE, issue 18): the
/// operand is `G` pieces (split_dim) of `slots` slots each, a slot being
/// `rows` rows of `rowBytes` bytes with its valid rows first and zero rows
/// after them. Each member sends only each slot's leading rows up to the
/// last one with a nonzero byte: first one all-to-all of those row counts
/// (one count per slot), then the rows of every pair at once in one
/// exchange (the pairwise transfers of MPI_Alltoallv; NCCL grouped
/// send/recv), and the receiver zero-fills the rest. Rows past the last
/// nonzero one are zero, so the result equals the dense all-to-all's bit
/// for bit whatever the values; the traffic is the rows in use (the tokens
/// actually routed) rather than the whole capacity.
class RaggedAllToAll {
public:
  RaggedAllToAll(const AllToAllShape &s, Device dev)
      : comm(*s.comm), dev(std::move(dev)), g(s.groupSize), bytes(s.bytes),
        rowBytes(s.rowBytes), slotBytes(s.raggedRows * s.rowBytes),
        rows(s.raggedRows), splitSlots(s.split.inner / slotBytes),
        concatSlots(s.concat.inner / slotBytes),
        slots(s.split.outer * splitSlots), me(comm.rank()) {
    used.resize(g * slots);
    sendCounts.resize(g * slots);
    recvCounts.resize(g * slots);
    sendOffset.resize(g + 1);
    recvOffset.resize(g + 1);
    int64_t countBytes = g * slots * static_cast<int64_t>(sizeof(int64_t));
    sendStage = this->dev->scratch(bytes);
    recvStage = this->dev->scratch(bytes);
    countsOut = this->dev->scratch(countBytes);
    countsIn = this->dev->scratch(countBytes);
  }

  /// Counts and packs the rows, and posts the exchange of the counts. The
  /// start never waits for the other members (dist-verify-comm's model of a
  /// `*_start`): the returned request's wait completes the counts, then
  /// posts and completes the rows' exchange; its step writes the result `y`.
  Pending start(const void *x, void *y) {
    auto *src = static_cast<const unsigned char *>(x);
    auto *stage = static_cast<unsigned char *>(sendStage.get());
    dev->usedRows(x, g * slots, rows, rowBytes, used.data());
    // Pack piece j's slots (in the piece's own row-major order) for member j.
    for (int64_t j = 0; j < g; ++j) {
      sendOffset[j + 1] = sendOffset[j];
      for (int64_t t = 0; t < slots; ++t) {
        int64_t slot = operandSlot(j, t), n = used[slot];
        sendCounts[j * slots + t] = n;
        dev->copy(stage + sendOffset[j + 1], src + slot * slotBytes,
                  n * rowBytes);
        sendOffset[j + 1] += n * rowBytes;
      }
    }
    dev->upload(countsOut.get(), sendCounts.data(), g * countBytes());
    auto counts = comm.allToAll(countsOut.get(), countsIn.get(), countBytes());
    return started(std::make_unique<RowsRequest>(*this, std::move(counts)),
                   [this, y] { unpack(y); });
  }

private:
  /// The rows' exchange, posted once the counts have arrived.
  class RowsRequest : public CommRequest {
  public:
    RowsRequest(RaggedAllToAll &op, std::unique_ptr<CommRequest> counts)
        : op(op), counts(std::move(counts)) {}
    void wait() override {
      counts->wait();
      op.exchangeRows()->wait();
    }

  private:
    RaggedAllToAll &op;
    std::unique_ptr<CommRequest> counts;
  };

  int64_t countBytes() const {
    return slots * static_cast<int64_t>(sizeof(int64_t));
  }

  /// Reads the counts received and posts every pair's rows at once.
  std::unique_ptr<CommRequest> exchangeRows() {
    dev->download(recvCounts.data(), countsIn.get(), g * countBytes());
    for (int64_t i = 0; i < g; ++i) {
      recvOffset[i + 1] = recvOffset[i];
      for (int64_t t = 0; t < slots; ++t) {
        int64_t n = recvCounts[i * slots + t];
        if (n < 0 || n > rows)
          throw CommError("ragged all_to_all: member " + std::to_string(i) +
                          " announced " + std::to_string(n) +
                          " rows for a slot of " + std::to_string(rows));
        recvOffset[i + 1] += n * rowBytes;
      }
    }
    std::vector<Transfer> sends, recvs;
    auto *stage = static_cast<unsigned char *>(sendStage.get());
    auto *in = static_cast<unsigned char *>(recvStage.get());
    for (int64_t j = 0; j < g; ++j) {
      int64_t out = sendOffset[j + 1] - sendOffset[j];
      int64_t back = recvOffset[j + 1] - recvOffset[j];
      if (j != me && out > 0)
        sends.push_back({j, stage + sendOffset[j], out});
      if (j != me && back > 0)
        recvs.push_back({j, in + recvOffset[j], back});
    }
    return comm.exchange(sends, recvs);
  }

  /// Operand slot of piece `j`'s slot `t`: x as [outer, G, inner].
  int64_t operandSlot(int64_t j, int64_t t) const {
    return ((t / splitSlots) * g + j) * splitSlots + t % splitSlots;
  }
  /// Result slot of member `i`'s piece's slot `t`: y as [outer, G, inner].
  int64_t resultSlot(int64_t i, int64_t t) const {
    return ((t / concatSlots) * g + i) * concatSlots + t % concatSlots;
  }
  void unpack(void *y) const {
    auto *dst = static_cast<unsigned char *>(y);
    dev->zero(y, bytes);
    for (int64_t i = 0; i < g; ++i) {
      // This member's own piece never left the send staging buffer.
      const auto *src =
          i == me ? static_cast<const unsigned char *>(sendStage.get()) +
                        sendOffset[me]
                  : static_cast<const unsigned char *>(recvStage.get()) +
                        recvOffset[i];
      for (int64_t t = 0; t < slots; ++t) {
        int64_t n = (i == me ? sendCounts : recvCounts)[i * slots + t];
        dev->copy(dst + resultSlot(i, t) * slotBytes, src, n * rowBytes);
        src += n * rowBytes;
      }
    }
  }

  Communicator &comm;
  Device dev;
  int64_t g, bytes, rowBytes, slotBytes, rows;
  int64_t splitSlots, concatSlots, slots, me;
  std::vector<int64_t> used, sendCounts, recvCounts, sendOffset, recvOffset;
  Scratch sendStage, recvStage, countsOut, countsIn;
};

BoundKernel bindAllToAll(const KernelSignature &sig, const CommBackend &be,
                         bool async) {
  AllToAllShape s = checkAllToAll(sig);
  Communicator &comm = *s.comm;
  int64_t g = s.groupSize, pieceBytes = s.pieceBytes, bytes = s.bytes;
  CommBlocks split = s.split, concat = s.concat;
  Device dev = be.device();
  if (g == 1)
    return oneRank(sig, async, bytes, dev);
  if (s.raggedRows > 0) {
    auto ragged = std::make_shared<RaggedAllToAll>(s, dev);
    return finish(sig, async, [ragged](void *const *p) {
      Pending pending = ragged->start(p[0], p[1]);
      // The wait's step runs on the object: keep it alive with it.
      pending.finish = [ragged, after = std::move(pending.finish)] { after(); };
      return pending;
    });
  }
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
