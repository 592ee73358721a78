//===- ShardingInterfaces.h - The sharding contract -------------*- C++ -*-===//
//
// The factor sharding rule and the partition context of the dist sharding
// interfaces (ShardingInterfaces.td). The dist attribute and op classes are
// only declared here, so that a dialect can promise these interfaces for
// its ops (`declarePromisedInterface`) without depending on the dist
// dialect; users of `PartitionContext` include DistOps.h.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_DIST_INTERFACES_SHARDINGINTERFACES_H
#define AUTOSHARD_DIALECT_DIST_INTERFACES_SHARDINGINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace autoshard::dist {

class MeshOp;
class ShardingAttr;

/// How sharding a factor of an op's iteration space behaves.
enum class FactorKind {
  /// Operands and results split alike; no communication (batch, heads).
  PassThrough,
  /// Summed over inside the op: sharding it leaves results partial (sum).
  Reduction,
  /// Must be whole on every rank (e.g. the normalised dim of layer_norm).
  NeedsReplication,
};

/// The pending reduction that sharding a `Reduction` factor leaves on the
/// results (the `partial = {axis: kind}` of their shardings).
enum class FactorReduction { Sum, Max };

/// Factor-based sharding rule of one op (GSPMD/Shardy style).
/// `operandDims[i][d]` is the factor index of dim `d` of operand `i`, or -1
/// when that dim is not tied to any factor; likewise `resultDims`. A dim not
/// tied to a factor is never sharded by propagation (it is replicated).
///
/// A dim may be larger than its factor (`dim size = k * factor size`): the
/// factor is then the dim's *major* part and the minor part `k` is never
/// sharded. This expresses GQA (q heads `N = G * (N/G)` share the kv-heads
/// factor of size `G`) and reshapes (`[.., H] <-> [.., heads, D]`: the heads
/// factor is the major part of `H`). Sharding such a factor on axes of total
/// size `s` requires `s` to divide the factor size.
///
/// Semantics of sharding factor `f` on mesh axes `A`:
/// * `PassThrough`: every operand and result dim tied to `f` is split on `A`;
///   a result not tied to `f` is complete (only ops with `needsHook[f]`
///   have such results, e.g. the loss of cross_entropy over the vocab).
/// * `Reduction`: operand dims tied to `f` are split on `A`; results not tied
///   to `f` become partial over `A` with `reductionKinds[f]`.
/// * `NeedsReplication`: must not be sharded (operands are gathered).
///
/// The vectors below `resultDims` extend the basic rule; empty means the
/// default for every entry, so older rules stay valid.
struct ShardingRule {
  llvm::SmallVector<int64_t> factorSizes;
  llvm::SmallVector<FactorKind> factorKinds;
  llvm::SmallVector<llvm::SmallVector<int64_t>> operandDims;
  llvm::SmallVector<llvm::SmallVector<int64_t>> resultDims;

  /// Per factor: the reduction a sharded `Reduction` factor leaves pending
  /// on the results. Empty: `Sum` for every factor.
  llvm::SmallVector<FactorReduction> reductionKinds;
  /// Per factor: sharding it is legal only through the op's partition hook,
  /// because the local op on local shapes is not the global op restricted
  /// to the shard (vocab offsets of embedding / cross_entropy, the global
  /// token count of the loss mean, positions of rope / dropout / position
  /// embedding, the double counting of sum_squares). Propagation treats the
  /// factor by its kind; `dist-partition` must call the hook. Empty: none.
  llvm::SmallVector<bool> needsHook;
  /// Groups of operands in which the op is jointly linear (every result is a
  /// linear function of the group, the other operands fixed), e.g. `{lhs,
  /// rhs}` for add, `{lhs}` and `{rhs}` for mul and matmul, `{dy}` for
  /// gradient ops. A result is partial (sum) over axis `a`, without any
  /// communication, when for some group every operand of the group is
  /// partial-sum over `a` and no other operand is partial over `a`; in any
  /// other case partial operands must be reduced before the op.
  llvm::SmallVector<llvm::SmallVector<int64_t>> linearOperandGroups;

  /// Adds a factor and returns its index.
  int64_t addFactor(int64_t size, FactorKind kind, bool hook = false,
                    FactorReduction reduction = FactorReduction::Sum) {
    factorSizes.push_back(size);
    factorKinds.push_back(kind);
    needsHook.resize(factorSizes.size() - 1, false);
    needsHook.push_back(hook);
    reductionKinds.resize(factorSizes.size() - 1, FactorReduction::Sum);
    reductionKinds.push_back(reduction);
    return static_cast<int64_t>(factorSizes.size()) - 1;
  }
  int64_t getNumFactors() const {
    return static_cast<int64_t>(factorSizes.size());
  }
  bool factorNeedsHook(int64_t f) const {
    return f < static_cast<int64_t>(needsHook.size()) && needsHook[f];
  }
  FactorReduction getReduction(int64_t f) const {
    return f < static_cast<int64_t>(reductionKinds.size())
               ? reductionKinds[f]
               : FactorReduction::Sum;
  }
};

/// What a partition hook (PartitionOpInterface::partition) sees of
/// `dist-partition`. Shardings are those of the global values (the local
/// values' actual layouts), all on the mesh `getMesh()`.
class PartitionContext {
public:
  virtual ~PartitionContext();
  /// Builder positioned where the local ops go.
  virtual mlir::OpBuilder &getBuilder() = 0;
  /// The `dist.mesh` op of the shardings.
  virtual MeshOp getMesh() = 0;
  /// Local value of the op's operand `i`, and its actual sharding.
  virtual mlir::Value getLocalOperand(unsigned i) = 0;
  virtual ShardingAttr getOperandSharding(unsigned i) = 0;
  /// Operand `i` resharded to `sharding` (collectives inserted as needed,
  /// reused when the same operand was already resharded the same way).
  virtual mlir::FailureOr<mlir::Value> getOperandAs(unsigned i,
                                                    ShardingAttr sharding) = 0;
  /// A non-partial sharding for operand `i`: the one another user of the
  /// value needs, if any (so that the reduced value can be shared), else
  /// its actual sharding without the partial axes.
  virtual ShardingAttr getPreferredReducedSharding(unsigned i) = 0;
  /// Annotated sharding of result `r` (what propagation asked for).
  virtual ShardingAttr getResultSharding(unsigned r) = 0;
  /// Converts local value `local` of global type `globalType` from sharding
  /// `from` to `to`.
  virtual mlir::FailureOr<mlir::Value>
  reshard(mlir::Value local, mlir::RankedTensorType globalType,
          ShardingAttr from, ShardingAttr to) = 0;
  /// Records the local value of result `r` and the sharding it actually has.
  virtual void setResult(unsigned r, mlir::Value local,
                         ShardingAttr sharding) = 0;
  /// Values a hook computed for `key` (a global value) under `tag` earlier
  /// in the same block (e.g. cross-entropy statistics that the gradient
  /// reuses); null if none.
  virtual llvm::SmallVector<mlir::Value> *lookupMemo(mlir::Value key,
                                                     llvm::StringRef tag) = 0;
  virtual void setMemo(mlir::Value key, llvm::StringRef tag,
                       llvm::ArrayRef<mlir::Value> values) = 0;
};

} // namespace autoshard::dist

#include "autoshard/Dialect/Dist/Interfaces/ShardingInterfaces.h.inc"

namespace autoshard::dist {

/// Fails, with an error on the first such op, when an op nested in `root`
/// belongs to a dialect that promised it `ShardingRuleOpInterface` or
/// `PartitionOpInterface` but whose external models were never attached
/// (a tool that did not register them in its DialectRegistry, e.g. through
/// `autoshard::tfm::registerShardingInterfaceExternalModels`). Passes that
/// read the interfaces call it first: they would otherwise treat such an op
/// as having no rule (computed replicated).
mlir::LogicalResult verifyShardingModelsRegistered(mlir::Operation *root);

} // namespace autoshard::dist

#endif // AUTOSHARD_DIALECT_DIST_INTERFACES_SHARDINGINTERFACES_H
