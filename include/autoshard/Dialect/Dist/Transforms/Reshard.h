//===- Reshard.h - Resharding between two shardings -------------*- C++ -*-===//
//
// The resharding engine of `dist-partition`: converts a per-rank (local)
// tensor from one `#dist.sharding` to another on the same N-D mesh by a
// sequence of collectives and local slices.
//
// Algorithm (correctness first; every step keeps a valid sharding `cur`):
//
// 0. Reduce early. Partial axes that the target neither keeps (with the
//    same reduction) nor shards a dim on are reduced first, by one
//    `dist.all_reduce` per reduction kind (axes in mesh order): reducing
//    commutes with the gathers of step 1, and the value is smallest now.
// 1. Unshard / move (on possibly partial data: gathering and exchanging are
//    linear, so they commute with the pending reduction). For every dim `d`
//    whose current axes are not a prefix of the target's axes for `d`, the
//    axes after the common prefix must leave `d` (a dim's axes are listed
//    major to minor, so only a suffix can be removed). If the minor-most of
//    them, `a`, is the next axis the target adds to another dim `e` (whose
//    current axes are a prefix of its target), one `dist.all_to_all` over
//    `[a]` with `split_dim = e`, `concat_dim = d` moves it; otherwise one
//    `dist.all_gather` over the whole suffix (in its major-to-minor order)
//    on dim `d` removes it. Repeat until every dim's axes are a prefix of
//    its target. This covers axis moves between dims, swapped axis orders
//    within a dim (gather the swapped part, slice it back in order) and
//    3-D meshes alike.
// 2. Reduce-scatter. The remaining partial axes to reduce are those the
//    target shards a dim `d` on. The replicated axes that the target lists
//    before them on `d` are sliced in first (`dist.shard_slice`, local),
//    then one `dist.reduce_scatter` over each run of such partial axes (of
//    one reduction kind) on `d` reduces and shards at once -- so a partial
//    value whose target shards a dim on the partial axes is exactly one
//    reduce-scatter, even after other axes on that dim (`partial = {b}` to
//    `[{a, b}]` is a slice on `a` and a reduce-scatter on `b`, not an
//    all-reduce and a slice).
// 3. Shard. The axes each dim still lacks (replicated so far) are added by
//    one `dist.shard_slice` per dim (no communication).
//
// Turning a non-partial value partial is not supported (no consumer needs
// it: partial values only arise from ops) and is reported as an error.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_DIST_TRANSFORMS_RESHARD_H
#define AUTOSHARD_DIALECT_DIST_TRANSFORMS_RESHARD_H

#include "autoshard/Dialect/Dist/IR/DistOps.h"

#include "mlir/IR/Builders.h"

namespace autoshard::dist {

/// Emits at `builder`'s insertion point the ops that convert `local` (the
/// per-rank piece of a tensor of type `globalType` laid out as `from`) to
/// the layout `to`, and returns the new per-rank value (`local` itself when
/// the shardings are equal). Both shardings must name `mesh` and verify
/// against `globalType`. On failure an error is reported at `loc`.
///
/// `raggedDim`, when set, says that the value is ragged along that dim
/// (zero rows after the valid ones of each slot, `dist.sharding_constraint`'s
/// `ragged_dim`): every `dist.all_to_all` emitted whose split and concat
/// dims both come before it carries it, so that it moves only the rows in
/// use.
mlir::FailureOr<mlir::Value>
reshard(mlir::OpBuilder &builder, mlir::Location loc, MeshOp mesh,
        mlir::Value local, mlir::RankedTensorType globalType, ShardingAttr from,
        ShardingAttr to, std::optional<int64_t> raggedDim = std::nullopt);

} // namespace autoshard::dist

#endif // AUTOSHARD_DIALECT_DIST_TRANSFORMS_RESHARD_H
