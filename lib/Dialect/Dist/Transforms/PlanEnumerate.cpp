//===- PlanEnumerate.cpp - Enumerate and check plans of a train step ------===//

#include "autoshard/Dialect/Dist/Transforms/PlanEnumerate.h"

#include "RunPassPipeline.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

SmallVector<int64_t> divisorsOf(int64_t n) {
  SmallVector<int64_t> divisors;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0)
      divisors.push_back(d);
  return divisors;
}

/// Model chunks per rank that `schedule` runs in an enumerated plan.
int64_t stagesPerRankOf(StringRef schedule, int64_t stagesPerRank) {
  if (schedule == "zb-v")
    return 2; // its V shape
  if (schedule == "interleaved" || schedule == "looped-bfs")
    return stagesPerRank;
  return 1;
}

} // namespace

std::string dist::formatCompactPlan(const Plan &plan) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto add = [&](StringRef key, const auto &value) {
    if (!text.empty())
      os << ',';
    os << key << '=' << value;
  };
  if (plan.pp > 1)
    add("pp", plan.pp);
  add("dp", plan.dp);
  if (plan.cp > 1)
    add("cp", plan.cp);
  if (plan.tp > 1)
    add("tp", plan.tp);
  if (plan.sp)
    add("sp", plan.sp);
  if (plan.zero)
    add("zero", plan.zero);
  if (plan.ep > 1)
    add("ep", plan.ep);
  if (plan.etp > 1)
    add("etp", plan.etp);
  if (plan.mb > 1)
    add("mb", plan.mb);
  if (plan.schedule != Plan().schedule)
    add("schedule", plan.schedule);
  if (plan.vpp > 1)
    add("vpp", plan.vpp);
  if (plan.recompute != Plan().recompute)
    add("recompute", plan.recompute);
  if (plan.cpAttention != Plan().cpAttention)
    add("cp_attention", plan.cpAttention);
  return text;
}

SmallVector<Plan> dist::enumeratePlans(const PlanSpace &space,
                                       int64_t microbatches,
                                       StringRef recompute, bool hasExperts) {
  SmallVector<Plan> plans;
  // Each loop sets the keys it enumerates.
  Plan plan;
  plan.mb = microbatches;
  plan.recompute = recompute.str();
  for (int64_t world : space.worlds) {
    SmallVector<int64_t> pps = space.pipelineDegrees.empty()
                                   ? divisorsOf(world)
                                   : space.pipelineDegrees;
    SmallVector<int64_t> cps =
        space.contextDegrees.empty() ? divisorsOf(world) : space.contextDegrees;
    for (int64_t pp : pps) {
      plan.pp = pp;
      SmallVector<std::string> schedules = {Plan().schedule};
      if (pp > 1)
        schedules.assign(space.schedules.begin(), space.schedules.end());
      for (int64_t cp : cps) {
        if (world % (pp * cp) != 0)
          continue;
        plan.cp = cp;
        SmallVector<StringRef, 2> attentions = {"ring"};
        if (cp > 1)
          attentions.push_back("ulysses");
        for (int64_t tp : divisorsOf(world / (pp * cp))) {
          plan.tp = tp;
          plan.dp = world / (pp * cp * tp);
          // Expert layouts: (ep, etp) with the ep group folded over every
          // tp rank (etp = 1) or each expert split over them (etp = tp),
          // then every cp rank, then a divisor of dp (Plan::ep).
          SmallVector<std::pair<int64_t, int64_t>> experts = {{1, 1}};
          if (hasExperts) {
            experts.clear();
            SmallVector<int64_t, 2> etps = {1};
            if (tp > 1)
              etps.push_back(tp);
            for (int64_t etp : etps) {
              // With cp > 1, ep = 1 would repeat every expert on the cp
              // ranks.
              if (cp == 1)
                experts.push_back({1, etp});
              int64_t minor = (etp == 1 ? tp : 1) * cp;
              for (int64_t d : divisorsOf(plan.dp))
                if (minor * d > 1)
                  experts.push_back({minor * d, etp});
            }
          }
          for (plan.sp = 0; plan.sp <= (tp > 1 ? 1 : 0); ++plan.sp)
            for (plan.zero = 0; plan.zero <= (plan.dp * cp > 1 ? 3 : 0);
                 ++plan.zero)
              for (const std::string &schedule : schedules) {
                plan.schedule = schedule;
                plan.vpp = stagesPerRankOf(schedule, space.stagesPerRank);
                for (auto [ep, etp] : experts) {
                  plan.ep = ep;
                  plan.etp = etp;
                  for (StringRef attention : attentions) {
                    plan.cpAttention = attention.str();
                    plans.push_back(plan);
                  }
                }
              }
        }
      }
    }
  }
  return plans;
}

bool dist::hasExpertLayers(ModuleOp module) {
  return module.walk([](tfm::MoeDispatchOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

PlanCandidate dist::checkPlan(ModuleOp module, StringRef text) {
  PlanCandidate candidate;
  candidate.text = text.str();
  llvm::Expected<Plan> parsed = Plan::parse(text);
  if (!parsed) {
    // As dist-apply-plan reports it.
    candidate.reason = "dist-apply-plan: " + llvm::toString(parsed.takeError());
    return candidate;
  }
  const Plan &plan = *parsed;
  candidate.plan = plan;
  // The compiler's order: dist-apply-plan, then dist-pipeline-split's
  // layer count, then the schedule it builds (dist-schedule's check).
  OwningOpRef<ModuleOp> copy = module.clone();
  DistApplyPlanOptions apply;
  apply.plan = text.str();
  if (failed(runPassPipeline(
          *copy,
          [&](OpPassManager &pm) { pm.addPass(createDistApplyPlan(apply)); },
          candidate.reason)))
    return candidate;
  if (plan.pp == 1)
    return candidate;
  if (auto model = module->getAttrOfType<DictionaryAttr>("tfm.model"))
    if (auto layers = model.getAs<IntegerAttr>("num_layers");
        layers && layers.getInt() < plan.pp * plan.vpp) {
      candidate.reason =
          llvm::formatv("dist-pipeline-split: pp={0}{1} needs at least {2} "
                        "block calls (layers), the model has {3} "
                        "(tfm.model num_layers)",
                        plan.pp,
                        plan.vpp > 1 ? " x vpp=" + std::to_string(plan.vpp)
                                     : std::string(),
                        plan.pp * plan.vpp, layers.getInt())
              .str();
      return candidate;
    }
  (void)runPassPipeline(
      *copy, [&](OpPassManager &pm) { pm.addPass(createDistSchedule()); },
      candidate.reason);
  return candidate;
}
