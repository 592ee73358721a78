//===- DistListPlans.cpp - The valid plans of a train step ----------------===//
//
// Prints the plans of given world sizes that the compiler accepts for the
// module (PlanEnumerate.h), or its verdict on the plans of a plan-list
// file, as text or JSON: what scripts/plan_sweep.py runs.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Dist/Transforms/PlanEnumerate.h"
#include "autoshard/Pipeline/Schedule.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

namespace autoshard::dist {
#define GEN_PASS_DEF_DISTLISTPLANS
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace autoshard::dist

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

/// A plan of a plan-list file and its 1-based line.
struct ListedPlan {
  unsigned line;
  std::string text;
};

/// The plans of a plan-list file: one per line, `#` to the end of the line
/// a comment, blank lines skipped.
FailureOr<SmallVector<ListedPlan>> readPlanList(StringRef path,
                                                std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    error = "cannot read the plan list '" + path.str() +
            "': " + buffer.getError().message();
    return failure();
  }
  SmallVector<ListedPlan> plans;
  SmallVector<StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (auto [index, line] : llvm::enumerate(lines)) {
    StringRef text = line.split('#').first.trim();
    if (!text.empty())
      plans.push_back({static_cast<unsigned>(index + 1), text.str()});
  }
  return plans;
}

/// The candidate's text, verdict and, when it parses, its world size and
/// every key (as the `dist.plan` attribute spells them).
llvm::json::Object toJson(const PlanCandidate &candidate, MLIRContext *ctx) {
  llvm::json::Object entry{{"plan", candidate.text},
                           {"valid", candidate.isValid()}};
  if (!candidate.isValid())
    entry["reason"] = candidate.reason;
  if (const std::optional<Plan> &plan = candidate.plan) {
    entry["world"] = plan->getWorldSize();
    for (NamedAttribute key : plan->toAttr(ctx)) {
      if (auto value = dyn_cast<IntegerAttr>(key.getValue()))
        entry[key.getName().getValue()] = value.getInt();
      else if (auto text = dyn_cast<StringAttr>(key.getValue()))
        entry[key.getName().getValue()] = text.getValue();
    }
  }
  return entry;
}

struct DistListPlansPass
    : public dist::impl::DistListPlansBase<DistListPlansPass> {
  using DistListPlansBase::DistListPlansBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    markAllAnalysesPreserved();
    auto fail = [&](const Twine &message) {
      module.emitError() << "dist-list-plans: " << message;
      signalPassFailure();
    };
    if (format != "text" && format != "json")
      return fail("format must be text or json, found '" + format + "'");
    if (plansFile.empty() == worlds.empty())
      return fail("give either world=N[,N...] (enumerate) or plans-file=FILE "
                  "(check the plans listed there)");

    // The step's microbatches and recomputation, which a plan must name.
    int64_t microbatches = 1;
    if (auto attr = module->getAttrOfType<IntegerAttr>("tfm.microbatches"))
      microbatches = attr.getInt();
    auto recomputeAttr = module->getAttrOfType<StringAttr>("tfm.recompute");
    StringRef recompute = recomputeAttr ? recomputeAttr.getValue() : "none";

    std::vector<std::pair<std::optional<unsigned>, PlanCandidate>> checked;
    if (!plansFile.empty()) {
      std::string error;
      FailureOr<SmallVector<ListedPlan>> listed =
          readPlanList(plansFile, error);
      if (failed(listed))
        return fail(error);
      for (const ListedPlan &plan : *listed)
        checked.emplace_back(plan.line, checkPlan(module, plan.text));
    } else {
      FailureOr<PlanSpace> space = getSpace();
      if (failed(space))
        return signalPassFailure();
      for (const Plan &plan : enumeratePlans(*space, microbatches, recompute,
                                             hasExpertLayers(module))) {
        PlanCandidate candidate = checkPlan(module, formatCompactPlan(plan));
        if (candidate.isValid() || listInvalid)
          checked.emplace_back(std::nullopt, std::move(candidate));
      }
    }

    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(output, &error);
    if (!file)
      return fail(error);
    if (format == "text") {
      for (const auto &[line, candidate] : checked) {
        if (candidate.isValid())
          file->os() << candidate.text << "\n";
        else
          file->os() << "# invalid: " << candidate.text << ": "
                     << candidate.reason << "\n";
      }
    } else {
      llvm::json::Array plans;
      for (const auto &[line, candidate] : checked) {
        llvm::json::Object entry = toJson(candidate, &getContext());
        if (line)
          entry["line"] = *line;
        plans.push_back(std::move(entry));
      }
      llvm::json::Object model;
      if (auto attr = module->getAttrOfType<DictionaryAttr>("tfm.model"))
        for (NamedAttribute entry : attr)
          if (auto value = dyn_cast<IntegerAttr>(entry.getValue()))
            model[entry.getName().getValue()] = value.getInt();
      llvm::json::Value report =
          llvm::json::Object{{"model", std::move(model)},
                             {"microbatches", microbatches},
                             {"recompute", recompute},
                             {"plans", std::move(plans)}};
      file->os() << llvm::formatv("{0:2}", report) << "\n";
    }
    file->keep();
  }

  /// The options as a PlanSpace; emits the error for a bad one.
  FailureOr<PlanSpace> getSpace() {
    PlanSpace space;
    space.stagesPerRank = stagesPerRank;
    auto positive = [&](ArrayRef<int64_t> values, StringRef option) {
      for (int64_t value : values)
        if (value < 1) {
          getOperation().emitError() << "dist-list-plans: " << option
                                     << " must be >= 1, found " << value;
          return false;
        }
      return true;
    };
    if (!positive(worlds, "world") || !positive(pipelineDegrees, "pp") ||
        !positive(contextDegrees, "cp") ||
        !positive({stagesPerRank.getValue()}, "vpp"))
      return failure();
    llvm::append_range(space.worlds, worlds);
    llvm::append_range(space.pipelineDegrees, pipelineDegrees);
    llvm::append_range(space.contextDegrees, contextDegrees);
    if (schedules.empty())
      for (pipeline::ScheduleKind kind :
           {pipeline::ScheduleKind::GPipe, pipeline::ScheduleKind::OneFOneB,
            pipeline::ScheduleKind::Interleaved1F1B,
            pipeline::ScheduleKind::LoopedBFS, pipeline::ScheduleKind::ZBH1,
            pipeline::ScheduleKind::ZBV})
        space.schedules.push_back(pipeline::scheduleKindName(kind));
    for (const std::string &name : schedules) {
      pipeline::OrError<pipeline::ScheduleKind> kind =
          pipeline::parseScheduleKind(name);
      if (!kind) {
        getOperation().emitError() << "dist-list-plans: " << kind.error();
        return failure();
      }
      space.schedules.push_back(pipeline::scheduleKindName(*kind));
    }
    return space;
  }
};

} // namespace
