//===- ProgramProfileTest.cpp - What each function of a program does -----===//
//
// The reading dist-auto-plan and dist-explain share, on hand-written
// programs in both forms on a mesh whose axes are named
// `batch` (data) and `model` (tensor), so that only the roles classify the
// collectives: the func form's block structure (by tfm.func_kind), phases,
// costs and collectives; the rt form's kernels, buckets and call tree.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/Analysis/ProgramProfile.h"
#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "autoshard/Dialect/Rt/IR/RtDialect.h"
#include "autoshard/Dialect/Tfm/IR/TfmDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist;

namespace {

/// A training step: an embedding-side gelu, one block forward (a GEMM, a
/// tensor-parallel all-reduce, a data-parallel all-reduce and an async
/// tensor-parallel all-gather), the loss and its gradient, a
/// full-recomputation re-run, the block backward (a weight gradient and a
/// reduce-scatter), the data-parallel gradient sum and the optimizer's sum
/// of squares.
constexpr const char *kFuncProgram = R"mlir(
module {
  dist.mesh @mesh [batch = 2 : data, model = 2 : tensor]
  func.func private @layer_fwd(%x: tensor<2x4x8xf32> {tfm.role = "hidden"},
                               %w: tensor<8x8xf32> {tfm.role = "attn_q"})
      -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>)
      attributes {tfm.func_kind = #tfm.func_kind<forward>} {
    %y = tfm.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %r = dist.all_reduce %y on @mesh axes = [model] reduction = sum : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
    %d = dist.all_reduce %r on @mesh axes = [batch] reduction = sum : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
    %h = dist.all_gather_start %d on @mesh axes = [model] gather_dim = 1 : tensor<2x4x8xf32> -> !dist.async<tensor<2x8x8xf32>>
    %g = dist.wait %h : !dist.async<tensor<2x8x8xf32>>
    return %d, %y : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  }
  func.func private @layer_recompute(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>)
      -> tensor<2x4x8xf32>
      attributes {tfm.func_kind = #tfm.func_kind<recompute>} {
    %y = tfm.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    return %y : tensor<2x4x8xf32>
  }
  func.func private @layer_bwd(%dy: tensor<2x4x8xf32>, %x: tensor<2x4x8xf32>)
      -> (tensor<2x4x8xf32>, tensor<8x8xf32>)
      attributes {tfm.func_kind = #tfm.func_kind<backward>} {
    %dw = tfm.matmul_wgrad %x, %dy : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<8x8xf32>
    %s = dist.reduce_scatter %dy on @mesh axes = [model] scatter_dim = 1 reduction = sum : tensor<2x4x8xf32> -> tensor<2x2x8xf32>
    return %dy, %dw : tensor<2x4x8xf32>, tensor<8x8xf32>
  }
  func.func @train_step(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32> {tfm.param = "w"},
                        %labels: tensor<2x4xi32>) -> tensor<f32> {
    %e = tfm.gelu %x : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %f:2 = call @layer_fwd(%e, %w) : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>)
    %loss = tfm.cross_entropy %f#0, %labels : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<f32>
    %dl = tfm.cross_entropy_grad %loss, %f#0, %labels : (tensor<f32>, tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
    %re = call @layer_recompute(%e, %w) {tfm.recompute} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %b:2 = call @layer_bwd(%dl, %re) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8x8xf32>)
    %sum = dist.all_reduce %b#1 on @mesh axes = [batch] reduction = sum : tensor<8x8xf32> -> tensor<8x8xf32>
    %norm = tfm.sum_squares %sum : (tensor<8x8xf32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
)mlir";

/// The rt form: @blk (a full-recomputation re-run) called twice, each with
/// a tensor-parallel all-reduce; @bwd (marked tfm.recompute) with a
/// bucketed data-parallel reduce-scatter of two tensors and an async
/// all-gather.
constexpr const char *kRtProgram = R"mlir(
module {
  dist.mesh @mesh [batch = 2 : data, model = 2 : tensor]
  rt.func @blk(%arg0: !rt.buffer<2x4xf32>, %arg1: !rt.buffer<2x4xf32>)
      attributes {tfm.func_kind = #tfm.func_kind<recompute>} {
    rt.kernel "dist.all_reduce"(%arg0) -> (%arg1) attrs {axes = ["model"], reduction = "sum"} : (!rt.buffer<2x4xf32>) -> !rt.buffer<2x4xf32>
    rt.return
  }
  rt.func @bwd(%a: !rt.buffer<4x8xf32>, %b: !rt.buffer<3x4xf32>, %g: !rt.buffer<2x4xf32>)
      attributes {tfm.func_kind = #tfm.func_kind<backward>, tfm.recompute} {
    %flat = rt.alloc grad : !rt.buffer<44xf32>
    rt.kernel "dist.pack"(%a, %b) -> (%flat) attrs {num_groups = 2 : i64, scatter_dims = array<i64: 0, 1>} : (!rt.buffer<4x8xf32>, !rt.buffer<3x4xf32>) -> !rt.buffer<44xf32>
    %half = rt.alloc grad : !rt.buffer<22xf32>
    rt.kernel "dist.reduce_scatter"(%flat) -> (%half) attrs {axes = ["batch"], reduction = "sum", scatter_dim = 0 : i64} : (!rt.buffer<44xf32>) -> !rt.buffer<22xf32>
    %full = rt.alloc activation : !rt.buffer<2x8xf32>
    rt.kernel "dist.all_gather_start"(%g) -> (%full) attrs {axes = ["model"], gather_dim = 1 : i64, handle = 0 : i64} : (!rt.buffer<2x4xf32>) -> !rt.buffer<2x8xf32>
    rt.kernel "dist.wait"(%g, %full) -> (%full) attrs {handle = 0 : i64} : (!rt.buffer<2x4xf32>, !rt.buffer<2x8xf32>) -> !rt.buffer<2x8xf32>
    rt.return
  }
  rt.func @train_step() attributes {entry = "train_step"} {
    %0 = rt.alloc activation : !rt.buffer<2x4xf32>
    %1 = rt.alloc activation : !rt.buffer<2x4xf32>
    rt.call @blk(%0, %1) : !rt.buffer<2x4xf32>, !rt.buffer<2x4xf32>
    rt.call @blk(%1, %0) : !rt.buffer<2x4xf32>, !rt.buffer<2x4xf32>
    %2 = rt.alloc grad : !rt.buffer<4x8xf32>
    %3 = rt.alloc grad : !rt.buffer<3x4xf32>
    rt.call @bwd(%2, %3, %0) : !rt.buffer<4x8xf32>, !rt.buffer<3x4xf32>, !rt.buffer<2x4xf32>
    rt.return
  }
}
)mlir";

class ProgramProfileTest : public ::testing::Test {
protected:
  ProgramProfileTest() {
    context.loadDialect<DistDialect, rt::RtDialect, tfm::TfmDialect,
                        func::FuncDialect>();
  }
  OwningOpRef<ModuleOp> parse(const char *source) {
    return parseSourceString<ModuleOp>(source, &context);
  }
  MLIRContext context;
};

TEST_F(ProgramProfileTest, ReadsFunctionsOfTheFuncForm) {
  OwningOpRef<ModuleOp> module = parse(kFuncProgram);
  ASSERT_TRUE(module);
  ProgramProfile profile(*module);
  ASSERT_EQ(profile.getFunctions().size(), 4u);

  const FunctionProfile *fwd = profile.lookup("layer_fwd");
  ASSERT_TRUE(fwd);
  EXPECT_EQ(fwd->kind, tfm::FuncKind::Forward);
  EXPECT_FALSE(fwd->recomputes);
  EXPECT_FALSE(fwd->entry);
  // The GEMM: [8 x 8] x [8 x 8] (batch 2 x 4 folded into m).
  ASSERT_EQ(fwd->work.costs.size(), 1u);
  const CostRecord &gemm = fwd->work.costs[0];
  EXPECT_EQ(gemm.roofline, tfm::RooflineKind::Gemm);
  ASSERT_TRUE(gemm.gemm);
  EXPECT_EQ(gemm.gemm->m, 8);
  EXPECT_EQ(gemm.gemm->k, 8);
  EXPECT_EQ(gemm.cost.flops, 2.0 * 8 * 8 * 8);
  EXPECT_FALSE(gemm.gradient);

  // Three collectives (the wait moves nothing), in program order.
  ASSERT_EQ(fwd->work.comms.size(), 3u);
  const CommRecord &tp = fwd->work.comms[0];
  EXPECT_EQ(tp.kind, CommKind::AllReduce);
  EXPECT_EQ(tp.name, "dist.all_reduce");
  EXPECT_EQ(tp.axes, (SmallVector<std::string>{"model"}));
  EXPECT_EQ(tp.bytes, 256);
  EXPECT_EQ(tp.resultBytes, 256);
  EXPECT_EQ(tp.numElements, 64);
  EXPECT_TRUE(tp.allAxesHaveRoles({AxisRole::Tensor}));
  EXPECT_FALSE(tp.anyAxisHasRole(AxisRole::Data));
  const CommRecord &dp = fwd->work.comms[1];
  EXPECT_FALSE(dp.allAxesHaveRoles({AxisRole::Tensor}));
  EXPECT_TRUE(dp.allAxesHaveRoles({AxisRole::Data, AxisRole::Context}));
  // The async gather: its result is a handle (no tensor, no bytes).
  const CommRecord &gather = fwd->work.comms[2];
  EXPECT_EQ(gather.kind, CommKind::AllGather);
  EXPECT_TRUE(gather.async);
  EXPECT_EQ(gather.dim, 1);
  EXPECT_EQ(gather.shape, (SmallVector<int64_t>{2, 4, 8}));
  EXPECT_TRUE(gather.resultShape.empty());
  EXPECT_EQ(gather.resultBytes, 0);

  const FunctionProfile *bwd = profile.lookup("layer_bwd");
  ASSERT_TRUE(bwd);
  ASSERT_EQ(bwd->work.costs.size(), 1u);
  EXPECT_TRUE(bwd->work.costs[0].gradient);
  EXPECT_TRUE(bwd->work.costs[0].weightGradient);
  ASSERT_EQ(bwd->work.comms.size(), 1u);
  EXPECT_EQ(bwd->work.comms[0].kind, CommKind::ReduceScatter);
  EXPECT_EQ(bwd->work.comms[0].resultShape, (SmallVector<int64_t>{2, 2, 8}));

  EXPECT_TRUE(profile.lookup("layer_recompute")->recomputes);
  const FunctionProfile *step = profile.lookup("train_step");
  EXPECT_TRUE(step->entry);
  ASSERT_EQ(step->calls.size(), 3u);
  EXPECT_TRUE(step->calls[1].recompute);
  EXPECT_EQ(step->calls[2].callee, "layer_bwd");
}

TEST_F(ProgramProfileTest, ReadsTheTrainStepByKindAndPhase) {
  OwningOpRef<ModuleOp> module = parse(kFuncProgram);
  ASSERT_TRUE(module);
  ProgramProfile profile(*module);
  llvm::Expected<TrainStepProfile> step = profile.getTrainStep();
  ASSERT_TRUE(bool(step)) << llvm::toString(step.takeError());
  EXPECT_EQ(step->forward, profile.lookup("layer_fwd"));
  EXPECT_EQ(step->backward, profile.lookup("layer_bwd"));
  EXPECT_EQ(step->recompute, profile.lookup("layer_recompute"));

  auto names = [](const WorkProfile &w) {
    SmallVector<std::string> out;
    for (const CostRecord &c : w.costs)
      out.push_back(c.op->getName().getStringRef().str());
    for (const CommRecord &c : w.comms)
      out.push_back(c.name.str());
    return out;
  };
  EXPECT_EQ(names(step->embedding), (SmallVector<std::string>{"tfm.gelu"}));
  EXPECT_EQ(names(step->head), (SmallVector<std::string>{"tfm.cross_entropy"}));
  EXPECT_EQ(names(step->headBackward),
            (SmallVector<std::string>{"tfm.cross_entropy_grad"}));
  // The optimizer's sum of squares is left out.
  EXPECT_EQ(names(step->embeddingBackward),
            (SmallVector<std::string>{"dist.all_reduce"}));
}

TEST_F(ProgramProfileTest, TrainStepErrors) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
module {
  func.func private @blk(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
  func.func @step(%x: tensor<2xf32>) -> tensor<2xf32> {
    %y = call @blk(%x) : (tensor<2xf32>) -> tensor<2xf32>
    return %y : tensor<2xf32>
  }
}
)mlir");
  ASSERT_TRUE(module);
  ProgramProfile profile(*module);
  llvm::Expected<TrainStepProfile> missing = profile.getTrainStep();
  ASSERT_FALSE(bool(missing));
  EXPECT_EQ(llvm::toString(missing.takeError()),
            "the compiled program has no train_step");
  // A call of a function without a kind is no block call.
  llvm::Expected<TrainStepProfile> noBlocks = profile.getTrainStep("step");
  ASSERT_FALSE(bool(noBlocks));
  EXPECT_EQ(llvm::toString(noBlocks.takeError()),
            "no block forward/backward functions (*_fwd, *_bwd) in step");
}

TEST_F(ProgramProfileTest, ReadsKernelsOfTheRtForm) {
  OwningOpRef<ModuleOp> module = parse(kRtProgram);
  ASSERT_TRUE(module);
  ProgramProfile profile(*module);

  const FunctionProfile *blk = profile.lookup("blk");
  ASSERT_TRUE(blk);
  EXPECT_EQ(blk->kind, tfm::FuncKind::Recompute);
  EXPECT_TRUE(blk->recomputes);
  EXPECT_TRUE(blk->work.costs.empty());
  ASSERT_EQ(blk->work.comms.size(), 1u);
  // The kernel's kind comes from the dist op it names; its mesh is the
  // module's.
  EXPECT_EQ(blk->work.comms[0].kind, CommKind::AllReduce);
  EXPECT_TRUE(blk->work.comms[0].allAxesHaveRoles({AxisRole::Tensor}));
  EXPECT_EQ(blk->work.comms[0].bytes, 32);

  const FunctionProfile *bwd = profile.lookup("bwd");
  ASSERT_TRUE(bwd);
  EXPECT_EQ(bwd->kind, tfm::FuncKind::Backward);
  EXPECT_TRUE(bwd->recomputes);
  // Pack and wait move nothing.
  ASSERT_EQ(bwd->work.comms.size(), 2u);
  // The bucket is described by its first member: 4x8 scattered to 2x8 on
  // dim 0; its bytes are the flat buffer's.
  const CommRecord &bucket = bwd->work.comms[0];
  EXPECT_EQ(bucket.kind, CommKind::ReduceScatter);
  EXPECT_EQ(bucket.shape, (SmallVector<int64_t>{4, 8}));
  EXPECT_EQ(bucket.resultShape, (SmallVector<int64_t>{2, 8}));
  EXPECT_EQ(bucket.dim, 0);
  EXPECT_EQ(bucket.numElements, 32);
  EXPECT_EQ(bucket.bytes, 176);
  EXPECT_TRUE(bucket.allAxesHaveRoles({AxisRole::Data}));
  const CommRecord &gather = bwd->work.comms[1];
  EXPECT_EQ(gather.kind, CommKind::AllGather);
  EXPECT_TRUE(gather.async);
  EXPECT_EQ(gather.resultShape, (SmallVector<int64_t>{2, 8}));

  const FunctionProfile *step = profile.lookup("train_step");
  ASSERT_TRUE(step);
  EXPECT_TRUE(step->entry);
  EXPECT_FALSE(step->kind);
  SmallVector<std::string> order;
  profile.walkCallTree("train_step", [&](const FunctionProfile &f) {
    order.push_back(f.name.str());
  });
  EXPECT_EQ(order,
            (SmallVector<std::string>{"train_step", "blk", "blk", "bwd"}));
  llvm::StringMap<int64_t> calls = profile.getCallCounts("train_step");
  EXPECT_EQ(calls.lookup("train_step"), 1);
  EXPECT_EQ(calls.lookup("blk"), 2);
  EXPECT_EQ(calls.lookup("bwd"), 1);
  EXPECT_TRUE(profile.getCallCounts("missing").empty());
}

} // namespace
