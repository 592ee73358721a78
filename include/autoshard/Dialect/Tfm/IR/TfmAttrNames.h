//===- TfmAttrNames.h - Names of the tfm discardable attributes -*- C++ -*-===//
//
// The `tfm.*` attribute names of the autodiff contract (spec/autodiff.md):
// what the model builder (python/autoshard/models/builder.py), tfm-autodiff
// and tfm-recompute put on functions, their arguments and results, and the
// module, and what later passes read. Passes name them through these
// constants, never by a string of their own.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_TFM_IR_TFMATTRNAMES_H
#define AUTOSHARD_DIALECT_TFM_IR_TFMATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace autoshard::tfm {

//===--- Argument and result attributes -----------------------------------===//

/// Name of the parameter an argument or result holds (string).
inline constexpr llvm::StringLiteral kParamAttrName = "tfm.param";
/// Display name of a block function's argument (string; builder).
inline constexpr llvm::StringLiteral kNameAttrName = "tfm.name";
/// What a parameter or block argument is in the model (string, e.g.
/// `attn_q`, `expert_up`, `hidden`); the plans select layouts by it. Its
/// values are the cases of tfm::Role (TfmAttrs.h: getRole, symbolizeRole).
inline constexpr llvm::StringLiteral kRoleAttrName = "tfm.role";
/// On a bias: the parameter it is added to (string).
inline constexpr llvm::StringLiteral kBiasOfAttrName = "tfm.bias_of";
/// Which input slot an entry argument is (string: `tokens`, `labels`,
/// `step`, `lr`, ...).
inline constexpr llvm::StringLiteral kInputAttrName = "tfm.input";
/// Which output slot an entry result is (string: `loss`, `grad_norm`,
/// `logits`).
inline constexpr llvm::StringLiteral kOutputAttrName = "tfm.output";
/// Name of the optimizer state an argument or result holds (string).
inline constexpr llvm::StringLiteral kStateAttrName = "tfm.state";
/// Kind of an optimizer state (string: `adam_m`, `adam_v`).
inline constexpr llvm::StringLiteral kStateKindAttrName = "tfm.state_kind";
/// The parameter an optimizer state belongs to (string).
inline constexpr llvm::StringLiteral kStateOfAttrName = "tfm.state_of";
/// Initialiser of a state (string: `zeros`, `normal`, ...).
inline constexpr llvm::StringLiteral kInitAttrName = "tfm.init";
/// Standard deviation of a `normal` initialiser (float).
inline constexpr llvm::StringLiteral kInitStdAttrName = "tfm.init_std";
/// On a parameter whose vocabulary dim is padded: the real vocabulary size
/// (integer), the role telling which dim holds the vocabulary (`lm_head`
/// `[H, Vp]`: the last; embeddings `[Vp, H]`: the first).
inline constexpr llvm::StringLiteral kVocabSizeAttrName = "tfm.vocab_size";
/// On a result of a recomputation function: the index of the residual of
/// the backward function it rebuilds (integer; tfm-recompute).
inline constexpr llvm::StringLiteral kResidualAttrName = "tfm.residual";

//===--- Function and call attributes -------------------------------------===//

/// What a function that tfm-autodiff, tfm-recompute or the backward split
/// made computes (`#tfm.func_kind<...>`, FuncKind in TfmAttrs.td).
inline constexpr llvm::StringLiteral kFuncKindAttrName = "tfm.func_kind";

//===--- Module attributes and the recompute marker -----------------------===//

/// The model's configuration (dictionary; builder).
inline constexpr llvm::StringLiteral kModelAttrName = "tfm.model";
/// Microbatches per step tfm-autodiff built (integer).
inline constexpr llvm::StringLiteral kMicrobatchesAttrName = "tfm.microbatches";
/// On the module: the recomputation mode tfm-recompute applied (string);
/// on a call: the call re-runs a forward for its backward (unit); on a
/// function: it recomputes part of a forward (unit: selective
/// recomputation's `@B_selective_bwd`, and the halves the backward split
/// cuts from it).
inline constexpr llvm::StringLiteral kRecomputeAttrName = "tfm.recompute";
/// On the module: the precision tfm-mixed-precision applied (string).
inline constexpr llvm::StringLiteral kMixedPrecisionAttrName =
    "tfm.mixed_precision";

} // namespace autoshard::tfm

#endif // AUTOSHARD_DIALECT_TFM_IR_TFMATTRNAMES_H
