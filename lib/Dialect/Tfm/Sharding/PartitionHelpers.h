//===- PartitionHelpers.h - Helpers of the tfm partition hooks -*- C++ -*-===//
//
// Shardings, device-group indices and collectives as the partition hooks
// (PartitionHooks.cpp, RingAttention.cpp) build them. Private to the tfm
// sharding library.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_LIB_DIALECT_TFM_SHARDING_PARTITIONHELPERS_H
#define AUTOSHARD_LIB_DIALECT_TFM_SHARDING_PARTITIONHELPERS_H

#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Interfaces/ShardingInterfaces.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

namespace autoshard::tfm::partition {

using namespace mlir;
using dist::PartitionContext;
using dist::ShardingAttr;

using AxisList = llvm::SmallVector<mlir::StringAttr>;

inline ArrayAttr axesAttr(MLIRContext *ctx, ArrayRef<StringAttr> axes) {
  return ArrayAttr::get(ctx, SmallVector<Attribute>(axes.begin(), axes.end()));
}

/// A non-partial sharding with the given per-dim axes.
inline ShardingAttr makeSharding(FlatSymbolRefAttr mesh,
                                 ArrayRef<AxisList> dims,
                                 ArrayRef<StringAttr> partialSum = {}) {
  MLIRContext *ctx = mesh.getContext();
  SmallVector<ArrayAttr> dimAttrs;
  for (const AxisList &axes : dims)
    dimAttrs.push_back(axesAttr(ctx, axes));
  SmallVector<dist::PartialAxis> partial;
  for (StringAttr axis : partialSum)
    partial.push_back({axis, dist::ReductionKind::Sum});
  return ShardingAttr::get(ctx, mesh, dimAttrs, partial);
}

/// `axes` without those in `drop`.
inline AxisList without(ArrayRef<StringAttr> axes, ArrayRef<StringAttr> drop) {
  AxisList out;
  for (StringAttr a : axes)
    if (!llvm::is_contained(drop, a))
      out.push_back(a);
  return out;
}

/// All axes named by dims `[begin, end)` of `sharding`.
inline AxisList dimAxesIn(ShardingAttr sharding, unsigned begin, unsigned end) {
  AxisList out;
  for (unsigned d = begin; d < end; ++d)
    llvm::append_range(out, sharding.getDimAxes(d));
  return out;
}

/// Axes in mesh order (the order of a collective's group that does not
/// depend on a dim layout).
inline AxisList inMeshOrder(dist::MeshOp mesh, ArrayRef<StringAttr> axes) {
  AxisList sorted(axes);
  llvm::sort(sorted, [&](StringAttr a, StringAttr b) {
    return *mesh.getAxisIndex(a.getValue()) < *mesh.getAxisIndex(b.getValue());
  });
  return sorted;
}

inline Value allReduce(OpBuilder &b, Location loc, dist::MeshOp mesh,
                       Value input, ArrayRef<StringAttr> axes,
                       dist::ReductionKind kind) {
  MLIRContext *ctx = b.getContext();
  return dist::AllReduceOp::create(
      b, loc, input.getType(), input,
      FlatSymbolRefAttr::get(mesh.getSymNameAttr()), axesAttr(ctx, axes),
      dist::ReductionKindAttr::get(ctx, kind));
}

inline Value axisIndex(OpBuilder &b, Location loc, dist::MeshOp mesh,
                       ArrayRef<StringAttr> axes) {
  return dist::AxisIndexOp::create(
      b, loc, RankedTensorType::get({}, b.getI64Type()),
      FlatSymbolRefAttr::get(mesh.getSymNameAttr()),
      axesAttr(b.getContext(), axes));
}

inline int64_t groupSize(dist::MeshOp mesh, ArrayRef<StringAttr> axes) {
  int64_t n = 1;
  for (StringAttr a : axes)
    n *= mesh.getAxisSize(a.getValue());
  return n;
}

/// The partial (sum) axes of `order`, in its order, that `other` is also
/// partial (sum) over, except those in `exclude`: the partial sums that an
/// op linear in its input passes through unreduced.
inline AxisList sharedPartialSums(ShardingAttr order, ShardingAttr other,
                                  ArrayRef<StringAttr> exclude) {
  AxisList out;
  for (const dist::PartialAxis &p : order.getPartialAxes())
    if (p.kind == dist::ReductionKind::Sum &&
        other.getPartialKind(p.axis.getValue()) == dist::ReductionKind::Sum &&
        !llvm::is_contained(exclude, p.axis))
      out.push_back(p.axis);
  return out;
}

/// The op's operands `0..shardings.size()-1` resharded to `shardings`, in
/// operand order; fails when any of them cannot be (after asking for all,
/// so that every failing operand reports).
inline FailureOr<SmallVector<Value>>
operandsAs(PartitionContext &ctx, ArrayRef<ShardingAttr> shardings) {
  SmallVector<FailureOr<Value>> locals;
  for (auto [i, sharding] : llvm::enumerate(shardings))
    locals.push_back(ctx.getOperandAs(i, sharding));
  SmallVector<Value> out;
  for (FailureOr<Value> &local : locals) {
    if (failed(local))
      return failure();
    out.push_back(*local);
  }
  return out;
}

inline dist::MeshOp meshOf(PartitionContext &ctx) { return ctx.getMesh(); }

inline FlatSymbolRefAttr meshRef(PartitionContext &ctx) {
  return FlatSymbolRefAttr::get(meshOf(ctx).getSymNameAttr());
}

/// The zig-zag chunk count of the sequence `op` (a TfmSequenceOrder op)
/// works on; 0 in the original order (dist-zigzag-sequence).
inline int64_t sequenceZigzagChunks(Operation *op) {
  return cast<TfmSequenceOrderOpInterface>(op).getSequenceZigzagChunks();
}

/// Gives `local`, a per-rank form of the global op `global`, the sequence
/// order of `global`; returns `local`.
template <typename LocalOp>
LocalOp keepSequenceOrder(Operation *global, LocalOp local) {
  cast<TfmSequenceOrderOpInterface>(local.getOperation())
      .setSequenceZigzagChunks(sequenceZigzagChunks(global));
  return local;
}

} // namespace autoshard::tfm::partition

#endif // AUTOSHARD_LIB_DIALECT_TFM_SHARDING_PARTITIONHELPERS_H
