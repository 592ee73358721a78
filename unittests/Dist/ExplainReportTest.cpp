//===- ExplainReportTest.cpp - The dist-explain report and its renderers --===//
//
// A report built by hand, rendered as text and JSON; and a report read off
// a hand-written rt program whose mesh axes are not named after the plan's
// keys, so that only their roles can attribute the collectives.
//
//===----------------------------------------------------------------------===//

#include "autoshard/Dialect/Dist/Analysis/ExplainReport.h"
#include "autoshard/Dialect/Dist/Analysis/ExplainReader.h"
#include "autoshard/Dialect/Dist/IR/DistDialect.h"
#include "autoshard/Dialect/Rt/IR/RtDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist::explain;

namespace {

/// dp=2 x tp=2, ZeRO-1: a column-split weight (8x8 f32, 128 B per rank) and
/// its first moment split on {dp, tp}; 3 tp all-reduces of 256 B and one dp
/// all-reduce of 256 B per step; a planned frame of 1 KiB.
Report makeReport() {
  Report r;
  r.modelName = "toy";
  r.model["name"] = "toy";
  r.model["num_parameters"] = 64;
  r.model["num_layers"] = 1;
  r.hasPlan = true;
  r.plan = {{"dp", "2"}, {"tp", "2"}, {"zero", "1"}, {"schedule", "1f1b"}};
  r.mesh = {{"dp", 2}, {"tp", 2}};
  r.worldSize = 4;
  r.zeroStage = 1;
  State w;
  w.name = "wq";
  w.kind = "param";
  w.role = "attn_q";
  w.localShape = {8, 4};
  w.globalShape = {8, 8};
  w.localBytes = 128;
  w.globalBytes = 256;
  w.dimAxes = {{}, {"tp"}};
  State m = w;
  m.name = "wq.exp_avg";
  m.kind = "opt_m";
  m.of = "wq";
  m.localShape = {4, 4};
  m.localBytes = 64;
  m.dimAxes = {{"dp"}, {"tp"}};
  r.states = {w, m};
  r.entry = "train_step";
  r.rows[{strategyOrder("TP"), "TP", "all_reduce", "tp"}] = {3, 768};
  r.rows[{strategyOrder("DP"), "DP", "all_reduce", "dp"}] = {1, 256};
  r.perFunction.push_back({"blk", 3, {{"all_reduce[tp]", 1}}});
  r.strategies.push_back({"TP", "tp=2", "columns (last dim): attn_q (1)"});
  r.memory.planned = true;
  r.memory.frameBytes = 1024;
  r.memory.peak = {{"activation", 768}, {"io", 256}};
  return r;
}

std::string renderText(const Report &r) {
  std::string s;
  llvm::raw_string_ostream os(s);
  writeText(r, os);
  return s;
}

/// The line of `text` that starts with `prefix` (after leading blanks);
/// empty if none.
std::string lineStartingWith(llvm::StringRef text, llvm::StringRef prefix) {
  for (llvm::StringRef line : llvm::split(text, '\n'))
    if (line.ltrim().starts_with(prefix))
      return line.str();
  return "";
}

/// Expects, for each (prefix, line) of `lines`, that the first line of
/// `text` starting with `prefix` is `line`.
void expectLines(
    llvm::StringRef text,
    llvm::ArrayRef<std::pair<llvm::StringRef, llvm::StringRef>> lines) {
  for (auto [prefix, line] : lines)
    EXPECT_EQ(lineStartingWith(text, prefix), line)
        << "prefix: " << prefix.str();
}

TEST(ExplainReport, FormatsBytesAndShapes) {
  EXPECT_EQ(formatBytes(1023), "1023 B");
  EXPECT_EQ(formatBytes(1536), "1.50 KiB");
  EXPECT_EQ(formatBytes(3 * 1024 * 1024), "3.00 MiB");
  EXPECT_EQ(formatBytes(int64_t(5) * 1024 * 1024 * 1024 / 4), "1.25 GiB");
  EXPECT_EQ(formatShape({16, 64}), "16x64");
  EXPECT_EQ(formatShape({}), "scalar");
}

TEST(ExplainReport, OrdersStrategies) {
  EXPECT_LT(strategyOrder("DP"), strategyOrder("ZeRO-2"));
  EXPECT_LT(strategyOrder("ZeRO-2"), strategyOrder("TP"));
  EXPECT_LT(strategyOrder("TP"), strategyOrder("SP"));
  EXPECT_LT(strategyOrder("SP"), strategyOrder("CP ring"));
  EXPECT_LT(strategyOrder("EP"), strategyOrder(kScalarCause));
}

TEST(ExplainReport, MemoryRowsWithoutBaseline) {
  Report r = makeReport();
  std::vector<MemoryRow> rows = getMemoryRows(r);
  // params, m, v, total, frame, peak activation, peak io, live total, total.
  ASSERT_EQ(rows.size(), 9u);
  EXPECT_EQ(rows[0].key, "state_param");
  EXPECT_EQ(rows[0].with, 128);
  EXPECT_EQ(rows[0].without, 256);
  EXPECT_EQ(rows[3].key, "state_total");
  EXPECT_EQ(rows[3].with, 128 + 64);
  EXPECT_EQ(rows[3].without, 256 + 256);
  EXPECT_EQ(rows[4].key, "frame");
  EXPECT_FALSE(rows[4].without.has_value());
  EXPECT_EQ(rows[7].key, "peak_live_total");
  EXPECT_EQ(rows[7].with, 1024);
  EXPECT_EQ(rows[8].with, 128 + 64 + 1024);
  EXPECT_FALSE(rows[8].without.has_value());

  r.memory.planned = false;
  EXPECT_EQ(getMemoryRows(r).size(), 4u);
}

TEST(ExplainReport, MemoryRowsWithBaseline) {
  Report r = makeReport();
  r.baseline.present = true;
  r.baseline.path = "one.json";
  r.baseline.frameBytes = 4096;
  r.baseline.peak = {{"activation", 3072}};
  std::vector<MemoryRow> rows = getMemoryRows(r);
  ASSERT_EQ(rows.size(), 9u);
  EXPECT_EQ(rows[4].without, 4096);
  EXPECT_EQ(rows[5].key, "peak_activation");
  EXPECT_EQ(rows[5].without, 3072);
  // A category the baseline lacks counts 0 there.
  EXPECT_EQ(rows[6].key, "peak_io");
  EXPECT_EQ(rows[6].without, 0);
  EXPECT_EQ(rows[8].without, 256 + 256 + 4096);
}

TEST(ExplainReport, WritesText) {
  Report r = makeReport();
  r.rolesFromEntries = true;
  std::string text = renderText(r);
  // The strategy keys first in "plan:", the others after.
  expectLines(
      text, {{"dist-explain:", "dist-explain: toy"},
             {"plan:", "plan: dp=2,tp=2,zero=1 (also schedule=1f1b)"},
             {"mesh:", "mesh: [dp=2, tp=2], world size 4"},
             {"model:", "model: 64 parameters, num_layers 1"},
             {"TP      tp=2", "  TP      tp=2  columns (last dim): attn_q (1)"},
             {"total ",
              "  total                                       4     1.00 KiB"},
             {"blk (called", "    blk (called 3x): all_reduce[tp] x1"},
             {"state: params",
              "  state: params                   128 B        256 B   0.50"},
             {"transient: frame",
              "  transient: frame             1.00 KiB          n/a"}});
  EXPECT_NE(text.find("from the entry's shardings; roles from tfm.role)"),
            std::string::npos);
  // Rows sorted by strategy order: DP before TP.
  size_t dp = text.find("  DP              all_reduce      dp          1"
                        "        256 B");
  size_t tp = text.find("  TP              all_reduce      tp          3"
                        "        768 B");
  ASSERT_NE(dp, std::string::npos);
  ASSERT_NE(tp, std::string::npos);
  EXPECT_LT(dp, tp);
  EXPECT_NE(text.find("transient n/a (pass baseline=<one-rank artifact.json>)"),
            std::string::npos);
}

TEST(ExplainReport, WritesTextWithoutPlanOrStrategies) {
  Report r;
  r.entry = "train_step";
  expectLines(renderText(r),
              {{"dist-explain:", "dist-explain: (unnamed model)"},
               {"plan:", "plan: none (no dist.plan)"},
               {"mesh:", "mesh: none, world size 1"},
               {"none:", "  none: every tensor is replicated"},
               {"transient: not planned", "  transient: not planned"}});
}

TEST(ExplainReport, WritesJson) {
  Report r = makeReport();
  llvm::json::Value value = toJson(r);
  llvm::json::Object *top = value.getAsObject();
  ASSERT_TRUE(top);
  EXPECT_EQ(top->getInteger("world_size"), 4);
  EXPECT_EQ(top->getString("entry"), "train_step");
  EXPECT_EQ(top->get("pp_stage"), nullptr);
  // Integer plan values are numbers, the others strings.
  llvm::json::Object *plan = top->getObject("plan");
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->getInteger("dp"), 2);
  EXPECT_EQ(plan->getString("schedule"), "1f1b");
  llvm::json::Object *mesh = top->getObject("mesh");
  ASSERT_TRUE(mesh);
  EXPECT_EQ(*mesh->getArray("axes"), (llvm::json::Array{"dp", "tp"}));
  EXPECT_EQ(*mesh->getArray("sizes"), (llvm::json::Array{2, 2}));

  llvm::json::Array *collectives = top->getArray("collectives");
  ASSERT_TRUE(collectives);
  ASSERT_EQ(collectives->size(), 2u);
  llvm::json::Object *first = (*collectives)[0].getAsObject();
  EXPECT_EQ(first->getString("strategy"), "DP");
  EXPECT_EQ(first->getInteger("count"), 1);
  EXPECT_EQ(first->getInteger("bytes"), 256);
  EXPECT_EQ(*first->getArray("axes"), (llvm::json::Array{"dp"}));

  llvm::json::Object *blk = top->getObject("functions")->getObject("blk");
  ASSERT_TRUE(blk);
  EXPECT_EQ(blk->getInteger("calls"), 3);
  EXPECT_EQ(blk->getObject("per_call")->getInteger("all_reduce[tp]"), 1);

  llvm::json::Object *memory = top->getObject("memory");
  ASSERT_TRUE(memory);
  llvm::json::Object *total = memory->getObject("state_total");
  EXPECT_EQ(total->getInteger("with"), 192);
  EXPECT_EQ(total->getInteger("without"), 512);
  // Unknown without a baseline.
  EXPECT_EQ(*memory->getObject("frame")->get("without"), nullptr);

  llvm::json::Array *strategies = top->getArray("strategies");
  ASSERT_TRUE(strategies && strategies->size() == 1);
  EXPECT_EQ((*strategies)[0].getAsObject()->getString("axis"), "tp=2");
}

/// An rt program (not planned) on a mesh whose data axis is `batch` and
/// tensor axis `model`: a column-split weight, one all-reduce of its
/// gradient over `batch` (128 B) and, in @blk called twice, an all-reduce
/// of a 2x4 activation over `model` (32 B).
constexpr const char *kRtProgram = R"mlir(
module attributes {tfm.model = {name = "tiny", num_parameters = 40 : i64},
                   dist.plan = {dp = 2 : i64, tp = 2 : i64, sp = 0 : i64, zero = 0 : i64}} {
  rt.state_def @w param init normal std 2.000000e-02 {rt.role = "attn_q", rt.sharding = #dist.sharding<@mesh, [{}, {model}]>} : !rt.buffer<8x4xf32>
  rt.state_def @ln param init ones {rt.sharding = #dist.sharding<@mesh, [{}]>} : !rt.buffer<8xf32>
  dist.mesh @mesh [batch = 2 : data, model = 2 : tensor]
  rt.func @blk(%arg0: !rt.buffer<2x4xf32>, %arg1: !rt.buffer<2x4xf32>) {
    rt.kernel "dist.all_reduce"(%arg0) -> (%arg1) attrs {axes = ["model"], reduction = "sum"} : (!rt.buffer<2x4xf32>) -> !rt.buffer<2x4xf32>
    rt.return
  }
  rt.func @train_step() attributes {entry = "train_step"} {
    %0 = rt.input "tokens" {rt.sharding = #dist.sharding<@mesh, [{batch}, {}]>} : !rt.buffer<2x8xf32>
    %1 = rt.state @w : !rt.buffer<8x4xf32>
    %2 = rt.state @ln : !rt.buffer<8xf32>
    %3 = rt.alloc activation : !rt.buffer<2x4xf32>
    rt.kernel "matmul"(%0, %1) -> (%3) : (!rt.buffer<2x8xf32>, !rt.buffer<8x4xf32>) -> !rt.buffer<2x4xf32>
    %4 = rt.alloc activation : !rt.buffer<2x4xf32>
    rt.call @blk(%3, %4) : !rt.buffer<2x4xf32>, !rt.buffer<2x4xf32>
    rt.call @blk(%3, %4) : !rt.buffer<2x4xf32>, !rt.buffer<2x4xf32>
    %5 = rt.alloc grad : !rt.buffer<8x4xf32>
    rt.kernel "dist.all_reduce"(%5) -> (%5) attrs {axes = ["batch"], reduction = "sum"} : (!rt.buffer<8x4xf32>) -> !rt.buffer<8x4xf32>
    rt.return
  }
}
)mlir";

class ExplainReaderTest : public ::testing::Test {
protected:
  ExplainReaderTest() {
    context.loadDialect<dist::DistDialect, rt::RtDialect>();
  }
  OwningOpRef<ModuleOp> parse(llvm::StringRef source) {
    return parseSourceString<ModuleOp>(source, &context);
  }
  MLIRContext context;
};

TEST_F(ExplainReaderTest, AttributesCollectivesByAxisRole) {
  OwningOpRef<ModuleOp> module = parse(kRtProgram);
  ASSERT_TRUE(module);
  Report r;
  ASSERT_TRUE(succeeded(readReport(*module, RoleMap(), r)));
  EXPECT_EQ(r.modelName, "tiny");
  EXPECT_EQ(r.entry, "train_step");
  EXPECT_EQ(r.worldSize, 4);
  ASSERT_EQ(r.mesh.size(), 2u);
  EXPECT_EQ(r.mesh[0].first, "batch");

  // The `batch` all-reduce is DP, the `model` one (twice, via @blk) TP.
  ASSERT_EQ(r.rows.size(), 2u);
  auto dp = r.rows.find({strategyOrder("DP"), "DP", "all_reduce", "batch"});
  ASSERT_NE(dp, r.rows.end());
  EXPECT_EQ(dp->second.count, 1);
  EXPECT_EQ(dp->second.bytes, 128);
  auto tp = r.rows.find({strategyOrder("TP"), "TP", "all_reduce", "model"});
  ASSERT_NE(tp, r.rows.end());
  EXPECT_EQ(tp->second.count, 2);
  EXPECT_EQ(tp->second.bytes, 64);

  // States: global shapes from the shardings; the role from rt.role.
  ASSERT_EQ(r.states.size(), 2u);
  EXPECT_EQ(r.states[0].role, "attn_q");
  EXPECT_EQ(r.states[0].globalShape, (llvm::SmallVector<int64_t>{8, 8}));
  EXPECT_EQ(r.states[0].globalBytes, 256);

  // Strategy rows from the shardings: the batch split on the data axis,
  // the weight's columns on the tensor axis.
  ASSERT_EQ(r.strategies.size(), 2u);
  EXPECT_EQ(r.strategies[0].label, "DP");
  EXPECT_EQ(r.strategies[0].degree, "dp=2");
  EXPECT_NE(r.strategies[0].text.find("batch: tokens dim 0 (4x8 -> 2x8)"),
            std::string::npos);
  EXPECT_EQ(r.strategies[1].label, "TP");
  EXPECT_NE(r.strategies[1].text.find("columns (last dim): attn_q (1)"),
            std::string::npos);
  EXPECT_NE(r.strategies[1].text.find("replicated: ln (1)"), std::string::npos);

  ASSERT_EQ(r.perFunction.size(), 2u);
  EXPECT_EQ(r.perFunction[0].name, "blk");
  EXPECT_EQ(r.perFunction[0].calls, 2);
  EXPECT_FALSE(r.memory.planned);
}

TEST_F(ExplainReaderTest, FailsWithoutEntry) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
module {
  rt.func @f() {
    rt.return
  }
}
)mlir");
  ASSERT_TRUE(module);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    diagnostics += diag.str();
    return success();
  });
  Report r;
  EXPECT_TRUE(failed(readReport(*module, RoleMap(), r)));
  EXPECT_NE(diagnostics.find("the program has no entry function"),
            std::string::npos);
}

TEST_F(ExplainReaderTest, NoPipelineSectionWithoutSchedule) {
  OwningOpRef<ModuleOp> module = parse(kRtProgram);
  ASSERT_TRUE(module);
  std::string text;
  llvm::raw_string_ostream os(text);
  PipelineReport pipeline = readPipeline(*module);
  EXPECT_FALSE(pipeline.present);
  writePipelineText(pipeline, os);
  EXPECT_EQ(text, "");
}

} // namespace
