//===- RunPassPipeline.cpp - Run a nested pass pipeline on a module -------===//

#include "RunPassPipeline.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;

LogicalResult autoshard::dist::runPassPipeline(
    ModuleOp module, llvm::function_ref<void(OpPassManager &)> build,
    std::string &error) {
  MLIRContext *ctx = module.getContext();
  PassManager pm(ctx, ModuleOp::getOperationName());
  build(pm);
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
