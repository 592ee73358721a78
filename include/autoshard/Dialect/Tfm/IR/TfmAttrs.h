//===- TfmAttrs.h - Transformer graph attributes ----------------*- C++ -*-===//

#ifndef AUTOSHARD_DIALECT_TFM_IR_TFMATTRS_H
#define AUTOSHARD_DIALECT_TFM_IR_TFMATTRS_H

#include "autoshard/Dialect/Tfm/IR/TfmDialect.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

#include <optional>

#include "autoshard/Dialect/Tfm/IR/TfmEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "autoshard/Dialect/Tfm/IR/TfmAttrs.h.inc"

namespace autoshard::tfm {

/// The kind recorded on function `func` (`tfm.func_kind`); nullopt for a
/// null `func` or a function without one (e.g. the builder's).
std::optional<FuncKind> getFuncKind(mlir::Operation *func);
/// Records `kind` on function `func` (`tfm.func_kind`).
void setFuncKind(mlir::Operation *func, FuncKind kind);
/// Whether function `func` computes gradients: a backward function or one
/// of the two halves the backward split cuts it into (input and weight
/// gradients).
bool isGradientFunc(mlir::Operation *func);

/// The role `attrs` (an argument's or result's attributes) records
/// (`tfm.role`); nullopt without one or for a string that is no Role.
std::optional<Role> getRole(mlir::DictionaryAttr attrs);
/// An MoE expert weight (`expert_up`, `expert_gate`, `expert_down`): its
/// dim 0 indexes the experts.
bool isExpertRole(Role role);
/// A vocabulary table (`embedding` [Vp, H], `lm_head` [H, Vp]).
bool isVocabRole(Role role);

} // namespace autoshard::tfm

#endif // AUTOSHARD_DIALECT_TFM_IR_TFMATTRS_H
