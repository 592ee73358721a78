//===- shard-opt.cpp - autoshard compiler driver --------------------------===//
//
// mlir-opt style driver: parses tfm/dist IR, runs the requested passes and
// prints the result. Registers our dialects plus the upstream ones that model
// IR uses (func, arith, tensor).
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Rt/IR/RtDialect.h"
#include "autoshard/Dialect/Rt/Transforms/Passes.h"
#include "autoshard/Dialect/Tfm/IR/TfmDialect.h"
#include "autoshard/Dialect/Tfm/Sharding/ShardingInterfaceImpl.h"
#include "autoshard/Dialect/Tfm/Transforms/Passes.h"
#include "autoshard/Pipelines/TrainPipeline.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/STLExtras.h"

#include <optional>
#include <string>
#include <vector>

namespace autoshard::test {
// Test passes (test/lib), declared here as upstream's mlir-opt does.
void registerTestPrintShardingRulesPass();
} // namespace autoshard::test

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<autoshard::tfm::TfmDialect, autoshard::dist::DistDialect,
                  autoshard::rt::RtDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::tensor::TensorDialect>();
  // The tfm ops' sharding rules and partition hooks (dist interfaces).
  autoshard::tfm::registerShardingInterfaceExternalModels(registry);
  // Upstream passes used in our pipelines and tests (canonicalize, cse,
  // inline, symbol-dce, ...).
  mlir::registerTransformsPasses();
  autoshard::dist::registerDistPasses();
  autoshard::rt::registerRtPasses();
  autoshard::tfm::registerTfmPasses();
  autoshard::registerTrainPipeline();
  autoshard::test::registerTestPrintShardingRulesPass();
  // A diagnostic on a func op would otherwise dump the whole function (300 KB
  // for a 96-layer model); users can still turn the dump back on.
  std::vector<char *> args(argv, argv + argc);
  // `--plan "dp=2,tp=2"` is shorthand for `--dist-apply-plan="plan=dp=2,tp=2"`
  // at the same place in the pass order.
  std::vector<std::string> rewritten;
  rewritten.reserve(args.size());
  for (size_t i = 1; i < args.size(); ++i) {
    // `--auto-plan "cluster=F nodes=N"` is shorthand for
    // `--dist-auto-plan="cluster=F nodes=N"` (docs/planner.md).
    llvm::StringRef autoArg(args[i]);
    std::optional<std::string> autoPlan;
    if (autoArg.consume_front("--auto-plan=") ||
        autoArg.consume_front("-auto-plan="))
      autoPlan = autoArg.str();
    else if ((autoArg == "--auto-plan" || autoArg == "-auto-plan") &&
             i + 1 < args.size())
      autoPlan = args[i + 1];
    if (autoPlan) {
      rewritten.push_back("--dist-auto-plan=" + *autoPlan);
      args[i] = rewritten.back().data();
      if (autoArg == "--auto-plan" || autoArg == "-auto-plan")
        args.erase(args.begin() + i + 1);
      continue;
    }
    llvm::StringRef arg(args[i]);
    std::optional<std::string> plan;
    if (arg.consume_front("--plan=") || arg.consume_front("-plan="))
      plan = arg.str();
    else if ((arg == "--plan" || arg == "-plan") && i + 1 < args.size())
      plan = args[i + 1];
    if (!plan)
      continue;
    rewritten.push_back("--dist-apply-plan=plan=" + *plan);
    args[i] = rewritten.back().data();
    if (arg == "--plan" || arg == "-plan")
      args.erase(args.begin() + i + 1);
  }
  if (llvm::none_of(args, [](const char *arg) {
        return llvm::StringRef(arg).contains("mlir-print-op-on-diagnostic");
      }))
    args.insert(args.begin() + 1,
                const_cast<char *>("--mlir-print-op-on-diagnostic=false"));
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(static_cast<int>(args.size()), args.data(),
                        "autoshard compiler driver\n", registry));
}
