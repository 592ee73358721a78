//===- Backend.cpp - Kernel table and allocation accounting ---------------===//

#include "autoshard/runtime/Backend.h"
#include "autoshard/runtime/Ops.h"

#include <algorithm>

namespace autoshard::runtime {

void KernelSignature::fail(const std::string &message) const {
  throw ArtifactError(place + ": " + message);
}

void KernelTable::add(std::string_view op, KernelBinder binder) {
  binders[std::string(op)] = binder;
}

KernelBinder KernelTable::lookup(std::string_view op) const {
  auto it = binders.find(op);
  return it == binders.end() ? nullptr : it->second;
}

std::vector<std::string> KernelTable::missingOps() const {
  std::vector<std::string> missing;
  for (const OpSpec &op : allOps())
    if (!lookup(op.name))
      missing.emplace_back(op.name);
  return missing;
}

BoundKernel KernelTable::bind(const KernelSignature &signature,
                              std::string_view backendName) const {
  KernelBinder binder = lookup(signature.op);
  if (!binder)
    signature.fail("the " + std::string(backendName) +
                   " backend has no kernel for op '" +
                   std::string(signature.op) + "'");
  return binder(signature);
}

void *Backend::allocate(int64_t bytes) {
  if (bytes <= 0)
    return nullptr;
  void *ptr = allocateImpl(bytes);
  current += bytes;
  peak = std::max(peak, current);
  return ptr;
}

void Backend::deallocate(void *ptr, int64_t bytes) {
  if (!ptr)
    return;
  deallocateImpl(ptr);
  current -= bytes;
}

} // namespace autoshard::runtime
