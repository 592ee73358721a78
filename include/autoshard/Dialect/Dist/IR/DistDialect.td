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
  }];
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

#endif // AUTOSHARD_DIALECT_DIST_IR_DISTDIALECT_TD
