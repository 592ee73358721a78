//===- ShardingPropagatorTest.cpp - The algorithm of dist-propagate -------===//
//
// Small hand-written programs of tfm ops on a mesh, a few values annotated;
// the propagator's shardings are read back off the IR.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/Analysis/ShardingPropagator.h"
#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Tfm/IR/TfmDialect.h"
#include "autoshard/Dialect/Tfm/Sharding/ShardingInterfaceImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

DialectRegistry makeRegistry(bool withModels) {
  DialectRegistry registry;
  registry.insert<tfm::TfmDialect, DistDialect, func::FuncDialect,
                  arith::ArithDialect>();
  if (withModels)
    tfm::registerShardingInterfaceExternalModels(registry);
  return registry;
}

class ShardingPropagatorTest : public ::testing::Test {
protected:
  ShardingPropagatorTest() : context(makeRegistry(/*withModels=*/true)) {}

  /// Parses `source` and runs the propagator on its only mesh; null if
  /// either fails (the diagnostics are in `diagnostics`).
  OwningOpRef<ModuleOp> propagate(const char *source) {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      diagnostics += diag.str() + "\n";
      return success();
    });
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, &context);
    if (!module)
      return nullptr;
    auto meshes = module->getOps<MeshOp>();
    if (meshes.empty() ||
        failed(ShardingPropagator(*module, *meshes.begin()).run()))
      return nullptr;
    return module;
  }

  MLIRContext context;
  std::string diagnostics;
};

/// The `dist.sharding` the propagator gave the result of the op named
/// `opName` (the `index`-th such op of `fn`), printed.
std::string resultSharding(ModuleOp module, StringRef fn, StringRef opName,
                           unsigned index = 0) {
  auto func = module.lookupSymbol<func::FuncOp>(fn);
  if (!func)
    return "<no function>";
  std::string out = "<no op>";
  unsigned seen = 0;
  func.walk([&](Operation *op) {
    if (op->getName().getStringRef() != opName || seen++ != index)
      return;
    Attribute attr = op->getAttr(DistDialect::getShardingAttrName());
    llvm::raw_string_ostream os(out = "");
    if (attr)
      attr.print(os);
    else
      os << "<none>";
  });
  return out;
}

std::string argSharding(ModuleOp module, StringRef fn, unsigned arg) {
  auto func = module.lookupSymbol<func::FuncOp>(fn);
  if (!func)
    return "<no function>";
  Attribute attr = func.getArgAttr(arg, DistDialect::getShardingAttrName());
  if (!attr)
    return "<none>";
  std::string out;
  llvm::raw_string_ostream os(out);
  attr.print(os);
  return out;
}

// A column-parallel matmul seeded by its weight, then a row-parallel one;
// the result is seeded split on dp, which the backward sweep carries to %x.
constexpr const char *kMlp = R"mlir(
module {
  dist.mesh @mesh [dp = 2 : data, tp = 2 : tensor]
  func.func @f(%x: tensor<8x16xf32>,
               %w: tensor<16x32xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>},
               %w2: tensor<32x16xf32>)
      -> (tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{dp}, {}]>}) {
    %y = tfm.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    %g = tfm.gelu %y : (tensor<8x32xf32>) -> tensor<8x32xf32>
    %z = tfm.matmul %g, %w2 : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
    return %z : tensor<8x16xf32>
  }
}
)mlir";

TEST_F(ShardingPropagatorTest, ForwardAndBackward) {
  OwningOpRef<ModuleOp> module = propagate(kMlp);
  ASSERT_TRUE(module) << diagnostics;
  // Forward from %w: the matmul's column factor is on tp, through gelu.
  // Backward from the seeded result: the batch dim is on dp everywhere.
  EXPECT_EQ(resultSharding(*module, "f", "tfm.matmul", 0),
            "#dist.sharding<@mesh, [{dp}, {tp}]>");
  EXPECT_EQ(resultSharding(*module, "f", "tfm.gelu"),
            "#dist.sharding<@mesh, [{dp}, {tp}]>");
  // The contraction over tp leaves the second matmul partial.
  EXPECT_EQ(resultSharding(*module, "f", "tfm.matmul", 1),
            "#dist.sharding<@mesh, [{dp}, {}], partial = {tp: sum}>");
  // Soft arguments learn the factor axes backward: %x the batch split, %w2
  // the row split its contraction dim has.
  EXPECT_EQ(argSharding(*module, "f", 0), "#dist.sharding<@mesh, [{dp}, {}]>");
  EXPECT_EQ(argSharding(*module, "f", 1), "#dist.sharding<@mesh, [{}, {tp}]>");
  EXPECT_EQ(argSharding(*module, "f", 2), "#dist.sharding<@mesh, [{tp}, {}]>");
}

// Two fixed operands of an add want tp on different dims (one factor per
// dim, and tp can split only one of them): the training state's layout
// wins, whichever operand it is.
constexpr const char *kConflictFirstIsState = R"mlir(
module {
  dist.mesh @mesh [tp = 2 : tensor]
  func.func @f(%a: tensor<8x16xf32> {tfm.param = "w", dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>},
               %b: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>})
      -> tensor<8x16xf32> {
    %y = tfm.add %a, %b : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    return %y : tensor<8x16xf32>
  }
}
)mlir";
constexpr const char *kConflictSecondIsState = R"mlir(
module {
  dist.mesh @mesh [tp = 2 : tensor]
  func.func @f(%a: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>},
               %b: tensor<8x16xf32> {tfm.param = "w", dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>})
      -> tensor<8x16xf32> {
    %y = tfm.add %a, %b : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    return %y : tensor<8x16xf32>
  }
}
)mlir";

TEST_F(ShardingPropagatorTest, ConflictGoesToTrainingState) {
  OwningOpRef<ModuleOp> first = propagate(kConflictFirstIsState);
  ASSERT_TRUE(first) << diagnostics;
  EXPECT_EQ(resultSharding(*first, "f", "tfm.add"),
            "#dist.sharding<@mesh, [{}, {tp}]>");
  OwningOpRef<ModuleOp> second = propagate(kConflictSecondIsState);
  ASSERT_TRUE(second) << diagnostics;
  EXPECT_EQ(resultSharding(*second, "f", "tfm.add"),
            "#dist.sharding<@mesh, [{tp}, {}]>");
  // Fixed values keep their seeds.
  EXPECT_EQ(argSharding(*second, "f", 0), "#dist.sharding<@mesh, [{}, {tp}]>");
}

// A constraint pins its result; an annotated op keeps its annotation.
constexpr const char *kConstraint = R"mlir(
module {
  dist.mesh @mesh [tp = 2 : tensor]
  func.func @f(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>})
      -> tensor<8x16xf32> {
    %c = dist.sharding_constraint %x to <@mesh, [{}, {tp}]> : tensor<8x16xf32>
    %g = tfm.gelu %c : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %h = tfm.gelu %g {dist.sharding = #dist.sharding<@mesh, [{}, {}]>} : (tensor<8x16xf32>) -> tensor<8x16xf32>
    return %h : tensor<8x16xf32>
  }
}
)mlir";

TEST_F(ShardingPropagatorTest, ConstraintsAndAnnotationsAreFixed) {
  OwningOpRef<ModuleOp> module = propagate(kConstraint);
  ASSERT_TRUE(module) << diagnostics;
  EXPECT_EQ(resultSharding(*module, "f", "tfm.gelu", 0),
            "#dist.sharding<@mesh, [{}, {tp}]>");
  EXPECT_EQ(resultSharding(*module, "f", "tfm.gelu", 1),
            "#dist.sharding<@mesh, [{}, {}]>");
}

// @g is called with rows split and with columns split: one clone per
// signature.
constexpr const char *kTwoSignatures = R"mlir(
module {
  dist.mesh @mesh [tp = 2 : tensor]
  func.func private @g(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %y = tfm.gelu %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
    return %y : tensor<8x16xf32>
  }
  func.func @main(%a: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>},
                  %b: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>})
      -> (tensor<8x16xf32>, tensor<8x16xf32>) {
    %0 = call @g(%a) : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %1 = call @g(%b) : (tensor<8x16xf32>) -> tensor<8x16xf32>
    return %0, %1 : tensor<8x16xf32>, tensor<8x16xf32>
  }
}
)mlir";

TEST_F(ShardingPropagatorTest, ClonesCalleePerSignature) {
  OwningOpRef<ModuleOp> module = propagate(kTwoSignatures);
  ASSERT_TRUE(module) << diagnostics;
  EXPECT_EQ(argSharding(*module, "g", 0), "#dist.sharding<@mesh, [{tp}, {}]>");
  EXPECT_EQ(argSharding(*module, "g_s1", 0),
            "#dist.sharding<@mesh, [{}, {tp}]>");
  EXPECT_EQ(resultSharding(*module, "g_s1", "tfm.gelu"),
            "#dist.sharding<@mesh, [{}, {tp}]>");
  SmallVector<StringRef> callees;
  module->walk([&](func::CallOp call) { callees.push_back(call.getCallee()); });
  EXPECT_EQ(callees, (SmallVector<StringRef>{"g", "g_s1"}));
}

TEST(ShardingPropagatorErrors, FailsWithoutShardingModels) {
  MLIRContext context(makeRegistry(/*withModels=*/false));
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    diagnostics += diag.str() + "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kMlp, &context);
  ASSERT_TRUE(module);
  auto mesh = *module->getOps<MeshOp>().begin();
  EXPECT_TRUE(failed(ShardingPropagator(*module, mesh).run()));
  EXPECT_NE(diagnostics.find("has no dist ShardingRuleOpInterface model"),
            std::string::npos)
      << diagnostics;
  // Nothing was written.
  bool annotated = false;
  module->walk([&](Operation *op) {
    annotated |= !isa<func::FuncOp>(op) &&
                 op->hasAttr(DistDialect::getShardingAttrName());
  });
  EXPECT_FALSE(annotated);
}

} // namespace
