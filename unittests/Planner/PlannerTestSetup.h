//===- PlannerTestSetup.h - Synthetic cluster and model ---------*- C++ -*-===//
//
// The planner tests' cluster, a node of 8 devices with round numbers (1
// PFLOP/s, 2 TB/s HBM, 400 GB/s NVLink, 50 GB/s NIC, no latencies), and
// model, so that expected costs can be derived by hand.
//
//===----------------------------------------------------------------------===//

#ifndef AUTOSHARD_UNITTESTS_PLANNER_PLANNERTESTSETUP_H
#define AUTOSHARD_UNITTESTS_PLANNER_PLANNERTESTSETUP_H

#include "autoshard/Planner/Cluster.h"
#include "autoshard/Planner/Planner.h"

namespace autoshard::planner {

inline Cluster testCluster() {
  Cluster c;
  c.name = "test";
  c.gpusPerNode = 8;
  c.peakFlops = 1e15;
  c.hbmBytes = 80e9;
  c.hbmBandwidth = 2e12;
  c.intraNode = {400e9, 0, 1};
  c.interNode = {50e9, 0, 1};
  c.gemmEfficiency = 0.5;
  c.attentionEfficiency = 0.25;
  c.memoryEfficiency = 0.5;
  return c;
}

/// `layers` layers, hidden 1024, 8 heads (head dim 128), seq 1024, bf16.
inline ModelInfo syntheticModel(int64_t layers = 10) {
  ModelInfo m;
  m.name = "synthetic";
  m.layers = layers;
  m.hidden = 1024;
  m.heads = 8;
  m.kvHeads = 8;
  m.seq = 1024;
  m.elementBytes = 2;
  m.flopsPerSequence = 3e13;
  return m;
}

} // namespace autoshard::planner

#endif // AUTOSHARD_UNITTESTS_PLANNER_PLANNERTESTSETUP_H
