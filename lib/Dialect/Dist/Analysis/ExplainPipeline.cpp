//===- ExplainPipeline.cpp - The pipeline section of dist-explain ---------===//
//
// Read from the module directly (the stage split and schedule attributes of
// dist-pipeline-split and each stage program) into a PipelineReport, which
// the text and HTML reports render.
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

PipelineReport dist::explain::readPipeline(ModuleOp module) {
  PipelineReport pr;
  auto text =
      module->getAttrOfType<StringAttr>(dist::kPipelineScheduleAttrName);
  if (!text)
    return pr;
  pr.present = true;
  pipeline::OrError<pipeline::PipelineSchedule> schedule =
      pipeline::parseSchedule(text.getValue(), "compiled");
  if (!schedule) {
    pr.error = schedule.error();
    return pr;
  }
  pr.schedule = *schedule;
  const pipeline::PipelineSchedule &sch = pr.schedule;
  if (auto plan = module->getAttrOfType<DictionaryAttr>(dist::kPlanAttrName))
    if (auto name = plan.getAs<StringAttr>("schedule"))
      pr.kind = name.getValue().str();
  pr.vpp = sch.numRanks ? sch.numStages / sch.numRanks : 1;

  // The layers of each stage and their cost (dist-pipeline-split's split).
  auto stages =
      module->getAttrOfType<DictionaryAttr>(dist::kPipelineStagesAttrName);
  ArrayRef<int64_t> firstLayer, stageFlops;
  if (stages) {
    firstLayer = stages.getAs<DenseI64ArrayAttr>("first_layer").asArrayRef();
    stageFlops = stages.getAs<DenseI64ArrayAttr>("flops").asArrayRef();
    pr.numLayers = stages.getAs<IntegerAttr>("num_layers").getInt();
  }
  if (static_cast<int64_t>(firstLayer.size()) == sch.numStages &&
      stageFlops.size() == firstLayer.size()) {
    for (int64_t st = 0; st < sch.numStages; ++st) {
      PipelineStage s;
      s.firstLayer = firstLayer[st];
      s.lastLayer =
          (st + 1 < sch.numStages ? firstLayer[st + 1] : pr.numLayers) - 1;
      s.rank = sch.stageToRank[st];
      s.flops = stageFlops[st];
      pr.stages.push_back(s);
    }
  }

  // Per rank: the state it holds and its train_step's frame.
  for (auto fn : module.getOps<rt::FuncOp>()) {
    if (!fn.getPpStage() || fn.getEntry() != StringRef("train_step"))
      continue;
    HeldState held = getHeldState(module, fn);
    PipelineRank r;
    r.rank = *fn.getPpStage();
    r.function = fn.getSymName().str();
    r.stateTensors = held.names.size();
    r.stateBytes = held.bytes;
    for (auto &name : held.names)
      if (auto def = module.lookupSymbol<rt::StateDefOp>(name.getKey()))
        r.stateByKind[rt::stringifyStateKind(def.getKind()).str()] +=
            def.getBufferType().getSizeInBytes();
    r.frameBytes = fn.getFrameBytes().value_or(0);
    if (DictionaryAttr peak = fn.getPeakBreakdownAttr())
      for (NamedAttribute entry : peak)
        if (auto value = dyn_cast<IntegerAttr>(entry.getValue()))
          r.peak[entry.getName().str()] = value.getInt();
    pr.ranks.push_back(std::move(r));
  }

  pr.split = llvm::any_of(sch.rankOrders, [](const auto &ops) {
    return llvm::any_of(ops, [](const pipeline::PipelineOp &op) {
      return op.kind == pipeline::PipelineOp::Kind::I;
    });
  });
  pr.unit = pipeline::simulateSchedule(sch, pipeline::SimulationOptions());
  // The ideal bubble of the schedule family (algorithms.md §1.2).
  double p = sch.numRanks, m = sch.numMicrobatches;
  pr.idealBubble = (p - 1) / m;
  pr.idealFormula = "(p-1)/m";
  if (pr.split && pr.vpp == 1) {
    pr.idealBubble = (p - 1) / (3 * m);
    pr.idealFormula = "(p-1)/(3m), ZB-H1";
  } else if (pr.kind == "interleaved") {
    pr.idealBubble = (p - 1) / (pr.vpp * m);
    pr.idealFormula = "(p-1)/(v*m)";
  } else if (!pr.kind.empty() && pr.kind != "gpipe" && pr.kind != "1f1b") {
    // ZB-V, looped BFS: no closed form here; 1F1B's as the yardstick.
    pr.idealFormula = "1F1B's (p-1)/m";
  }
  // The same schedule with each stage's ops weighted by its FLOPs (F:B =
  // 1:2, I = W = B/2), normalized to the mean stage: what an unbalanced
  // split costs.
  if (!pr.unit.deadlocked &&
      static_cast<int64_t>(stageFlops.size()) == sch.numStages) {
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
      if (!ws.deadlocked) {
        pr.weighted = std::move(ws);
        pr.weightedCosts = weighted.stageCosts;
      }
    }
  }
  return pr;
}

/// Pipeline parallelism: what each stage holds and the unit-cost simulation
/// of the schedule the stages were compiled to (`dist.pipeline_schedule`,
/// recorded by dist-pipeline-split): makespan, bubble (algorithms.md §1.2,
/// both conventions) and peak in-flight activations per rank.
void dist::explain::writePipelineText(const PipelineReport &pr,
                                      llvm::raw_ostream &os) {
  if (!pr.present)
    return;
  if (!pr.error.empty()) {
    os << "\npipeline: cannot read dist.pipeline_schedule: " << pr.error
       << "\n";
    return;
  }
  const pipeline::PipelineSchedule &sch = pr.schedule;
  os << "\npipeline (pp=" << sch.numRanks << ", " << sch.numStages
     << " stages, " << sch.numMicrobatches << " microbatches, schedule "
     << pr.kind << ")\n";
  if (!pr.stages.empty()) {
    os << "  stages (layers split by FLOPs of microbatch 0, forward + "
          "backward; embedding on the first, final norm + head + loss on "
          "the last):\n";
    for (auto [st, s] : llvm::enumerate(pr.stages))
      os << llvm::formatv("    stage {0} on rank {1}: {2}{3}, {4:F1} "
                          "MFLOP\n",
                          st, s.rank, formatStageLayers(s),
                          formatStageExtras(st, pr.stages.size()),
                          s.flops / 1e6);
  }
  for (const PipelineRank &r : pr.ranks)
    os << "  rank " << r.rank << " (" << r.function << "): state "
       << formatBytes(r.stateBytes) << " held (" << r.stateTensors
       << " tensors), frame " << formatBytes(r.frameBytes) << ", total "
       << formatBytes(r.stateBytes + r.frameBytes) << "\n";
  os << "  per-rank order (algorithms.md §1.5 format):\n";
  std::string order = pipeline::formatSchedule(sch);
  for (StringRef line : llvm::split(StringRef(order).trim(), '\n'))
    os << "    " << line << "\n";
  if (pr.unit.deadlocked) {
    os << "  unit-cost simulation: DEADLOCK: " << pr.unit.deadlockReport
       << "\n";
    return;
  }
  os << llvm::formatv("  unit-cost simulation ({0} per stage-microbatch, no "
                      "communication time): makespan {1}, bubble {2:F3} of "
                      "the ideal time ({3} = {4:F3}), {5:F3} of the wall "
                      "time\n",
                      pr.split ? "F=1, I=1, W=1" : "F=1, B=2", pr.unit.makespan,
                      pr.unit.idleOverBusy, pr.idealFormula, pr.idealBubble,
                      pr.unit.idleOverMakespan);
  os << "  peak in-flight activations per rank (microbatches): [";
  llvm::interleaveComma(pr.unit.peakActivations, os);
  os << "]\n";
  if (pr.weighted)
    os << llvm::formatv("  FLOP-weighted simulation (stage costs "
                        "relative to the mean stage): makespan {0:F2}, "
                        "bubble {1:F3} of the ideal time\n",
                        pr.weighted->makespan, pr.weighted->idleOverBusy);
}

std::string dist::explain::formatStageLayers(const PipelineStage &s) {
  return s.firstLayer == s.lastLayer
             ? llvm::formatv("layer {0}", s.firstLayer).str()
             : llvm::formatv("layers {0}-{1}", s.firstLayer, s.lastLayer).str();
}

const char *dist::explain::formatStageExtras(size_t stage, size_t numStages) {
  return stage == 0               ? " + embedding"
         : stage + 1 == numStages ? " + head, loss"
                                  : "";
}
