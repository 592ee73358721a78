//===- ShardOptFuzz.cpp - libFuzzer target: parse, verify, compile --------===//
//
// One input = one selector byte, then MLIR text. The text is parsed and
// verified as shard-opt does; when it verifies, the selector picks what
// runs on it: nothing more, tfm-autodiff, the autoshard-train pipeline
// (one device or a plan: dp, tp, pp with microbatches, cp, ZeRO-3; also on
// an input that already is a train step), dist-verify-comm alone, or the rt
// lowering. Diagnostics are expected (most mutants are invalid) and
// dropped; a crash, an ASan report, an abort (report_fatal_error, an
// unreachable), a timeout or running out of memory is a bug.
// scripts/fuzz.sh builds and runs it (seed corpus: test/**/*.mlir, one
// -split-input-file chunk per seed, once per selector).
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Rt/Transforms/Passes.h"
#include "autoshard/Dialect/Tfm/Transforms/Passes.h"
#include "autoshard/Pipelines/TrainPipeline.h"
#include "autoshard/Tools/Registration.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace mlir;

namespace {

/// What runs after the input verifies (the selector byte modulo the count).
enum class Stage : uint8_t {
  VerifyOnly,
  Autodiff,
  TrainOneDevice,
  TrainDp,
  TrainDpTp,
  TrainPp,
  TrainCp,
  TrainZero3,
  TrainStepDp,
  VerifyComm,
  RtLowering,
  Count,
};

/// The autoshard-train pipeline with `plan` ("" = one device).
void addTrain(OpPassManager &pm, StringRef plan, bool autodiff = true) {
  autoshard::TrainPipelineOptions options;
  options.plan = plan.str();
  options.autodiff = autodiff;
  autoshard::buildTrainPipeline(pm, options);
}

void addStage(OpPassManager &pm, Stage stage) {
  switch (stage) {
  case Stage::VerifyOnly:
  case Stage::Count:
    break;
  case Stage::Autodiff:
    pm.addPass(autoshard::tfm::createTfmAutodiff());
    break;
  case Stage::TrainOneDevice:
    addTrain(pm, "");
    break;
  case Stage::TrainDp:
    addTrain(pm, "dp=2");
    break;
  case Stage::TrainDpTp:
    addTrain(pm, "dp=2,tp=2,sp=1");
    break;
  case Stage::TrainPp:
    addTrain(pm, "pp=2,mb=2");
    break;
  case Stage::TrainCp:
    addTrain(pm, "cp=2");
    break;
  case Stage::TrainZero3:
    addTrain(pm, "dp=2,zero=3");
    break;
  case Stage::TrainStepDp:
    addTrain(pm, "dp=2", /*autodiff=*/false);
    break;
  case Stage::VerifyComm:
    pm.addPass(autoshard::dist::createDistVerifyComm());
    break;
  case Stage::RtLowering:
    autoshard::rt::buildRtLoweringPipeline(pm, /*fuseEpilogues=*/true);
    break;
  }
}

const DialectRegistry &getRegistry() {
  static DialectRegistry *registry = [] {
    auto *r = new DialectRegistry;
    autoshard::registerAutoshardDialects(*r);
    return r;
  }();
  return *registry;
}

} // namespace

/// LLVM's BumpPtrAllocator poisons the unused part of its slabs for ASan
/// when the code that inlines it is instrumented (ours), but libMLIR.so is
/// not, and its copies hand that memory out without unpoisoning it: every
/// input then "writes poisoned memory" inside MLIR. Manual poisoning is
/// therefore off; ASan still sees heap overflows, use after free and leaks.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  auto stage = Stage(data[0] % uint8_t(Stage::Count));
  // MLIR's lexer, like shard-opt's file buffers, relies on a terminating
  // NUL after the text: libFuzzer's bytes have none (reading an identifier
  // at the end then overran the input), so parse a NUL-terminated copy.
  std::string owned(reinterpret_cast<const char *>(data + 1), size - 1);
  StringRef text(owned);
  // A fresh context per input: nothing a mutant interned outlives it.
  MLIRContext context(getRegistry(), MLIRContext::Threading::DISABLED);
  context.allowUnregisteredDialects(false);
  ScopedDiagnosticHandler drop(&context,
                               [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  if (!module || failed(verify(*module)))
    return 0;
  PassManager pm(&context);
  addStage(pm, stage);
  (void)pm.run(*module);
  return 0;
}
