//===- EntryAbi.h - The entry slots shard-run feeds and reads ---*- C++ -*-===//
//
// The roles of the entry inputs shard-run feeds and the outputs it reads
// (docs/artifact-format.md, "entries"). Shared by the runtime's entry I/O,
// which checks their types, and rt-export, which refuses such a slot that
// is partial at compile time. Plain C++17: no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_RUNTIME_ENTRYABI_H
#define AUTOSHARD_RUNTIME_ENTRYABI_H

#include <string_view>

namespace autoshard::runtime::entry_abi {

/// Inputs shard-run feeds: the token ids and labels of a batch (i32/i64
/// [batch, seq], global shape), the step (i64[]) and learning rate (f32[]).
inline constexpr std::string_view kInputRoles[] = {"tokens", "labels", "step",
                                                   "lr"};
/// Outputs shard-run reads: the loss and gradient norm (f32[]) and the
/// logits (f32 [batch, seq, padded vocab]).
inline constexpr std::string_view kOutputRoles[] = {"loss", "grad_norm",
                                                    "logits"};

/// Whether shard-run feeds (`input`) or reads (otherwise) a slot of `role`.
constexpr bool isRunnerRole(std::string_view role, bool input) {
  if (input) {
    for (std::string_view r : kInputRoles)
      if (r == role)
        return true;
    return false;
  }
  for (std::string_view r : kOutputRoles)
    if (r == role)
      return true;
  return false;
}

} // namespace autoshard::runtime::entry_abi

#endif // AUTOSHARD_RUNTIME_ENTRYABI_H
