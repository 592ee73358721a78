//===- ExplainPipeline.cpp - The pipeline section of dist-explain ---------===//
//
// Read from the module directly (the stage split and schedule attributes of
// dist-pipeline-split and each stage program), not from the Report.
//
//===----------------------------------------------------------------------===//

#include "HeldState.h"

#include "autoshard/Dialect/Dist/Analysis/ExplainReader.h"
#include "autoshard/Dialect/Dist/IR/DistAttrNames.h"
#include "autoshard/Dialect/Rt/IR/RtOps.h"
#include "autoshard/Pipeline/Schedule.h"
#include "autoshard/Pipeline/Simulate.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace autoshard;
using namespace autoshard::dist::explain;

/// Pipeline parallelism: what each stage holds and the unit-cost simulation
/// of the schedule the stages were compiled to (`dist.pipeline_schedule`,
/// recorded by dist-pipeline-split): makespan, bubble (algorithms.md §1.2,
/// both conventions) and peak in-flight activations per rank.
void dist::explain::writePipelineText(ModuleOp module, llvm::raw_ostream &os) {
  auto text =
      module->getAttrOfType<StringAttr>(dist::kPipelineScheduleAttrName);
  if (!text)
    return;
  pipeline::OrError<pipeline::PipelineSchedule> schedule =
      pipeline::parseSchedule(text.getValue(), "compiled");
  if (!schedule) {
    os << "\npipeline: cannot read dist.pipeline_schedule: " << schedule.error()
       << "\n";
    return;
  }
  const pipeline::PipelineSchedule &sch = *schedule;
  std::string kind = "?";
  if (auto plan = module->getAttrOfType<DictionaryAttr>(dist::kPlanAttrName))
    if (auto name = plan.getAs<StringAttr>("schedule"))
      kind = name.getValue().str();
  int64_t vpp = sch.numRanks ? sch.numStages / sch.numRanks : 1;
  os << "\npipeline (pp=" << sch.numRanks << ", " << sch.numStages
     << " stages, " << sch.numMicrobatches << " microbatches, schedule " << kind
     << ")\n";
  // The layers of each stage and their cost (dist-pipeline-split's split).
  auto stages =
      module->getAttrOfType<DictionaryAttr>(dist::kPipelineStagesAttrName);
  ArrayRef<int64_t> firstLayer, stageFlops;
  int64_t numLayers = 0;
  if (stages) {
    firstLayer = stages.getAs<DenseI64ArrayAttr>("first_layer").asArrayRef();
    stageFlops = stages.getAs<DenseI64ArrayAttr>("flops").asArrayRef();
    numLayers = stages.getAs<IntegerAttr>("num_layers").getInt();
  }
  if (static_cast<int64_t>(firstLayer.size()) == sch.numStages &&
      stageFlops.size() == firstLayer.size()) {
    os << "  stages (layers split by FLOPs of microbatch 0, forward + "
          "backward; embedding on the first, final norm + head + loss on "
          "the last):\n";
    for (int64_t st = 0; st < sch.numStages; ++st) {
      int64_t first = firstLayer[st];
      int64_t last =
          (st + 1 < sch.numStages ? firstLayer[st + 1] : numLayers) - 1;
      std::string layers =
          first == last ? llvm::formatv("layer {0}", first).str()
                        : llvm::formatv("layers {0}-{1}", first, last).str();
      os << llvm::formatv("    stage {0} on rank {1}: {2}{3}, {4:F1} "
                          "MFLOP\n",
                          st, sch.stageToRank[st], layers,
                          st == 0                   ? " + embedding"
                          : st + 1 == sch.numStages ? " + head, loss"
                                                    : "",
                          stageFlops[st] / 1e6);
    }
  }
  // Per rank: the state it holds and the largest train_step frame.
  for (auto fn : module.getOps<rt::FuncOp>()) {
    if (!fn.getPpStage() || fn.getEntry() != StringRef("train_step"))
      continue;
    HeldState held = getHeldState(module, fn);
    int64_t frame = fn.getFrameBytes().value_or(0);
    os << "  rank " << *fn.getPpStage() << " (" << fn.getSymName()
       << "): state " << formatBytes(held.bytes) << " held ("
       << held.names.size() << " tensors), frame " << formatBytes(frame)
       << ", total " << formatBytes(held.bytes + frame) << "\n";
  }
  os << "  per-rank order (algorithms.md §1.5 format):\n";
  std::string order = pipeline::formatSchedule(sch);
  for (StringRef line : llvm::split(StringRef(order).trim(), '\n'))
    os << "    " << line << "\n";
  bool split = llvm::any_of(sch.rankOrders, [](const auto &ops) {
    return llvm::any_of(ops, [](const pipeline::PipelineOp &op) {
      return op.kind == pipeline::PipelineOp::Kind::I;
    });
  });
  pipeline::SimulationResult sim =
      pipeline::simulateSchedule(sch, pipeline::SimulationOptions());
  if (sim.deadlocked) {
    os << "  unit-cost simulation: DEADLOCK: " << sim.deadlockReport << "\n";
    return;
  }
  double p = sch.numRanks, m = sch.numMicrobatches;
  // The ideal bubble of the schedule family (algorithms.md §1.2).
  double ideal = (p - 1) / m;
  std::string formula = "(p-1)/m";
  if (split && vpp == 1) {
    ideal = (p - 1) / (3 * m);
    formula = "(p-1)/(3m), ZB-H1";
  } else if (kind == "interleaved") {
    ideal = (p - 1) / (vpp * m);
    formula = "(p-1)/(v*m)";
  }
  os << llvm::formatv("  unit-cost simulation ({0} per stage-microbatch, no "
                      "communication time): makespan {1}, bubble {2:F3} of "
                      "the ideal time ({3} = {4:F3}), {5:F3} of the wall "
                      "time\n",
                      split ? "F=1, I=1, W=1" : "F=1, B=2", sim.makespan,
                      sim.idleOverBusy, formula, ideal, sim.idleOverMakespan);
  os << "  peak in-flight activations per rank (microbatches): [";
  llvm::interleaveComma(sim.peakActivations, os);
  os << "]\n";
  // The same schedule with each stage's ops weighted by its FLOPs (F:B =
  // 1:2, I = W = B/2), normalized to the mean stage: what an unbalanced
  // split costs.
  if (static_cast<int64_t>(stageFlops.size()) == sch.numStages) {
    double mean = 0;
    for (int64_t f : stageFlops)
      mean += static_cast<double>(f) / sch.numStages;
    if (mean > 0) {
      pipeline::SimulationOptions weighted;
      for (int64_t f : stageFlops) {
        double w = static_cast<double>(f) / mean;
        pipeline::OpCosts c;
        c.forward = w;
        c.backward = 2 * w;
        c.inputGrad = w;
        c.weightGrad = w;
        weighted.stageCosts.push_back(c);
      }
      pipeline::SimulationResult ws = pipeline::simulateSchedule(sch, weighted);
      if (!ws.deadlocked)
        os << llvm::formatv("  FLOP-weighted simulation (stage costs "
                            "relative to the mean stage): makespan {0:F2}, "
                            "bubble {1:F3} of the ideal time\n",
                            ws.makespan, ws.idleOverBusy);
    }
  }
}
