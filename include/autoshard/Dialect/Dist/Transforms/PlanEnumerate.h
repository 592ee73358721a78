//===- PlanEnumerate.h - Enumerate and check plans of a train step -*- C++ -*-//
//
// The plans of given world sizes for a differentiated train step, each
// checked the way the compiler checks it (Plan::parse, dist-apply-plan and
// dist-schedule on a copy of the module), for `dist-list-plans` and the
// scripts that sweep plans.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_DIALECT_DIST_TRANSFORMS_PLANENUMERATE_H
#define AUTOSHARD_DIALECT_DIST_TRANSFORMS_PLANENUMERATE_H

#include "autoshard/Dialect/Dist/Transforms/Plan.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace autoshard::dist {

/// The plans to enumerate: every factorisation of each world size into
/// pp x dp x cp x tp with pp and cp from the lists given.
struct PlanSpace {
  /// World sizes (>= 1), in output order.
  llvm::SmallVector<int64_t> worlds;
  /// Pipeline degrees; empty: every divisor of the world size.
  llvm::SmallVector<int64_t> pipelineDegrees;
  /// Context-parallel degrees; empty: every divisor of the world size.
  llvm::SmallVector<int64_t> contextDegrees;
  /// Schedules of the pp > 1 plans (Plan::schedule names), in output order.
  llvm::SmallVector<std::string> schedules;
  /// Model chunks per rank of the schedules that run several: interleaved
  /// and looped-bfs take this many, zb-v always 2.
  int64_t stagesPerRank = 2;
};

/// One enumerated or listed plan and the compiler's verdict on it.
struct PlanCandidate {
  /// The plan's text as formatCompactPlan prints it (listed plans: as
  /// written).
  std::string text;
  /// The parsed plan; unset when Plan::parse rejected the text.
  std::optional<Plan> plan;
  /// Empty if the train step can be compiled for the plan, else the first
  /// error, e.g. "plan tp=3: the model's num_heads = 4 is not divisible by
  /// tp".
  std::string reason;
  bool isValid() const { return reason.empty(); }
};

/// The shortest text that parses back to `plan`: `dp` always, every other
/// key only when it departs from its default, in the order pp, dp, cp, tp,
/// sp, zero, ep, mb, schedule, vpp, recompute, cp_attention (e.g.
/// "pp=2,dp=2,tp=2,mb=4,schedule=interleaved,vpp=2").
std::string formatCompactPlan(const Plan &plan);

/// The plans of `space` for a train step differentiated for `microbatches`
/// microbatches with recomputation `recompute`, in the order world, pp, cp,
/// tp (ascending), sp, zero, schedule, ep (ascending), cp_attention (ring,
/// ulysses). Every key a plan cannot change is left at its default:
/// sp only with tp > 1, zero > 0 only with a ZeRO group (dp x cp > 1),
/// schedules only with pp > 1, ep > 1 only with experts (`hasExperts`;
/// every ep that folds, with etp = 1 and, under tp > 1, etp = tp: see
/// Plan::ep), ulysses only with cp > 1. With experts and
/// cp > 1, ep = 1 is left out: it compiles, but every cp rank would repeat
/// every expert's compute (dist-auto-plan's compilable search skips it
/// too). The plans are not checked: see checkPlan.
llvm::SmallVector<Plan> enumeratePlans(const PlanSpace &space,
                                       int64_t microbatches,
                                       llvm::StringRef recompute,
                                       bool hasExperts);

/// Checks `text` against `module` (a train step after tfm-autodiff, and
/// tfm-recompute if any) as the compiler does: Plan::parse, the model's
/// layers (tfm.model num_layers, when present) against pp x vpp as
/// dist-pipeline-split requires, then dist-apply-plan and, with pp > 1,
/// dist-schedule on a copy of the module. `module` is not changed.
PlanCandidate checkPlan(mlir::ModuleOp module, llvm::StringRef text);

/// Whether the module has MoE layers (a `tfm.moe_dispatch`), which is what
/// makes ep > 1 plans possible.
bool hasExpertLayers(mlir::ModuleOp module);

} // namespace autoshard::dist

#endif // AUTOSHARD_DIALECT_DIST_TRANSFORMS_PLANENUMERATE_H
