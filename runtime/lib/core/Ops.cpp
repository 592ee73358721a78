//===- Ops.cpp - The kernels an artifact may name -------------------------===//

#include "autoshard/runtime/Ops.h"

namespace autoshard::runtime {

bool isCommOp(std::string_view op) {
  return op.substr(0, kCommPrefix.size()) == kCommPrefix;
}

bool isAsyncStartOp(std::string_view op) {
  constexpr std::string_view suffix = "_start";
  return isCommOp(op) && op.size() > suffix.size() &&
         op.substr(op.size() - suffix.size()) == suffix;
}

} // namespace autoshard::runtime
