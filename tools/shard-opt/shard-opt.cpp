//===- shard-opt.cpp - autoshard compiler driver --------------------------===//
//
// mlir-opt style driver: parses tfm/dist IR, runs the requested passes and
// prints the result. Registers our dialects plus the upstream ones that model
// IR uses (func, arith, tensor).
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Rt/Transforms/Passes.h"
#include "autoshard/Dialect/Tfm/Transforms/Passes.h"
#include "autoshard/Pipelines/TrainPipeline.h"
#include "autoshard/Tools/Registration.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace autoshard::test {
// Test passes (test/lib), declared here as upstream's mlir-opt does.
void registerTestPrintShardingRulesPass();
} // namespace autoshard::test

// The shorthands main() rewrites before the options are parsed, listed
// here so that --help shows them (never set: the rewrite consumes them).
static llvm::cl::opt<std::string> autoPlanShorthand(
    "auto-plan", llvm::cl::value_desc("options"),
    llvm::cl::desc("Shorthand for --dist-auto-plan=\"<options>\" (the planner; "
                   "docs/planner.md), e.g. --auto-plan \"cluster=configs/"
                   "clusters/cpu-2core.json gpus=8\""));
static llvm::cl::opt<std::string> planShorthand(
    "plan", llvm::cl::value_desc("plan"),
    llvm::cl::desc("Shorthand for --dist-apply-plan=plan=<plan>, e.g. --plan "
                   "dp=2,tp=2,sp=1"));

/// Source lines longer than this are not echoed under a diagnostic.
static constexpr size_t kMaxEchoedLine = 240;

/// The text of line `line` (1-based) of `buffer`, or "" past its end.
static llvm::StringRef lineOf(const llvm::MemoryBuffer &buffer, unsigned line) {
  llvm::StringRef rest = buffer.getBuffer();
  for (unsigned i = 1; i < line && !rest.empty(); ++i)
    rest = rest.split('\n').second;
  return rest.split('\n').first;
}

/// Prints a diagnostic located on a source line longer than kMaxEchoedLine
/// as `file:line:col: error: message` (and its notes) without echoing the
/// line: a pass that fails on the whole module (a bad option, a missing
/// cluster file) points at the `module attributes {...}` line, which holds
/// the model's attributes (10 KB and more). Shorter lines are left to
/// MlirOptMain's handler, which echoes them. Returns failure for those.
static mlir::LogicalResult
printWithoutLongLine(const llvm::MemoryBuffer &buffer, mlir::Diagnostic &diag) {
  auto file = diag.getLocation()->findInstanceOf<mlir::FileLineColLoc>();
  if (!file || file.getFilename().getValue() != buffer.getBufferIdentifier() ||
      lineOf(buffer, file.getLine()).size() <= kMaxEchoedLine)
    return mlir::failure();
  auto print = [](mlir::Location loc, mlir::DiagnosticSeverity severity,
                  llvm::StringRef message) {
    if (auto at = loc->findInstanceOf<mlir::FileLineColLoc>())
      llvm::errs() << at.getFilename().getValue() << ":" << at.getLine() << ":"
                   << at.getColumn() << ": ";
    switch (severity) {
    case mlir::DiagnosticSeverity::Error:
      llvm::errs() << "error: ";
      break;
    case mlir::DiagnosticSeverity::Warning:
      llvm::errs() << "warning: ";
      break;
    case mlir::DiagnosticSeverity::Note:
      llvm::errs() << "note: ";
      break;
    case mlir::DiagnosticSeverity::Remark:
      llvm::errs() << "remark: ";
      break;
    }
    llvm::errs() << message << "\n";
  };
  print(diag.getLocation(), diag.getSeverity(), diag.str());
  for (mlir::Diagnostic &note : diag.getNotes())
    print(note.getLocation(), note.getSeverity(), note.str());
  return mlir::success();
}

/// MlirOptMain(argc, argv, toolName, registry), except that a pass option
/// whose value does not parse is reported once: llvm::cl prints "for the
/// --beta1 option: 'x' value invalid for floating point argument!", after
/// which MLIR's pipeline parser emitted an empty `<unknown>:0: error:`.
static mlir::LogicalResult runDriver(int argc, char **argv,
                                     mlir::DialectRegistry &registry) {
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "autoshard compiler driver\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::MlirOptMain(argc, argv, inputFilename, outputFilename,
                             registry);
  // (As the MlirOptMain overload above does: stack traces on a crash.)
  llvm::InitLLVM initLLVM(argc, argv);
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return mlir::failure();
  }
  // Diagnostics on a very long source line are printed without it (not
  // with -verify-diagnostics, whose handler must see every diagnostic, nor
  // with -split-input-file, whose chunks are buffers of their own). The
  // SourceMgr inside MlirOptMain owns the buffer until it returns.
  const llvm::MemoryBuffer *source =
      !config.shouldVerifyDiagnostics() && config.inputSplitMarker().empty()
          ? input.get()
          : nullptr;
  auto parsed = std::make_shared<mlir::MlirOptMainConfig>(config);
  config.setPassPipelineSetupFn([parsed, source](mlir::PassManager &pm) {
    if (source)
      pm.getContext()->getDiagEngine().registerHandler(
          [source](mlir::Diagnostic &diag) {
            return printWithoutLongLine(*source, diag);
          });
    mlir::ScopedDiagnosticHandler dropEmpty(
        pm.getContext(), [](mlir::Diagnostic &diag) {
          return mlir::success(
              diag.getSeverity() == mlir::DiagnosticSeverity::Error &&
              llvm::isa<mlir::UnknownLoc>(diag.getLocation()) &&
              diag.str().empty());
        });
    return parsed->setupPassPipeline(pm);
  });
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return mlir::failure();
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return mlir::failure();
  output->keep();
  return mlir::success();
}

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  autoshard::registerAutoshardDialects(registry);
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
      runDriver(static_cast<int>(args.size()), args.data(), registry));
}
