//===- ShardingModelsTest.cpp - The tfm models of the dist contract -------===//
//
// The tfm dialect implements the dist sharding interfaces only through
// registerShardingInterfaceExternalModels: with it, tfm ops answer the
// interfaces and dist-propagate / dist-partition run; without it, those
// passes fail with a diagnostic naming the missing model (they must not
// crash, nor silently compute the ops replicated).
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Dist/Interfaces/ShardingInterfaces.h"
#include "autoshard/Dialect/Dist/Transforms/Passes.h"
#include "autoshard/Dialect/Tfm/IR/TfmDialect.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"
#include "autoshard/Dialect/Tfm/Sharding/ShardingInterfaceImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir;
using namespace autoshard;

namespace {

// A column-parallel matmul seeded by its weight, then a row-parallel one
// whose partial result is reduced to the replicated function result.
constexpr const char *kProgram = R"mlir(
module {
  dist.mesh @mesh [tp = 2]
  func.func @f(%x: tensor<8x16xf32>,
               %w: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>},
               %w2: tensor<32x16xf32>)
      -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {}]>}) {
    %y = tfm.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    %g = tfm.gelu %y : (tensor<8x32xf32>) -> tensor<8x32xf32>
    %z = tfm.matmul %g, %w2 : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
    return %z : tensor<8x16xf32>
  }
}
)mlir";

DialectRegistry makeRegistry(bool withModels) {
  DialectRegistry registry;
  registry.insert<tfm::TfmDialect, dist::DistDialect, func::FuncDialect,
                  arith::ArithDialect>();
  if (withModels)
    tfm::registerShardingInterfaceExternalModels(registry);
  return registry;
}

/// Runs dist-propagate then dist-partition on kProgram; returns whether it
/// succeeded, appends the diagnostics to `diagnostics` and counts the
/// all-reduces of the result in `allReduces`.
bool propagateAndPartition(MLIRContext &ctx, std::string &diagnostics,
                           int &allReduces) {
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    diagnostics += diag.str() + "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kProgram, &ctx);
  if (!module)
    return false;
  PassManager pm(&ctx);
  pm.addPass(dist::createDistPropagate());
  pm.addPass(dist::createDistPartition());
  bool ok = succeeded(pm.run(*module));
  allReduces = 0;
  module->walk([&](dist::AllReduceOp) { ++allReduces; });
  return ok;
}

TEST(ShardingModels, RegisteredModelsAnswerTheInterfaces) {
  MLIRContext ctx(makeRegistry(/*withModels=*/true));
  ctx.loadDialect<tfm::TfmDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kProgram, &ctx);
  ASSERT_TRUE(module);
  tfm::MatmulOp matmul;
  module->walk([&](tfm::MatmulOp op) {
    if (!matmul)
      matmul = op;
  });
  ASSERT_TRUE(matmul);
  auto ruleOp = dyn_cast<dist::ShardingRuleOpInterface>(matmul.getOperation());
  ASSERT_TRUE(ruleOp);
  // `[M, K] x [K, N]`: M and N pass through, K is a reduction.
  dist::ShardingRule rule = ruleOp.getShardingRule();
  ASSERT_EQ(rule.getNumFactors(), 3);
  EXPECT_EQ(rule.factorKinds[0], dist::FactorKind::PassThrough);
  EXPECT_EQ(rule.factorKinds[1], dist::FactorKind::PassThrough);
  EXPECT_EQ(rule.factorKinds[2], dist::FactorKind::Reduction);
  EXPECT_EQ(rule.operandDims[0], (SmallVector<int64_t>{0, 2}));
  EXPECT_EQ(rule.operandDims[1], (SmallVector<int64_t>{2, 1}));
  EXPECT_EQ(rule.resultDims[0], (SmallVector<int64_t>{0, 1}));
  // Only ops with a partition hook get the partition model.
  EXPECT_FALSE(isa<dist::PartitionOpInterface>(matmul.getOperation()));
  EXPECT_TRUE(RegisteredOperationName::lookup(
                  tfm::EmbeddingOp::getOperationName(), &ctx)
                  ->hasInterface<dist::PartitionOpInterface>());
  // The hooks create dist ops: registering the models loads dist.
  EXPECT_NE(ctx.getLoadedDialect<dist::DistDialect>(), nullptr);
}

TEST(ShardingModels, PassesRunWithRegisteredModels) {
  MLIRContext ctx(makeRegistry(/*withModels=*/true));
  std::string diagnostics;
  int allReduces = 0;
  EXPECT_TRUE(propagateAndPartition(ctx, diagnostics, allReduces))
      << diagnostics;
  EXPECT_EQ(diagnostics, "");
  // The row-parallel matmul's partial result is reduced at the return.
  EXPECT_EQ(allReduces, 1);
}

TEST(ShardingModels, MissingModelsAreReportedNotCrashing) {
  MLIRContext ctx(makeRegistry(/*withModels=*/false));
  std::string diagnostics;
  int allReduces = 0;
  EXPECT_FALSE(propagateAndPartition(ctx, diagnostics, allReduces));
  EXPECT_NE(diagnostics.find("'tfm.matmul' op has no dist "
                             "ShardingRuleOpInterface model"),
            std::string::npos)
      << diagnostics;
}

} // namespace
