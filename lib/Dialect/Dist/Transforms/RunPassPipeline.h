//===- RunPassPipeline.h - Run a nested pass pipeline on a module -*- C++
//-*-===//
//
// dist-auto-plan and dist-explain compile copies of the module they analyze
// (the one-block model, the rt form) with a textual pass pipeline and report
// the first error of that compilation as their own.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_LIB_DIALECT_DIST_TRANSFORMS_RUNPASSPIPELINE_H
#define AUTOSHARD_LIB_DIALECT_DIST_TRANSFORMS_RUNPASSPIPELINE_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace autoshard::dist {

/// Runs the textual pass `pipeline` (e.g. "rt-lower,rt-plan-memory") on
/// `module`, with the diagnostics of the run captured instead of printed.
/// On failure `error` is "cannot build pipeline '<pipeline>': <why>" when
/// the text does not parse, else the first error diagnostic of the run
/// ("compilation failed" if there was none).
mlir::LogicalResult runPassPipeline(mlir::ModuleOp module,
                                    llvm::StringRef pipeline,
                                    std::string &error);

} // namespace autoshard::dist

#endif // AUTOSHARD_LIB_DIALECT_DIST_TRANSFORMS_RUNPASSPIPELINE_H
