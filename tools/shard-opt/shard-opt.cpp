//===- shard-opt.cpp - autoshard compiler driver --------------------------===//
//
// mlir-opt style driver: parses tfm/dist IR, runs the requested passes and
// prints the result. Registers our dialects plus the upstream ones that model
// IR uses (func, arith, tensor).
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "autoshard/Dialect/Tfm/IR/TfmDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<autoshard::tfm::TfmDialect, autoshard::dist::DistDialect,
                  mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::tensor::TensorDialect>();
  // Upstream passes used in our pipelines and tests (canonicalize, cse,
  // inline, symbol-dce, ...).
  mlir::registerTransformsPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "autoshard compiler driver\n", registry));
}
