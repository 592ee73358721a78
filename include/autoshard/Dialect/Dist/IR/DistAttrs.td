//===- DistAttrs.td - Sharding attributes ------------------*- tablegen -*-===//
//
// The reduction kind and the `#dist.sharding` attribute of DESIGN.md §5.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_DIST_IR_DISTATTRS_TD
#define AUTOSHARD_DIALECT_DIST_IR_DISTATTRS_TD

include "autoshard/Dialect/Dist/IR/DistDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Dist_ReductionKind : I32EnumAttr<"ReductionKind",
    "reduction applied to partial values and by reducing collectives", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Max", 1, "max">,
    ]> {
  let cppNamespace = "::autoshard::dist";
  let genSpecializedAttr = 0;
}

def Dist_ReductionKindAttr
    : EnumAttr<Dist_Dialect, Dist_ReductionKind, "reduction"> {
  let summary = "reduction kind of a partial value or a reducing collective";
  let description = [{
    `sum` or `max`. Inside an op it prints as the bare keyword
    (`reduction = sum`); standalone it is `#dist.reduction<max>`.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Dist_AxisRole : I32EnumAttr<"AxisRole",
    "the parallelism a mesh axis carries", [
      I32EnumAttrCase<"Data", 0, "data">,
      I32EnumAttrCase<"Context", 1, "context">,
      I32EnumAttrCase<"Tensor", 2, "tensor">,
      I32EnumAttrCase<"Expert", 3, "expert">,
      I32EnumAttrCase<"Pipeline", 4, "pipeline">,
    ]> {
  let cppNamespace = "::autoshard::dist";
  let genSpecializedAttr = 0;
}

// Not an attribute: what a communication op does
// (CommOpInterface::getCommKind), for the passes that cost or rewrite it.
def Dist_CommKind : I32Enum<"CommKind",
    "the kind of a communication op", [
      I32EnumAttrCase<"AllReduce", 0, "all_reduce">,
      I32EnumAttrCase<"AllGather", 1, "all_gather">,
      I32EnumAttrCase<"ReduceScatter", 2, "reduce_scatter">,
      I32EnumAttrCase<"AllToAll", 3, "all_to_all">,
      I32EnumAttrCase<"Broadcast", 4, "broadcast">,
      I32EnumAttrCase<"Ppermute", 5, "ppermute">,
      I32EnumAttrCase<"Send", 6, "send">,
      I32EnumAttrCase<"Recv", 7, "recv">,
    ]> {
  let cppNamespace = "::autoshard::dist";
}

def Dist_AxisRoleAttr
    : EnumAttr<Dist_Dialect, Dist_AxisRole, "axis_role"> {
  let summary = "the parallelism a mesh axis carries";
  let description = [{
    What the ranks along a `dist.mesh` axis split, so that passes ask the
    mesh for "the data-parallel axis" instead of testing an axis name:
    `data` (the batch; gradients are summed over it), `context` (the
    sequence), `tensor` (weights, Megatron column/row), `expert` (the
    experts of MoE layers; with `data` it also splits the batch) and
    `pipeline` (stages, each rank running a different program). Inside the
    mesh it prints as the bare keyword (`dp = 2 : data`); standalone it is
    `#dist.axis_role<data>`.
  }];
  let assemblyFormat = "`<` $value `>`";
}

class Dist_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Dist_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

// A `[{...}]` block cannot contain "}]", which the sharding syntax needs: such
// examples close the block and splice "}]" in as a plain string.
def Dist_ShardingAttr : Dist_Attr<"Sharding", "sharding"> {
  let summary = "layout of a global tensor over a device mesh";
  let description = [{
    For each tensor dim, the ordered list of mesh axes that dim is split over
    (major to minor), plus the set of *partial* axes: along a partial axis
    every device holds a full-shape contribution and the value is the
    `sum` (or `max`) of those contributions. Every mesh axis that is neither
    named by a dim nor partial is replicated.

    ```mlir
    dist.mesh @m [dp = 2, cp = 2, tp = 4]

    // Batch split over dp, hidden over tp, replicated over cp.
    #dist.sharding<@m, [{dp}, {}, {tp}] # "}]" # [{>
    // Batch split over dp (major) then cp (minor): 4 shards; device
    // (dp = i, cp = j) holds shard 2 * i + j.
    #dist.sharding<@m, [{dp, cp}, {}] # "}]" # [{>
    // Full shape on every device, pending a sum over tp.
    #dist.sharding<@m, [{}, {}] # "}]" # [{, partial = {tp: sum}>
    // Scalar, fully replicated.
    #dist.sharding<@m, []>
    ```

    Rules: an axis appears at most once in a sharding (in one dim, or
    partial); the sharding's rank equals the tensor's rank; every axis exists
    in the mesh; and each static dim is divisible by the product of the
    sizes of its axes (a dim of size 0 is divisible by any product: every
    shard is empty). The first rule is checked by the attribute itself; the
    others need the mesh and the tensor type, and are checked where the
    attribute is used (`dist.sharding_constraint`, `dist.reshard` and the
    discardable `dist.sharding` attribute on ops and function arguments and
    results).

    Partial axes are kept sorted by name, so equal shardings are the same
    attribute.
  }];
  let parameters = (ins
    "::mlir::FlatSymbolRefAttr":$mesh,
    ArrayRefParameter<"::mlir::ArrayAttr",
                      "per tensor dim, the mesh axes (StringAttr) it is "
                      "split over, major to minor">:$dims,
    ArrayRefParameter<"::autoshard::dist::PartialAxis",
                      "partial axes and their reductions">:$partialAxes
  );
  let skipDefaultBuilders = 1;
  let builders = [
    AttrBuilder<(ins "::mlir::FlatSymbolRefAttr":$mesh,
                     "::llvm::ArrayRef<::mlir::ArrayAttr>":$dims,
                     CArg<"::llvm::ArrayRef<::autoshard::dist::PartialAxis>",
                          "{}">:$partialAxes), [{
      ::llvm::SmallVector<::autoshard::dist::PartialAxis> sorted(partialAxes);
      ::autoshard::dist::sortPartialAxes(sorted);
      return $_get($_ctxt, mesh, dims, sorted);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// A fully replicated sharding of a rank-`rank` tensor on `mesh`.
    static ShardingAttr getReplicated(::mlir::FlatSymbolRefAttr mesh,
                                      int64_t rank);

    /// Name of the mesh symbol.
    ::llvm::StringRef getMeshName() const { return getMesh().getValue(); }
    /// Tensor rank this sharding describes.
    int64_t getRank() const { return getDims().size(); }
    /// Mesh axes that split `dim`, major to minor.
    ::llvm::SmallVector<::mlir::StringAttr> getDimAxes(unsigned dim) const;
    /// True if `dim` is split over at least one axis.
    bool isDimSharded(unsigned dim) const { return !getDims()[dim].empty(); }
    /// Every axis named by the sharding: dim axes in dim order, then the
    /// partial axes.
    ::llvm::SmallVector<::mlir::StringAttr> getUsedAxes() const;
    /// True if no dim is split and nothing is partial.
    bool isReplicated() const;
    /// True if at least one axis is partial.
    bool isPartial() const { return !getPartialAxes().empty(); }
    /// The reduction pending over `axis`, if `axis` is partial.
    std::optional<ReductionKind> getPartialKind(::llvm::StringRef axis) const;
    /// Number of shards of `dim`: the product of its axes' sizes.
    int64_t getNumShards(unsigned dim, MeshOp mesh) const;

    /// Per-device shape of a tensor of `globalShape` (dynamic dims stay
    /// dynamic). Requires a sharding that verifies against the shape.
    ::llvm::SmallVector<int64_t>
    getLocalShape(::llvm::ArrayRef<int64_t> globalShape, MeshOp mesh) const;
    /// `globalType` with its per-device shape.
    ::mlir::RankedTensorType getLocalType(::mlir::RankedTensorType globalType,
                                          MeshOp mesh) const;
    /// Inverse of getLocalType: the global type of a per-device tensor;
    /// null if a global dim would not fit in int64.
    ::mlir::RankedTensorType getGlobalType(::mlir::RankedTensorType localType,
                                           MeshOp mesh) const;

    /// Checks the rules that need the mesh and the tensor type: `mesh` is
    /// the mesh this sharding names, every axis exists in it, the rank
    /// matches `type`'s, and each static dim is divisible by its number of
    /// shards. Reports the first violation through `emitError`.
    ::mlir::LogicalResult
    verifyAgainst(MeshOp mesh, ::mlir::Type type,
                  ::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError)
        const;
  }];
}

#endif // AUTOSHARD_DIALECT_DIST_IR_DISTATTRS_TD
