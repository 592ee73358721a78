//===- Reshard.cpp - Resharding between two shardings ---------------------===//
//
// See Reshard.h for the algorithm.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/Transforms/Reshard.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace autoshard::dist;

namespace {

using AxisList = SmallVector<StringAttr>;

/// A sharding under construction: per-dim axes and partial axes.
struct Layout {
  SmallVector<AxisList> dims;
  SmallVector<PartialAxis> partial;

  explicit Layout(ShardingAttr s) {
    for (unsigned d = 0; d < s.getRank(); ++d)
      dims.push_back(s.getDimAxes(d));
    partial.assign(s.getPartialAxes().begin(), s.getPartialAxes().end());
  }

  std::optional<ReductionKind> partialKind(StringAttr axis) const {
    for (const PartialAxis &p : partial)
      if (p.axis == axis)
        return p.kind;
    return std::nullopt;
  }
};

bool isPrefix(ArrayRef<StringAttr> prefix, ArrayRef<StringAttr> of) {
  return prefix.size() <= of.size() && of.take_front(prefix.size()) == prefix;
}

class Resharder {
public:
  Resharder(OpBuilder &b, Location loc, MeshOp mesh, RankedTensorType global,
            std::optional<int64_t> raggedDim)
      : b(b), loc(loc), mesh(mesh), global(global),
        meshRef(FlatSymbolRefAttr::get(mesh.getSymNameAttr())),
        raggedDim(raggedDim) {}

  FailureOr<Value> run(Value value, ShardingAttr from, ShardingAttr to);

private:
  ArrayAttr axesAttr(ArrayRef<StringAttr> axes) {
    return b.getArrayAttr(SmallVector<Attribute>(axes.begin(), axes.end()));
  }
  int64_t groupSize(ArrayRef<StringAttr> axes) {
    int64_t n = 1;
    for (StringAttr a : axes)
      n *= mesh.getAxisSize(a.getValue());
    return n;
  }
  /// `value`'s type with dim `d` multiplied by `mul` and divided by `div`.
  RankedTensorType withDim(Value value, int64_t d, int64_t mul, int64_t div) {
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[d] = shape[d] * mul / div;
    return type.clone(shape);
  }

  Value allGather(Value v, ArrayRef<StringAttr> axes, int64_t dim) {
    return AllGatherOp::create(b, loc, withDim(v, dim, groupSize(axes), 1), v,
                               meshRef, axesAttr(axes),
                               b.getI64IntegerAttr(dim));
  }
  Value allToAll(Value v, ArrayRef<StringAttr> axes, int64_t splitDim,
                 int64_t concatDim) {
    int64_t n = groupSize(axes);
    RankedTensorType type = withDim(v, splitDim, 1, n);
    SmallVector<int64_t> shape(type.getShape());
    shape[concatDim] *= n;
    // The slots of a ragged value are the indices of the dims before
    // `raggedDim`: it applies when both moved dims are among them.
    IntegerAttr ragged;
    if (raggedDim && *raggedDim > std::max(splitDim, concatDim))
      ragged = b.getI64IntegerAttr(*raggedDim);
    return AllToAllOp::create(b, loc, type.clone(shape), v, meshRef,
                              axesAttr(axes), b.getI64IntegerAttr(splitDim),
                              b.getI64IntegerAttr(concatDim), ragged);
  }
  Value reduceScatter(Value v, ArrayRef<StringAttr> axes, int64_t dim,
                      ReductionKind kind) {
    return ReduceScatterOp::create(
        b, loc, withDim(v, dim, 1, groupSize(axes)), v, meshRef, axesAttr(axes),
        b.getI64IntegerAttr(dim), ReductionKindAttr::get(b.getContext(), kind));
  }
  Value allReduce(Value v, ArrayRef<StringAttr> axes, ReductionKind kind) {
    return AllReduceOp::create(b, loc, v.getType(), v, meshRef, axesAttr(axes),
                               ReductionKindAttr::get(b.getContext(), kind));
  }
  Value shardSlice(Value v, ArrayRef<StringAttr> axes, int64_t dim) {
    return ShardSliceOp::create(b, loc, withDim(v, dim, 1, groupSize(axes)), v,
                                meshRef, axesAttr(axes),
                                b.getI64IntegerAttr(dim));
  }

  OpBuilder &b;
  Location loc;
  MeshOp mesh;
  RankedTensorType global;
  FlatSymbolRefAttr meshRef;
  std::optional<int64_t> raggedDim;
};

FailureOr<Value> Resharder::run(Value value, ShardingAttr from,
                                ShardingAttr to) {
  Layout cur(from);
  Layout dst(to);
  unsigned rank = cur.dims.size();

  // Replicated -> partial on an axis (e.g. a replicated gradient added to a
  // partial one): with a sum, each member takes 1/N of the value so that the
  // group's sum is the value again (PyTorch DTensor's Replicate -> Partial);
  // with max every member already holds the maximum. A value sharded on the
  // axis, or partial with another reduction, cannot become partial.
  double factor = 1.0;
  for (const PartialAxis &p : dst.partial) {
    std::optional<ReductionKind> kind = cur.partialKind(p.axis);
    if (kind == p.kind)
      continue;
    bool sharded = llvm::any_of(cur.dims, [&](const AxisList &axes) {
      return llvm::is_contained(axes, p.axis);
    });
    if (kind || sharded ||
        (p.kind != ReductionKind::Sum && p.kind != ReductionKind::Max))
      return emitError(loc)
             << "cannot reshard " << from << " to " << to << ": axis '"
             << p.axis.getValue() << "' would become partial";
    if (p.kind == ReductionKind::Sum)
      factor /= static_cast<double>(groupSize({p.axis}));
    cur.partial.push_back(p);
  }
  if (factor != 1.0) {
    if (!isa<FloatType>(cast<ShapedType>(value.getType()).getElementType()))
      return emitError(loc) << "cannot reshard " << from << " to " << to
                            << ": an integer value cannot become partial";
    value = autoshard::tfm::ScaleOp::create(b, loc, value, factor);
  }

  // Partial axes that the target does not keep (or keeps with another
  // reduction).
  auto toReduce = [&](StringAttr axis) {
    std::optional<ReductionKind> kind = cur.partialKind(axis);
    return kind && dst.partialKind(axis) != kind;
  };
  // All-reduces the partial axes to reduce that satisfy `pred`: one
  // all_reduce per reduction kind, axes in mesh order.
  auto allReduceWhere = [&](llvm::function_ref<bool(StringAttr)> pred) {
    for (ReductionKind kind : {ReductionKind::Sum, ReductionKind::Max}) {
      AxisList axes;
      for (const PartialAxis &p : cur.partial)
        if (p.kind == kind && toReduce(p.axis) && pred(p.axis))
          axes.push_back(p.axis);
      if (axes.empty())
        continue;
      llvm::sort(axes, [&](StringAttr x, StringAttr y) {
        return *mesh.getAxisIndex(x.getValue()) <
               *mesh.getAxisIndex(y.getValue());
      });
      value = allReduce(value, axes, kind);
      llvm::erase_if(cur.partial, [&](const PartialAxis &p) {
        return llvm::is_contained(axes, p.axis);
      });
    }
  };

  // 0. Reduce first the partial axes that no target dim is sharded on: the
  // value is smallest before step 1 gathers it. Not when sum and max axes
  // are both pending: those reduce in the order of steps 2 and 3 (sum
  // before max), which do not commute.
  bool mixed =
      llvm::any_of(cur.partial,
                   [&](const PartialAxis &p) {
                     return toReduce(p.axis) && p.kind != ReductionKind::Sum;
                   }) &&
      llvm::any_of(cur.partial, [&](const PartialAxis &p) {
        return toReduce(p.axis) && p.kind == ReductionKind::Sum;
      });
  if (!mixed)
    allReduceWhere([&](StringAttr axis) {
      return llvm::none_of(dst.dims, [&](const AxisList &axes) {
        return llvm::is_contained(axes, axis);
      });
    });

  // 1. Unshard / move: make every dim's axes a prefix of its target.
  for (bool changed = true; changed;) {
    changed = false;
    for (unsigned d = 0; d < rank; ++d) {
      if (isPrefix(cur.dims[d], dst.dims[d]))
        continue;
      changed = true;
      unsigned common = 0;
      while (common < cur.dims[d].size() && common < dst.dims[d].size() &&
             cur.dims[d][common] == dst.dims[d][common])
        ++common;
      StringAttr minor = cur.dims[d].back();
      // An all-to-all moves the minor-most axis to the dim that needs it
      // next.
      std::optional<unsigned> target;
      for (unsigned e = 0; e < rank && !target; ++e)
        if (e != d && isPrefix(cur.dims[e], dst.dims[e]) &&
            dst.dims[e].size() > cur.dims[e].size() &&
            dst.dims[e][cur.dims[e].size()] == minor)
          target = e;
      if (target) {
        value = allToAll(value, {minor}, *target, d);
        cur.dims[d].pop_back();
        cur.dims[*target].push_back(minor);
        continue;
      }
      AxisList suffix(cur.dims[d].begin() + common, cur.dims[d].end());
      value = allGather(value, suffix, d);
      cur.dims[d].resize(common);
    }
  }

  // 2. Reduce-scatter the partial axes that a target dim is sharded on:
  // slice in the (replicated) axes the target lists before them, then one
  // reduce_scatter per run of partial axes of one reduction kind.
  for (unsigned d = 0; d < rank; ++d) {
    const AxisList &want = dst.dims[d];
    for (;;) {
      size_t next = cur.dims[d].size();
      size_t p = next;
      while (p < want.size() && !toReduce(want[p]))
        ++p;
      if (p == want.size())
        break;
      if (p > next) {
        AxisList replicated(want.begin() + next, want.begin() + p);
        value = shardSlice(value, replicated, d);
        llvm::append_range(cur.dims[d], replicated);
      }
      ReductionKind kind = *cur.partialKind(want[p]);
      AxisList run;
      while (p < want.size() && toReduce(want[p]) &&
             *cur.partialKind(want[p]) == kind)
        run.push_back(want[p++]);
      value = reduceScatter(value, run, d, kind);
      llvm::append_range(cur.dims[d], run);
      llvm::erase_if(cur.partial, [&](const PartialAxis &pa) {
        return llvm::is_contained(run, pa.axis);
      });
    }
  }
  allReduceWhere([](StringAttr) { return true; });

  // 3. Shard: slice in the axes each dim still lacks.
  for (unsigned d = 0; d < rank; ++d) {
    if (cur.dims[d].size() == dst.dims[d].size())
      continue;
    AxisList rest(dst.dims[d].begin() + cur.dims[d].size(), dst.dims[d].end());
    value = shardSlice(value, rest, d);
    cur.dims[d] = dst.dims[d];
  }
  return value;
}

} // namespace

FailureOr<Value> autoshard::dist::reshard(OpBuilder &builder, Location loc,
                                          MeshOp mesh, Value local,
                                          RankedTensorType globalType,
                                          ShardingAttr from, ShardingAttr to,
                                          std::optional<int64_t> raggedDim) {
  if (from == to)
    return local;
  if (from.getMesh() != to.getMesh())
    return emitError(loc) << "cannot reshard between meshes " << from.getMesh()
                          << " and " << to.getMesh();
  if (from.getRank() != to.getRank() || from.getRank() != globalType.getRank())
    return emitError(loc) << "cannot reshard " << from << " to " << to
                          << " for " << globalType << ": rank mismatch";
  auto emitErr = [&] { return emitError(loc); };
  if (failed(to.verifyAgainst(mesh, globalType, emitErr)))
    return failure();
  return Resharder(builder, loc, mesh, globalType, raggedDim)
      .run(local, from, to);
}
