//===- ShardingPropagator.h - The algorithm of dist-propagate ---*- C++ -*-===//
//
// The algorithm of `dist-propagate` (spec/sharding.md §2; the pass
// documentation in Passes.td states its contract for IR authors).
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_DIST_ANALYSIS_SHARDINGPROPAGATOR_H
#define AUTOSHARD_DIALECT_DIST_ANALYSIS_SHARDINGPROPAGATOR_H

#include "autoshard/Dialect/Dist/IR/DistOps.h"

#include "mlir/IR/BuiltinOps.h"

#include <memory>

namespace autoshard::dist {

/// Gives every tensor value of every function reachable from the public
/// functions of a module a `#dist.sharding` on one mesh.
///
/// Reads (the seeds, which it never changes: "fixed"): `dist.sharding` on
/// function arguments, on entry (public) function results and on ops (user
/// annotations); the results of `dist.sharding_constraint`; `arith.constant`
/// results (replicated). Also the entry arguments' `tfm.param`, `tfm.state`
/// and `tfm.role` (training state; expert weights) and the module's
/// `dist.plan` (`zero = 3`: a parameter's data, context and, for dense
/// weights, expert axes only say how it is stored). Every other value is
/// "soft" and derived. Op semantics come only from each op's
/// ShardingRuleOpInterface factor rule; ops without one get replicated
/// results; `func.call` and `func.return` bind values across calls.
///
/// Writes: `dist.sharding` on every op with tensor results (an array for
/// several results) and on the tensor arguments and results of every
/// reachable function (entry results that were seeded keep their seed).
/// Values nothing constrains are replicated. A callee whose call sites
/// disagree on its argument shardings is cloned once per distinct signature
/// (the first keeps its name, the others are `<name>_s1`, `_s2`, ..., placed
/// after it, with its attributes, `tfm.func_kind` included) and its calls
/// retargeted.
///
/// Order: functions callees first; rounds of a forward sweep (ops in order;
/// each rule op chooses its factors' axes and sets its soft results) and,
/// when that changes nothing, a backward sweep (callers first, ops in
/// reverse; soft operands also gain the chosen axes on their unsharded
/// dims), until neither changes anything (at most 64 rounds); then the
/// callees are split per signature and everything starts over (at most 8
/// times). Soft values only gain axes backward, so the iteration ends.
///
/// Conflicts (one factor offered different axes, or one axis wanted by two
/// factors) are resolved by cost, never reported: each candidate layout of
/// a factor is worth the bytes of the tensors that already have it, fixed
/// values x1000 and training state x1e6 more (weights stay, activations
/// move, as in Megatron); a parameter's gradient prefers the parameter's
/// layout with the weight of state, except over an axis it should rather
/// stay partial on (always the data, expert and context axes: gradients
/// are reduced once per step). Pass-through factors are served before
/// reduction factors, each tier by decreasing worth; a factor whose best
/// candidate uses a taken axis keeps its other axes if they still divide
/// it, else tries its next candidate, else stays unsharded.
/// `NeedsReplication` factors are never sharded. Partial (sum) operands
/// stay partial through an op linear in them (`linearOperandGroups`).
///
/// Errors: run() fails, with an error on the first op concerned, if an op's
/// dialect promised the dist sharding interfaces but their external models
/// were not registered (verifyShardingModelsRegistered); the module is then
/// left unchanged.
class ShardingPropagator {
public:
  /// Propagates over the functions of `module` on `mesh`, a `dist.mesh` of
  /// `module` (the only one a module passed to dist-propagate may have).
  ShardingPropagator(mlir::ModuleOp module, MeshOp mesh);
  ~ShardingPropagator();
  ShardingPropagator(const ShardingPropagator &) = delete;
  ShardingPropagator &operator=(const ShardingPropagator &) = delete;

  /// Runs the propagation and writes the shardings (see the class comment).
  mlir::LogicalResult run();

private:
  class Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace autoshard::dist

#endif // AUTOSHARD_DIALECT_DIST_ANALYSIS_SHARDINGPROPAGATOR_H
