//===- ShardingPropagatorTest.cpp - The algorithm of dist-propagate -------===//
//
// Small hand-written programs of tfm ops on a mesh, a few values annotated;
// the propagator's shardings are read back off the IR.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/Analysis/ShardingPropagator.h"
#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Tfm/IR/TfmAttrs.h"
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

/// The `dist.sharding` the propagator gave the result of the op named
/// `opName` (the `index`-th such op of `fn`), printed.
std::string resultSharding(ModuleOp module, StringRef fn, StringRef opName,
                           unsigned index) {
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

/// A sharding the propagator must write: on the result of the `index`-th op
/// named `op` of `fn`, or, with `op` empty, on argument `index` of `fn`.
struct Expected {
  std::string fn, op;
  unsigned index;
  std::string sharding;
};

Expected result(StringRef fn, StringRef op, unsigned index,
                StringRef sharding) {
  return {fn.str(), op.str(), index, sharding.str()};
}
Expected arg(StringRef fn, unsigned index, StringRef sharding) {
  return {fn.str(), "", index, sharding.str()};
}

/// A program of tfm ops on a mesh (some values annotated) and the
/// shardings the propagator must give it.
struct PropagationCase {
  const char *name;
  std::string program;
  std::vector<Expected> expected;
};

void PrintTo(const PropagationCase &c, std::ostream *os) { *os << c.name; }

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

/// Two fixed operands of an add that want tp on different dims (one factor
/// per dim, and tp can split only one of them); argument `stateArg` is the
/// training state (`tfm.param`).
std::string conflictProgram(unsigned stateArg) {
  auto param = [&](unsigned i) {
    return i == stateArg ? R"(tfm.param = "w", )" : "";
  };
  return std::string(R"mlir(
module {
  dist.mesh @mesh [tp = 2 : tensor]
  func.func @f(%a: tensor<8x16xf32> {)mlir") +
         param(0) + R"mlir(dist.sharding = #dist.sharding<@mesh, [{}, {tp}]>},
               %b: tensor<8x16xf32> {)mlir" +
         param(1) + R"mlir(dist.sharding = #dist.sharding<@mesh, [{tp}, {}]>})
      -> tensor<8x16xf32> {
    %y = tfm.add %a, %b : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    return %y : tensor<8x16xf32>
  }
}
)mlir";
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

const PropagationCase kCases[] = {
    // Forward from %w: the matmul's column factor is on tp, through gelu.
    // Backward from the seeded result: the batch dim is on dp everywhere;
    // the contraction over tp leaves the second matmul partial. Soft
    // arguments learn the factor axes backward: %x the batch split, %w2 the
    // row split its contraction dim has.
    {"ForwardAndBackward",
     kMlp,
     {result("f", "tfm.matmul", 0, "#dist.sharding<@mesh, [{dp}, {tp}]>"),
      result("f", "tfm.gelu", 0, "#dist.sharding<@mesh, [{dp}, {tp}]>"),
      result("f", "tfm.matmul", 1,
             "#dist.sharding<@mesh, [{dp}, {}], partial = {tp: sum}>"),
      arg("f", 0, "#dist.sharding<@mesh, [{dp}, {}]>"),
      arg("f", 1, "#dist.sharding<@mesh, [{}, {tp}]>"),
      arg("f", 2, "#dist.sharding<@mesh, [{tp}, {}]>")}},
    // The training state's layout wins, whichever operand it is; fixed
    // values keep their seeds.
    {"ConflictGoesToFirstOperandState",
     conflictProgram(0),
     {result("f", "tfm.add", 0, "#dist.sharding<@mesh, [{}, {tp}]>"),
      arg("f", 0, "#dist.sharding<@mesh, [{}, {tp}]>"),
      arg("f", 1, "#dist.sharding<@mesh, [{tp}, {}]>")}},
    {"ConflictGoesToSecondOperandState",
     conflictProgram(1),
     {result("f", "tfm.add", 0, "#dist.sharding<@mesh, [{tp}, {}]>"),
      arg("f", 0, "#dist.sharding<@mesh, [{}, {tp}]>"),
      arg("f", 1, "#dist.sharding<@mesh, [{tp}, {}]>")}},
    {"ConstraintsAndAnnotationsAreFixed",
     kConstraint,
     {result("f", "tfm.gelu", 0, "#dist.sharding<@mesh, [{}, {tp}]>"),
      result("f", "tfm.gelu", 1, "#dist.sharding<@mesh, [{}, {}]>")}},
    {"ClonesCalleePerSignature",
     kTwoSignatures,
     {arg("g", 0, "#dist.sharding<@mesh, [{tp}, {}]>"),
      arg("g_s1", 0, "#dist.sharding<@mesh, [{}, {tp}]>"),
      result("g_s1", "tfm.gelu", 0, "#dist.sharding<@mesh, [{}, {tp}]>")}},
};

class ShardingPropagatorTest : public ::testing::Test {
protected:
  ShardingPropagatorTest() : context(makeRegistry(/*withModels=*/true)) {}

  /// Parses `source` into `module` and runs the propagator on its only
  /// mesh; fails with the diagnostics if either fails.
  ::testing::AssertionResult propagate(StringRef source) {
    std::string diagnostics;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      diagnostics += diag.str() + "\n";
      return success();
    });
    module = parseSourceString<ModuleOp>(source, &context);
    if (!module)
      return ::testing::AssertionFailure() << "parse: " << diagnostics;
    auto meshes = module->getOps<MeshOp>();
    if (meshes.empty() ||
        failed(ShardingPropagator(*module, *meshes.begin()).run()))
      return ::testing::AssertionFailure() << "propagate: " << diagnostics;
    return ::testing::AssertionSuccess();
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

class ShardingPropagatorCases
    : public ShardingPropagatorTest,
      public ::testing::WithParamInterface<PropagationCase> {};

TEST_P(ShardingPropagatorCases, GivesExpectedShardings) {
  const PropagationCase &c = GetParam();
  ASSERT_TRUE(propagate(c.program));
  for (const Expected &e : c.expected)
    EXPECT_EQ(e.op.empty() ? argSharding(*module, e.fn, e.index)
                           : resultSharding(*module, e.fn, e.op, e.index),
              e.sharding)
        << "@" << e.fn << " " << (e.op.empty() ? "argument" : e.op) << " #"
        << e.index;
}

INSTANTIATE_TEST_SUITE_P(
    Programs, ShardingPropagatorCases, ::testing::ValuesIn(kCases),
    [](const ::testing::TestParamInfo<PropagationCase> &info) {
      return std::string(info.param.name);
    });

TEST_F(ShardingPropagatorTest, ClonesCalleeAndRetargetsCalls) {
  ASSERT_TRUE(propagate(kTwoSignatures));
  SmallVector<StringRef> callees;
  module->walk([&](func::CallOp call) { callees.push_back(call.getCallee()); });
  EXPECT_EQ(callees, (SmallVector<StringRef>{"g", "g_s1"}));
}

// A clone computes what its original does: it keeps its tfm.func_kind.
TEST_F(ShardingPropagatorTest, CloneKeepsFunctionKind) {
  std::string source = kTwoSignatures;
  std::string header =
      "func.func private @g(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {";
  size_t at = source.find(header);
  ASSERT_NE(at, std::string::npos);
  source.replace(at, header.size(),
                 "func.func private @g(%x: tensor<8x16xf32>) -> "
                 "tensor<8x16xf32> attributes {tfm.func_kind = "
                 "#tfm.func_kind<backward>} {");
  ASSERT_TRUE(propagate(source));
  auto clone = module->lookupSymbol<func::FuncOp>("g_s1");
  ASSERT_TRUE(clone);
  EXPECT_EQ(tfm::getFuncKind(clone), tfm::FuncKind::Backward);
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
