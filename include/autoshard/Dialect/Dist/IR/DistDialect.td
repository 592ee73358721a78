//===- DistDialect.td - Distribution dialect ---------------*- tablegen -*-===//
//
// The `dist` dialect: device meshes, sharding attributes and collectives.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_DIST_IR_DISTDIALECT_TD
#define AUTOSHARD_DIALECT_DIST_IR_DISTDIALECT_TD

include "mlir/IR/OpBase.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::autoshard::dist";
  let summary = "Device meshes, shardings and collectives";
  let description = [{
    The `dist` dialect says how the global tensors of a `tfm` program are laid
    out over a device mesh, and carries the communication that layout needs.

    * `dist.mesh` declares a named mesh with ordered, named axes (row-major
      device order: the last axis varies fastest).
    * `#dist.sharding` gives, for each tensor dim, the ordered list of mesh
      axes it is split over (major to minor), plus the axes over which the
      value is *partial* (a pending `sum` or `max` reduction). Every other
      axis is replicated.
    * Collectives (`all_reduce`, `all_gather`, `reduce_scatter`,
      `all_to_all`, `broadcast`, `send`/`recv`) operate on per-rank tensors
      over the device groups formed by a subset of mesh axes; each has an
      asynchronous `*_start` form returning `!dist.async` and completed by
      `dist.wait`, so that communication can overlap compute.
    * `dist.sharding_constraint` and `dist.reshard` pin or change the layout
      of a global tensor.

    Any op may carry a discardable `dist.sharding` attribute giving the
    sharding of its result (one `#dist.sharding`, for an op with one
    result) or of each result (an array, one per result); function
    arguments and results may carry one in their argument/result
    attributes. The dialect verifies these against the mesh and the types.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Name of the discardable attribute that holds the sharding of an op's
    /// results or of a function argument/result.
    static constexpr ::llvm::StringLiteral getShardingAttrName() {
      return kShardingAttrName;
    }

    /// Name of the unit attribute that `dist-partition` sets on the
    /// functions it rewrote to per-rank types (their argument and result
    /// `dist.sharding` then describe the global layout of local values).
    static constexpr ::llvm::StringLiteral getPartitionedAttrName() {
      return kPartitionedAttrName;
    }

    void registerAttributes();
    void registerTypes();
  }];
}

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

#endif // AUTOSHARD_DIALECT_DIST_IR_DISTDIALECT_TD
