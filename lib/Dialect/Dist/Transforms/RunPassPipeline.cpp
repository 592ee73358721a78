//===- RunPassPipeline.cpp - Run a nested pass pipeline on a module -------===//

#include "RunPassPipeline.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

LogicalResult autoshard::dist::runPassPipeline(ModuleOp module,
                                               StringRef pipeline,
                                               std::string &error) {
  MLIRContext *ctx = module.getContext();
  PassManager pm(ctx, ModuleOp::getOperationName());
  std::string why;
  llvm::raw_string_ostream whyStream(why);
  if (failed(parsePassPipeline(pipeline, pm, whyStream))) {
    error = "cannot build pipeline '" + pipeline.str() + "': " + why;
    return failure();
  }
  std::string firstError;
  LogicalResult result = success();
  {
    ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error && firstError.empty())
        firstError = diag.str();
      return success();
    });
    result = pm.run(module);
  }
  if (failed(result))
    error = firstError.empty() ? "compilation failed" : firstError;
  return result;
}
