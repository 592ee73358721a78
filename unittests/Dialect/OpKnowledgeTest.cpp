//===- OpKnowledgeTest.cpp - Op kinds the generic passes ask about --------===//
//
// The cost interface's roofline kind, GEMM shape and attention score count,
// the gradient traits of tfm ops, and the communication interface and
// asynchronous-communication trait of dist ops: what dist-auto-plan,
// rt-lower, rt-fuse-epilogues, dist-overlap-collectives and
// dist-verify-comm read instead of op names.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "autoshard/Dialect/Dist/IR/DistOps.h"
#include "autoshard/Dialect/Tfm/IR/TfmDialect.h"
#include "autoshard/Dialect/Tfm/IR/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace autoshard;

namespace {

constexpr const char *kTfmOps = R"mlir(
func.func @f(%x: tensor<2x3x4xf32>, %w: tensor<4x5xf32>,
             %wb: tensor<2x4x5xf32>, %dy: tensor<2x3x5xf32>,
             %q: tensor<2x8x4x16xf32>, %k: tensor<2x6x2x16xf32>,
             %lse: tensor<2x4x8xf32>) {
  %0 = tfm.matmul %x, %w : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %1 = tfm.matmul %x, %wb : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %2 = tfm.matmul_wgrad %x, %dy : (tensor<2x3x4xf32>, tensor<2x3x5xf32>) -> tensor<4x5xf32>
  %3, %4 = tfm.attention %q, %k, %k {scale = 2.5e-01 : f64} : (tensor<2x8x4x16xf32>, tensor<2x6x2x16xf32>, tensor<2x6x2x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  %5, %6, %7 = tfm.attention_grad %q, %q, %k, %k, %q, %lse {scale = 2.5e-01 : f64} : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x6x2x16xf32>, tensor<2x6x2x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x6x2x16xf32>, tensor<2x6x2x16xf32>)
  %8 = tfm.gelu %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %9 = tfm.gelu_grad %x, %x : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return
}
)mlir";

constexpr const char *kDistOps = R"mlir(
dist.mesh @m [dp = 2, tp = 2]
func.func @f(%x: tensor<8x16xf32>) {
  %0 = dist.all_reduce %x on @m axes = [tp] reduction = sum : tensor<8x16xf32> -> tensor<8x16xf32>
  %1 = dist.all_reduce_start %x on @m axes = [tp] reduction = sum : tensor<8x16xf32> -> !dist.async<tensor<8x16xf32>>
  %2 = dist.wait %1 : !dist.async<tensor<8x16xf32>>
  %3 = dist.all_gather %x on @m axes = [dp, tp] gather_dim = 0 : tensor<8x16xf32> -> tensor<32x16xf32>
  %4 = dist.reduce_scatter %x on @m axes = [tp] scatter_dim = 1 reduction = sum : tensor<8x16xf32> -> tensor<8x8xf32>
  dist.send %x on @m axes = [dp] peer = 1 : tensor<8x16xf32>
  %5 = dist.recv_start on @m axes = [dp] peer = 0 : !dist.async<tensor<8x16xf32>>
  %6 = dist.wait %5 : !dist.async<tensor<8x16xf32>>
  return
}
)mlir";

class OpKnowledgeTest : public ::testing::Test {
protected:
  OpKnowledgeTest() {
    context
        .loadDialect<tfm::TfmDialect, dist::DistDialect, func::FuncDialect>();
  }

  /// The ops of @f in `source`, in order (the return excluded).
  SmallVector<Operation *> parseBody(const char *source) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    SmallVector<Operation *> ops;
    if (!module)
      return ops;
    auto f = module->lookupSymbol<func::FuncOp>("f");
    for (Operation &op : f.getBody().front().without_terminator())
      ops.push_back(&op);
    return ops;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

void expectGemm(Operation *op, double batch, double m, double n, double k) {
  auto cost = cast<tfm::TfmCostOpInterface>(op);
  EXPECT_EQ(cost.getRooflineKind(), tfm::RooflineKind::Gemm);
  std::optional<tfm::GemmShape> shape = cost.getGemmShape();
  ASSERT_TRUE(shape.has_value());
  EXPECT_EQ(shape->batch, batch);
  EXPECT_EQ(shape->m, m);
  EXPECT_EQ(shape->n, n);
  EXPECT_EQ(shape->k, k);
  EXPECT_FALSE(cost.getAttentionShape().has_value());
}

TEST_F(OpKnowledgeTest, GemmShapes) {
  SmallVector<Operation *> ops = parseBody(kTfmOps);
  ASSERT_EQ(ops.size(), 7u);
  // A shared 2-D weight folds the batch into m; a batched rhs stays batched.
  expectGemm(ops[0], 1, 6, 5, 4);
  expectGemm(ops[1], 2, 3, 5, 4);
  // dw [4, 5] reduces over the 2·3 tokens.
  expectGemm(ops[2], 1, 4, 5, 6);
}

TEST_F(OpKnowledgeTest, GemmShapesOfTransposedOperands) {
  SmallVector<Operation *> ops = parseBody(R"mlir(
func.func @f(%xt: tensor<2x4x3xf32>, %w: tensor<4x5xf32>, %wt: tensor<5x4xf32>) {
  %0 = tfm.matmul %xt, %w {transpose_lhs} : (tensor<2x4x3xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %1 = tfm.matmul %xt, %wt {transpose_lhs, transpose_rhs} : (tensor<2x4x3xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>
  return
}
)mlir");
  ASSERT_EQ(ops.size(), 2u);
  // K is lhs's second-to-last dim when lhs is transposed: 2·(2·3·5)·4.
  for (Operation *op : ops) {
    expectGemm(op, 1, 6, 5, 4);
    EXPECT_EQ(cast<tfm::TfmCostOpInterface>(op).getCost().flops,
              2.0 * 2 * 3 * 5 * 4);
  }
}

TEST_F(OpKnowledgeTest, AttentionAndMemoryKinds) {
  SmallVector<Operation *> ops = parseBody(kTfmOps);
  ASSERT_EQ(ops.size(), 7u);
  // B·N = 2·4 matrices of Sq x Sk = 8 x 6 scores, not causal, forward and
  // backward alike.
  for (Operation *op : {ops[3], ops[4]}) {
    auto cost = cast<tfm::TfmCostOpInterface>(op);
    EXPECT_EQ(cost.getRooflineKind(), tfm::RooflineKind::Attention);
    std::optional<tfm::AttentionShape> shape = cost.getAttentionShape();
    ASSERT_TRUE(shape.has_value());
    EXPECT_EQ(shape->batchHeads, 2.0 * 4);
    EXPECT_EQ(shape->seqQ, 8);
    EXPECT_EQ(shape->seqK, 6);
    EXPECT_FALSE(shape->causal);
    EXPECT_EQ(shape->scores(), 2.0 * 4 * 8 * 6);
    EXPECT_FALSE(cost.getGemmShape().has_value());
  }
  for (Operation *op : {ops[5], ops[6]}) {
    auto cost = cast<tfm::TfmCostOpInterface>(op);
    EXPECT_EQ(cost.getRooflineKind(), tfm::RooflineKind::Memory);
    EXPECT_FALSE(cost.getGemmShape().has_value());
    EXPECT_FALSE(cost.getAttentionShape().has_value());
  }
}

TEST_F(OpKnowledgeTest, GradientTraits) {
  SmallVector<Operation *> ops = parseBody(kTfmOps);
  ASSERT_EQ(ops.size(), 7u);
  auto isGradient = [](Operation *op) {
    return op->hasTrait<tfm::trait::Gradient>();
  };
  auto isWeightGradient = [](Operation *op) {
    return op->hasTrait<tfm::trait::WeightGradient>();
  };
  EXPECT_FALSE(isGradient(ops[0]));
  EXPECT_TRUE(isGradient(ops[2]));
  EXPECT_TRUE(isWeightGradient(ops[2]));
  EXPECT_FALSE(isGradient(ops[3]));
  EXPECT_TRUE(isGradient(ops[4]));
  EXPECT_FALSE(isWeightGradient(ops[4]));
  EXPECT_FALSE(isGradient(ops[5]));
  EXPECT_TRUE(isGradient(ops[6]));
}

TEST_F(OpKnowledgeTest, CommunicationKinds) {
  SmallVector<Operation *> ops = parseBody(kDistOps);
  ASSERT_EQ(ops.size(), 8u);
  using dist::CommKind;
  struct Expected {
    unsigned index;
    CommKind kind;
    bool async;
    StringRef start;
  };
  for (Expected e :
       {Expected{0, CommKind::AllReduce, false, "dist.all_reduce_start"},
        Expected{1, CommKind::AllReduce, true, "dist.all_reduce_start"},
        Expected{3, CommKind::AllGather, false, "dist.all_gather_start"},
        Expected{4, CommKind::ReduceScatter, false,
                 "dist.reduce_scatter_start"},
        Expected{5, CommKind::Send, false, "dist.send_start"},
        Expected{6, CommKind::Recv, true, "dist.recv_start"}}) {
    SCOPED_TRACE(ops[e.index]->getName().getStringRef().str());
    auto comm = dyn_cast<dist::CommOpInterface>(ops[e.index]);
    ASSERT_TRUE(comm);
    EXPECT_EQ(comm.getCommKind(), e.kind);
    EXPECT_EQ(comm.isAsync(), e.async);
    EXPECT_EQ(comm.getStartOpName().str(), e.start.str());
    EXPECT_EQ(ops[e.index]->hasTrait<dist::trait::AsyncCommunication>(),
              e.async);
    EXPECT_EQ(comm.getMeshAttr().getValue().str(), "m");
    // The start form is registered, asynchronous and of the same kind.
    std::optional<RegisteredOperationName> start =
        RegisteredOperationName::lookup(e.start, &context);
    ASSERT_TRUE(start.has_value());
    EXPECT_TRUE(start->hasTrait<dist::trait::AsyncCommunication>());
    EXPECT_TRUE(start->hasInterface<dist::CommOpInterface>());
  }
  EXPECT_EQ(cast<dist::CommOpInterface>(ops[3]).getAxes().size(), 2u);
  // A wait completes asynchronous communication but communicates nothing
  // itself.
  for (unsigned i : {2u, 7u}) {
    EXPECT_FALSE(isa<dist::CommOpInterface>(ops[i]));
    EXPECT_TRUE(ops[i]->hasTrait<dist::trait::AsyncCommunication>());
  }
}

} // namespace
