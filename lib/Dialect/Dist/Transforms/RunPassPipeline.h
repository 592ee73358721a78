//===- RunPassPipeline.h - Run a nested pass pipeline on a module -*- C++
//-*-===//
//
// dist-auto-plan and dist-explain compile copies of the module they analyze
// (the one-block model, the rt form) with the typed pipeline builders
// (buildDistPartitionPipeline, rt::buildRtLoweringPipeline) and report the
// first error of that compilation as their own.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_LIB_DIALECT_DIST_TRANSFORMS_RUNPASSPIPELINE_H
#define AUTOSHARD_LIB_DIALECT_DIST_TRANSFORMS_RUNPASSPIPELINE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

namespace autoshard::dist {

/// Runs the passes `build` adds on `module`, with the diagnostics of the
/// run captured instead of printed. On failure `error` is the first error
/// diagnostic of the run ("compilation failed" if there was none).
mlir::LogicalResult
runPassPipeline(mlir::ModuleOp module,
                llvm::function_ref<void(mlir::OpPassManager &)> build,
                std::string &error);

} // namespace autoshard::dist

#endif // AUTOSHARD_LIB_DIALECT_DIST_TRANSFORMS_RUNPASSPIPELINE_H
