//===- CommKernels.cpp - Backend-neutral parts of the dist.* kernels ------===//

#include "autoshard/runtime/CommKernels.h"
#include "autoshard/runtime/KernelChecks.h"

#include <string>

namespace autoshard::runtime::comm_kernels {

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
