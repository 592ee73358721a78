//===- TfmTraits.h - Op kinds the generic passes ask about ------*- C++ -*-===//
//
// Marker traits (declared in TfmOps.td) that say what an op is for the
// passes that treat some ops specially: the training loss and its gradient
// seed, the optimizer step, reductions that split over their operands, the
// ops selective recomputation re-runs, and gradient ops. Passes test the trait,
// never the op's name or class.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_TFM_IR_TFMTRAITS_H
#define AUTOSHARD_DIALECT_TFM_IR_TFMTRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace autoshard::tfm::trait {

/// Computes the training loss (a scalar mean over the tokens); the
/// forward ends at it.
template <typename ConcreteType>
class TrainingLoss
    : public mlir::OpTrait::TraitBase<ConcreteType, TrainingLoss> {};

/// Seeds the backward: the gradient of the training loss with respect to
/// the logits; every other gradient depends on one.
template <typename ConcreteType>
class LossGradientSeed
    : public mlir::OpTrait::TraitBase<ConcreteType, LossGradientSeed> {};

/// Part of the optimizer step that follows the backward (global gradient
/// norm, clip coefficient, parameter update).
template <typename ConcreteType>
class OptimizerStep
    : public mlir::OpTrait::TraitBase<ConcreteType, OptimizerStep> {};

/// An optimizer statistic: a scalar that is neither a forward value nor a
/// gradient (the global gradient norm's sum of squares, the clip
/// coefficient).
template <typename ConcreteType>
class OptimizerStatistic
    : public mlir::OpTrait::TraitBase<ConcreteType, OptimizerStatistic> {};

/// Its one result is the sum over its operands of a term of each operand
/// alone: the same op on a subset of the operands gives a partial sum, and
/// the partial sums of a partition of the operands add up to the result
/// (so it can be split over the ranks that hold the operands).
template <typename ConcreteType>
class SumOverOperands
    : public mlir::OpTrait::TraitBase<ConcreteType, SumOverOperands> {};

/// Memory-bound and a few FLOPs per element (norms, activations,
/// elementwise ops, views): selective recomputation re-runs it in the
/// backward instead of keeping its result.
template <typename ConcreteType>
class CheapToRecompute
    : public mlir::OpTrait::TraitBase<ConcreteType, CheapToRecompute> {};

/// A gradient op: its results are gradients (of the loss with respect to
/// its forward op's operands) wherever it appears, so it is part of the
/// backward by definition.
template <typename ConcreteType>
class Gradient : public mlir::OpTrait::TraitBase<ConcreteType, Gradient> {};

/// A gradient op that computes a weight's gradient and nothing the rest of
/// the backward needs: the W part that zero-bubble schedules run later than
/// the input gradient.
template <typename ConcreteType>
class WeightGradient
    : public mlir::OpTrait::TraitBase<ConcreteType, WeightGradient> {};

} // namespace autoshard::tfm::trait

#endif // AUTOSHARD_DIALECT_TFM_IR_TFMTRAITS_H
