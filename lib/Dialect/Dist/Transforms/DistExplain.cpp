//===- DistExplain.cpp - What a plan does, read off the compiled program --===//
//
// `dist-explain`: for each strategy of the plan, what is split on which mesh
// axis; the collectives the partitioner inserted (count and bytes per
// training step per rank, attributed to a strategy); the memory per rank
// with and without the plan. An analysis: the module is not changed.
//
// The report is read from the rt form of the program (ExplainReader.h) and
// rendered as text, JSON or HTML (ExplainReport.h); a module still in func form
// (right after dist-partition) is lowered on a copy with
// `rt-lower,rt-fuse-epilogues,rt-plan-memory` (as scripts/train.sh builds it),
// and the builder's roles are read from its entry functions first.
//
//===----------------------------------------------------------------------===//

#include "RunPassPipeline.h"

#include "autoshard/Dialect/Dist/Analysis/ExplainReader.h"
#include "autoshard/Dialect/Dist/Analysis/ExplainReport.h"
#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Rt/IR/RtOps.h"
#include "autoshard/Dialect/Rt/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"

namespace autoshard::dist {
#define GEN_PASS_DEF_DISTEXPLAIN
#include "autoshard/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace autoshard::dist

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist::explain;

namespace {

struct DistExplainPass : public dist::impl::DistExplainBase<DistExplainPass> {
  using DistExplainBase::DistExplainBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (format != "text" && format != "json" && format != "html") {
      module.emitError() << "dist-explain: format must be 'text', 'json' or "
                            "'html', found '"
                         << format << "'";
      return signalPassFailure();
    }

    // The rt form, planned: lower / plan a copy if needed.
    bool hasRt = !module.getOps<rt::FuncOp>().empty();
    bool planned =
        hasRt && llvm::all_of(module.getOps<rt::FuncOp>(),
                              [](rt::FuncOp f) { return f.isPlanned(); });
    RoleMap roles;
    Report report;
    OwningOpRef<ModuleOp> copy;
    ModuleOp program = module;
    if (!hasRt) {
      roles = readEntryRoles(module);
      report.rolesFromEntries = !roles.empty();
    }
    if (!planned) {
      copy = module.clone();
      auto lower = [&](OpPassManager &pm) {
        if (hasRt)
          pm.addPass(rt::createRtPlanMemory());
        else
          rt::buildRtLoweringPipeline(pm, /*fuseEpilogues=*/true);
      };
      if (failed(lowerCopy(*copy, lower,
                           hasRt
                               ? "rt-plan-memory"
                               : "rt-lower,rt-fuse-epilogues,rt-plan-memory")))
        return signalPassFailure();
      program = *copy;
    }

    if (!baseline.empty() &&
        failed(readBaseline(baseline, report.baseline, module)))
      return signalPassFailure();
    if (failed(readReport(program, roles, report)))
      return signalPassFailure();

    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(output, &error);
    if (!file) {
      module.emitError() << "dist-explain: " << error;
      return signalPassFailure();
    }
    if (format == "json") {
      PipelineReport pipeline = readPipeline(program);
      file->os() << llvm::formatv("{0:2}", toJson(report, &pipeline)) << "\n";
    } else if (format == "html") {
      writeHtml(report, readPipeline(program), file->os());
    } else {
      writeText(report, file->os());
      writePipelineText(readPipeline(program), file->os());
    }
    file->keep();
    markAllAnalysesPreserved();
  }

  /// Runs the passes `build` adds (named `pipeline` in the error) on
  /// `copy`, reporting its first error on the module.
  LogicalResult lowerCopy(ModuleOp copy,
                          llvm::function_ref<void(OpPassManager &)> build,
                          StringRef pipeline) {
    std::string error;
    if (failed(dist::runPassPipeline(copy, build, error)))
      return getOperation().emitError()
             << "dist-explain: " << pipeline
             << " failed on a copy of the module (run dist-explain after "
                "rt-plan-memory to see the error in place): "
             << error;
    return success();
  }
};

} // namespace
