//===- DistSchedule.cpp - The pipeline schedule of a plan -----------------===//
//
// Chooses the per-rank order of pipeline ops (F, B or I/W per stage and
// microbatch) for the plan's pp, vpp, mb and schedule — or reads a user's
// order in the algorithms.md §1.5 text format — checks it (well-formed,
// deadlock-free) and records it as the module attribute
// `dist.pipeline_schedule`, which dist-pipeline-split then follows.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistAttrNames.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Dist/Transforms/Plan.h"
#include "autoshard/Pipeline/Schedule.h"
#include "autoshard/Pipeline/Simulate.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

namespace autoshard::dist {
#define GEN_PASS_DEF_DISTSCHEDULE
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace autoshard::dist

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

struct DistSchedulePass
    : public dist::impl::DistScheduleBase<DistSchedulePass> {
  using DistScheduleBase::DistScheduleBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string path = file;
    auto fail = [&](const Twine &message) {
      module.emitError() << "dist-schedule: " << message;
      signalPassFailure();
    };
    auto planAttr = module->getAttrOfType<DictionaryAttr>(kPlanAttrName);
    if (!planAttr) {
      if (!path.empty())
        fail("file=" + path + " needs a plan (run dist-apply-plan first)");
      return;
    }
    llvm::Expected<Plan> plan = Plan::fromAttr(planAttr);
    if (!plan)
      return fail(llvm::toString(plan.takeError()));
    if (plan->pp == 1) {
      if (!path.empty())
        fail("file=" + path + " given, but the plan has pp=1 (no pipeline)");
      return;
    }
    int64_t numStages = plan->pp * plan->vpp;
    pipeline::OrError<pipeline::PipelineSchedule> schedule =
        pipeline::OrError<pipeline::PipelineSchedule>::failure("");
    if (path.empty()) {
      pipeline::OrError<pipeline::ScheduleKind> kind =
          pipeline::parseScheduleKind(plan->schedule);
      if (!kind)
        return fail(kind.error());
      schedule = pipeline::buildSchedule(*kind, plan->pp, plan->mb, plan->vpp);
      if (!schedule)
        return fail(schedule.error());
    } else {
      llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text =
          llvm::MemoryBuffer::getFile(path);
      if (!text)
        return fail("cannot read the schedule file '" + path +
                    "': " + text.getError().message());
      schedule = pipeline::parseSchedule((*text)->getBuffer().str(), path);
      if (!schedule)
        return fail(path + ": " + schedule.error());
      if (schedule->numRanks != plan->pp || schedule->numStages != numStages ||
          schedule->numMicrobatches != plan->mb)
        return fail(
            llvm::formatv(
                "{0}: the schedule has {1} rank(s), {2} stage(s) and {3} "
                "microbatch(es), but the plan has pp={4}, pp*vpp={5} and "
                "mb={6}",
                path, schedule->numRanks, schedule->numStages,
                schedule->numMicrobatches, plan->pp, numStages, plan->mb)
                .str());
    }
    // Check A (well-formed) and Check B (no deadlock) of algorithms.md §1.6.
    std::vector<std::string> problems = pipeline::validateSchedule(*schedule);
    if (!problems.empty())
      return fail(
          (path.empty() ? plan->schedule : path) +
          ": not a valid schedule: " + problems.front() +
          (problems.size() > 1
               ? " (and " + std::to_string(problems.size() - 1) + " more)"
               : std::string()));
    // The compiler cuts the backward of every stage or of none.
    if (pipeline::OrError<bool> split = pipeline::backwardIsSplit(*schedule);
        !split)
      return fail((path.empty() ? plan->schedule : path) + ": " +
                  split.error());
    pipeline::SimulationResult sim =
        pipeline::simulateSchedule(*schedule, pipeline::SimulationOptions());
    if (sim.deadlocked)
      return fail((path.empty() ? plan->schedule : path) +
                  ": the schedule cannot run: " + sim.deadlockReport);
    module->setAttr(kPipelineScheduleAttrName,
                    StringAttr::get(module.getContext(),
                                    pipeline::formatSchedule(*schedule)));
  }
};

} // namespace
